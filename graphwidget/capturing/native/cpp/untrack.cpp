// untrack_tree: load_json's parsed records taken out of the cycle collector's care.

#include "common.h"

namespace gw {
namespace {

void untrack_plain(PyObject* o, int depth) {
  if (depth > 100) return;  // deeper than any record: leave it to the collector
  if (PyList_CheckExact(o)) {
    for (Py_ssize_t i = 0; i < PyList_GET_SIZE(o); ++i) untrack_plain(PyList_GET_ITEM(o, i), depth + 1);
    untrack(o);
  } else if (PyDict_CheckExact(o)) {
    Py_ssize_t pos = 0;
    PyObject *k, *v;
    while (PyDict_Next(o, &pos, &k, &v)) untrack_plain(v, depth + 1);
    untrack(o);
  }
}

}  // namespace

// untrack_tree(obj): take the plain dicts and lists of parsed JSON (load_json's records) out of the cycle
// collector's care, as the capture does with its own records (capture.cpp, untrack()): JSON data has no cycles,
// and the collector's one pass over a big graph's fresh containers (several per node) followed every load_json.
PyObject* py_untrack_tree(PyObject*, PyObject* obj) {
  untrack_plain(obj, 0);
  Py_RETURN_NONE;
}

}  // namespace gw

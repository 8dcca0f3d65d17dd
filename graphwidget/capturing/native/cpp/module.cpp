// The Python module of graphwidget's compiled core: its functions and its Unsupported exception.
#include "common.h"

namespace {

PyMethodDef methods[] = {
    {"capture", gw::py_capture, METH_VARARGS,
     "capture(roots, param_names, type_info, jsonable, dtype_name, tensor_record, packed_record, templates, rank) -> "
     "(node attrs, succ, pred, root ids, absolute seq bytes, nodes given a Python wrapper); see graphwidget/capturing/engines.py"},
    {"rank_seq", gw::py_rank_seq, METH_O,
     "rank_seq(node_attrs) -> {node: absolute seq}; replaces each node's seq by its rank (capture.finalize_seq)"},
    {"instrument", gw::py_instrument, METH_VARARGS,
     "instrument(roots, hook) -> Instrumented: capture's walk, with C++ timing hooks on every node (hooks.cpp)"},
    {"untrack_tree", gw::py_untrack_tree, METH_O,
     "untrack_tree(obj): untrack the plain dicts/lists of parsed JSON from the cycle collector (load_json)"},
    {nullptr, nullptr, 0, nullptr}};

}  // namespace

#ifdef TORCH_EXTENSION_NAME  // set by torch.utils.cpp_extension to the name native/paths.py chose
#define GW_MODULE_NAME TORCH_EXTENSION_NAME
#else
#define GW_MODULE_NAME _gw_native
#endif
#define GW_STR2(x) #x
#define GW_STR(x) GW_STR2(x)
#define GW_CAT2(a, b) a##b
#define GW_CAT(a, b) GW_CAT2(a, b)

static PyModuleDef module_def = {PyModuleDef_HEAD_INIT, GW_STR(GW_MODULE_NAME),
                                 "graphwidget's compiled core: capture, timing hooks, JSON", -1, methods};

PyMODINIT_FUNC GW_CAT(PyInit_, GW_MODULE_NAME)(void) {
  if (!gw::init_keys()) return nullptr;
  PyObject* m = PyModule_Create(&module_def);
  if (!m) return nullptr;
  gw::UnsupportedError = PyErr_NewException(GW_STR(GW_MODULE_NAME) ".Unsupported", PyExc_Exception, nullptr);
  if (!gw::UnsupportedError || gw::add_object_ref(m, "Unsupported", gw::UnsupportedError) < 0 ||
      !gw::init_hooks(m)) {
    Py_DECREF(m);
    return nullptr;
  }
  return m;
}

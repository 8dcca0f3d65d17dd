// GradGraph.to_json's node and edge arrays, written straight from networkx's dicts.
//
// Why: once the capture was compiled, writing its JSON took longer than capturing (about half building the
// intermediate to_dict() records, half in json.dumps) — and every view (widget, export) goes through it. This
// writes the same text json.dumps(..., separators=(",", ":"), allow_nan=False) would, with no intermediate
// objects. Only plain JSON values are handled (None, bool, int, finite float, str, list/tuple, dict with str or
// int keys); anything else raises Unsupported and the caller uses json.dumps, so the output is always json's.
// tests/test_native.py compares the two texts on every test graph.

#include "common.h"

#include <charconv>
#include <cmath>
#include <string>

namespace gw {
namespace {

const char kHex[] = "0123456789abcdef";

// json's ensure_ascii escaping (Modules/_json.c: ascii_escape_unicode).
void write_str(std::string& out, PyObject* s) {
#if PY_VERSION_HEX < 0x030C0000
  if (PyUnicode_READY(s) < 0) throw PyError{};
#endif
  out.push_back('"');
  const int kind = PyUnicode_KIND(s);
  const void* data = PyUnicode_DATA(s);
  const Py_ssize_t n = PyUnicode_GET_LENGTH(s);
  for (Py_ssize_t i = 0; i < n; ++i) {
    Py_UCS4 c = PyUnicode_READ(kind, data, i);
    if (c >= ' ' && c <= '~' && c != '\\' && c != '"') {
      out.push_back((char)c);
      continue;
    }
    out.push_back('\\');
    switch (c) {
      case '\\': out.push_back('\\'); continue;
      case '"': out.push_back('"'); continue;
      case '\b': out.push_back('b'); continue;
      case '\f': out.push_back('f'); continue;
      case '\n': out.push_back('n'); continue;
      case '\r': out.push_back('r'); continue;
      case '\t': out.push_back('t'); continue;
      default: break;
    }
    auto u4 = [&](Py_UCS4 v) {
      out.push_back('u');
      out.push_back(kHex[(v >> 12) & 0xf]);
      out.push_back(kHex[(v >> 8) & 0xf]);
      out.push_back(kHex[(v >> 4) & 0xf]);
      out.push_back(kHex[v & 0xf]);
    };
    if (c >= 0x10000) {  // surrogate pair
      Py_UCS4 v = c - 0x10000;
      u4(0xd800 | ((v >> 10) & 0x3ff));
      out.push_back('\\');
      u4(0xdc00 | (v & 0x3ff));
    } else {
      u4(c);
    }
  }
  out.push_back('"');
}

void write_repr(std::string& out, PyObject* o, reprfunc repr) {
  Ref r = own(repr(o));
  Py_ssize_t len;
  const char* s = PyUnicode_AsUTF8AndSize(r.get(), &len);
  if (!s) throw PyError{};
  out.append(s, (size_t)len);
}

// An int's decimal text, as int.__repr__ writes it; without a temporary str for the usual 64-bit ones.
void write_int(std::string& out, PyObject* v) {
  int overflow = 0;
  long long x = PyLong_AsLongLongAndOverflow(v, &overflow);
  if (x == -1 && PyErr_Occurred()) throw PyError{};
  if (overflow) {
    write_repr(out, v, PyLong_Type.tp_repr);
    return;
  }
  char buf[24];
  auto res = std::to_chars(buf, buf + sizeof buf, x);
  out.append(buf, res.ptr);
}

void write_value(std::string& out, PyObject* v, int depth);

void write_key(std::string& out, PyObject* k) {
  if (PyUnicode_Check(k)) {
    write_str(out, k);
  } else if (PyLong_Check(k) && !PyBool_Check(k)) {  // json turns int keys into their decimal text
    out.push_back('"');
    write_int(out, k);
    out.push_back('"');
  } else {
    throw Unsupported{};  // bool/float/None keys: rare, leave them to json
  }
}

void write_value(std::string& out, PyObject* v, int depth) {
  if (depth > 100) throw Unsupported{};  // json has its own recursion checks: let it report
  if (v == Py_None) {
    out.append("null");
  } else if (v == Py_True) {
    out.append("true");
  } else if (v == Py_False) {
    out.append("false");
  } else if (PyUnicode_Check(v)) {
    write_str(out, v);
  } else if (PyLong_Check(v)) {
    write_int(out, v);
  } else if (PyFloat_Check(v)) {
    if (!std::isfinite(PyFloat_AS_DOUBLE(v))) throw Unsupported{};  // json raises its own ValueError
    write_repr(out, v, PyFloat_Type.tp_repr);
  } else if (PyList_Check(v) || PyTuple_Check(v)) {
    Ref fast = own(PySequence_Fast(v, "sequence"));
    Py_ssize_t n = PySequence_Fast_GET_SIZE(fast.get());
    out.push_back('[');
    for (Py_ssize_t i = 0; i < n; ++i) {
      if (i) out.push_back(',');
      write_value(out, PySequence_Fast_GET_ITEM(fast.get(), i), depth + 1);
    }
    out.push_back(']');
  } else if (PyDict_Check(v)) {
    out.push_back('{');
    Py_ssize_t pos = 0;
    PyObject *k, *x;
    bool first = true;
    while (PyDict_Next(v, &pos, &k, &x)) {
      if (!first) out.push_back(',');
      first = false;
      write_key(out, k);
      out.push_back(':');
      write_value(out, x, depth + 1);
    }
    out.push_back('}');
  } else {
    throw Unsupported{};
  }
}

// One record: {"<id_key>":<id>[,"<id_key2>":<id2>],"<k>":d.get(k),...} for k in keys.
void write_record(std::string& out, const char* head, PyObject* d, PyObject* keys) {
  out.append(head);
  Py_ssize_t nk = PyTuple_GET_SIZE(keys);
  for (Py_ssize_t i = 0; i < nk; ++i) {
    PyObject* k = PyTuple_GET_ITEM(keys, i);
    PyObject* x = PyDict_GetItemWithError(d, k);
    if (!x) {
      if (PyErr_Occurred()) throw PyError{};
      x = Py_None;
    }
    out.push_back(',');
    write_str(out, k);
    out.push_back(':');
    write_value(out, x, 1);
  }
  out.push_back('}');
}

std::string int_text(PyObject* n) {
  if (!PyLong_CheckExact(n)) throw Unsupported{};  // node ids other than ints: json's business
  std::string s;
  write_int(s, n);
  return s;
}

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

// json_arrays(node_attrs, succ, node_keys, edge_keys) -> (nodes JSON array, edges JSON array), as GradGraph.to_dict
// lays them out: nodes in dict order, edges by source in node order then by target in insertion order.
PyObject* py_json_arrays(PyObject*, PyObject* args) {
  PyObject *nodes, *succ, *node_keys, *edge_keys;
  if (!PyArg_ParseTuple(args, "O!O!O!O!:json_arrays", &PyDict_Type, &nodes, &PyDict_Type, &succ, &PyTuple_Type,
                        &node_keys, &PyTuple_Type, &edge_keys))
    return nullptr;
  return guarded([&]() -> PyObject* {
    std::string nj, ej;
    nj.reserve((size_t)PyDict_GET_SIZE(nodes) * 320);
    ej.reserve((size_t)PyDict_GET_SIZE(nodes) * 96);
    nj.push_back('[');
    Py_ssize_t pos = 0;
    PyObject *n, *d;
    bool first = true;
    std::string head;
    while (PyDict_Next(nodes, &pos, &n, &d)) {
      if (!PyDict_Check(d)) throw Unsupported{};
      if (!first) nj.push_back(',');
      first = false;
      head = "{\"id\":" + int_text(n);
      write_record(nj, head.c_str(), d, node_keys);
    }
    nj.push_back(']');
    ej.push_back('[');
    pos = 0;
    PyObject *u, *nbrs;
    first = true;
    while (PyDict_Next(succ, &pos, &u, &nbrs)) {
      if (!PyDict_Check(nbrs)) throw Unsupported{};
      std::string us = int_text(u);
      Py_ssize_t p2 = 0;
      PyObject *v, *e;
      while (PyDict_Next(nbrs, &p2, &v, &e)) {
        if (!PyDict_Check(e)) throw Unsupported{};
        if (!first) ej.push_back(',');
        first = false;
        head = "{\"source\":" + us + ",\"target\":" + int_text(v);
        write_record(ej, head.c_str(), e, edge_keys);
      }
    }
    ej.push_back(']');
    Ref a = own(PyUnicode_FromStringAndSize(nj.data(), (Py_ssize_t)nj.size()));
    Ref b = own(PyUnicode_FromStringAndSize(ej.data(), (Py_ssize_t)ej.size()));
    return PyTuple_Pack(2, a.get(), b.get());
  });
}

}  // namespace gw

// Shared by graphwidget's compiled core (capture.cpp, hooks.cpp, module.cpp): owned references, errors, keys.
#pragma once

#include <Python.h>

#include <torch/csrc/autograd/function.h>
#include <torch/csrc/autograd/python_cpp_function.h>
#include <torch/csrc/autograd/python_function.h>

#include <cstdint>
#include <vector>

namespace gw {

using torch::autograd::Node;


// ---------------------------------------------------------------------------------------------------------------
// Small RAII helpers: every owned PyObject* lives in a Ref, so an exception anywhere leaks nothing.

struct Ref {
  PyObject* p = nullptr;
  Ref() = default;
  explicit Ref(PyObject* o) : p(o) {}
  ~Ref() { Py_XDECREF(p); }
  Ref(const Ref&) = delete;
  Ref& operator=(const Ref&) = delete;
  Ref(Ref&& o) noexcept : p(o.p) { o.p = nullptr; }
  Ref& operator=(Ref&& o) noexcept {
    if (this != &o) {
      Py_XDECREF(p);
      p = o.p;
      o.p = nullptr;
    }
    return *this;
  }
  PyObject* get() const { return p; }
  PyObject* release() {
    PyObject* r = p;
    p = nullptr;
    return r;
  }
  static Ref borrow(PyObject* o) {
    Py_XINCREF(o);
    return Ref(o);
  }
};

struct PyError {};      // a Python exception is set; unwind to the entry point
struct Unsupported {};  // this graph needs the Python path

inline PyObject* UnsupportedError = nullptr;  // <module>.Unsupported

inline PyObject* check(PyObject* o) {
  if (!o) throw PyError{};
  return o;
}
inline Ref own(PyObject* o) { return Ref(check(o)); }
inline void set_item(PyObject* d, PyObject* k, PyObject* v) {  // v borrowed
  if (PyDict_SetItem(d, k, v) < 0) throw PyError{};
}
inline void set_item_steal(PyObject* d, PyObject* k, PyObject* v) {
  Ref hold(check(v));
  set_item(d, k, hold.get());
}
inline void append(PyObject* list, PyObject* v) {  // v borrowed
  if (PyList_Append(list, v) < 0) throw PyError{};
}
inline Ref int_obj(long long v) { return own(PyLong_FromLongLong(v)); }
// Py_NewRef / PyModule_AddObjectRef are Python 3.10+; the package supports 3.9.
inline PyObject* new_ref(PyObject* o) {
  Py_INCREF(o);
  return o;
}
inline int add_object_ref(PyObject* module, const char* name, PyObject* value) {
  Py_INCREF(value);
  if (PyModule_AddObject(module, name, value) < 0) {
    Py_DECREF(value);
    return -1;
  }
  return 0;
}

// Take a finished record out of the cycle collector's care. The records are trees of plain data that cannot form
// a cycle, so the collector has nothing to find in them, yet with several containers per node its one pass over
// every object made while it was paused cost about as much as the whole walk. A dict re-tracks itself as soon as a container is put into it, so user edits stay safe.
inline void untrack(PyObject* o) {
  if (PyObject_GC_IsTracked(o)) PyObject_GC_UnTrack(o);
}

// Interned dict keys, made once at import.
#define GW_KEYS(X)                                                                                      \
  X(op) X(kind) X(outputs) X(saved) X(attrs) X(saved_bytes) X(tensor) X(seq) X(grad_bytes) X(shape)   \
  X(stride) X(dtype) X(device) X(contiguous) X(memory_format) X(bytes) X(storage_bytes) X(storage)    \
  X(freed) X(name) X(requires_grad) X(output) X(slot) X(also) X(variable) X(saved_tensors)             \
  X(_storage_key) X(packed) X(stale) X(lib_source)
#define GW_DECLARE(k) inline PyObject* K_##k = nullptr;
GW_KEYS(GW_DECLARE)
#undef GW_DECLARE
inline PyObject* S_leaf = nullptr;
inline PyObject* S_custom = nullptr;
inline PyObject* S_contiguous = nullptr;
inline PyObject* S_channels_last = nullptr;
inline PyObject* S_channels_last_3d = nullptr;
inline PyObject* S_non_contiguous = nullptr;
inline PyObject* S_raw_saved_tensors = nullptr;  // a custom Function's SavedTensors (read, never unpacked)

inline bool init_keys() {
#define GW_INTERN(k) \
  if (!(K_##k = PyUnicode_InternFromString(#k))) return false;
  GW_KEYS(GW_INTERN)
#undef GW_INTERN
  return (S_leaf = PyUnicode_InternFromString("leaf")) && (S_custom = PyUnicode_InternFromString("custom")) &&
         (S_contiguous = PyUnicode_InternFromString("contiguous")) &&
         (S_channels_last = PyUnicode_InternFromString("channels_last")) &&
         (S_channels_last_3d = PyUnicode_InternFromString("channels_last_3d")) &&
         (S_non_contiguous = PyUnicode_InternFromString("non_contiguous")) &&
         (S_raw_saved_tensors = PyUnicode_InternFromString("_raw_saved_tensors"));
}

// ---------------------------------------------------------------------------------------------------------------

// Node* -> index, open addressing with linear probing. std::unordered_map allocates a heap node per entry, which
// showed in perf profiles of the capture; this is one flat array.
class NodeIndex {
 public:
  static constexpr size_t kMissing = ~size_t(0);
  NodeIndex() { grow(1024); }
  // Inserts `fn -> value` unless present; returns false when it was already there.
  bool insert(Node* fn, size_t value) {
    if ((size_ + 1) * 2 > slots_.size()) grow(slots_.size() * 2);
    size_t i = slot(fn);
    if (slots_[i].key == fn) return false;
    slots_[i] = {fn, value};
    ++size_;
    return true;
  }
  size_t find(Node* fn) const {
    const Entry& e = slots_[slot(fn)];
    return e.key == fn ? e.value : kMissing;
  }

 private:
  struct Entry {
    Node* key = nullptr;
    size_t value = 0;
  };
  std::vector<Entry> slots_;
  size_t size_ = 0;
  size_t slot(Node* fn) const {
    size_t mask = slots_.size() - 1;
    size_t h = (reinterpret_cast<uintptr_t>(fn) >> 4) * 0x9E3779B97F4A7C15ull;
    size_t i = (h >> 20) & mask;
    while (slots_[i].key && slots_[i].key != fn) i = (i + 1) & mask;
    return i;
  }
  void grow(size_t n) {
    std::vector<Entry> old = std::move(slots_);
    slots_.assign(n, Entry{});
    for (const Entry& e : old)
      if (e.key) slots_[slot(e.key)] = e;
  }
};

// Depth-first pre-order from the roots, next_edges in order, each node once: the order that defines graph ids
// (capture.walk in Python). `index` receives node -> position; `visit(fn)` runs once per node, in that order.
template <typename Visit>
void preorder(const std::vector<Node*>& roots, NodeIndex& index, Visit&& visit) {
  std::vector<Node*> stack(roots.rbegin(), roots.rend());
  size_t n = 0;
  while (!stack.empty()) {
    Node* fn = stack.back();
    stack.pop_back();
    if (!index.insert(fn, n)) continue;
    ++n;
    visit(fn);
    const auto& next = fn->next_edges();
    for (size_t i = next.size(); i-- > 0;) {
      Node* child = next[i].function.get();
      if (child && index.find(child) == NodeIndex::kMissing) stack.push_back(child);
    }
  }
}

// The C++ node behind a grad_fn object (a C++ node's wrapper, or a custom Function's node); Unsupported for
// anything else, which the callers leave to their Python paths.
inline Node* node_of(PyObject* obj) {
  if (torch::autograd::THPCppFunction_Check(obj)) return ((torch::autograd::THPCppFunction*)obj)->cdata.get();
  int is_fn = PyObject_IsInstance(obj, (PyObject*)&THPFunctionType);
  if (is_fn < 0) throw PyError{};
  if (is_fn) {
    Node* n = ((THPFunction*)obj)->cdata.get();
    if (n) return n;
  }
  throw Unsupported{};
}

// Wraps an entry point: C++ exceptions become Python ones.
template <typename F>
PyObject* guarded(F&& f) {
  try {
    return f();
  } catch (const PyError&) {
    return nullptr;
  } catch (const Unsupported&) {
    if (!PyErr_Occurred()) PyErr_SetString(UnsupportedError, "this graph needs graphwidget's Python path");
    return nullptr;
  } catch (const c10::Error& e) {
    PyErr_SetString(PyExc_RuntimeError, e.what_without_backtrace());
    return nullptr;
  } catch (const std::exception& e) {
    PyErr_SetString(PyExc_RuntimeError, e.what());
    return nullptr;
  }
}

// Entry points (module.cpp lists them).
PyObject* py_capture(PyObject*, PyObject* args);
PyObject* py_rank_seq(PyObject*, PyObject* attrs);
PyObject* py_instrument(PyObject*, PyObject* args);
PyObject* py_untrack_tree(PyObject*, PyObject* obj);
bool init_hooks(PyObject* module);

}  // namespace gw

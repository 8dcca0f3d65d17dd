// graphwidget.profile's backward instruments in C++: capture's walk plus a pre hook and a post hook on every node
// that store one CLOCK_MONOTONIC stamp each (the clock behind Python's time.perf_counter_ns on Linux, so the stamps
// compare with the Python side's backward wall time).
//
// Why: the Python version (graphwidget/profiling/hooks.py, instrument) pays per node for a walk in Python, two closure
// registrations and two Python calls inside the hooked backward (the engine takes the GIL and wraps the gradients
// in tuples); on a graph of many tiny ops that alone makes a profiled repeat much slower than a plain one. These are torch's own hook slots (Node::add_pre_hook / add_post_hook, the ones
// register_prehook / register_hook fill with Python callers), holding C++ hooks that never enter Python, and the walk
// gives no node a Python wrapper except the first of each type (to learn its Python type), so nothing here makes
// freeing a deep graph recurse (_deep_free.py). CPU clocks only: CUDA runs keep the Python hooks and CUDA events.

#include "common.h"

#include <torch/csrc/autograd/function_hook.h>
#include <torch/csrc/autograd/functions/accumulate_grad.h>
#include <torch/csrc/autograd/python_cpp_function.h>
#include <torch/csrc/autograd/python_function.h>
#include <torch/csrc/autograd/python_variable.h>

#include <time.h>

#include <memory>
#include <typeindex>
#include <unordered_map>
#include <vector>

namespace gw {
namespace {

using torch::autograd::variable_list;

inline int64_t now_ns() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return int64_t(ts.tv_sec) * 1000000000LL + ts.tv_nsec;
}

constexpr int64_t kNotRun = -1;

struct Stamps {
  std::vector<int64_t> start, end;
};

struct PreHook final : torch::autograd::FunctionPreHook {
  PreHook(std::shared_ptr<Stamps> s, size_t i) : stamps(std::move(s)), index(i) {}
  variable_list operator()(const variable_list& grads) override {
    stamps->start[index] = now_ns();
    return grads;
  }
  std::shared_ptr<Stamps> stamps;
  size_t index;
};

struct PostHook final : torch::autograd::FunctionPostHook {
  PostHook(std::shared_ptr<Stamps> s, size_t i) : stamps(std::move(s)), index(i) {}
  variable_list operator()(const variable_list& outputs, const variable_list& /*inputs*/) override {
    stamps->end[index] = now_ns();
    return outputs;
  }
  std::shared_ptr<Stamps> stamps;
  size_t index;
};

struct TypeEntry {
  PyTypeObject* type = nullptr;  // strong reference held in State::type_refs
  bool per_object = false;       // custom autograd.Function nodes: one C++ type, a Python type per Function
  bool accumulate = false;       // AccumulateGrad: a leaf, whose tensor we hand back
};

struct State {
  std::vector<c10::intrusive_ptr<Node>> nodes;  // pre-order = graph ids; keeps them alive until remove()
  std::vector<PyTypeObject*> types;
  std::vector<int> arity;
  std::vector<uint64_t> seq;  // read at walk time: seqs() works after remove()
  std::vector<Ref> type_refs;
  Ref leaves;
  std::shared_ptr<Stamps> stamps;
  std::vector<std::pair<torch::autograd::FunctionPreHook*, uintptr_t>> hooks;  // per node: ours, to remove
  size_t wrapped = 0;  // nodes that have a Python wrapper (see py_instrument)
  bool hooked = false;

  void remove() {
    for (size_t i = 0; i < hooks.size(); ++i) {
      Node* fn = nodes[i].get();
      auto& pre = fn->pre_hooks();
      for (auto it = pre.begin(); it != pre.end(); ++it) {
        if (it->get() == hooks[i].first) {
          pre.erase(it);
          break;
        }
      }
      fn->del_post_hook(hooks[i].second);
    }
    hooks.clear();
    // Root first: each node still has its successor referenced here, so dropping ours never frees a chain
    // recursively; torch's own iterative deleteNode does the rest.
    for (auto& n : nodes) n.reset();
    nodes.clear();
  }
};

struct Instrumented {
  PyObject_HEAD
  State* st;
};

TypeEntry& entry_for(std::unordered_map<std::type_index, TypeEntry>& cache, State& st, Node* fn,
                     PyTypeObject** type) {
  std::type_index key(typeid(*fn));
  auto it = cache.find(key);
  if (it != cache.end() && !it->second.per_object) {
    *type = it->second.type;
    return it->second;
  }
  Ref w = own(torch::autograd::functionToPyObject(c10::intrusive_ptr<Node>::reclaim_copy(fn)));
  PyTypeObject* tp = Py_TYPE(w.get());
  *type = tp;
  if (it != cache.end()) return it->second;  // per-object (custom Function): its wrapper existed already
  st.type_refs.push_back(Ref::borrow((PyObject*)tp));
  TypeEntry e;
  e.type = tp;
  int is_fn = PyObject_IsInstance(w.get(), (PyObject*)&THPFunctionType);
  if (is_fn < 0) throw PyError{};
  e.per_object = is_fn == 1;
  e.accumulate = dynamic_cast<torch::autograd::AccumulateGrad*>(fn) != nullptr;
  return cache.emplace(key, e).first->second;
}

PyTypeObject InstrumentedType = {PyVarObject_HEAD_INIT(nullptr, 0)};

void instrumented_dealloc(PyObject* self) {
  State* st = ((Instrumented*)self)->st;
  if (st) {
    st->remove();
    delete st;
  }
  Py_TYPE(self)->tp_free(self);
}

State& state(PyObject* self) {
  State* st = ((Instrumented*)self)->st;
  if (!st) {
    PyErr_SetString(PyExc_RuntimeError, "Instrumented object is not initialised");
    throw PyError{};
  }
  return *st;
}

PyObject* m_remove(PyObject* self, PyObject*) {
  return guarded([&] {
    state(self).remove();
    Py_RETURN_NONE;
  });
}

// Per node: backward milliseconds (end - start) / 1e6, None where a hook did not fire (node not run).
PyObject* m_bwd_ms(PyObject* self, PyObject*) {
  return guarded([&]() -> PyObject* {
    State& st = state(self);
    size_t n = st.types.size();
    Ref out = own(PyList_New((Py_ssize_t)n));
    for (size_t i = 0; i < n; ++i) {
      PyObject* v;
      if (st.hooked && st.stamps->start[i] != kNotRun && st.stamps->end[i] != kNotRun) {
        v = check(PyFloat_FromDouble(double(st.stamps->end[i] - st.stamps->start[i]) / 1e6));
      } else {
        v = new_ref(Py_None);
      }
      PyList_SET_ITEM(out.get(), (Py_ssize_t)i, v);
    }
    return out.release();
  });
}

// Per node: its autograd sequence number, None for AccumulateGrad and torch's "no number" (>= 2**63).
PyObject* m_seqs(PyObject* self, PyObject*) {
  return guarded([&]() -> PyObject* {
    State& st = state(self);
    Ref out = own(PyList_New((Py_ssize_t)st.seq.size()));
    for (size_t i = 0; i < st.seq.size(); ++i) {
      uint64_t s = st.seq[i];
      PyObject* v = s >= (uint64_t(1) << 63) ? new_ref(Py_None) : check(PyLong_FromUnsignedLongLong(s));
      PyList_SET_ITEM(out.get(), (Py_ssize_t)i, v);
    }
    return out.release();
  });
}

PyObject* g_types(PyObject* self, void*) {
  return guarded([&]() -> PyObject* {
    State& st = state(self);
    Ref out = own(PyList_New((Py_ssize_t)st.types.size()));
    for (size_t i = 0; i < st.types.size(); ++i)
      PyList_SET_ITEM(out.get(), (Py_ssize_t)i, new_ref((PyObject*)st.types[i]));
    return out.release();
  });
}

PyObject* g_arity(PyObject* self, void*) {
  return guarded([&]() -> PyObject* {
    State& st = state(self);
    Ref out = own(PyList_New((Py_ssize_t)st.arity.size()));
    for (size_t i = 0; i < st.arity.size(); ++i)
      PyList_SET_ITEM(out.get(), (Py_ssize_t)i, check(PyLong_FromLong(st.arity[i])));
    return out.release();
  });
}

PyObject* g_leaves(PyObject* self, void*) {
  return guarded([&]() -> PyObject* { return new_ref(state(self).leaves.get()); });
}

PyObject* g_n(PyObject* self, void*) {
  return guarded([&]() -> PyObject* { return PyLong_FromSize_t(state(self).types.size()); });
}

PyObject* g_wrapped(PyObject* self, void*) {
  return guarded([&]() -> PyObject* { return PyLong_FromSize_t(state(self).wrapped); });
}

PyMethodDef instrumented_methods[] = {
    {"remove", m_remove, METH_NOARGS, "remove every hook and drop the node references (idempotent)"},
    {"bwd_ms", m_bwd_ms, METH_NOARGS, "per node: backward ms, or None where the node did not run"},
    {"seqs", m_seqs, METH_NOARGS, "per node: autograd sequence number or None"},
    {nullptr, nullptr, 0, nullptr}};

PyGetSetDef instrumented_getset[] = {
    {"types", g_types, nullptr, "per node: its Python type (as type(grad_fn))", nullptr},
    {"arity", g_arity, nullptr, "per node: len(next_functions)", nullptr},
    {"leaves", g_leaves, nullptr, "the AccumulateGrad nodes' tensors, in node order", nullptr},
    {"n", g_n, nullptr, "number of nodes", nullptr},
    {"wrapped", g_wrapped, nullptr, "nodes that have a Python wrapper (made by the walk or before it)", nullptr},
    {nullptr, nullptr, nullptr, nullptr, nullptr}};

}  // namespace

// instrument(roots, hook) -> Instrumented. Walk in capture's order (pre-order, next_edges in order); with `hook`,
// put a PreHook and a PostHook on every node.
PyObject* py_instrument(PyObject*, PyObject* args) {
  PyObject* roots;
  int hook = 0;
  if (!PyArg_ParseTuple(args, "O!p:instrument", &PyList_Type, &roots, &hook)) return nullptr;
  return guarded([&]() -> PyObject* {
    auto st = std::make_unique<State>();
    st->leaves = own(PyList_New(0));
    std::vector<Node*> root_nodes;
    for (Py_ssize_t i = 0; i < PyList_GET_SIZE(roots); ++i) root_nodes.push_back(node_of(PyList_GET_ITEM(roots, i)));
    NodeIndex index;
    std::unordered_map<std::type_index, TypeEntry> cache;
    preorder(root_nodes, index, [&](Node* fn) {
      st->nodes.push_back(c10::intrusive_ptr<Node>::reclaim_copy(fn));
      PyTypeObject* tp = nullptr;
      TypeEntry& e = entry_for(cache, *st, fn, &tp);
      st->types.push_back(tp);
      st->seq.push_back(fn->sequence_nr());
      if (e.accumulate) {
        auto* acc = static_cast<torch::autograd::AccumulateGrad*>(fn);
        Ref var = own(THPVariable_Wrap(acc->variable));
        append(st->leaves.get(), var.get());
      }
      st->arity.push_back((int)fn->next_edges().size());
    });
    size_t n = st->nodes.size();
    // What _deep_free.py must size the stack for: every node with a Python wrapper, ours (the first of each type)
    // and those user code made before (a walk over next_functions), which recurse just the same when freed.
    st->wrapped = 0;
    for (const auto& node : st->nodes)
      if (node->pyobj_slot()->load_pyobj()) ++st->wrapped;
    if (hook) {
      st->stamps = std::make_shared<Stamps>();
      st->stamps->start.assign(n, kNotRun);
      st->stamps->end.assign(n, kNotRun);
      st->hooks.reserve(n);
      for (size_t i = 0; i < n; ++i) {
        Node* fn = st->nodes[i].get();
        auto pre = std::make_unique<PreHook>(st->stamps, i);
        auto* pre_ptr = pre.get();
        fn->add_pre_hook(std::move(pre));
        uintptr_t post_key = fn->add_post_hook(std::make_unique<PostHook>(st->stamps, i));
        st->hooks.emplace_back(pre_ptr, post_key);
      }
      st->hooked = true;
    }
    PyObject* obj = InstrumentedType.tp_alloc(&InstrumentedType, 0);
    if (!obj) {
      st->remove();
      throw PyError{};
    }
    ((Instrumented*)obj)->st = st.release();
    return obj;
  });
}

bool init_hooks(PyObject* module) {
  InstrumentedType.tp_name = "graphwidget_native.Instrumented";
  InstrumentedType.tp_basicsize = sizeof(Instrumented);
  InstrumentedType.tp_flags = Py_TPFLAGS_DEFAULT;
  InstrumentedType.tp_doc = "One instrumented graph: its nodes in capture's order and, if hooked, their stamps.";
  InstrumentedType.tp_dealloc = instrumented_dealloc;
  InstrumentedType.tp_methods = instrumented_methods;
  InstrumentedType.tp_getset = instrumented_getset;
  if (PyType_Ready(&InstrumentedType) < 0) return false;
  return add_object_ref(module, "Instrumented", (PyObject*)&InstrumentedType) == 0;
}

}  // namespace gw

// graphwidget's compiled capture core: the same walk and the same records as graphwidget/capturing/records.py, in C++.
//
// Why this exists: in Python the capture costs several times the bare depth-first walk over next_functions (the
// ratio is in docs/performance.md); reading `_input_metadata` and the saved tensors through Python attribute access
// and building the records in bytecode is most of it, and no rearrangement of the Python got it near the 3x target. Here the walk, the output metadata, the tensor records, the edges and networkx's adjacency
// dicts are built with the CPython C API straight from torch's C++ Node objects; only what is the same for every
// node of one type (its op name, kind and saved-attribute names) and the rare cases below are asked of Python.
//
// Contract (tests/test_native.py checks it on every graph in the test suite): for any graph it accepts, the result
// is identical, key order included, to graphwidget.capture's Python path. Whatever it does not handle exactly the
// same way (symbolic shapes, root objects it does not recognise) raises `Unsupported`, and the caller uses the
// Python path for that graph. Tensors other than plain torch.Tensor / nn.Parameter, and non-strided layouts, have
// their records made by the Python function passed in, so subclasses see exactly what they see in Python.
//
// Built on demand with torch.utils.cpp_extension (graphwidget/capturing/native/builder.py); it links against the running torch, so a
// different torch needs a rebuild, which the build's cache key (native/paths.py) takes care of.

#include "common.h"

#include <Python.h>

#include <torch/csrc/DynamicTypes.h>
#include <torch/csrc/autograd/function.h>
#include <torch/csrc/autograd/python_cpp_function.h>
#include <torch/csrc/autograd/python_function.h>
#include <torch/csrc/autograd/python_variable.h>
#include <torch/csrc/autograd/saved_variable.h>
#include <torch/csrc/utils/pybind.h>  // torch's SavedTensor Python objects -> the SavedVariable behind them

#include <cmath>
#include <cstring>
#include <algorithm>
#include <cstdint>
#include <typeindex>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>


namespace gw {

namespace {

enum class Kind { backward, custom, leaf };

using torch::autograd::SavedVariable;

struct Attr {
  Ref attr;   // "_saved_self", or for a saved tensor "_raw_saved_self" (the SavedVariable, never unpacked by reading)
  Ref name;   // "self", the name shown to users
  Ref descr;  // the type's getset descriptor for `attr` (a C getter torch generates), when it is one
  // A single saved tensor is a SavedVariable member of the node's C++ type, at the same offset in every node of
  // that type. The `_raw_saved_*` getter hands it out as a pybind object (one allocation and a registry insert and
  // erase per read, per saved tensor); once two nodes' getters agree on the offset, later nodes are read at it directly.
  // kUnlearned: not seen yet; kNoOffset: a list, or the getters disagreed (then the getter is used every time).
  static constexpr std::ptrdiff_t kUnlearned = -1, kNoOffset = -2;
  std::ptrdiff_t offset = kUnlearned;
  bool confirmed = false;
};

struct TypeInfo {
  Ref type;  // keeps the Python type alive while we key on its address
  Ref op;
  Ref kind_str;
  Kind kind = Kind::backward;
  std::vector<Attr> tensor_attrs;  // attr = the raw twin ("_raw_saved_x")
  std::vector<Attr> other_attrs;
  Attr variable;  // AccumulateGrad's "variable"
  // For a type whose every attribute we read is a C getter of a THPCppFunction type: a reader (see below).
  // Null for other types, which are read through each node's own wrapper.
  Ref reader;
  // The attrs cache key and dict of this type's last node with shareable values (Capture::attrs_of).
  Ref last_key, last_attrs;
};

// Reading a node without giving it a Python wrapper.
//
// A node's wrapper, once made, lives as long as the node (PyObject preservation): one per node, they are most of
// what the cycle collector scanned after a capture, and they are what makes freeing a deep graph recurse in
// C (_deep_free.py). The C getters torch generates for `_raw_saved_*`, `_saved_*` and `variable` only read
// `self->cdata`, so one *reader* per type — a real instance of the node's Python type, allocated by the type's own
// allocator and holding the node in the public `THPCppFunction::cdata` member, as torch's `CppFunction_pynew`
// (python_cpp_function.h) builds one — reads every node of that type in turn through the ordinary descriptor
// protocol. It is never registered as the node's Python object (the node's PyObject slot stays as it was) and is
// released with an empty `cdata`, so torch's dealloc has nothing to detach. `Bind` points it at one node for the
// duration of a read. Types whose attributes are not all such getters, custom Functions (PyNode, whose Python
// object exists anyway) and the first node of every type (to learn its Python type) use the real wrapper.
Ref make_reader(PyTypeObject* tp) {
  PyObject* obj = tp->tp_alloc(tp, 0);  // zeroed memory
  if (!obj) throw PyError{};
  // Not for the collector: it holds no Python references, and between reads its node is null.
  untrack(obj);
  new (&reinterpret_cast<torch::autograd::THPCppFunction*>(obj)->cdata) c10::intrusive_ptr<Node>();
  return Ref(obj);
}

struct Bind {
  Ref* reader;
  Bind(Ref* r, Node* fn) : reader(r) { cdata() = c10::intrusive_ptr<Node>::reclaim_copy(fn); }
  Bind(const Bind&) = delete;
  Bind& operator=(const Bind&) = delete;
  ~Bind() {
    if (Py_REFCNT(reader->get()) == 1) {
      cdata().reset();
    } else {
      // A getter kept the reader (none of torch's does). Whoever holds it may use it: leave it bound to its node
      // for good (a leak of one small object and one node) and read this type through real wrappers from now on.
      reader->release();
    }
  }
  c10::intrusive_ptr<Node>& cdata() { return reinterpret_cast<torch::autograd::THPCppFunction*>(reader->get())->cdata; }
};

// What torch says when a saved tensor was modified in place after it was saved (graphwidget/capturing/tensors.py).
constexpr const char* kStaleWords = "modified by an inplace operation";
enum class Unpacked { ok, freed, stale };

struct OutRec {        // one forward output's record: {"shape", "dtype", "device"}, shared between nodes
  PyObject* rec;       // borrowed from Capture::out_cache
  PyObject* shape;     // rec["shape"]
  PyObject* dtype;     // rec["dtype"]
  long long bytes;
};

struct OutKey {
  c10::SmallVector<int64_t, 6> shape;  // no heap allocation per lookup for the usual ranks
  int dtype;
  int8_t device_type;
  int8_t device_index;
  bool operator==(const OutKey& o) const {
    return dtype == o.dtype && device_type == o.device_type && device_index == o.device_index && shape == o.shape;
  }
};
struct OutKeyHash {
  size_t operator()(const OutKey& k) const noexcept {
    size_t h = std::hash<int>()(k.dtype) * 31 + (size_t)(uint8_t)k.device_type * 131 + (size_t)(uint8_t)k.device_index;
    for (int64_t s : k.shape) h = h * 1000003u ^ std::hash<int64_t>()(s);
    return h;
  }
};

class Capture {
 public:
  Capture(PyObject* param_names, PyObject* type_info, PyObject* jsonable, PyObject* dtype_name,
          PyObject* py_tensor_record, PyObject* packed_record, PyObject* node_template)
      : param_names_(param_names), type_info_(type_info), jsonable_(jsonable), dtype_name_(dtype_name),
        py_tensor_record_(py_tensor_record), packed_record_(packed_record) {
    // (node, edge, saved tensor, leaf tensor) templates: dicts whose copies share one key table (see
    // capture.shared_key_dict), so each record costs its values only.
    if (!PyTuple_Check(node_template) || PyTuple_GET_SIZE(node_template) != 4) {
      PyErr_SetString(PyExc_TypeError, "templates must be a 4-tuple of dicts");
      throw PyError{};
    }
    for (int i = 0; i < 4; ++i) {
      if (!PyDict_Check(PyTuple_GET_ITEM(node_template, i))) {
        PyErr_SetString(PyExc_TypeError, "templates must be a 4-tuple of dicts");
        throw PyError{};
      }
    }
    template_ = PyTuple_GET_ITEM(node_template, 0);
    edge_template_ = PyTuple_GET_ITEM(node_template, 1);
    saved_template_ = PyTuple_GET_ITEM(node_template, 2);
    leaf_template_ = PyTuple_GET_ITEM(node_template, 3);
    storages_ = own(PyDict_New());
    empty_saved_ = own(PyList_New(0));
    untrack(empty_saved_.get());
    empty_attrs_ = own(PyDict_New());
    attrs_cache_ = own(PyDict_New());
  }

  // Returns (node attrs dict, succ, pred, [index of each root]).
  // With `rank`, each node's seq is its rank (capture.finalize_seq done here, where the numbers are at hand:
  // a separate pass over the finished dicts pays a cache miss per node) and the fifth item of the
  // result is the absolute numbers, 8 bytes a node (UINT64_MAX: none), for GradGraph.abs_seq.
  PyObject* run(PyObject* roots, bool rank) {
    std::vector<Node*> root_nodes;
    Py_ssize_t nroots = PyList_GET_SIZE(roots);
    for (Py_ssize_t i = 0; i < nroots; ++i) root_nodes.push_back(node_of(PyList_GET_ITEM(roots, i)));
    walk(root_nodes);
    const size_t n = order_.size();
    tensor_records_.reserve(n);  // about one saved tensor a node: no rehash of a growing table

    Ref node_dict = own(PyDict_New());
    Ref succ = own(PyDict_New());
    Ref pred = own(PyDict_New());
    std::vector<PyObject*> attrs(n);  // borrowed from node_dict
    std::vector<Ref> ids;
    ids.reserve(n);
    out_start_.assign(n + 1, 0);
    std::vector<uint64_t>& abs = abs_;  // read by walk(), while each node was at hand
    if (rank) {
      std::vector<size_t> by_seq;
      by_seq.reserve(n);
      for (size_t i = 0; i < n; ++i)
        if (abs[i] != kNoSeq) by_seq.push_back(i);
      // ties (several threads' counters) keep node order, as Python's stable sorted() does
      std::stable_sort(by_seq.begin(), by_seq.end(), [&](size_t a, size_t b) { return abs[a] < abs[b]; });
      rank_.assign(n, kNoSeq);
      for (size_t r = 0; r < by_seq.size(); ++r) rank_[by_seq[r]] = r;
    }
    for (size_t i = 0; i < n; ++i) {
      ids.push_back(int_obj((long long)i));
      Ref d = record(order_[i], rank ? rank_[i] : abs[i]);
      set_item(node_dict.get(), ids[i].get(), d.get());
      attrs[i] = d.get();
      Ref s_i = own(PyDict_New()), p_i = own(PyDict_New());
      set_item(succ.get(), ids[i].get(), s_i.get());
      set_item(pred.get(), ids[i].get(), p_i.get());
      succ_of_.push_back(s_i.get());
      pred_of_.push_back(p_i.get());
      out_start_[i + 1] = outs_.size();
    }
    edges(attrs, ids, succ.get(), pred.get());
    for (size_t i = 0; i < n; ++i) {  // {neighbour: edge dict}: nothing for the collector either
      untrack(succ_of_[i]);
      untrack(pred_of_[i]);
    }
    // And the three top-level dicts: the collector's traversal of them alone touched every record (a cache miss
    // per node). networkx re-tracks them the moment it stores a new container in them.
    untrack(node_dict.get());
    untrack(succ.get());
    untrack(pred.get());

    Ref root_ids = own(PyList_New(0));
    for (Node* r : root_nodes) append(root_ids.get(), ids[index_.find(r)].get());
    Ref abs_bytes = own(PyBytes_FromStringAndSize(reinterpret_cast<const char*>(abs.data()),
                                                  (Py_ssize_t)(abs.size() * sizeof(uint64_t))));
    // Nodes with a Python wrapper: the first of each type read here, and every node user code already touched
    // (a walk over next_functions, a grad_fn kept in a variable, custom Functions). Only those recurse when the
    // graph is freed, so this is the number _deep_free.py must size the stack for.
    // (Counted by record(), which has each node at hand: a pass over a million nodes here cost a cache miss each.)
    Ref wrapped = own(PyLong_FromSize_t(wrapped_));
    return check(PyTuple_Pack(6, node_dict.get(), succ.get(), pred.get(), root_ids.get(), abs_bytes.get(),
                              wrapped.get()));
  }

 private:
  PyObject* param_names_;
  PyObject* type_info_;
  PyObject* jsonable_;
  PyObject* dtype_name_;
  PyObject* py_tensor_record_;
  PyObject* packed_record_;  // tensors.packed_record: the one description of a hooked saved tensor
  PyObject* template_;
  PyObject* edge_template_;
  PyObject* saved_template_;  // shape ... freed, name: a saved tensor's record
  PyObject* leaf_template_;   // shape ... storage_bytes, requires_grad, name: a leaf's tensor record

  std::vector<Node*> order_;
  NodeIndex index_;
  // What walk() reads while each node is at hand, so that no later pass goes back to the nodes (each a cache miss
  // on a big graph): node v's next_edges are slots edge_start_[v] .. edge_start_[v + 1] of edge_child_ (the
  // producer's index, NodeIndex::kMissing for an undefined edge) and edge_input_ (its input_nr); abs_[v] its seq.
  std::vector<size_t> edge_start_, edge_child_;
  std::vector<uint32_t> edge_input_;
  std::vector<uint64_t> abs_;
  size_t wrapped_ = 0;  // nodes with a Python wrapper after record() read them
  std::unordered_map<PyTypeObject*, TypeInfo> types_;
  std::unordered_map<std::type_index, TypeInfo*> direct_;  // C++ node type -> its info, for `direct` types
  // The same by the address of the type's type_info: a type_index hashes and compares the type's mangled name, a
  // string hash per node; one type may have several type_info objects (one per library), so a miss here falls back
  // to direct_ by name, which is authoritative.
  std::unordered_map<const std::type_info*, TypeInfo*> direct_by_addr_;
  struct OutEntry {
    Ref rec;
    long long bytes;  // of the tensor it describes
    PyObject* shape;  // rec["shape"], rec["dtype"] (borrowed from rec)
    PyObject* dtype;
  };
  std::unordered_map<OutKey, OutEntry, OutKeyHash> out_cache_;
  std::vector<PyObject*> succ_of_, pred_of_;  // node -> its inner adjacency dict (borrowed): no big-dict lookups
  std::vector<OutRec> outs_;                            // every node's outputs, flat
  std::vector<size_t> out_start_;                       // node i's outputs are outs_[out_start_[i]:out_start_[i+1]]
  struct PtrsHash {
    size_t operator()(const std::vector<PyObject*>& v) const noexcept {
      size_t h = v.size();
      for (PyObject* p : v) h = h * 1000003u ^ std::hash<PyObject*>()(p);
      return h;
    }
  };
  // saved tensor -> its first record (the base the later ones copy); keyed by the TensorImpl, which stands for the
  // tensor's one Python object: a tensor without one is never given one (wrapping costs more than its record)
  std::unordered_map<c10::TensorImpl*, Ref> tensor_records_;
  std::vector<at::Tensor> keep_;                        // pins those tensors so no address is reused
  // A tensor saved under one name and staleness by many nodes (a weight every step of a loop saves) gets one record,
  // and nodes whose records are all such one shared `saved` list per distinct sequence: read-only, as the output
  // records. (A base record is matched by its name's value, a copy under another name by the name object; the
  // pointers in these keys stay alive in the records they name.)
  struct SavedKey {
    c10::TensorImpl* impl;
    PyObject* name;
    bool stale;
    bool operator==(const SavedKey& o) const { return impl == o.impl && name == o.name && stale == o.stale; }
  };
  struct SavedKeyHash {
    size_t operator()(const SavedKey& k) const noexcept {
      return std::hash<void*>()(k.impl) * 31 ^ std::hash<PyObject*>()(k.name) ^ (size_t)k.stale;
    }
  };
  std::unordered_map<SavedKey, Ref, SavedKeyHash> shared_saved_;  // records copied from a base under another name
  std::unordered_map<std::vector<PyObject*>, Ref, PtrsHash> saved_lists_;
  bool fresh_ = false;  // the node being recorded got a record made for it (its saved list is then its own)
  Ref storages_;                                        // storage key -> small int, in first-seen order
  // Values nodes share (records are read-only, as the output records): one empty `saved` list and one empty `attrs`
  // dict for every node without any, one `outputs` list per distinct sequence of output records, one `attrs` dict
  // per type and distinct atomic values (an add's {"alpha": 1}). Most nodes of a big graph repeat one of a handful.
  Ref empty_saved_, empty_attrs_;
  Ref attrs_cache_;  // (type, value, type(value), ...) -> attrs dict
  std::unordered_map<std::vector<PyObject*>, Ref, PtrsHash> outputs_cache_;
  std::vector<PyObject*> out_scratch_;
  std::vector<Ref> attr_scratch_;
  Ref dtype_names_[256];
  std::unordered_map<int, Ref> device_names_;



  PyObject* dtype_name(at::ScalarType st) {
    int i = (int)st;
    if (i < 0 || i >= 256) throw Unsupported{};
    if (!dtype_names_[i].get()) {
      PyObject* dt = (PyObject*)torch::getTHPDtype(st);  // borrowed
      dtype_names_[i] = own(PyObject_CallOneArg(dtype_name_, dt));
    }
    return dtype_names_[i].get();
  }

  PyObject* device_name(const c10::Device& dev) {
    int key = ((int)(uint8_t)dev.type() << 8) | (int)(uint8_t)dev.index();
    auto it = device_names_.find(key);
    if (it != device_names_.end()) return it->second.get();
    Ref s = own(PyUnicode_FromString(dev.str().c_str()));
    PyObject* raw = s.get();
    device_names_.emplace(key, std::move(s));
    return raw;
  }

  // The type's descriptor for `attr` when it is a getset descriptor (looked up on the type object: for a
  // descriptor that is the descriptor itself); else an empty Ref.
  static Ref getset_descr(PyTypeObject* tp, PyObject* attr) {
    PyObject* d = PyObject_GetAttr((PyObject*)tp, attr);
    if (!d) {
      if (!PyErr_ExceptionMatches(PyExc_AttributeError)) throw PyError{};
      PyErr_Clear();
      return Ref();
    }
    if (!Py_IS_TYPE(d, &PyGetSetDescr_Type)) {
      Py_DECREF(d);
      return Ref();
    }
    return Ref(d);
  }

  // Read one attribute through `self`: a real wrapper (getattr), or a reader (its type's descriptor, called as
  // the descriptor protocol does). Returns a new reference or nullptr with the error set.
  static PyObject* get(PyObject* self, const Attr& a, bool reader) {
    if (!reader) return PyObject_GetAttr(self, a.attr.get());
    PyObject* d = a.descr.get();
    return Py_TYPE(d)->tp_descr_get(d, self, (PyObject*)Py_TYPE(self));
  }

  // get(), with RuntimeError (a saved value released by backward()) turned into nullptr; other errors propagate.
  static Ref read(PyObject* self, const Attr& a, bool reader) { return freed_as_null(get(self, a, reader)); }

  TypeInfo& type_of(PyObject* wrapper) {
    PyTypeObject* tp = Py_TYPE(wrapper);
    auto it = types_.find(tp);
    if (it != types_.end()) return it->second;
    // (op, kind, ((attr, name), ...), ((attr, name), ...)) from capture._TypeInfo
    Ref info = own(PyObject_CallOneArg(type_info_, wrapper));
    if (!PyTuple_Check(info.get()) || PyTuple_GET_SIZE(info.get()) != 4) {
      PyErr_SetString(PyExc_TypeError, "type_info must return a 4-tuple");
      throw PyError{};
    }
    TypeInfo ti;
    ti.type = Ref::borrow((PyObject*)tp);
    ti.op = Ref::borrow(PyTuple_GET_ITEM(info.get(), 0));
    ti.kind_str = Ref::borrow(PyTuple_GET_ITEM(info.get(), 1));
    int is_leaf = PyUnicode_Compare(ti.kind_str.get(), S_leaf);
    int is_custom = PyUnicode_Compare(ti.kind_str.get(), S_custom);
    if (PyErr_Occurred()) throw PyError{};
    ti.kind = is_leaf == 0 ? Kind::leaf : is_custom == 0 ? Kind::custom : Kind::backward;
    // tensor attributes come as (attr, name, raw twin): we read the twin, the SavedVariable, and unpack it here
    for (int which = 2; which <= 3; ++which) {
      PyObject* seq = PyTuple_GET_ITEM(info.get(), which);
      Ref fast = own(PySequence_Fast(seq, "attribute list"));
      for (Py_ssize_t j = 0; j < PySequence_Fast_GET_SIZE(fast.get()); ++j) {
        PyObject* item = PySequence_Fast_GET_ITEM(fast.get(), j);
        Attr a;
        a.attr = own(PySequence_GetItem(item, which == 2 ? 2 : 0));
        a.name = own(PySequence_GetItem(item, 1));
        a.descr = getset_descr(tp, a.attr.get());
        (which == 2 ? ti.tensor_attrs : ti.other_attrs).push_back(std::move(a));
      }
    }
    ti.variable.attr = Ref::borrow(K_variable);
    ti.variable.name = Ref::borrow(K_variable);
    if (ti.kind == Kind::leaf) ti.variable.descr = getset_descr(tp, K_variable);
    bool direct = ti.kind != Kind::custom && torch::autograd::THPCppFunction_Check(wrapper);
    for (const auto* list : {&ti.tensor_attrs, &ti.other_attrs})
      for (const Attr& a : *list) direct = direct && a.descr.get();
    if (ti.kind == Kind::leaf) direct = direct && ti.variable.descr.get();
    if (direct) ti.reader = make_reader(tp);
    return types_.emplace(tp, std::move(ti)).first->second;
  }

  // ------------------------------------------------------------------ tensor records (tensor_meta.tensor_record)

  static bool plain(PyObject* obj) { return THPVariable_CheckExact(obj); }

  // A new record dict in tensor_record's key order, without "_storage_key"; `key` receives the storage key
  // (None when there is none). Non-plain tensors and non-strided layouts go through the Python function.
  Ref tensor_record(PyObject* obj, Ref* key, PyObject* tmpl) {
    if (plain(obj)) {
      const at::Tensor& t = THPVariable_Unpack(obj);
      if (strided(t)) return strided_record(t, key, tmpl);
    }
    Ref rec = own(PyObject_CallOneArg(py_tensor_record_, obj));
    if (!PyDict_Check(rec.get())) {
      PyErr_SetString(PyExc_TypeError, "tensor_record must return a dict");
      throw PyError{};
    }
    PyObject* k = PyDict_GetItemWithError(rec.get(), K__storage_key);
    if (!k && PyErr_Occurred()) throw PyError{};
    *key = Ref::borrow(k ? k : Py_None);
    if (k && PyDict_DelItem(rec.get(), K__storage_key) < 0) throw PyError{};
    return rec;
  }

  Ref int_list(c10::IntArrayRef v) {
    Ref l = own(PyList_New((Py_ssize_t)v.size()));
    for (size_t i = 0; i < v.size(); ++i) PyList_SET_ITEM(l.get(), (Py_ssize_t)i, int_obj(v[i]).release());
    untrack(l.get());  // ints only
    return l;
  }

  Ref strided_record(const at::Tensor& t, Ref* key, PyObject* tmpl) {
    if (t.unsafeGetTensorImpl()->has_symbolic_sizes_strides()) throw Unsupported{};
    PyObject* fmt;
    bool contiguous = t.is_contiguous();
    int64_t dim = t.dim();
    if (contiguous) {
      fmt = S_contiguous;
    } else if (dim == 4 && t.is_contiguous(at::MemoryFormat::ChannelsLast)) {
      fmt = S_channels_last;
    } else if (dim == 5 && t.is_contiguous(at::MemoryFormat::ChannelsLast3d)) {
      fmt = S_channels_last_3d;
    } else {
      fmt = S_non_contiguous;
    }
    Ref rec = own(PyDict_Copy(tmpl));
    PyObject* r = rec.get();
    set_item_steal(r, K_shape, int_list(t.sizes()).release());
    set_item_steal(r, K_stride, int_list(t.strides()).release());
    set_item(r, K_dtype, dtype_name(t.scalar_type()));
    PyObject* dev = device_name(t.device());
    set_item(r, K_device, dev);
    set_item(r, K_contiguous, contiguous ? Py_True : Py_False);
    set_item(r, K_memory_format, fmt);
    set_item_steal(r, K_bytes, PyLong_FromLongLong((long long)(t.numel() * (int64_t)t.element_size())));
    const c10::Storage& st = t.storage();
    set_item_steal(r, K_storage_bytes, PyLong_FromLongLong((long long)st.nbytes()));
    Ref ptr = own(PyLong_FromVoidPtr(const_cast<void*>(st.data())));
    *key = own(PyTuple_Pack(2, dev, ptr.get()));
    untrack(rec.get());
    return rec;
  }

  // _Builder.storage_id: graph-local storage id (first seen, first numbered), None without a storage.
  Ref storage_id(PyObject* key) {
    if (key == Py_None) return Ref::borrow(Py_None);
    PyObject* found = PyDict_GetItemWithError(storages_.get(), key);
    if (found) return Ref::borrow(found);
    if (PyErr_Occurred()) throw PyError{};
    Ref sid = int_obj((long long)PyDict_GET_SIZE(storages_.get()));
    set_item(storages_.get(), key, sid.get());
    return sid;
  }

  // _Builder.saved_tensor: the record of a saved tensor with its name (and packed: None, stale: whether backward
  // would find it modified in place). A tensor's first record is kept as its base (most tensors are saved once); a
  // later save under the same name and staleness returns that very record when the tensor has a storage (records
  // without one are counted by identity), else it copies the base and overwrites the three fields set below, which
  // gives the same dict as a copy of the bare base (itself shared by later saves with that name and staleness).
  Ref saved_tensor(PyObject* name, const at::Tensor& t, bool stale = false) {
    c10::TensorImpl* impl = t.unsafeGetTensorImpl();
    auto it = tensor_records_.find(impl);
    Ref out;
    if (it == tensor_records_.end()) {
      Ref key;
      PyObject* obj = impl->pyobj_slot()->load_pyobj();  // borrowed; null: no Python object, so a plain tensor
      if ((!obj || plain(obj)) && strided(t)) {
        out = strided_record(t, &key, saved_template_);
      } else {  // a subclass, or a layout the Python function describes: it gets the tensor object
        Ref wrapped = own(THPVariable_Wrap(t));
        out = tensor_record(wrapped.get(), &key, saved_template_);
      }
      Ref sid = storage_id(key.get());
      set_item(out.get(), K_storage, sid.get());
      set_item(out.get(), K_freed, Py_False);
      tensor_records_.emplace(impl, Ref::borrow(out.get()));
      keep_.push_back(t);
    } else {
      PyObject* base = it->second.get();
      const bool shareable = PyDict_GetItem(base, K_storage) != Py_None;
      if (shareable) {
        PyObject* base_name = PyDict_GetItem(base, K_name);
        const bool same_name = base_name == name || PyUnicode_Compare(base_name, name) == 0;
        if (PyErr_Occurred()) throw PyError{};
        if (same_name && (PyDict_GetItem(base, K_stale) == Py_True) == stale) return Ref::borrow(base);
        auto hit = shared_saved_.find(SavedKey{impl, name, stale});
        if (hit != shared_saved_.end()) return Ref::borrow(hit->second.get());
      }
      out = own(PyDict_Copy(base));
      if (shareable) shared_saved_.emplace(SavedKey{impl, name, stale}, Ref::borrow(out.get()));
    }
    fresh_ = true;
    set_item(out.get(), K_name, name);
    set_item(out.get(), K_packed, Py_None);
    set_item(out.get(), K_stale, stale ? Py_True : Py_False);
    untrack(out.get());
    return out;
  }

  static bool strided(const at::Tensor& t) { return t.layout() == c10::kStrided && !t.is_nested() && t.has_storage(); }

  // The node's `saved` list: one shared list per distinct sequence of records, looked up only when every record
  // was one made before (a loop's steps saving one weight); a list with a new record is a list of its own.
  PyObject* saved_list(PyObject* saved) {
    if (fresh_) return saved;
    std::vector<PyObject*>& recs = out_scratch_;  // free again: record() has used it for the outputs already
    recs.assign(&PyList_GET_ITEM(saved, 0), &PyList_GET_ITEM(saved, 0) + PyList_GET_SIZE(saved));
    auto it = saved_lists_.find(recs);
    if (it != saved_lists_.end()) return it->second.get();
    saved_lists_.emplace(recs, Ref::borrow(saved));
    return saved;
  }

  static Ref freed_record(PyObject* name) {  // tensors.freed_record
    Ref r = own(PyDict_New());
    PyObject* d = r.get();
    set_item(d, K_name, name);
    for (PyObject* k : {K_shape, K_stride, K_dtype, K_device, K_contiguous, K_memory_format}) set_item(d, k, Py_None);
    Ref zero = int_obj(0);
    set_item(d, K_bytes, zero.get());
    set_item(d, K_storage_bytes, zero.get());
    set_item(d, K_storage, Py_None);
    set_item(d, K_freed, Py_True);
    set_item(d, K_packed, Py_None);
    set_item(d, K_stale, Py_False);
    untrack(d);
    return r;
  }

  // tensor_meta.jsonable, with the common cases done here and the rest asked of Python.
  Ref jsonable(PyObject* v) {
    if (v == Py_None || PyBool_Check(v) || PyLong_CheckExact(v) || PyUnicode_CheckExact(v)) return Ref::borrow(v);
    if (PyFloat_CheckExact(v) && std::isfinite(PyFloat_AS_DOUBLE(v))) return Ref::borrow(v);
    if (PyTuple_Check(v) || PyList_Check(v)) {
      Ref fast = own(PySequence_Fast(v, "sequence"));
      Py_ssize_t n = PySequence_Fast_GET_SIZE(fast.get());
      Ref out = own(PyList_New(n));
      for (Py_ssize_t i = 0; i < n; ++i)
        PyList_SET_ITEM(out.get(), i, jsonable(PySequence_Fast_GET_ITEM(fast.get(), i)).release());
      untrack(out.get());  // atomic values and lists of them (anything else came from Python's jsonable)
      return out;
    }
    return own(PyObject_CallOneArg(jsonable_, v));
  }

  // ------------------------------------------------------------------ saved tensors (_Builder.saved)

  // The SavedVariable behind one of torch's SavedTensor objects (what the `_raw_saved_*` getters return).
  static SavedVariable* saved_variable(PyObject* raw) {
    try {
      return pybind11::handle(raw).cast<SavedVariable*>();
    } catch (const pybind11::cast_error&) {
      throw Unsupported{};  // not torch's SavedTensor: leave this graph to the Python path
    }
  }

  // What `_saved_<name>` would give — the tensor (undefined for an empty slot), "released by backward()" or
  // "modified in place since it was saved" — without reading it through Python. Only for SavedVariables without hooks.
  static Unpacked unpack(const SavedVariable& sv, Node* fn, at::Tensor* out) {
    try {
      *out = sv.unpack(c10::intrusive_ptr<Node>::reclaim_copy(fn));  // as the generated getters: saved_for = the node
    } catch (const c10::Error& e) {
      return std::strstr(e.what_without_backtrace(), kStaleWords) ? Unpacked::stale : Unpacked::freed;
    }
    return Unpacked::ok;
  }

  // The tensor a SavedVariable without hooks holds now, unpacked or not (SavedTensor.data): a stale one is
  // described as it is. Undefined when there is none.
  static at::Tensor raw_data(const SavedVariable& sv) {
    std::optional<at::Tensor> t = sv.get_raw_data();
    return t ? *t : at::Tensor();
  }

  void add_record(PyObject* saved, const Ref& rec, long long* total) {
    append(saved, rec.get());
    *total += PyLong_AsLongLong(PyDict_GetItem(rec.get(), K_bytes));
  }

  // One saved tensor attribute (`raw`: its SavedTensor). A hooked one is never unpacked: unpacking runs its unpack
  // hook (a checkpoint re-runs the forward). tensors.packed_record describes it, for both engines.
  // `raw` may be null (the SavedVariable `sv` was found at its learned offset): it is read only for a hooked one.
  void saved_one(PyObject* saved, PyObject* self, const Attr& a, bool reader, SavedVariable* sv, Ref raw, Node* fn,
                 long long* total) {
    PyObject* name = a.name.get();
    if (sv->has_hooks()) {
      if (!raw.get()) raw = own(get(self, a, reader));
      Ref rec = own(PyObject_CallFunctionObjArgs(packed_record_, name, raw.get(), nullptr));
      append(saved, rec.get());
      return;
    }
    at::Tensor value;
    switch (unpack(*sv, fn, &value)) {
      case Unpacked::freed:
        append(saved, freed_record(name).get());
        return;
      case Unpacked::stale:
        value = raw_data(*sv);
        if (value.defined()) add_record(saved, saved_tensor(name, value, true), total);
        return;
      case Unpacked::ok:
        if (value.defined()) add_record(saved, saved_tensor(name, value), total);
        return;
    }
  }

  static void learn_offset(Attr& a, Node* fn, SavedVariable* sv) {
    if (a.offset == Attr::kNoOffset) return;
    std::ptrdiff_t off = reinterpret_cast<char*>(sv) - reinterpret_cast<char*>(fn);
    if (off <= 0 || off > (1 << 16)) {  // not inside the node: never guess
      a.offset = Attr::kNoOffset;
    } else if (a.offset == Attr::kUnlearned) {
      a.offset = off;
    } else if (a.offset == off) {
      a.confirmed = true;
    } else {
      a.offset = Attr::kNoOffset;
    }
  }

  // _Builder.saved_group: SavedVariables one getter unpacks together (a list attribute, a custom Function's
  // saved_tensors), items named name[i]. Hooked ones are packed and the others then described from their raw data;
  // otherwise the first failure decides for the group: released (one freed record) or stale (all stale).
  void saved_group(PyObject* saved, PyObject* name, PyObject* raws, Node* fn, long long* total) {
    Ref fast = own(PySequence_Fast(raws, "saved list"));
    Py_ssize_t n = PySequence_Fast_GET_SIZE(fast.get());
    std::vector<SavedVariable*> svs((size_t)n);
    bool hooked = false;
    for (Py_ssize_t i = 0; i < n; ++i) {
      svs[i] = saved_variable(PySequence_Fast_GET_ITEM(fast.get(), i));
      hooked = hooked || svs[i]->has_hooks();
    }
    auto item_name = [&](Py_ssize_t i) { return own(PyUnicode_FromFormat("%U[%zd]", name, i)); };
    if (hooked) {
      for (Py_ssize_t i = 0; i < n; ++i) {
        Ref item = item_name(i);
        if (svs[i]->has_hooks()) {
          Ref rec = own(PyObject_CallFunctionObjArgs(packed_record_, item.get(),
                                                     PySequence_Fast_GET_ITEM(fast.get(), i), nullptr));
          append(saved, rec.get());
        } else {
          at::Tensor t = raw_data(*svs[i]);
          if (t.defined()) add_record(saved, saved_tensor(item.get(), t), total);
        }
      }
      return;
    }
    std::vector<at::Tensor> values((size_t)n);
    Unpacked state = Unpacked::ok;
    for (Py_ssize_t i = 0; i < n && state == Unpacked::ok; ++i) state = unpack(*svs[i], fn, &values[i]);
    if (state == Unpacked::freed) {
      append(saved, freed_record(name).get());
      return;
    }
    for (Py_ssize_t i = 0; i < n; ++i) {
      at::Tensor t = state == Unpacked::stale ? raw_data(*svs[i]) : std::move(values[i]);
      if (!t.defined()) continue;
      Ref item = item_name(i);
      add_record(saved, saved_tensor(item.get(), t, state == Unpacked::stale), total);
    }
  }

  // getattr that turns RuntimeError (a saved value released by backward()) into nullptr; other errors propagate.
  static Ref getattr_or_freed(PyObject* obj, PyObject* attr) { return freed_as_null(PyObject_GetAttr(obj, attr)); }

  // A getter's result, with RuntimeError (a saved value released by backward()) turned into nullptr; other errors
  // propagate.
  static Ref freed_as_null(PyObject* v) {
    if (!v) {
      if (!PyErr_ExceptionMatches(PyExc_RuntimeError)) throw PyError{};
      PyErr_Clear();
    }
    return Ref(v);
  }

  // ------------------------------------------------------------------ the walk (common.h's preorder, plus edges)

  // Depth-first pre-order from the roots, next_edges in order, each node once: the same order as preorder() (and
  // capture.walk in Python). Each node's edge slots get their producer's index as soon as it is known: at once for
  // a producer already numbered, else when the producer is popped, the stack entry saying which slot waits for it.
  // edges() then reads flat arrays instead of every node and a hash lookup per edge again.
  void walk(const std::vector<Node*>& roots) {
    constexpr size_t kNoSlot = ~size_t(0);
    struct Pending {
      Node* fn;
      size_t slot;  // the edge slot waiting for fn's index (kNoSlot: a root)
    };
    std::vector<Pending> stack;
    for (auto it = roots.rbegin(); it != roots.rend(); ++it) stack.push_back({*it, kNoSlot});
    size_t n = 0;
    while (!stack.empty()) {
      Pending p = stack.back();
      stack.pop_back();
      size_t idx = n;
      if (index_.insert(p.fn, n)) {
        ++n;
        Node* fn = p.fn;
        order_.push_back(fn);
        abs_.push_back(seq_of(fn));
        const auto& next = fn->next_edges();
        size_t start = edge_child_.size();
        edge_start_.push_back(start);
        edge_child_.resize(start + next.size(), NodeIndex::kMissing);
        edge_input_.resize(start + next.size(), 0);
        for (size_t i = next.size(); i-- > 0;) {
          edge_input_[start + i] = next[i].input_nr;
          Node* child = next[i].function.get();
          if (!child) continue;
          size_t c = index_.find(child);
          if (c != NodeIndex::kMissing) {
            edge_child_[start + i] = c;
          } else {
            stack.push_back({child, start + i});
          }
        }
      } else {
        idx = index_.find(p.fn);
      }
      if (p.slot != kNoSlot) edge_child_[p.slot] = idx;
    }
    edge_start_.push_back(edge_child_.size());
  }

  // ------------------------------------------------------------------ one node (capture.build_records' loop body)

  static constexpr uint64_t kNoSeq = ~uint64_t(0);
  std::vector<uint64_t> rank_;

  // The number Python's path records: none for leaves (AccumulateGrad) and for torch's "no number" (>= 2**63).
  uint64_t seq_of(Node* fn) {
    uint64_t seq = fn->sequence_nr();
    if (seq >= (uint64_t(1) << 63)) return kNoSeq;
    return seq;  // leaves are filtered in record(), which knows the kind
  }

  Ref record(Node* fn, uint64_t seq) {
    Ref wrapper;  // the node's real Python wrapper, made only when needed
    TypeInfo* found = nullptr;
    const std::type_info* cpp_info = &typeid(*fn);
    auto fast = direct_by_addr_.find(cpp_info);
    if (fast != direct_by_addr_.end() && fast->second->reader.get()) {
      found = fast->second;
    } else {
      std::type_index cpp_type(*cpp_info);
      auto known = direct_.find(cpp_type);
      if (known != direct_.end() && known->second->reader.get()) {
        found = known->second;
      } else {
        wrapper = own(torch::autograd::functionToPyObject(c10::intrusive_ptr<Node>::reclaim_copy(fn)));
        found = &type_of(wrapper.get());
        if (found->reader.get()) direct_.emplace(cpp_type, found);
      }
      if (found->reader.get()) direct_by_addr_.emplace(cpp_info, found);
    }
    TypeInfo& info = *found;  // mutable: its attributes learn where their SavedVariables are
    const bool use_reader = !wrapper.get();
    std::optional<Bind> bound;
    if (use_reader) bound.emplace(&info.reader, fn);
    PyObject* self = use_reader ? info.reader.get() : wrapper.get();

    // Forward outputs of the op = the node's input metadata (survives backward() freeing the graph).
    uint32_t nin = fn->num_inputs();
    std::vector<PyObject*>& recs = out_scratch_;
    recs.clear();
    for (uint32_t i = 0; i < nin; ++i) {
      const auto& m = fn->input_metadata(i);
      if (m.is_nested_tensor()) {
        recs.push_back(Py_None);
        outs_.push_back(OutRec{nullptr, nullptr, nullptr, 0});
        continue;
      }
      OutKey key;
      for (const c10::SymInt& s : m.shape_as_dim_vector()) {
        if (s.is_symbolic()) throw Unsupported{};
        key.shape.push_back(s.as_int_unchecked());
      }
      at::ScalarType st = c10::typeMetaToScalarType(m.dtype());
      c10::Device dev = m.device();
      key.dtype = (int)st;
      key.device_type = (int8_t)dev.type();
      key.device_index = dev.index();
      auto it = out_cache_.find(key);
      if (it == out_cache_.end()) {
        Ref r = own(PyDict_New());
        set_item_steal(r.get(), K_shape, int_list(key.shape).release());
        set_item(r.get(), K_dtype, dtype_name(st));
        set_item(r.get(), K_device, device_name(dev));
        long long numel = 1;
        for (int64_t s : key.shape) numel *= s;
        untrack(r.get());
        long long bytes = numel * (long long)m.dtype().itemsize();
        PyObject* shape = PyDict_GetItem(r.get(), K_shape);
        PyObject* dtype = PyDict_GetItem(r.get(), K_dtype);
        it = out_cache_.emplace(std::move(key), OutEntry{std::move(r), bytes, shape, dtype}).first;
      }
      const OutEntry& e = it->second;
      outs_.push_back(OutRec{e.rec.get(), e.shape, e.dtype, e.bytes});
      recs.push_back(e.rec.get());
    }
    PyObject* outputs = outputs_list(recs);
    Ref d = own(PyDict_Copy(template_));
    PyObject* dp = d.get();
    set_item(dp, K_op, info.op.get());
    set_item(dp, K_kind, info.kind_str.get());
    set_item(dp, K_outputs, outputs);
    if (info.kind == Kind::leaf) {
      set_item(dp, K_saved, empty_saved_.get());
      set_item(dp, K_attrs, empty_attrs_.get());
      set_item_steal(dp, K_tensor, leaf(self, info, use_reader).release());
      untrack(dp);
      if (fn->pyobj_slot()->load_pyobj()) ++wrapped_;  // a wrapper from before, or made above
      return d;
    }
    // a type that saves no tensor gets the shared empty list, without making one to throw away
    Ref saved = info.kind != Kind::custom && info.tensor_attrs.empty() ? Ref::borrow(empty_saved_.get())
                                                                        : own(PyList_New(0));
    Ref attrs;
    long long total = 0;
    fresh_ = false;
    if (info.kind == Kind::custom) {
      // its SavedTensors (RuntimeError once backward() released them); records named saved_tensors[i]
      Ref raws = getattr_or_freed(self, S_raw_saved_tensors);
      if (!raws.get()) {
        append(saved.get(), freed_record(K_saved_tensors).get());
      } else if (PyObject_Length(raws.get()) > 0) {
        saved_group(saved.get(), K_saved_tensors, raws.get(), fn, &total);
      } else if (PyErr_Occurred()) {
        throw PyError{};
      }
    } else {
      for (Attr& a : info.tensor_attrs) {
        if (a.confirmed) {
          auto* sv = reinterpret_cast<SavedVariable*>(reinterpret_cast<char*>(fn) + a.offset);
          saved_one(saved.get(), self, a, use_reader, sv, Ref(), fn, &total);
          continue;
        }
        Ref raw = read(self, a, use_reader);  // the SavedTensor, or a list of them (RuntimeError: released)
        if (!raw.get()) {
          append(saved.get(), freed_record(a.name.get()).get());
        } else if (PyList_Check(raw.get()) || PyTuple_Check(raw.get())) {
          a.offset = Attr::kNoOffset;
          saved_group(saved.get(), a.name.get(), raw.get(), fn, &total);
        } else {
          SavedVariable* sv = saved_variable(raw.get());
          learn_offset(a, fn, sv);
          saved_one(saved.get(), self, a, use_reader, sv, std::move(raw), fn, &total);
        }
      }
      attrs = attrs_of(self, info, use_reader);
    }
    const bool none_saved = PyList_GET_SIZE(saved.get()) == 0;
    untrack(saved.get());
    set_item(dp, K_saved, none_saved ? empty_saved_.get() : saved_list(saved.get()));
    set_item(dp, K_attrs, attrs.get() ? attrs.get() : empty_attrs_.get());
    if (!none_saved) set_item_steal(dp, K_saved_bytes, PyLong_FromLongLong(total));
    if (seq != kNoSeq) set_item_steal(dp, K_seq, PyLong_FromUnsignedLongLong(seq));
    untrack(dp);
    if (fn->pyobj_slot()->load_pyobj()) ++wrapped_;  // a wrapper from before, or made above
    return d;
  }

  // The node's outputs list (borrowed): one shared list per distinct sequence of records (None: a nested tensor).
  PyObject* outputs_list(const std::vector<PyObject*>& recs) {
    auto it = outputs_cache_.find(recs);
    if (it != outputs_cache_.end()) return it->second.get();
    Ref list = own(PyList_New((Py_ssize_t)recs.size()));
    for (size_t i = 0; i < recs.size(); ++i) PyList_SET_ITEM(list.get(), (Py_ssize_t)i, Ref::borrow(recs[i]).release());
    untrack(list.get());  // shared, read-only records: see untrack()
    PyObject* raw = list.get();
    outputs_cache_.emplace(recs, std::move(list));
    return raw;
  }

  // A value two nodes can share an attrs dict over: compared by value *and* type (1, 1.0 and True are equal in
  // Python but not in JSON), never a NaN (unequal to itself) or -0.0 (equal to 0.0, written differently).
  static bool atomic(PyObject* v) {
    if (v == Py_None || PyBool_Check(v) || PyLong_CheckExact(v) || PyUnicode_CheckExact(v)) return true;
    if (!PyFloat_CheckExact(v)) return false;
    double x = PyFloat_AS_DOUBLE(v);
    return !std::isnan(x) && !(x == 0.0 && std::signbit(x));
  }

  // Equal as attrs values are keyed (value and type, -0.0 apart from 0.0): for two atomic() values.
  static bool same_atomic(PyObject* a, PyObject* b) {
    if (a == b) return true;
    if (Py_TYPE(a) != Py_TYPE(b)) return false;
    if (PyFloat_CheckExact(a)) {
      double x = PyFloat_AS_DOUBLE(a), y = PyFloat_AS_DOUBLE(b);
      return std::memcmp(&x, &y, sizeof x) == 0;
    }
    if (PyLong_CheckExact(a) || PyUnicode_CheckExact(a)) {
      int eq = PyObject_RichCompareBool(a, b, Py_EQ);
      if (eq < 0) throw PyError{};
      return eq == 1;
    }
    return false;  // None and bools are singletons: equal only when identical
  }

  // _Builder.saved's attrs: the non-tensor `_saved_*` values (None where a getter raises). Null when the type has
  // none (the caller uses the shared empty dict). Nodes of one type mostly repeat the last values (a loop's adds):
  // those get the last dict without building the cache key.
  Ref attrs_of(PyObject* self, TypeInfo& info, bool reader) {
    const size_t k = info.other_attrs.size();
    if (!k) return Ref();
    std::vector<Ref>& values = attr_scratch_;
    values.clear();
    bool shareable = true;
    for (size_t i = 0; i < k; ++i) {
      Ref value = read(self, info.other_attrs[i], reader);
      values.push_back(value.get() ? jsonable(value.get()) : Ref::borrow(Py_None));
      shareable = shareable && atomic(values.back().get());
    }
    if (shareable && info.last_key.get()) {
      bool same = true;
      for (size_t i = 0; i < k && same; ++i)
        same = same_atomic(values[i].get(), PyTuple_GET_ITEM(info.last_key.get(), (Py_ssize_t)(2 * i + 1)));
      if (same) return Ref::borrow(info.last_attrs.get());
    }
    Ref key = own(PyTuple_New((Py_ssize_t)(1 + 2 * k)));
    PyTuple_SET_ITEM(key.get(), 0, Ref::borrow(info.type.get()).release());
    for (size_t i = 0; i < k; ++i) {
      PyTuple_SET_ITEM(key.get(), (Py_ssize_t)(2 * i + 2), Ref::borrow((PyObject*)Py_TYPE(values[i].get())).release());
      PyTuple_SET_ITEM(key.get(), (Py_ssize_t)(2 * i + 1), values[i].release());
    }
    Ref attrs;
    if (shareable) {
      PyObject* hit = PyDict_GetItemWithError(attrs_cache_.get(), key.get());
      if (!hit && PyErr_Occurred()) throw PyError{};
      if (hit) attrs = Ref::borrow(hit);
    }
    if (!attrs.get()) {
      attrs = own(PyDict_New());
      for (size_t i = 0; i < k; ++i)
        set_item(attrs.get(), info.other_attrs[i].name.get(), PyTuple_GET_ITEM(key.get(), (Py_ssize_t)(2 * i + 1)));
      untrack(attrs.get());
      if (shareable && PyDict_SetItem(attrs_cache_.get(), key.get(), attrs.get()) < 0) throw PyError{};
    }
    if (shareable) {
      info.last_key = std::move(key);
      info.last_attrs = Ref::borrow(attrs.get());
    }
    return attrs;
  }

  Ref leaf(PyObject* self, const TypeInfo& info, bool reader) {  // _Builder.leaf
    PyObject* var = get(self, info.variable, reader);
    if (!var) {
      if (!PyErr_ExceptionMatches(PyExc_AttributeError) && !PyErr_ExceptionMatches(PyExc_RuntimeError))
        throw PyError{};
      PyErr_Clear();
      return Ref::borrow(Py_None);
    }
    Ref v(var);
    Ref key;
    Ref rec = tensor_record(var, &key, leaf_template_);
    int rg = PyObject_IsTrue(own(PyObject_GetAttr(var, K_requires_grad)).get());
    if (rg < 0) throw PyError{};
    set_item(rec.get(), K_requires_grad, rg ? Py_True : Py_False);
    Ref id = own(PyLong_FromVoidPtr(var));
    PyObject* name = PyDict_GetItemWithError(param_names_, id.get());
    if (!name && PyErr_Occurred()) throw PyError{};
    set_item(rec.get(), K_name, name ? name : Py_None);
    // saved tensors on this storage are the leaf's (a weight saved by a matmul): summary() counts them apart
    set_item(rec.get(), K_storage, storage_id(key.get()).get());
    untrack(rec.get());
    return rec;
  }

  // ------------------------------------------------------------------ edges (capture.build_records' second loop)

  void edges(const std::vector<PyObject*>& attrs, const std::vector<Ref>& ids, PyObject* succ, PyObject* pred) {
    // For nodes with several inputs: producer u -> the consumer whose edge from u was made last, and that edge.
    // A second connection from u to the same consumer (`a * a`) finds it in O(1): `torch.cat` of 200k tensors
    // searched a list of the node's edges per input before: O(k^2).
    const size_t n = order_.size();
    std::vector<size_t> edge_to(n, NodeIndex::kMissing);
    std::vector<PyObject*> edge_of(n, nullptr);  // borrowed: the dicts live in succ/pred
    for (size_t v = 0; v < n; ++v) {
      const size_t first = edge_start_[v], slots = edge_start_[v + 1] - first;
      long long total = 0;
      bool several = slots > 1;
      PyObject* pred_v = pred_of_[v];
      for (size_t slot = 0; slot < slots; ++slot) {
        size_t u = edge_child_[first + slot];
        if (u == NodeIndex::kMissing) continue;  // an undefined edge
        uint32_t out_nr = edge_input_[first + slot];
        size_t nouts = out_start_[u + 1] - out_start_[u];
        const OutRec* meta = out_nr < nouts ? &outs_[out_start_[u] + out_nr] : nullptr;
        if (meta && !meta->rec) meta = nullptr;  // nested: no record
        PyObject* shape = meta ? meta->shape : Py_None;
        PyObject* dtype = meta ? meta->dtype : Py_None;
        if (meta) total += meta->bytes;
        Ref out_obj = own(PyLong_FromUnsignedLong(out_nr));
        Ref slot_obj = own(PyLong_FromSize_t(slot));
        if (several) {
          PyObject* prev = edge_to[u] == v ? edge_of[u] : nullptr;
          if (prev) {  // `a * a`: one DiGraph edge per pair; the extra connections ride on it
            PyObject* also = PyDict_GetItem(prev, K_also);
            if (also == Py_None) {
              set_item_steal(prev, K_also, PyList_New(0));
              also = PyDict_GetItem(prev, K_also);
            }
            Ref extra = own(PyDict_New());
            set_item(extra.get(), K_output, out_obj.get());
            set_item(extra.get(), K_slot, slot_obj.get());
            set_item(extra.get(), K_shape, shape);
            set_item(extra.get(), K_dtype, dtype);
            untrack(extra.get());
            append(also, extra.get());
            continue;
          }
        }
        Ref e = own(PyDict_Copy(edge_template_));  // "also" is None in the template
        set_item(e.get(), K_output, out_obj.get());
        set_item(e.get(), K_slot, slot_obj.get());
        set_item(e.get(), K_shape, shape);
        set_item(e.get(), K_dtype, dtype);
        untrack(e.get());
        if (several) {
          edge_to[u] = v;
          edge_of[u] = e.get();
        }
        set_item(succ_of_[u], ids[v].get(), e.get());
        set_item(pred_v, ids[u].get(), e.get());
      }
      if (total) set_item_steal(attrs[v], K_grad_bytes, PyLong_FromLongLong(total));
    }
  }
};

}  // namespace

// capture(roots, param_names, type_info, jsonable, dtype_name, tensor_record, packed_record, templates, rank)
PyObject* py_capture(PyObject*, PyObject* args) {
  PyObject *roots, *param_names, *type_info, *jsonable, *dtype_name, *tensor_record, *packed_record, *node_template;
  int rank = 0;
  if (!PyArg_ParseTuple(args, "O!O!OOOOOO!p:capture", &PyList_Type, &roots, &PyDict_Type, &param_names, &type_info,
                        &jsonable, &dtype_name, &tensor_record, &packed_record, &PyTuple_Type, &node_template, &rank))
    return nullptr;
  return guarded([&] {
    Capture c(param_names, type_info, jsonable, dtype_name, tensor_record, packed_record, node_template);
    return c.run(roots, rank != 0);
  });
}

// rank_seq(node_attrs) -> {node: absolute seq}: capture.finalize_seq in C++ (the Python sort with a key function
// calls back into Python for every node). Ranks by value, ties in node order, like Python's stable sorted().
PyObject* py_rank_seq(PyObject*, PyObject* attrs) {
  if (!PyDict_Check(attrs)) {
    PyErr_SetString(PyExc_TypeError, "rank_seq expects the graph's node attribute dict");
    return nullptr;
  }
  auto odd = [] {
    PyErr_SetString(UnsupportedError, "seq values that are not plain non-negative ints");
    return Unsupported{};
  };
  return guarded([&]() -> PyObject* {
    struct Item {
      unsigned long long seq;
      PyObject* d;  // borrowed from attrs
    };
    std::vector<Item> items;
    items.reserve((size_t)PyDict_GET_SIZE(attrs));
    Ref abs_seq = own(PyDict_New());
    Py_ssize_t pos = 0;
    PyObject *node, *d;
    while (PyDict_Next(attrs, &pos, &node, &d)) {
      if (!PyDict_Check(d)) throw odd();
      PyObject* seq = PyDict_GetItemWithError(d, K_seq);
      if (!seq) {
        if (PyErr_Occurred()) throw PyError{};
        continue;
      }
      if (seq == Py_None) continue;
      if (!PyLong_CheckExact(seq)) throw odd();
      unsigned long long v = PyLong_AsUnsignedLongLong(seq);
      if (v == (unsigned long long)-1 && PyErr_Occurred()) {
        PyErr_Clear();
        throw odd();
      }
      items.push_back(Item{v, d});
      set_item(abs_seq.get(), node, seq);
    }
    std::stable_sort(items.begin(), items.end(), [](const Item& a, const Item& b) { return a.seq < b.seq; });
    // abs_seq holds a reference to every old number, so replacing them in the dicts frees none we still read.
    for (size_t rank = 0; rank < items.size(); ++rank) set_item_steal(items[rank].d, K_seq, PyLong_FromSize_t(rank));
    return abs_seq.release();
  });
}

}  // namespace gw

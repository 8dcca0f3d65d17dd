"""Walked nodes -> plain node and edge records (the pure-Python engine; the compiled core builds the same)."""
from __future__ import annotations

import functools
from typing import Any, Callable, Dict, List, Mapping, Optional, Sequence, Set, Tuple

import torch

from ..model import schema
from .seq import NO_SEQ
from .tensors import (
    device_name,
    dtype_name,
    freed_record,
    is_stale_error,
    jsonable,
    packed_record,
    stale_record,
    tensor_record,
)
from .walk import Node, Walk

_BackwardCFunction = torch.autograd.function.BackwardCFunction


class _TypeInfo:
    """What is the same for every node of one type; computed once per type (dir() alone costs ~5 µs)."""

    __slots__ = ("op", "kind", "tensor_attrs", "other_attrs")

    def __init__(self, fn: Node) -> None:
        self.op = type(fn).__name__
        self.kind = node_kind(fn)
        names = dir(fn)
        raw = {a[len("_raw_saved_"):] for a in names if a.startswith("_raw_saved_")}
        saved = [a for a in names if a.startswith("_saved_")]
        # (attribute, name shown to users[, raw twin]); a saved value with a _raw_ twin is a SavedVariable (a
        # tensor). The twin gives the SavedVariable itself, which says whether it has saved-tensor hooks *without*
        # unpacking it: reading ``_saved_x`` of a hooked value runs its unpack hook (a checkpoint's recompute).
        self.tensor_attrs = tuple((a, a[7:], "_raw" + a) for a in saved if a[7:] in raw)
        self.other_attrs = tuple((a, a[7:]) for a in saved if a[7:] not in raw)


class _Builder:
    """Turns walked nodes into records; caches what repeats across nodes (types, output metadata, tensors)."""

    def __init__(self, param_names: Mapping[int, str]) -> None:
        self.param_names = param_names
        self.types: Dict[type, _TypeInfo] = {}
        self.storages: Dict[Any, int] = {}
        # (shape, dtype, device) -> output record. Records are shared between nodes: treat them as read-only.
        self.out_records: Dict[Tuple[Any, Any, Any], Dict[str, Any]] = {}
        # id(tensor) -> record, for tensors saved by several nodes (a weight reused in a loop); ``keep`` pins the
        # tensors until the capture ends so no id is reused.
        self.tensor_records: Dict[int, Dict[str, Any]] = {}
        self.keep: List[torch.Tensor] = []

    def saved_tensor(self, name: str, t: torch.Tensor, stale: bool = False) -> Dict[str, Any]:
        base = self.tensor_records.get(id(t))
        if base is None:
            base = tensor_record(t)
            base["storage"] = self.storage_id(base.pop("_storage_key"))
            base["freed"] = False
            self.tensor_records[id(t)] = base
            self.keep.append(t)
        rec = dict(base)
        rec["name"] = name
        rec["packed"] = None
        rec["stale"] = stale
        return rec

    def storage_id(self, key: Any) -> Optional[int]:
        """Graph-local id of a storage (first seen, first numbered), shared by saved tensors and leaves."""
        if key is None:
            return None
        sid = self.storages.get(key)
        if sid is None:
            sid = self.storages[key] = len(self.storages)
        return sid

    def saved_group(self, saved: List[Dict[str, Any]], name: str, raws: Sequence[Any],
                    unpack: Callable[[], Any]) -> None:
        """Records for SavedVariables one getter unpacks together: a list attribute (``_saved_indices``) or a
        custom Function's ``saved_tensors``; items are named ``name[i]``.

        Hooked ones are never unpacked (:func:`packed_record`); if any is hooked, the others are described from
        their raw data, since the one getter would unpack them all. Otherwise ``unpack()`` reads them all: a
        version mismatch (a tensor modified in place after it was saved) fails the whole group in backward, so
        every tensor of the group is marked ``stale``.
        """
        if any(_hook_of(r) is not None for r in raws):
            for i, r in enumerate(raws):
                item = f"{name}[{i}]"
                if _hook_of(r) is not None:
                    saved.append(packed_record(item, r))
                else:
                    t = _data_of(r)
                    if isinstance(t, torch.Tensor):
                        saved.append(self.saved_tensor(item, t))
            return
        try:
            values = unpack()
        except RuntimeError as exc:
            if not is_stale_error(exc):
                saved.append(freed_record(name))
                return
            values, stale = [_data_of(r) for r in raws], True
        else:
            stale = False
        for i, t in enumerate(values or ()):
            if isinstance(t, torch.Tensor):
                saved.append(self.saved_tensor(f"{name}[{i}]", t, stale))
            elif stale:  # torch < 2.5: no raw data to describe it by, but it is there and stale
                saved.append(stale_record(f"{name}[{i}]"))

    def saved(self, fn: Node, info: _TypeInfo) -> Tuple[List[Dict[str, Any]], Dict[str, Any]]:
        saved: List[Dict[str, Any]] = []
        attrs: Dict[str, Any] = {}
        if info.kind == "custom":
            try:
                raws = fn._raw_saved_tensors
            except RuntimeError:  # released by backward()
                return [freed_record("saved_tensors")], attrs
            if raws:
                self.saved_group(saved, "saved_tensors", raws, lambda: fn.saved_tensors)
            return saved, attrs
        for attr, name, raw_attr in info.tensor_attrs:
            try:
                raw = getattr(fn, raw_attr)
            except RuntimeError:  # a list of saved tensors released by backward()
                saved.append(freed_record(name))
                continue
            if isinstance(raw, (list, tuple)):
                self.saved_group(saved, name, raw, functools.partial(getattr, fn, attr))
                continue
            if _hook_of(raw) is not None:
                saved.append(packed_record(name, raw))
                continue
            try:
                value = getattr(fn, attr)
            except RuntimeError as exc:
                if is_stale_error(exc):
                    t = _data_of(raw)
                    saved.append(self.saved_tensor(name, t, True) if isinstance(t, torch.Tensor)
                                 else stale_record(name))  # torch < 2.5: no data to describe it by
                else:
                    saved.append(freed_record(name))
                continue
            if isinstance(value, torch.Tensor):
                saved.append(self.saved_tensor(name, value))
        for attr, name in info.other_attrs:
            try:
                attrs[name] = jsonable(getattr(fn, attr))
            except RuntimeError:
                attrs[name] = None
        return saved, attrs

    def leaf(self, fn: Node) -> Optional[Dict[str, Any]]:
        try:
            var = fn.variable
        except (AttributeError, RuntimeError):
            return None
        rec = tensor_record(var)
        key = rec.pop("_storage_key")
        rec["requires_grad"] = bool(var.requires_grad)
        rec["name"] = self.param_names.get(id(var))
        # Saved tensors on this storage are the leaf's (a weight saved by a matmul): summary() counts them apart.
        rec["storage"] = self.storage_id(key)
        return rec


def node_kind(fn: Node) -> str:
    """``custom`` for autograd.Function nodes, ``leaf`` for AccumulateGrad, else ``backward``."""
    if isinstance(fn, _BackwardCFunction):
        return "custom"
    if type(fn).__name__ == "AccumulateGrad":
        return "leaf"
    return "backward"




def shared_key_dict(keys: Sequence[str]) -> Dict[str, Any]:
    """A dict of ``keys`` (all ``None``) whose copies share one key table (a CPython "split table" dict).

    Every node record is a copy of one template; a plain 16-key dict copy carries its own key table (464 bytes), a
    copy of an instance ``__dict__`` shares it and holds only the values (296 bytes). At 1M nodes that is 170 MB
    less memory to fault in. The copies are ordinary dicts in every other way (order, equality, new keys). On a
    Python that does not split instance dicts this is simply a plain dict.
    """
    cls = type("_SharedKeys", (), {})
    obj = cls()
    for k in keys:
        setattr(obj, k, None)
    return obj.__dict__


# Every node record starts as a copy of this (copying a dict is ~2x cheaper than building a 15-key literal).
_NODE_TEMPLATE: Dict[str, Any] = shared_key_dict(schema.NODE_KEYS)
_NODE_TEMPLATE["saved_bytes"] = _NODE_TEMPLATE["grad_bytes"] = 0
# The compiled core's other records: an edge, a saved tensor (its name last, as _Builder.saved_tensor adds it), a
# leaf's tensor, keys in the order the Python path creates them. A shared-key copy always holds 30 value slots
# (296 bytes), so it pays only from 11 keys up (a plain 11-key copy is 464 bytes, a 5-key one 184).
NATIVE_TEMPLATES = (
    _NODE_TEMPLATE,
    dict.fromkeys(schema.EDGE_KEYS),
    shared_key_dict(schema.SAVED_KEYS),
    dict.fromkeys(schema.LEAF_KEYS),
)


def _numel(shape: Tuple[int, ...]) -> int:
    n = 1
    for s in shape:
        n *= s
    return n


_ITEMSIZE: Dict[Any, int] = {}


def _itemsize(dtype: torch.dtype) -> int:
    size = _ITEMSIZE.get(dtype)
    if size is None:
        size = _ITEMSIZE[dtype] = torch.empty((), dtype=dtype).element_size()
    return size
_EMPTY: Tuple[()] = ()


class MissingFactWarning(UserWarning):
    """This torch does not expose a fact graphwidget records; the fields built from it are null (``outputs``) or
    count only what is known (edge ``shape``, ``grad_bytes``). The warning names the fact, once per process."""


#: Facts this torch lacks that a capture met: name -> what it costs (also shown by ``python -m graphwidget doctor``).
_MISSING_SEEN: Dict[str, str] = {}
_NO_INPUT_METADATA = (
    "grad_fn._input_metadata (torch >= 2.5 has it; this is torch {v}): the shapes of the forward outputs. Without "
    "it, a non-leaf node's \"outputs\" are known only where the nodes reading them saved their size (slices, "
    "views, sums...); elsewhere they are null, edges out of them have no shape/dtype and \"grad_bytes\" misses "
    "those gradients. gw.trace(...) and gw.profile(...) record these facts in the forward instead; or upgrade torch")


_NO_UNPACK_HOOK = (
    "SavedTensor.unpack_hook and .data (this is torch {v}): whether a saved tensor sits behind saved-tensor hooks "
    "(checkpoint, save_on_cpu). Without them such tensors are described by unpacking them, which runs their unpack "
    "hook (a checkpoint recomputes its forward), and they are not marked \"packed\"; upgrade torch to avoid it")


def _note_missing(fact: str, message: str) -> None:
    """Warn once per process that this torch lacks ``fact`` (:class:`MissingFactWarning`)."""
    if fact not in _MISSING_SEEN:
        _MISSING_SEEN[fact] = message
        import warnings
        warnings.warn(f"graphwidget: this torch does not expose {message}.", MissingFactWarning, stacklevel=6)


def _hook_of(raw: Any) -> Any:
    """A SavedVariable's unpack hook (``None``: not hooked). A torch whose SavedTensor has no ``unpack_hook`` cannot
    say, so its tensors are unpacked as before, and that is said once."""
    try:
        return raw.unpack_hook
    except AttributeError:
        _note_missing("SavedTensor.unpack_hook", _NO_UNPACK_HOOK.format(v=torch.__version__))
        return None


def _data_of(raw: Any) -> Any:
    """A SavedVariable's tensor without unpacking it; ``None`` on a torch without ``SavedTensor.data``."""
    return getattr(raw, "data", None)


def missing_facts() -> Dict[str, str]:
    """Facts this torch does not expose to the pure-Python engine, each with what it costs; ``{}`` on torch >= 2.5.

    >>> from graphwidget.capture.records import missing_facts
    >>> missing_facts()        # doctest: +SKIP
    {}
    """
    probe = torch.zeros(1, requires_grad=True).exp().grad_fn  # no RNG use: asking must not change user results
    assert probe is not None
    missing = {}
    if not hasattr(probe, "_input_metadata"):
        missing["_input_metadata"] = _NO_INPUT_METADATA.format(v=torch.__version__)
    if not hasattr(probe._raw_saved_result, "unpack_hook"):  # type: ignore[attr-defined]
        missing["SavedTensor.unpack_hook"] = _NO_UNPACK_HOOK.format(v=torch.__version__)
    return missing


class _TensorMeta:
    """A leaf's input metadata rebuilt from its variable: what ``AccumulateGrad._input_metadata`` holds."""

    __slots__ = ("shape", "dtype", "device", "is_nested_tensor")

    def __init__(self, t: torch.Tensor) -> None:
        self.shape, self.dtype, self.device, self.is_nested_tensor = t.shape, t.dtype, t.device, t.is_nested


def _metadata_without_binding(fn: Node) -> Optional[Sequence[Any]]:
    """torch < 2.5 has no ``grad_fn._input_metadata``: a leaf's comes from its variable; any other node's outputs
    are unknown (``None``), and the first such node warns (:class:`MissingFactWarning`)."""
    if type(fn).__name__ == "AccumulateGrad":
        try:
            return (_TensorMeta(fn.variable),)
        except (AttributeError, RuntimeError):
            return _EMPTY
    if "_input_metadata" not in _MISSING_SEEN:
        _MISSING_SEEN["_input_metadata"] = msg = _NO_INPUT_METADATA.format(v=torch.__version__)
        import warnings
        warnings.warn(f"graphwidget: this torch does not expose {msg}.", MissingFactWarning, stacklevel=5)
    return None


def _outputs_from_consumers(g: Any, touched: Set[Any]) -> int:
    """Outputs still unknown after the forward's record (torch < 2.5), read off the nodes that consume them.

    ``gw.trace`` sees only the tensors an op call returns: ``h[:, :, 0, 0]`` is one call that makes four nodes
    (two slices, two selects), and only the last one's output is seen; a plain capture sees none. But a node that
    saved its input's size (``self_sym_sizes``: every slice, select, expand, sum, view...) says what shape its
    producer's output had. So each unknown node whose only output goes to consumers that all saved the same size
    gets that shape, with the dtype/device of a consumer's own output or else of the node's own inputs (nodes are
    visited producers first, so an input filled here counts). Nothing is guessed where consumers disagree or none
    saved a size: those stay null. Edges out of a filled node get its shape/dtype (their consumers go in
    ``touched``). Returns how many nodes were filled."""
    from ..model._digraph import adjacency, producers_first

    node, succ, pred = adjacency(g)

    def sized(v: Any) -> bool:
        return isinstance((node[v].get("attrs") or {}).get("self_sym_sizes"), list)

    # Only nodes some consumer saved the size of can be filled: none (the usual case), no ordering pass at all.
    todo = {u for u, d in node.items()
            if d.get("outputs") is None and d.get("op") != "AccumulateGrad" and any(sized(v) for v in succ[u])}
    if not todo:
        return 0
    count = 0
    for u in producers_first(g):
        if u not in todo:
            continue
        shapes: Set[Optional[Tuple[int, ...]]] = set()
        meta: Optional[Dict[str, Any]] = None
        for v, e in succ[u].items():
            for item in [e, *(e.get("also") or ())]:
                size = (node[v].get("attrs") or {}).get("self_sym_sizes") if item.get("slot") == 0 else None
                if item.get("output") != 0 or not isinstance(size, list):
                    shapes.add(None)
                    continue
                shapes.add(tuple(size))
                outs = node[v].get("outputs") or ()
                if meta is None and outs and outs[0] is not None:
                    meta = outs[0]
        if len(shapes) != 1 or None in shapes:
            continue
        if meta is None:
            meta = next(({"dtype": e["dtype"]} for e in pred[u].values() if e.get("dtype")), None)
        if meta is None:
            continue
        only = shapes.pop()
        assert only is not None  # excluded above
        shape = list(only)
        node[u]["outputs"] = [{"shape": shape, "dtype": meta["dtype"], "device": meta.get("device") or "cpu"}]
        for v, e in succ[u].items():
            for item in [e, *(e.get("also") or ())]:
                if item.get("shape") is None:
                    item["shape"], item["dtype"] = shape, meta["dtype"]
                    touched.add(v)
        count += 1
    return count


def fill_outputs(graph: Any, found: Mapping[int, Sequence[Optional[Tuple[Sequence[int], torch.dtype, Any]]]]) -> int:
    """Where a node's ``outputs`` are unknown (null: torch < 2.5), set them from what the forward recorded
    (``found``: node -> per output ``(shape, dtype, device)`` or ``None``; ``gw.trace``/``gw.profile`` see every
    output tensor) and, for nodes made inside one call, from the sizes their consumers saved
    (:func:`_outputs_from_consumers`); then the shape/dtype of the edges leaving those nodes and the ``grad_bytes``
    of the nodes they enter. Returns how many nodes were filled."""
    g = graph.nx
    filled = []
    for n, outs in found.items():
        d = g.nodes[n]
        if d.get("outputs") is not None:
            continue
        d["outputs"] = [None if o is None else {"shape": list(o[0]), "dtype": dtype_name(o[1]),
                                                "device": device_name(o[2])} for o in outs]
        filled.append(n)
    touched: Set[Any] = set()
    for u in filled:
        outs = g.nodes[u]["outputs"]
        for _, v, e in g.out_edges(u, data=True):
            for item in [e, *(e.get("also") or ())]:
                meta = outs[item["output"]] if item["output"] < len(outs) else None
                if meta is not None and item.get("shape") is None:
                    item["shape"], item["dtype"] = meta["shape"], meta["dtype"]
                    touched.add(v)
    n_filled = len(filled) + _outputs_from_consumers(g, touched)
    for v in touched:  # grad_bytes as build_records computes it: one gradient per connection, its tensor's size
        total = 0
        for _, _, e in g.in_edges(v, data=True):
            for item in [e, *(e.get("also") or ())]:
                dtype = getattr(torch, str(item.get("dtype")), None)
                if item.get("shape") is not None and isinstance(dtype, torch.dtype):
                    total += _numel(tuple(item["shape"])) * _itemsize(dtype)
        g.nodes[v]["grad_bytes"] = total
    return n_filled


def build_records(w: Walk, param_names: Mapping[int, str]
                  ) -> Tuple[List[Dict[str, Any]], List[Tuple[int, int, Dict[str, Any]]]]:
    """Node attribute dicts (``nodes[i]`` is node ``i``) and ``(u, v, edge attrs)`` triples for a walk.

    This loop is the capture's hot path (~4 µs a node, of which reading ``_input_metadata`` is ~1.2 µs and the
    record dict ~0.4 µs), so it is written flat, with per-type facts and repeated output records cached.
    """
    b = _Builder(param_names)
    types = b.types
    out_cache = b.out_records
    template_copy = _NODE_TEMPLATE.copy
    out_bytes: Dict[int, int] = {}  # id(output record) -> bytes of that tensor
    nodes: List[Dict[str, Any]] = []
    all_outputs: List[List[Optional[Dict[str, Any]]]] = []
    for fn in w.order:
        cls = type(fn)
        info = types.get(cls)
        if info is None:
            info = types[cls] = _TypeInfo(fn)
        # Forward outputs of the op = the backward node's input metadata; it survives backward() freeing.
        outputs: List[Optional[Dict[str, Any]]] = []
        try:
            metas = fn._input_metadata
        except AttributeError:  # torch < 2.5: no binding; a leaf's from its variable, others unknown (warned once)
            metas = _metadata_without_binding(fn)
        except RuntimeError:
            metas = _EMPTY
        for m in metas or _EMPTY:
            if m.is_nested_tensor:  # ragged (strided or jagged layout): no single shape; jagged ones hold a
                outputs.append(None)  # symbolic "nested int" that arithmetic on would fail
                continue
            try:
                key = (tuple(m.shape), m.dtype, m.device)
            except (RuntimeError, TypeError):  # nested tensors have no single shape
                outputs.append(None)
                continue
            rec = out_cache.get(key)
            if rec is None:
                rec = out_cache[key] = {"shape": list(key[0]), "dtype": dtype_name(key[1]),
                                        "device": device_name(key[2])}
                out_bytes[id(rec)] = _numel(key[0]) * _itemsize(key[1])
            outputs.append(rec)
        all_outputs.append(outputs)
        d = template_copy()
        d["op"] = info.op
        d["kind"] = kind = info.kind
        d["outputs"] = outputs if metas is not None else None  # None: unknown, not "no outputs"
        if kind == "leaf":
            d["saved"], d["attrs"] = [], {}
            d["tensor"] = b.leaf(fn)
        else:
            if info.tensor_attrs or info.other_attrs or kind == "custom":
                saved, d["attrs"] = b.saved(fn, info)
                d["saved"] = saved
                if saved:
                    d["saved_bytes"] = sum([s["bytes"] for s in saved])
            else:
                d["saved"], d["attrs"] = [], {}
            seq = fn._sequence_nr()
            d["seq"] = seq if seq < NO_SEQ else None
        nodes.append(d)
    index = w.index
    edges: List[Tuple[int, int, Dict[str, Any]]] = []
    append = edges.append
    for v, nxt in enumerate(w.nexts):
        # grad_bytes: what this node's backward materialises, one gradient per input, each the size of that input.
        # A SelectBackward0 on a repeated tensor has a tiny output but writes a gradient the size of the whole
        # repeated tensor — the number that explains the slow `repeat` backward.
        total = 0
        first: Optional[Dict[int, Dict[str, Any]]] = {} if len(nxt) > 1 else None
        for slot, (child, out_nr) in enumerate(nxt):
            if child is None:
                continue
            u = index[id(child)]
            outs = all_outputs[u]
            meta = outs[out_nr] if out_nr < len(outs) else None
            if meta is not None:
                shape, dtype = meta["shape"], meta["dtype"]
                total += out_bytes[id(meta)]
            else:
                shape = dtype = None
            if first is not None:
                prev = first.get(u)
                if prev is not None:
                    # ``a * a``: the same producer feeds several slots. A DiGraph has one edge per pair, so the
                    # extra connections ride on it instead of being lost.
                    if prev["also"] is None:
                        prev["also"] = []
                    prev["also"].append({"output": out_nr, "slot": slot, "shape": shape, "dtype": dtype})
                    continue
            e = {"output": out_nr, "slot": slot, "shape": shape, "dtype": dtype, "also": None}
            if first is not None:
                first[u] = e
            append((u, v, e))
        if total:
            nodes[v]["grad_bytes"] = total
    from . import native  # this is the pure-Python engine: a first large capture says once that the core exists
    native.note_python_capture(len(nodes))
    return nodes, edges

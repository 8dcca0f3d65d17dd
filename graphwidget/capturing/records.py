"""Walked nodes -> plain node and edge records (the pure-Python engine; the compiled core builds the same)."""
from __future__ import annotations

import functools
import math
from typing import Any, Callable, Dict, List, Mapping, Optional, Sequence, Tuple

import torch

from .._util.dicts import shared_key_dict
from ..model import schema
from .compat import data_of, hook_of, metadata_without_binding
from .seq import NO_SEQ
from .tensors import (
    device_name,
    dtype_name,
    freed_record,
    is_stale_error,
    itemsize,
    jsonable,
    numel,
    packed_record,
    stale_record,
    tensor_record,
)
from .walk import Node, Walk

_BackwardCFunction = torch.autograd.function.BackwardCFunction


class TypeInfo:
    """What is the same for every node of one type; computed once per type (``dir()`` and the attribute scan cost
    more than reading a whole node, so no node pays for them)."""

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
        self.types: Dict[type, TypeInfo] = {}
        self.storages: Dict[Any, int] = {}
        # (shape, dtype, device) -> output record. Records are shared between nodes: treat them as read-only.
        self.out_records: Dict[Tuple[Any, Any, Any], Dict[str, Any]] = {}
        # id(tensor) -> record, for tensors saved by several nodes (a weight reused in a loop); ``keep`` pins the
        # tensors until the capture ends so no id is reused.
        self.tensor_records: Dict[int, Dict[str, Any]] = {}
        self.keep: List[torch.Tensor] = []
        # Values nodes share (read-only, as the output records): one empty ``saved`` list and ``attrs`` dict for
        # every node without any, one ``attrs`` dict per type and distinct atomic values (an add's {"alpha": 1}),
        # one ``outputs`` list per distinct sequence of output records. A big graph repeats a handful of each.
        self.no_saved: List[Dict[str, Any]] = []
        self.no_attrs: Dict[str, Any] = {}
        self.attrs_cache: Dict[Tuple[Any, ...], Dict[str, Any]] = {}
        self.outputs_cache: Dict[Tuple[int, ...], List[Optional[Dict[str, Any]]]] = {}
        # A tensor saved again under the same name (a weight every step of a loop saves) shares its record, and nodes
        # whose records were all made before share one ``saved`` list per sequence (the ids in these keys are of
        # records the graph holds). ``fresh``: the node being recorded got a new record.
        self.saved_records: Dict[Tuple[int, str, bool], Dict[str, Any]] = {}
        self.saved_lists: Dict[Tuple[int, ...], List[Dict[str, Any]]] = {}
        self.fresh = False

    def saved_tensor(self, name: str, t: torch.Tensor, stale: bool = False) -> Dict[str, Any]:
        """The record of a saved tensor under ``name``. A tensor's first record is kept as its base; a later save
        under the same name and staleness returns that very record when the tensor has a storage (records without
        one are counted by identity), else a copy of the base with the three fields set anew (itself shared by
        later saves with that name and staleness)."""
        base = self.tensor_records.get(id(t))
        if base is None:
            rec = tensor_record(t)
            rec["storage"] = self.storage_id(rec.pop("_storage_key"))
            rec["freed"] = False
            self.tensor_records[id(t)] = rec
            self.keep.append(t)
        else:
            shareable = base["storage"] is not None
            if shareable:
                if base["name"] == name and base["stale"] == stale:
                    return base
                hit = self.saved_records.get((id(t), name, stale))
                if hit is not None:
                    return hit
            rec = dict(base)
            if shareable:
                self.saved_records[(id(t), name, stale)] = rec
        self.fresh = True
        rec["name"] = name
        rec["packed"] = None
        rec["stale"] = stale
        return rec

    def saved_list(self, saved: List[Dict[str, Any]]) -> List[Dict[str, Any]]:
        """A node's ``saved`` list: one shared list per distinct sequence of records, looked up only when every
        record was one made before (a loop's steps saving one weight); a list with a new record is its own."""
        if not saved:
            return self.no_saved
        if self.fresh:
            return saved
        return self.saved_lists.setdefault(tuple(map(id, saved)), saved)

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
        if any(hook_of(r) is not None for r in raws):
            for i, r in enumerate(raws):
                item = f"{name}[{i}]"
                if hook_of(r) is not None:
                    saved.append(packed_record(item, r))
                else:
                    t = data_of(r)
                    if isinstance(t, torch.Tensor):
                        saved.append(self.saved_tensor(item, t))
            return
        try:
            values = unpack()
        except RuntimeError as exc:
            if not is_stale_error(exc):
                saved.append(freed_record(name))
                return
            values, stale = [data_of(r) for r in raws], True
        else:
            stale = False
        for i, t in enumerate(values or ()):
            if isinstance(t, torch.Tensor):
                saved.append(self.saved_tensor(f"{name}[{i}]", t, stale))
            elif stale:  # torch < 2.5: no raw data to describe it by, but it is there and stale
                saved.append(stale_record(f"{name}[{i}]"))

    def saved(self, fn: Node, info: TypeInfo) -> Tuple[List[Dict[str, Any]], Dict[str, Any]]:
        saved: List[Dict[str, Any]] = []
        self.fresh = False
        if info.kind == "custom":
            try:
                raws = fn._raw_saved_tensors
            except RuntimeError:  # released by backward()
                return [freed_record("saved_tensors")], self.no_attrs
            if raws:
                self.saved_group(saved, "saved_tensors", raws, lambda: fn.saved_tensors)
            return self.saved_list(saved), self.no_attrs
        for attr, name, raw_attr in info.tensor_attrs:
            try:
                raw = getattr(fn, raw_attr)
            except RuntimeError:  # a list of saved tensors released by backward()
                saved.append(freed_record(name))
                continue
            if isinstance(raw, (list, tuple)):
                self.saved_group(saved, name, raw, functools.partial(getattr, fn, attr))
                continue
            if hook_of(raw) is not None:
                saved.append(packed_record(name, raw))
                continue
            try:
                value = getattr(fn, attr)
            except RuntimeError as exc:
                if is_stale_error(exc):
                    t = data_of(raw)
                    saved.append(self.saved_tensor(name, t, True) if isinstance(t, torch.Tensor)
                                 else stale_record(name))  # torch < 2.5: no data to describe it by
                else:
                    saved.append(freed_record(name))
                continue
            if isinstance(value, torch.Tensor):
                saved.append(self.saved_tensor(name, value))
        return self.saved_list(saved), self.attrs(fn, info) if info.other_attrs else self.no_attrs

    def attrs(self, fn: Node, info: TypeInfo) -> Dict[str, Any]:
        """The non-tensor ``_saved_*`` values (None where the getter raises), shared between nodes of one type with
        equal atomic values."""
        values = []
        for attr, _ in info.other_attrs:
            try:
                values.append(jsonable(getattr(fn, attr)))
            except RuntimeError:
                values.append(None)
        # keyed by value *and* type: 1, 1.0 and True are equal in Python, not in JSON; no key (not shared) when a
        # value is a list or a float that cannot be keyed faithfully
        key = (info, *values, *map(type, values)) if all(map(_atomic, values)) else None
        if key is not None:
            hit = self.attrs_cache.get(key)
            if hit is not None:
                return hit
        attrs = {name: v for (_, name), v in zip(info.other_attrs, values)}
        if key is not None:
            self.attrs_cache[key] = attrs
        return attrs

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


_ATOMIC = (type(None), bool, int, str)


def _atomic(v: Any) -> bool:
    """A value two nodes can share an attrs dict over: never a NaN (unequal to itself) or -0.0 (equal to 0.0,
    written differently)."""
    t = type(v)
    if t in _ATOMIC:
        return True
    return t is float and v == v and (v != 0.0 or math.copysign(1.0, v) > 0)


def node_kind(fn: Node) -> str:
    """``custom`` for autograd.Function nodes, ``leaf`` for AccumulateGrad, else ``backward``."""
    if isinstance(fn, _BackwardCFunction):
        return "custom"
    if type(fn).__name__ == "AccumulateGrad":
        return "leaf"
    return "backward"


# Every node record starts as a copy of this (copying a dict is cheaper than building a 15-key literal).
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


_EMPTY: Tuple[()] = ()


def build_records(w: Walk, param_names: Mapping[int, str]
                  ) -> Tuple[List[Dict[str, Any]], List[Tuple[int, int, Dict[str, Any]]]]:
    """Node attribute dicts (``nodes[i]`` is node ``i``) and ``(u, v, edge attrs)`` triples for a walk.

    This loop is the capture's hot path (reading ``_input_metadata`` and building the record dict are most of a
    node's cost), so it is written flat, with per-type facts and repeated output records cached.
    """
    b = _Builder(param_names)
    types = b.types
    out_cache = b.out_records
    outputs_cache, no_saved, no_attrs = b.outputs_cache, b.no_saved, b.no_attrs
    template_copy = _NODE_TEMPLATE.copy
    out_bytes: Dict[int, int] = {}  # id(output record) -> bytes of that tensor
    nodes: List[Dict[str, Any]] = []
    all_outputs: List[List[Optional[Dict[str, Any]]]] = []
    for fn in w.order:
        cls = type(fn)
        info = types.get(cls)
        if info is None:
            info = types[cls] = TypeInfo(fn)
        # Forward outputs of the op = the backward node's input metadata; it survives backward() freeing.
        outputs: List[Optional[Dict[str, Any]]] = []
        try:
            metas = fn._input_metadata
        except AttributeError:  # torch < 2.5: no binding; a leaf's from its variable, others unknown (warned once)
            metas = metadata_without_binding(fn)
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
                out_bytes[id(rec)] = numel(key[0]) * itemsize(key[1])
            outputs.append(rec)
        if metas is not None:  # None: unknown, not "no outputs"
            okey = tuple(map(id, outputs))
            shared = outputs_cache.get(okey)
            if shared is None:
                shared = outputs_cache[okey] = outputs
            outputs = shared
        all_outputs.append(outputs)
        d = template_copy()
        d["op"] = info.op
        d["kind"] = kind = info.kind
        d["outputs"] = outputs if metas is not None else None
        if kind == "leaf":
            d["saved"], d["attrs"] = no_saved, no_attrs
            d["tensor"] = b.leaf(fn)
        else:
            if info.tensor_attrs or info.other_attrs or kind == "custom":
                saved, d["attrs"] = b.saved(fn, info)
                d["saved"] = saved
                if saved:
                    d["saved_bytes"] = sum([s["bytes"] for s in saved])
            else:
                d["saved"], d["attrs"] = no_saved, no_attrs
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
    return nodes, edges

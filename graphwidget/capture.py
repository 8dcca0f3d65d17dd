"""Walk an autograd graph from its roots into plain records.

The walk is iterative (no recursion limit: a 1,000,000-node chain is fine) and keys nodes by the identity of their
Python wrappers only while it runs; the result holds no reference to any node or tensor. Ids are assigned in
depth-first pre-order from the roots, following ``next_functions`` in order, so the same program always gets the
same ids.
"""
from __future__ import annotations

from typing import Any, Dict, Iterable, List, Mapping, Optional, Sequence, Tuple

import torch

from .deep_free import make_deep_free_safe
from .graph import GradGraph
from .tensor_meta import dtype_name, device_name, freed_record, jsonable, tensor_record

Node = Any  # torch.autograd.graph.Node (C++ wrappers have no common Python base class to annotate with)

_BackwardCFunction = torch.autograd.function.BackwardCFunction

# Per node type: (tensor-valued saved attribute names, other saved attribute names). Found once with dir(), which
# costs ~5 µs a call, far more than the whole per-node budget.
_SAVED_ATTRS: Dict[type, Tuple[Tuple[str, ...], Tuple[str, ...]]] = {}


def _saved_attr_names(fn: Node) -> Tuple[Tuple[str, ...], Tuple[str, ...]]:
    cls = type(fn)
    names = _SAVED_ATTRS.get(cls)
    if names is None:
        attrs = [a for a in dir(fn) if a.startswith("_saved_")]
        raw = {a[len("_raw_saved_"):] for a in dir(fn) if a.startswith("_raw_saved_")}
        tensors = tuple(a for a in attrs if a[len("_saved_"):] in raw)
        others = tuple(a for a in attrs if a[len("_saved_"):] not in raw)
        names = (tensors, others)
        _SAVED_ATTRS[cls] = names
    return names


class CaptureError(ValueError):
    """The object given to :func:`capture` has no autograd graph to capture."""


def _roots_from(obj: Any) -> List[Node]:
    """Turn what the user passed into root nodes, with errors that say what to do instead."""
    if isinstance(obj, torch.Tensor):
        return [_root_of_tensor(obj, "the tensor")]
    if _is_node(obj):
        return [obj]
    if isinstance(obj, Mapping):
        items: Iterable[Tuple[str, Any]] = ((repr(k), v) for k, v in obj.items())
    elif isinstance(obj, (list, tuple)):
        items = ((f"item {i}", v) for i, v in enumerate(obj))
    else:
        raise TypeError(
            f"graphwidget.capture expects a torch.Tensor that requires grad (or a list/tuple/dict of them, or a "
            f"grad_fn node); got {type(obj).__name__}. Pass the tensor you would call .backward() on, e.g. "
            f"gw.capture(loss)."
        )
    roots: List[Node] = []
    seen = set()
    for label, v in items:
        if isinstance(v, torch.Tensor):
            r = _root_of_tensor(v, label)
        elif _is_node(v):
            r = v
        else:
            raise TypeError(
                f"graphwidget.capture: {label} is a {type(v).__name__}, not a tensor; pass only tensors that "
                f"require grad (or grad_fn nodes)."
            )
        if r not in seen:  # the same root twice is one root
            seen.add(r)
            roots.append(r)
    if not roots:
        raise ValueError("graphwidget.capture got an empty collection; pass at least one tensor that requires grad.")
    return roots


def _is_node(obj: Any) -> bool:
    return isinstance(obj, torch.autograd.graph.Node) or hasattr(obj, "next_functions")


def _root_of_tensor(t: torch.Tensor, label: str) -> Node:
    if t.grad_fn is not None:
        return t.grad_fn
    if t.requires_grad:
        # A leaf: its graph is just its AccumulateGrad node; reach it the public way, through a view.
        return t.view_as(t).grad_fn.next_functions[0][0]
    if torch.is_inference(t):
        raise ValueError(
            f"graphwidget.capture: {label} was created under torch.inference_mode(), so it has no autograd graph. "
            f"Run the forward pass outside inference_mode (and no_grad) to capture its graph."
        )
    raise ValueError(
        f"graphwidget.capture: {label} does not require grad, so it has no autograd graph. If it was computed "
        f"under torch.no_grad(), run the forward pass without it; otherwise make an input require grad "
        f"(x.requires_grad_()) before computing it."
    )


def walk(roots: Sequence[Node]) -> List[Node]:
    """All nodes reachable from ``roots``, each once, in depth-first pre-order (next_functions in order)."""
    order: List[Node] = []
    index: Dict[int, int] = {}
    stack: List[Node] = list(reversed(roots))
    # The wrappers in ``order`` keep every id() below valid until the walk's caller drops them.
    while stack:
        fn = stack.pop()
        key = id(fn)
        if key in index:
            continue
        index[key] = len(order)
        order.append(fn)
        nxt = fn.next_functions
        for i in range(len(nxt) - 1, -1, -1):
            child = nxt[i][0]
            if child is not None and id(child) not in index:
                stack.append(child)
    return order


def _outputs(fn: Node) -> List[Optional[Dict[str, Any]]]:
    out: List[Optional[Dict[str, Any]]] = []
    try:
        metas = fn._input_metadata
    except (AttributeError, RuntimeError):
        return out
    for m in metas:
        try:
            out.append({"shape": list(m.shape), "dtype": dtype_name(m.dtype), "device": device_name(m.device)})
        except (RuntimeError, TypeError):  # nested tensors have no single shape
            out.append(None)
    return out


def _saved(fn: Node, storages: Dict[Any, int]) -> Tuple[List[Dict[str, Any]], Dict[str, Any]]:
    saved: List[Dict[str, Any]] = []
    attrs: Dict[str, Any] = {}
    if isinstance(fn, _BackwardCFunction):
        try:
            tensors = fn.saved_tensors
        except RuntimeError:  # released by backward()
            tensors = None
            saved.append(freed_record("saved_tensors"))
        for i, t in enumerate(tensors or ()):
            if isinstance(t, torch.Tensor):
                saved.append(_saved_record(f"saved_tensors[{i}]", t, storages))
        return saved, attrs
    tensor_names, other_names = _saved_attr_names(fn)
    for attr in tensor_names:
        name = attr[7:]
        try:
            value = getattr(fn, attr)
        except RuntimeError:
            saved.append(freed_record(name))
            continue
        if isinstance(value, torch.Tensor):
            saved.append(_saved_record(name, value, storages))
        elif isinstance(value, (list, tuple)):  # e.g. CatBackward's tensors list
            for i, t in enumerate(value):
                if isinstance(t, torch.Tensor):
                    saved.append(_saved_record(f"{name}[{i}]", t, storages))
    for attr in other_names:
        try:
            attrs[attr[7:]] = jsonable(getattr(fn, attr))
        except RuntimeError:
            attrs[attr[7:]] = None
    return saved, attrs


def _saved_record(name: str, t: torch.Tensor, storages: Dict[Any, int]) -> Dict[str, Any]:
    rec = tensor_record(t)
    key = rec.pop("_storage_key")
    sid = None
    if key is not None:
        sid = storages.get(key)
        if sid is None:
            sid = storages[key] = len(storages)
    rec["name"] = name
    rec["storage"] = sid
    rec["freed"] = False
    return rec


def _leaf(fn: Node, names: Mapping[int, str], storages: Dict[Any, int]) -> Optional[Dict[str, Any]]:
    try:
        var = fn.variable
    except (AttributeError, RuntimeError):
        return None
    rec = tensor_record(var)
    rec.pop("_storage_key")
    rec["requires_grad"] = bool(var.requires_grad)
    rec["name"] = names.get(id(var))
    return rec


def node_kind(fn: Node) -> str:
    if isinstance(fn, _BackwardCFunction):
        return "custom"
    if type(fn).__name__ == "AccumulateGrad":
        return "leaf"
    return "backward"


_NO_SEQ = 2**63  # AccumulateGrad and some graph-root nodes report UINT64_MAX


def build_records(
    order: Sequence[Node], ids: Mapping[int, int], param_names: Mapping[int, str]
) -> Tuple[List[Dict[str, Any]], List[Dict[str, Any]]]:
    """Node and edge records for walked nodes: ``order[i]`` gets id ``i``; ``ids`` maps id(wrapper) -> i."""
    storages: Dict[Any, int] = {}
    nodes: List[Dict[str, Any]] = []
    edges: List[Dict[str, Any]] = []
    outputs_by_id: List[List[Optional[Dict[str, Any]]]] = []
    for i, fn in enumerate(order):
        kind = node_kind(fn)
        outputs = _outputs(fn)
        outputs_by_id.append(outputs)
        if kind == "leaf":
            saved: List[Dict[str, Any]] = []
            attrs: Dict[str, Any] = {}
            leaf = _leaf(fn, param_names, storages)
            seq = None
        else:
            saved, attrs = _saved(fn, storages)
            leaf = None
            try:
                seq = fn._sequence_nr()
                if seq >= _NO_SEQ:
                    seq = None
            except (AttributeError, RuntimeError):
                seq = None
        nodes.append({
            "id": i,
            "op": type(fn).__name__,
            "kind": kind,
            "outputs": outputs,
            "saved": saved,
            "attrs": attrs,
            "saved_bytes": sum(s["bytes"] for s in saved),
            "tensor": leaf,
            "source": None, "code": None, "module": None, "out_stride": None, "out_contiguous": None,
            "seq": seq,
            "fwd_ms": None, "bwd_ms": None,
        })
    for v, fn in enumerate(order):
        for slot, (child, out_nr) in enumerate(fn.next_functions):
            if child is None:
                continue
            u = ids[id(child)]
            outs = outputs_by_id[u]
            meta = outs[out_nr] if out_nr < len(outs) else None
            edges.append({
                "source": u, "target": v, "output": out_nr, "slot": slot,
                "shape": meta["shape"] if meta else None, "dtype": meta["dtype"] if meta else None,
            })
    return nodes, edges


def parameter_names(module: Optional[torch.nn.Module]) -> Dict[int, str]:
    """id(parameter) -> qualified name (``fc1.weight``) for leaves of a module."""
    if module is None:
        return {}
    if not isinstance(module, torch.nn.Module):
        raise TypeError(f"module= must be a torch.nn.Module (to name parameters); got {type(module).__name__}.")
    names = {id(p): n for n, p in module.named_parameters(remove_duplicate=False)}
    for n, b in module.named_buffers():
        names.setdefault(id(b), n)
    return names


def capture(obj: Any, *, module: Optional[torch.nn.Module] = None, title: Optional[str] = None) -> GradGraph:
    """Capture the autograd graph behind ``obj`` into a :class:`GradGraph`.

    ``obj`` is a tensor that requires grad (usually the loss), a list/tuple/dict of such tensors (one graph with
    several roots), or a ``grad_fn`` node. ``module`` names leaf parameters (``fc1.weight``).

    >>> import torch, graphwidget as gw
    >>> x = torch.randn(3, requires_grad=True)
    >>> g = gw.capture((x * 2).sum())
    >>> g.summary()["nodes"]
    3
    """
    roots = _roots_from(obj)
    names = parameter_names(module)
    order = walk(roots)
    ids = {id(fn): i for i, fn in enumerate(order)}
    nodes, edges = build_records(order, ids, names)
    root_ids = sorted({ids[id(r)] for r in roots})
    n = len(order)
    del order, roots, ids
    make_deep_free_safe(n)
    return GradGraph.from_records(nodes, edges, roots=root_ids, title=title)


"""From what the user passes (a loss, a model's output, a list or dict of tensors, a ``grad_fn``) to root nodes.

One rule for :func:`graphwidget.capture`, :func:`graphwidget.trace` and :func:`graphwidget.profile`: a tensor must
require grad; a container — list, tuple, dict, a Hugging Face ``ModelOutput`` or any other mapping, nested — gives
every tensor inside it that requires grad (other values such as caches, ints or ``None`` are passed over). Errors
say what to pass instead.
"""
from __future__ import annotations

from typing import Any, Dict, List, Mapping, Optional

import torch

Node = Any  # torch.autograd.graph.Node


def is_node(obj: Any) -> bool:
    """A ``grad_fn`` node (C++ nodes have no common Python base class besides ``torch.autograd.graph.Node``)."""
    return isinstance(obj, torch.autograd.graph.Node) or (hasattr(obj, "next_functions") and
                                                          not isinstance(obj, torch.Tensor))


def _children(obj: Any) -> Optional[List[Any]]:
    if isinstance(obj, Mapping):
        return list(obj.values())
    if isinstance(obj, (list, tuple)):
        return list(obj)
    return None


def grad_tensors(out: Any, *, nodes: bool = False) -> List[Any]:
    """Every tensor that requires grad inside ``out`` (and ``grad_fn`` nodes with ``nodes=True``), depth first, in
    order; containers are walked iteratively and each once (no recursion limit, no loops on self-references)."""
    found: List[Any] = []
    stack: List[Any] = [out]
    seen: set = set()
    while stack:
        o = stack.pop()
        if isinstance(o, torch.Tensor):
            if o.requires_grad:
                found.append(o)
            continue
        if nodes and is_node(o):
            found.append(o)
            continue
        kids = _children(o)
        if kids is None or id(o) in seen:
            continue
        seen.add(id(o))
        stack.extend(reversed(kids))
    return found


def loss_or_tensors(out: Any) -> List[torch.Tensor]:
    """What :func:`graphwidget.profile` differentiates: a tensor; else a ``loss`` entry or attribute (dicts, Hugging
    Face outputs) that requires grad; else every tensor in ``out`` that requires grad."""
    if isinstance(out, torch.Tensor):
        return [out] if out.requires_grad else []
    loss = out.get("loss") if isinstance(out, Mapping) else getattr(out, "loss", None)
    if isinstance(loss, torch.Tensor) and loss.requires_grad:
        return [loss]
    return grad_tensors(out)


def _why_no_grad(t: torch.Tensor, label: str, who: str) -> str:
    if _is_functorch_wrapped(t):
        return (f"{who}: {label} is a tensor inside torch.vmap (or another torch.func transform), where autograd "
                f"records no graph to capture. Capture outside the transform: call the function on the unbatched "
                f"inputs, or capture the result of the whole vmap call.")
    if torch.is_inference(t):
        return (f"{who}: {label} was created under torch.inference_mode(), so it has no autograd graph. Run the "
                f"forward pass outside inference_mode (and no_grad) to capture its graph.")
    return (f"{who}: {label} does not require grad, so it has no autograd graph. If it was computed under "
            f"torch.no_grad(), run the forward pass without it; otherwise make an input require grad "
            f"(x.requires_grad_()) before computing it.")


def _is_functorch_wrapped(t: torch.Tensor) -> bool:
    try:
        from torch._C import _functorch as ft
    except ImportError:  # pragma: no cover - torch without functorch
        return False
    for name in ("is_batchedtensor", "is_gradtrackingtensor", "is_functionaltensor"):
        check = getattr(ft, name, None)
        try:
            if check is not None and check(t):
                return True
        except (RuntimeError, TypeError):  # pragma: no cover
            continue
    return False


def root_node(t: torch.Tensor, label: str = "the tensor", who: str = "graphwidget.capture") -> Node:
    """The node a tensor's graph starts from: its ``grad_fn``, or a leaf's ``AccumulateGrad``."""
    if t.grad_fn is not None:
        return t.grad_fn
    if t.requires_grad:
        # A leaf: its graph is just its AccumulateGrad node; reach it the public way, through a view.
        view_fn = t.view_as(t).grad_fn
        assert view_fn is not None
        return view_fn.next_functions[0][0]
    raise ValueError(_why_no_grad(t, label, who))


def root_nodes(tensors: List[Any]) -> List[Node]:
    """Root nodes of tensors (or nodes), in order, each once: the same roots, hence the same ids, for every stage."""
    out: List[Node] = []
    seen: set = set()
    for t in tensors:
        r = root_node(t) if isinstance(t, torch.Tensor) else t
        if r not in seen:
            seen.add(r)
            out.append(r)
    return out


def roots_of(obj: Any, who: str = "graphwidget.capture") -> List[Node]:
    """Root nodes for ``obj`` (see the module docstring), or a ``TypeError``/``ValueError`` saying what to pass."""
    if isinstance(obj, torch.Tensor):
        return [root_node(obj, "the tensor", who)]
    if is_node(obj):
        return [obj]
    if _children(obj) is None:
        raise TypeError(
            f"{who} expects a torch.Tensor that requires grad (or a list/tuple/dict/model output holding such "
            f"tensors, or a grad_fn node); got {type(obj).__name__}. Pass the tensor you would call .backward() on, "
            f"e.g. gw.capture(loss).")
    found = grad_tensors(obj, nodes=True)
    if not found:
        plain = [t for t in flat_tensors(obj)]
        if plain:
            raise ValueError(_why_no_grad(plain[0], "no tensor in it requires grad; the first", who))
        kind = type(obj).__name__
        what = f"an empty {kind}" if not _children(obj) else f"a {kind} with no tensor in it"
        raise ValueError(f"{who} got {what}; pass at least one tensor that requires grad.")
    return root_nodes(found)


def flat_tensors(obj: Any) -> List[torch.Tensor]:
    out: List[torch.Tensor] = []
    stack, seen = [obj], set()
    while stack:
        o = stack.pop()
        if isinstance(o, torch.Tensor):
            out.append(o)
            continue
        kids = _children(o)
        if kids is not None and id(o) not in seen:
            seen.add(id(o))
            stack.extend(kids)
    return out


def parameter_names(module: Optional[torch.nn.Module]) -> Dict[int, str]:
    """id(parameter or buffer) -> qualified name (``fc1.weight``), to name the leaves of a module."""
    if module is None:
        return {}
    if not isinstance(module, torch.nn.Module):
        raise TypeError(f"module= must be a torch.nn.Module (to name parameters); got {type(module).__name__}.")
    names = {id(p): n for n, p in module.named_parameters(remove_duplicate=False)}
    for n, b in module.named_buffers():
        names.setdefault(id(b), n)
    return names

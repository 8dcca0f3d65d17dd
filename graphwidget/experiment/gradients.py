"""The gradients of a compared side, also for reentrant checkpointing.

``torch.autograd.grad`` writes no ``.grad``, but reentrant ``torch.utils.checkpoint`` refuses it (its recomputed
graph runs ``.backward()`` inside the backward), and the parameters used inside such a block are leaves only of
the recomputed graph, never of the one captured. For such a graph the gradients come from ``.backward()``: every
tensor the side can reach has its ``.grad`` saved and cleared first, the gradients are read from ``.grad``, and the
saved ``.grad`` objects are put back (with Ctrl-C held back, and again from a ``finally``).
"""
from __future__ import annotations

from typing import Any, Dict, List, Optional, Sequence, Tuple

import torch

from .._util.interrupts import deferred_interrupts

#: The node of a reentrant ``torch.utils.checkpoint`` block
REENTRANT = "CheckpointFunctionBackward"


def reentrant(graph: Any, roots: Sequence[torch.Tensor] = ()) -> bool:
    """Whether a captured graph (or, with no graph, the autograd graph of ``roots``) holds a reentrant checkpoint
    block."""
    if graph is not None:
        return any(d.get("op") == REENTRANT for _, d in graph.nx.nodes(data=True))
    stack = [r.grad_fn for r in roots if r.grad_fn is not None]
    seen = set()
    while stack:
        fn = stack.pop()
        if fn is None or id(fn) in seen:
            continue
        seen.add(id(fn))
        if type(fn).__name__ == REENTRANT:
            return True
        stack.extend(f for f, _ in fn.next_functions)  # type: ignore[misc]
    return False


def gradients(roots: Sequence[torch.Tensor], leaves: List[torch.Tensor], reach: Sequence[torch.Tensor],
              graph: Any = None) -> Tuple[List[torch.Tensor], Sequence[Optional[torch.Tensor]]]:
    """The gradient of the sum of ``roots`` (each seeded with ones) for every tensor of ``leaves``, and for every
    tensor of ``reach`` that receives one through a reentrant checkpoint (appended): ``(tensors, gradients)``.
    ``.grad`` is left as it was."""
    ones = [torch.ones_like(r) for r in roots]
    if not reentrant(graph, roots):
        if not leaves:
            return leaves, ()
        return leaves, torch.autograd.grad(roots, leaves, ones, allow_unused=True)
    tensors = list(leaves)
    seen = {id(t) for t in tensors}
    for t in reach:
        if id(t) not in seen and t.requires_grad and t.grad_fn is None:
            seen.add(id(t))
            tensors.append(t)
    saved: Dict[int, Tuple[torch.Tensor, Optional[torch.Tensor]]] = {}
    try:
        try:
            with deferred_interrupts():
                for t in tensors:
                    saved[id(t)] = (t, t.grad); t.grad = None  # noqa: E702 - one line: saved as it is cleared
            torch.autograd.backward(roots, ones)
            got = [t.grad for t in tensors]
        finally:
            _put_back(saved)
    finally:
        _put_back(saved)  # again: an exception inside the first leaves this one to finish
    extra = [k for k in range(len(leaves), len(tensors)) if got[k] is not None]
    return list(leaves) + [tensors[k] for k in extra], got[:len(leaves)] + [got[k] for k in extra]


def _put_back(saved: Dict[int, Tuple[torch.Tensor, Optional[torch.Tensor]]]) -> None:
    with deferred_interrupts():
        while saved:
            key = next(iter(saved))
            t, g = saved[key]
            t.grad = g; del saved[key]  # noqa: E702 - one line: put back and taken off the list at once

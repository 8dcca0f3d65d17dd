"""Running one side again in float64: the independent truth the equivalence verdict is judged against.

The side's inputs are copied in float64 (complex128), and for the run every floating leaf tensor it can reach —
parameters, buffers, tensors in closures and globals — has its data swapped for a float64 copy (the same Python
objects, so a closure sees them), with float64 as the default dtype (``torch.ones(3)`` inside the forward is float64
too). Everything is swapped back afterwards, even on an error. A ``torch.compile``'d callable runs uncompiled here:
the same maths, without compiling it again for new dtypes.
"""
from __future__ import annotations

from contextlib import contextmanager
from typing import Any, Callable, Iterator, List, Sequence, Tuple

import torch


def uncompiled(fn: Any) -> Any:
    """What a ``torch.compile``'d module or function wraps (``fn`` itself otherwise)."""
    inner = getattr(fn, "_orig_mod", None)
    if isinstance(fn, torch.nn.Module) and isinstance(inner, torch.nn.Module):
        return inner
    orig = getattr(fn, "_torchdynamo_orig_callable", None)
    return orig if callable(orig) else fn


def _wide(t: torch.Tensor) -> torch.dtype:
    return torch.complex128 if t.is_complex() else torch.float64


@contextmanager
def float64(tensors: Sequence[torch.Tensor]) -> Iterator[None]:
    """Inside: every floating leaf of ``tensors`` holds float64 data, and float64 is the default dtype."""
    swapped: List[Tuple[torch.Tensor, torch.Tensor]] = []
    previous = torch.get_default_dtype()
    try:
        torch.set_default_dtype(torch.float64)
        for t in tensors:
            if t.grad_fn is None and (t.is_floating_point() or t.is_complex()) and t.dtype != _wide(t):
                swapped.append((t, t.data))
                t.data = t.data.to(_wide(t))
        yield
    finally:
        for t, data in reversed(swapped):
            t.data = data
        torch.set_default_dtype(previous)


def run_float64(fn: Callable[..., Any], args: Sequence[Any], kwargs: Any, tensors: Sequence[torch.Tensor]
                ) -> Tuple[Any, List[Tuple[torch.Tensor, Any]], Any]:
    """``fn`` on ``args``/``kwargs`` (float64 copies of the inputs) with ``tensors`` upcast: its output, each leaf
    with its gradient, and its graph."""
    from ..capturing.api import capture
    from ..capturing.roots import loss_or_tensors
    from .naming import leaf_tensors
    with float64(tensors):
        out = uncompiled(fn)(*args, **kwargs)
        roots = loss_or_tensors(out)
        if not roots:
            raise ValueError("the float64 run returned no tensor that requires grad")
        graph = capture(roots if len(roots) > 1 else roots[0])
        leaves = leaf_tensors(roots)
        grads = torch.autograd.grad(roots, leaves, [torch.ones_like(r) for r in roots], allow_unused=True) \
            if leaves else ()
    return out, [(t, None if g is None else g.detach()) for t, g in zip(leaves, grads)], graph

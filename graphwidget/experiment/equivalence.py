"""Do two implementations compute the same thing? Outputs and gradients of A and B, tensor by tensor.

Tolerance (per dtype, :data:`RTOL`): a tensor pair is close when its largest absolute difference is at most ``rtol``
times the largest magnitude in either tensor. Measuring the error against the tensor's scale, not element by element,
keeps a sum taken in another order (the usual effect of a rewrite: ~1e-6 in float32) from failing on one element
that cancelled to nearly zero, while any real change of the maths (a missing term, a wrong index, a transposed
weight) moves errors to the size of the values themselves. Integer and bool tensors must be equal. NaN must sit in
the same places on both sides, and infinities must agree.

Reported per tensor: ``allclose``, ``max_abs`` (largest ``|a - b|``), ``max_rel`` (``max_abs`` over that scale),
the two shapes and dtypes, and a ``note`` when they cannot be compared element-wise.
"""
from __future__ import annotations

from typing import Any, Dict, List, Optional, Tuple

import torch

#: Relative tolerance (against the tensor's largest magnitude) per floating dtype.
RTOL: Dict[torch.dtype, float] = {
    torch.float64: 1e-7, torch.complex128: 1e-7,
    torch.float32: 1e-4, torch.complex64: 1e-4,
    torch.float16: 1e-2, torch.bfloat16: 3e-2,
}
_DEFAULT_RTOL = 1e-4


def rtol_for(*dtypes: torch.dtype) -> float:
    """The tolerance of the least precise of the dtypes."""
    return max(RTOL.get(dt, _DEFAULT_RTOL) for dt in dtypes)


def _shape(t: Optional[torch.Tensor]) -> Optional[List[int]]:
    return None if t is None else list(t.shape)


def _dtype(t: Optional[torch.Tensor]) -> Optional[str]:
    return None if t is None else str(t.dtype).replace("torch.", "")


def check(name: str, a: Optional[torch.Tensor], b: Optional[torch.Tensor]) -> Dict[str, Any]:
    """One row of the equivalence table for tensors ``a`` (from A) and ``b`` (from B); ``None`` = no tensor."""
    row: Dict[str, Any] = {"name": name, "allclose": False, "max_abs": None, "max_rel": None,
                           "shape_a": _shape(a), "shape_b": _shape(b), "dtype_a": _dtype(a), "dtype_b": _dtype(b)}
    if a is None or b is None:
        if a is None and b is None:
            row["allclose"] = True
            row["note"] = "neither side has it"
        else:
            row["note"] = f"only {'B' if a is None else 'A'} has it"
        return row
    if a.shape != b.shape:
        row["note"] = f"shapes differ: {list(a.shape)} vs {list(b.shape)}"
        return row
    if a.is_sparse or b.is_sparse:
        a, b = a.to_dense(), b.to_dense()
    a, b = a.detach().cpu(), b.detach().cpu()
    exact = not (a.is_floating_point() or a.is_complex()) and not (b.is_floating_point() or b.is_complex())
    if a.numel() == 0:
        row.update(allclose=True, max_abs=0.0, max_rel=0.0)
        return row
    if exact:
        diff = (a.to(torch.int64) - b.to(torch.int64)).abs() if a.dtype != torch.bool else (a != b).to(torch.int64)
        worst = float(diff.max())
        row.update(allclose=worst == 0, max_abs=worst, max_rel=None if worst else 0.0)
        return row
    wide = torch.complex128 if (a.is_complex() or b.is_complex()) else torch.float64
    x, y = a.to(wide), b.to(wide)
    nan_x, nan_y = torch.isnan(x), torch.isnan(y)
    if not torch.equal(nan_x, nan_y):
        row["note"] = f"NaN in different places ({int(nan_x.sum())} in A, {int(nan_y.sum())} in B)"
        return row
    inf_x, inf_y = torch.isinf(x), torch.isinf(y)
    if not torch.equal(inf_x, inf_y) or not torch.equal(x[inf_x], y[inf_y]):
        row["note"] = "infinities differ"
        return row
    finite = ~(nan_x | inf_x)
    x, y = x[finite], y[finite]
    if x.numel() == 0:
        row.update(allclose=True, max_abs=0.0, max_rel=0.0)
        return row
    max_abs = float((x - y).abs().max())
    scale = max(float(x.abs().max()), float(y.abs().max()))
    max_rel = max_abs / scale if scale > 0 else 0.0
    row.update(max_abs=max_abs, max_rel=max_rel, allclose=max_rel <= rtol_for(a.dtype, b.dtype))
    if a.dtype != b.dtype:
        row["note"] = f"dtypes differ: {_dtype(a)} vs {_dtype(b)}"
    return row


def flatten(out: Any, path: str = "output") -> List[Tuple[str, Any]]:
    """``(path, value)`` for every tensor and plain value in a (nested) output, in order: ``output``,
    ``output[0]``, ``output['loss']``. Containers: tuples, lists, dicts and other mappings (Hugging Face outputs)."""
    from collections.abc import Mapping
    found: List[Tuple[str, Any]] = []
    stack: List[Tuple[str, Any]] = [(path, out)]
    seen: set = set()
    while stack:
        p, o = stack.pop()
        if isinstance(o, torch.Tensor):
            found.append((p, o))
        elif isinstance(o, Mapping) and id(o) not in seen:
            seen.add(id(o))
            stack.extend(reversed([(f"{p}[{k!r}]", v) for k, v in o.items()]))
        elif isinstance(o, (list, tuple)) and id(o) not in seen:
            seen.add(id(o))
            stack.extend(reversed([(f"{p}[{i}]", v) for i, v in enumerate(o)]))
        else:
            found.append((p, type(o).__name__))
    return found


def describe(out: Any) -> str:
    """A short description of an output's structure for error messages: ``tuple of 2 (tensor, tensor)``."""
    if isinstance(out, torch.Tensor):
        return f"a tensor of shape {list(out.shape)}"
    items = flatten(out)
    kinds = ", ".join(f"{p}: {'tensor' if isinstance(v, torch.Tensor) else v}" for p, v in items[:6])
    more = ", ..." if len(items) > 6 else ""
    return f"{type(out).__name__} ({kinds}{more})"

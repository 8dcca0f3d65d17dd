"""Do two implementations compute the same thing? Outputs and gradients of A and B, tensor by tensor, judged
against what rounding can explain.

A fixed tolerance cannot tell rounding from a change of maths: a badly conditioned network run in float32 can differ
by a tenth between two memory layouts of the same convolutions, while GELU's tanh approximation moves a gradient by
only 2e-4. So each side also runs once more in float64 (its inputs, parameters, buffers and the tensors it reaches
upcast; the default dtype float64 while it runs: :mod:`.reference`), and for every tensor:

- ``ab``: the largest ``|A - B|`` (float32 vs float32, as the user ran them);
- ``rounding``: the largest ``|A - A64|`` and ``|B - B64|``: how far each side's own rounding moved it;
- ``ref_diff``: the largest ``|A64 - B64|``: the two *maths*, each run ~2^29 times more precisely.

Rounding errors shrink with the precision of the arithmetic; a change of maths does not. So the two sides compute
the same maths when ``ref_diff`` is within what float64 rounding can explain — each side's measured rounding scaled
by the ratio of the precisions, plus a few units of the reference's own last place::

    ref_diff <= K_ROUND * (rounding_a + rounding_b) * eps(reference) / eps(run) + K_FLOOR * eps(last) * scale

(the triangle inequality then bounds ``ab`` by ``rounding_a + rounding_b + ref_diff``: what A and B disagree on in
float32 is rounding). ``eps(run)`` is the least precise floating dtype either side computed in, ``eps(reference)``
the dtype most of the reference runs computed in, ``eps(last)`` the least precise one left there (a forward that
casts its loss to float32 itself ends in float32: one last rounding of the result).
Values whose true size is about zero (a gradient that cancels exactly) are handled by the same rule: both float64
results are then about zero too.

When a float64 run is impossible (an op without float64 support, a forward that forces its own dtype everywhere,
sides already in float64) the verdict falls back, loudly, to a fixed relative tolerance per dtype (:data:`RTOL`,
against the tensor's largest magnitude), and says so.

A gradient present on one side only (the tensor is detached, unused or frozen there) is a difference unless the
other side's gradient is exactly zero: "zero gradient" (the tensor is in the graph, its gradient happens to be 0) is
the same maths as "no gradient" (it is not in the graph), and the row says which is which.

Reported per tensor: ``allclose``, ``max_abs`` and ``max_rel`` (A vs B, relative to the largest magnitude), and
with a reference ``rounding``, ``ref_diff``, ``tol`` (relative too), the two shapes and dtypes, and a ``note``.
"""
from __future__ import annotations

import math
from typing import Any, Dict, List, Optional, Sequence, Tuple

import torch

#: Fixed relative tolerance (against the tensor's largest magnitude) per floating dtype: the fallback rule.
RTOL: Dict[torch.dtype, float] = {
    torch.float64: 1e-7, torch.complex128: 1e-7,
    torch.float32: 1e-4, torch.complex64: 1e-4,
    torch.float16: 1e-2, torch.bfloat16: 3e-2,
}
_DEFAULT_RTOL = 1e-4
#: Headroom on the scaled rounding of the two sides (rounding errors add up differently along different paths).
K_ROUND = 8.0
#: Units in the reference's last place that its own final rounding may account for.
K_FLOOR = 16.0

#: Machine epsilon of each floating dtype, by name (as graphs record dtypes).
EPS: Dict[str, float] = {
    "float64": 2.0 ** -52, "complex128": 2.0 ** -52, "float32": 2.0 ** -23, "complex64": 2.0 ** -23,
    "float16": 2.0 ** -10, "bfloat16": 2.0 ** -7, "float8_e4m3fn": 2.0 ** -3, "float8_e5m2": 2.0 ** -2,
    "float8_e4m3fnuz": 2.0 ** -3, "float8_e5m2fnuz": 2.0 ** -2,
}


def rtol_for(*dtypes: torch.dtype) -> float:
    """The fixed tolerance of the least precise of the dtypes."""
    return max(RTOL.get(dt, _DEFAULT_RTOL) for dt in dtypes)


def dtype_name(t: Optional[torch.Tensor]) -> Optional[str]:
    return None if t is None else str(t.dtype).replace("torch.", "")


def _shape(t: Optional[torch.Tensor]) -> Optional[List[int]]:
    return None if t is None else list(t.shape)


class Precision:
    """How the comparison is judged: ``method`` ``"float64"`` (with ``eps_run``, ``eps_ref`` — the precision most of
    the reference computed in — and ``eps_last`` — its least precise dtype, e.g. a final cast to float32) or
    ``"fixed"`` (with the reason the float64 reference could not be used)."""

    def __init__(self, method: str, eps_run: float = 0.0, eps_ref: float = 0.0, run_dtype: Optional[str] = None,
                 ref_dtype: Optional[str] = None, why: Optional[str] = None, eps_last: float = 0.0) -> None:
        self.method, self.eps_run, self.eps_ref, self.why = method, eps_run, eps_ref, why
        self.eps_last = max(eps_last, eps_ref)
        self.run_dtype, self.ref_dtype = run_dtype, ref_dtype

    def record(self) -> Dict[str, Any]:
        return {"method": self.method, "precision": self.run_dtype, "reference_precision": self.ref_dtype,
                "fallback_reason": self.why}


def _dense(t: torch.Tensor) -> torch.Tensor:
    t = t.detach()
    if t.is_sparse:
        t = t.to_dense()
    return t.cpu()


def _wide(t: torch.Tensor) -> torch.Tensor:
    return t.to(torch.complex128 if t.is_complex() else torch.float64)


def _maxabs(t: torch.Tensor) -> float:
    if not t.numel():
        return 0.0
    if t.is_complex():
        return float(t.abs().max())
    # one pass and no temporary: the smallest and largest element bound the magnitude exactly (a NaN makes both NaN)
    lo, hi = torch.aminmax(t)
    return max(abs(float(lo)), abs(float(hi)))


def _finite_maxabs(t: torch.Tensor) -> Optional[float]:
    """The largest magnitude of a real tensor when every element is finite, else ``None``."""
    if t.is_complex() or not t.numel():
        return None
    m = _maxabs(t if t.is_floating_point() else t.double())
    return m if math.isfinite(m) else None


def _maxdiff(x: torch.Tensor, y: torch.Tensor, buf: torch.Tensor) -> float:
    """``max |x - y|`` computed in ``buf``'s float64 (reused: no temporary per difference)."""
    torch.sub(x, y, out=buf)
    return _maxabs(buf)


def _figures_finite(x: torch.Tensor, y: torch.Tensor, a64: Optional[torch.Tensor], b64: Optional[torch.Tensor]
                    ) -> Optional[Dict[str, Any]]:
    """:func:`measure`'s figures for two real tensors with no NaN or infinity, in two float64 buffers instead of a
    masked copy per operand (the same numbers: nothing is masked out when everything is finite); ``None`` when an
    element is not finite (or a reference is complex): the general path then sorts that out."""
    sx = _finite_maxabs(x)
    sy = None if sx is None else _finite_maxabs(y)
    if sx is None or sy is None:
        return None
    x64 = y64 = None
    if a64 is not None and b64 is not None:
        x64, y64 = _wide(_dense(a64)), _wide(_dense(b64))
        if x64.is_complex() or y64.is_complex():
            return None
    xw = _wide(x)
    buf = torch.empty_like(xw, dtype=torch.float64)
    fig: Dict[str, Any] = {"ab": _maxdiff(xw, y, buf), "scale": max(sx, sy), "ref": None}
    if x64 is not None and y64 is not None:
        fig["ref"] = (max(_maxabs(x64), _maxabs(y64)), _maxdiff(xw, x64, buf), _maxdiff(y, y64, buf),
                      _maxdiff(x64, y64, buf))
    return fig


def _figures_general(row: Dict[str, Any], x: torch.Tensor, y: torch.Tensor, a64: Optional[torch.Tensor],
                     b64: Optional[torch.Tensor]) -> Optional[Dict[str, Any]]:
    """The same with NaNs and infinities: ``None`` when they decide the row already (written into ``row``)."""
    xw, yw = _wide(x), _wide(y)
    nan_x, nan_y = torch.isnan(xw), torch.isnan(yw)
    if not torch.equal(nan_x, nan_y):
        row["note"] = f"NaN in different places ({int(nan_x.sum())} in A, {int(nan_y.sum())} in B)"
        return None
    inf_x, inf_y = torch.isinf(xw), torch.isinf(yw)
    if not torch.equal(inf_x, inf_y) or not torch.equal(xw[inf_x], yw[inf_y]):
        row["note"] = "infinities differ"
        return None
    finite = ~(nan_x | inf_x)
    xf, yf = xw[finite], yw[finite]
    if xf.numel() == 0:
        row.update(allclose=True, max_abs=0.0, max_rel=0.0)
        return None
    fig: Dict[str, Any] = {"ab": _maxabs(xf - yf), "scale": max(_maxabs(xf), _maxabs(yf)), "ref": None}
    if a64 is not None and b64 is not None:
        x64, y64 = _wide(_dense(a64))[finite], _wide(_dense(b64))[finite]
        fig["ref"] = (max(_maxabs(x64), _maxabs(y64)), _maxabs(xf - x64), _maxabs(yf - y64), _maxabs(x64 - y64))
    return fig


def _judge(row: Dict[str, Any], precision: Precision, ab: float, scale: float, ra: float, rb: float, ref: float,
           m64: float) -> None:
    """The float64 rule, from the figures (module docstring)."""
    # Values whose true size is below the rounding noise (a gradient that cancels to zero): their relative figures
    # say nothing; the rule below still holds for them.
    row["near_zero"] = m64 <= ra + rb
    tol = K_ROUND * (ra + rb) * precision.eps_ref / precision.eps_run + K_FLOOR * precision.eps_last * scale
    rel = (lambda v: v / scale) if scale > 0 else (lambda v: 0.0)
    row.update(max_abs=ab, max_rel=rel(ab), rounding=rel(max(ra, rb)), ref_diff=rel(ref), tol=rel(tol),
               allclose=ref <= tol, ref_diff_abs=ref, tol_abs=tol, scale=scale)
    if not row["allclose"]:
        row["note"] = (f"A and B differ by {rel(ref):.2g} in float64 too, beyond what rounding explains "
                       f"({rel(tol):.2g})")


def measure(name: str, a: Optional[torch.Tensor], b: Optional[torch.Tensor], a64: Optional[torch.Tensor] = None,
            b64: Optional[torch.Tensor] = None, kind: str = "output", missing: str = "it") -> Dict[str, Any]:
    """The part of :func:`check` that reads the tensors: a row, final where the tensors alone decide it (a side
    without the tensor, other shapes, integers, NaNs or infinities in different places), else carrying the figures
    the rule needs (``"_figures"``: largest differences and magnitudes, a few floats) for :func:`judge`. Lets a
    comparison measure a pair while its tensors exist and judge it later, when the precision is known."""
    row: Dict[str, Any] = {"name": name, "kind": kind, "allclose": False, "max_abs": None, "max_rel": None,
                           "shape_a": _shape(a), "shape_b": _shape(b), "dtype_a": dtype_name(a),
                           "dtype_b": dtype_name(b)}
    if a is None or b is None:
        if a is None and b is None:
            row.update(allclose=True, note="neither side has it")
            return row
        present, side, other = (a, "A", "B") if b is None else (b, "B", "A")
        assert present is not None
        t = _dense(present)
        zero = t.numel() == 0 or not bool((t != 0).any())
        if zero:
            row.update(allclose=True, max_abs=0.0, max_rel=0.0,
                       note=f"zero gradient in {side}, {missing} in {other} (not in its graph): the same maths")
        else:
            row.update(only=side, note=f"{missing} in {other}: only {side} has it (detached, unused or frozen in "
                                         f"{other}?)")
        return row
    if a.shape != b.shape:
        row["note"] = f"shapes differ: {list(a.shape)} vs {list(b.shape)}"
        return row
    x, y = _dense(a), _dense(b)
    exact = not (x.is_floating_point() or x.is_complex()) and not (y.is_floating_point() or y.is_complex())
    if x.numel() == 0:
        row.update(allclose=True, max_abs=0.0, max_rel=0.0)
        return row
    if exact:
        diff = (x.to(torch.int64) - y.to(torch.int64)).abs() if x.dtype != torch.bool else (x != y).to(torch.int64)
        worst = float(diff.max())
        row.update(allclose=worst == 0, max_abs=worst, max_rel=None if worst else 0.0)
        return row
    if a64 is not None and b64 is not None and (a64.shape != a.shape or b64.shape != b.shape):
        a64 = b64 = None  # a reference of another shape is no reference
    fig = _figures_finite(x, y, a64, b64)
    if fig is None:
        fig = _figures_general(row, x, y, a64, b64)
        if fig is None:
            return row
    fig["dtypes"] = (a.dtype, b.dtype)
    row["_figures"] = fig
    return row


def judge(row: Dict[str, Any], precision: Optional[Precision] = None) -> Dict[str, Any]:
    """A :func:`measure` row judged: by the float64 rule when ``precision`` says so and the row has the float64
    runs' figures, else by the fixed tolerance :data:`RTOL`. A final row comes back as it is."""
    fig = row.pop("_figures", None)
    if fig is None:
        return row
    ab, scale = fig["ab"], fig["scale"]
    if precision is not None and precision.method == "float64" and fig["ref"] is not None:
        m64, ra, rb, ref = fig["ref"]
        _judge(row, precision, ab, max(scale, m64), ra, rb, ref, m64)
    else:
        rtol = rtol_for(*fig["dtypes"])
        max_rel = ab / scale if scale > 0 else 0.0
        row.update(max_abs=ab, max_rel=max_rel, allclose=max_rel <= rtol, tol=rtol, scale=scale)
    if row["dtype_a"] != row["dtype_b"]:
        row["note"] = (row.get("note", "") + "; " if row.get("note") else "") + \
            f"dtypes differ: {row['dtype_a']} vs {row['dtype_b']}"
    return row


def check(name: str, a: Optional[torch.Tensor], b: Optional[torch.Tensor], precision: Optional[Precision] = None,
          a64: Optional[torch.Tensor] = None, b64: Optional[torch.Tensor] = None, kind: str = "output",
          missing: str = "it") -> Dict[str, Any]:
    """One row of the equivalence table for ``a`` (from A) and ``b`` (from B); ``None`` = that side has no tensor.
    ``a64``/``b64``: the same tensors from the float64 runs (judged by :class:`Precision`; without them, or with
    ``precision.method == "fixed"``, by :data:`RTOL`). ``missing`` words what a ``None`` means (``"no gradient"``).
    :func:`measure` then :func:`judge`."""
    return judge(measure(name, a, b, a64, b64, kind, missing), precision)


def _dtypes(graphs: Sequence[Any]) -> Dict[str, int]:
    """How many node outputs, saved tensors and leaves of each floating dtype the graphs hold."""
    count: Dict[str, int] = {}
    for g in graphs:
        for _, d in g.nx.nodes(data=True):
            recs = list(d.get("outputs") or ()) + list(d.get("saved") or ()) + [d.get("tensor")]
            for rec in recs:
                dt = rec.get("dtype") if isinstance(rec, dict) else None
                if dt in EPS:
                    count[dt] = count.get(dt, 0) + 1
    return count


def lowest_dtype(counts: Sequence[Dict[str, int]]) -> Optional[str]:
    """The least precise floating dtype named in any of ``counts`` (dtype name -> how many tensors had it)."""
    found = {dt for c in counts for dt, n in c.items() if n and dt in EPS}
    return max(found, key=lambda dt: EPS[dt]) if found else None


def dominant_dtype(counts: Sequence[Dict[str, int]]) -> Optional[str]:
    """The floating dtype most tensors had, over all of ``counts`` (a float64 run whose loss is cast to float32 at
    the end is still a float64 run)."""
    total: Dict[str, int] = {}
    for c in counts:
        for dt, n in c.items():
            if dt in EPS:
                total[dt] = total.get(dt, 0) + n
    return max(total, key=lambda dt: (total[dt], -EPS[dt])) if total else None


def lowest_precision(graphs: Sequence[Any]) -> Optional[str]:
    """The least precise floating dtype any of the graphs computed in (node outputs, saved tensors, leaves)."""
    return lowest_dtype([_dtypes(graphs)])


def summarise(rows: Sequence[Dict[str, Any]], precision: Precision, mutated: Dict[str, List[str]]
              ) -> Dict[str, Any]:
    """The ``equivalence`` record: the verdict, how it was judged, the largest A-vs-B and rounding figures (over
    the tensors whose true size is not about zero), what each side changed in place, and the rows."""
    real = [r for r in rows if r.get("max_rel") is not None and r.get("rounding") is not None
            and not r.get("near_zero")]
    out = {"equivalent": all(r["allclose"] for r in rows), **precision.record(),
           "near_zero": sum(1 for r in rows if r.get("near_zero")),
           # relative figures (each tensor's difference over its largest value), and the absolute A-vs-B beside
           "ab": max((r["max_rel"] for r in real), default=None),
           "ab_abs": max((r["max_abs"] for r in real if r.get("max_abs") is not None), default=None),
           "rounding": max((r["rounding"] for r in real), default=None),
           "mutated": {k: list(v) for k, v in mutated.items() if v},
           "tensors": list(rows)}
    return out


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

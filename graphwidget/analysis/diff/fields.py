"""What differs between two matched nodes: the names of the node fields (schema keys) whose values differ.

Compared: ``op`` (anchored roots may differ), ``outputs`` (shape, dtype, device of each forward output), ``out_stride``
(when both graphs were traced), ``saved`` (name, shape, stride, dtype of each saved tensor), ``saved_bytes``,
``grad_bytes``, ``attrs`` (non-tensor saved values such as dims and repeats), ``tensor`` (a leaf's shape, stride,
dtype, device, requires_grad). A node is "changed" only for such a change of structure or size, never for its
times alone: per-node times are noisy, and a node whose tensors are the same does the same work (the time columns
of the pair view and of the tables still show both). Not compared: where a node was created (``source``, ``code``,
``module``, ``seq``): two implementations always live on different lines.

:func:`times_differ` is the noise rule the per-op and per-line tables use for their time columns: both measured and
apart by at least :data:`TIME_RATIO` times *and* :data:`TIME_FLOOR_MS` (a node of a few µs that takes twice as
long in the next run has not changed).
"""
from __future__ import annotations

from typing import Any, Dict, List, Optional, Tuple

#: Two measured times differ when the larger is at least this many times the smaller ...
TIME_RATIO = 1.5
#: ... and at least this many milliseconds apart.
TIME_FLOOR_MS = 0.05

FIELDS = ("op", "outputs", "out_stride", "saved", "saved_bytes", "grad_bytes", "attrs", "tensor")

_TENSOR_KEYS = ("shape", "stride", "dtype", "device", "requires_grad")
_SAVED_KEYS = ("name", "shape", "stride", "dtype")


def _outputs(v: Any) -> Optional[Tuple[Any, ...]]:
    if not isinstance(v, list):
        return None
    return tuple((o.get("shape"), o.get("dtype"), o.get("device")) if isinstance(o, dict) else None for o in v)


def _saved(v: Any) -> Tuple[Any, ...]:
    if not isinstance(v, list):
        return ()
    return tuple(tuple(str(s.get(k)) for k in _SAVED_KEYS) if isinstance(s, dict) else None for s in v)


def _tensor(v: Any) -> Optional[Tuple[Any, ...]]:
    if not isinstance(v, dict):
        return None
    return tuple(str(v.get(k)) for k in _TENSOR_KEYS)


def times_differ(a: Optional[float], b: Optional[float]) -> bool:
    """The relative-and-absolute rule for node times (module docstring)."""
    if a is None or b is None:
        return False
    lo, hi = min(a, b), max(a, b)
    return hi - lo >= TIME_FLOOR_MS and hi >= TIME_RATIO * lo


def changed_fields(a: Dict[str, Any], b: Dict[str, Any]) -> List[str]:
    """Names of the fields that differ between node records ``a`` and ``b`` (in :data:`FIELDS` order)."""
    out: List[str] = []
    g, h = a.get, b.get
    if g("op") != h("op"):
        out.append("op")
    # Raw equality first (C speed, the usual answer); normalise only what differs on the surface.
    x, y = g("outputs"), h("outputs")
    if x != y and _outputs(x) != _outputs(y):
        out.append("outputs")
    x, y = g("out_stride"), h("out_stride")
    if x is not None and y is not None and x != y:
        out.append("out_stride")
    x, y = g("saved"), h("saved")
    if x != y and _saved(x) != _saved(y):  # storage ids are graph-local: compare what the tensors are
        out.append("saved")
    if (g("saved_bytes") or 0) != (h("saved_bytes") or 0):
        out.append("saved_bytes")
    if (g("grad_bytes") or 0) != (h("grad_bytes") or 0):
        out.append("grad_bytes")
    if (g("attrs") or {}) != (h("attrs") or {}):
        out.append("attrs")
    x, y = g("tensor"), h("tensor")
    if x != y and _tensor(x) != _tensor(y):
        out.append("tensor")
    return out

"""Tables of a graph: the slowest nodes, or time and memory per op type / module / source line.

Everything reads node attributes (``fwd_ms``, ``bwd_ms``, ``saved_bytes``, ``op``, ``module``, ``source``) and
``meta["timing"]``, so it works the same on a graph reloaded from JSON (no torch needed).
"""
from __future__ import annotations

from typing import Any, Dict, List, Optional, Tuple

from .._util.text import TextTable
from .._util.text import human_bytes as _human_bytes
from ..model.graph import GradGraph

ENGINE = "(autograd engine)"  # the group row that holds unattributed backward time
_GROUPS = {"op": "op", "module": "module", "source": "source"}
_BY = ("total", "bwd_ms", "fwd_ms", "saved_bytes")
#: The node fields the tables read (a graph read from a file gives just these, without building networkx's graph).
_KEYS = ("op", "kind", "fwd_ms", "bwd_ms", "saved_bytes", "source", "code", "module", "tensor")


class TimingTable(TextTable):
    """Rows (dicts) of :func:`timing_table`; prints as an aligned text table and renders as HTML in notebooks."""

    columns: Tuple[str, ...] = ()

    def _cells(self, row: Dict[str, Any]) -> List[str]:
        return [_fmt(c, row.get(c)) for c in self.columns]


def _fmt(col: str, v: Any) -> str:
    if v is None:
        return "-"
    if col == "saved_bytes":
        return _human_bytes(v)
    if col == "share":
        return f"{100 * v:.1f}%"
    if col == "source":  # file name and line; the row dict keeps the full path
        return str(v).replace("\\", "/").rsplit("/", 1)[-1]
    if isinstance(v, float):
        return f"{v:.3f}"
    return str(v)


def metric_value(d: Dict[str, Any], by: str) -> float:
    if by == "total":
        return (d.get("fwd_ms") or 0.0) + (d.get("bwd_ms") or 0.0)
    return float(d.get(by) or 0)


def _denominator(graph: GradGraph, nodes: List[Tuple[int, Dict[str, Any]]], by: str) -> Optional[float]:
    """What a row's share is a share of: the measured forward/backward wall times (engine time included)."""
    t = graph.meta.get("timing") or {}
    if by == "saved_bytes":
        return float(sum(d.get("saved_bytes") or 0 for _, d in nodes)) or None
    parts = {"fwd_ms": ("forward_ms",), "bwd_ms": ("backward_ms",), "total": ("forward_ms", "backward_ms")}[by]
    return sum(t.get(p) or 0.0 for p in parts) or None


def _group_key(d: Dict[str, Any], group: str) -> str:
    k = d.get(_GROUPS[group])
    if k is None and group == "module" and d.get("kind") == "leaf":
        # A parameter's gradient accumulation belongs to its module: "features.0.weight" -> "features.0".
        name = (d.get("tensor") or {}).get("name")
        if name:
            k = name.rsplit(".", 1)[0] if "." in name else ""
    return "(none)" if k is None else ("(top level)" if k == "" else str(k))


def timing_table(graph: GradGraph, top: Optional[int] = 20, by: str = "total", group: Optional[str] = None,
                 engine: bool = True) -> TimingTable:
    """The ``top`` nodes of a profiled graph by ``by`` (``"total"`` = fwd + bwd, ``"bwd_ms"``, ``"fwd_ms"``,
    ``"saved_bytes"``), slowest first, with op, source line, module, forward/backward ms, share and saved bytes.

    ``group="op"`` / ``"module"`` / ``"source"`` sums nodes per op type / module path / line instead (a parameter's
    AccumulateGrad counts towards its module); grouped tables
    also get an ``(autograd engine)`` row with the backward time spent between nodes (``engine=False`` drops it).
    ``share`` is relative to the measured wall time (``forward_ms`` / ``backward_ms`` / both).

    >>> g = gw.profile(gw.examples.homography_repeat, **gw.examples.homography_inputs())   # doctest: +SKIP
    >>> print(g.timing_table(top=3, by="bwd_ms", group="op"))                               # doctest: +SKIP
    op                      nodes  fwd_ms  bwd_ms  total_ms  share  saved_bytes
    SelectBackward0         24     0.412   14.807  15.219    60.3%  -
    (autograd engine)       -      -       4.921   4.921     20.0%  -
    GridSampler2DBackward0  1      0.903   2.915   3.818     11.9%  1.6 MiB
    """
    if by not in _BY:
        raise ValueError(f"timing_table: by must be one of {', '.join(_BY)}; got {by!r}.")
    if group is not None and group not in _GROUPS:
        raise ValueError(f"timing_table: group must be None, 'op', 'module' or 'source'; got {group!r}.")
    timing = graph.meta.get("timing")
    if by != "saved_bytes" and not timing:
        raise ValueError("timing_table: this graph has no timings. Make it with gw.profile(fn, *args) (or sort by "
                         "saved memory with by='saved_bytes').")
    nodes = list(graph.node_items(_KEYS))
    denom = _denominator(graph, nodes, by)
    rows: List[Dict[str, Any]] = []
    if group is None:
        cols: Tuple[str, ...] = ("id", "op", "fwd_ms", "bwd_ms", "total_ms", "share", "saved_bytes", "source",
                                 "module")
        for n, d in nodes:
            rows.append({"id": n, "op": d.get("op"), "fwd_ms": d.get("fwd_ms"), "bwd_ms": d.get("bwd_ms"),
                         "total_ms": metric_value(d, "total") if timing else None, "saved_bytes": d.get("saved_bytes"),
                         "source": d.get("source"), "code": d.get("code"), "module": d.get("module"),
                         "_key": metric_value(d, by)})
    else:
        cols = (group, "nodes", "fwd_ms", "bwd_ms", "total_ms", "share", "saved_bytes")
        acc: Dict[str, Dict[str, Any]] = {}
        for _, d in nodes:
            k = _group_key(d, group)
            r = acc.setdefault(k, {group: k, "nodes": 0, "fwd_ms": None, "bwd_ms": None, "saved_bytes": 0})
            r["nodes"] += 1
            r["saved_bytes"] += d.get("saved_bytes") or 0
            for c in ("fwd_ms", "bwd_ms"):
                if d.get(c) is not None:
                    r[c] = (r[c] or 0.0) + d[c]
        rows = list(acc.values())
        if engine and timing and timing.get("unattributed_ms") is not None and by in ("total", "bwd_ms"):
            rows.append({group: ENGINE, "nodes": None, "fwd_ms": None, "bwd_ms": timing["unattributed_ms"],
                         "saved_bytes": None})
        for r in rows:
            r["total_ms"] = metric_value(r, "total") if timing else None
            r["_key"] = metric_value(r, by)
    rows.sort(key=lambda r: -r["_key"])
    table = TimingTable()
    table.columns = cols
    for r in rows[:top] if top is not None else rows:
        r["share"] = r.pop("_key") / denom if denom else None
        table.append(r)
    return table

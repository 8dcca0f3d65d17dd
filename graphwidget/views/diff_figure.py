"""A plotly figure of a diff: per op type, A's and B's backward time (when both were profiled) and the gradient bytes
backward writes, side by side. Op types are ordered by the size of their change; labels are escaped (op names come
from the graphs). plotly is imported here only."""
from __future__ import annotations

from typing import TYPE_CHECKING, Any, Dict, List

from ..model._digraph import node_dicts

if TYPE_CHECKING:  # pragma: no cover
    from ..analysis.diff.result import Diff

_A, _B = "#4c78a8", "#f58518"


def _per_op(graph: Any) -> Dict[str, Dict[str, float]]:
    out: Dict[str, Dict[str, float]] = {}
    for d in node_dicts(graph.nx).values():
        r = out.setdefault(d.get("op") or "?", {"bwd_ms": 0.0, "grad_bytes": 0.0, "timed": 0.0})
        r["grad_bytes"] += d.get("grad_bytes") or 0
        if d.get("bwd_ms") is not None:
            r["bwd_ms"] += d["bwd_ms"]
            r["timed"] = 1.0
    return out


def figure(d: "Diff", top: int = 12) -> Any:
    """Grouped horizontal bars, A vs B, per op type: backward ms (left, when both sides are timed) and gradient MiB
    written (right). The ``top`` op types with the largest change are shown, the rest folded into "other"."""
    import plotly.graph_objects as go
    from plotly.subplots import make_subplots

    from .plotly_inline import escape_labels

    pa, pb = _per_op(d.a), _per_op(d.b)
    timed = any(r["timed"] for r in pa.values()) and any(r["timed"] for r in pb.values())
    ops = sorted(set(pa) | set(pb))
    zero = {"bwd_ms": 0.0, "grad_bytes": 0.0}

    def change(op: str) -> tuple:
        a, b = pa.get(op, zero), pb.get(op, zero)
        return (-abs(b["bwd_ms"] - a["bwd_ms"]) if timed else 0.0, -abs(b["grad_bytes"] - a["grad_bytes"]), op)

    ops.sort(key=change)
    shown, rest = ops[:top], ops[top:]

    def values(per: Dict[str, Dict[str, float]], key: str) -> List[float]:
        vals = [per.get(op, zero)[key] for op in shown]
        if rest:
            vals.append(sum(per.get(op, zero)[key] for op in rest))
        return vals

    labels = shown + ([f"other ({len(rest)})"] if rest else [])
    y = labels[::-1]  # plotly draws the first category at the bottom
    panels = [("bwd_ms", "backward ms", 1.0)] if timed else []
    panels.append(("grad_bytes", "gradients written (MiB)", 1 / 2**20))
    fig = make_subplots(rows=1, cols=len(panels), subplot_titles=[p[1] for p in panels], shared_yaxes=True,
                        horizontal_spacing=0.06)
    la, lb = d.labels
    for col, (key, _, scale) in enumerate(panels, start=1):
        for name, per, colour in ((la, pa, _A), (lb, pb, _B)):
            xs = [v * scale for v in values(per, key)][::-1]
            fig.add_trace(go.Bar(y=y, x=xs, name=name, orientation="h", marker_color=colour, legendgroup=name,
                                 showlegend=col == 1,
                                 hovertemplate="%{y}: %{x:.3f}"),  # the (escaped) trace name shows beside it
                          row=1, col=col)
    fig.update_layout(barmode="group", title=f"{la} vs {lb} per op type", height=max(320, 34 * (len(labels) + 3)),
                      margin=dict(l=10), legend_title_text="")
    return escape_labels(fig)

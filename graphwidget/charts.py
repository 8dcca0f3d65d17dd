"""Views of a profiled graph on the Python side: the timing table and plotly figures (time and saved memory).

Everything reads the graph's node attributes (``fwd_ms``, ``bwd_ms``, ``saved_bytes``, ``op``, ``module``,
``source``) and ``meta["timing"]``, so it works the same on a graph reloaded from JSON. plotly is imported on first use:
``gw.profile`` does not pay for it. :func:`html_fragment` embeds figures in an offline page with plotly.js inlined from
the installed package (never a CDN); that adds ~4.7 MB (the size of plotly.js), so exports should make it opt-in.
"""
from __future__ import annotations

import html
from typing import Any, Callable, Dict, Iterable, List, Optional, Sequence, Tuple

from .graph import GradGraph, _human_bytes

ENGINE = "(autograd engine)"  # the group row that holds unattributed backward time
_GROUPS = {"op": "op", "module": "module", "source": "source"}
_BY = ("total", "bwd_ms", "fwd_ms", "saved_bytes")


class TimingTable(list):
    """Rows (dicts) of :func:`timing_table`; prints as an aligned text table and renders as HTML in notebooks."""

    columns: Tuple[str, ...] = ()

    def __str__(self) -> str:
        cells = [[_fmt(c, r.get(c)) for c in self.columns] for r in self]
        widths = [max([len(c)] + [len(row[i]) for row in cells]) for i, c in enumerate(self.columns)]
        lines = ["  ".join(c.ljust(w) for c, w in zip(self.columns, widths))]
        lines += ["  ".join(v.ljust(w) for v, w in zip(row, widths)) for row in cells]
        return "\n".join(lines)

    def __repr__(self) -> str:
        return str(self)

    def _repr_html_(self) -> str:
        head = "".join(f"<th>{html.escape(c)}</th>" for c in self.columns)
        body = "".join("<tr>" + "".join(f"<td>{html.escape(_fmt(c, r.get(c)))}</td>" for c in self.columns) + "</tr>"
                       for r in self)
        return f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


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


def _value(d: Dict[str, Any], by: str) -> float:
    if by == "total":
        return (d.get("fwd_ms") or 0.0) + (d.get("bwd_ms") or 0.0)
    return float(d.get(by) or 0)


def _denominator(graph: GradGraph, by: str) -> Optional[float]:
    """What a row's share is a share of: the measured forward/backward wall times (engine time included)."""
    t = graph.meta.get("timing") or {}
    if by == "saved_bytes":
        return float(sum(d.get("saved_bytes") or 0 for _, d in graph.nx.nodes(data=True))) or None
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
    denom = _denominator(graph, by)
    nodes = [(n, d) for n, d in graph.nx.nodes(data=True)]
    rows: List[Dict[str, Any]] = []
    if group is None:
        cols: Tuple[str, ...] = ("id", "op", "fwd_ms", "bwd_ms", "total_ms", "share", "saved_bytes", "source",
                                 "module")
        for n, d in nodes:
            rows.append({"id": n, "op": d.get("op"), "fwd_ms": d.get("fwd_ms"), "bwd_ms": d.get("bwd_ms"),
                         "total_ms": _value(d, "total") if timing else None, "saved_bytes": d.get("saved_bytes"),
                         "source": d.get("source"), "code": d.get("code"), "module": d.get("module"),
                         "_key": _value(d, by)})
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
            r["total_ms"] = _value(r, "total") if timing else None
            r["_key"] = _value(r, by)
    rows.sort(key=lambda r: -r["_key"])
    table = TimingTable()
    table.columns = cols
    for r in rows[:top] if top is not None else rows:
        r["share"] = r.pop("_key") / denom if denom else None
        table.append(r)
    return table


# -- figures ------------------------------------------------------------------------------------------------------
_FWD, _BWD, _ENG = "#4c78a8", "#e45756", "#bab0ac"


def _go() -> Any:
    import plotly.graph_objects as go
    return go


def _check_timed(graph: GradGraph) -> None:
    if not graph.meta.get("timing"):
        raise ValueError("this graph has no timings: make it with gw.profile(fn, *args), or use kind='memory'.")


def _bars_by(graph: GradGraph, group: str, top: int) -> Tuple[List[str], List[float], List[float]]:
    rows = timing_table(graph, top=None, group=group)
    engine = [r for r in rows if r[group] == ENGINE]
    rows = [r for r in rows if r[group] != ENGINE]
    shown, rest = rows[:top], rows[top:]
    labels = [str(r[group]) for r in shown]
    fwd = [r["fwd_ms"] or 0.0 for r in shown]
    bwd = [r["bwd_ms"] or 0.0 for r in shown]
    if rest:
        labels.append(f"other ({len(rest)})")
        fwd.append(sum(r["fwd_ms"] or 0.0 for r in rest))
        bwd.append(sum(r["bwd_ms"] or 0.0 for r in rest))
    for r in engine:
        labels.append(ENGINE)
        fwd.append(0.0)
        bwd.append(r["bwd_ms"] or 0.0)
    return labels, fwd, bwd


def _stacked(fig: Any, labels: List[str], fwd: List[float], bwd: List[float], legend: bool = True,
             **pos: Any) -> None:
    go = _go()
    # Horizontal bars, largest on top: plotly draws the first category at the bottom, so reverse.
    y = labels[::-1]
    fig.add_trace(go.Bar(y=y, x=fwd[::-1], name="forward", orientation="h", marker_color=_FWD,
                         showlegend=legend, legendgroup="fwd", hovertemplate="%{y}: %{x:.3f} ms<extra>forward</extra>"),
                  **pos)
    fig.add_trace(go.Bar(y=y, x=bwd[::-1], name="backward", orientation="h", marker_color=_BWD,
                         showlegend=legend, legendgroup="bwd",
                         hovertemplate="%{y}: %{x:.3f} ms<extra>backward</extra>"), **pos)


def time_by(graph: GradGraph, group: str = "op", top: int = 15) -> Any:
    """Forward + backward ms per op type (``group="op"``), module path or source line, stacked, slowest first; the
    rest is folded into "other", and the backward time between nodes is its own ``(autograd engine)`` bar.

    >>> g.figure("op")      # doctest: +SKIP
    """
    _check_timed(graph)
    go = _go()
    fig = go.Figure()
    _stacked(fig, *_bars_by(graph, group, top))
    fig.update_layout(barmode="stack", title=f"Time by {group}", xaxis_title="ms",
                      height=max(300, 28 * (top + 3)), margin=dict(l=10))
    return fig


def _node_label(n: int, d: Dict[str, Any]) -> str:
    where = d.get("source") or ""
    where = where.rsplit("/", 1)[-1] if where else ""
    mod = d.get("module")
    return f"#{n} {d.get('op')}" + (f" @ {where}" if where else "") + (f" [{mod}]" if mod else "")


def top_nodes(graph: GradGraph, top: int = 20, by: str = "total") -> Any:
    """The ``top`` slowest nodes (``by`` as in :func:`timing_table`), forward and backward stacked, labelled with
    id, op, source line and module."""
    _check_timed(graph)
    rows = timing_table(graph, top=top, by=by)
    fig = _go().Figure()
    _stacked(fig, [_node_label(r["id"], graph.node(r["id"])) for r in rows],
             [r["fwd_ms"] or 0.0 for r in rows], [r["bwd_ms"] or 0.0 for r in rows])
    fig.update_layout(barmode="stack", title=f"Top {len(rows)} nodes", xaxis_title="ms",
                      height=max(300, 28 * (len(rows) + 3)), margin=dict(l=10))
    return fig


def _pareto_data(graph: GradGraph, phase: str, top: int) -> Tuple[List[str], List[float], List[float]]:
    vals = sorted(((_value(d, phase), n, d) for n, d in graph.nx.nodes(data=True)), key=lambda t: -t[0])
    total = sum(v for v, _, _ in vals) or 1.0
    cum, run = [], 0.0
    for v, _, _ in vals[:top]:
        run += v
        cum.append(100 * run / total)
    return [_node_label(n, d) for _, n, d in vals[:top]], [v for v, _, _ in vals[:top]], cum


def pareto(graph: GradGraph, phase: str = "bwd_ms", top: int = 40) -> Any:
    """Nodes sorted by time (``phase``: ``"bwd_ms"``, ``"fwd_ms"`` or ``"total"``) with the cumulative share of all
    nodes' time: how few nodes account for most of it."""
    _check_timed(graph)
    go = _go()
    from plotly.subplots import make_subplots
    labels, vals, cum = _pareto_data(graph, phase, top)
    fig = make_subplots(specs=[[{"secondary_y": True}]])
    fig.add_trace(go.Bar(x=labels, y=vals, name=phase, marker_color=_BWD if phase != "fwd_ms" else _FWD),
                  secondary_y=False)
    fig.add_trace(go.Scatter(x=labels, y=cum, name="cumulative %", mode="lines+markers", marker_color="#333"),
                  secondary_y=True)
    fig.update_yaxes(title_text="ms", secondary_y=False)
    fig.update_yaxes(title_text="cumulative % of all nodes", range=[0, 100], secondary_y=True)
    fig.update_layout(title=f"Pareto of nodes by {phase}", xaxis_tickangle=-45)
    return fig


def memory(graph: GradGraph, top: int = 15) -> Any:
    """Bytes saved for backward (``saved_bytes``), per op type and per module path (works on any captured graph)."""
    go = _go()
    from plotly.subplots import make_subplots
    fig = make_subplots(rows=1, cols=2, subplot_titles=("by op", "by module"), horizontal_spacing=0.25)
    for col, group in ((1, "op"), (2, "module")):
        rows = [r for r in timing_table(graph, top=None, by="saved_bytes", group=group) if r["saved_bytes"]]
        shown = rows[:top][::-1]
        fig.add_trace(go.Bar(y=[r[group] for r in shown], x=[r["saved_bytes"] / 2**20 for r in shown],
                             orientation="h", marker_color="#72b7b2", showlegend=False,
                             hovertemplate="%{y}: %{x:.2f} MiB<extra></extra>"), row=1, col=col)
    fig.update_xaxes(title_text="MiB saved for backward")
    fig.update_layout(title="Memory saved for backward", height=max(300, 28 * (top + 3)))
    return fig


def dashboard(graph: GradGraph, top: int = 12) -> Any:
    """Four panels: top nodes, time by op, time by module, Pareto of nodes by backward time."""
    _check_timed(graph)
    go = _go()
    from plotly.subplots import make_subplots
    fig = make_subplots(rows=2, cols=2, horizontal_spacing=0.3, vertical_spacing=0.18,
                        subplot_titles=("top nodes", "by op", "by module", "Pareto (backward)"))
    rows = timing_table(graph, top=top)
    _stacked(fig, [_node_label(r["id"], graph.node(r["id"])) for r in rows],
             [r["fwd_ms"] or 0.0 for r in rows], [r["bwd_ms"] or 0.0 for r in rows], row=1, col=1)
    _stacked(fig, *_bars_by(graph, "op", top), legend=False, row=1, col=2)
    _stacked(fig, *_bars_by(graph, "module", top), legend=False, row=2, col=1)
    labels, vals, cum = _pareto_data(graph, "bwd_ms", 3 * top)
    x = list(range(1, len(vals) + 1))
    fig.add_trace(go.Bar(x=x, y=vals, marker_color=_BWD, showlegend=False, hovertext=labels,
                         hovertemplate="%{hovertext}: %{y:.3f} ms<extra></extra>"), row=2, col=2)
    fig.add_trace(go.Scatter(x=x, y=[c * max(vals or [0]) / 100 for c in cum], mode="lines", showlegend=False,
                             line_color="#333", hovertext=[f"{c:.1f}% cumulative" for c in cum],
                             hovertemplate="%{hovertext}<extra></extra>"), row=2, col=2)
    t = graph.meta["timing"]
    fig.update_layout(barmode="stack", height=900,
                      title=f"forward {t.get('forward_ms') or 0:.2f} ms, backward {t.get('backward_ms') or 0:.2f} ms "
                            f"(engine between nodes {t.get('unattributed_ms') or 0:.2f} ms)")
    return fig


_KINDS: Dict[str, Callable[..., Any]] = {
    "time": dashboard, "op": lambda g, **kw: time_by(g, "op", **kw),
    "module": lambda g, **kw: time_by(g, "module", **kw), "source": lambda g, **kw: time_by(g, "source", **kw),
    "pareto": pareto, "top": top_nodes, "memory": memory,
}


def figure(graph: GradGraph, kind: str = "time", **kwargs: Any) -> Any:
    """A ``plotly.graph_objects.Figure`` of ``graph``: ``"time"`` (dashboard), ``"op"``, ``"module"``, ``"source"``
    (time by group), ``"pareto"``, ``"top"`` (slowest nodes) or ``"memory"`` (saved bytes by op / module).

    >>> fig = g.figure("time"); fig.show()                  # doctest: +SKIP
    """
    try:
        make = _KINDS[kind]
    except KeyError:
        raise ValueError(f"figure: kind must be one of {', '.join(_KINDS)}; got {kind!r}.") from None
    return make(graph, **kwargs)


def plotlyjs() -> str:
    """The plotly.js bundle of the installed plotly package (what :func:`html_fragment` inlines)."""
    from plotly.offline import get_plotlyjs
    return get_plotlyjs()


def html_fragment(figures: Any, kinds: Sequence[str] = ("time", "memory"), include_plotlyjs: bool = True) -> str:
    """An HTML ``<div>`` with the figures, for an offline page: plotly.js is inlined once from the installed package
    (``include_plotlyjs=False`` leaves it out when the page already has it), never loaded from a CDN.

    ``figures`` is a figure, a list of figures, or a :class:`GradGraph` (then ``kinds`` are drawn; ``"time"`` kinds
    are skipped for graphs without timings). plotly.js adds ~4.7 MB, so exports should offer this as an opt-in.

    >>> frag = html_fragment(g)                             # doctest: +SKIP
    """
    if isinstance(figures, GradGraph):
        timed = bool(figures.meta.get("timing"))
        figs = [figure(figures, k) for k in kinds if timed or k == "memory"]
    elif isinstance(figures, Iterable) and not hasattr(figures, "to_html"):
        figs = list(figures)
    else:
        figs = [figures]
    parts = ['<div class="graphwidget-charts">']
    if include_plotlyjs:
        parts.append(f'<script type="text/javascript">{plotlyjs()}</script>')
    parts += [f.to_html(full_html=False, include_plotlyjs=False, include_mathjax=False) for f in figs]
    parts.append("</div>")
    return "\n".join(parts)

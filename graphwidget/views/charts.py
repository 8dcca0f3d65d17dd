"""Plotly figures of a graph's numbers: time per op/module/line, the slowest nodes, a Pareto curve, saved memory.

plotly is imported on first use (``gw.profile`` does not pay for it). Every figure comes back with its text (op
names, source lines and module paths from the graph, titles) escaped (:func:`.plotly_inline.escape_labels`).
:func:`html_fragment` embeds figures in an offline page with plotly.js inlined from the installed package (never a
CDN; see :mod:`.plotly_inline`).
"""
from __future__ import annotations

from typing import Any, Callable, Dict, Iterable, List, Sequence, Tuple

from ..analysis.tables import ENGINE, metric_value, timing_table
from ..model.graph import GradGraph
from .plotly_inline import INK, SELECTED_LINE, escape_labels, figures_html, set_title_lines

# -- figures ------------------------------------------------------------------------------------------------------
_FWD, _BWD, _ENG = "#4c78a8", "#e45756", "#bab0ac"


def _go() -> Any:
    import plotly.graph_objects as go
    return go


def _check_timed(graph: GradGraph) -> None:
    if not graph.meta.get("timing"):
        raise ValueError("this graph has no timings: make it with gw.profile(fn, *args), or use kind='memory'.")


def _bars_by(graph: GradGraph, group: str, top: int) -> Tuple[List[str], List[float], List[float]]:
    table = timing_table(graph, top=None, group=group)
    engine = [r for r in table if r[group] == ENGINE]
    rows = [r for r in table if r[group] != ENGINE]
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
    return escape_labels(fig)


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
    return escape_labels(fig)


def _pareto_data(graph: GradGraph, phase: str, top: int) -> Tuple[List[str], List[float], List[float]]:
    vals = sorted(((metric_value(d, phase), n, d) for n, d in graph.nx.nodes(data=True)), key=lambda t: -t[0])
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
    return escape_labels(fig)


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
    return escape_labels(fig)


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
    return escape_labels(fig)


def memory_timeline(graph: GradGraph, report: Any = None, groups: int = 10, widget: Any = None,
                    beside: bool = False, height: int = 460, width: int = 460) -> Any:
    """The memory timeline of a graph profiled with ``memory=True``: one point per forward op and backward node
    (forward | backward), saved activations stacked by module, gradients above them, and the allocator's bytes as a
    line (its maximum within each step), the peak marked. Each point carries its node id (``customdata``): in the
    export a click selects that node in the viewer beside it; with ``widget`` (a :class:`GraphWidget` of this
    graph) the figure is a ``plotly.graph_objects.FigureWidget`` whose clicks set ``widget.selected`` and which
    marks the selected node's points; ``beside=True`` returns the two side by side (an ``ipywidgets.HBox``, the
    figure ``width`` pixels wide, the graph the rest).

    >>> g.memory().figure()                                  # doctest: +SKIP
    """
    from ..analysis.memory import memory_report, saved_by_module
    from ..analysis.memory_accounting import Accounting, has_memory
    if not has_memory(graph):
        raise ValueError("this graph has no memory record: profile it with gw.profile(fn, *args, memory=True).")
    if beside and widget is None:
        raise ValueError("memory_timeline: beside=True needs the widget to put it beside (widget=g.widget()); "
                         "g.memory().widget() makes both.")
    rep = report if report is not None else memory_report(graph)
    acc = Accounting(graph)
    go = _go()
    x = list(range(acc.n))
    ids = acc.point_nodes
    nodes = acc.nodes
    labels = [_node_label(v, nodes.get(v, {})) for v in ids]
    mib = 2.0 ** 20
    fig = go.Figure()
    palette = ["#4c78a8", "#72b7b2", "#54a24b", "#eeca3b", "#b279a2", "#ff9da6", "#9d755d", "#bab0ac",
               "#f58518", "#88d27a", "#439894", "#d6a5c9"]
    for k, (mod, vals) in enumerate(saved_by_module(graph, groups, acc).items()):
        fig.add_trace(go.Scatter(x=x, y=[v / mib for v in vals], name=f"saved: {mod}", stackgroup="mem",
                                 mode="lines", line=dict(width=0.5, color=palette[k % len(palette)]),
                                 customdata=ids, hovertext=labels,
                                 hovertemplate="%{hovertext}<br>%{y:.1f} MiB<extra>%{fullData.name}</extra>"))
    fig.add_trace(go.Scatter(x=x, y=[v / mib for v in acc.gradients], name="gradients", stackgroup="mem",
                             mode="lines", line=dict(width=0.5, color=_BWD), customdata=ids, hovertext=labels,
                             hovertemplate="%{hovertext}<br>%{y:.1f} MiB<extra>gradients</extra>"))
    mem = graph.meta["memory"]
    amax = mem.get("allocated_max")
    if amax:
        fig.add_trace(go.Scatter(x=x[:len(amax)], y=[(v or 0) / mib for v in amax], name="allocator (max in step)",
                                 mode="lines", line=dict(color=INK, width=1.5), customdata=ids, hovertext=labels,
                                 hovertemplate="%{hovertext}<br>%{y:.1f} MiB<extra>allocator</extra>"))
    p = rep.peak
    if p:
        fig.add_trace(go.Scatter(x=[p["point"]], y=[p["bytes"] / mib], mode="markers+text", name="peak",
                                 marker=dict(size=11, color="#d62728", symbol="x"), customdata=[p["node"]],
                                 text=[f"peak {p['bytes'] / mib:.1f} MiB"], textposition="top center",
                                 # the peak is the highest point: its text above it must not be cut at the axis
                                 cliponaxis=False,
                                 hovertext=[labels[p["point"]]],
                                 hovertemplate="%{hovertext}<br>%{y:.1f} MiB<extra>peak</extra>"))
    f = acc.forward_points
    if 0 < f < acc.n:
        fig.add_vline(x=f - 0.5, line_dash="dot", line_color="#888")
    fig.update_layout(
        # short enough for the column beside the graph; the rest of the peak is in the hover and g.memory()
        title="Memory",
        title_font_size=14,
        xaxis_title=("forward ops | backward nodes (order predicted: no backward ran)" if acc.predicted_backward
                     else "forward ops | backward nodes (in the order they ran)"), yaxis_title="MiB",
        height=height, hovermode="closest", meta={"graphwidget_link": "node"},
        # the legend under the plot: beside the graph the figure is narrow, and a legend at the side takes half
        legend=dict(orientation="h", yanchor="top", y=-0.22, xanchor="left", x=0, font_size=11),
        margin=dict(t=84, l=50, r=15, b=10),
        annotations=[dict(x=max(f - 1, 0) / 2, y=1.0, yref="paper", yanchor="bottom", text="forward",
                          showarrow=False),
                     dict(x=(f + acc.n) / 2, y=1.0, yref="paper", yanchor="bottom", text="backward",
                          showarrow=False)])
    fig = escape_labels(fig)
    if p:
        # two lines: a timeline of 460 px cuts one long line
        set_title_lines(fig, f"Memory: peak {p['bytes'] / mib:.1f} MiB ({p['source']})",
                        f"{p['phase']} #{p['node']} {p['op']}")
    if widget is None:
        return fig
    fw = go.FigureWidget(fig)
    _link_widget(fw, widget, ids)
    if not beside:
        return fw
    import ipywidgets
    # The figure gets a width of its own: plotly's widget sizes itself once, when drawn, and an output area is not
    # laid out yet then (autosize falls back to plotly's 700 px and overflows); the graph takes the rest of the row.
    # The row wraps: where the graph would get less than GRAPH_MIN_WIDTH beside the figure (an output area of
    # 800 px and less), the figure goes under the graph and the graph has the whole width; in an area narrower than
    # the figure, the figure's box scrolls sideways rather than widening the output or cutting the figure.
    widget.layout.flex, widget.layout.min_width = f"1 1 {GRAPH_MIN_WIDTH}px", f"min({GRAPH_MIN_WIDTH}px, 100%)"
    fw.layout.height, fw.layout.width = max(height, int(widget.height)), width
    box = ipywidgets.Box([fw], layout=ipywidgets.Layout(flex="0 1 auto", max_width="100%", overflow="auto hidden"))
    return ipywidgets.HBox([widget, box],
                           layout=ipywidgets.Layout(width="100%", align_items="flex-start", flex_flow="row wrap"))


#: The narrowest the graph gets beside the memory timeline before the timeline goes under it (CSS px).
GRAPH_MIN_WIDTH = 360


def _link_widget(fw: Any, widget: Any, ids: Sequence[int]) -> None:
    """Both ways between a timeline FigureWidget and a GraphWidget: a click on a point selects its node; the selected
    node's points (its forward op and its backward run) are marked by vertical lines."""
    base = tuple(fw.layout.shapes or ())

    def select(trace: Any, points: Any, state: Any) -> None:
        if points.point_inds:
            node = trace.customdata[points.point_inds[0]]
            widget.selected = int(node)

    def mark(change: Any) -> None:
        node = change["new"]
        lines = [dict(type="line", xref="x", yref="paper", x0=i, x1=i, y0=0, y1=1,
                      line=dict(color=SELECTED_LINE, width=2)) for i, v in enumerate(ids) if v == node]
        fw.layout.shapes = base + tuple(lines)

    for tr in fw.data:
        tr.on_click(select)
    widget.observe(mark, names="selected")
    if widget.selected is not None:
        mark({"new": widget.selected})


_KINDS: Dict[str, Callable[..., Any]] = {
    "time": dashboard, "op": lambda g, **kw: time_by(g, "op", **kw),
    "module": lambda g, **kw: time_by(g, "module", **kw), "source": lambda g, **kw: time_by(g, "source", **kw),
    "pareto": pareto, "top": top_nodes, "memory": memory, "memory_timeline": memory_timeline,
}


def figure(graph: GradGraph, kind: str = "time", **kwargs: Any) -> Any:
    """A ``plotly.graph_objects.Figure`` of ``graph``: ``"time"`` (dashboard), ``"op"``, ``"module"``, ``"source"``
    (time by group), ``"pareto"``, ``"top"`` (slowest nodes), ``"memory"`` (saved bytes by op / module) or
    ``"memory_timeline"`` (a ``memory=True`` profile's timeline, :func:`memory_timeline`).

    >>> fig = g.figure("time"); fig.show()                  # doctest: +SKIP
    """
    try:
        make = _KINDS[kind]
    except KeyError:
        raise ValueError(f"figure: kind must be one of {', '.join(_KINDS)}; got {kind!r}.") from None
    out = make(graph, **kwargs)
    # memory_timeline(..., beside=True) is a box of widgets, not a figure: its figure was escaped when made
    return escape_labels(out) if hasattr(out, "layout") and hasattr(out, "data") else out


def html_fragment(figures: Any, kinds: Sequence[str] = ("time", "memory"), include_plotlyjs: bool = True) -> str:
    """An HTML ``<div>`` with the figures, for an offline page: plotly.js is inlined once from the installed package
    (``include_plotlyjs=False`` leaves it out when the page already has it), never loaded from a CDN.

    ``figures`` is a figure, a list of figures, or a :class:`GradGraph` (then ``kinds`` are drawn; ``"time"`` kinds
    are skipped for graphs without timings). plotly.js adds megabytes (docs/performance.md, Sizes), so exports
    take charts only when asked.

    >>> frag = html_fragment(g)                             # doctest: +SKIP
    """
    if isinstance(figures, GradGraph):
        timed = bool(figures.meta.get("timing"))
        figs = [figure(figures, k) for k in kinds if timed or k == "memory"]
    elif isinstance(figures, Iterable) and not hasattr(figures, "to_html"):
        figs = list(figures)
    else:
        figs = [figures]
    parts = ['<div class="graphwidget-charts">', *figures_html(figs, include_plotlyjs), "</div>"]
    return "\n".join(parts)

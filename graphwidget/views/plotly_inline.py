"""The one place that puts plotly figures into offline HTML: plotly.js inlined from the installed ``plotly``
package (never a CDN), once per page, and every text label escaped so that names from a graph (op names, source
paths, module paths) cannot become markup — plotly renders a subset of HTML (``<a href>``, ``<b>``) in labels."""
from __future__ import annotations

import html
from typing import Any, List, Sequence

_TEXT_PROPS = ("x", "y", "text", "hovertext", "labels", "ids", "customdata", "name")


def plotlyjs() -> str:
    """The plotly.js bundle of the installed plotly package."""
    from plotly.offline import get_plotlyjs
    return get_plotlyjs()


def _esc(v: Any) -> Any:
    if isinstance(v, str):
        return html.escape(v, quote=False)
    if isinstance(v, (list, tuple)):
        return type(v)(_esc(x) for x in v)
    return v


# Escaping is applied by charts.figure() and again by figures_html() (a figure may come from either) and must
# happen once per trace: twice turns "&lt;" into "&amp;lt;" and the chart shows entity codes. The mark lives in the
# trace's own ``meta`` (a dict), so it survives copies of the figure (go.Figure(fig), fig.to_dict()).
_MARK = "graphwidget_labels_escaped"


def _is_escaped(tr: Any) -> bool:
    meta = getattr(tr, "meta", None)
    return (isinstance(meta, dict) and bool(meta.get(_MARK))) or bool(getattr(tr, "_graphwidget_escaped", False))


def _mark_escaped(tr: Any) -> None:
    meta = getattr(tr, "meta", None)
    if meta is None or isinstance(meta, dict):
        tr.meta = {**(meta or {}), _MARK: True}
    else:  # the user's own meta (a list, a string): keep it, mark the object instead
        tr._graphwidget_escaped = True


def escape_labels(fig: Any) -> Any:
    """Escape ``<``, ``>`` and ``&`` in every string plotly would render as text (trace data and names, axis tick
    labels and titles), once per trace (calling it again, or after adding traces, escapes only the new ones).
    Returns the same figure."""
    for tr in fig.data:
        if _is_escaped(tr):
            continue
        _mark_escaped(tr)
        for prop in _TEXT_PROPS:
            try:
                v = getattr(tr, prop)
            except AttributeError:
                continue
            if v is None:
                continue
            if hasattr(v, "tolist"):
                v = v.tolist()
            esc = _esc(v)
            if esc != v:
                tr[prop] = esc
    return fig


def figures_html(figures: Sequence[Any], include_plotlyjs: bool = True) -> List[str]:
    """HTML fragments for ``figures`` (plotly figures, or HTML strings passed through as trusted markup): the first
    figure carries plotly.js inline when ``include_plotlyjs``; labels are escaped."""
    out: List[str] = []
    first = include_plotlyjs
    for fig in figures:
        if isinstance(fig, str):
            out.append(fig)
            continue
        escape_labels(fig)
        if first:
            out.append(f'<script type="text/javascript">{plotlyjs()}</script>')
            first = False
        out.append(fig.to_html(full_html=False, include_plotlyjs=False, include_mathjax=False,
                               config={"displaylogo": False}))
    return out

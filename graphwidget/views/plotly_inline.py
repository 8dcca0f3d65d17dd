"""The one place that puts plotly figures into offline HTML: plotly.js inlined from the installed ``plotly``
package (never a CDN), once per page, and every text plotly draws escaped so that names from a graph (op names,
source paths, module paths, a diff's labels) cannot become markup — plotly renders a subset of HTML (``<a href>``,
``<b>``) in titles, axis titles, tick labels, hover text and legend names."""
from __future__ import annotations

import html
from typing import Any, List, Sequence

#: Keys whose string values plotly draws as text, and text may carry a subset of HTML (``<a href>``, ``<b>``,
#: ``<br>``): in traces (category data, hover text, labels, legend names, colour-bar and legend-group titles) and in
#: the layout (the title, axis titles and tick labels, annotations such as subplot titles, the legend title, menus).
#: Lists inherit their key (``"x": [...]``); ``legendgroup`` is not drawn but is escaped like the ``name`` it
#: usually repeats (no markup left in the figure). Templates (``hovertemplate``, ``texttemplate``) are left alone:
#: they are markup by design (``<extra>``) and written by graphwidget, and the values they show are escaped here.
TEXT_KEYS = frozenset({
    "x", "y", "z", "text", "hovertext", "labels", "ids", "customdata", "name", "legendgroup", "parents", "values",
    "header", "title", "ticktext", "tickvals", "categoryarray", "tickprefix", "ticksuffix", "label", "prefix",
    "suffix",
})


def plotlyjs() -> str:
    """The plotly.js bundle of the installed plotly package."""
    from plotly.offline import get_plotlyjs
    return get_plotlyjs()


def _esc(v: Any, key: Any = None) -> Any:
    """``v`` with ``<``, ``>`` and ``&`` escaped in every string that sits under one of :data:`TEXT_KEYS`; ``v``
    itself (the same object) when nothing needed escaping."""
    if isinstance(v, str):
        if key in TEXT_KEYS and ("<" in v or ">" in v or "&" in v):
            return html.escape(v, quote=False)
        return v
    if isinstance(v, dict):
        out = {k: _esc(x, k) for k, x in v.items()}
        return out if any(out[k] is not x for k, x in v.items()) else v
    if hasattr(v, "tolist") and getattr(getattr(v, "dtype", None), "kind", "") in ("O", "U", "S"):
        listed = v.tolist()  # numpy arrays of strings (of numbers: nothing to escape)
        esc = _esc(listed, key)
        return esc if esc is not listed else v
    if isinstance(v, (list, tuple)):
        items = [_esc(x, key) for x in v]
        return type(v)(items) if any(a is not b for a, b in zip(items, v)) else v
    return v


# Escaping is applied by charts.figure(), diff_figure.figure() and again by figures_html() (a figure may come from
# any) and must happen once per string: twice turns "&lt;" into "&amp;lt;" and the chart shows entity codes. A
# trace is marked in its own ``meta`` (a dict), so the mark survives copies (go.Figure(fig), fig.to_dict()). The
# layout changes after the fact (fig.update_layout(title=...)), so its mark records each escaped string by its place:
# a string that is not the one escaped there is new, and is escaped.
_MARK = "graphwidget_labels_escaped"


def _is_escaped(tr: Any) -> bool:
    meta = getattr(tr, "meta", None)
    return (isinstance(meta, dict) and bool(meta.get(_MARK))) or bool(getattr(tr, "_graphwidget_escaped", False))


def _mark_escaped(tr: Any, value: Any = True) -> None:
    meta = getattr(tr, "meta", None)
    if meta is None or isinstance(meta, dict):
        tr.meta = {**(meta or {}), _MARK: value}
    else:  # the user's own meta (a list, a string): keep it, mark the object instead
        tr._graphwidget_escaped = value


def _escape_trace(tr: Any) -> None:
    data = tr.to_plotly_json()
    for key, v in data.items():
        if key in ("meta", "type", "uid"):
            continue
        esc = _esc(v, key)
        if esc is not v:
            tr[key] = esc


def _escaped_paths(layout: Any) -> dict:
    """The layout's strings already escaped, by path ("title.text"), as :func:`_mark_escaped` recorded them."""
    meta = getattr(layout, "meta", None)
    done = meta.get(_MARK) if isinstance(meta, dict) else getattr(layout, "_graphwidget_escaped", None)
    return dict(done) if isinstance(done, dict) else {}


def _escape_layout(layout: Any) -> None:
    done = _escaped_paths(layout)
    data = layout.to_plotly_json()
    changed: dict = {}

    def walk(v: Any, key: Any, path: str) -> Any:
        if isinstance(v, str):
            if key not in TEXT_KEYS or done.get(path) == v or not ("<" in v or ">" in v or "&" in v):
                return v
            done[path] = esc = html.escape(v, quote=False)
            return esc
        if isinstance(v, dict):
            out = {k: walk(x, k, f"{path}.{k}") for k, x in v.items()}
            return out if any(out[k] is not x for k, x in v.items()) else v
        if isinstance(v, (list, tuple)):
            items = [walk(x, key, f"{path}.{j}") for j, x in enumerate(v)]
            return type(v)(items) if any(a is not b for a, b in zip(items, v)) else v
        return v

    for key, v in data.items():
        if key in ("template", "meta"):
            continue
        esc = walk(v, key, str(key))
        if esc is not v:
            changed[key] = esc
    for key, esc in changed.items():
        layout[key] = esc
    if changed:
        _mark_escaped(layout, done)


def escape_labels(fig: Any) -> Any:
    """Escape ``<``, ``>`` and ``&`` in every string plotly would render as text (:data:`TEXT_KEYS`: trace data,
    names and hover text; the title, axis titles, tick labels, annotations and legend title of the layout), once
    (calling it again, or after adding traces or changing the title, escapes only what is new). Returns the same
    figure."""
    for tr in fig.data:
        if _is_escaped(tr):
            continue
        _mark_escaped(tr)
        _escape_trace(tr)
    _escape_layout(fig.layout)
    return fig


def set_title_lines(fig: Any, *lines: str) -> Any:
    """Give an escaped figure (:func:`escape_labels`) a title of several lines: each line escaped, joined by plotly's
    ``<br>``, and recorded as escaped so a later :func:`escape_labels` leaves the breaks alone. Returns the figure."""
    text = "<br>".join(html.escape(line, quote=False) for line in lines)
    fig.layout.title.text = text
    _mark_escaped(fig.layout, {**_escaped_paths(fig.layout), "title.text": text})
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
                               config={"displaylogo": False, "responsive": True}))
        meta = getattr(fig.layout, "meta", None)
        if isinstance(meta, dict) and meta.get("graphwidget_link") == "node":
            out.append(SELECT_ON_CLICK)
    return out


#: The line that marks the selected node's points on a figure linked to the graph (the viewer's selection blue,
#: light theme: js/src/canvas/theme.ts).
SELECTED_LINE = "#2563eb"

#: The near-black of a line drawn as ink on a light figure (the memory timeline's allocator line); a linked figure on
#: a dark page redraws it near-white.
INK = "#222222"

#: After a figure whose points carry node ids (``layout.meta.graphwidget_link == "node"``, e.g. the memory
#: timeline): a click on a point selects that node in the page's viewer through its automation API
#: (``el.graphwidget.select(id)``, docs/viewer.md), and the viewer's selected node gets its points marked on the
#: figure (vertical lines in the viewer's selection blue). The viewer's script comes later in the page, so the API is
#: looked up when used; it has no selection event, so the figure reads ``selected()`` four times a second (one
#: integer compared). Inline, as the export's Content-Security-Policy allows.
SELECT_ON_CLICK = """<script>(function () {
  var divs = document.querySelectorAll(".plotly-graph-div");
  var div = divs[divs.length - 1];
  if (!div || !div.on) return;
  function api() {
    var root = document.querySelector(".graphwidget-root");
    return root && root.graphwidget;
  }
  div.on("plotly_click", function (ev) {
    var p = ev && ev.points && ev.points[0];
    if (!p) return;
    var id = Array.isArray(p.customdata) ? p.customdata[0] : p.customdata;
    var a = api();
    if (typeof id === "number" && a) a.select(id);
  });
  // Beside the viewer the figure is part of the page, which follows the reader's light/dark setting: so does it.
  var mq = window.matchMedia ? window.matchMedia("(prefers-color-scheme: dark)") : null;
  var T = ((div.layout && div.layout.template) || {}).layout || {};
  var grid = function (ax) { return (T[ax] || {}).gridcolor || "white"; };
  var LIGHT = {"paper_bgcolor": T.paper_bgcolor || "white", "plot_bgcolor": T.plot_bgcolor || "#E5ECF6",
    "font.color": (T.font || {}).color || "#2a3f5f", "xaxis.gridcolor": grid("xaxis"), "yaxis.gridcolor": grid("yaxis"),
    "xaxis.zerolinecolor": grid("xaxis"), "yaxis.zerolinecolor": grid("yaxis")};
  var DARK = {"paper_bgcolor": "#111317", "plot_bgcolor": "#161b22", "font.color": "#e6edf3",
    "xaxis.gridcolor": "#30363d", "yaxis.gridcolor": "#30363d", "xaxis.zerolinecolor": "#30363d",
    "yaxis.zerolinecolor": "#30363d"};
  var inked = [];  // traces drawn in near-black ink (the allocator's line): near-white on a dark page
  (div.data || []).forEach(function (tr, i) { if (tr.line && tr.line.color === "INK") inked.push(i); });
  function paint() {
    if (!window.Plotly) return;
    var dark = !!(mq && mq.matches);
    window.Plotly.relayout(div, dark ? DARK : LIGHT);
    if (inked.length) window.Plotly.restyle(div, {"line.color": dark ? "#e6edf3" : "INK"}, inked);
  }
  if (mq && mq.matches) paint();
  if (mq && mq.addEventListener) mq.addEventListener("change", paint);
  var base = ((div.layout && div.layout.shapes) || []).slice(), shown = null;
  setInterval(function () {
    var a = api();
    var id = a && a.selected ? a.selected() : null;
    if (id === shown || !window.Plotly) return;
    shown = id;
    var xs = [], tr = div.data && div.data[0];
    if (tr && tr.customdata && id !== null) {
      for (var i = 0; i < tr.customdata.length; i++) if (tr.customdata[i] === id) xs.push(tr.x[i]);
    }
    window.Plotly.relayout(div, {shapes: base.concat(xs.map(function (x) {
      return {type: "line", xref: "x", yref: "paper", x0: x, x1: x, y0: 0, y1: 1,
              line: {color: "SELECTED", width: 2}};
    }))});
  }, 250);
})();</script>""".replace("SELECTED", SELECTED_LINE).replace("INK", INK)

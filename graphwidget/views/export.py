"""``export_html``: one self-contained HTML file that shows a graph without Jupyter, a server or the network.

The page inlines the viewer bundle (its CSS is inside it) and the graph as gzip + base64 (base64 has no ``<``, ``>``
or ``&``, so no string in the graph can close the script element it sits in). A Content-Security-Policy forbids
every fetch, every form submission and any <base> element, so even a hostile string that somehow became markup
could not load anything, send anything or redirect the page's relative URLs.
"""
from __future__ import annotations

import base64
import html
from pathlib import Path
from typing import Any, Iterable, Optional, Sequence, Union

from .._version import __version__
from .assets import VIEWER_JS, read_bundle
from .diff_payload import diff_payload, is_diff
from .payload import graph_payload
from .plotly_inline import figures_html

__all__ = ["export_html", "render_html"]

# 'unsafe-inline' is what inline <script> elements need; nothing may be fetched (default-src 'none'), the layout
# worker starts from a blob: URL. default-src does not cover navigation or the document's base URL, so: no form may
# be submitted anywhere (form-action 'none'), and no <base> element may redirect relative URLs (base-uri 'none').
# Not written, because a policy in a <meta> element (the only kind a file can carry) cannot hold them and browsers
# ignore them there: frame-ancestors, sandbox, report-uri/report-to. Nor navigate-to (it would have limited where
# links and scripts navigate): it was removed from the CSP specification (w3c/webappsec-csp#564) and never shipped.
CSP = ("default-src 'none'; script-src 'unsafe-inline'; style-src 'unsafe-inline'; worker-src blob:; "
       "img-src data: blob:; font-src data:; form-action 'none'; base-uri 'none'")


#: The viewer and, beside it, the figures linked to its nodes (the memory timeline): a row as tall as the viewer
#: alone would be, the figures' column scrolling on its own; one column under the other on a narrow window.
SPLIT_STYLE = (".gw-split{display:flex;align-items:stretch;height:HEIGHT}"
               ".gw-split>#gw-root{flex:1 1 62%;min-width:0;height:auto}"
               ".gw-beside{flex:0 1 38%;min-width:360px;overflow:auto;box-sizing:border-box;padding:8px 12px;"
               "border-left:1px solid #d0d7de;font:13px system-ui,-apple-system,'Segoe UI',Roboto,Arial,sans-serif}"
               ".gw-beside table{border-collapse:collapse;font-size:12px}"
               ".gw-beside th,.gw-beside td{text-align:left;padding:2px 8px 2px 0;vertical-align:top;"
               "white-space:nowrap}"
               "@media (prefers-color-scheme:dark){.gw-beside{border-left-color:#30363d}}"
               "@media (max-width:1000px){.gw-split{flex-direction:column;height:auto}"
               ".gw-split>#gw-root{height:70vh;flex:none}.gw-beside{border-left:0;min-width:0}}")


def _inline_script(js: str) -> str:
    # "</script" inside an inline script would end the element early; "<\/" means the same in any JS string.
    return js.replace("</script", "<\\/script").replace("<!--", "<\\!--")


def _linked(fig: Any) -> bool:
    """A figure whose points carry node ids of the graph (``layout.meta.graphwidget_link``: the memory timeline)."""
    meta = getattr(getattr(fig, "layout", None), "meta", None)
    return isinstance(meta, dict) and meta.get("graphwidget_link") == "node"


def render_html(obj: Any, *, title: Optional[str] = None, extra_html: Optional[Iterable[str]] = None,
                charts: Optional[Sequence[Any]] = None, beside: Optional[Sequence[Any]] = None,
                colour: Optional[str] = None) -> str:
    """The HTML text :func:`export_html` writes."""
    from .nway_view import is_nway
    if is_nway(obj):
        return _render_nway(obj, title=title, extra_html=extra_html, charts=list(charts or []) + list(beside or []))
    if is_diff(obj):  # two graphs side by side: the same viewer mounts its diff view on data-kind="diff"
        dpayload = diff_payload(obj, caller="export_html")
        kind, colour_default, gz = ' data-kind="diff"', dpayload.default_colour, dpayload.gzipped()
        metrics: Sequence[str] = ()
        default_title = f"{dpayload.labels[0]} vs {dpayload.labels[1]}"
    else:
        payload = graph_payload(obj, caller="export_html")
        kind, colour_default, gz = "", payload.default_colour, payload.gzipped()
        metrics = payload.metrics
        default_title = payload.meta.get("title") or "autograd graph"
    if colour is not None and colour not in metrics:
        raise ValueError(f"export_html: colour={colour!r} is not a metric this graph has values for; use one of "
                         f"{', '.join(metrics) or '(none: a diff opens on its own colour)'}"
                         + (" (record memory with gw.profile(..., memory=True))" if colour == "peak_bytes" else ""))
    viewer = read_bundle(VIEWER_JS)
    data = base64.b64encode(gz).decode("ascii")
    page_title = title if title is not None else default_title
    # Figures linked to the graph's nodes sit beside the viewer, where a click on one selects a node in plain sight.
    side = list(beside or []) + [c for c in charts or () if _linked(c)]
    below = [c for c in charts or () if not _linked(c)]
    # plotly.js is inlined once, before the first figure in the page's order: the column beside comes first
    side_html = figures_html(side)
    extras = list(extra_html or []) + figures_html(below, include_plotlyjs=all(isinstance(c, str) for c in side))
    csp = CSP if not (below or side) else CSP.replace("script-src 'unsafe-inline'",
                                                      "script-src 'unsafe-inline' 'unsafe-eval'")
    extra_block = (f'<section class="gw-extra">\n{chr(10).join(extras)}\n</section>\n' if extras else "")
    height = "86vh" if extras else "100vh"
    root = '<div id="gw-root" class="graphwidget-root" data-gw-state="loading"></div>\n'
    if side_html:
        root = (f'<div class="gw-split">\n{root}<aside class="gw-beside">\n{chr(10).join(side_html)}\n</aside>\n'
                "</div>\n")
    return (
        _head(csp, page_title, f"#gw-root{{height:{height};border:0}}"
              f"{SPLIT_STYLE.replace('HEIGHT', height) if side_html else ''}")
        + f"{root}"
        "<noscript>This page needs JavaScript to draw the graph.</noscript>\n"
        f'<script type="application/octet-stream" id="gw-graph-data"{kind} data-encoding="gzip+base64" '
        f'data-colour="{html.escape(colour or colour_default)}">{data}</script>\n'
        f"{extra_block}"
        f"<script>{_inline_script(viewer)}</script>\n"
        "</body>\n</html>\n"
    )


def _head(csp: str, page_title: str, style: str) -> str:
    """The page up to ``<body>``: the content security policy, the title and the page's style (``style`` after the
    shared rules). The page follows the reader's light/dark setting like the viewer does (charts keep their own
    white card)."""
    return (
        "<!doctype html>\n"
        '<html lang="en">\n<head>\n<meta charset="utf-8">\n'
        f'<meta http-equiv="Content-Security-Policy" content="{csp}">\n'
        '<meta name="viewport" content="width=device-width, initial-scale=1">\n'
        f'<meta name="generator" content="graphwidget {html.escape(__version__)}">\n'
        f"<title>{html.escape(str(page_title))}</title>\n"
        "<style>html{color-scheme:light dark}html,body{margin:0;padding:0;background:#fff;color:#1f2328}"
        "@media (prefers-color-scheme:dark){html,body{background:#111317;color:#e6edf3}}"
        ".gw-extra{padding:16px;font:14px system-ui,-apple-system,'Segoe UI',Roboto,Arial,sans-serif}"
        f"{style}</style>\n</head>\n<body>\n"
    )


def _render_nway(obj: Any, *, title: Optional[str], extra_html: Optional[Iterable[str]],
                 charts: Optional[Sequence[Any]]) -> str:
    """N panes on one page (views/nway_view.py): the verdict table, then one synced pane per side."""
    from .nway_view import STYLE, as_nway, page_body
    d = as_nway(obj, "export_html")
    body, colour, gz = page_body(d)
    data = base64.b64encode(gz).decode("ascii")
    page_title = title if title is not None else " vs ".join(d.sides)
    extras = list(extra_html or []) + figures_html(list(charts or []))
    csp = CSP if not charts else CSP.replace("script-src 'unsafe-inline'", "script-src 'unsafe-inline' 'unsafe-eval'")
    extra_block = (f'<section class="gw-extra">\n{chr(10).join(extras)}\n</section>\n' if extras else "")
    return (
        _head(csp, page_title, STYLE)
        + f"{body}\n"
        "<noscript>This page needs JavaScript to draw the graphs.</noscript>\n"
        f'<script type="application/octet-stream" id="gw-nway-data" data-kind="nway" data-encoding="gzip+base64" '
        f'data-colour="{colour}">{data}</script>\n'
        f"{extra_block}"
        f"<script>{_inline_script(read_bundle(VIEWER_JS))}</script>\n"
        "</body>\n</html>\n"
    )


def export_html(obj: Any, path: Union[str, Path], *, title: Optional[str] = None,
                extra_html: Optional[Iterable[str]] = None, charts: Optional[Sequence[Any]] = None,
                beside: Optional[Sequence[Any]] = None, colour: Optional[str] = None) -> Path:
    """Write a self-contained HTML viewer for ``obj`` to ``path`` and return the path.

    ``obj``: a GradGraph (anything with ``.to_json()``), a dict in schema form, or its JSON string; or a Diff
    (``gw.diff`` / ``gw.compare``), its ``to_dict()`` or JSON, shown as the two graphs side by side; or a MultiDiff
    (``gw.compare`` of N sides) or a RankSet, shown as the verdict table and one synced pane per side
    (``views/nway_view.py``).
    ``title``: the page title (default: the graph's ``meta.title``; for a diff "A vs B" with its labels).
    ``extra_html``: trusted HTML fragments appended below the viewer (not escaped — do not pass graph strings).
    ``charts``: plotly figures (or HTML strings) appended below the viewer; plotly.js is inlined from the installed
    ``plotly`` package. A figure whose points are the graph's nodes (``g.memory().figure()``, the memory timeline)
    goes beside the viewer instead, and a click on one of its points selects that node.
    ``beside``: figures (or trusted HTML strings) for that column beside the viewer.
    ``colour``: the metric the viewer opens coloured by (one the graph has, e.g. ``"peak_bytes"``; default: the
    graph's own default).
    """
    out = Path(path)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(render_html(obj, title=title, extra_html=extra_html, charts=charts, beside=beside, colour=colour),
                   encoding="utf-8")
    return out

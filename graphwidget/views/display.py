"""Rich display of graphs and diffs in notebooks: the widget where widgets run, and a static fallback everywhere
else (GitHub, nbviewer, nbconvert HTML, VS Code without the widget renderer): the summary line as ``text/plain`` and a
small HTML table of the headline numbers and the top nodes as ``text/html``."""
from __future__ import annotations

import html
from typing import Any, Dict, List, Tuple

from .._util.text import human_bytes

_WIDGET_MIME = "application/vnd.jupyter.widget-view+json"


def _rows_html(rows: List[Tuple[str, str]]) -> str:
    return "".join(f"<tr><th style='text-align:left'>{html.escape(k)}</th><td>{html.escape(v)}</td></tr>"
                   for k, v in rows)


def static_html(graph: Any, top: int = 8) -> str:
    """A self-contained HTML summary of a GradGraph: headline numbers and its top nodes (by backward time when
    profiled, else by gradient bytes written). Every string from the graph is escaped."""
    s = graph.summary()
    rows = [("nodes", str(s["nodes"])), ("edges", str(s["edges"])),
            ("saved for backward", human_bytes(s["saved_bytes"])), ("gradients written", human_bytes(s["grad_bytes"]))]
    if s.get("backward_ms") is not None:
        rows.append(("forward / backward", f"{s['forward_ms']:.2f} ms / {s['backward_ms']:.2f} ms"))
    key = "bwd_ms" if graph.meta.get("timed") else "grad_bytes"
    nodes = sorted(graph.nx.nodes(data=True), key=lambda nd: -(nd[1].get(key) or 0))[:top]
    body = "".join(
        "<tr>" + "".join(f"<td>{html.escape(str(c))}</td>" for c in (
            n, d.get("op"), (f"{d['bwd_ms']:.3f} ms" if key == "bwd_ms" and d.get("bwd_ms") is not None
                             else human_bytes(d.get("grad_bytes") or 0)),
            d.get("source") or "", d.get("module") or "")) + "</tr>"
        for n, d in nodes)
    title = html.escape(str(graph.meta.get("title") or "autograd graph"))
    return (f"<div class='graphwidget-static'><b>graphwidget: {title}</b>"
            f"<table>{_rows_html(rows)}</table>"
            f"<table><thead><tr><th>id</th><th>op</th><th>{'backward' if key == 'bwd_ms' else 'grad written'}</th>"
            f"<th>source</th><th>module</th></tr></thead><tbody>{body}</tbody></table>"
            f"<small>Run the notebook with widgets enabled to explore the graph.</small></div>")


def mimebundle(obj: Any, make_widget: Any = None, static: Any = None, include: Any = None,
               exclude: Any = None) -> Dict[str, Any]:
    """``obj``'s display: the widget view (when the front end is built and widgets can be made) plus the static
    ``text/html`` and a one-line ``text/plain``. Never raises: a missing bundle leaves the static parts and says so
    in the plain text."""
    plain = repr(obj)
    data: Dict[str, Any] = {"text/plain": plain}
    try:
        data["text/html"] = (static or static_html)(obj)
    except Exception as exc:  # noqa: BLE001 - a summary must never break the display
        data["text/html"] = f"<pre>{html.escape(plain)} (summary unavailable: {html.escape(str(exc))})</pre>"
    try:
        w = make_widget() if make_widget is not None else obj.widget()
        wdata = w._repr_mimebundle_(include=include, exclude=exclude)
        if isinstance(wdata, tuple):
            wdata = wdata[0]
        if wdata and _WIDGET_MIME in wdata:
            data[_WIDGET_MIME] = wdata[_WIDGET_MIME]
    except Exception as exc:  # noqa: BLE001 - e.g. BundleMissingError: show the static view, say why
        data["text/plain"] = f"{plain}\n(interactive view unavailable: {exc})"
    return data

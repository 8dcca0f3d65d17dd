"""The widget in VS Code's notebook-renderer conditions, as far as they can be reproduced without VS Code: the
bundle runs in an iframe whose page has a strict Content-Security-Policy (no `blob:` workers, `worker-src
'none'`; scripts only from its own origin, no inline script; no inline styles). The layout worker is refused, so
the layout must fall back to the main thread; the view must draw, with its stylesheet, and work.

What this does not reproduce: VS Code's own message passing between the extension host and the webview (the
widget model there is ipywidgets' in the webview; here a fake model with the same interface), and its theme CSS
variables (--vscode-*; the view follows what the page's colours are, see test_citizenship.py).
"""
from __future__ import annotations

import base64
import json
from typing import Any, Dict, List

import fixtures as fx
from pagekit import FAKE_MODEL_JS, STATIC

from graphwidget.views.widget import GraphWidget

ORIGIN = "http://vscode.test/"
STRICT_CSP = ("default-src 'none'; script-src 'self'; style-src 'self'; img-src data:; font-src 'none'; "
              "connect-src 'none'; worker-src 'none'; child-src 'none'; frame-src 'none'")

OUTER = f"""<!doctype html><html><head><meta charset="utf-8"></head><body style="margin:0">
<iframe id="webview" src="{ORIGIN}webview.html" style="width:1200px;height:700px;border:0"></iframe>
</body></html>"""

WEBVIEW = """<!doctype html><html><head><meta charset="utf-8"></head><body style="margin:0">
<div id="out"></div>
<script type="application/json" id="state">%s</script>
<script type="module" src="./boot.js"></script>
</body></html>"""

#: no inline script is allowed: the boot code is a file of the webview's own origin
BOOT = FAKE_MODEL_JS + """
window.errors = [];
addEventListener("error", (e) => window.errors.push(String(e.message)));
addEventListener("unhandledrejection", (e) => window.errors.push(String(e.reason)));
window.violations = [];
addEventListener("securitypolicyviolation", (e) => window.violations.push(e.violatedDirective + " " + e.blockedURI));
const state = JSON.parse(document.getElementById("state").textContent);
const model = new FakeModel({ ...state, _graph: toView(state._graph) }, ["selected"]);
window.model = model;
const mod = await import("./widget.js");
mod.default.render({ model, el: document.getElementById("out") });
"""


def state_of(graph: Any) -> Dict[str, Any]:
    w = GraphWidget(graph)
    return {"_graph": base64.b64encode(w._graph).decode("ascii"), "selected": w.selected, "colour_by": w.colour_by,
            "height": w.height}


def test_widget_renders_in_a_strict_csp_iframe_without_blob_workers(watched: Any) -> None:
    graph = fx.mlp(4)
    w = watched(viewport={"width": 1300, "height": 800})
    console: List[str] = []
    w.page.on("console", lambda m: console.append(f"{m.type}: {m.text}"))
    csp = {"Content-Security-Policy": STRICT_CSP}
    w.ctx.route(ORIGIN + "webview.html", lambda r: r.fulfill(
        body=WEBVIEW % json.dumps(state_of(graph)), headers={"Content-Type": "text/html", **csp}))
    w.ctx.route(ORIGIN + "boot.js", lambda r: r.fulfill(body=BOOT, headers={"Content-Type": "text/javascript", **csp}))
    w.ctx.route(ORIGIN + "widget.js", lambda r: r.fulfill(path=str(STATIC / "widget.js"),
                                                           headers={"Content-Type": "text/javascript", **csp}))
    w.serve(ORIGIN + "index.html", body=OUTER, ctype="text/html")
    w.page.goto(ORIGIN + "index.html")
    frame = w.page.frame_locator("#webview")
    frame.locator('.graphwidget-root[data-gw-state="ready"]').wait_for(timeout=60_000)
    inner = next(f for f in w.page.frames if f.url.endswith("webview.html"))
    api = "document.querySelector('.graphwidget-root').graphwidget"
    info = inner.evaluate(f"""async () => {{ const a = {api}; await a.ready;
        return {{ worker: a.timings.worker, algorithm: a.timings.algorithm, nodes: a.graphNodeCount(), labels: a.labelCount(),
                  errors: window.errors, violations: window.violations,
                  styled: getComputedStyle(document.querySelector('.gw-toolbar')).display,
                  findingsStyled: getComputedStyle(document.querySelector('.graphwidget-root'))
                    .getPropertyValue('--gw-fd-warning').trim() }}; }}""")
    assert info["worker"] == "main-thread", "the worker was refused: the layout ran on the main thread"
    assert info["nodes"] == len(graph["nodes"]) and info["labels"] > 0
    assert info["errors"] == [], f"errors in the webview: {info['errors']}"
    assert info["styled"] == "flex", "the stylesheet applies under style-src 'self' (constructed, not a <style>)"
    assert info["findingsStyled"] == "#c2410c", "so does the Findings tab's own stylesheet"
    assert any(v.startswith("worker-src") for v in info["violations"]), "the CSP really refused the worker"
    assert all(v.startswith("worker-src") or v.startswith("style-src") for v in info["violations"]), info["violations"]
    # it works: a click on a node selects it and writes the trait back
    pos = inner.evaluate(f"async () => {{ const a = {api}; await a.expandAll(); a.centre(0); return a.nodeScreenPosition(0); }}")
    box = w.page.locator("#webview").bounding_box()
    w.page.mouse.click(box["x"] + pos["x"], box["y"] + pos["y"])
    inner.wait_for_function("() => window.model.saved.length > 0")
    assert inner.evaluate("() => window.model.get('selected')") == graph["nodes"][0]["id"]
    assert w.errors == [] and w.requests == [], (w.errors, w.requests)

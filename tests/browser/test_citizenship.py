"""The widget as a citizen of a notebook page: the page keeps scrolling under the mouse wheel, the view follows
size changes and the host's theme, narrow columns put the side panel below, the Top nodes table and the Inspector
fit their panel. The widget bundle's `render` runs on a long page (like a notebook) with a fake model; the state
comes from a real GraphWidget, so the payload is the real one.
"""
from __future__ import annotations

import base64
import json
from pathlib import Path
from typing import Any, Dict

import fixtures as fx
import pytest
from model_graphs import SCREENS
from pagekit import API, FAKE_MODEL_JS, STATIC, wait_until

from graphwidget.views.widget import GraphWidget

ORIGIN = "http://notebook.test/"

#: a notebook-like page: text above and below the output, so the page scrolls; `hostStyle` sets the host's CSS
PAGE = """<!doctype html><html><head><meta charset="utf-8"><style>
body { margin: 0; font: 14px sans-serif; } .cell { height: 700px; padding: 8px; } %(extra)s
</style></head><body>
<div class="cell">cell above</div>
<div id="host" style="%(host)s"></div>
<div class="cell">cell below</div>
<script type="module">
%(fake_model)s
const mod = await import("./widget.js");
const state = JSON.parse(document.getElementById("state").textContent);
mod.default.render({ model: new FakeModel({ ...state, _graph: toView(state._graph) }), el: document.getElementById("host") });
</script>
<script type="application/json" id="state">%(state)s</script>
</body></html>"""


def state_of(graph: Any, **kw: Any) -> Dict[str, Any]:
    w = GraphWidget(graph, **kw)
    return {"_graph": base64.b64encode(w._graph).decode("ascii"), "selected": w.selected, "colour_by": w.colour_by,
            "height": w.height}


def open_notebook(watched: Any, graph: Any, *, width: int = 1400, host: str = "width: 100%", extra: str = "",
                  viewport_h: int = 900, scheme: str = "light", **kw: Any) -> Any:
    w = watched(viewport={"width": width, "height": viewport_h}, color_scheme=scheme)
    w.serve(ORIGIN + "index.html", body=PAGE % {"state": json.dumps(state_of(graph, **kw)), "host": host, "extra": extra,
                                                  "fake_model": FAKE_MODEL_JS},
            ctype="text/html")
    w.serve(ORIGIN + "widget.js", STATIC / "widget.js")
    w.page.goto(ORIGIN + "index.html")
    w.page.wait_for_selector('.graphwidget-root[data-gw-state="ready"]', timeout=60_000)
    w.page.evaluate(f"() => {API}.ready")
    return w


def api(page: Any, expr: str) -> Any:
    return page.evaluate(f"async () => {{ const a = {API}; return await ({expr}); }}")


def canvas_follows(page: Any) -> bool:
    """True once the canvas has the pane's current size: the pane's ResizeObserver ran (and moved its camera)."""
    return bool(page.evaluate("""() => { const p = document.querySelector('.gw-pane').getBoundingClientRect();
        const c = document.querySelector('.gw-canvas'), d = devicePixelRatio || 1;
        return c.width === Math.round(p.width * d) && c.height === Math.round(p.height * d); }"""))


def camera_scale(page: Any) -> float:
    """The drawn distance between two nodes: changes with the zoom, not with a scroll."""
    a, b = api(page, "[a.nodeScreenPosition(0), a.nodeScreenPosition(1)]")
    return abs(a["x"] - b["x"]) + abs(a["y"] - b["y"])


def test_wheel_scrolls_the_page_unless_ctrl_or_clicked_into(watched: Any) -> None:
    w = open_notebook(watched, fx.mlp(4))
    page = w.page
    page.evaluate("() => document.getElementById('host').scrollIntoView()")
    box = page.locator(".gw-canvas").bounding_box()
    page.mouse.move(box["x"] + box["width"] / 2, box["y"] + box["height"] / 2)
    before, y0 = camera_scale(page), page.evaluate("scrollY")
    page.mouse.wheel(0, 300)
    page.wait_for_function(f"() => scrollY > {y0}")
    assert camera_scale(page) == pytest.approx(before), "a plain wheel scrolls the page, it does not zoom"
    assert page.locator(".gw-hint").is_visible() and "wheel to zoom" in page.locator(".gw-hint").text_content()
    # Ctrl + wheel zooms and leaves the page where it is
    page.evaluate("() => document.getElementById('host').scrollIntoView()")
    box = page.locator(".gw-canvas").bounding_box()
    page.mouse.move(box["x"] + box["width"] / 2, box["y"] + box["height"] / 2)
    y1 = page.evaluate("scrollY")
    page.keyboard.down("Control")
    page.mouse.wheel(0, -300)
    page.keyboard.up("Control")
    assert wait_until(lambda: camera_scale(page) > before * 1.1)
    assert page.evaluate("scrollY") == y1
    # clicked into: the wheel zooms without Ctrl, until the focus leaves the graph
    page.mouse.click(box["x"] + 5, box["y"] + box["height"] - 5)
    zoomed = camera_scale(page)
    page.mouse.wheel(0, 300)
    assert wait_until(lambda: camera_scale(page) < zoomed * 0.9)
    assert page.evaluate("scrollY") == y1
    page.mouse.click(5, 5)  # elsewhere on the page
    page.mouse.move(box["x"] + box["width"] / 2, box["y"] + box["height"] / 2)
    out = camera_scale(page)
    page.mouse.wheel(0, 200)
    page.wait_for_function(f"() => scrollY > {y1}")
    assert camera_scale(page) == pytest.approx(out)
    w.assert_clean()


@pytest.mark.slow
def test_resize_refits_an_unmoved_view_and_keeps_the_centre_of_a_moved_one(watched: Any) -> None:
    graph = fx.random_dag(40, seed=3)

    def where(page: Any, node: int) -> Dict[str, float]:
        """Node position relative to the canvas."""
        return api(page, f"""(() => {{ const r = document.querySelector('.gw-canvas').getBoundingClientRect();
            const p = a.nodeScreenPosition({node}); return {{ x: p.x - r.left, y: p.y - r.top }}; }})()""")

    w = open_notebook(watched, graph, host="width: 1300px")
    page = w.page
    page.evaluate("() => { document.getElementById('host').style.width = '820px'; }")
    assert wait_until(lambda: canvas_follows(page))
    resized = [where(page, k) for k in (0, 10, 39)]
    fresh = open_notebook(watched, graph, host="width: 820px")
    opened = [where(fresh.page, k) for k in (0, 10, 39)]
    for a, b in zip(resized, opened):
        assert a["x"] == pytest.approx(b["x"], abs=1.5) and a["y"] == pytest.approx(b["y"], abs=1.5), \
            "a view nobody moved is the opening view of its new size"
    # moved by the user: the point in the middle stays in the middle
    page.evaluate("() => document.getElementById('host').scrollIntoView()")
    box = page.locator(".gw-canvas").bounding_box()
    page.mouse.move(box["x"] + 200, box["y"] + 200)
    page.mouse.down()
    page.mouse.move(box["x"] + 260, box["y"] + 230, steps=4)
    page.mouse.up()
    before = where(page, 10)
    assert before != resized[1], "the drag moved the view"
    mid0 = (box["width"] / 2, box["height"] / 2)
    page.evaluate("() => { document.getElementById('host').style.width = '1100px'; }")
    assert wait_until(lambda: canvas_follows(page))
    box2 = page.locator(".gw-canvas").bounding_box()
    after = where(page, 10)
    assert after["x"] - box2["width"] / 2 == pytest.approx(before["x"] - mid0[0], abs=1.5)
    assert after["y"] - box2["height"] / 2 == pytest.approx(before["y"] - mid0[1], abs=1.5)
    w.assert_clean()
    fresh.assert_clean()


def test_narrow_column_puts_the_panel_below_and_keeps_one_toolbar_line(watched: Any) -> None:
    w = open_notebook(watched, fx.mlp(4), width=700)
    page = w.page
    assert page.locator(".gw-side").is_hidden(), "the panel waits for a selection: the graph gets the room"
    api(page, f"a.select({fx.mlp(4)['nodes'][3]['id']})")
    canvas = page.locator(".gw-canvas").bounding_box()
    side = page.locator(".gw-side").bounding_box()
    legend = page.locator(".gw-legend").bounding_box()
    bar = page.locator(".gw-toolbar").bounding_box()
    assert side["y"] >= canvas["y"] + canvas["height"] - 1, "the side panel sits below the graph"
    assert canvas["width"] >= 650, f"the graph keeps the width ({canvas['width']:.0f} px)"
    assert legend["y"] + legend["height"] <= side["y"] + 1, "the legend stays out of the Inspector"
    assert bar["height"] <= 44, f"the toolbar wrapped ({bar['height']:.0f} px tall)"
    for sel in (".gw-search", ".gw-colour", "button[data-action=fit]", ".gw-paneltoggle"):
        b = page.locator(sel).bounding_box()
        assert b["x"] + b["width"] <= 700 and b["y"] < bar["y"] + bar["height"], f"{sel} is off the toolbar"
    w.assert_clean()


def test_follows_jupyterlab_theme_variables(watched: Any) -> None:
    """JupyterLab's dark theme sets --jp-* variables on the page: canvas, minimap and legend follow them."""
    dark = ":root { --jp-layout-color0: #111111; --jp-layout-color1: #212121; --jp-layout-color2: #303030; " \
           "--jp-ui-font-color1: rgba(255,255,255,0.87); --jp-ui-font-color2: rgba(255,255,255,0.54); " \
           "--jp-border-color2: #424242; } body { background: #111111; }"
    w = open_notebook(watched, fx.random_dag(900, seed=4), extra=dark)
    page = w.page
    px = page.evaluate("""() => { const c = document.querySelector('.gw-canvas');
        return Array.from(c.getContext('2d').getImageData(1, 1, 1, 1).data); }""")
    assert px[:3] == [17, 17, 17], f"the canvas is the notebook's background, got {px}"
    legend = page.locator(".gw-legend").evaluate("e => getComputedStyle(e).backgroundColor")
    assert legend == "rgb(33, 33, 33)"
    api(page, "a.expandAll()")  # big enough to need the minimap
    page.click("button[data-action=minimap]") if page.locator(".gw-minimap").is_hidden() else None
    mm = page.locator(".gw-minimap").evaluate("e => getComputedStyle(e).backgroundColor")
    assert mm == "rgb(33, 33, 33)"
    w.assert_clean()


def test_top_nodes_fit_the_panel(watched: Any, tmp_path: Path) -> None:
    """Sources as file:line relative to the folder they share (full path on hover), modules whole, the sorted
    column in view, at 1400 px."""
    import torch

    import graphwidget as gw
    torch.manual_seed(0)
    layer = torch.nn.TransformerEncoderLayer(d_model=16, nhead=2, dim_feedforward=32, batch_first=True)
    enc = torch.nn.TransformerEncoder(layer, num_layers=3, enable_nested_tensor=False)
    graph = gw.profile(lambda m, x: m(x).pow(2).mean(), enc, torch.randn(2, 5, 16), repeat=1, warmup=0)
    w = open_notebook(watched, graph, width=1400)
    page = w.page
    page.click(".gw-paneltoggle")  # the panel waits for a selection, or for the Panel button
    page.click(".gw-tab[data-tab=top]")
    page.evaluate("() => document.getElementById('host').scrollIntoView()")
    SCREENS.mkdir(parents=True, exist_ok=True)
    page.locator(".graphwidget-root").screenshot(path=str(SCREENS / "top_nodes_1400.png"))
    side = page.locator(".gw-side").bounding_box()
    table = page.locator(".gw-toptable").bounding_box()
    assert table["x"] + table["width"] <= side["x"] + side["width"] + 1, "every column fits the panel"
    sorted_th = page.locator(".gw-toptable [aria-sort=descending]")
    assert sorted_th.get_attribute("data-key") == "bwd_ms"
    th = sorted_th.bounding_box()
    assert th["x"] + th["width"] <= side["x"] + side["width"] + 1, "the sort column is in view"
    cells = page.evaluate("""() => [...document.querySelectorAll('.gw-toptable tbody tr')].slice(0, 40).map((tr) => {
        const m = tr.querySelector('.gw-modcell'), s = tr.querySelector('.gw-src') || { textContent: '', title: '' };
        return { module: m.textContent, moduleCut: m.scrollWidth > m.clientWidth + 1, src: s.textContent, full: s.title }; })""")
    for c in cells:
        assert not c["moduleCut"], f"module cut: {c['module']}"
        if c["full"]:
            path = c["full"].splitlines()[0]
            assert c["src"].lstrip("…") and path.endswith(c["src"].lstrip("…")), c
            assert not c["src"].startswith("/"), f"source shown with its common prefix: {c['src']}"
    w.assert_clean()


def test_untraced_inspector_has_no_empty_where(watched: Any) -> None:
    w = open_notebook(watched, fx.random_dag(30, traced=False, modules=False))
    api(w.page, "a.select(3)")
    text = api(w.page, "a.inspectorText()")
    assert "Cost" in text or "COST" in text
    assert "where" not in text.lower(), text[:300]
    w.assert_clean()


def test_small_model_at_default_size_opens_with_labels(watched: Any) -> None:
    """A ~50-node real model (one TransformerEncoderLayer, traced) in a widget of the default 600 px height, in a
    notebook column 1000 px wide: the first view is readable, not a field of blank boxes."""
    from model_graphs import model_graph
    doc = model_graph("encoder1")
    w = open_notebook(watched, doc, width=1000)
    page = w.page
    # all of it on screen (flat, or as its modules when flat would not read), labelled legibly
    assert api(page, "a.outside()") == []
    st = api(page, "a.labelStats()")
    assert st["items"] >= 5 and st["labelled"] >= 0.8 * st["items"], st
    w.assert_clean()

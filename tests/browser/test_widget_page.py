"""The anywidget bundle outside Jupyter: its `render({model, el})` on a page with a small fake model.

The page and the bundle come from a fake origin (http://widget.test, answered by Playwright's router, no server);
every other request is refused and recorded. The model state comes from a real GraphWidget, so the Python → JS
payload (gzip bytes in `_graph`, as a DataView like Jupyter hands it over) is the real one.
"""
from __future__ import annotations

import base64
import json
from typing import Any, Dict

import fixtures as fx
import pytest
import traitlets
from nway_models import three_ways
from pagekit import FAKE_MODEL_JS, STATIC, assert_centred, wait_ready

import graphwidget as gw
from graphwidget.views.widget import GraphWidget

ORIGIN = "http://widget.test/"
API = "document.querySelector('.graphwidget-root').graphwidget"

PAGE = """<!doctype html><html><head><meta charset="utf-8"></head><body style="margin:0">
<div id="host" style="width:1200px"></div>
<script type="module">
%(fake_model)s
window.FakeModel = FakeModel;
window.toView = toView;
const mod = await import("./widget.js");
window.widget = mod.default;
window.mountWidget = (state) => {
  const model = new FakeModel({ ...state, _graph: toView(state._graph) }, ["selected", "colour_by"]);
  const el = document.getElementById("host");
  window.model = model;
  window.cleanup = mod.default.render({ model, el });
};
window.moduleLoaded = true;
</script></body></html>""" % {"fake_model": FAKE_MODEL_JS}


def state_of(w: GraphWidget) -> Dict[str, Any]:
    return {"_graph": base64.b64encode(w._graph).decode("ascii"), "selected": w.selected,
            "colour_by": w.colour_by, "height": w.height}


def open_host_page(watched: Any) -> Any:
    """A page on a fake origin that imports the widget bundle and can mount it with a fake model."""
    page_ = watched(viewport={"width": 1300, "height": 900})
    page_.serve(ORIGIN + "index.html", body=PAGE, ctype="text/html")
    page_.serve(ORIGIN + "widget.js", STATIC / "widget.js")
    page_.page.goto(ORIGIN + "index.html")
    page_.page.wait_for_function("() => window.moduleLoaded === true")
    return page_


def mount(watched: Any, w: GraphWidget) -> Any:
    page_ = open_host_page(watched)
    page = page_.page
    page.evaluate("s => window.mountWidget(s)", state_of(w))
    wait_ready(page)
    return page_


def api(page: Any, expr: str) -> Any:
    return page.evaluate(f"async () => {{ const a = {API}; return await ({expr}); }}")


def test_bundle_exports_render(watched: Any) -> None:
    w = mount(watched, GraphWidget(fx.mlp(2)))
    assert w.page.evaluate("typeof window.widget.render") == "function"
    w.assert_clean()


def test_click_sets_selected_and_saves(watched: Any) -> None:
    g = fx.mlp(3)
    w = mount(watched, GraphWidget(g, height=500))
    page = w.page
    assert page.evaluate("document.getElementById('host').getBoundingClientRect().height") == 500
    target = g["nodes"][4]["id"]
    api(page, "a.expandAll()")  # every node drawn as itself (at 500 px the first view may show the modules)
    api(page, f"a.centre({target})")
    pos = api(page, f"a.nodeScreenPosition({target})")
    page.mouse.click(pos["x"], pos["y"])
    page.wait_for_function(f"() => window.model.get('selected') === {target}")
    assert page.evaluate("window.model.saved") == [{"selected": target, "colour_by": "bwd_ms"}]
    assert g["nodes"][4]["op"] in api(page, "a.inspectorText()")
    # background click clears: None goes back to Python
    box = page.locator(".gw-canvas").bounding_box()
    page.mouse.click(box["x"] + 4, box["y"] + box["height"] - 4)
    page.wait_for_function("() => window.model.get('selected') === null")
    assert page.evaluate("window.model.saved.length") == 2
    w.assert_clean()


def test_selected_from_python_selects_and_centres(watched: Any) -> None:
    g = fx.random_dag(400, seed=4)
    w = mount(watched, GraphWidget(g))
    page = w.page
    node = g["nodes"][-1]["id"]
    page.evaluate(f"window.model.set('selected', {node})")  # what a kernel-side `w.selected = node` does
    page.wait_for_function(f"() => {API}.selected() === {node}")
    assert_centred(page, f"a.nodeScreenPosition({node})", page.locator(".gw-canvas"))
    assert page.evaluate("window.model.saved") == []  # no echo back to Python
    page.evaluate("window.model.set('selected', null)")
    page.wait_for_function(f"() => {API}.selected() === null")
    w.assert_clean()


@pytest.mark.slow
def test_selected_set_before_display_and_inside_a_group(watched: Any) -> None:
    g = fx.chain(30_000)
    widget = GraphWidget(g, selected=15_000)
    w = mount(watched, widget)
    w.page.wait_for_function(f"() => {API}.selected() === 15000")
    assert 15_000 in api(w.page, "a.visibleNodeIds()")
    w.assert_clean()


def test_colour_by_syncs_both_ways(watched: Any) -> None:
    w = mount(watched, GraphWidget(fx.mlp(2), colour_by="saved_bytes"))
    page = w.page
    assert api(page, "a.colour()") == "saved_bytes"
    page.evaluate("window.model.set('colour_by', 'fwd_ms')")
    assert api(page, "a.colour()") == "fwd_ms" and "forward time" in api(page, "a.legendText()")
    page.select_option(".gw-colour", "output_bytes")
    assert page.evaluate("window.model.get('colour_by')") == "output_bytes"
    assert page.evaluate("window.model.saved.at(-1).colour_by") == "output_bytes"
    w.assert_clean()


def test_height_new_graph_and_cleanup(watched: Any) -> None:
    w = mount(watched, GraphWidget(fx.mlp(2)))
    page = w.page
    page.evaluate("window.model.set('height', 420)")
    assert page.evaluate("document.getElementById('host').getBoundingClientRect().height") == 420
    other = GraphWidget(fx.random_dag(77, seed=1))
    page.evaluate("b64 => window.model.set('_graph', window.toView(b64))", state_of(other)["_graph"])
    page.wait_for_function(f"() => {API} && {API}.graphNodeCount() === 77")
    wait_ready(page)
    api(page, "a.expandAll()")
    assert api(page, "a.nodeCount()") == 77
    page.evaluate("window.cleanup()")
    assert page.evaluate("document.getElementById('host').children.length") == 0
    page.evaluate("window.model.set('selected', 3)")  # listeners are gone: nothing happens, nothing breaks
    w.assert_clean()


# ---- the Python side (no browser) ---------------------------------------------------------------------------

def test_widget_traits_and_payload() -> None:
    g = fx.mlp(2, timed=True)
    w = GraphWidget(g, height=480)
    assert w.colour_by == "bwd_ms" and w.height == 480 and w.selected is None
    assert w._graph[:2] == b"\x1f\x8b"  # gzip
    assert GraphWidget(json.dumps(fx.single())).colour_by == "saved_bytes"
    w.selected = g["nodes"][1]["id"]
    with pytest.raises(traitlets.TraitError, match="no node with id 999"):
        w.selected = 999
    with pytest.raises(traitlets.TraitError, match="colour_by"):
        w.colour_by = "rainbow"
    w.set_graph(fx.single())
    assert w.selected is None


@pytest.mark.parametrize("bad", [42, None, [1, 2], {"nodes": "x"}, "not json", {"format": "other", "nodes": []}])
def test_widget_rejects_bad_input_clearly(bad: Any) -> None:
    with pytest.raises((TypeError, ValueError), match="GraphWidget"):
        GraphWidget(bad)


def test_graph_object_with_to_json_and_gradgraph_methods() -> None:
    gw = pytest.importorskip("graphwidget")
    if not hasattr(gw, "capture"):
        pytest.skip("capture engine not available yet")
    import torch
    x = torch.randn(3, requires_grad=True)
    g = gw.capture((x * 2).exp().sum())
    w = g.widget(height=300)
    assert isinstance(w, GraphWidget) and w.height == 300
    assert set(json.loads(g.to_json())["meta"]) >= {"roots", "timed"}


def test_undecodable_data_shows_an_error_not_an_exception(watched: Any) -> None:
    page_ = open_host_page(watched)
    page = page_.page
    bad = base64.b64encode(b"{not json").decode("ascii")
    page.evaluate("s => window.mountWidget(s)", {"_graph": bad, "selected": 3, "colour_by": "saved_bytes", "height": 400})
    page.wait_for_selector('.graphwidget-root[data-gw-state="error"]')
    assert "Could not show this graph" in page.locator(".gw-error").text_content()
    assert page.evaluate(f"{API}.error") is not None
    page.evaluate("window.model.set('selected', 1)")
    # asserting that nothing happens: an exception from the failed view would reach us as a page error a moment later
    page.wait_for_timeout(100)
    page_.assert_clean()


# ---- the N-way widget (a MultiDiff in Jupyter): the same bundle, `_nway` bytes -----------------------------------

NWAY_API = "document.querySelector('.gw-nway').graphwidget"


@pytest.fixture(scope="module")
def three_way() -> Any:
    sides, x = three_ways()
    return gw.compare(sides, x, advise=False)


def mount_nway(watched: Any, w: Any) -> Any:
    page_ = open_host_page(watched)
    page = page_.page
    state = {"_nway": base64.b64encode(w._nway).decode("ascii"), "selected": w.selected,
             "selected_all": w.selected_all, "colour_by": w.colour_by, "height": w.height, "sync": w.sync}
    page.evaluate("""s => {
      const model = new window.FakeModel({ ...s, _nway: window.toView(s._nway) }, ["selected", "selected_all"]);
      window.model = model;
      window.cleanup = window.widget.render({ model, el: document.getElementById('host') });
    }""", state)
    wait_ready(page)
    page.evaluate(f"() => {NWAY_API}.idle()")
    return page_


def nway_api(page: Any, expr: str) -> Any:
    return page.evaluate(f"async () => {{ const a = {NWAY_API}; return await ({expr}); }}")


def test_nway_widget_draws_every_pane_and_a_click_syncs_back(watched: Any, three_way: Any) -> None:
    d = three_way
    widget = d.widget(height=560)
    w = mount_nway(watched, widget)
    page = w.page
    assert page.evaluate("document.getElementById('host').getBoundingClientRect().height") == 560
    assert page.locator(".gw-nway-pane").count() == 3 and nway_api(page, "a.panes()") == list(d.sides)
    for k, label in enumerate(d.sides):
        assert nway_api(page, f"a.graphNodeCount({k})") == len(d.graphs[label])
    # a real click on a matched node of the refactor's pane
    refactor = d.pair(0, 1)
    target = x = y = None
    for node in nway_api(page, "a.visibleNodeIds(1)"):
        if refactor.counterpart(node, "b") is None:
            continue
        pos = nway_api(page, f"a.nodeScreenPosition({node}, 1)")
        hit = pos and page.evaluate("([x, y]) => { const t = document.elementFromPoint(x, y); return !!t && "
                                    "t === document.querySelectorAll('.gw-nway-pane')[1].querySelector('canvas'); }",
                                    [pos["x"], pos["y"]])
        if hit:
            target, x, y = node, pos["x"], pos["y"]
            break
    assert target is not None, "no matched node of the refactor's pane is under the pointer"
    page.mouse.click(x, y)
    page.wait_for_function(f"() => window.model.get('selected_all')[1] === {target}")
    nway_api(page, "a.idle()")
    # what reaches Python is what Python computes for that node, and what every pane shows
    widget.set_state({"selected": page.evaluate("window.model.get('selected')"),
                      "selected_all": page.evaluate("window.model.get('selected_all')")})
    ref = refactor.counterpart(target, "b")
    assert widget.selected == ref and widget.selected_all == widget._everywhere(1, target)
    assert nway_api(page, "a.selectedAll()") == widget.selected_all
    assert page.evaluate("window.model.saved") == [{"selected": ref, "selected_all": widget.selected_all}]
    # the kernel selects a node the compiled side fused: every pane follows, nothing is echoed back
    lin = d.graphs["eager"].nodes(op="AddmmBackward0")[0]
    widget.selected = lin
    page.evaluate("all => { window.model.set('selected', all[0]); window.model.set('selected_all', all); }",
                  widget.selected_all)
    page.wait_for_function(f"() => {NWAY_API}.selected(0) === {lin}")
    nway_api(page, "a.idle()")
    assert nway_api(page, "a.selectedAll()") == widget.selected_all == [lin, d.counterparts(0, lin)["refactor"],
                                                                       d.regions("compiled")[0]["node"]]
    assert page.evaluate("window.model.saved.length") == 1
    # colour and sync follow the model; cleanup removes the view
    page.evaluate("window.model.set('colour_by', 'output_bytes')")
    assert nway_api(page, "a.colour()") == "output_bytes"
    page.evaluate("window.model.set('sync', false)")
    assert nway_api(page, "a.sync()") is False
    page.evaluate("window.cleanup()")
    assert page.evaluate("document.getElementById('host').children.length") == 0
    w.assert_clean()

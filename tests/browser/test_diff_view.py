"""The side-by-side diff view in a real Chromium: an export-like page (data-kind="diff") and the widget bundle with a
fake anywidget model. Every network request is refused and recorded; no test may make one.

The diff documents are written by hand here (diff_fixtures.py), in the documented format
(docs/diff.md), so these tests do not depend on the Python diff analysis.
"""
from __future__ import annotations

import base64
import gzip
import json
from pathlib import Path
from typing import Any, Dict

import diff_fixtures as dfx
import fixtures as fx
import pagekit
import pytest
from pagekit import API, FAKE_MODEL_JS, STATIC, wait_ready, wait_until


def open_diff(watched: Any, tmp_path: Path, doc: Dict[str, Any], *, width: int = 1300, name: str = "diff.html", **kw: Any) -> Any:
    path = tmp_path / name
    path.write_text(dfx.diff_page(doc), encoding="utf-8")
    w = watched(viewport={"width": width, "height": 800}, **kw)
    w.page.goto(path.as_uri())
    wait_ready(w.page)
    return w


def api(page: Any, expr: str) -> Any:
    return page.evaluate(f"async () => {{ const a = {API}; return await ({expr}); }}")


def canvas(page: Any, side: str) -> Any:
    return page.locator(".gw-pane").nth(0 if side == "a" else 1).locator(".gw-canvas")


def canvas_box(page: Any, side: str) -> Dict[str, float]:
    return canvas(page, side).bounding_box()


def assert_centred(page: Any, node: int, side: str) -> None:
    """``node`` is in the middle of ``side``'s canvas once the view has settled (pagekit.assert_centred)."""
    pagekit.assert_centred(page, f"a.nodeScreenPosition({node}, '{side}')", canvas(page, side))


def test_two_titled_panes_and_node_status(watched: Any, tmp_path: Path) -> None:
    doc = dfx.small_pair()
    w = open_diff(watched, tmp_path, doc)
    page = w.page
    assert api(page, "a.panes()") == ["repeat", "broadcast"]
    assert page.locator(".gw-pane-title").all_text_contents() == ["repeat", "broadcast"]
    expect_a = {0: "unchanged", 1: "changed", 2: "unchanged", 3: "removed", 4: "unchanged"}
    expect_b = {0: "unchanged", 1: "changed", 2: "unchanged", 3: "added", 4: "unchanged", 5: "added"}
    assert {i: api(page, f"a.status({i}, 'a')") for i in expect_a} == expect_a
    assert {i: api(page, f"a.status({i}, 'b')") for i in expect_b} == expect_b
    assert api(page, "a.status(5, 'a')") is None  # A has no node 5
    assert api(page, "a.nodeCount('a')") == 5 and api(page, "a.nodeCount('b')") == 6
    legend = api(page, "a.legendText()")
    assert "changed 1" in legend and "added 2" in legend and "removed 1" in legend
    assert "1 changed · 2 added · 1 removed · 3 unchanged" in page.locator(".gw-status").text_content()
    w.assert_clean()


def test_select_on_a_selects_and_centres_the_counterpart_on_b(watched: Any, tmp_path: Path) -> None:
    w = open_diff(watched, tmp_path, dfx.small_pair())
    page = w.page
    assert api(page, "a.select(1, 'a')") is True
    assert api(page, "a.selected('a')") == 1 and api(page, "a.selected('b')") == 1
    assert_centred(page, 1, "a")
    assert_centred(page, 1, "b")
    text = api(page, "a.inspectorText()")
    assert "changed" in text and "repeat #1" in text and "broadcast #1" in text
    assert "differs in: saved, saved_bytes, bwd_ms, code" in text
    marked = page.locator(".gw-pair tr.gw-changed-row").evaluate_all("rows => rows.map(r => r.dataset.field)")
    assert set(marked) == {"saved", "saved_bytes", "bwd_ms", "code"}
    assert "576 B" in text and "288 B" in text  # saved bytes A vs B, side by side
    # a real click on B's leaf x selects A's x
    api(page, "a.centre(2, 'b')")
    pos = api(page, "a.nodeScreenPosition(2, 'b')")
    page.mouse.click(pos["x"], pos["y"])
    page.wait_for_function(f"() => {API}.selected('a') === 2")
    assert api(page, "a.selected('b')") == 2
    assert_centred(page, 2, "a")
    # the background clears both sides
    box = canvas_box(page, "a")
    page.mouse.click(box["x"] + 5, box["y"] + box["height"] - 5)
    page.wait_for_function(f"() => {API}.selected('a') === null && {API}.selected('b') === null")
    w.assert_clean()


def test_nodes_without_counterpart_say_so(watched: Any, tmp_path: Path) -> None:
    w = open_diff(watched, tmp_path, dfx.small_pair())
    page = w.page
    api(page, "a.select(1, 'a')")
    assert api(page, "a.select(5, 'b')") is True
    assert api(page, "a.selected('b')") == 5 and api(page, "a.selected('a')") is None
    text = api(page, "a.inspectorText()")
    assert "no counterpart (added)" in text and "model.py:19" in text
    assert api(page, "a.select(3, 'a')") is True
    assert api(page, "a.selected('b')") is None
    assert "no counterpart (removed)" in api(page, "a.inspectorText()")
    assert api(page, "a.select(99, 'a')") is False  # unknown id
    w.assert_clean()


def test_summary_strip_numbers_and_timing(watched: Any, tmp_path: Path) -> None:
    w = open_diff(watched, tmp_path, dfx.small_pair())
    page = w.page
    s = api(page, "a.summaryText()")
    assert "nodes: repeat 5 → broadcast 6 (+1, ×1.2)" in s
    assert "edges: repeat 4 → broadcast 5 (+1, ×1.25)" in s
    assert "saved: repeat 576 B → broadcast 288 B (−288 B, ×0.5)" in s
    assert "backward: repeat 2.02 ms → broadcast 0.47 ms (−1.55 ms, ×0.233)" in s
    assert "backward B/A ×0.31 [0.28–0.35], 20 runs: B faster" in s
    assert "equivalent: 1 tensor allclose" in s
    assert page.locator(".gw-diff-banner").count() == 0
    strip = page.locator(".gw-summary").inner_text()
    assert "576 B" in strip and "×0.31" in strip
    w.assert_clean()


def test_not_equivalent_is_a_loud_banner(watched: Any, tmp_path: Path) -> None:
    w = open_diff(watched, tmp_path, dfx.small_pair(equivalent=False))
    page = w.page
    banner = page.locator(".gw-diff-banner.gw-bad")
    assert banner.is_visible() and banner.get_attribute("role") == "alert"
    text = banner.inner_text()
    assert "NOT EQUIVALENT" in text and "output: max abs diff 0.25" in text and "grad w" not in text
    bg = banner.evaluate("el => getComputedStyle(el).backgroundColor")
    assert bg == "rgb(185, 28, 28)"
    assert api(page, "a.summaryText()").startswith("NOT EQUIVALENT")
    w.assert_clean()


@pytest.mark.slow
def test_changes_tab_rows_and_click_selects_both_sides(watched: Any, tmp_path: Path) -> None:
    w = open_diff(watched, tmp_path, dfx.small_pair())
    page = w.page
    lines = api(page, "a.changesText('op')").splitlines()
    assert lines[0].split("\t")[:4] == ["op", "added", "removed", "changed"]
    rows = {line.split("\t")[0]: line.split("\t") for line in lines[1:]}
    assert set(rows) == {"RepeatBackward0", "ExpandBackward0", "MulBackward0"}
    assert rows["RepeatBackward0"][2] == "−1" and rows["ExpandBackward0"][1] == "+1"
    assert rows["MulBackward0"][1:4] == ["+1", "", "~1"]  # the added scale op and the changed pair
    by_source = api(page, "a.changesText('source')")
    assert "model.py:20" in by_source and "model.py:19" in by_source
    page.click(".gw-paneltoggle")  # the panel waits for a selection, or for the Panel button
    page.click(".gw-tab[data-tab=changes]")
    page.locator(".gw-changestable tbody tr", has_text="MulBackward0").click()
    page.wait_for_function(f"() => {API}.selected('a') === 1 && {API}.selected('b') === 1")
    assert page.locator(".gw-tab-changes").is_visible()  # the tab stays open for the next row
    page.locator(".gw-changestable tbody tr", has_text="RepeatBackward0").click()
    page.wait_for_function(f"() => {API}.selected('a') === 3 && {API}.selected('b') === null")
    page.click(".gw-seg[data-by=source]")
    assert page.locator(".gw-changestable thead th").first.text_content() == "source"
    w.assert_clean()


def test_search_highlights_both_sides(watched: Any, tmp_path: Path) -> None:
    w = open_diff(watched, tmp_path, dfx.small_pair())
    page = w.page
    assert api(page, "a.search('MulBackward')") == 3
    assert api(page, "a.highlightedIds('a')") == [1]
    assert sorted(api(page, "a.highlightedIds('b')")) == [1, 5]
    assert page.locator(".gw-count").text_content() == "repeat: 1 · broadcast: 2"
    assert api(page, "a.search('')") == 0 and api(page, "a.highlightedIds('b')") == []
    w.assert_clean()


def test_one_colour_scale_for_both_sides(watched: Any, tmp_path: Path) -> None:
    w = open_diff(watched, tmp_path, dfx.small_pair())
    page = w.page
    assert api(page, "a.colour()") == "bwd_ms"
    # SumBackward0 takes 0.02 ms on both sides: the same colour, although B's slowest node (0.3 ms) is 5× faster
    # than A's (1.5 ms); with a scale per side they would differ
    assert api(page, "a.nodeColour(0, 'a')") == api(page, "a.nodeColour(0, 'b')")
    assert api(page, "a.nodeColour(1, 'a')") != api(page, "a.nodeColour(1, 'b')")
    assert "1.50 ms" in api(page, "a.legendText()")  # the max over A and B
    w.assert_clean()


def test_sync_keeps_pan_and_zoom_in_step(watched: Any, tmp_path: Path) -> None:
    w = open_diff(watched, tmp_path, dfx.small_pair())
    page = w.page
    assert api(page, "a.sync()") is True
    a0, b0 = api(page, "a.camera('a')"), api(page, "a.camera('b')")
    box = canvas_box(page, "a")
    page.mouse.move(box["x"] + 100, box["y"] + 100)
    page.mouse.down()
    page.mouse.move(box["x"] + 160, box["y"] + 140, steps=4)
    page.mouse.up()
    a1, b1 = api(page, "a.camera('a')"), api(page, "a.camera('b')")
    assert abs(a1["tx"] - a0["tx"] - 60) < 1e-6 and abs(b1["tx"] - b0["tx"] - 60) < 1e-6
    assert abs(b1["ty"] - b0["ty"] - 40) < 1e-6
    page.mouse.wheel(0, -300)
    wait_until(lambda: api(page, "a.camera('a')")["s"] != a1["s"])  # the wheel event was handled
    a2, b2 = api(page, "a.camera('a')"), api(page, "a.camera('b')")
    assert a2["s"] > a1["s"] and abs(b2["s"] / b1["s"] - a2["s"] / a1["s"]) < 1e-9
    page.click("button[data-action=sync]")
    assert api(page, "a.sync()") is False
    page.mouse.move(box["x"] + 100, box["y"] + 100)
    page.mouse.down()
    page.mouse.move(box["x"] + 130, box["y"] + 100, steps=3)
    page.mouse.up()
    assert api(page, "a.camera('b')") == b2
    w.assert_clean()


def _hostile_pair() -> Dict[str, Any]:
    doc = dfx.small_pair(labels=("<img src=x onerror=alert(1)>", "</script><script>alert(2)</script>"), equivalent=False)
    for g in (doc["a"], doc["b"]):
        for n in g["nodes"]:
            if n["id"] == 1:
                n["op"] = fx.HOSTILE_OP
                n["source"] = fx.HOSTILE_SOURCE
                n["code"] = fx.HOSTILE_CODE
    doc["summary"]["equivalence"]["tensors"][0]["name"] = "<b onmouseover=alert(8)>out</b>"
    return dfx.make_diff(doc["a"], doc["b"], matched=doc["matched"], changed=doc["changed"], removed=doc["removed"],
                         added=doc["added"], labels=doc["labels"], timing=doc["summary"]["timing"],
                         equivalence=doc["summary"]["equivalence"])


def test_hostile_strings_are_text(watched: Any, tmp_path: Path) -> None:
    doc = _hostile_pair()
    w = open_diff(watched, tmp_path, doc)
    page = w.page
    assert page.locator(".gw-pane-title").all_text_contents() == list(doc["labels"])
    api(page, "a.select(1, 'a')")
    text = api(page, "a.inspectorText()")
    assert fx.HOSTILE_OP in text and fx.HOSTILE_SOURCE in text
    assert fx.HOSTILE_OP in api(page, "a.changesText('op')")
    assert fx.HOSTILE_SOURCE in api(page, "a.changesText('source')")
    assert "<b onmouseover=alert(8)>out</b>" in page.locator(".gw-diff-banner").inner_text()
    page.click(".gw-tab[data-tab=changes]")
    assert fx.HOSTILE_OP in page.locator(".gw-changestable").text_content()
    api(page, "a.search('onerror')")
    assert page.evaluate("document.querySelectorAll('img, svg, b, i, iframe').length") == 0
    assert page.evaluate("document.querySelectorAll('script').length") == 2  # data + viewer
    # nothing to wait for here: a string that had become markup would fire its handler (a dialog, a request) late
    page.wait_for_timeout(200)
    w.assert_clean()


@pytest.mark.slow  # a big pair of graphs, opened and followed into groups: ~5 s
def test_big_pair_opens_grouped_and_follows_into_groups(watched: Any, tmp_path: Path) -> None:
    doc = dfx.big_pair(5000, seed=3)
    w = open_diff(watched, tmp_path, doc)
    page = w.page
    assert api(page, "a.graphNodeCount('a')") == 5000
    assert api(page, "a.nodeCount('a')") < 1000 and api(page, "a.nodeCount('b')") < 1000  # grouped
    i, j, _ = doc["changed"][-1]
    assert i not in api(page, "a.visibleNodeIds('a')") or j not in api(page, "a.visibleNodeIds('b')")
    assert api(page, f"a.select({i}, 'a')") is True
    assert j in api(page, "a.visibleNodeIds('b')") and api(page, "a.selected('b')") == j
    assert api(page, f"a.status({j}, 'b')") == "changed"
    assert_centred(page, j, "b")
    w.assert_clean()


def test_narrow_and_dark_still_work(watched: Any, tmp_path: Path) -> None:
    w = open_diff(watched, tmp_path, dfx.small_pair(), width=700, color_scheme="dark")
    page = w.page
    assert page.locator(".graphwidget-root").evaluate("el => el.classList.contains('gw-narrow')")
    assert page.locator(".gw-side").is_hidden()  # two panes need the width; the Panel button brings it back
    page.click(".gw-paneltoggle")
    assert page.locator(".gw-side").is_visible()
    bg = page.locator(".graphwidget-root").evaluate("el => getComputedStyle(el).backgroundColor")
    assert bg == "rgb(22, 24, 29)"
    api(page, "a.select(1, 'a')")
    assert "differs in" in api(page, "a.inspectorText()")
    w.assert_clean()


# ---- the widget bundle with a fake anywidget model ------------------------------------------------------------

ORIGIN = "http://widget.test/"
PAGE = """<!doctype html><html><head><meta charset="utf-8"></head><body style="margin:0">
<div id="host" style="width:1300px"></div>
<script type="module">
%(fake_model)s
const mod = await import("./widget.js");
window.widget = mod;
window.mountWidget = (state) => {
  const model = new FakeModel({ ...state, _diff: toView(state._diff), _graph: new DataView(new ArrayBuffer(0)) },
    ["selected_a", "selected_b", "sync", "colour_by"]);
  window.model = model;
  window.cleanup = mod.default.render({ model, el: document.getElementById("host") });
};
window.moduleLoaded = true;
</script></body></html>""" % {"fake_model": FAKE_MODEL_JS}


def mount_widget(watched: Any, doc: Dict[str, Any], **state: Any) -> Any:
    w = watched(viewport={"width": 1300, "height": 900})
    w.serve(ORIGIN + "index.html", body=PAGE, ctype="text/html")
    w.serve(ORIGIN + "widget.js", STATIC / "widget.js")
    w.page.goto(ORIGIN + "index.html")
    w.page.wait_for_function("() => window.moduleLoaded === true")
    full = {"_diff": base64.b64encode(gzip.compress(json.dumps(doc).encode())).decode("ascii"),
            "selected_a": None, "selected_b": None, "colour_by": "bwd_ms", "height": 560, "sync": True, **state}
    w.page.evaluate("s => window.mountWidget(s)", full)
    wait_ready(w.page)
    return w


def test_widget_click_sets_selected_a_and_b(watched: Any) -> None:
    w = mount_widget(watched, dfx.small_pair())
    page = w.page
    assert page.evaluate("Object.keys(window.widget)") == ["default"]  # no named render: no anywidget deprecation notice
    assert page.evaluate("document.getElementById('host').getBoundingClientRect().height") == 560
    api(page, "a.centre(1, 'a')")
    pos = api(page, "a.nodeScreenPosition(1, 'a')")
    page.mouse.click(pos["x"], pos["y"])
    page.wait_for_function("() => window.model.get('selected_a') === 1 && window.model.get('selected_b') === 1")
    assert page.evaluate("window.model.saved") == [{"selected_a": 1, "selected_b": 1, "sync": True, "colour_by": "bwd_ms"}]
    # an added node on B: selected_a goes back to null, in the same save
    api(page, "a.centre(5, 'b')")
    pos = api(page, "a.nodeScreenPosition(5, 'b')")
    page.mouse.click(pos["x"], pos["y"])
    page.wait_for_function("() => window.model.get('selected_b') === 5")
    assert page.evaluate("window.model.saved.at(-1)")["selected_a"] is None
    assert page.evaluate("window.model.saved.length") == 2
    page.click("button[data-action=sync]")
    assert page.evaluate("window.model.saved.at(-1).sync") is False
    w.assert_clean()


def test_widget_selection_from_python_selects_and_centres_without_echo(watched: Any) -> None:
    w = mount_widget(watched, dfx.small_pair(), selected_b=3)
    page = w.page
    page.wait_for_function(f"() => {API}.selected('b') === 3")
    assert api(page, "a.selected('a')") is None  # B's 3 was added
    page.evaluate("window.model.set('selected_a', 1)")  # what a kernel-side `w.selected_a = 1` does
    page.wait_for_function(f"() => {API}.selected('a') === 1 && {API}.selected('b') === 1")
    api(page, "a.idle()")
    assert_centred(page, 1, "a")
    assert_centred(page, 1, "b")
    page.evaluate("window.model.set('sync', false)")
    assert api(page, "a.sync()") is False
    assert page.evaluate("window.model.saved") == []  # nothing echoed back to Python
    page.evaluate("window.cleanup()")
    assert page.evaluate("document.getElementById('host').children.length") == 0
    w.assert_clean()


@pytest.mark.parametrize("bad", [b"{not json", json.dumps({"format": "graphwidget-diff", "a": None}).encode()])
def test_undecodable_diff_shows_an_error(watched: Any, bad: bytes) -> None:
    w = watched(viewport={"width": 1000, "height": 700})
    w.serve(ORIGIN + "index.html", body=PAGE, ctype="text/html")
    w.serve(ORIGIN + "widget.js", STATIC / "widget.js")
    w.page.goto(ORIGIN + "index.html")
    w.page.wait_for_function("() => window.moduleLoaded === true")
    w.page.evaluate("s => window.mountWidget(s)", {"_diff": base64.b64encode(bad).decode("ascii"), "selected_a": None,
                                                   "selected_b": None, "colour_by": "bwd_ms", "height": 400, "sync": True})
    w.page.wait_for_selector('.graphwidget-root[data-gw-state="error"]')
    assert "Could not show" in w.page.locator(".gw-error").text_content()
    assert w.page.evaluate(f"{API}.error") is not None
    w.assert_clean()


def test_opens_on_the_first_divergence(watched: Any, tmp_path: Path) -> None:
    """A document with summary.divergence (gw.compare's search) opens with that pair selected and both panes centred
    on it; one without opens with nothing selected."""
    doc = dfx.small_pair(equivalent=False)
    doc["summary"]["divergence"] = {"phase": "forward", "a": 1, "b": 1, "op": "MulBackward0"}
    w = open_diff(watched, tmp_path, doc)
    page = w.page
    page.wait_for_function(f"() => {API}.selected('a') === 1 && {API}.selected('b') === 1")
    assert_centred(page, 1, "a")
    assert_centred(page, 1, "b")
    w.assert_clean()
    w2 = open_diff(watched, tmp_path, dfx.small_pair(equivalent=False), name="plain.html")
    assert api(w2.page, "a.selected('a')") is None and api(w2.page, "a.selected('b')") is None
    w2.assert_clean()

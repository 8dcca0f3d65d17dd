"""The advisor's findings in the viewer: the Findings tab, the badges, the automation API, the diff view's resolved
findings, in the exported page (and once in the widget bundle), every network request refused and recorded.

The graph is the real seed: gw.trace of examples.homography_repeat, advised with g.advise() (its one finding is
repeat-broadcast on homography.py:54). Screenshots go to $GW_SHOTS when it is set (light and dark, 700 and 1400 px).
"""
from __future__ import annotations

import copy
import json
import os
import re
from pathlib import Path
from typing import Any, Dict, Tuple

import fixtures as fx
import pytest
from pagekit import API, assert_centred, next_frame, wait_ready, wait_until

import graphwidget as gw
from graphwidget.model import schema
from graphwidget.views.export import export_html

ROOT = Path(__file__).resolve().parents[2]
EX = gw.examples
SEED_LINE = "homography.py:54"
# the badge fills of canvas/badges.ts: warning and resolved, light and dark
WARNING = {"light": (0xC2, 0x41, 0x0C), "dark": (0xFB, 0x92, 0x3C)}
RESOLVED = {"light": (0x15, 0x80, 0x3D), "dark": (0x4A, 0xDE, 0x80)}


def api(page: Any, expr: str) -> Any:
    return page.evaluate(f"async () => {{ const a = {API}; return await ({expr}); }}")


@pytest.fixture(scope="module")
def seed() -> gw.GradGraph:
    g = gw.trace(EX.homography_repeat, **EX.homography_inputs(2, 16, 16))
    g.advise()
    return g


@pytest.fixture(scope="module")
def seed_page(seed: gw.GradGraph, tmp_path_factory: Any) -> Path:
    return export_html(seed, tmp_path_factory.mktemp("findings") / "seed.html", title="seed")


def open_page(watched: Any, path: Path, width: int = 1400, scheme: str = "light") -> Any:
    w = watched(viewport={"width": width, "height": 800}, color_scheme=scheme)
    w.page.goto(path.as_uri())
    wait_ready(w.page)
    return w


def canvas_pixel(page: Any, x: float, y: float, pane: int = 0) -> Tuple[int, int, int]:
    """The canvas pixel at a viewport point (device pixels read back from the 2D context)."""
    return tuple(page.evaluate("""([x, y, k]) => { const c = document.querySelectorAll('.gw-canvas')[k];
        const r = c.getBoundingClientRect(), d = c.width / r.width;
        return Array.from(c.getContext('2d').getImageData(Math.round((x - r.left) * d), Math.round((y - r.top) * d), 1, 1).data.slice(0, 3)); }""",
        [x, y, pane]))


def near(a: Tuple[int, ...], b: Tuple[int, ...], tol: int = 12) -> bool:
    return all(abs(p - q) <= tol for p, q in zip(a, b))


def badge_is(page: Any, b: Dict[str, Any], colour: Tuple[int, int, int], pane: int = 0) -> bool:
    """The badge is painted in `colour`: at least two of four points around its middle (the symbol covers some)."""
    picks = [canvas_pixel(page, b["x"] + dx, b["y"] + dy, pane) for dx, dy in ((-3, 0), (3, 0), (0, -4), (0, 4))]
    return sum(near(p, colour) for p in picks) >= 2


def shoot(page: Any, name: str) -> None:
    where = os.environ.get("GW_SHOTS")
    if where:
        Path(where).mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(Path(where) / name))


# -- the schema: one list of keys -------------------------------------------------------------------------------------
def test_finding_keys_are_the_python_ones() -> None:
    text = (ROOT / "js" / "src" / "schema" / "types.ts").read_text()
    m = re.search(r"export const FINDING_KEYS = \[([^\]]*)\] as const;", text)
    assert m, "FINDING_KEYS not found in js/src/schema/types.ts"
    assert tuple(re.findall(r'"([^"]+)"', m.group(1))) == schema.FINDING_KEYS


# -- the graph view ----------------------------------------------------------------------------------------------------
def test_tab_lists_the_repeat_finding_and_a_click_selects_its_cause(watched: Any, seed: gw.GradGraph, seed_page: Path) -> None:
    w = open_page(watched, seed_page)
    page = w.page
    (f,) = seed.findings
    assert f["rule"] == "repeat-broadcast" and f["source"].endswith(SEED_LINE)
    # the API lists exactly Python's findings
    assert api(page, "a.findings()") == [{k: x[k] for k in ("rule", "severity", "nodes", "source")} for x in seed.findings]
    tab = page.locator(".gw-tab[data-tab=findings]")
    assert tab.text_content() == "Findings (1)"
    tab.click()
    rows = page.locator(".gw-fd-row")
    assert rows.count() == 1
    row = rows.first
    head = row.locator(".gw-fd-head").text_content()
    assert "warning" in head and "repeat-broadcast" in head and SEED_LINE in head
    assert row.locator(".gw-fd-src").get_attribute("title") == f["source"]
    assert row.locator(".gw-fd-code").text_content() == f["code"] == "h = homo.unsqueeze(1).repeat(1, W * H, 1, 1)"
    assert row.locator(".gw-fd-msg").text_content() == f["message"]
    assert f["suggestion"] in row.text_content()
    chips = row.locator(".gw-fd-ev").text_content()
    ev = f["evidence"]
    assert "tensor 18.0 KiB" in chips and ev["bytes"] == 18432
    assert "gradients 288 KiB" in chips and 288 * 1024 <= ev["grad_bytes"] < 289 * 1024
    assert f"nodes {len(f['nodes'])}" in chips and "84% of gradient bytes" in chips
    text = api(page, "a.findingsText()")
    assert "repeat-broadcast" in text and f["message"] in text
    # a real click on the row: the cause (the repeat) is selected and centred, all its nodes outlined, tab kept
    assert api(page, "a.selected()") is None
    row.click()
    page.wait_for_function(f"() => {API}.selected() === {f['nodes'][0]}")
    api(page, "a.idle()")
    assert seed.node(f["nodes"][0])["op"] == "RepeatBackward0"
    assert sorted(api(page, "a.highlightedIds()")) == sorted(f["nodes"])
    assert "gw-sel" in row.get_attribute("class")
    assert page.locator(".gw-tab[data-tab=findings]").get_attribute("aria-selected") == "true"
    assert_centred(page, f"a.nodeScreenPosition({f['nodes'][0]})", page.locator(".gw-canvas"))
    # the Inspector shows the cause; clicking another node marks the rows that name it
    assert "RepeatBackward0" in api(page, "a.inspectorText()")
    w.assert_clean()


def test_badges_drawn_on_the_findings_nodes_and_visible_zoomed_out(watched: Any, seed: gw.GradGraph, seed_page: Path) -> None:
    w = open_page(watched, seed_page)
    page = w.page
    named = set(seed.findings[0]["nodes"])
    badges = api(page, "a.findingBadges()")
    on = {b["id"] for b in badges}
    assert on and on <= named and all(b["severity"] == "warning" and b["label"] == "!" for b in badges)
    # every named node that is on screen has its badge, and no other node has one
    box = page.locator(".gw-canvas").bounding_box()
    for i in api(page, "a.visibleNodeIds()"):
        p = api(page, f"a.nodeScreenPosition({i})")
        inside = box["x"] < p["x"] < box["x"] + box["width"] and box["y"] < p["y"] < box["y"] + box["height"]
        if inside:
            assert (i in on) == (i in named), i
    # the pixels at a badge are the badge's colour
    b = badges[0]
    assert badge_is(page, b, WARNING["light"])
    # zoomed far out the badges are still drawn at their size and colour
    for _ in range(6):
        page.click(".gw-zoom button >> nth=1")
    next_frame(page)  # the badges of a frame drawn at the new zoom
    small = api(page, "a.findingBadges()")
    assert {x["id"] for x in small} == named & set(api(page, "a.visibleNodeIds()"))
    assert badge_is(page, small[-1], WARNING["light"])
    legend = api(page, "a.legendText()")
    assert "finding (warning)" in legend
    w.assert_clean()


def test_groups_holding_a_finding_are_marked_and_picking_opens_them(watched: Any, seed: gw.GradGraph, seed_page: Path) -> None:
    w = open_page(watched, seed_page)
    page = w.page
    api(page, "a.collapseAll()")
    groups = api(page, "a.groups()")
    assert groups, "the seed has chain groups once collapsed"
    named = set(seed.findings[0]["nodes"])
    badged = {b["id"] for b in api(page, "a.findingBadges()")}
    marked = {g["id"] for g in groups} & badged
    assert marked, "groups holding the finding's nodes carry a badge"
    shown = set(api(page, "a.visibleNodeIds()"))
    assert named - shown, "some of the finding's nodes are inside closed groups"
    # the tooltip of a marked group names the finding
    gid = sorted(marked)[0]
    pos = api(page, f"a.nodeScreenPosition({json.dumps(gid)})")
    page.mouse.move(pos["x"], pos["y"])
    page.locator(".gw-tooltip").wait_for(state="visible")
    assert f"! repeat-broadcast ({SEED_LINE})" in page.locator(".gw-tooltip").text_content()
    # picking the finding opens every group around its nodes
    assert api(page, "a.selectFinding(0)") == seed.findings[0]["nodes"][0]
    assert named <= set(api(page, "a.visibleNodeIds()"))
    assert not {g["id"] for g in api(page, "a.groups()")} & marked
    assert "Error: no finding 1: this view has 1" in api(page, "a.selectFinding(1).catch(String)")
    w.assert_clean()


def test_hostile_strings_in_a_finding_are_text(watched: Any, seed: gw.GradGraph, tmp_path: Path) -> None:
    doc = copy.deepcopy(seed.to_dict())
    f = doc["findings"][0]
    f.update(rule="<b onmouseover=alert(1)>rule</b>", message=fx.HOSTILE_OP + " then " + fx.HOSTILE_CODE,
             suggestion="</script><script>alert(5)</script>", source=fx.HOSTILE_SOURCE, code=fx.HOSTILE_CODE,
             module=fx.HOSTILE_MODULE)
    f["evidence"]["<i>key</i>"] = "<iframe src=x></iframe>"
    doc["findings"].append({**f, "severity": "info", "nodes": [f["nodes"][0]], "message": "<svg onload=alert(6)>"})
    path = export_html(doc, tmp_path / "hostile.html")
    w = open_page(watched, path)
    page = w.page
    page.click(".gw-tab[data-tab=findings]")
    page.click("details.gw-fd-more >> nth=0")  # open "all evidence"
    text = page.locator(".gw-findings").text_content()
    for s in (f["rule"], f["message"], f["suggestion"], f["code"], f["module"], "<i>key</i>", "<iframe src=x></iframe>",
              "<svg onload=alert(6)>", '"><svg onload=alert(3)>.py:1'):
        assert s in text, s
    assert api(page, "a.findings()")[0]["rule"] == f["rule"]
    # its head: the middle of the row is the evidence opened above, whose clicks stay in it
    page.locator(".gw-fd-row").first.locator(".gw-fd-head").click()
    assert wait_until(lambda: api(page, "a.selected()") == f["nodes"][0])  # picked: its cause selected and centred
    pos = api(page, f"a.nodeScreenPosition({f['nodes'][0]})")
    page.mouse.move(pos["x"], pos["y"])
    page.locator(".gw-tooltip").wait_for(state="visible")
    assert f["rule"] in page.locator(".gw-tooltip").text_content()
    assert page.evaluate("document.querySelectorAll('img, svg, b, i, iframe').length") == 0
    assert page.evaluate("document.querySelectorAll('script').length") == 2  # data + viewer
    # nothing to wait for here: a string that had become markup would fire its handler (a dialog, a request) late
    page.wait_for_timeout(200)
    w.assert_clean()


def test_a_graph_never_advised_and_one_with_nothing_found(watched: Any, tmp_path: Path) -> None:
    g = fx.mlp(3)
    w = open_page(watched, export_html(g, tmp_path / "plain.html"))
    page = w.page
    assert api(page, "a.findings()") == [] and api(page, "a.findingBadges()") == []
    assert page.locator(".gw-tab[data-tab=findings]").text_content() == "Findings"
    assert page.locator(".gw-side").is_hidden(), "nothing to say: the panel waits for a selection"
    page.click(".gw-paneltoggle")
    page.click(".gw-tab[data-tab=findings]")
    assert "Not advised" in page.locator(".gw-findings").text_content()
    assert "finding" not in api(page, "a.legendText()")
    g["findings"] = []
    w2 = open_page(watched, export_html(g, tmp_path / "clean.html"))
    w2.page.click(".gw-paneltoggle")
    w2.page.click(".gw-tab[data-tab=findings]")
    assert "found nothing to report" in w2.page.locator(".gw-findings").text_content()
    w.assert_clean()
    w2.assert_clean()


@pytest.mark.parametrize("scheme", ["light", "dark"])
@pytest.mark.parametrize("width", [700, 1400])
def test_light_and_dark_narrow_and_wide(watched: Any, seed: gw.GradGraph, seed_page: Path, scheme: str, width: int) -> None:
    w = open_page(watched, seed_page, width=width, scheme=scheme)
    page = w.page
    page.click(".gw-tab[data-tab=findings]")
    row = page.locator(".gw-fd-row").first
    assert row.is_visible()
    # the severity chip reads: its text colour is the theme's, not the default
    chip = row.locator(".gw-fd-sev")
    colours = chip.evaluate("e => [getComputedStyle(e).color, getComputedStyle(e).backgroundColor]")
    assert colours[0] != colours[1]
    b = api(page, "a.findingBadges()")
    assert b and badge_is(page, b[0], WARNING[scheme])
    shoot(page, f"findings-{scheme}-{width}.png")
    row.click()
    page.wait_for_function(f"() => {API}.selected() === {seed.findings[0]['nodes'][0]}")
    api(page, "a.idle()")
    api(page, "new Promise(requestAnimationFrame)")
    b = api(page, "a.findingBadges()")
    assert b and badge_is(page, b[0], WARNING[scheme])
    shoot(page, f"findings-{scheme}-{width}-picked.png")
    w.assert_clean()


# -- the widget bundle: the same tab, and a pick reaches Python's `selected` -------------------------------------------
def test_widget_shows_the_findings_and_a_pick_syncs_selected(watched: Any, seed: gw.GradGraph) -> None:
    from test_widget_page import mount
    wg = gw.GraphWidget(seed)
    w = mount(watched, wg)
    page = w.page
    assert api(page, "a.findings()")[0]["rule"] == "repeat-broadcast"
    page.click(".gw-tab[data-tab=findings]")
    page.locator(".gw-fd-row").first.click()
    cause = seed.findings[0]["nodes"][0]
    page.wait_for_function(f"() => window.model.saved.length > 0 && window.model.saved.at(-1).selected === {cause}")
    assert api(page, "a.findingBadges()")
    w.assert_clean()


# -- the diff view: A's finding is resolved in B -----------------------------------------------------------------------
def test_diff_shows_the_repeat_finding_resolved_in_broadcast(watched: Any, tmp_path: Path) -> None:
    inp = EX.homography_inputs(2, 16, 16)
    ga, gb = gw.trace(EX.homography_repeat, **inp), gw.trace(EX.homography_broadcast, **inp)
    ga.advise()
    gb.advise()
    d = gw.diff(ga, gb, labels=("repeat", "broadcast"))
    assert d.to_dict()["findings"]["resolved"] == [0]
    w = open_page(watched, export_html(d, tmp_path / "diff.html"))
    page = w.page
    fa = api(page, "a.findings('a')")
    assert fa == [{"rule": "repeat-broadcast", "severity": "warning", "nodes": ga.findings[0]["nodes"],
                   "source": ga.findings[0]["source"], "resolved": True}]
    assert api(page, "a.findings('b')") == []
    assert "findings: repeat 1 → broadcast 0 (1 resolved)" in api(page, "a.summaryText()")
    page.click(".gw-paneltoggle")  # the diff's panel waits for a selection, or for the Panel button
    page.click(".gw-tab[data-tab=findings]")
    box = page.locator(".gw-findings")
    assert "repeat: 1 warning · 1 resolved" in box.text_content() and "broadcast: no findings" in box.text_content()
    row = page.locator(".gw-fd-row").first
    assert "resolved in broadcast" in row.locator(".gw-fd-head").text_content()
    assert "gw-fd-row-resolved" in row.get_attribute("class")
    # A's badges say resolved (green check), B has none
    badges = api(page, "a.findingBadges('a')")
    assert badges and all(b["severity"] == "resolved" and b["label"] == "✓" for b in badges)
    assert badge_is(page, badges[0], RESOLVED["light"], pane=0)
    assert api(page, "a.findingBadges('b')") == []
    assert "resolved in broadcast" in api(page, "a.legendText()")
    # picking it selects the repeat on A; it has no counterpart in B (the rewrite removed it)
    row.click()
    page.wait_for_function(f"() => {API}.selected('a') === {ga.findings[0]['nodes'][0]}")
    api(page, "a.idle()")
    assert api(page, f"a.status({ga.findings[0]['nodes'][0]}, 'a')") == "removed"
    assert api(page, "a.selected('b')") is None
    assert page.locator(".gw-tab[data-tab=findings]").get_attribute("aria-selected") == "true"
    shoot(page, "findings-diff-light-1400.png")
    w.assert_clean()

"""The N-way export in a real Chromium: gw.compare of a small transformer block three ways (eager, a refactor,
torch.compile), written by export_html and opened as a file, and the ranks of one job. The page draws one pane per
side (the reference once) side by side, wrapping to rows when narrow: every pane must be drawn with what Python
computed, a click in one pane must select the counterparts in every pane, pan and zoom must follow across panes,
and for ranks the inspector must give the selected node's time on every rank and the straggler's pane a badge.
No network request, no page error."""
from __future__ import annotations

from pathlib import Path
from typing import Any, Dict

import pytest
from nway_models import three_ways
from pagekit import next_frame, toolbar_overflow, wait_until

import graphwidget as gw

ROOT = "document.getElementById('gw-nway-root')"
SHOTS = Path("/tmp/gw-shots")


def api(page: Any, expr: str) -> Any:
    """``expr`` with ``a`` the N-way view's automation API."""
    return page.evaluate(f"async () => {{ const a = {ROOT}.graphwidget; return await ({expr}); }}")


@pytest.fixture(scope="module")
def nway() -> gw.MultiDiff:
    sides, x = three_ways()
    return gw.compare(sides, x, advise=False)


def open_page(watched: Any, path: Path, width: int = 1400, dark: bool = False) -> Any:
    w = watched(viewport={"width": width, "height": 900}, color_scheme="dark" if dark else "light")
    w.page.goto(path.as_uri())
    w.page.wait_for_selector('#gw-nway[data-gw-state="ready"]', timeout=120_000)
    api(w.page, "a.idle()")
    return w


def shot(page: Any, name: str) -> None:
    SHOTS.mkdir(exist_ok=True)
    page.locator("#gw-nway-root").scroll_into_view_if_needed()
    page.mouse.move(0, 0)  # no hover tooltip over the panes
    next_frame(page)
    page.screenshot(path=str(SHOTS / name), full_page=True)


@pytest.mark.slow
def test_one_pane_per_side_the_reference_once_side_by_side(watched: Any, tmp_path: Path, nway: gw.MultiDiff) -> None:
    d = nway
    w = open_page(watched, d.export_html(tmp_path / "nway.html"))
    page = w.page
    assert page.locator(".gw-nway-pane").count() == len(d.sides) == 3
    assert api(page, "a.panes()") == list(d.sides)
    for k, label in enumerate(d.sides):
        assert api(page, f"a.graphNodeCount({k})") == len(d.graphs[label])
        assert api(page, f"a.visibleNodeIds({k}).length") > 0
    rects = api(page, "a.paneRects()")
    assert all(r["width"] > 250 and r["height"] > 300 for r in rects)
    assert len({round(r["top"]) for r in rects}) == 1 and rects[0]["left"] < rects[1]["left"] < rects[2]["left"]
    # each side's marks are its pair with the reference; the reference's own: the nodes some side lacks or changed
    for k in (1, 2):
        p = d.pair(0, k)
        got = api(page, f"Object.fromEntries({sorted(p.b.nx.nodes)}.map(i => [i, a.status(i, {k})]))")
        assert {int(i): s for i, s in got.items()} == {i: p.status(i, "b") for i in p.b.nx.nodes}
    ref = d.graphs[d.reference]
    missing = set().union(*(d.pair(0, k).removed for k in (1, 2)))
    got = api(page, f"Object.fromEntries({sorted(ref.nx.nodes)}.map(i => [i, a.status(i, 0)]))")
    assert {int(i) for i, s in got.items() if s == "removed"} == missing and missing
    # each header: the label and its verdict against the reference, as Python's table has it
    rows = {r["label"]: r for r in d.table()}
    assert api(page, "a.headerText(0)").split("\n") == ["eager", "reference"]
    for label in ("refactor", "compiled"):
        head = api(page, f"a.headerText({label!r})")
        assert head.startswith(label + "\n") and rows[label]["maths"] in head
    assert "1 compiled region covering 46 nodes" in api(page, "a.headerText(2)")
    # the verdict table on top is Python's; the sentence is said once, in the strip above the panes
    assert page.locator("#gw-nway-root .gw-nway-summary").inner_text() == d.sentence()
    assert page.locator(".gw-nway-head .gw-nway-sentence").is_hidden()
    assert page.locator(".gw-nway-table tbody tr").count() == 3
    w.assert_clean()


def test_a_click_in_one_pane_selects_the_counterparts_in_all(watched: Any, tmp_path: Path,
                                                              nway: gw.MultiDiff) -> None:
    d = nway
    w = open_page(watched, d.export_html(tmp_path / "nway.html"))
    page = w.page
    page.locator("#gw-nway-root").scroll_into_view_if_needed()
    ref = d.graphs[d.reference]
    node = ref.nodes(op="GeluBackward0")[0]
    want = d.counterparts(d.reference, node)
    # a real click on the reference's GELU
    api(page, f"a.centre({node}, 0)")
    pos = api(page, f"a.nodeScreenPosition({node}, 0)")
    page.mouse.click(pos["x"], pos["y"])
    region = d.regions("compiled")[0]["node"]
    assert want["compiled"] is None and node in d.regions("compiled")[0]["covers"]
    got = wait_until(lambda: api(page, "a.selectedAll()") == [node, want["refactor"], region] and
                     api(page, "a.selectedAll()"))
    assert got == [node, want["refactor"], region]  # compiled: fused, so its region
    assert page.locator("#gw-nway-root").get_attribute("data-gw-selected") == str(node)
    text = api(page, "a.inspectorText()")
    assert "GeluBackward0" in text and "fused (compiled region)" in text
    # the refactor's counterpart is centred in its pane
    box = api(page, "a.paneRects()[1]")
    pos = api(page, f"a.nodeScreenPosition({want['refactor']}, 1)")
    assert abs(pos["x"] - (box["left"] + box["width"] / 2)) < 2
    # a real click in the refactor pane on another node: the reference and the compiled side follow
    other = d.graphs["refactor"].nodes(op="NativeLayerNormBackward0")[0]
    api(page, f"a.centre({other}, 1)")
    pos = api(page, f"a.nodeScreenPosition({other}, 1)")
    page.mouse.click(pos["x"], pos["y"])
    back = d.counterparts("refactor", other)
    got = wait_until(lambda: api(page, "a.selected(0)") == back["eager"] and api(page, "a.selectedAll()"))
    assert got == [back["eager"], other, back["compiled"] if back["compiled"] is not None else region]
    # a click on the compiled region: the reference's root follows, the nodes it covers are outlined there
    api(page, f"a.centre({region}, 2)")
    pos = api(page, f"a.nodeScreenPosition({region}, 2)")
    page.mouse.click(pos["x"], pos["y"])
    ref_root = d.pair(0, 2).counterpart(region, "b")
    got = wait_until(lambda: api(page, "a.selected(0)") == ref_root and api(page, "a.selectedAll()"))
    assert got == [ref_root, d.counterparts(d.reference, ref_root)["refactor"], region]
    api(page, "a.expandAll()")
    lit = set(api(page, "a.highlightedIds(0)"))
    assert lit == set(d.regions("compiled")[0]["covers"])
    w.assert_clean()


def test_pan_and_zoom_follow_in_every_pane(watched: Any, tmp_path: Path, nway: gw.MultiDiff) -> None:
    w = open_page(watched, nway.export_html(tmp_path / "nway.html"))
    page = w.page
    page.locator("#gw-nway-root").scroll_into_view_if_needed()
    assert api(page, "a.sync()") is True
    before = [api(page, f"a.camera({k})") for k in range(3)]
    box = api(page, "a.paneRects()[1]")
    x, y = box["left"] + box["width"] / 2, box["top"] + box["height"] - 80
    page.mouse.move(x, y)
    page.mouse.down()
    page.mouse.move(x + 50, y - 30, steps=4)
    page.mouse.up()
    after = [api(page, f"a.camera({k})") for k in range(3)]
    for b, a in zip(before, after):
        assert abs(a["tx"] - b["tx"] - 50) < 1e-6 and abs(a["ty"] - b["ty"] + 30) < 1e-6
    page.mouse.move(x, y)
    page.mouse.wheel(0, -300)
    wait_until(lambda: api(page, "a.camera(1)")["s"] != after[1]["s"])
    zoomed = [api(page, f"a.camera({k})") for k in range(3)]
    k1 = zoomed[1]["s"] / after[1]["s"]
    assert k1 > 1 and all(abs(z["s"] / a["s"] - k1) < 1e-9 for z, a in zip(zoomed, after))
    page.click("button[data-action=sync]")
    assert api(page, "a.sync()") is False
    page.mouse.move(x, y)
    page.mouse.down()
    page.mouse.move(x + 40, y, steps=3)
    page.mouse.up()
    assert api(page, "a.camera(0)") == zoomed[0] and api(page, "a.camera(2)") == zoomed[2]
    assert api(page, "a.camera(1)") != zoomed[1]
    w.assert_clean()


@pytest.mark.slow
@pytest.mark.parametrize("width", [1400, 1000, 800])
@pytest.mark.parametrize("dark", [False, True], ids=["light", "dark"])
def test_screens_light_and_dark_wrapping_when_narrow(watched: Any, tmp_path: Path, nway: gw.MultiDiff,
                                                      width: int, dark: bool) -> None:
    d = nway
    w = open_page(watched, d.export_html(tmp_path / "nway.html"), width=width, dark=dark)
    page = w.page
    rects = api(page, "a.paneRects()")
    tops = sorted({round(r["top"]) for r in rects})
    # three panes in a row while each gets 300 px (the panel takes room only once something is selected)
    room = page.evaluate("() => document.querySelector('#gw-nway-root .gw-panes, #gw-nway-root').clientWidth")
    assert len(tops) == (1 if room >= 3 * 300 else 2), (room, rects)
    if width == 1400:
        assert len(tops) == 1
    if width == 800:
        assert len(tops) == 2  # wrapped: two rows
    assert all(r["width"] >= 250 and r["height"] >= 150 for r in rects)
    node = d.graphs[d.reference].nodes(op="GeluBackward0")[0]
    api(page, f"a.select({node}, 0)")
    shot(page, f"npanes-three-{width}-{'dark' if dark else 'light'}.png")
    w.assert_clean()


@pytest.mark.parametrize("size", [(950, 530), (800, 600), (1400, 900)], ids=["pane", "800", "1400"])
@pytest.mark.parametrize("dark", [False, True], ids=["light", "dark"])
def test_the_verdict_is_whole_and_the_panel_opens_only_where_there_is_room(watched: Any, tmp_path: Path,
                                                                            size: Any, dark: bool) -> None:
    """At a notebook's output size the sentence wraps instead of being cut to "vs eager: refac…", and the panel
    does not open over or beside three panes that have no room for it; selecting a node still shows the Inspector, floating over the panes rather than squeezing them."""
    from graphwidget.examples import homography as ex

    def scaled(**inp: Any) -> Any:
        return ex.homography_broadcast(**inp) * 1.0
    # the seed's three ways: the advisor warns about repeat, so a roomy view opens on the Findings
    d = gw.compare({"repeat": ex.homography_repeat, "broadcast": ex.homography_broadcast, "scaled": scaled},
                   **ex.homography_inputs(batch=2, height=32, width=32))
    w = watched(viewport={"width": size[0], "height": size[1]}, color_scheme="dark" if dark else "light")
    page = w.page
    page.goto(d.export_html(tmp_path / "nway.html").as_uri())
    page.wait_for_selector('#gw-nway[data-gw-state="ready"]', timeout=120_000)
    api(page, "a.idle()")
    page.locator("#gw-nway-root").scroll_into_view_if_needed()
    strip = page.locator("#gw-nway-root .gw-nway-summary .gw-diff-sentence")
    assert strip.inner_text() == d.sentence()
    box = strip.evaluate("e => { const r = e.getBoundingClientRect(); return {w: e.scrollWidth, cw: e.clientWidth,"
                         " right: r.right, lines: Math.round(r.height / parseFloat(getComputedStyle(e).lineHeight))}; }")
    assert box["w"] <= box["cw"] and box["right"] <= size[0], box
    assert page.evaluate(f"() => {ROOT}.querySelector('.gw-title').textContent") == ""
    bar = page.evaluate(f"() => {ROOT}.querySelector('.gw-toolbar').getBoundingClientRect().width")
    assert bar <= size[0] and toolbar_overflow(page) == [], f"the N-way toolbar at {size[0]} px"
    panel = page.locator("#gw-nway-root .gw-side")
    roomy = size[0] >= 1300
    assert panel.is_visible() == roomy, "the panel opens by itself only beside three panes of 300 px"
    if roomy:
        assert page.locator("#gw-nway-root .gw-tab-findings").is_visible()
    before = api(page, "a.paneRects()")
    assert all(r["width"] >= 250 for r in before), before
    node = d.graphs[d.reference].nodes(op="RepeatBackward0")[0]
    api(page, f"a.centre({node}, 0)")
    pos = api(page, f"a.nodeScreenPosition({node}, 0)")
    page.mouse.click(pos["x"], pos["y"])
    assert wait_until(lambda: api(page, "a.selected(0)") == node)
    assert panel.is_visible() == roomy, "the Inspector opens by itself only where the panes leave it room"
    if not roomy:
        # asked for, it floats over the panes
        page.locator("#gw-nway-root .gw-paneltoggle").click()
        assert wait_until(lambda: panel.is_visible())
        assert page.locator("#gw-nway-root .gw-tab-inspector").is_visible()
        assert panel.evaluate("e => getComputedStyle(e).position") == "absolute"
        after = api(page, "a.paneRects()")
        assert [round(r["width"]) for r in after] == [round(r["width"]) for r in before], "the panes keep their room"
    shot(page, f"npanes-sentence-{size[0]}-{'dark' if dark else 'light'}.png")
    w.assert_clean()


def _rank_set(straggler: int = 3, branch: int = 2) -> Any:
    """Four ranks of a small step, times set by hand: one node slow on `straggler` (whose compute is the
    largest), `branch` taking a branch the others do not (its graph differs)."""
    import torch

    from graphwidget.analysis.ranks import RankSet
    lin = torch.nn.Linear(4, 4)

    def step(x: torch.Tensor, take: bool) -> torch.Tensor:
        h = torch.relu(lin(x))
        return (h * 2 if take else h).sum()

    graphs: Dict[int, Any] = {}
    for r in range(4):
        g = gw.profile(step, torch.randn(2, 4), r == branch, repeat=1, warmup=0)
        g.meta["rank"] = {"rank": r, "world_size": 4, "unused": ["<b>extra</b>.weight"] if r == 1 else []}
        for _, rec in g.nx.nodes(data=True):
            rec["fwd_ms"], rec["bwd_ms"] = 0.5, 1.0 + r / 10
        g.meta["timing"] = {"forward_ms": 5.0, "backward_ms": 10.0, "forward_ops_ms": 3.0,
                            "backward_nodes_ms": 6.0 + (40.0 if r == straggler else r / 10)}
        graphs[r] = g
    slow = graphs[straggler].nodes(op="AddmmBackward0")[0]
    graphs[straggler].nx.nodes[slow]["bwd_ms"] = 41.0
    return RankSet(graphs), slow


@pytest.mark.parametrize("width", [1400, 1000])
@pytest.mark.parametrize("dark", [False, True], ids=["light", "dark"])
def test_ranks_per_rank_times_in_the_inspector_and_the_stragglers_badge(watched: Any, tmp_path: Path,
                                                                          width: int, dark: bool) -> None:
    rs, slow = _rank_set()
    assert rs.straggler and rs.straggler["rank"] == 3
    w = open_page(watched, rs.export_html(tmp_path / "ranks.html", ranks="all"), width=width, dark=dark)
    page = w.page
    assert api(page, "a.panes()") == ["rank 0", "rank 1", "rank 2", "rank 3"]
    assert api(page, "a.colour()") == "rank_spread_ms"
    assert [api(page, f"a.paneBadges({k})") for k in range(4)] == [[], [], ["divergent"], ["straggler"]]
    assert "straggler +" in api(page, "a.headerText(3)")
    first = next(x for x in rs.divergent if x["rank"] == 2)["first"]
    assert f"graph differs at {Path(first['source']).name}" in api(page, "a.headerText(2)")
    assert first["source"] in page.locator(".gw-nway-pane[data-pane='2'] [data-badge=divergent]").get_attribute("title")
    # divergence marks: rank 2's extra node is "only on this rank"; the reference's counterpart-less nodes none
    extra = rs.pair(0, 2).added[0]
    assert api(page, f"a.status({extra}, 2)") == "added"
    assert api(page, f"a.counterparts({extra}, 2)") == [None, None, extra, None]
    # a real click on the slow node in rank 0's pane
    page.locator("#gw-nway-root").scroll_into_view_if_needed()
    api(page, f"a.centre({slow}, 0)")
    pos = api(page, f"a.nodeScreenPosition({slow}, 0)")
    page.mouse.click(pos["x"], pos["y"])
    wait_until(lambda: api(page, "a.selectedAll()")[3] is not None)
    assert api(page, "a.selectedAll()") == [slow, rs.mapping(1)[slow], rs.mapping(2)[slow], rs.mapping(3)[slow]]
    text = api(page, "a.inspectorText()")
    st = rs.node_stats(slow)
    assert st["straggler"] == 3
    assert "PER RANK" in text.upper() and "rank 3 (slowest)" in text
    for r in range(4):
        ms = st["times"][r] if "times" in st else None
        assert f"rank {r}" in text
        if ms is not None:
            assert f"{ms:.2f} ms" in text or f"{ms:.1f} ms" in text
    assert "41.5 ms" in text  # rank 3: 0.5 forward + 41 backward, the max
    rows = page.locator(".gw-nway-ranktimes tbody tr")
    assert rows.count() == 4 and "slowest" in rows.nth(3).inner_text()
    assert page.locator(".gw-nway-ranktimes .gw-nway-slowrow").count() == 1
    # the extra node of rank 2: only that rank has it
    api(page, f"a.select({extra}, 2)")
    assert "Only this rank has this node" in api(page, "a.inspectorText()")
    api(page, f"a.select({slow}, 0)")
    shot(page, f"npanes-ranks-{width}-{'dark' if dark else 'light'}.png")
    # the per-rank tables on top
    assert page.locator(".gw-nway-ranks tbody tr").count() == 4
    assert "<b>extra</b>.weight" in page.locator(".gw-nway-ranks").inner_text()  # shown as text
    w.assert_clean()


def test_a_rank_set_opens_coloured_by_each_nodes_spread_over_the_ranks(watched: Any, tmp_path: Path) -> None:
    import torch

    from graphwidget.analysis.ranks import RankSet
    lin = torch.nn.Linear(4, 4)

    def step(x: torch.Tensor, branch: bool) -> torch.Tensor:
        h = torch.relu(lin(x))
        return (h * 2 if branch else h).sum()

    graphs = {}
    for r in range(3):
        g = gw.profile(step, torch.randn(2, 4), r == 2, repeat=1, warmup=0)
        g.meta["rank"] = {"rank": r, "world_size": 3}
        for _, rec in g.nx.nodes(data=True):  # times set by hand: one node slow on rank 1, the rest alike
            rec["fwd_ms"], rec["bwd_ms"] = None, 1.0
        graphs[r] = g
    slow = graphs[1].nodes(op="AddmmBackward0")[0]
    graphs[1].nx.nodes[slow]["bwd_ms"] = 5.0
    rs = RankSet(graphs)
    assert rs.node_stats(slow)["spread_ms"] == 4.0
    w = open_page(watched, rs.export_html(tmp_path / "ranks.html", ranks=[0, 2]))
    page = w.page
    assert api(page, "a.colour()") == "rank_spread_ms"
    option = page.locator("#gw-nway-root select option[value='rank_spread_ms']").first
    assert option.inner_text() == "time spread over ranks" and option.get_attribute("disabled") is None
    assert "spread" in api(page, "a.legendText()")
    hot = api(page, f"a.nodeColour({slow}, 0)")
    calm = [api(page, f"a.nodeColour({n}, 0)") for n in rs[0].nx if n != slow]
    assert hot and all(c and c != hot for c in calm) and len(set(calm)) == 1  # every other node's spread is 0
    # rank 2's pane: its counterpart of the slow node has the same colour; its extra node (the branch) has none
    m2 = rs.mapping(2)
    assert api(page, f"a.nodeColour({m2[slow]}, 1)") == hot
    extra = rs.pair(0, 2).added[0]
    assert api(page, f"a.nodeColour({extra}, 1)") not in (hot, calm[0])
    # the hover says it
    page.locator("#gw-nway-root").scroll_into_view_if_needed()
    api(page, f"a.centre({slow}, 0)")
    pos = api(page, f"a.nodeScreenPosition({slow}, 0)")
    page.mouse.move(pos["x"], pos["y"])
    tip = page.locator(".gw-nway-pane").first.locator(".gw-tooltip:not([hidden])")
    text = wait_until(lambda: tip.count() == 1 and tip.inner_text())
    assert text and "spread over ranks 4" in text and "AddmmBackward0" in text
    w.assert_clean()


def covered_at_open(page: Any) -> list:
    """Drawn items that a pane's title (which wraps to two lines: a verdict, badges) or its zoom buttons cover,
    in every pane, as the page opens."""
    out = []
    for k in range(len(api(page, "a.panes()"))):
        boxes = page.evaluate("""(k) => { const pane = document.querySelectorAll('#gw-nway-root .gw-pane')[k];
            return Array.from(pane.querySelectorAll('.gw-zoom, .gw-pane-title')).filter((e) => e.offsetParent !== null)
                .map((e) => { const r = e.getBoundingClientRect(); return [e.className, r.left, r.top, r.right, r.bottom]; }); }""", k)
        assert any("gw-pane-title" in b[0] for b in boxes), f"pane {k} has no title"
        out += [f"pane {k}: {r['id']} under {b[0]}" for r in api(page, f"a.itemRects({k})") for b in boxes
                if r["left"] < b[3] and b[1] < r["right"] and r["top"] < b[4] and b[2] < r["bottom"]]
    return out


@pytest.mark.parametrize("width", [1400, 1000])
def test_no_pane_title_or_button_covers_a_node_at_open(watched: Any, tmp_path: Path, nway: gw.MultiDiff,
                                                        width: int) -> None:
    # the ranks' headers wrap to two lines (a verdict, a badge); rank 2's once covered its top leaf at 1400 px
    rs, _ = _rank_set()
    for name, path in (("ranks", rs.export_html(tmp_path / "ranks.html", ranks="all")),
                       ("three ways", nway.export_html(tmp_path / "nway.html"))):
        w = open_page(watched, path, width=width)
        page = w.page
        page.locator("#gw-nway-root").scroll_into_view_if_needed()
        assert covered_at_open(page) == [], f"{name} at {width} px"
        w.assert_clean()

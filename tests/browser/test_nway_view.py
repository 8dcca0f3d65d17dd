"""The N-way export in a real Chromium: gw.compare of a small transformer block three ways (eager, a refactor,
torch.compile), written by export_html and opened as a file. Until the front end draws N synced panes, the page
stacks one diff view (reference, side) per side: every pane must be drawn with what Python computed, and a click
in one pane must select the counterparts in every pane. No network request, no page error."""
from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from nway_models import three_ways
from pagekit import wait_until

import graphwidget as gw

PANES = "document.querySelectorAll('.gw-nway-pane')"


def api(page: Any, k: int, expr: str) -> Any:
    """``expr`` on pane ``k`` (0: the first side after the reference) with ``a`` its automation API."""
    return page.evaluate(f"async () => {{ const a = {PANES}[{k}].graphwidget; return await ({expr}); }}")


@pytest.fixture(scope="module")
def nway() -> gw.MultiDiff:
    sides, x = three_ways()
    return gw.compare(sides, x, advise=False)


def open_page(watched: Any, path: Path) -> Any:
    w = watched(viewport={"width": 1400, "height": 900})
    w.page.goto(path.as_uri())
    w.page.wait_for_selector('#gw-nway[data-gw-state="ready"]', timeout=120_000)
    return w


def test_every_pane_is_drawn_with_what_python_computed(watched: Any, tmp_path: Path, nway: gw.MultiDiff) -> None:
    d = nway
    w = open_page(watched, d.export_html(tmp_path / "nway.html"))
    page = w.page
    assert page.locator(".gw-nway-pane").count() == len(d.sides) - 1 == 2
    for k in range(1, len(d.sides)):
        p = d.pair(0, k)
        assert api(page, k - 1, "a.panes()") == [d.reference, d.sides[k]]
        assert api(page, k - 1, "a.graphNodeCount('a')") == len(p.a)
        assert api(page, k - 1, "a.graphNodeCount('b')") == len(p.b)
        assert api(page, k - 1, "a.visibleNodeIds('a').length") > 0 and api(page, k - 1, "a.visibleNodeIds('b')"
                                                                            ".length") > 0
        box = page.locator(".gw-nway-pane").nth(k - 1).locator(".gw-canvas").first.bounding_box()
        assert box and box["width"] > 100 and box["height"] > 100
        status = api(page, k - 1, f"Object.fromEntries({sorted(p.b.nx.nodes)}.map(i => [i, a.status(i, 'b')]))")
        assert {int(i): s for i, s in status.items()} == {i: p.status(i, "b") for i in p.b.nx.nodes}
    # the verdict table on top is Python's
    assert page.locator(".gw-nway-sentence").inner_text() == d.sentence()
    assert page.locator(".gw-nway-table tbody tr").count() == 3
    assert "What got fused" in page.locator(".gw-nway-regions").inner_text()
    w.assert_clean()


def test_a_click_in_one_pane_selects_the_counterparts_in_all(watched: Any, tmp_path: Path,
                                                              nway: gw.MultiDiff) -> None:
    d = nway
    w = open_page(watched, d.export_html(tmp_path / "nway.html"))
    page = w.page
    ref = d.graphs[d.reference]
    node = ref.nodes(op="GeluBackward0")[0]
    # a real click on the reference's GELU in the first pane (eager vs refactor)
    page.locator(".gw-nway-pane").nth(0).scroll_into_view_if_needed()
    api(page, 0, f"a.centre({node}, 'a')")
    pos = api(page, 0, f"a.nodeScreenPosition({node}, 'a')")
    page.mouse.click(pos["x"], pos["y"])
    want = d.counterparts(d.reference, node)
    got = wait_until(lambda: api(page, 1, "a.selected('a')") == node and
                     [api(page, k, "[a.selected('a'), a.selected('b')]") for k in (0, 1)])
    assert got == [[node, want["refactor"]], [node, want["compiled"]]]  # compiled: fused, no node of its own
    assert page.locator("#gw-nway").get_attribute("data-gw-selected") == str(node)
    # a click on the compiled side's region (the root, matched to the reference's root) follows in the first pane
    region = d.regions("compiled")[0]["node"]
    page.locator(".gw-nway-pane").nth(1).scroll_into_view_if_needed()
    api(page, 1, f"a.centre({region}, 'b')")
    pos = api(page, 1, f"a.nodeScreenPosition({region}, 'b')")
    page.mouse.click(pos["x"], pos["y"])
    ref_root = d.pair(0, 2).counterpart(region, "b")
    got = wait_until(lambda: api(page, 0, "a.selected('a')") == ref_root and
                     api(page, 0, "[a.selected('a'), a.selected('b')]"))
    assert got == [ref_root, d.counterparts(d.reference, ref_root)["refactor"]]
    assert api(page, 1, "[a.selected('a'), a.selected('b')]") == [ref_root, region]
    shots = Path("/tmp/gw-shots")
    shots.mkdir(exist_ok=True)
    page.screenshot(path=str(shots / "nway-three-ways.png"), full_page=True)
    w.assert_clean()


def test_a_rank_set_export_draws_its_panes_and_the_per_rank_tables(watched: Any, tmp_path: Path) -> None:
    import torch

    from graphwidget.analysis.ranks import RankSet
    lin = torch.nn.Linear(4, 4)

    def step(x: torch.Tensor, branch: bool) -> torch.Tensor:
        h = torch.relu(lin(x))
        return (h * 2 if branch else h).sum()

    graphs = {}
    for r in range(3):
        g = gw.profile(step, torch.randn(2, 4), r == 2, repeat=1, warmup=0)
        g.meta["rank"] = {"rank": r, "world_size": 3, "unused": ["<b>extra</b>.weight"] if r == 1 else []}
        graphs[r] = g
    rs = RankSet(graphs)
    w = open_page(watched, rs.export_html(tmp_path / "ranks.html", ranks=[0, 2]))
    page = w.page
    assert page.locator(".gw-nway-pane").count() == 1
    assert api(page, 0, "a.panes()") == ["rank 0", "rank 2"]
    assert api(page, 0, "a.status(" + str(rs.pair(0, 2).added[0]) + ", 'b')") == "added"
    assert page.locator(".gw-nway-ranks tbody tr").count() == 3
    assert "<b>extra</b>.weight" in page.locator(".gw-nway-ranks").inner_text()  # shown as text
    assert page.locator(".gw-nway-divergent").count() == 1
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
    assert api(page, 0, "a.colour()") == "rank_spread_ms"
    option = page.locator(".gw-nway-pane select option[value='rank_spread_ms']").first
    assert option.inner_text() == "time spread over ranks" and option.get_attribute("disabled") is None
    assert "spread" in api(page, 0, "a.legendText()")
    hot = api(page, 0, f"a.nodeColour({slow}, 'a')")
    calm = [api(page, 0, f"a.nodeColour({n}, 'a')") for n in rs[0].nx if n != slow]
    assert hot and all(c and c != hot for c in calm) and len(set(calm)) == 1  # every other node's spread is 0
    # rank 2's pane: its counterpart of the slow node has the same colour; its extra node (the branch) has none
    m2 = rs.mapping(2)
    assert api(page, 0, f"a.nodeColour({m2[slow]}, 'b')") == hot
    extra = rs.pair(0, 2).added[0]
    assert api(page, 0, f"a.nodeColour({extra}, 'b')") not in (hot, calm[0])
    # the hover says it
    api(page, 0, f"a.centre({slow}, 'a')")
    pos = api(page, 0, f"a.nodeScreenPosition({slow}, 'a')")
    page.mouse.move(pos["x"], pos["y"])
    tip = page.locator(".gw-nway-pane").first.locator(".gw-tooltip:not([hidden])")
    text = wait_until(lambda: tip.count() == 1 and tip.inner_text())
    assert text and "spread over ranks 4" in text and "AddmmBackward0" in text
    shots = Path("/tmp/gw-shots")
    shots.mkdir(exist_ok=True)
    page.screenshot(path=str(shots / "nway-ranks-spread.png"))
    w.assert_clean()

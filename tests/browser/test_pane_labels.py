"""Node labels at the sizes people get (issue 34): a notebook's output pane (950x530), 800 and 600 px wide, light
and dark. The seed diff opened in Chromium must name its culprit: the op of every node only one side has (Repeat,
the answer to the seed question) is drawn whole, never cut to "Rep…", wherever it is drawn as a node box; long op
names are drawn in their short box form ("AccGrad"), the full name in the tooltip and the Inspector."""
from __future__ import annotations

from pathlib import Path
from typing import Any, Dict, List

import pytest
from pagekit import API, next_frame, toolbar_overflow, wait_ready

import graphwidget as gw

SHOTS = Path("/tmp/gw-shots")
SIZES = [(950, 530), (800, 600), (600, 500)]


def api(page: Any, expr: str, arg: Any = None) -> Any:
    return page.evaluate(f"async (arg) => {{ const a = {API}; return await ({expr}); }}", arg)


@pytest.fixture(scope="module")
def seed_diff() -> gw.Diff:
    inp = gw.examples.homography_inputs(batch=2, height=16, width=16)
    return gw.compare(gw.examples.homography_repeat, gw.examples.homography_broadcast, **inp,
                      labels=("repeat", "broadcast"), profile=True, repeat=3)


def _drawn_nodes(page: Any, side: str, ids: List[int]) -> Dict[int, Any]:
    """For each node id drawn as its own box on screen: the label the last frame drew on it (None: none)."""
    rects = {r["id"]: r for r in api(page, f"a.itemRects({side!r})") if isinstance(r["id"], int)}
    return {i: api(page, f"a.labelText(arg, {side!r})", i) for i in ids if i in rects}


@pytest.mark.parametrize("size", SIZES, ids=[f"{w}x{h}" for w, h in SIZES])
@pytest.mark.parametrize("dark", [False, True], ids=["light", "dark"])
def test_the_seed_diffs_culprit_is_named_whole_at_pane_sizes(watched: Any, tmp_path: Path, seed_diff: gw.Diff,
                                                             size: Any, dark: bool) -> None:
    d = seed_diff
    w = watched(viewport={"width": size[0], "height": size[1]}, color_scheme="dark" if dark else "light")
    page = w.page
    page.goto(gw.export_html(d, tmp_path / "diff.html").as_uri())
    wait_ready(page)
    api(page, "a.idle()")
    next_frame(page)
    removed = sorted(d.removed)
    rep = d.a.nodes(op="RepeatBackward0")[0]
    assert rep in removed
    labels = _drawn_nodes(page, "a", removed)
    assert rep in labels, "the repeat node is drawn as its own box in the first view"
    assert labels[rep] == "Repeat", labels
    for i, text in labels.items():
        op = d.a.nx.nodes[i]["op"]
        assert text is not None and "…" not in text, (op, text)
    # the added nodes that are drawn as boxes of their own are named whole too
    added = _drawn_nodes(page, "b", sorted(d.added))
    for i, text in added.items():
        assert text is not None and "…" not in text, (d.b.nx.nodes[i]["op"], text)
    # long names in their box form; the tooltip keeps the full one
    leaf = d.a.nodes(op="AccumulateGrad")[0]
    if leaf in _drawn_nodes(page, "a", [leaf]):
        assert api(page, "a.labelText(arg, 'a')", leaf) in ("AccGrad", None)
    # and the toolbar above keeps every control whole (at 800 px the status "Δ36 +12 −2" ran past the edge)
    assert toolbar_overflow(page) == [], f"the diff's toolbar at {size[0]} px"
    SHOTS.mkdir(exist_ok=True)
    page.mouse.move(0, 0)
    page.screenshot(path=str(SHOTS / f"pane-labels-seed-{size[0]}-{'dark' if dark else 'light'}.png"))
    w.assert_clean()


def test_a_small_graphs_labels_are_whole_in_a_600_px_pane(watched: Any, tmp_path: Path) -> None:
    """The graph view: the repeat side alone at 600x400, its culprit and its hottest nodes named whole."""
    inp = gw.examples.homography_inputs(batch=2, height=16, width=16)
    g = gw.trace(gw.examples.homography_repeat, **inp)
    w = watched(viewport={"width": 600, "height": 400})
    page = w.page
    page.goto(gw.export_html(g, tmp_path / "g.html").as_uri())
    wait_ready(page)
    api(page, "a.idle()")
    next_frame(page)
    rep = g.nodes(op="RepeatBackward0")[0]
    assert api(page, "a.labelText(arg)", rep) == "Repeat"
    w.assert_clean()

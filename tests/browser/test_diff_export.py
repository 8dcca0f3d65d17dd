"""End to end: a diff made by Python (gw.compare on the seed pair), written by gw.export_html, opened in a real
Chromium. The view must show what the Python side computed — the same statuses, counterparts, verdicts and counts —
with zero network requests and hostile labels shown as text. (tests/browser/test_diff_view.py tests the view on
hand-written documents; this one ties the two sides together.)"""
from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
from pagekit import API, wait_ready

import graphwidget as gw


def api(page: Any, expr: str) -> Any:
    return page.evaluate(f"async () => {{ const a = {API}; return await ({expr}); }}")


@pytest.fixture(scope="module")
def seed_diff() -> gw.Diff:
    inp = gw.examples.homography_inputs(batch=2, height=16, width=16)
    return gw.compare(gw.examples.homography_repeat, gw.examples.homography_broadcast, **inp,
                      labels=("repeat", "broadcast"), profile=True, repeat=3)


def open_page(watched: Any, path: Path) -> Any:
    w = watched(viewport={"width": 1400, "height": 850})
    w.page.goto(path.as_uri())
    wait_ready(w.page)
    return w


def test_python_diff_renders_with_its_statuses_counterparts_and_verdicts(watched: Any, tmp_path: Path,
                                                                        seed_diff: gw.Diff) -> None:
    d = seed_diff
    w = open_page(watched, gw.export_html(d, tmp_path / "diff.html"))
    page = w.page
    assert api(page, "a.panes()") == ["repeat", "broadcast"]
    assert api(page, "a.graphNodeCount('a')") == len(d.a) and api(page, "a.graphNodeCount('b')") == len(d.b)
    # every node's status is the one Python computed
    status_a = api(page, f"Object.fromEntries({sorted(d.a.nx.nodes)}.map(i => [i, a.status(i, 'a')]))")
    status_b = api(page, f"Object.fromEntries({sorted(d.b.nx.nodes)}.map(i => [i, a.status(i, 'b')]))")
    assert {int(k): v for k, v in status_a.items()} == {i: d.status(i, "a") for i in d.a.nx.nodes}
    assert {int(k): v for k, v in status_b.items()} == {i: d.status(i, "b") for i in d.b.nx.nodes}
    # selecting a node on A selects its counterpart on B; a removed node has none
    sel = next(a for a, _, f in d.changed if "outputs" in f)
    assert api(page, f"a.select({sel}, 'a')") is True
    assert api(page, "a.selected('b')") == d.counterpart(sel, "a")
    rep = d.a.nodes(op="RepeatBackward0")[0]
    api(page, f"a.select({rep}, 'a')")
    assert api(page, "a.selected('b')") is None
    assert "no counterpart" in api(page, "a.inspectorText()").lower()
    # the summary strip leads with Python's sentence, then carries the verdicts in Python's words and numbers
    summary = api(page, "a.summaryText()")
    assert summary.splitlines()[0] == d.sentence()
    sentence = page.locator(".gw-diff-sentence")
    assert sentence.inner_text() == d.sentence() and sentence.is_visible()
    assert "equivalent" in summary.lower()
    t = d.timing
    # the strip prints the whole step's ratio to 3 significant digits ("whole step B/A ×0.148 [0.137–1.53]"), the
    # one the verdict uses (its definition on hover): read it back
    shown = re.search(r"whole step B/A ×([0-9.]+)", summary)
    assert shown and float(shown.group(1)) == pytest.approx(t["ratio"], rel=0.01) and t["verdict"] in summary
    assert "median over interleaved rounds" in page.locator(".gw-sum-timing").get_attribute("title")
    # node counts mislead: their change is never coloured as worse or better
    assert "gw-same" in page.locator("[data-key=nodes] .gw-sum-delta").get_attribute("class")
    changes = api(page, "a.changesText()")
    assert "RepeatBackward0" in changes and "UnsqueezeBackward0" in changes
    w.assert_clean()


def test_hostile_labels_and_a_maths_change_banner(watched: Any, tmp_path: Path) -> None:
    import torch
    x = torch.randn(4, 3, requires_grad=True)
    evil = "<img src=x onerror=alert(1)>"
    d = gw.compare(lambda t: t.exp().sum(), lambda t: (t.exp() * 2).sum(), x, labels=(evil, "</script><b>b</b>"))
    assert d.equivalent is False
    w = open_page(watched, gw.export_html(d, tmp_path / "evil.html"))
    page = w.page
    assert api(page, "a.panes()") == [evil, "</script><b>b</b>"]
    assert page.locator(".gw-pane-title").all_text_contents() == [evil, "</script><b>b</b>"]
    assert page.locator("img[src=x]").count() == 0
    assert "not equivalent" in api(page, "a.summaryText()").lower()
    w.assert_clean()  # no requests, no page errors, no dialogs (no script ran)

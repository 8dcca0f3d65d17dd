"""Small things of the viewer that look broken when wrong (issue 34): the tooltip after a click selects a node, and
source paths in the Inspector (shortened for reading, the full path on hover)."""
from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import fixtures as fx
from pagekit import API, wait_ready

from graphwidget.views.export import export_html


def _open(watched: Any, tmp_path: Path, graph: Any, width: int = 950, height: int = 530) -> Any:
    path = export_html(graph, tmp_path / "g.html")
    w = watched(viewport={"width": width, "height": height})
    w.page.goto(path.as_uri())
    wait_ready(w.page)
    # the nodes themselves, not the module groups they open in at this size
    _api(w.page, "a.expandAll()")
    _api(w.page, "a.idle()")
    return w


def _api(page: Any, expr: str) -> Any:
    return page.evaluate(f"async () => {{ const a = {API}; return await ({expr}); }}")


def _at(page: Any, node_id: int) -> Any:
    assert _api(page, f"a.centre({node_id})")
    return _api(page, f"a.nodeScreenPosition({node_id})")


def test_a_click_that_selects_a_node_takes_its_tooltip_away(watched: Any, tmp_path: Path) -> None:
    g = fx.mlp(2)
    w = _open(watched, tmp_path, g)
    tip = w.page.locator(".gw-tooltip")
    addmm = next(n["id"] for n in g["nodes"] if n["op"] == "AddmmBackward0")
    pos = _at(w.page, addmm)
    w.page.mouse.move(pos["x"], pos["y"])
    tip.wait_for(state="visible")
    w.page.mouse.click(pos["x"], pos["y"])
    w.page.wait_for_function(f"() => {API}.selected() === {addmm}")
    assert tip.is_hidden(), "the Inspector shows the node now: the tooltip must not stay over its neighbours"
    _api(w.page, "a.idle()")
    pos = _api(w.page, f"a.nodeScreenPosition({addmm})")  # a selection may move the view
    # the hand trembles on the node it clicked: still no tooltip
    w.page.mouse.move(pos["x"] + 2, pos["y"] + 1)
    w.page.mouse.move(pos["x"] + 1, pos["y"] - 1)
    assert tip.is_hidden()
    # another node: its tooltip, as before
    other = next(n["id"] for n in g["nodes"] if n["op"] == "SumBackward0")
    pos2 = _api(w.page, f"a.nodeScreenPosition({other})")
    w.page.mouse.move(pos2["x"], pos2["y"])
    tip.wait_for(state="visible")
    assert "SumBackward0" in tip.text_content()
    # and back on the selected node, hovered anew: its tooltip again
    w.page.mouse.move(pos["x"], pos["y"])
    w.page.wait_for_function("() => document.querySelector('.gw-tooltip').textContent.includes('Addmm')")
    assert tip.is_visible()
    w.assert_clean()


def test_inspector_shows_sources_relative_with_the_full_path_on_hover(watched: Any, tmp_path: Path) -> None:
    g = copy.deepcopy(fx.mlp(2))
    lib = "/home/u/.venv/lib/python3.11/site-packages/transformers/models/gpt2/modeling_gpt2.py:88"
    for n in g["nodes"]:
        if n["source"]:
            n["source"] = "/home/u/project/src/" + n["source"]
    addmm = next(n for n in g["nodes"] if n["op"] == "AddmmBackward0")
    relu = next(n for n in g["nodes"] if n["op"] == "ReluBackward0")
    relu["source"] = lib
    w = _open(watched, tmp_path, g, width=800, height=600)
    cell = w.page.locator(".gw-tab-inspector .gw-path").first
    for node, shown, full in ((addmm, "model.py:11", addmm["source"]),
                              (relu, "transformers/models/gpt2/modeling_gpt2.py:88", lib)):
        pos = _at(w.page, node["id"])
        w.page.mouse.click(pos["x"], pos["y"])
        w.page.wait_for_function(f"() => {API}.selected() === {node['id']}")
        assert cell.text_content() == shown
        assert cell.get_attribute("title") == full
        # at most two lines in the Inspector's column at 800 px, not the three or more of the full path
        box = cell.bounding_box()
        line = w.page.evaluate("(el) => parseFloat(getComputedStyle(el).lineHeight) || 16", cell.element_handle())
        assert box is not None and box["height"] < 2.5 * line, (shown, box, line)
    w.assert_clean()

"""Colour by "alive at the peak" (issue #21, docs/memory.md): the export of a memory-profiled graph in a real
Chromium, every network request refused and recorded. The colour menu offers the metric, picking it paints each node
by the bytes it holds at the memory peak (the largest in the palette's last colour), the legend says what it is, and
the inspector shows the node's peak in human units. A graph without a memory record cannot pick it.

Screenshots go to $GW_SHOTS when it is set (peak-light.png, peak-dark.png).
"""
from __future__ import annotations

import os
from pathlib import Path
from typing import Any, Dict, List, Tuple

import fixtures as fx
import pytest
from pagekit import next_frame, wait_ready

from graphwidget.views.export import export_html

API = "document.querySelector('.graphwidget-root').graphwidget"
# js/src/model/colour.ts PALETTE: the first (least) and the last (most) colour of the scale
PALE = (0xFF, 0xF7, 0xBC)
HOT = (0x66, 0x25, 0x06)
HOT_DARK = (0xFD, 0xE6, 0x8A)  # a dark page's palette runs dim -> bright: its hot end is the bright one


def api(page: Any, expr: str) -> Any:
    return page.evaluate(f"async () => {{ const a = {API}; return await ({expr}); }}")


def rgb(hex_colour: str) -> Tuple[int, int, int]:
    v = int(hex_colour.lstrip("#"), 16)
    return (v >> 16) & 255, (v >> 8) & 255, v & 255


def luminance(c: Tuple[int, int, int]) -> float:
    return 0.3 * c[0] + 0.59 * c[1] + 0.11 * c[2]


def human(b: int) -> str:
    """js/src/model/format.ts formatBytesLong, for the sizes this test meets."""
    if b < 1024:
        return f"{b} B"
    v, units = float(b), ["B", "KiB", "MiB", "GiB"]
    u = 0
    while v >= 1024 and u < len(units) - 1:
        v /= 1024
        u += 1
    digits = 0 if v >= 100 else 1 if v >= 10 else 2
    return f"{v:.{digits}f} {units[u]} ({b:,} B)"


@pytest.fixture(scope="module")
def memory_graph() -> Any:
    import torch
    from memory_models import Funnel

    import graphwidget as gw
    torch.manual_seed(0)
    return gw.profile(Funnel(), torch.randn(128, 64), repeat=1, warmup=0, memory=True)


@pytest.fixture(scope="module")
def memory_page(memory_graph: Any, tmp_path_factory: Any) -> Path:
    return export_html(memory_graph, tmp_path_factory.mktemp("peak") / "peak.html", title="memory peak")


def fill_pixels(page: Any, rect: Dict[str, float]) -> List[Tuple[int, int, int]]:
    """Canvas pixels on a grid inside a drawn item's rectangle (device pixels read back from the 2D context): the
    label covers some, the fill the rest."""
    return [tuple(p) for p in page.evaluate("""(r) => { const c = document.querySelector('.gw-canvas');
        const b = c.getBoundingClientRect(), d = c.width / b.width, ctx = c.getContext('2d'), out = [];
        for (let i = 1; i < 8; i++) for (let j = 1; j < 4; j++) {
          const x = r.left + (r.right - r.left) * i / 8, y = r.top + (r.bottom - r.top) * j / 4;
          out.push(Array.from(ctx.getImageData(Math.round((x - b.left) * d), Math.round((y - b.top) * d), 1, 1).data.slice(0, 3)));
        }
        return out; }""", rect)]


def near(a: Tuple[int, ...], b: Tuple[int, ...], tol: int = 6) -> bool:
    return all(abs(p - q) <= tol for p, q in zip(a, b))


@pytest.mark.parametrize("scheme", ["light", "dark"])
def test_picking_the_peak_colour_paints_nodes_by_what_they_hold_at_the_peak(
        watched: Any, memory_graph: Any, memory_page: Path, scheme: str) -> None:
    g = memory_graph
    peak = {v: g.node(v)["peak_bytes"] for v in g.nodes()}
    top = max(peak, key=lambda v: peak[v])
    assert sorted(peak.values())[-2] < peak[top], "the model must give one node the largest peak"
    assert len({b for b in peak.values() if b > 0}) >= 4, "the model must give the nodes different peaks"

    w = watched(viewport={"width": 1300, "height": 800}, color_scheme=scheme)
    page = w.page
    page.goto(memory_page.as_uri())
    wait_ready(page)
    api(page, "a.expandAll()")
    api(page, "a.idle()")
    assert api(page, "a.colour()") == "bwd_ms"  # a profiled graph opens on backward time (Python's default)
    option = page.locator(".gw-colour option[value=peak_bytes]")
    assert option.is_enabled() and option.text_content() == "alive at the peak"

    # the real control, as a reader picks it
    page.select_option(".gw-colour", "peak_bytes")
    assert api(page, "a.colour()") == "peak_bytes"
    next_frame(page)
    legend = api(page, "a.legendText()")
    assert "alive at the peak" in legend and "held at the memory peak" in legend
    assert human(peak[top]).split(" (")[0] in legend  # the scale's top tick is the largest peak

    fills = {v: api(page, f"a.nodeColour({v})") for v in peak}
    assert all(f is not None for f in fills.values()), "every node is drawn once the groups are open"
    # the largest peak gets the top of the palette, a node that holds nothing the bottom
    assert rgb(fills[top]) == HOT
    assert all(rgb(fills[v]) == PALE for v in peak if peak[v] == 0)
    # more bytes at the peak is never a lighter fill, and different peaks (two decades apart or more) differ
    order = sorted(peak, key=lambda v: peak[v])
    lums = [luminance(rgb(fills[v])) for v in order]
    assert lums == sorted(lums, reverse=True), [(peak[v], fills[v]) for v in order]
    assert len({fills[v] for v in peak if peak[v] > 0}) >= 3

    # and that is what is on the canvas: the top node's box is painted in the top colour
    api(page, f"a.centre({top})")
    next_frame(page)
    rect = next(r for r in api(page, "a.itemRects()") if r["id"] == top)
    drawn = HOT_DARK if scheme == "dark" else HOT
    assert any(near(p, drawn) for p in fill_pixels(page, rect)), fill_pixels(page, rect)

    # the inspector shows the node's peak in human units (and the exact count)
    pos = api(page, f"a.nodeScreenPosition({top})")
    page.mouse.click(pos["x"], pos["y"])
    page.wait_for_function(f"() => {API}.selected() === {top}")
    text = api(page, "a.inspectorText()")
    assert "alive at the peak" in text and human(peak[top]) in text, text
    # and so does its tooltip, hovered anew (the click that selected it took its tooltip away)
    tip = page.locator(".gw-tooltip")
    assert tip.is_hidden()
    page.mouse.move(5, 795)
    api(page, "a.idle()")
    pos = api(page, f"a.nodeScreenPosition({top})")  # a selection may move the view
    page.mouse.move(pos["x"], pos["y"])
    tip.wait_for(state="visible")
    assert f"alive at the peak {human(peak[top]).split(' (')[0]}" in tip.text_content()
    page.mouse.move(5, 795)  # off the graph, for the screenshot

    shots = os.environ.get("GW_SHOTS")
    if shots:
        Path(shots).mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(Path(shots) / f"peak-{scheme}.png"))
    w.assert_clean()


def test_a_graph_without_a_memory_record_cannot_pick_the_peak_colour(watched: Any, tmp_path: Path) -> None:
    w = watched(viewport={"width": 1000, "height": 700})
    w.page.goto(export_html(fx.mlp(2), tmp_path / "plain.html").as_uri())
    wait_ready(w.page)
    assert w.page.locator(".gw-colour option[value=peak_bytes]").is_disabled()
    assert api(w.page, "a.colour()") != "peak_bytes"
    w.assert_clean()

"""A big drawing moves as a bitmap while the user zooms or drags it (js/src/canvas/cache.ts), in Chromium: during a
wheel gesture on a fully expanded 10k-node graph frames come from the bitmap of the last full frame; once the
gesture rests the pane draws in full again, and that frame is the same picture a full redraw at the same camera
makes; a small graph is never drawn from a bitmap. (bench_fps.py measures the frame rates.)"""
from __future__ import annotations

from pathlib import Path
from typing import Any

import fixtures as fx
from pagekit import API, next_frame, wait_ready

from graphwidget.views.export import export_html

WHEEL = """async ([n, delta]) => { const c = document.querySelector('.gw-pane canvas'), r = c.getBoundingClientRect();
  for (let k = 0; k < n; k++) {
    c.dispatchEvent(new WheelEvent('wheel', {deltaY: delta, clientX: r.left + r.width / 2, clientY: r.top + r.height / 2,
                                             bubbles: true, cancelable: true}));
    await new Promise((res) => requestAnimationFrame(res)); } }"""
PIXELS = """() => { const c = document.querySelector('.gw-pane canvas');
  const d = c.getContext('2d').getImageData(0, 0, c.width, c.height).data; let h = 0;
  for (let i = 0; i < d.length; i += 7) h = (h * 31 + d[i]) >>> 0; return h; }"""


def api(page: Any, expr: str) -> Any:
    return page.evaluate(f"async () => {{ const a = {API}; return await ({expr}); }}")


def _open(watched: Any, path: Path) -> Any:
    w = watched(viewport={"width": 1000, "height": 700})
    w.page.goto(path.as_uri())
    wait_ready(w.page)
    w.page.locator(".gw-pane canvas").first.focus()  # engaged: the wheel zooms
    return w


def test_a_big_drawing_zooms_as_a_bitmap_and_rests_on_a_full_frame(watched: Any, tmp_path: Path) -> None:
    w = _open(watched, export_html(fx.random_dag(10_000, modules=False), tmp_path / "big.html"))
    page = w.page
    api(page, "a.expandAll()")
    api(page, "a.idle()")
    assert len(api(page, "a.visibleNodeIds()")) == 10_000
    before = api(page, "a.timings")
    s0 = api(page, "a.labelStats().scale")
    page.evaluate(WHEEL, [12, -60])
    during = api(page, "a.timings")
    assert during["cachedFrames"] - before["cachedFrames"] >= 6, (before, during)
    assert api(page, "a.labelStats().scale") > s0, "the wheel zoomed in"
    # at rest: one full frame, at the camera the gesture left
    page.wait_for_timeout(400)
    next_frame(page)
    rested = api(page, "a.timings")
    assert rested["fullFrames"] > during["fullFrames"], "the gesture's end is drawn in full"
    assert rested["cachedFrames"] == during["cachedFrames"]
    shown = page.evaluate(PIXELS)
    # a redraw for another reason (the same colour chosen again) at the same camera: the same picture
    api(page, "a.colourBy(a.colour())")
    next_frame(page)
    assert api(page, "a.timings")["fullFrames"] > rested["fullFrames"]
    assert page.evaluate(PIXELS) == shown, "the rested frame is the full drawing, not the stretched bitmap"
    w.assert_clean()


def test_a_small_graph_is_never_drawn_from_a_bitmap(watched: Any, tmp_path: Path) -> None:
    w = _open(watched, export_html(fx.mlp(4), tmp_path / "small.html"))
    page = w.page
    page.evaluate(WHEEL, [10, -60])
    page.wait_for_timeout(300)
    t = api(page, "a.timings")
    assert t["cachedFrames"] == 0 and t["fullFrames"] > 5, t
    w.assert_clean()

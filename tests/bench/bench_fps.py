"""A big graph, fully expanded, while the user zooms and pans it: frames per second in Chromium.

    .venv/bin/python tests/bench/bench_fps.py [--quick] [--steps 40]

Each graph (a random DAG of 10k nodes without modules, a 100k-node chain and, in the full mode, a 100k random DAG)
is exported, opened at 1400x900, *Expand all* is timed (the click to the drawn layout: the load time of the
expanded view), and then, inside the page, ``--steps`` wheel events are sent to the canvas one per animation frame —
zooming out, zooming back in, and dragging (pointer events) — and the page's own clock times each frame. Printed per
gesture: frames per second (steps / elapsed), the slowest frame, and how many frames the pane drew in full and how
many from the bitmap of its last full frame (js/src/canvas/cache.ts). The zoom buttons' frames are always drawn in
full: their median and slowest frame say what a frame costs without the bitmap. The headless browser has no GPU: the
canvas rasterises in software, as on a machine without one. The frame clock caps at the display's 60 Hz.

Target (issue 34): at least 30 FPS on a 100k-node graph fully expanded, on a quiet machine. Nothing is asserted.
"""
from __future__ import annotations

import argparse
import os
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Dict, List

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests" / "browser"))
sys.path.insert(0, str(Path(__file__).resolve().parent))
import fixtures as fx  # noqa: E402
from chromium_page import API, ARGS, open_ready  # noqa: E402

from graphwidget.views.export import export_html  # noqa: E402

#: One gesture inside the page: `n` steps, one per animation frame; each step a wheel event (zoom by `delta`) or a
#: pointer move of a drag. Returns the frame times (ms) and the pane's frame counts.
GESTURE = """async ([kind, delta, n]) => {
  const a = @API@, c = document.querySelector('.gw-pane canvas'), r = c.getBoundingClientRect();
  const cx = r.left + r.width / 2, cy = r.top + r.height / 2;
  const frame = () => new Promise((res) => requestAnimationFrame(res));
  const before = a.timings;
  if (kind === 'drag') c.dispatchEvent(new PointerEvent('pointerdown', {clientX: cx, clientY: cy, button: 0, pointerId: 1, bubbles: true}));
  await frame();
  const ms = []; let last = performance.now(); const t0 = last;
  for (let k = 0; k < n; k++) {
    if (kind === 'wheel') c.dispatchEvent(new WheelEvent('wheel', {deltaY: delta, clientX: cx, clientY: cy, bubbles: true, cancelable: true}));
    else if (kind === 'drag') c.dispatchEvent(new PointerEvent('pointermove', {clientX: cx + (k % 20 < 10 ? k % 10 : 10 - k % 10) * delta, clientY: cy, pointerId: 1, bubbles: true}));
    else document.querySelectorAll('.gw-zoom button')[delta < 0 ? 0 : 1].click();
    await frame();
    const now = performance.now(); ms.push(now - last); last = now;
  }
  const elapsed = performance.now() - t0;
  if (kind === 'drag') c.dispatchEvent(new PointerEvent('pointerup', {clientX: cx, clientY: cy, button: 0, pointerId: 1, bubbles: true}));
  const after = a.timings;
  return {ms, elapsed, full: after.fullFrames - before.fullFrames, cached: after.cachedFrames - before.cachedFrames,
          scale: a.labelStats().scale};
}""".replace("@API@", API)


def measure(browser: Any, path: Path, steps: int) -> Dict[str, Any]:
    info = open_ready(browser, path, "() => ({})")
    page, ctx = info["page"], info["ctx"]
    t = time.perf_counter()
    page.evaluate(f"async () => {{ const a = {API}; await a.expandAll(); await a.idle(); }}")
    expand_s = time.perf_counter() - t
    nodes = page.evaluate(f"() => {API}.visibleNodeIds().length")
    page.locator(".gw-pane canvas").first.focus()  # engaged: the wheel zooms the view
    out: Dict[str, Any] = {"ready_s": info["wall"], "expand_s": expand_s, "drawn_nodes": nodes}
    page.evaluate(f"() => {API}.fit()")
    for name, kind, delta in (("zoom in", "wheel", -100), ("zoom out", "wheel", 100), ("drag", "drag", 12),
                              ("buttons", "buttons", -1)):
        if kind == "buttons":
            page.evaluate(f"() => {API}.fit()")
        r = page.evaluate(GESTURE, [kind, delta, steps if kind != "buttons" else min(steps, 12)])
        page.wait_for_timeout(300)  # the gesture rests: a full frame
        ms = r["ms"]
        out[name] = {"fps": len(ms) / r["elapsed"] * 1000, "median_ms": statistics.median(ms), "worst_ms": max(ms),
                     "full": r["full"], "cached": r["cached"], "scale": r["scale"]}
    ctx.close()
    return out


def main(argv: List[str] | None = None) -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true", help="the 10k DAG and the 100k chain only")
    ap.add_argument("--steps", type=int, default=40, help="events per gesture")
    args = ap.parse_args(argv)
    from playwright.sync_api import sync_playwright
    chromium = shutil.which("chromium") or "/usr/bin/chromium"
    graphs = [("random DAG, no modules", 10_000, lambda: fx.random_dag(10_000, modules=False)),
              ("chain", 100_000, lambda: fx.chain(100_000))]
    if not args.quick:
        graphs.append(("random DAG, no modules", 100_000, lambda: fx.random_dag(100_000, modules=False)))
    print(f"load average {os.getloadavg()[0]:.1f}; {args.steps} events per gesture, one per frame; 1400x900\n")
    print("| graph | nodes (drawn as boxes after Expand all) | Expand all (s) | gesture | FPS | median frame (ms) | slowest frame (ms) | frames: full / "
          "from the bitmap |")
    print("|---|---:|---:|---|---:|---:|---:|---|")
    with sync_playwright() as p, tempfile.TemporaryDirectory() as tmp:
        browser = p.chromium.launch(executable_path=chromium, args=ARGS)
        for name, n, make in graphs:
            path = export_html(make(), Path(tmp) / f"g{n}.html")
            r = measure(browser, path, args.steps)
            first = True
            for gesture in ("zoom in", "zoom out", "drag", "buttons"):
                g = r[gesture]
                label = "zoom buttons (always full)" if gesture == "buttons" else gesture
                head = (f"| {name} | {n:,} ({r['drawn_nodes']:,}) | {r['expand_s']:.1f} " if first else "| | | ")
                print(f"{head}| {label} | {g['fps']:.0f} | {g['median_ms']:.0f} | {g['worst_ms']:.0f} | "
                      f"{g['full']} / {g['cached']} |")
                first = False
        browser.close()
    print(f"\nload average after: {os.getloadavg()[0]:.1f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

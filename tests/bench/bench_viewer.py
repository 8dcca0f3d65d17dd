"""Viewer benchmark: time from page.goto(export) to data-gw-state=ready, export sizes, and the layout algorithms.

    .venv/bin/python tests/bench/bench_viewer.py [--quick]

Runs Debian's Chromium headless through Playwright, network refused (see shared/TESTING.md). Prints markdown
tables (pasted into docs/viewer.md). Targets: 10k nodes ≤ 1.5 s, 100k nodes (collapsed view) ≤ 5 s.
"""
from __future__ import annotations

import argparse
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Callable, Dict, List

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests" / "browser"))

import fixtures as fx  # noqa: E402

from graphwidget.views.assets import bundle_path  # noqa: E402
from graphwidget.views.export import export_html  # noqa: E402

ARGS = ["--no-sandbox", "--disable-gpu",
        "--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE localhost, EXCLUDE 127.0.0.1"]
API = "document.querySelector('.graphwidget-root').graphwidget"
SHAPES: Dict[str, Callable[[int], Dict[str, Any]]] = {
    "chain": fx.chain, "fan-in": fx.fanin, "random DAG": lambda n: fx.random_dag(n, seed=1),
}


def open_ready(browser: Any, path: Path) -> Dict[str, Any]:
    ctx = browser.new_context(viewport={"width": 1400, "height": 900})
    ctx.route("**/*", lambda r: r.continue_() if r.request.url.startswith("file:") else r.abort())
    page = ctx.new_page()
    t0 = time.perf_counter()
    page.goto(path.as_uri())
    page.wait_for_selector('.graphwidget-root[data-gw-state="ready"]', timeout=120_000)
    wall = time.perf_counter() - t0
    info = page.evaluate(f"() => {{ const a = {API}; return {{ shown: a.nodeCount(), t: a.timings }}; }}")
    info["wall"] = wall
    info["page"] = page
    info["ctx"] = ctx
    return info


def bench_load(browser: Any, sizes: List[int], repeat: int, out: Path) -> None:
    viewer = bundle_path("viewer.js").stat().st_size
    print(f"\nviewer.js: {viewer:,} bytes ({viewer / 1024:.0f} KiB)\n")
    print("| graph | nodes | file | data bytes/node | shown | goto → ready (median) | decode | layout |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|")
    for name, make in SHAPES.items():
        for n in sizes:
            path = export_html(make(n), out / f"{name.replace(' ', '_')}_{n}.html")
            size = path.stat().st_size
            walls, last = [], None
            for _ in range(repeat):
                info = open_ready(browser, path)
                walls.append(info["wall"])
                info["ctx"].close()
                last = info
            t = last["t"]
            print(f"| {name} | {n:,} | {size / 1024:,.0f} KiB | {(size - viewer) / n:.0f} | {last['shown']:,} | "
                  f"{statistics.median(walls):.2f} s | {t['decode']:.0f} ms | {t['layout']:.0f} ms ({t['algorithm']}) |")


def bench_expand_all(browser: Any, sizes: List[int], out: Path) -> None:
    print("\n| expand all | nodes drawn | edges drawn | time to redrawn | layout (worker) | one frame |")
    print("|---|---:|---:|---:|---:|---:|")
    for n in sizes:
        path = export_html(fx.random_dag(n, seed=1), out / f"expand_{n}.html")
        info = open_ready(browser, path)
        page = info["page"]
        r = page.evaluate(f"""async () => {{ const a = {API}; const t0 = performance.now(); await a.expandAll();
            const dt = performance.now() - t0; const f0 = performance.now(); a.fit(); const frame = performance.now() - f0;
            return {{ dt, frame, nodes: a.nodeCount(), edges: a.edgeCount(), t: a.timings }}; }}""")
        print(f"| random DAG {n:,} | {r['nodes']:,} | {r['edges']:,} | {r['dt'] / 1000:.2f} s | "
              f"{r['t']['layout']:.0f} ms ({r['t']['algorithm']}) | {r['frame']:.0f} ms |")
        info["ctx"].close()


def bench_layouts(browser: Any, out: Path) -> None:
    """dagre vs the linear layered layout on the same random DAGs (inputs among the previous 8), main thread."""
    path = export_html(fx.single(), out / "layout.html")
    ctx = browser.new_context()
    ctx.route("**/*", lambda r: r.continue_() if r.request.url.startswith("file:") else r.abort())
    page = ctx.new_page()
    page.goto(path.as_uri())
    page.wait_for_selector('.graphwidget-root[data-gw-state="ready"]')
    print("\n| layout of a random DAG | dagre | layered (ours) |")
    print("|---:|---:|---:|")
    for n in (100, 250, 500, 1000, 10_000, 100_000):
        r = page.evaluate("""([n, withDagre]) => {
            let s = 7; const rnd = () => ((s = (s * 1103515245 + 12345) % 2147483648) / 2147483648);
            const src = [], dst = [], seen = new Set();
            for (let k = 1; k < n; k++) for (let j = 0, c = 1 + Math.floor(rnd() * 3); j < c; j++) {
              const a = Math.max(0, k - 1 - Math.floor(rnd() * 8)); const key = a * n + k;
              if (!seen.has(key)) { seen.add(key); src.push(a); dst.push(k); } }
            const inp = (algorithm) => ({ w: new Float64Array(n).fill(120), h: new Float64Array(n).fill(36),
              src: Int32Array.from(src), dst: Int32Array.from(dst), algorithm });
            const L = window.graphwidgetViewer.computeLayout;
            let t = performance.now(); L(inp('layered')); const ours = performance.now() - t;
            let dagre = null;
            if (withDagre) { t = performance.now(); L(inp('dagre')); dagre = performance.now() - t; }
            return { ours, dagre };
        }""", [n, n <= 1000])
        dagre = f"{r['dagre']:.0f} ms" if r["dagre"] is not None else "not run (minutes)"
        print(f"| {n:,} | {dagre} | {r['ours']:.0f} ms |")
    ctx.close()


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true", help="1k and 10k only, one run each")
    args = ap.parse_args()
    exe = shutil.which("chromium")
    if not exe:
        sys.exit("chromium is not installed (apt-get install chromium)")
    from playwright.sync_api import sync_playwright
    sizes = [1_000, 10_000] if args.quick else [1_000, 10_000, 100_000]
    with tempfile.TemporaryDirectory() as tmp, sync_playwright() as p:
        browser = p.chromium.launch(executable_path=exe, headless=True, args=ARGS)
        out = Path(tmp)
        bench_load(browser, sizes, 1 if args.quick else 3, out)
        bench_expand_all(browser, [10_000] if args.quick else [10_000, 100_000], out)
        bench_layouts(browser, out)
        browser.close()


if __name__ == "__main__":
    main()

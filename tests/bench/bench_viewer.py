"""Viewer benchmark: time from page.goto(export) to data-gw-state=ready, export sizes, and the layout algorithms.

    .venv/bin/python tests/bench/bench_viewer.py [--quick] [--models] [--repeat N]

Runs Debian's Chromium headless through Playwright, network refused (as the browser tests: CONTRIBUTING.md). Prints
markdown tables (collected into docs/performance.md by tests/bench/report.py). Targets: 10k nodes ≤ 1.5 s, 100k nodes
(collapsed view) ≤ 5 s; the full mode opens the random DAG at 100k and 1M nodes in the same run (issue 20: 1M opens
grouped in ≤ 10 s, renderer ≤ 1.5 GB, export ≤ 40 MB), with the renderer's peak resident memory (``VmHWM`` of the
page's renderer process, which holds its workers too) and the export's size and writing time.

Besides the wall time (median, min–max over fresh browser contexts) it prints the CPU seconds of the page's main
thread and of its renderer process (main thread + layout worker), read from Chromium's Performance metrics, and the
load average: on a machine shared with other jobs the wall time follows the load, the CPU time hardly does.
`--models` times the real models of tests/browser/model_graphs.py (GPT-2 60 and 200 blocks, BERT 24 layers,
TransformerEncoder 48 layers; captured on first use, then cached): first view, opening one block, Expand all.
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
from typing import Any, Callable, Dict, List

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests" / "browser"))

import chromium_page  # noqa: E402
import fixtures as fx  # noqa: E402
import model_graphs as mg  # noqa: E402
from chromium_page import API, ARGS, peak_rss_mib, renderer_pids  # noqa: E402

from graphwidget.views.assets import bundle_path  # noqa: E402
from graphwidget.views.export import export_html  # noqa: E402

SHAPES: Dict[str, Callable[[int], Dict[str, Any]]] = {
    "chain": fx.chain, "fan-in": fx.fanin, "random DAG": lambda n: fx.random_dag(n, seed=1),
}


def open_ready(browser: Any, path: Path) -> Dict[str, Any]:
    return chromium_page.open_ready(browser, path, f"() => {{ const a = {API}; return {{ shown: a.nodeCount(), "
                                                 f"labels: a.labelCount ? a.labelCount() : null, t: a.timings }}; }}")


def spread(xs: List[float]) -> str:
    return f"{statistics.median(xs):.2f} s ({min(xs):.2f}–{max(xs):.2f})"


def bench_load(browser: Any, sizes: List[int], repeat: int, out: Path) -> None:
    viewer = bundle_path("viewer.js").stat().st_size
    print(f"\nviewer.js: {viewer:,} bytes ({viewer / 1024:.0f} KiB)\n")
    print("| graph | nodes | file | data bytes/node | shown | goto → ready, median (min–max) | CPU main / renderer | decode | layout | load avg |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for name, make in SHAPES.items():
        for n in sizes:
            path = export_html(make(n), out / f"{name.replace(' ', '_')}_{n}.html")
            size = path.stat().st_size
            runs = []
            for _ in range(repeat):
                info = open_ready(browser, path)
                info["ctx"].close()
                runs.append(info)
            t = runs[-1]["t"]
            print(f"| {name} | {n:,} | {size / 1024:,.0f} KiB | {(size - viewer) / n:.0f} | {runs[-1]['shown']:,} | "
                  f"{spread([r['wall'] for r in runs])} | {statistics.median(r['thread_cpu'] for r in runs):.2f} / "
                  f"{statistics.median(r['process_cpu'] for r in runs):.2f} s | {t['decode']:.0f} ms | "
                  f"{t['layout']:.0f} ms ({t['algorithm']}) | {os.getloadavg()[0]:.1f} |")


def bench_million(browser: Any, sizes: List[int], out: Path) -> None:
    """The random DAG of the load table at each size, one page each: export (size, Python seconds), goto → ready,
    CPU, where decoding went (unpacking in the worker, the rest on the page), the renderer's peak memory. The last
    column compares each size with the first, in this run."""
    print("\n| random DAG | export | B/node | export write | goto → ready | CPU main / renderer | unpack (worker) / "
          "decode | shown | renderer peak | JS heap | × first size (wall / CPU renderer) | load avg |")
    print("|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    first = None
    for n in sizes:
        t = time.perf_counter()
        doc = fx.random_dag(n, seed=1)
        made = time.perf_counter() - t
        t = time.perf_counter()
        path = export_html(doc, out / f"million_{n}.html")
        write = time.perf_counter() - t
        del doc
        size = path.stat().st_size
        before = renderer_pids(browser)
        info = open_ready(browser, path)
        peak = peak_rss_mib(renderer_pids(browser) - before)
        heap = {x["name"]: x["value"] for x in info["cdp"].send("Performance.getMetrics")["metrics"]}["JSHeapUsedSize"]
        info["ctx"].close()
        t_ = info["t"]
        first = first or info
        ratio = f"{info['wall'] / first['wall']:.1f} / {info['process_cpu'] / first['process_cpu']:.1f}"
        print(f"| {n:,} | {size / 2**20:.1f} MiB | {size / n:.1f} | {write:.1f} s (+{made:.0f} s to make) | "
              f"{info['wall']:.2f} s | {info['thread_cpu']:.2f} / {info['process_cpu']:.2f} s | "
              f"{t_.get('unpack', 0):.0f} / {t_['decode']:.0f} ms | {info['shown']:,} | "
              f"{'—' if peak is None else f'{peak:,.0f} MiB'} | {heap / 2**20:,.0f} MiB | {ratio} | "
              f"{os.getloadavg()[0]:.1f} |")


def bench_models(browser: Any, repeat: int, out: Path) -> None:
    """Real models: first view (what it shows, labels drawn), then opening one block and Expand all, timed."""
    print("\n| model | nodes | first view: items (groups) | labels | goto → ready, median (min–max) | CPU main / renderer "
          "| layout | open one block | Expand all (CPU main / renderer) | load avg |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for name in ("gpt2_60", "bert_24", "encoder48", "gpt2_200"):
        try:
            doc = mg.model_graph(name)
        except ImportError as e:
            print(f"| {name} | skipped: {e} |")
            continue
        path = export_html(doc, out / f"{name}.html")
        runs = []
        for k in range(repeat):
            info = open_ready(browser, path)
            if k < repeat - 1:
                info["ctx"].close()
            runs.append(info)
        last = runs[-1]
        page, cdp = last["page"], last["cdp"]
        groups = page.evaluate(f"() => {API}.groups().length")
        block = page.evaluate(f"""async () => {{ const a = {API}; const g = a.groups().sort((x, y) => y.size - x.size)[0];
            if (!g) return null; const t0 = performance.now(); await a.expand(g.id); return performance.now() - t0; }}""")
        m0 = {x["name"]: x["value"] for x in cdp.send("Performance.getMetrics")["metrics"]}
        t0 = time.perf_counter()
        page.evaluate(f"async () => {{ await {API}.expandAll(); }}")
        wall_all = time.perf_counter() - t0
        m1 = {x["name"]: x["value"] for x in cdp.send("Performance.getMetrics")["metrics"]}
        t = last["t"]
        print(f"| {name} | {len(doc['nodes']):,} | {last['shown']:,} ({groups}) | {last['labels']} | "
              f"{spread([r['wall'] for r in runs])} | {statistics.median(r['thread_cpu'] for r in runs):.2f} / "
              f"{statistics.median(r['process_cpu'] for r in runs):.2f} s | {t['layout']:.0f} ms ({t['algorithm']}) | "
              f"{'—' if block is None else f'{block:.0f} ms'} | {wall_all:.2f} s ({m1['ThreadTime'] - m0['ThreadTime']:.2f} / "
              f"{m1['ProcessTime'] - m0['ProcessTime']:.2f} s) | {os.getloadavg()[0]:.1f} |")
        last["ctx"].close()


def bench_expand_all(browser: Any, sizes: List[int], out: Path) -> None:
    print("\n| expand all | nodes drawn | edges drawn | time to redrawn | regroup (main thread) | layout (worker) | one frame |")
    print("|---|---:|---:|---:|---:|---:|---:|")
    for n in sizes:
        path = export_html(fx.random_dag(n, seed=1), out / f"expand_{n}.html")
        info = open_ready(browser, path)
        page = info["page"]
        r = page.evaluate(f"""async () => {{ const a = {API}; const t0 = performance.now(); await a.expandAll();
            const dt = performance.now() - t0; const f0 = performance.now(); a.fit(); const frame = performance.now() - f0;
            return {{ dt, frame, nodes: a.nodeCount(), edges: a.edgeCount(), t: a.timings }}; }}""")
        print(f"| random DAG {n:,} | {r['nodes']:,} | {r['edges']:,} | {r['dt'] / 1000:.2f} s | {r['t']['view']:.0f} ms | "
              f"{r['t']['layout']:.0f} ms ({r['t']['algorithm']}) | {r['frame']:.0f} ms |")
        info["ctx"].close()


def bench_expand_one(browser: Any, sizes: List[int], out: Path, clicks: int = 10) -> None:
    """Opening one group of the collapsed first view (the four biggest in turn, closed again after each): the time
    to the redrawn view, and its parts: regrouping into the drawn view (main thread) and the layout (worker)."""
    print("\n| open one group | items shown | group sizes | time to redrawn, median (min–max) | regroup (main thread) "
          "| layout (worker) | CPU main per open | load |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|")
    for n in sizes:
        path = export_html(fx.random_dag(n, seed=1), out / f"expand_one_{n}.html")
        info = open_ready(browser, path)
        page, cdp = info["page"], info["cdp"]
        rows = []
        m0 = {x["name"]: x["value"] for x in cdp.send("Performance.getMetrics")["metrics"]}
        for k in range(clicks):
            rows.append(page.evaluate(f"""async (k) => {{ const a = {API};
                const gs = a.groups().sort((x, y) => y.size - x.size), g = gs[k % Math.min(4, gs.length)];
                const t0 = performance.now(); await a.expand(g.id); const dt = performance.now() - t0;
                const t = a.timings, r = {{ dt, view: t.view, layout: t.layout, size: g.size }};
                await a.collapse(g.id); return r; }}""", k))
        m1 = {x["name"]: x["value"] for x in cdp.send("Performance.getMetrics")["metrics"]}
        med = {k: statistics.median(r[k] for r in rows) for k in ("dt", "view", "layout")}
        cpu = (m1["ThreadTime"] - m0["ThreadTime"]) / (2 * clicks)  # each round opens and closes
        sizes_seen = sorted({r["size"] for r in rows})
        print(f"| random DAG {n:,} | {info['shown']:,} | {min(sizes_seen):,}–{max(sizes_seen):,} | "
              f"{med['dt']:.1f} ms ({min(r['dt'] for r in rows):.1f}–{max(r['dt'] for r in rows):.1f}) | "
              f"{med['view']:.1f} ms | {med['layout']:.1f} ms | {cpu * 1000:.1f} ms | {os.getloadavg()[0]:.1f} |")
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
    ap.add_argument("--models", action="store_true", help="only the real models")
    ap.add_argument("--repeat", type=int, default=None, help="page loads per graph (default 3, --quick 1)")
    ap.add_argument("--million", action="store_true", help="only the 100k and 1M random DAG (the full mode runs it)")
    args = ap.parse_args()
    exe = shutil.which("chromium")
    if not exe:
        sys.exit("chromium is not installed (apt-get install chromium)")
    from playwright.sync_api import sync_playwright
    sizes = [1_000, 10_000] if args.quick else [1_000, 10_000, 100_000]
    repeat = args.repeat or (1 if args.quick else 3)
    print(f"load average at start: {os.getloadavg()[0]:.1f} (2 cores)")
    with tempfile.TemporaryDirectory() as tmp, sync_playwright() as p:
        browser = p.chromium.launch(executable_path=exe, headless=True, args=ARGS)
        out = Path(tmp)
        open_ready(browser, export_html(fx.single(), out / "warm.html"))["ctx"].close()  # compile the bundle once
        if args.million:
            bench_million(browser, [100_000, 1_000_000], out)
        elif not args.models:
            bench_load(browser, sizes, repeat, out)
            bench_expand_all(browser, [10_000] if args.quick else [10_000, 100_000], out)
            bench_expand_one(browser, [10_000] if args.quick else [10_000, 100_000], out)
            bench_layouts(browser, out)
            if not args.quick:
                bench_million(browser, [100_000, 1_000_000], out)
        if not args.million:
            bench_models(browser, repeat, out)
        browser.close()


if __name__ == "__main__":
    main()

"""Diff view benchmark: time from page.goto(diff page) to data-gw-state=ready for a pair of n-node graphs.

    .venv/bin/python tests/bench/bench_diff_view.py [--quick] [--sizes 1000 10000] [--repeat 7]

(``--quick``: 3 loads per pair instead of 7.)

Debian's Chromium headless through Playwright, network refused (as the browser tests). The page is export-like:
the diff document as gzip + base64 in a data-kind="diff" script, viewer.js inlined (tests/browser/diff_fixtures.py).
Prints the first load in a fresh browser (cold: the bundle is compiled on the spot), then the median, min and max
over fresh browser contexts of the same browser, the CPU time of the page's main thread and of its renderer process
(main thread + layout workers; unlike wall time, these hardly change when other processes load the machine), the
view's own timings (decode, layouts) and the load average while it ran. Target: a pair of 10k-node graphs ready in ≤ 2 s. Nothing is asserted.
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
sys.path.insert(0, str(ROOT / "tests" / "browser"))

import diff_fixtures as dfx  # noqa: E402
from chromium_page import API, ARGS, open_ready  # noqa: E402


def load_once(browser: Any, path: Path) -> Dict[str, Any]:
    info = open_ready(browser, path, f"""async () => {{ const a = {API}; await a.ready;
        return {{ t: a.timings, shown: [a.nodeCount('a'), a.nodeCount('b')] }}; }}""")
    page, ctx = info.pop("page"), info.pop("ctx")
    info.pop("cdp")
    # one counterpart selection deep inside a group: select on A, B follows (opens its groups, centres)
    t1 = time.perf_counter()
    page.evaluate(f"async () => {{ const a = {API}; await a.select(a.graphNodeCount('a') - 1, 'a'); await a.idle(); }}")
    info["select"] = time.perf_counter() - t1
    ctx.close()
    return info


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--sizes", type=int, nargs="+", default=[1000, 10000])
    ap.add_argument("--quick", action="store_true", help="3 loads per pair (default 7)")
    ap.add_argument("--repeat", type=int, default=None)
    args = ap.parse_args()
    if args.repeat is None:
        args.repeat = 3 if args.quick else 7
    exe = shutil.which("chromium") or shutil.which("chromium-browser")
    if not exe:
        sys.exit("chromium is not installed")
    from playwright.sync_api import sync_playwright
    out = Path(tempfile.mkdtemp(prefix="gw-bench-diff-"))
    print("| pair of | page | first load (cold) | goto → ready median (min–max) | CPU main thread / renderer | decode | layout A / B | select + follow | load avg |")
    print("|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    with sync_playwright() as p:
        for n in args.sizes:
            path = out / f"diff_{n}.html"
            path.write_text(dfx.diff_page(dfx.big_pair(n)), encoding="utf-8")
            browser = p.chromium.launch(executable_path=exe, headless=True, args=ARGS)
            cold = load_once(browser, path)["wall"]  # a fresh browser: also compiles the bundle
            runs: List[Dict[str, Any]] = [load_once(browser, path) for _ in range(args.repeat)]
            walls = [r["wall"] for r in runs]
            last = runs[-1]
            t = last["t"]
            browser.close()
            cpu_t = statistics.median(r["thread_cpu"] for r in runs)
            cpu_p = statistics.median(r["process_cpu"] for r in runs)
            print(f"| {n:,} | {path.stat().st_size / 1024:,.0f} KiB | {cold:.2f} s | {statistics.median(walls):.2f} s "
                  f"({min(walls):.2f}–{max(walls):.2f}) | {cpu_t:.2f} / {cpu_p:.2f} s | {t['decode']:.0f} ms | "
                  f"{t['layout_a']:.0f} / {t['layout_b']:.0f} ms ({t['algorithm']}) | "
                  f"{statistics.median(r['select'] for r in runs) * 1000:.0f} ms | {os.getloadavg()[0]:.1f} |")
    shutil.rmtree(out, ignore_errors=True)


if __name__ == "__main__":
    main()

"""Diff view benchmark: time from page.goto(diff page) to data-gw-state=ready for a pair of n-node graphs.

    .venv/bin/python tests/bench/bench_diff_view.py [--sizes 1000 10000] [--repeat 7]

Debian's Chromium headless through Playwright, network refused (as the browser tests). The page is export-like:
the diff document as gzip + base64 in a data-kind="diff" script, viewer.js inlined (tests/browser/diff_fixtures.py).
Prints the median, min and max over fresh browser contexts, after one warm-up load per size, and the view's own
timings (decode, layouts, total). Target: a pair of 10k-node graphs ready in ≤ 2 s. Nothing is asserted.
"""
from __future__ import annotations

import argparse
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

ARGS = ["--no-sandbox", "--disable-gpu",
        "--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE localhost, EXCLUDE 127.0.0.1"]
API = "document.querySelector('.graphwidget-root').graphwidget"


def load_once(browser: Any, path: Path) -> Dict[str, Any]:
    ctx = browser.new_context(viewport={"width": 1400, "height": 900})
    ctx.route("**/*", lambda r: r.continue_() if r.request.url.startswith("file:") else r.abort())
    page = ctx.new_page()
    t0 = time.perf_counter()
    page.goto(path.as_uri())
    page.wait_for_selector('.graphwidget-root[data-gw-state="ready"]', timeout=120_000)
    wall = time.perf_counter() - t0
    info = page.evaluate(f"""async () => {{ const a = {API}; await a.ready;
        return {{ t: a.timings, shown: [a.nodeCount('a'), a.nodeCount('b')] }}; }}""")
    info["wall"] = wall
    # one counterpart selection deep inside a group: select on A, B follows (opens its groups, centres)
    t1 = time.perf_counter()
    page.evaluate(f"async () => {{ const a = {API}; await a.select(a.graphNodeCount('a') - 1, 'a'); await a.idle(); }}")
    info["select"] = time.perf_counter() - t1
    ctx.close()
    return info


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--sizes", type=int, nargs="+", default=[1000, 10000])
    ap.add_argument("--repeat", type=int, default=7)
    args = ap.parse_args()
    exe = shutil.which("chromium") or shutil.which("chromium-browser")
    if not exe:
        sys.exit("chromium is not installed")
    from playwright.sync_api import sync_playwright
    out = Path(tempfile.mkdtemp(prefix="gw-bench-diff-"))
    print("| pair of | page | goto → ready median (min–max) | decode | layout A / B | select + follow |")
    print("|---:|---:|---:|---:|---:|---:|")
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=exe, headless=True, args=ARGS)
        for n in args.sizes:
            path = out / f"diff_{n}.html"
            path.write_text(dfx.diff_page(dfx.big_pair(n)), encoding="utf-8")
            load_once(browser, path)  # warm-up: the first load in a fresh browser also compiles the bundle
            runs: List[Dict[str, Any]] = [load_once(browser, path) for _ in range(args.repeat)]
            walls = [r["wall"] for r in runs]
            last = runs[-1]
            t = last["t"]
            print(f"| {n:,} | {path.stat().st_size / 1024:,.0f} KiB | {statistics.median(walls):.2f} s "
                  f"({min(walls):.2f}–{max(walls):.2f}) | {t['decode']:.0f} ms | {t['layout_a']:.0f} / {t['layout_b']:.0f} ms "
                  f"({t['algorithm']}) | {statistics.median(r['select'] for r in runs) * 1000:.0f} ms |")
        browser.close()
    shutil.rmtree(out, ignore_errors=True)


if __name__ == "__main__":
    main()

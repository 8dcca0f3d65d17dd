"""Pictures: the size of the SVG that Save… → SVG and ``toSVG()`` write, and how long it and the PNG take, in
Chromium at a JupyterLab output pane's size (950x530), for the seed graph and diff and a GPT-2-shaped trace (12 blocks,
from a config: no download) as it opens (grouped) and after *Expand all*.

    .venv/bin/python tests/bench/bench_pictures.py [--repeat 5]

``toSVG`` is timed inside the page (``performance.now``, median of ``--repeat`` calls); the PNG from the click on
*PNG picture* to the download (rasterising the SVG at 2x). Nothing is asserted.
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
from typing import Any, Dict

import torch

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(Path(__file__).resolve().parent))
from chromium_page import API, ARGS, open_ready  # noqa: E402

import graphwidget as gw  # noqa: E402


def gpt2_trace() -> gw.GradGraph:
    import transformers
    transformers.logging.set_verbosity_error()
    from transformers import GPT2Config, GPT2LMHeadModel
    torch.manual_seed(0)
    cfg = GPT2Config(n_layer=12, n_embd=96, n_head=4, n_positions=64, vocab_size=512, use_cache=False)
    m = GPT2LMHeadModel(cfg).eval()
    ids = torch.randint(0, 512, (2, 32))
    return gw.trace(lambda: m(ids, labels=ids).loss, module=m)


def measure(browser: Any, path: Path, repeat: int, expand: bool, out: Path) -> Dict[str, Any]:
    info = open_ready(browser, path, "() => ({})", viewport={"width": 950, "height": 530}, accept_downloads=True)
    page, ctx = info["page"], info["ctx"]
    if expand:
        page.evaluate(f"async () => {{ const a = {API}; await a.expandAll(); await a.idle(); }}")
    r = page.evaluate(f"""async () => {{ const a = {API}; const ms = []; let svg = "";
        for (let i = 0; i < {repeat}; i++) {{ const t = performance.now(); svg = a.toSVG(); ms.push(performance.now() - t); }}
        return {{ ms, bytes: new Blob([svg]).size, shapes: (svg.match(/data-node-id=/g) || []).length,
                  groups: (svg.match(/data-group-id=/g) || []).length }}; }}""")
    page.click("[data-action=save]")
    t = time.perf_counter()
    with page.expect_download() as dl:
        page.click("[data-action=save-png]")
    png_s = time.perf_counter() - t
    target = out / "p.png"
    dl.value.save_as(target)
    ctx.close()
    return {"svg_ms": statistics.median(r["ms"]), "svg_min": min(r["ms"]), "svg_max": max(r["ms"]),
            "svg_kib": r["bytes"] / 1024, "nodes": r["shapes"], "groups": r["groups"], "png_s": png_s,
            "png_kib": os.path.getsize(target) / 1024}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeat", type=int, default=5)
    a = ap.parse_args()
    exe = shutil.which("chromium") or shutil.which("chromium-browser")
    if not exe:
        sys.exit("chromium is not installed")
    from playwright.sync_api import sync_playwright
    inputs = gw.examples.homography_inputs(batch=2, height=16, width=16)
    out = Path(tempfile.mkdtemp(prefix="gw-bench-pictures-"))
    pages = {
        "seed graph (repeat, profiled)": (gw.profile(gw.examples.homography_repeat, **inputs, repeat=2), False),
        "seed diff (repeat vs broadcast)": (gw.compare(gw.examples.homography_repeat, gw.examples.homography_broadcast,
                                                       **inputs, labels=("repeat", "broadcast")), False),
    }
    g = gpt2_trace()
    pages[f"GPT-2 12 blocks, traced ({len(g)} nodes), as opened"] = (g, False)
    pages[f"GPT-2 12 blocks, traced ({len(g)} nodes), Expand all"] = (g, True)
    print(f"950x530 view; toSVG median of {a.repeat} calls (min-max); PNG from the click to the download; "
          f"load average {os.getloadavg()[0]:.1f} before")
    print()
    print("| view | node shapes | group shapes | SVG KiB | toSVG ms | PNG KiB | PNG s |")
    print("|---|---:|---:|---:|---:|---:|---:|")
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=exe, args=ARGS)
        for k, (name, (obj, expand)) in enumerate(pages.items()):
            path = gw.export_html(obj, out / f"{k}.html")
            m = measure(browser, path, a.repeat, expand, out)
            print(f"| {name} | {m['nodes']} | {m['groups']} | {m['svg_kib']:.0f} | {m['svg_ms']:.0f} "
                  f"({m['svg_min']:.0f}–{m['svg_max']:.0f}) | {m['png_kib']:.0f} | {m['png_s']:.2f} |")
        browser.close()
    print()
    print(f"load average {os.getloadavg()[0]:.1f} after")


if __name__ == "__main__":
    main()

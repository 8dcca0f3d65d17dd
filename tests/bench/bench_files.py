"""Graph files: size, writing and reading, version 1 (records, the old writer) against version 2 (columns), in one run.

Run: .venv/bin/python tests/bench/bench_files.py [--quick] [--sizes 100000 1000000] [--repeat 3]
(``--quick``: 100k nodes only.)
Graph: the random DAG of tests/bench/bench_diff.py (``random_pair``'s first graph: nodes with 1-3 inputs among the
previous 8, leaves, shapes, a unique code line per node).
Columns: ``B/node`` the uncompressed JSON text per node (``gz B/node``: ``GradGraph.save`` to ``.json.gz``);
``to_json s``; ``json.loads s`` of that same text (the floor: parsing alone, with the GC paused as ``load_json``
runs it); ``load_json s`` (parse and validate; a version 2 graph keeps its columns and builds networkx on first use of
``g.nx``, a version 1 graph builds it at once) and ``ratio`` = load_json / json.loads; ``summary s``: ``summary()`` of
the graph just loaded (from the columns for version 2: ``nx`` says whether the networkx graph got built); ``nx s``:
building it (version 2). CPU seconds (on a shared machine the wall time follows the load), medians of ``--repeat``
runs (version 1 at 1M nodes: one run); json.loads and load_json run in ``--repeat`` pairs, one after the other in the
same memory state, and the row shows the pair with the median ratio (the pairs' range of ratios in brackets).
Targets (issue 20): version 2 at most 150 B/node; load_json at most 2x json.loads at 1M nodes (the median pair);
summary() without a networkx graph. The machine's load average is printed before and after: compare within one run
(ratios), not across runs.
"""
from __future__ import annotations

import argparse
import gc
import json
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Callable, List, Tuple

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_diff import random_pair  # noqa: E402
from machine import load_average  # noqa: E402

import graphwidget as gw  # noqa: E402
from graphwidget._util.gc import gc_paused  # noqa: E402


def timed(fn: Callable[[], Any], repeat: int) -> Tuple[float, Any]:
    """Median CPU seconds of ``repeat`` runs (the result of the last), collecting garbage between runs."""
    walls: List[float] = []
    out = None
    for _ in range(repeat):
        out = None
        gc.collect()
        t = time.process_time()
        out = fn()
        walls.append(time.process_time() - t)
    walls.sort()
    return walls[len(walls) // 2], out



def parse_only(text: str) -> Any:
    """The floor: ``json.loads`` alone, with the cyclic GC paused as ``load_json`` runs (with it running, a version 1
    file's millions of fresh containers trigger collection after collection inside the parse)."""
    with gc_paused():
        return json.loads(text)


def row(g: Any, label: str, version: int, repeat: int) -> str:
    """One line of the table: ``g`` written in ``version`` and read back."""
    w, text = timed(lambda: g.to_json(version=version), repeat)
    size = len(text.encode("utf-8")) / len(g)
    gzs = "-"
    if version == 2:
        with tempfile.TemporaryDirectory() as tmp:
            gzs = f"{g.save(Path(tmp) / 'g.json.gz').stat().st_size / len(g):.1f}"
    # json.loads and load_json in turns, the ratio per pair: the machine's memory state drifts between runs (fresh
    # pages to zero, a balloon taking memory back), and a pair sees the same state; the median pair is the number
    pairs: List[Tuple[float, float]] = []
    back = None
    for _ in range(repeat):
        back = None  # one loaded graph alive at a time
        p = timed(lambda: parse_only(text), 1)[0]
        ld, back = timed(lambda: gw.load_json(text), 1)
        pairs.append((p, ld))
    pairs.sort(key=lambda pr: pr[1] / pr[0])
    p, ld = pairs[len(pairs) // 2]
    spread = "" if len(pairs) < 3 else f" [{pairs[0][1] / pairs[0][0]:.2f}-{pairs[-1][1] / pairs[-1][0]:.2f}]"
    assert len(back) == len(g)
    sm, _ = timed(back.summary, 1)
    lazy = "not built" if back.held is not None else "built"
    nx_s, _ = timed(lambda: back.nx, 1)
    assert back.to_json(version=version) == text  # the round trip is exact
    size_goal = "" if version != 2 else f" {'ok' if size <= 150 else 'MISS'} (<= 150)"
    load_goal = "" if version != 2 or len(g) < 1_000_000 else f" {'ok' if ld / p <= 2 else 'MISS'} (<= 2x)"
    return (f"| {len(g):,} | {label} | {size:.1f}{size_goal} | {gzs} | {w:.3f} | {p:.3f} | {ld:.3f} | "
            f"x{ld / p:.2f}{spread}{load_goal} | {sm:.3f} ({lazy}) | {nx_s if version == 2 else 0:.3f} |")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true", help="100k nodes only")
    ap.add_argument("--sizes", type=int, nargs="*", default=None, help="default 100k 1M (--quick: 100k)")
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    if args.sizes is None:
        args.sizes = [100_000] if args.quick else [100_000, 1_000_000]
    print(f"load average before: {load_average()} ({os.cpu_count()} cores)\n")
    print("| nodes | format | B/node | gz B/node | to_json s | json.loads s | load_json s | ratio | summary s (nx) | "
          "nx s |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for n in args.sizes:
        g, _ = random_pair(n)
        for label, version in (("v1 (records)", 1), ("v2 (columns)", 2)):
            # version 1 at 1M takes minutes a run: once; version 2's pairs are what the ratio's goal is judged on
            repeat = args.repeat if n <= 100_000 or version == 2 else 1
            print(row(g, label, version, repeat), flush=True)
            gc.collect()
        g = None
        gc.collect()
    print(f"\nload average after: {load_average()}")


if __name__ == "__main__":
    main()

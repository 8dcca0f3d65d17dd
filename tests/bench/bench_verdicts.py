"""Are compare's two verdicts right, and do they hold under load?

Run: .venv/bin/python tests/bench/bench_verdicts.py [--size 2] [--runs 3] [--stability 10] [--load 4] [--identical 20]
     [--quick]

Part 1, the rewrites (tests/rewrites.py: eleven real rewrites and eight cases that fooled earlier verdicts): for each,
``gw.compare(..., profile=True)`` ``--runs`` times, with

* the truth about the maths (by construction or a float64 run: the ``same`` of each case) beside the verdict;
* an independent plain timing of the whole step in the same process (no graphwidget code in the loop: A and B
  alternated, ``perf_counter`` around ``fn(...)`` + ``backward()``, the fastest of three calls per side and round,
  median of per-round ratios; run with compare's thread count) beside compare's step ratio, interval and verdict.
  The plain timing is given by the wall clock (the truth as a user times it) and by the process's CPU time: on a
  machine loaded far beyond its cores the fastest of three wall-clock calls is often still a preempted one, longer
  calls more often, and the two plain figures then part.

Part 2, stability: the seed pair (gw.examples homography, repeat vs broadcast) compared ``--stability`` times while
``--load`` busy processes compete for the cores; prints every verdict and how many agree.

Part 3, identical functions (the "identical" rewrite, f against itself) compared ``--identical`` times: how many
whole-step and backward verdicts say "faster" or "slower" (each one is wrong).
"""
from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, List, Tuple

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))

import rewrites as rw  # noqa: E402
import torch  # noqa: E402

import graphwidget as gw  # noqa: E402


def plain_ratio(case: rw.Case, rounds: int = 15) -> Tuple[float, float, float]:
    """Median over alternating rounds of B's step time / A's, with nothing of graphwidget in the loop (wall clock)."""
    return plain_ratios(case, rounds)[:3]


def plain_ratios(case: rw.Case, rounds: int = 15) -> Tuple[float, float, float, float]:
    """:func:`plain_ratio`'s ratio and median ms of A and B by the wall clock, and the ratio by process CPU time."""
    def once(fn: Any) -> Tuple[float, float]:
        args = [a.detach().clone().requires_grad_(a.requires_grad) if isinstance(a, torch.Tensor) else a
                for a in case.args]
        c0, t0 = time.process_time(), time.perf_counter()
        out = fn(*args, **case.kwargs)
        torch.autograd.backward([out], [torch.ones_like(out)])
        return time.perf_counter() - t0, time.process_time() - c0

    def step(fn: Any) -> Tuple[float, float]:
        got = [once(fn) for _ in range(3)]
        return min(g[0] for g in got), min(g[1] for g in got)

    for fn in (case.fn_a, case.fn_b):
        step(fn)
    ratios, cpu, ta, tb = [], [], [], []
    for r in range(rounds):
        if r % 2 == 0:
            a, b = step(case.fn_a), step(case.fn_b)
        else:
            b, a = step(case.fn_b), step(case.fn_a)
        ratios.append(b[0] / a[0])
        if a[1] > 0:
            cpu.append(b[1] / a[1])
        ta.append(a[0])
        tb.append(b[0])
    return (statistics.median(ratios), statistics.median(ta) * 1e3, statistics.median(tb) * 1e3,
            statistics.median(cpu) if cpu else float("nan"))


def load_start(n: int) -> List[subprocess.Popen]:
    return [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(n)]


def part1(size: int, runs: int, quick: bool) -> None:
    print(f"## rewrites (size x{size}, {runs} compare runs each, torch threads {torch.get_num_threads()}, "
          f"load {os.getloadavg()[0]:.1f})")
    print(f"{'case':34s} {'truth':8s} {'maths verdict':14s} {'plain B/A':>9s} {'(cpu)':>6s} "
          f"{'compare step B/A [interval]':>30s}  verdicts (step)")
    cases = list(rw.REWRITES.items()) + list(rw.TRAPS.items())
    if quick:
        cases = [c for c in cases if "gpt2" not in c[0]]
    for name, make in cases:
        case = make(size)
        old = torch.get_num_threads()
        if case.threads:
            torch.set_num_threads(case.threads)
        try:
            maths, steps, verdicts = set(), [], []
            threads = None
            for _ in range(runs):
                d = gw.compare(case.fn_a, case.fn_b, *case.args, labels=case.labels, profile=True, advise=False,
                               **case.kwargs)
                threads = d.timing["threads"]
                maths.add(d.equivalent)
                s = d.timing["step"]
                steps.append(f"{s['ratio']:.2f} [{s['low']:.2f}-{s['high']:.2f}]")
                verdicts.append(s["verdict"])
            before = torch.get_num_threads()
            torch.set_num_threads(threads or before)
            plain, ms_a, ms_b, plain_cpu = plain_ratios(case)
            torch.set_num_threads(before)
        finally:
            torch.set_num_threads(old)
        ok = "ok" if maths == {case.same} else "WRONG"
        print(f"{name:34s} {'same' if case.same else 'changed':8s} {ok + ' ' + '/'.join(map(str, maths)):14s} "
              f"{plain:9.2f} {plain_cpu:6.2f} {steps[0]:>30s}  {', '.join(verdicts)}   (plain A {ms_a:.2f} ms, B {ms_b:.2f} ms; "
              f"{threads} thread{'s' if threads != 1 else ''})")


def part2(n: int, load: int) -> None:
    inp = gw.examples.homography_inputs()
    procs = load_start(load)
    try:
        time.sleep(2)
        print(f"\n## stability: the seed pair, {n} compares, {load} busy processes (load {os.getloadavg()[0]:.1f} "
              f"at start)")
        seen = []
        for i in range(n):
            d = gw.compare(gw.examples.homography_repeat, gw.examples.homography_broadcast, **inp,
                           labels=("repeat", "broadcast"), profile=True, advise=False)
            t = d.timing
            seen.append(t["verdict"])
            print(f"  run {i + 1:2d}: {t['verdict']:24s} step {t['step']['ratio']:.3f} [{t['step']['low']:.3f}-"
                  f"{t['step']['high']:.3f}] backward {t['backward']['verdict']:20s} clock {t['clock']:5s} "
                  f"rounds {t['rounds']:3d} ({t['stopped']}), load {os.getloadavg()[0]:.1f}")
        top = max(set(seen), key=seen.count)
        print(f"  same verdict in {seen.count(top)} of {n} runs: {top!r}")
    finally:
        for p in procs:
            p.kill()


def part3(n: int) -> None:
    case = rw.identical(2)
    print(f"\n## identical functions: f against itself, {n} compares (load {os.getloadavg()[0]:.1f} at start)")
    seen: List[Tuple[str, str]] = []
    for _ in range(n):
        d = gw.compare(case.fn_a, case.fn_b, *case.args, labels=case.labels, profile=True, repeat=1, advise=False)
        seen.append((d.timing["step"]["verdict"], d.timing["backward"]["verdict"]))
    for k, phase in enumerate(("whole step", "backward")):
        wrong = sum(1 for v in seen if v[k] in ("faster", "slower"))
        counts = {v: sum(1 for x in seen if x[k] == v) for v in sorted({x[k] for x in seen})}
        print(f"  {phase}: {wrong} of {n} say faster or slower (wrong); {counts}")
    print(f"  load {os.getloadavg()[0]:.1f} at the end")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--size", type=int, default=2)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--stability", type=int, default=10)
    ap.add_argument("--load", type=int, default=4)
    ap.add_argument("--identical", type=int, default=20, help="compares of a function with itself (part 3)")
    ap.add_argument("--quick", action="store_true", help="size 1, one run each, no GPT-2, 5 stability runs")
    a = ap.parse_args()
    if a.quick:
        a.size, a.runs, a.stability, a.identical = 1, 1, 5, 5
    if a.runs:
        part1(a.size, a.runs, a.quick)
    if a.stability:
        part2(a.stability, a.load)
    if a.identical:
        part3(a.identical)


if __name__ == "__main__":
    main()

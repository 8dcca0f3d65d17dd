"""Which of N sides is faster than which: the plain interleaved runs of :mod:`.speed`, every side in every round.

A round runs every side once (the same measurement as two-way: the fastest of ``inner`` plain calls per phase, by
wall clock and CPU time). The order turns by one side every two rounds and every second round is the reverse of the
one before, so within each pair of rounds every two sides meet once in each order, whatever N (for two sides: A, B,
B, A, ...). For any two sides the per-round ratios are then paired exactly as in a two-way comparison, and each pair
gets the same record from the same rules — median ratio over rounds, percentile bootstrap over whole rounds, the
verdict with its band — as :func:`.speed.measure` gives two sides. The clock is chosen once for all pairs (the one
whose whole-step intervals against the reference are the narrower, summed over the sides; for two sides that is
two-way's rule), so the reference's time is one figure in every pair's record and in the table.

Sampling stops, after :data:`.speed.MIN_ROUNDS` rounds, once every side's whole-step verdict against the reference
(side 0) is decided, or when the budget is spent. Per-node times come from instrumented rounds in the same turning
order (:func:`per_node`), as :mod:`.interleave` does for two.
"""
from __future__ import annotations

import math
import time
from typing import Any, Callable, Dict, List, Mapping, Sequence, Tuple

import torch

from ..analysis.diff.verdicts import UNCLEAR
from ..model.graph import GradGraph
from ..profiling.clocks import CpuClock, CudaClock
from ..profiling.runner import GC_PAUSE, annotate
from . import speed
from .interleave import GradGuard, _Side
from .interleave import _measure as _instrumented

ORDER = "turning: every side once per round, each pair in both orders equally (A,B,C / C,B,A / B,C,A / ...)"


def order(r: int, n: int) -> List[int]:
    """The sides' order in round ``r`` of ``n`` sides (module docstring)."""
    turn = (r // 2) % n
    base = list(range(turn, n)) + list(range(turn))
    return base if r % 2 == 0 else base[::-1]


def measure(sides: Sequence[speed.Side], band: float, budget_s: float, threads: Any = None,
            min_rounds: int = speed.MIN_ROUNDS, max_rounds: int = speed.MAX_ROUNDS
            ) -> Dict[Tuple[int, int], Dict[str, Any]]:
    """Time every side (module docstring); return the timing record of every ordered pair ``(i, j)`` of sides —
    B/A is ``j``'s time over ``i``'s — in the form :func:`.speed.measure` returns for two sides."""
    cuda = sides[0].device.type == "cuda"
    n, why = speed.choose_threads(threads, cuda)
    before = torch.get_num_threads()
    try:
        if n != before:
            torch.set_num_threads(n)
        out = _measure(sides, band, budget_s, min_rounds, max_rounds, cuda)
    finally:
        if torch.get_num_threads() != before:
            torch.set_num_threads(before)
    for rec in out.values():
        rec.update(threads=n, threads_why=why)
    return out


def _measure(sides: Sequence[speed.Side], band: float, budget_s: float, min_rounds: int, max_rounds: int,
             cuda: bool) -> Dict[Tuple[int, int], Dict[str, Any]]:
    n = len(sides)
    for s in sides:  # warm-up: first calls compile, allocate, fill caches
        s.measure(1)
    step_ms = min(s.measure(1)[2] for s in sides)
    inner = 1 if step_ms > speed.SLOW_MS else \
        max(speed.MIN_INNER, min(speed.MAX_INNER, math.ceil(speed.TARGET_MS / max(step_ms, 1e-3))))
    start = time.perf_counter()
    stopped = "max rounds"
    rounds, next_look = 0, max(2, min_rounds + min_rounds % 2)
    while rounds < max_rounds:
        for i in order(rounds, n):
            sides[i].samples.append(sides[i].measure(inner))
        rounds += 1
        if rounds % 2:
            continue  # decide on whole pairs of orders only
        if rounds >= next_look:
            next_look = rounds + max(2, 2 * (rounds // 8))
            if all(speed._clock(sides[0].samples, sides[k].samples, cuda, band, 400)[1]["verdict"] != UNCLEAR
                   for k in range(1, n)):
                stopped = "decided"
                break
        if time.perf_counter() - start > budget_s and rounds >= speed.MIN_ROUNDS_BUDGET:
            stopped = "budget"
            break
    seconds = round(time.perf_counter() - start, 3)
    use_cpu = _use_cpu(sides, cuda, band)
    out: Dict[Tuple[int, int], Dict[str, Any]] = {}
    for i in range(n):
        for j in range(n):
            if i != j:
                out[(i, j)] = _record(sides[i].samples, sides[j].samples, cuda, use_cpu, band, rounds, inner,
                                      stopped, budget_s, seconds, n)
    return out


def _use_cpu(sides: Sequence[speed.Side], cuda: bool, band: float) -> bool:
    """One clock for every pair (module docstring): CPU time when its whole-step intervals against the reference
    are the narrower in sum."""
    if cuda:
        return False
    ref = sides[0].samples
    width = {cpu: sum(speed._width(speed._judge(ref, s.samples, "step", cpu, band, 2000)) for s in sides[1:])
             for cpu in (False, True)}
    return width[True] < width[False]


def _record(a: Sequence[speed.Phase], b: Sequence[speed.Phase], cuda: bool, use_cpu: bool, band: float,
            rounds: int, inner: int, stopped: str, budget_s: float, seconds: float, n: int) -> Dict[str, Any]:
    """The two-way record of :func:`.speed.measure` for the samples of two of the sides, on the chosen clock."""
    out: Dict[str, Any] = {
        "clock": "cuda events" if cuda else ("cpu" if use_cpu else "wall"),
        "clock_why": ("CUDA events around the forward and the backward" if cuda else
                      ("process CPU time: its intervals against the reference were the narrower, over all sides "
                       "(other processes' load does not count in it)" if use_cpu else
                       "wall clock: its intervals against the reference were the narrower, over all sides")),
        "band": band, "level": speed.LEVEL, "rounds": rounds, "inner": inner, "stopped": stopped,
        "budget_s": budget_s, "seconds": seconds, "order": ORDER, "instrumented": False, "sides_timed": n,
    }
    for phase in speed.PHASES:
        t = speed._judge(a, b, phase, use_cpu, band, 2000)
        if not cuda:
            other = speed._judge(a, b, phase, not use_cpu, band, 2000)
            t["wall" if use_cpu else "cpu"] = {k: other[k] for k in ("ratio", "low", "high", "verdict", "ms")}
        out[phase] = t
    return out


def per_node(sides: Sequence[Tuple[Callable[..., Any], Sequence[Any], Mapping[str, Any], Callable[[], None]]],
             graphs: Sequence[GradGraph], repeat: int, guard: GradGuard, device: torch.device) -> Dict[str, Any]:
    """Per-node times of every side: one warm-up round, then ``repeat`` instrumented rounds in the turning order,
    per-node medians written into ``graphs`` (what :func:`.interleave.interleaved` does for two sides)."""
    clock = CudaClock(device) if device.type == "cuda" else CpuClock()
    state: List[_Side] = [_Side(*s) for s in sides]
    token = object()
    try:
        try:
            GC_PAUSE.acquire(token)
            for r in range(repeat + 1):
                for i in order(r, len(state)):
                    _instrumented(state[i], clock, guard, token, keep=r > 0, graph=graphs[i])
        finally:
            GC_PAUSE.release(token)
    finally:
        GC_PAUSE.release(token)  # again (idempotent): an interrupt anywhere must not leave the collector off
    for s, g in zip(state, graphs):
        annotate(g, s.runs, stat="median", backward=True, repeat=repeat, warmup=1, device=device, clock=clock,
                 interleaved=True)
    return {"runs": len(state[0].runs), "order": ORDER}

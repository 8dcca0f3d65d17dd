"""Which side is faster: plain runs of both functions, interleaved, with no per-node instrumentation at all.

The verdict's numbers never come from hooked runs: per-node hooks cost more on the side with more nodes and bias the
ratio. Each measurement is ``inner`` plain calls of the function and ``torch.autograd.backward`` of its output, timed
around the forward and around the backward — on the CPU by the wall clock *and* by the process's CPU time (the work
of this process's threads), on CUDA by events — and keeps the fastest call of each phase: on a busy machine
interference only ever adds time, so the fastest of a few calls is what the code costs, and it moves far less with
the load of the moment than a mean does.

Threads: on a machine whose cores are all busy already (the load average is at least the number of cores this
process may use), torch's intra-op threads mostly wait for one another at every parallel region — a descheduled
thread stalls the rest — and multi-threaded timings measure the scheduler, not the code. There, unless ``threads``
says otherwise, both sides are timed single-threaded, and the record says so and why.

Rounds alternate the order (A, B, then B, A, ...) so drift hits both sides alike; a round's ratio is B's time over
A's in that round, the ratio reported is the median over rounds, with a distribution-free interval for that median
(:func:`median_interval`: two order statistics of the rounds' ratios, chosen by the binomial distribution). A
percentile bootstrap of the median is too narrow over the few rounds a verdict is often reached on (over eight
rounds it spans little more than the middle ratios, and misses the median far more often than one time in twenty),
which let identical functions be called faster or slower at the first look.
Sampling is adaptive: after :data:`MIN_ROUNDS` rounds it stops as soon as the whole step's verdict is decided
(:func:`~graphwidget.analysis.diff.verdicts.speed_verdict`) on the stricter :data:`LOOK_LEVEL` interval — every look
is one more chance to stop on a lucky streak, so a look stops only on what even the wider interval decides — or when
the time budget is spent, and says which; the verdict itself is then read from the :data:`LEVEL` interval. On the
CPU the verdict uses the clock whose interval for the whole step is the narrower (the more stable under the load of
the moment), and says which; every phase is then judged on that clock, so one ratio is shown everywhere.
"""
from __future__ import annotations

import math
import os
import time
from typing import Any, Callable, Dict, List, Mapping, Optional, Sequence, Tuple, TypeVar

import torch

from .._util.stats import median
from ..analysis.diff.verdicts import BAND, UNCLEAR, speed_verdict
from ..profiling.checks import select_roots
from .interleave import ORDER, alternate

#: Rounds before the first look at the verdict.
MIN_ROUNDS = 8
#: Fewest rounds a spent budget may stop at.
MIN_ROUNDS_BUDGET = 5
MAX_ROUNDS = 400
#: A measurement repeats the call until it lasts about this long, at least :data:`MIN_INNER` times, unless one call
#: is slower than :data:`SLOW_MS` (then once: the rounds themselves repeat it).
TARGET_MS = 10.0
MIN_INNER = 3
MAX_INNER = 64
SLOW_MS = 200.0
LEVEL = 0.95
#: The interval a look at the verdict stops sampling on (module docstring): wider than :data:`LEVEL`'s, and nested
#: around it, so what it decides the final interval decides alike.
LOOK_LEVEL = 0.99
PHASES = ("step", "forward", "backward")

T = TypeVar("T")

#: The fastest forward, backward and step of a measurement, by wall clock (CUDA: events) then by CPU time (ms).
Phase = Tuple[float, float, float, float, float, float]


def paired_ratio(pairs: Sequence[Tuple[float, float]]) -> float:
    """Median over the rounds of B's time / A's time in the same round: what drifts between rounds cancels."""
    return median([b / a for a, b in pairs if a > 0]) or 0.0


def median_interval(values: Sequence[float], level: float = LEVEL) -> Tuple[float, float]:
    """Distribution-free confidence interval for the median of ``values`` (independent draws of any continuous
    distribution): the ``k``-th smallest and the ``k``-th largest value, ``k`` the largest rank with
    ``P(Binomial(n, 1/2) < k) <= (1 - level) / 2``, so the interval holds the true median with probability at least
    ``level``. With too few values for that (five or fewer at 95 %) it is the whole range, which holds the median with
    probability ``1 - 2 / 2**n``."""
    v = sorted(values)
    n = len(v)
    if not n:
        raise ValueError("median_interval needs at least one value")
    tail, k, below = (1 - level) / 2, 0, 0.0
    while k < n // 2:
        below += math.comb(n, k) / 2 ** n  # P(Binomial(n, 1/2) <= k) = P(< k + 1)
        if below > tail:
            break
        k += 1
    k = max(k, 1)
    return v[k - 1], v[n - k]


class Side:
    """One function, its arguments, what resets state before a measurement, and the leaves its backward writes
    ``.grad`` into (cleared before each backward by ``guard``, so nothing accumulates)."""

    def __init__(self, fn: Callable[..., Any], args: Sequence[Any], kwargs: Mapping[str, Any],
                 before: Callable[[], None], leaves: Sequence[torch.Tensor], guard: Any,
                 device: torch.device) -> None:
        self.fn, self.args, self.kwargs, self.before = fn, args, kwargs, before
        self.leaves, self.guard, self.device = list(leaves), guard, device
        self.samples: List[Phase] = []

    def measure(self, inner: int) -> Phase:
        """The fastest of ``inner`` calls, per phase: ``(forward, backward)`` wall (or CUDA event) ms, then the
        same by CPU time; the step is judged on the fastest call's sum (see :func:`_phase`)."""
        self.before()
        best: List[float] = [math.inf] * 6  # forward, backward, step: wall then CPU
        cuda = self.device.type == "cuda"
        for _ in range(inner):
            if cuda:
                ev = [torch.cuda.Event(enable_timing=True) for _ in range(4)]
                ev[0].record()
            c0, w0 = time.process_time_ns(), time.perf_counter_ns()
            out = self.fn(*self.args, **self.kwargs)
            if cuda:
                ev[1].record()
            c1, w1 = time.process_time_ns(), time.perf_counter_ns()
            roots = select_roots(out)
            ones = [torch.ones_like(r) for r in roots]
            self.guard.before_backward(self.leaves)
            c2, w2 = time.process_time_ns(), time.perf_counter_ns()
            if cuda:
                # after the ones and the cleared .grad, as on the CPU clocks: the backward alone
                ev[2].record()
            torch.autograd.backward(roots, ones)
            if cuda:
                ev[3].record()
                torch.cuda.synchronize(self.device)
            c3, w3 = time.process_time_ns(), time.perf_counter_ns()
            if cuda:
                fw, bw = ev[0].elapsed_time(ev[1]), ev[2].elapsed_time(ev[3])
            else:
                fw, bw = (w1 - w0) / 1e6, (w3 - w2) / 1e6
            fc, bc = (c1 - c0) / 1e6, (c3 - c2) / 1e6
            for k, v in enumerate((fw, bw, fw + bw, fc, bc, fc + bc)):
                best[k] = min(best[k], v)
            del out, roots, ones
        return tuple(best)  # type: ignore[return-value]


def _phase(samples: Sequence[Phase], phase: str, cpu: bool) -> List[float]:
    k = ("forward", "backward", "step").index(phase) + (3 if cpu else 0)
    return [s[k] for s in samples]


def _judge(a: Sequence[Phase], b: Sequence[Phase], phase: str, cpu: bool, band: float,
           resamples: int = 0, level: float = LEVEL) -> Dict[str, Any]:
    """One phase judged on one clock. ``resamples`` is not used (the interval is :func:`median_interval`'s, exact);
    it stays for the callers that pass it."""
    pairs = list(zip(_phase(a, phase, cpu), _phase(b, phase, cpu)))
    ratio = paired_ratio(pairs)
    low, high = median_interval([y / x for x, y in pairs if x > 0] or [0.0], level)
    return {"ratio": ratio, "low": low, "high": high, "verdict": speed_verdict(ratio, low, high, band),
            "ms": [median([p[0] for p in pairs]), median([p[1] for p in pairs])]}


def _width(t: Dict[str, Any]) -> float:
    return math.log(t["high"] / t["low"]) if t["low"] > 0 and t["high"] > 0 else math.inf


def _clock(a: Sequence[Phase], b: Sequence[Phase], cuda: bool, band: float,
           resamples: int = 0, level: float = LEVEL) -> Tuple[bool, Dict[str, Any]]:
    """``(use CPU time?, the whole step judged on that clock)``: on the CPU, CPU time when the two clocks disagree
    (either's ratio outside the other's interval: under load the longer side is pre-empted more, which biases the
    wall clock, whose interval can still be the narrower), else the clock whose interval is the narrower; CUDA:
    events."""
    wall = _judge(a, b, "step", False, band, level=level)
    if cuda:
        return False, wall
    cpu = _judge(a, b, "step", True, band, level=level)
    if disagree(wall, cpu):
        return True, cpu
    return (True, cpu) if _width(cpu) < _width(wall) else (False, wall)


def disagree(wall: Dict[str, Any], cpu: Dict[str, Any]) -> bool:
    """Whether the wall clock's ratio lies outside CPU time's interval or the other way round."""
    return not (cpu["low"] <= wall["ratio"] <= cpu["high"]) or not (wall["low"] <= cpu["ratio"] <= wall["high"])


def busy() -> Tuple[float, int]:
    """The 1-minute load average and how many cores this process may run on."""
    try:
        cores = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):  # not Linux
        cores = os.cpu_count() or 1
    try:
        load = os.getloadavg()[0]
    except (AttributeError, OSError):  # Windows
        load = 0.0
    return load, cores


def choose_threads(threads: Optional[int], cuda: bool) -> Tuple[int, str]:
    """How many intra-op threads to time with, and why (module docstring)."""
    now = torch.get_num_threads()
    if threads is not None:
        return threads, f"{threads} thread{'s' if threads != 1 else ''}, as asked"
    if cuda:
        return now, f"{now} threads, as configured (CUDA: the work is on the device)"
    load, cores = busy()
    if now > 1 and load >= cores:
        return 1, (f"1 thread instead of the configured {now}: the machine is busy (load {load:.1f} on {cores} "
                   f"cores), where multi-threaded runs mostly measure threads waiting for one another; pass "
                   f"threads={now} to time them anyway")
    return now, f"{now} thread{'s' if now != 1 else ''}, as configured (load {load:.1f} on {cores} cores)"


def measure(sides: Sequence[Side], band: float = BAND, budget_s: float = 3.0, threads: Optional[int] = None,
            min_rounds: int = MIN_ROUNDS, max_rounds: int = MAX_ROUNDS) -> Dict[str, Any]:
    """Time both sides (module docstring) and return the timing record of the diff document: per phase
    (``step``, ``forward``, ``backward``) the ratio B/A on the chosen clock, its interval, the verdict and both
    sides' median ms, plus the ratios on the other clock, the threads used, the number of rounds and why sampling
    stopped. ``threads``: intra-op threads to time with (``None``: as configured, or 1 on a busy machine)."""
    cuda = sides[0].device.type == "cuda"
    out, n, why = with_threads(threads, cuda, lambda: _measure(sides, band, budget_s, min_rounds, max_rounds, cuda))
    out.update(threads=n, threads_why=why)
    return out


def with_threads(threads: Optional[int], cuda: bool, run: Callable[[], T]) -> Tuple[T, int, str]:
    """``run()`` with the intra-op threads :func:`choose_threads` picks (torch's setting put back after), and how
    many threads and why."""
    n, why = choose_threads(threads, cuda)
    before = torch.get_num_threads()
    try:
        if n != before:
            torch.set_num_threads(n)
        out = run()
    finally:
        if torch.get_num_threads() != before:
            torch.set_num_threads(before)
    return out, n, why


def _measure(sides: Sequence[Side], band: float, budget_s: float, min_rounds: int, max_rounds: int,
             cuda: bool) -> Dict[str, Any]:
    a, b = sides
    decided_on: List[bool] = []  # the clock the deciding look read (its verdict is the one to report)

    def decided() -> bool:
        look_cpu, look = _clock(a.samples, b.samples, cuda, band, level=LOOK_LEVEL)
        if look["verdict"] != UNCLEAR:
            decided_on.append(look_cpu)
            return True
        return False

    sampled = sample(sides, alternate, decided, budget_s, min_rounds, max_rounds)
    use_cpu = decided_on[0] if decided_on else _clock(a.samples, b.samples, cuda, band)[0]
    split = not cuda and disagree(_judge(a.samples, b.samples, "step", False, band),
                                  _judge(a.samples, b.samples, "step", True, band))
    if split:
        why = ("process CPU time: the wall clock and CPU time disagree (other processes' load, which pre-empts the "
               "longer side more, does not count in CPU time)")
        use_cpu = True
    else:
        why = ("process CPU time: its interval was the narrower (other processes' load does not count in it)"
               if use_cpu else "wall clock: its interval was the narrower") + (
            " at the look that decided" if decided_on else "")
    return timing_record(a.samples, b.samples, cuda, use_cpu, band, sampled, budget_s, ORDER, why)


def sample(sides: Sequence[Side], order: Callable[[int, int], Sequence[int]], decided: Callable[[], bool],
           budget_s: float, min_rounds: int, max_rounds: int) -> Dict[str, Any]:
    """Warm every side up, then measure every side once per round in ``order(round, n)`` until ``decided()`` (looked
    at on whole pairs of rounds, after ``min_rounds``), the budget is spent or ``max_rounds`` ran; each
    measurement goes to its side's ``samples``. Returns ``{"rounds", "inner", "stopped", "seconds"}``."""
    for s in sides:  # warm-up: first calls compile, allocate, fill caches
        s.measure(1)
    step_ms = min(s.measure(1)[2] for s in sides)
    inner = 1 if step_ms > SLOW_MS else max(MIN_INNER, min(MAX_INNER, math.ceil(TARGET_MS / max(step_ms, 1e-3))))
    start = time.perf_counter()
    stopped = "max rounds"
    rounds, next_look = 0, max(2, min_rounds + min_rounds % 2)
    while rounds < max_rounds:
        for i in order(rounds, len(sides)):
            sides[i].samples.append(sides[i].measure(inner))
        rounds += 1
        if rounds % 2:
            continue  # decide on whole pairs of orders only
        if rounds >= next_look:
            # looks grow apart (x1.25): each look is one more chance to stop on a streak, early looks matter most
            next_look = rounds + max(2, 2 * (rounds // 8))
            if decided():
                stopped = "decided"
                break
        if time.perf_counter() - start > budget_s and rounds >= MIN_ROUNDS_BUDGET:
            stopped = "budget"
            break
    return {"rounds": rounds, "inner": inner, "stopped": stopped, "seconds": round(time.perf_counter() - start, 3)}


def timing_record(a: Sequence[Phase], b: Sequence[Phase], cuda: bool, use_cpu: bool, band: float,
                  sampled: Dict[str, Any], budget_s: float, order: str, clock_why: str) -> Dict[str, Any]:
    """The timing record of B's samples against A's on the chosen clock (:func:`measure`'s), every phase judged,
    with the other clock's ratios beside; ``sampled``: :func:`sample`'s account."""
    out: Dict[str, Any] = {
        "clock": "cuda events" if cuda else ("cpu" if use_cpu else "wall"),
        "clock_why": "CUDA events around the forward and the backward" if cuda else clock_why,
        "band": band, "level": LEVEL, **sampled, "budget_s": budget_s, "order": order, "instrumented": False,
    }
    out["clocks_disagree"] = bool(not cuda and disagree(_judge(a, b, "step", False, band),
                                                        _judge(a, b, "step", True, band)))
    for phase in PHASES:
        t = _judge(a, b, phase, use_cpu, band)
        if phase == "step":  # the fastest call of each side on that clock, and its throughput
            fast = [min(_phase(x, phase, use_cpu)) for x in (a, b)]
            t["fastest_ms"] = fast
            t["calls_per_s"] = [1e3 / v if v > 0 else None for v in fast]
            t["clocks_disagree"] = out["clocks_disagree"]
        if not cuda:
            other = _judge(a, b, phase, not use_cpu, band)
            t["wall" if use_cpu else "cpu"] = {k: other[k] for k in ("ratio", "low", "high", "verdict", "ms")}
        out[phase] = t
    return out


def leaves_of(out: Any) -> List[torch.Tensor]:
    """The leaves a backward from ``out`` writes ``.grad`` into (to clear them between runs)."""
    from .naming import leaf_tensors
    roots: Optional[List[torch.Tensor]] = select_roots(out)
    return leaf_tensors(roots or [])

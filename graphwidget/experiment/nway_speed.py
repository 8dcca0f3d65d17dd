"""Which of N sides is faster than which: the plain interleaved runs of :mod:`.speed`, every side in every round.

A round runs every side once (the same measurement as two-way: the fastest of ``inner`` plain calls per phase, by
wall clock and CPU time). The order turns by one side every two rounds and every second round is the reverse of the
one before, so within each pair of rounds every two sides meet once in each order, whatever N (for two sides: A, B,
B, A, ...). For any two sides the per-round ratios are then paired exactly as in a two-way comparison, and each pair
gets the same record from the same rules — median ratio over rounds, the distribution-free interval of that median,
the verdict with its band — as :func:`.speed.measure` gives two sides. The clock is chosen once for all pairs (the one
whose whole-step intervals against the reference are the narrower, summed over the sides; for two sides that is
two-way's rule), so the reference's time is one figure in every pair's record and in the table.

Sampling stops, after :data:`.speed.MIN_ROUNDS` rounds, once every side's whole-step verdict against the reference
(side 0) is decided on the stricter :data:`.speed.LOOK_LEVEL` interval (as two-way looks do), or when the budget is
spent. Per-node times come from instrumented rounds in the same turning
order (:func:`per_node`), as :mod:`.interleave` does for two.
"""
from __future__ import annotations

from typing import Any, Callable, Dict, List, Mapping, Sequence, Tuple

import torch

from ..analysis.diff.verdicts import UNCLEAR
from ..model.graph import GradGraph
from . import speed
from .interleave import GradGuard, interleaved

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
    out, n, why = speed.with_threads(threads, cuda,
                                     lambda: _measure(sides, band, budget_s, min_rounds, max_rounds, cuda))
    for rec in out.values():
        rec.update(threads=n, threads_why=why)
    return out


def _measure(sides: Sequence[speed.Side], band: float, budget_s: float, min_rounds: int, max_rounds: int,
             cuda: bool) -> Dict[Tuple[int, int], Dict[str, Any]]:
    n = len(sides)

    def decided() -> bool:
        return all(speed._clock(sides[0].samples, sides[k].samples, cuda, band,
                                level=speed.LOOK_LEVEL)[1]["verdict"] != UNCLEAR for k in range(1, n))

    sampled = speed.sample(sides, order, decided, budget_s, min_rounds, max_rounds)
    use_cpu = _use_cpu(sides, cuda, band)
    why = ("process CPU time: its intervals against the reference were the narrower, over all sides (other "
           "processes' load does not count in it)" if use_cpu else
           "wall clock: its intervals against the reference were the narrower, over all sides")
    out: Dict[Tuple[int, int], Dict[str, Any]] = {}
    for i in range(n):
        for j in range(n):
            if i != j:
                out[(i, j)] = speed.timing_record(sides[i].samples, sides[j].samples, cuda, use_cpu, band, sampled,
                                                  budget_s, ORDER, why)
                out[(i, j)]["sides_timed"] = n
    return out


def _use_cpu(sides: Sequence[speed.Side], cuda: bool, band: float) -> bool:
    """One clock for every pair (module docstring): CPU time when its whole-step intervals against the reference
    are the narrower in sum."""
    if cuda:
        return False
    ref = sides[0].samples
    width = {cpu: sum(speed._width(speed._judge(ref, s.samples, "step", cpu, band)) for s in sides[1:])
             for cpu in (False, True)}
    return width[True] < width[False]


def per_node(sides: Sequence[Tuple[Callable[..., Any], Sequence[Any], Mapping[str, Any], Callable[[], None]]],
             graphs: Sequence[GradGraph], repeat: int, guard: GradGuard, device: torch.device) -> Dict[str, Any]:
    """Per-node times of every side: one warm-up round, then ``repeat`` instrumented rounds in the turning order,
    per-node medians written into ``graphs`` (:func:`.interleave.interleaved`, in this order)."""
    return interleaved(sides, graphs, repeat, guard, device, order=order, order_text=ORDER)

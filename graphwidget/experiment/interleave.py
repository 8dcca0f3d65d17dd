"""Timing two functions fairly: their runs interleaved, so that whatever drifts on the machine (another process, the
CPU clock, the allocator) hits both sides alike, and the B/A ratio with a bootstrap interval over the paired rounds.

One warmup round, then ``repeat`` rounds; round ``r`` runs A then B when ``r`` is even and B then A when it is odd
(A, B, B, A, ...), so neither side always goes first. Each run is one call of the function and one backward, timed
with :func:`graphwidget.profile`'s own machinery (``profiling/runner.py``: the lean op timer and the backward node
hooks), never the recorder. Per side, node times and wall times are medians over the rounds (``stat="median"``).

The ratio is the median over rounds of B's time divided by A's time *in the same round* (a slow spell of the machine
slows both members of a round, and cancels), its interval a percentile bootstrap over whole rounds
(:func:`graphwidget._util.stats.bootstrap_interval`). The verdict reads the interval, not the point estimate: a 95 %
interval of B/A entirely below 1 is "B faster", entirely above 1 "B slower", anything containing 1 "no measurable
difference".
"""
from __future__ import annotations

from typing import Any, Callable, Dict, List, Mapping, Optional, Sequence, Tuple

import torch

from .._util.stats import bootstrap_interval, median
from ..model.graph import GradGraph
from ..profiling.checks import structure_error
from ..profiling.clocks import CpuClock, CudaClock
from ..profiling.grads import Grads
from ..profiling.hooks import Run, call_map
from ..profiling.runner import GC_PAUSE, _one_run, annotate

LEVEL = 0.95
VERDICTS = ("B faster", "B slower", "no measurable difference")


class GradGuard(Grads):
    """The ``grads`` object :func:`_one_run` hands the run's leaves to before each backward: remembers every leaf's
    ``.grad`` the first time it sees it and clears it, so runs never accumulate; :meth:`restore` puts the original
    ``.grad`` objects back (untouched: never added to in place)."""

    def restore(self) -> None:
        for v, orig in self.saved.values():
            v.grad = orig
        self.saved.clear()


def verdict(low: float, high: float) -> str:
    if high < 1.0:
        return "B faster"
    if low > 1.0:
        return "B slower"
    return "no measurable difference"


def paired_ratio(pairs: Sequence[Tuple[float, float]]) -> float:
    """Median over the rounds of B's time / A's time in the same round: what drifts between rounds cancels."""
    return median([b / a for a, b in pairs if a > 0]) or 0.0


class _Side:
    def __init__(self, fn: Callable[..., Any], args: Sequence[Any], kwargs: Mapping[str, Any],
                 before: Callable[[], None]) -> None:
        self.fn, self.args, self.kwargs, self.before = fn, args, kwargs, before
        self.runs: List[Run] = []
        self.ref: Optional[Run] = None
        self.maps: Dict[Any, List[int]] = {}


def interleaved(sides: Sequence[Tuple[Callable[..., Any], Sequence[Any], Mapping[str, Any], Callable[[], None]]],
                graphs: Sequence[GradGraph], repeat: int, guard: GradGuard, device: torch.device) -> Dict[str, Any]:
    """Time both sides over ``repeat`` interleaved rounds (after one warmup round), write per-node medians
    (``fwd_ms``, ``bwd_ms``) and ``meta["timing"]`` into ``graphs`` (the two graphs already captured from the same
    functions and inputs), and return the timing record of the diff document (backward B/A, interval, verdict).
    ``before`` (per side) is called before every run (it resets the RNG and module buffers); ``device`` picks the
    clock (CUDA events on a CUDA device)."""
    dev = device
    clock = CudaClock(dev) if dev.type == "cuda" else CpuClock()
    state = [_Side(*s) for s in sides]
    # Our bookkeeping runs without the collector, each forward as the user left it (_one_run releases the pause
    # around it). The pause is profile's shared, reference-counted one: never switched by hand under another thread.
    token = object()
    try:
        try:
            GC_PAUSE.acquire(token)
            for r in range(repeat + 1):
                order = (0, 1) if r % 2 == 0 else (1, 0)
                for i in order:
                    _measure(state[i], clock, guard, token, keep=r > 0, graph=graphs[i])
        finally:
            GC_PAUSE.release(token)
    finally:
        GC_PAUSE.release(token)  # again (idempotent): an interrupt anywhere must not leave the collector off
    for s, g in zip(state, graphs):
        annotate(g, s.runs, stat="median", backward=True, repeat=repeat, warmup=1, device=dev, clock=clock,
                 interleaved=True)
    pairs = [(a.bwd_wall, b.bwd_wall) for a, b in zip(state[0].runs, state[1].runs)]
    ratio = paired_ratio(pairs)
    low, high = bootstrap_interval(pairs, paired_ratio, level=LEVEL)
    fpairs = [(a.fwd_wall, b.fwd_wall) for a, b in zip(state[0].runs, state[1].runs)]
    flow, fhigh = bootstrap_interval(fpairs, paired_ratio, level=LEVEL)
    return {"ratio": ratio, "low": low, "high": high, "runs": len(pairs), "verdict": verdict(low, high),
            "level": LEVEL, "order": "A,B,B,A,...",
            "backward_ms": [median([p[0] for p in pairs]), median([p[1] for p in pairs])],
            "forward": {"ratio": paired_ratio(fpairs), "low": flow, "high": fhigh,
                        "verdict": verdict(flow, fhigh),
                        "forward_ms": [median([p[0] for p in fpairs]), median([p[1] for p in fpairs])]}}


def _measure(s: _Side, clock: Any, guard: GradGuard, token: object, keep: bool, graph: GradGraph) -> None:
    s.before()
    # GradGuard has Grads' before_backward (all _one_run calls): duck-typed on purpose, never added to in place
    run, _, out = _one_run(s.fn, s.args, s.kwargs, clock, guard, False, None, None, token)  # type: ignore[arg-type]
    del out  # the graph of this run is not needed: free it before the other side runs
    if s.ref is None:
        if [t.__name__ for t in run.types] != [d["op"] for _, d in sorted(graph.nx.nodes(data=True))]:
            raise ValueError(
                "graphwidget.compare: a timed run built a different graph than the first run of the same function "
                "(data-dependent branches or growing state); compare it with profile=False.")
        s.ref = run
    elif run.arity != s.ref.arity or [t.__name__ for t in run.types] != [t.__name__ for t in s.ref.types]:
        # by op *names*: a torch.compile'd region makes a new backward class with the same name on every compile
        raise structure_error(len(s.runs) + 1, s.ref, run)
    if keep:
        layout = tuple(run.layout())
        cmap = s.maps.get(layout)
        if cmap is None:
            cmap = s.maps[layout] = call_map(run.seqs(), run.calls)
        call_ms = [clock.ms(c[2], c[3]) for c in run.calls]
        run.fwd = [call_ms[c] if c >= 0 else (0.0 if c == -2 else None) for c in cmap]
        s.runs.append(run)
    run.drop_nodes()
    run.calls = []

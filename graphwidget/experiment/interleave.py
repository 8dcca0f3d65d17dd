"""Per-node times of two functions, measured fairly: instrumented runs (the lean op timer and the backward node
hooks of :func:`graphwidget.profile`), interleaved so that whatever drifts on the machine hits both sides alike.

One warmup round, then ``repeat`` rounds; round ``r`` runs A then B when ``r`` is even and B then A when it is odd
(A, B, B, A, ...). Per side, node times are medians over the rounds (``stat="median"``), written into the graphs.
These runs carry per-node hooks, which cost more on the side with more nodes: the speed *verdict* never comes from
them but from plain runs (:mod:`.speed`).
"""
from __future__ import annotations

from typing import Any, Callable, Dict, List, Mapping, Optional, Sequence, Tuple

import torch

from ..model.graph import GradGraph
from ..profiling.checks import structure_error
from ..profiling.clocks import CpuClock, CudaClock
from ..profiling.grads import Grads
from ..profiling.hooks import Run, call_map
from ..profiling.runner import GC_PAUSE, _one_run, annotate


class GradGuard(Grads):
    """The ``grads`` object :func:`_one_run` hands the run's leaves to before each backward: remembers every leaf's
    ``.grad`` the first time it sees it and clears it, so runs never accumulate; :meth:`restore` puts the original
    ``.grad`` objects back (untouched: never added to in place)."""

    def restore(self) -> None:
        for v, orig in self.saved.values():
            v.grad = orig
        self.saved.clear()


class _Side:
    def __init__(self, fn: Callable[..., Any], args: Sequence[Any], kwargs: Mapping[str, Any],
                 before: Callable[[], None]) -> None:
        self.fn, self.args, self.kwargs, self.before = fn, args, kwargs, before
        self.runs: List[Run] = []
        self.ref: Optional[Run] = None
        self.maps: Dict[Any, List[int]] = {}


#: The order of two sides' rounds: A, B in even rounds, B, A in odd ones.
ORDER = "A,B,B,A,..."


def alternate(r: int, n: int) -> List[int]:
    """Round ``r``'s order of ``n`` sides: forwards in even rounds, backwards in odd ones (:data:`ORDER`)."""
    return list(range(n)) if r % 2 == 0 else list(range(n))[::-1]


def interleaved(sides: Sequence[Tuple[Callable[..., Any], Sequence[Any], Mapping[str, Any], Callable[[], None]]],
                graphs: Sequence[GradGraph], repeat: int, guard: GradGuard, device: torch.device,
                order: Callable[[int, int], List[int]] = alternate, order_text: str = ORDER) -> Dict[str, Any]:
    """Time the sides over ``repeat`` interleaved instrumented rounds (after one warmup round), write per-node
    medians (``fwd_ms``, ``bwd_ms``) and ``meta["timing"]`` into ``graphs`` (the graphs already captured from the
    same functions and inputs), and return how many rounds ran and in which order.
    ``before`` (per side) is called before every run (it resets the RNG and module buffers); ``device`` picks the
    clock (CUDA events on a CUDA device); ``order(r, n)`` is round ``r``'s order of the ``n`` sides, said in words
    by ``order_text`` (:mod:`.nway_speed` turns N sides)."""
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
                for i in order(r, len(state)):
                    _measure(state[i], clock, guard, token, keep=r > 0, graph=graphs[i])
        finally:
            GC_PAUSE.release(token)
    finally:
        GC_PAUSE.release(token)  # again (idempotent): an interrupt anywhere must not leave the collector off
    for s, g in zip(state, graphs):
        annotate(g, s.runs, stat="median", backward=True, repeat=repeat, warmup=1, device=dev, clock=clock,
                 interleaved=True)
    return {"runs": len(state[0].runs), "order": order_text}


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

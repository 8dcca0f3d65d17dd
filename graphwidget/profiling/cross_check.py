"""The reference the hooks are checked against: the same per-node table from ``torch.profiler``.

``autograd::engine::evaluate_function: XBackward0`` events carry the node's sequence number, so they map onto graph
nodes exactly (``AccumulateGrad`` reports -1, so it is only counted per op type); top-level forward op events carry
the sequence number of the first node they create. Independent of the hooks, but slow: the profiler records every
nested aten op and builds a Python object per event afterwards. Used by ``profile(..., cross_check=True)``, the tests
and ``tests/bench/bench_timing.py``.
"""
from __future__ import annotations

import gc
from contextlib import nullcontext
from typing import Any, Callable, Dict, List, Mapping, Optional, Sequence, Tuple

import torch

from .._util.stats import median
from ..attribution.attach import attributed_capture
from ..attribution.memory import device_of, start_profiler, stop_profiler
from ..attribution.recorder import Recorder
from ..capturing.roots import root_nodes
from ..capturing.seq import NO_SEQ
from ..model.graph import GradGraph
from .checks import select_roots, structure_error
from .grads import Grads
from .hooks import Run, call_map, instrument, same_structure

_EVAL = "autograd::engine::evaluate_function: "


def profiler_run(fn: Callable[..., Any], args: Sequence[Any], kwargs: Mapping[str, Any], dev: torch.device,
                 grads: Optional[Grads], ref: Optional[Run], attribute: bool = False,
                 module: Optional[torch.nn.Module] = None, title: Optional[str] = None
                 ) -> Tuple[Optional[GradGraph], List[Optional[float]], Dict[str, float], List[Optional[float]], Any]:
    """One run of ``fn`` (and its backward when ``grads`` is given) under ``torch.profiler``.

    Returns ``(graph, bwd, bwd_by_op, fwd, output)``: the captured graph (only with ``attribute``), per-node backward
    ms, backward ms per op type (including AccumulateGrad; the key ``"(evaluate_function total)"`` holds the sum of the
    inclusive events), per-node forward ms. With ``ref`` the run's graph must
    have the same structure as ``ref``'s."""
    from torch.profiler import ProfilerActivity
    from torch.profiler import profile as torch_profile
    cuda = dev.type == "cuda"
    acts = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if cuda else [])
    graph = None
    # Started and stopped with Ctrl-C held back (as memory=True's): a bare `with torch_profile` cut by an interrupt
    # between its start and its `try` left torch's profiler running, and every later profile refused.
    prof = start_profiler(torch_profile(activities=acts))
    try:
        rec = Recorder() if attribute else None
        try:
            with rec if rec is not None else nullcontext():
                out = rec.call(fn, *args, **kwargs) if rec is not None else fn(*args, **kwargs)
        finally:
            if rec is not None:
                rec.close()  # again (idempotent): an interrupt inside the with block's exit leaves nothing behind
        roots = select_roots(out)
        if rec is not None:
            graph = attributed_capture(rec, out, fn=fn, module=module, title=title, roots=roots,
                                       who="graphwidget.profile")
        run = instrument(root_nodes(roots), None)
        if ref is not None and not same_structure(ref, run):
            raise structure_error("(torch.profiler)", ref, run)
        if grads is not None:
            grads.before_backward(run.leaves)
            torch.autograd.backward(roots, [torch.ones_like(t) for t in roots])
    finally:
        try:
            stop_profiler(prof)
        finally:
            stop_profiler(prof)  # again (idempotent): an interrupt at any line of the first leaves this one

    def ms(e: Any) -> float:  # on CUDA the kernels' time, which is what the CUDA events of the hooks see
        return (e.device_time_total if cuda else e.time_range.elapsed_us()) / 1000

    # Per node, the child event the node itself records around its apply (same name as the node): what the hooks
    # time. Its evaluate_function parent also holds the engine passing the gradients on (summing fanned-in ones),
    # which the hooks count as engine time: kept apart, as the inclusive total.
    bwd_seq: Dict[int, float] = {}
    by_op: Dict[str, float] = {}
    inclusive = 0.0
    top: List[Any] = []
    for e in prof.events():
        parent = e.cpu_parent
        if e.name.startswith(_EVAL):
            inclusive += ms(e)
        elif parent is not None and parent.name == _EVAL + e.name:
            op = e.name.replace("torch::autograd::", "")
            by_op[op] = by_op.get(op, 0.0) + ms(e)
            if e.sequence_nr >= 0:
                bwd_seq[e.sequence_nr] = bwd_seq.get(e.sequence_nr, 0.0) + ms(e)
        elif parent is None and e.sequence_nr >= 0:
            top.append(e)
    by_op["(evaluate_function total)"] = inclusive
    seqs = run.seqs()
    bwd = [bwd_seq.get(s) if s is not None and grads is not None else None for s in seqs]
    # A top-level op event's range of node numbers ends where the next one's begins.
    top.sort(key=lambda e: e.time_range.start)
    calls = [(e.sequence_nr, top[j + 1].sequence_nr if j + 1 < len(top) else NO_SEQ, e, e)
             for j, e in enumerate(top)]
    calls = [c for c in calls if c[1] > c[0]]
    call_ms = [ms(c[2]) for c in calls]
    fwd = [call_ms[c] if c >= 0 else (0.0 if c == -2 else None) for c in call_map(seqs, calls)]
    return graph, bwd, by_op, fwd, out


def profiler_runs(fn: Callable[..., Any], args: Sequence[Any], kwargs: Mapping[str, Any], dev: torch.device,
                  grads: Optional[Grads], ref: Optional[Run], runs: int = 3
                  ) -> Tuple[List[Optional[float]], Dict[str, float]]:
    """``runs`` profiled runs; per-node and per-op medians. One run is a noisy sample: big-tensor nodes pay for fresh
    pages in some runs and not others, so one op's share moves a lot between single runs."""
    results = [profiler_run(fn, args, kwargs, dev, grads, ref) for _ in range(runs)]
    bwd = [median([r[1][i] for r in results]) for i in range(len(results[0][1]))]
    ops = sorted({op for r in results for op in r[2]})
    return bwd, {op: median([r[2].get(op, 0.0) for r in results]) or 0.0 for op in ops}


def hooks_vs_profiler(graph: GradGraph, profiler_by_op: Dict[str, float]) -> Dict[str, Any]:
    """Backward ms per op type from the hooks (``bwd_ms``) and from torch.profiler (the node's own event inside
    ``evaluate_function``), and the dominant op and its share of the time inside nodes for each; stored as
    ``g.meta["timing"]["cross_check"]``."""
    hooks: Dict[str, float] = {}
    for _, d in graph.nx.nodes(data=True):
        if d.get("bwd_ms") is not None:
            hooks[d["op"]] = hooks.get(d["op"], 0.0) + d["bwd_ms"]
    prof = dict(profiler_by_op)
    inclusive = prof.pop("(evaluate_function total)", None)
    out: Dict[str, Any] = {}
    for name, by in (("hooks", hooks), ("profiler", prof)):
        ranked = dict(sorted(by.items(), key=lambda kv: -kv[1]))
        top = next(iter(ranked), None)
        total = sum(by.values())
        out[f"{name}_by_op"] = {k: round(v, 4) for k, v in ranked.items()}
        out[f"{name}_top"] = top
        out[f"{name}_top_share"] = by[top] / total if top is not None and total > 0 else None
    out["profiler_evaluate_function_ms"] = inclusive  # nodes + the engine passing their gradients on
    return out


def profile_torch(fn: Callable[..., Any], *args: Any, backward: bool = True, module: Optional[torch.nn.Module] = None,
                  title: Optional[str] = None, **kwargs: Any) -> GradGraph:
    """The table of :func:`graphwidget.profile` from one run under ``torch.profiler``: same graph, ids, source
    lines and modules; ``fwd_ms`` from the top-level op event that created each node, ``bwd_ms`` from its
    own event inside ``evaluate_function``; ``backward_ms`` sums the ``evaluate_function`` events, so
    ``unattributed_ms`` is the engine passing gradients on (the engine's scheduling is not seen). One run, profiler
    overhead included: for validating, not measuring. Leaves' ``.grad`` end up as after one ``backward()``.

    >>> from graphwidget.timing_check import profile_torch
    >>> inp = gw.examples.homography_inputs(2, 16, 16)                      # doctest: +SKIP
    >>> g = profile_torch(gw.examples.homography_broadcast, **inp)          # doctest: +SKIP
    >>> g.timing_table(top=5)                                               # doctest: +SKIP
    """
    dev = device_of(fn, args, kwargs)
    grads = Grads() if backward else None
    ok = False
    gc_was = gc.isenabled()
    try:
        graph, bwd, by_op, fwd, out = profiler_run(fn, args, kwargs, dev, grads, None, True, module, title)
        ok = True
    finally:
        if gc_was:  # the capture pauses the collector; an interrupt can skip the end of that pause
            gc.enable()
        if grads is not None:
            grads.finish(ok)
    assert graph is not None
    for i, d in graph.nx.nodes(data=True):
        d["fwd_ms"], d["bwd_ms"] = fwd[i], bwd[i]
    graph.meta["timed"] = True
    inclusive = by_op.pop("(evaluate_function total)")
    nodes = sum(by_op.values())
    graph.meta["timing"] = {
        "forward_ms": sum(x for x in fwd if x), "backward_ms": inclusive if backward else None,
        "unattributed_ms": inclusive - nodes if backward else None, "repeat": 1, "warmup": 0, "device": str(dev),
        "clock": "torch.profiler"}
    graph.output = out
    return graph

"""Where the time goes: :func:`run_profile` (what ``gw.profile`` calls) runs a function (forward + backward)
and times every autograd node.

* **Backward**: a pre-hook and a post hook (``Node.register_prehook`` / ``register_hook``) on every node, tiny closures
  that store one stamp each in a list slot, removed after the backward. CPU stamps are ``perf_counter_ns``; CUDA
  stamps are events on the node's stream, read after one synchronise per run. Backward wall time minus the time
  inside nodes is the engine's own work between them (scheduling, summing fanned-in gradients): ``unattributed_ms``.
* **Forward**: a minimal ``TorchFunctionMode`` (plus a ``Function.apply`` wrapper) stamps each torch call that creates
  nodes; nodes are matched to calls by autograd sequence number. The attribution
  :class:`~graphwidget.attribution.recorder.Recorder` (source line, module path: far more bookkeeping per call than
  the timer) runs on the first run only.
* **Repeats**: ``warmup`` + ``repeat`` runs, each a new call of ``fn``; nodes are matched across runs by their
  deterministic ids (pre-order from the roots). Default statistic: drop the fastest and slowest quarter of the runs
  whole and average the rest, so node times and engine time still add up (``stat="median"``: per-node medians).
* **Cost**: while registering, torch's per-hook Python helper (an ``OrderedDict`` + ``RemovableHandle`` per call,
  two calls per node) is swapped for a lean one and the garbage collector is paused. Design: ``docs/timing.md``;
  numbers: ``docs/performance.md``.
"""
from __future__ import annotations

import gc
from array import array
from typing import Any, Callable, Dict, List, Mapping, Optional, Sequence, Tuple

import torch

from .._util.intervals import median_interval
from .._util.keywords import refuse_shadowed_options
from .._util.stats import mean, median
from ..attribution.attach import attributed_capture
from ..attribution.cuda_capture import refuse_during_cuda_graph_capture
from ..attribution.memory import device_of, reachable_tensors
from ..attribution.recorder import Recorder
from ..attribution.shared_patch import SharedPatch
from ..capturing.roots import root_nodes
from ..capturing.seq import next_seq
from ..model.graph import GradGraph
from .checks import select_roots, structure_error
from .clocks import CpuClock, CudaClock
from .grads import Grads
from .hooks import Run, call_map, instrument, same_structure
from .op_timer import OpTimer

_gc_was: List[Optional[bool]] = [None]  # the collector's state when the first profile paused it


def _pause_gc() -> None:
    if _gc_was[0] is None:
        _gc_was[0] = gc.isenabled()  # saved before the change: an interrupt in between leaves nothing to undo
    gc.disable()


def _resume_gc() -> None:
    was = _gc_was[0]
    if was is not None:
        if was:
            gc.enable()
        _gc_was[0] = None


#: The collector paused while any profile (in any thread) does its bookkeeping; back as it was when the last ends.
GC_PAUSE = SharedPatch("the garbage collector paused", _pause_gc, _resume_gc)


def _kept_runs(runs: List[Run], stat: str) -> List[Run]:
    """``"iqm"``: the runs left after dropping the fastest and the slowest quarter by total wall time (whole runs, so
    the survivors' node times and engine time still add up to their wall time). ``"median"``: all runs."""
    if stat == "median":
        return runs
    drop = min((len(runs) - 1) // 2, int(len(runs) / 4 + 0.5))
    ranked = sorted(runs, key=lambda r: r.fwd_wall + r.bwd_wall)
    return ranked[drop:len(runs) - drop]


def annotate(graph: GradGraph, kept: List[Run], *, stat: str, backward: bool, repeat: int, warmup: int,
             device: torch.device, clock: Any, measured: Optional[List[Run]] = None, **meta: Any) -> None:
    """Write the timed runs ``kept`` into ``graph``: per node ``fwd_ms``/``bwd_ms`` (median or mean over runs, by
    ``stat``) and ``meta["timing"]``. The one place both :func:`run_profile` and the diff's interleaved timing
    (:mod:`graphwidget.experiment.interleave`) turn runs into numbers, so the two read alike; ``meta`` adds keys
    (``interleaved=True``). ``measured``: every measured run in the order they ran (default ``kept``), kept per run
    in ``graph.steps`` for the trace export."""
    agg = median if stat == "median" else mean
    nodes = graph.nx.nodes
    for i, col in enumerate(zip(*(r.fwd for r in kept))):
        nodes[i]["fwd_ms"] = agg(col)
    if backward:
        for i, col in enumerate(zip(*(r.bwd for r in kept))):
            nodes[i]["bwd_ms"] = agg(col)
    bsum = [sum(x for x in r.bwd if x is not None) for r in kept]
    graph.meta["timed"] = True
    graph.meta["timing"] = {
        "forward_ms": agg([r.fwd_wall for r in kept]),
        "backward_ms": agg([r.bwd_wall for r in kept]) if backward else None,
        # per run: backward wall time minus the time inside nodes = the engine's own work between nodes
        "unattributed_ms": agg([r.bwd_wall - b for r, b in zip(kept, bsum)]) if backward else None,
        "repeat": repeat, "warmup": warmup, "device": str(device), "clock": clock.name, "stat": stat,
        "runs_used": len(kept), "forward_ops_ms": agg([sum(x for x in r.fwd if x is not None) for r in kept]),
        "backward_nodes_ms": agg(bsum) if backward else None,
        **meta,
    }
    graph.steps = _steps(measured if measured is not None else kept, kept, backward)
    fi = median_interval([r.fwd_wall for r in kept])
    if fi is not None:  # how much one forward's wall time moves between runs (a straggler must clear it)
        graph.meta["timing"]["forward_ms_interval"] = [round(fi[1], 6), round(fi[2], 6)]
    per_module = module_forward_ms(graph, kept)
    if per_module:
        graph.meta["timing"]["module_fwd_ms"] = per_module


def _steps(runs: List[Run], kept: List[Run], backward: bool) -> List[Dict[str, Any]]:
    """``graph.steps``: each run's per-node times as flat float arrays (NaN for none): a few bytes per node and run
    instead of a float object each."""
    nan = float("nan")
    used = {id(r) for r in kept}
    return [{"fwd": array("d", [nan if x is None else x for x in r.fwd]),
             "bwd": array("d", [nan if x is None else x for x in r.bwd]) if backward else None,
             "fwd_wall": r.fwd_wall, "bwd_wall": r.bwd_wall if backward else None, "kept": id(r) in used}
            for r in runs]


def module_forward_ms(graph: GradGraph, kept: List[Run]) -> Dict[str, List[float]]:
    """Per module path (every prefix of a node's ``module``): ``[median, lo, hi]`` over the runs of each run's sum of
    the module's node times, ``lo``/``hi`` an order-statistic interval of that median (``median_interval``). One
    slow op in one run moves the run's sum, not the median: what a checkpoint's recompute time is read from."""
    nodes = graph.nx.nodes
    members: Dict[str, List[int]] = {}
    for i in range(len(nodes)):
        m = nodes[i].get("module") if i in nodes else None
        if m is None:
            continue
        parts = m.split(".") if m else []
        for k in range(len(parts) + 1):
            members.setdefault(".".join(parts[:k]), []).append(i)
    out: Dict[str, List[float]] = {}
    for path, idx in members.items():
        sums = [sum(r.fwd[i] or 0.0 for i in idx if i < len(r.fwd)) for r in kept]
        mi = median_interval(sums)
        if mi is not None:
            out[path] = [round(x, 6) for x in mi]
    return out


@refuse_shadowed_options("graphwidget.profile", "fn")
def run_profile(fn: Callable[..., Any], *args: Any, repeat: int = 5, warmup: int = 1, backward: bool = True,
                stat: str = "iqm", cross_check: bool = False, device: Optional[Any] = None,
                module: Optional[torch.nn.Module] = None, title: Optional[str] = None, memory: bool = False,
                **kwargs: Any) -> GradGraph:
    """Run ``fn(*args, **kwargs)`` ``warmup + repeat`` times, forward and backward, and return its graph with the
    forward time (``fwd_ms``) and backward time (``bwd_ms``) of every node over the repeats, plus everything
    :func:`graphwidget.trace` records (source line, module path).

    ``stat="iqm"`` (default): drop the fastest and slowest quarter of the runs (whole runs), average the rest per
    node; node times + ``unattributed_ms`` then add up to ``backward_ms``, the same runs' mean wall time. (A per-node
    median hides costs that move between nodes from run to run, such as the allocator faulting in fresh pages for
    one big gradient or another: a large share of the homography backward.) ``stat="median"``: per-node medians over all
    runs; robust per node, but the nodes no longer add up to the wall time.

    ``fn`` returns the tensor to differentiate, or a dict/object with a ``loss`` tensor (that one is used), or a
    (nested) list/tuple/dict of tensors (every one that requires grad is a root). Each root gets a gradient of ones,
    i.e. backward of the sum of all their elements, in one ``torch.autograd.backward`` call.

    After profiling, the ``.grad`` of every leaf is exactly what one plain ``fn(*args).backward()`` would have left
    (the repeats do not accumulate); ``g.output`` is the last run's output (its backward already ran). Every hook and
    patch is removed. ``backward=False`` times the forward only and leaves ``g.output``'s graph untouched.
    The first run also records source lines and modules; with ``warmup=0`` its forward wall time includes that
    (its per-op times do not), and ``stat="iqm"`` usually drops it as the slowest run.
    ``cross_check=True`` adds three runs under ``torch.profiler`` and stores their per-node backward medians as
    ``bwd_ms_profiler`` (networkx attribute) and a per-op comparison in ``g.meta["timing"]["cross_check"]``.
    ``memory=True`` records the memory timeline of one more run, the first (docs/memory.md): the allocator's bytes
    at every node of the forward and the backward (``torch.profiler`` memory events; on CUDA the caching
    allocator), which module received which storage, and, from the graph, the saved activations and gradients
    alive. It is never a measured run (with ``warmup=0`` one run is added for it). ``g.memory()`` explains the peak.
    A keyword passed here that is both one of these options and a parameter of ``fn`` raises ``TypeError`` before
    anything runs (which was meant cannot be known): bind ``fn``'s own with ``functools.partial``.

    >>> import graphwidget as gw
    >>> g = gw.profile(gw.examples.homography_repeat, **gw.examples.homography_inputs(2, 16, 16), repeat=3)
    >>> s = g.summary(); s["backward_ms"] >= s["unattributed_ms"], g.meta["timing"]["repeat"]
    (True, 3)
    >>> slowest = max(g.nodes(), key=lambda n: g.node(n)["bwd_ms"] or 0)
    >>> g.timing_table(top=5)                                      # doctest: +SKIP
    """
    if not callable(fn):
        raise TypeError(f"graphwidget.profile expects a callable (a function or nn.Module) as its first argument; "
                        f"got {type(fn).__name__}.")
    if stat not in ("iqm", "median"):
        raise ValueError(f"graphwidget.profile: stat must be 'iqm' or 'median', not {stat!r}.")
    if repeat < 1 or warmup < 0:
        raise ValueError(f"graphwidget.profile: need repeat >= 1 and warmup >= 0 (got {repeat=}, {warmup=}).")
    if next_seq is None:  # pragma: no cover - torch without the sequence-number counter
        raise RuntimeError("graphwidget.profile needs torch._C._autograd._get_sequence_nr (torch >= 2.0).")
    dev = torch.device(device) if device is not None else device_of(fn, args, kwargs)
    if dev.type == "cuda":
        refuse_during_cuda_graph_capture("graphwidget.profile")
    clock = CudaClock(dev) if dev.type == "cuda" else CpuClock()
    # Our bookkeeping runs with the collector paused: its full passes over thousands of freshly wrapped nodes and
    # records cost more than the hooks. The user's forward runs with it as they left it. The pause is shared by
    # every profile running in any thread (reference-counted): one thread must not switch it back on under another.
    token = object()
    grads = Grads()
    # The user's .grad: every exit by an exception puts back what they had (twice, each idempotent: an exception
    # inside the first leaves the second to finish); only a call that got to its end commits one run's gradient,
    # as its very last step, so an interrupt anywhere before (annotating, the memory analysis) loses nothing.
    try:
        try:
            try:
                try:
                    GC_PAUSE.acquire(token)
                    graph = _measure(fn, args, kwargs, repeat, warmup, backward, stat, cross_check, dev, clock,
                                     module, title, token, memory, grads)
                finally:
                    GC_PAUSE.release(token)
            except BaseException:
                grads.finish(False)
                raise
        finally:
            GC_PAUSE.release(token)  # again (idempotent): the collector must not stay off after an interrupt anywhere
        grads.finish(True)  # the commit
    except BaseException:
        grads.finish(False)  # again; once the commit has begun, this completes it instead
        raise
    return graph


def _measure(fn: Callable[..., Any], args: Sequence[Any], kwargs: Mapping[str, Any], repeat: int, warmup: int,
             backward: bool, stat: str, cross_check: bool, dev: torch.device, clock: CpuClock,
             module: Optional[torch.nn.Module], title: Optional[str], token: object,
             memory: bool = False, grads: Optional[Grads] = None) -> GradGraph:
    """The runs and statistics of :func:`run_profile`, with the collector off (``run_profile`` restores it). ``grads``
    keeps the user's ``.grad`` (``run_profile`` puts them back or commits them)."""
    if grads is None:
        grads = Grads()
    if backward:
        # What fn can reach (modules among the arguments, closures, globals): a parameter used only inside a
        # reentrant checkpoint is no leaf of the graph walked here, but its .grad is written all the same.
        grads.watch(reachable_tensors(fn, args, kwargs))
    runs: List[Run] = []  # measured runs, their nodes dropped
    prof: Optional[Tuple[Any, ...]] = None
    # The memory run (the first) is never measured: the profiler it runs under slows every op.
    extra = 1 if memory and warmup == 0 else 0
    warmup_runs = warmup + extra
    for k in range(warmup_runs + repeat):
        run, g0, out = _one_run(fn, args, kwargs, clock, grads if backward else None, k == 0, module, title,
                                token, memory=memory and k == 0, device=dev)
        if k == 0:
            graph, ref, fwd_map, layout0 = g0, run, call_map(run.seqs(), run.calls), run.layout()
        elif not same_structure(ref, run):
            raise structure_error(k, ref, run)
        if k >= warmup_runs:
            # Same sequence-number layout as run 0 (the usual case): reuse its node -> call map.
            cmap = fwd_map if run.layout() == layout0 else call_map(run.seqs(), run.calls)
            call_ms = [clock.ms(c[2], c[3]) for c in run.calls]
            run.fwd = [call_ms[c] if c >= 0 else (0.0 if c == -2 else None) for c in cmap]
            runs.append(run)
        run.drop_nodes()  # free the graph (the last one lives on in `out`)
        run.calls = []
        if k < warmup_runs + repeat - 1:
            out = None
    if cross_check:  # after the repeats: the profiler must not disturb them; g.output stays the last repeat's
        from .cross_check import profiler_runs
        prof = profiler_runs(fn, args, kwargs, dev, grads if backward else None, ref)
    assert graph is not None  # run 0 always captures the graph
    annotate(graph, _kept_runs(runs, stat), stat=stat, backward=backward, repeat=repeat, warmup=warmup,
             device=dev, clock=clock, measured=runs)
    nodes = graph.nx.nodes
    if prof is not None and backward:
        from .cross_check import hooks_vs_profiler
        for i, v in enumerate(prof[0]):
            nodes[i]["bwd_ms_profiler"] = v  # networkx only: not part of the JSON schema
        graph.meta["timing"]["cross_check"] = hooks_vs_profiler(graph, prof[1])
    if memory:
        graph.memory()  # writes each node's peak_bytes (the analysis lives behind the graph's facade)
    graph.output = out
    return graph


def _one_run(fn: Callable[..., Any], args: Sequence[Any], kwargs: Mapping[str, Any], clock: CpuClock,
             grads: Optional[Grads], attribute: bool, module: Optional[torch.nn.Module], title: Optional[str],
             token: Optional[object] = None, memory: bool = False, device: Optional[torch.device] = None
             ) -> Tuple[Run, Optional[GradGraph], Any]:
    """One call of ``fn`` with its ops timed, then (``grads`` given) its backward with every node hooked.
    With ``attribute`` the graph is also captured and annotated (before the backward frees saved tensors).
    With ``memory`` (and ``attribute``) the whole run is the memory run (:mod:`.memory`)."""
    if memory:
        from ..attribution.memory import MemoryProbe
        probe = MemoryProbe(device if device is not None else torch.device("cpu"), reach=(fn, args, kwargs))
        try:
            with probe:
                run, graph, out = _one_run_inner(fn, args, kwargs, clock, grads, attribute, module, title, token,
                                                 probe)
        finally:
            probe.close()
        if graph is not None:
            probe.record(graph, grads is not None, probe.module_ids)
        return run, graph, out
    return _one_run_inner(fn, args, kwargs, clock, grads, attribute, module, title, token, None)


def _one_run_inner(fn: Callable[..., Any], args: Sequence[Any], kwargs: Mapping[str, Any], clock: CpuClock,
                   grads: Optional[Grads], attribute: bool, module: Optional[torch.nn.Module],
                   title: Optional[str], token: Optional[object], probe: Any) -> Tuple[Run, Optional[GradGraph], Any]:
    stamp = clock.stamp
    graph = None
    # The first run is the Recorder's (source, module): it times each call itself, around the bare op, and hands
    # back the two stamps (resolved after the run's sync; CUDA events cannot be read before). Other runs use the
    # lean op timer: the Recorder's per-call bookkeeping is paid once, not per repeat.
    if attribute:
        rec_cls = Recorder
        if probe is not None:
            from ..attribution.memory import MemoryRecorder
            rec_cls = MemoryRecorder
        rec = rec_cls(timer=(stamp, lambda t0: (t0, stamp())))
    else:
        rec = None
    timer = rec if rec is not None else OpTimer(stamp)
    if token is not None and rec is None:
        # A measured forward runs as it would without us (unless another thread is profiling too). Not the
        # Recorder's: its bookkeeping objects (several per call) make every collection pass longer, and on a
        # graph of many tiny ops those passes cost more than the hooks.
        GC_PAUSE.release(token)
    try:
        try:
            with timer:
                base = next_seq()
                f0 = stamp()
                out = timer.call(fn, *args, **kwargs)
                f1 = stamp()
        finally:
            timer.close()  # again (idempotent): an interrupt inside the with block's exit leaves nothing behind
    finally:
        if token is not None:
            GC_PAUSE.acquire(token)
    roots = select_roots(out)
    if rec is not None:
        graph = attributed_capture(rec, out, fn=fn, module=module, title=title, roots=roots,
                                   who="graphwidget.profile")
        if probe is not None:
            probe.note_inputs(graph, rec, root_nodes(roots))
    if rec is not None and grads is not None:
        # Every module the forward called (a checkpointed block's parameters are leaves of no graph walked here)
        grads.watch([p for m in rec.top_modules for p in m.parameters()])
    run = Run()  # before the try: every hook is recorded in it as it is registered
    try:
        try:
            instrument(root_nodes(roots), stamp if grads is not None else None, run)
            if grads is not None:
                grads.before_backward(run.leaves)
                ones = [torch.ones_like(t) for t in roots]
                b0 = stamp()
                try:
                    torch.autograd.backward(roots, ones)
                except RuntimeError as exc:
                    if "second time" not in str(exc):
                        raise
                    raise RuntimeError(
                        "graphwidget.profile runs the backward itself: fn must return the loss without calling "
                        ".backward() on it (or profile with backward=False).") from exc
                b1 = stamp()
        finally:
            run.remove_hooks()
    finally:
        run.remove_hooks()  # again (idempotent): in case an interrupt hit the first call
    clock.sync()  # the only synchronisation of a CUDA run
    run.calls = [(c.lo, c.hi) + c.ms for c in rec.calls] if rec is not None else timer.calls  # type: ignore
    run.base, run.fwd_wall = base, clock.ms(f0, f1)
    if grads is not None:
        ms = clock.ms
        run.bwd_wall = ms(b0, b1)
        if isinstance(clock, CudaClock):
            run.bwd = [ms(a, b) if b is not None and a is not None else None for a, b in zip(run.starts, run.ends)]
        else:
            run.bwd = run.bwd_ms()
    else:
        run.bwd = [None] * run.n
    run.starts, run.ends = [], []
    return run, graph, out

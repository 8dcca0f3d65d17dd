"""The memory run behind ``gw.profile(..., memory=True)`` and ``gw.trace(..., memory=True)`` (here, below both,
so that trace can use it).

One run of the function (forward, capture, backward) under ``torch.profiler`` with ``profile_memory=True``: every
allocation and free the allocator reports, with its time, on the same clock as the op events. The forward's
top-level op events carry the sequence number of the nodes they create and the backward's
``autograd::engine::evaluate_function`` events the number of the node they run, so the allocator's level is read
at the end of each (a *point*) and its maximum in between. On CUDA the profiler's events come from the caching
allocator, and ``torch.cuda.max_memory_allocated`` over the run is kept beside them as the allocator's own peak.

The run also records which storages each module received as inputs (a checkpointed module keeps those), mapped onto
the graph's storage ids by reading the saved tensors' storages once after the forward.

What is stored is raw (points, their nodes, the allocator's bytes): ``graphwidget.analysis.memory`` computes the
rest from the graph, so a graph read back from JSON explains itself the same way. Design: docs/memory.md.
"""
from __future__ import annotations

import bisect
from typing import Any, Dict, List, Mapping, Optional, Sequence, Set, Tuple

import torch

from .._util.fds import without_chatter
from .._util.interrupts import deferred_interrupts
from ..capturing._deep_free import make_deep_free_safe
from ..capturing.seq import next_seq
from ..capturing.walk import walk
from ..model.graph import GradGraph
from .cuda_capture import refuse_during_cuda_graph_capture
from .frames import user_frame, user_source
from .recorder import Recorder
from .shared_patch import dynamo_skip

_EVAL = "autograd::engine::evaluate_function: "
#: The range :class:`MemoryRecorder` opens around each torch call, numbered: where an allocation happened.
_CALL = "graphwidget::call#"
#: Names of events that are the engine's or the profiler's own, never a forward op.
_NOT_OPS = ("[memory]", "autograd::engine::", "[OutOfMemory]", _CALL)
#: A profiler range that costs no op dispatch (so no torch-function mode sees it); absent from old torch, where
#: the peak keeps its point's place.
_RANGE = getattr(getattr(torch._C, "_profiler", None), "_RecordFunctionFast", None)


def _end_ns(event: Any) -> int:
    """When an event ended (torch 2.4's events have only the start and the duration)."""
    end = getattr(event, "end_ns", None)
    return int(end()) if callable(end) else int(event.start_ns() + event.duration_ns())


def _user_annotation(event: Any) -> bool:
    """A ``record_function`` range rather than an op. torch 2.4's events cannot say (no ``is_user_annotation``):
    there a range is told by its name only (``_NOT_OPS``, graphwidget's own ranges), which user ranges escape."""
    check = getattr(event, "is_user_annotation", None)
    return bool(check()) if callable(check) else False


def _tensors(value: Any, depth: int = 0) -> List[torch.Tensor]:
    if isinstance(value, torch.Tensor):
        return [value]
    if depth < 2 and isinstance(value, (list, tuple)):
        return [t for v in value for t in _tensors(v, depth + 1)]
    if depth < 2 and isinstance(value, dict):
        return [t for v in value.values() for t in _tensors(v, depth + 1)]
    return []


def device_of(fn: Any, args: Sequence[Any], kwargs: Mapping[str, Any]) -> torch.device:
    """The first CUDA device among the inputs (tensors, modules' parameters and buffers), else CPU."""
    stack: List[Any] = [fn, *args, *kwargs.values()]
    while stack:
        o = stack.pop()
        if isinstance(o, torch.Tensor):
            if o.device.type == "cuda":
                return o.device
        elif isinstance(o, torch.nn.Module):
            stack.extend(o.parameters())
            stack.extend(o.buffers())
        elif isinstance(o, (list, tuple)):
            stack.extend(o)
        elif isinstance(o, Mapping):
            stack.extend(o.values())
    return torch.device("cpu")


def existing_storages(fn: Any, args: Sequence[Any], kwargs: Mapping[str, Any], depth: int = 3
                      ) -> Set[Tuple[str, int]]:
    """The storages the step can reach before it runs (:func:`reachable_tensors`). A saved activation among them
    was not allocated by the step, so the allocator's figure (bytes since the step began) does not hold it."""
    out: Set[Tuple[str, int]] = set()
    for t in reachable_tensors(fn, args, kwargs, depth):
        k = _storage_key(t)
        if k is not None:
            out.add(k)
    return out


def reachable_tensors(fn: Any, args: Sequence[Any], kwargs: Mapping[str, Any], depth: int = 3
                      ) -> List[torch.Tensor]:
    """The tensors a step can reach before it runs, each once: tensors among the arguments, modules' parameters and
    buffers, and what ``fn`` uses (a function's closure cells, defaults and the globals its code names, a bound
    method's object, a partial's arguments), ``depth`` levels down."""
    import functools
    import itertools
    out: List[torch.Tensor] = []
    seen: Set[int] = set()
    stack: List[Tuple[Any, int]] = [(fn, 0)] + [(a, 0) for a in args] + [(v, 0) for v in kwargs.values()]

    def push(values: Any, d: int) -> None:
        # a data set held in a list is not what a step saves: look at the first items only
        stack.extend((v, d) for v in itertools.islice(values, _MAX_ITEMS))

    while stack:
        o, d = stack.pop()
        if id(o) in seen or d > depth:
            continue
        seen.add(id(o))
        if isinstance(o, torch.Tensor):
            out.append(o)
        elif isinstance(o, torch.nn.Module):
            push(o.parameters(), d + 1)
            push(o.buffers(), d + 1)
        elif isinstance(o, (list, tuple, set, frozenset)):
            push(o, d + 1)
        elif isinstance(o, dict):
            push(o.values(), d + 1)
        elif isinstance(o, functools.partial):
            push([o.func, o.args, o.keywords], d + 1)
        elif callable(o):
            for cell in getattr(o, "__closure__", None) or ():
                try:
                    stack.append((cell.cell_contents, d + 1))
                except ValueError:  # an empty cell
                    pass
            push(getattr(o, "__defaults__", None) or (), d + 1)
            code, env = getattr(o, "__code__", None), getattr(o, "__globals__", None)
            if code is not None and isinstance(env, dict):  # `lambda: model(x)` in a notebook: x is a global
                push((env[n] for n in _code_names(code) if n in env), d + 1)
            owner = getattr(o, "__self__", None)
            if owner is not None:
                stack.append((owner, d + 1))
    return out


#: How many items of one container :func:`existing_storages` looks at.
_MAX_ITEMS = 256


def _code_names(code: Any) -> List[str]:
    """The global (and attribute) names a code object and the functions defined in it use."""
    names = list(code.co_names)
    for c in code.co_consts:
        if hasattr(c, "co_names"):
            names.extend(_code_names(c))
    return names


def _storage_key(t: torch.Tensor) -> Optional[Tuple[str, int]]:
    try:
        return str(t.device), t.untyped_storage().data_ptr()
    except (RuntimeError, NotImplementedError, TypeError):
        return None


class MemoryRecorder(Recorder):
    """The attribution recorder, also noting the storages each module call received (positional arguments: what
    the global module pre-hook sees), by module path."""

    def __init__(self, timer: Any = None) -> None:
        super().__init__(timer=timer)
        self.module_inputs: Dict[str, set] = {}
        #: one entry per torch call, node or not: (what was called, file, line, module, first seq, end seq)
        self.places: List[Tuple[str, Optional[str], Optional[int], Optional[str], Optional[int], Optional[int]]] = []

    @dynamo_skip
    def run(self, func: Any, args: Any, kwargs: Any, start: Any = None) -> Any:
        """The recorder's call, inside a numbered profiler range, and where it was made, even when it makes no
        node (a no-grad temporary): an allocation inside the range is placed at this call's op, line and
        module."""
        if start is not None or _RANGE is None:
            return super().run(func, args, kwargs, start)
        i = len(self.places)
        self.places.append(("", None, None, None, None, None))  # its number now: calls made inside it come after
        lo = next_seq() if next_seq is not None else None
        with _RANGE(f"{_CALL}{i}"):
            out = super().run(func, args, kwargs)
        frame = user_frame(2)
        self.places[i] = (_called(func), frame.f_code.co_filename if frame is not None else None,
                          frame.f_lineno if frame is not None else None,
                          self._module_stack[-1] if self._module_stack else None,
                          lo, next_seq() if next_seq is not None else None)
        return out


    @dynamo_skip
    def _pre_hook(self, module: torch.nn.Module, args: Any) -> None:
        super()._pre_hook(module, args)
        if self._module_stack:
            keys = self.module_inputs.setdefault(self._module_stack[-1], set())
            for t in _tensors(args):
                k = _storage_key(t)
                if k is not None:
                    keys.add(k)


def _called(func: Any) -> str:
    """``torch.randn``, ``Tensor.mul``, ``MyFunction.apply``: what a torch call called, as code names it."""
    owner = getattr(func, "__self__", None)
    name = getattr(func, "__name__", None) or type(func).__name__
    if isinstance(owner, type):  # a classmethod: Function.apply
        return f"{owner.__name__}.{name}"
    qual = getattr(func, "__qualname__", None) or name
    if qual.startswith("TensorBase."):
        qual = "Tensor." + qual[len("TensorBase."):]
    mod = getattr(func, "__module__", None)
    if "." not in qual and isinstance(mod, str) and mod.startswith("torch"):
        mod = {"torch._C._nn": "torch.nn.functional", "torch._C._VariableFunctions": "torch",
               "torch._C._linalg": "torch.linalg", "torch._C._fft": "torch.fft",
               "torch._C._special": "torch.special"}.get(mod, mod)
        return f"{mod}.{qual}"
    return qual


class MemoryProbe:
    """Context manager around one run: the profiler with memory events (and, on CUDA, the caching allocator's
    peak). :meth:`record` turns what it saw into ``graph.meta["memory"]``."""

    def __init__(self, device: torch.device, reach: Optional[Tuple[Any, Sequence[Any], Mapping[str, Any]]] = None
                 ) -> None:
        self.device = device
        self.cuda = device.type == "cuda"
        self._prof: Any = None
        self._events: List[Any] = []
        self.baseline: Optional[int] = None
        self.allocator_peak: Optional[int] = None
        self.module_ids: Dict[str, set] = {}
        #: ``(fn, args, kwargs)`` of the step: what it can reach existed before it (:func:`existing_storages`)
        self._reach = reach
        self._before: Set[Tuple[str, int]] = set()
        #: graph storage ids of the saved tensors that existed before the step
        self.input_ids: set = set()
        #: :attr:`MemoryRecorder.places` of the run: where each numbered call range was made
        self._places: Optional[List[Any]] = None

    def note_inputs(self, graph: GradGraph, rec: Any, roots: Sequence[Any]) -> None:
        """After the capture, before the backward: which graph storages each module received, and which saved
        storages existed before the step."""
        self._places = getattr(rec, "places", None)
        modules = isinstance(rec, MemoryRecorder) and bool(rec.module_inputs)
        if not (modules or self._before):
            return
        ids = storage_ids(graph, roots)
        if modules:
            self.module_ids = module_input_ids(rec, ids)
        self.input_ids = {ids[k] for k in self._before if k in ids}

    def __enter__(self) -> "MemoryProbe":
        from torch.profiler import ProfilerActivity
        from torch.profiler import profile as torch_profile
        acts = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if self.cuda else [])
        if torch._C._autograd._profiler_enabled():
            # Starting ours would end the user's session when ours stops: refuse before touching anything.
            raise RuntimeError("memory=True records its timeline with torch.profiler, and a profiler is already "
                               "running here. Run gw.profile/gw.trace(..., memory=True) outside your torch.profiler "
                               "block, or drop memory=True inside it.")
        if self.cuda:
            refuse_during_cuda_graph_capture("memory=True")
        if self._reach is not None:
            self._before = existing_storages(*self._reach)
        if self.cuda:
            torch.cuda.synchronize(self.device)
            self.baseline = torch.cuda.memory_allocated(self.device)
            torch.cuda.reset_peak_memory_stats(self.device)
        prof = torch_profile(activities=acts, profile_memory=True)
        self._prof = prof  # before it starts: an interrupt once it runs leaves close() to stop it
        try:
            start_profiler(prof)
        except RuntimeError as exc:
            raise RuntimeError(
                f"memory=True records its timeline with torch.profiler, which could not start ({exc}). Another "
                f"profiler is probably active in this thread: run gw.profile/gw.trace(..., memory=True) outside it, "
                f"or without memory=True inside it.") from exc
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close(*exc)

    def close(self, *exc: Any) -> None:
        """Stop the profiler (idempotent: called again from a ``finally``)."""
        if not exc:
            exc = (None, None, None)
        prof = self._prof
        if prof is None:
            return
        if self.cuda:
            torch.cuda.synchronize(self.device)
            self.allocator_peak = torch.cuda.max_memory_allocated(self.device) - (self.baseline or 0)
        stop_profiler(prof)
        self._prof = None  # after the stop: an interrupt before it leaves the next call to stop it
        # none when an interrupt came before it started (the run is then abandoned anyway)
        results = getattr(getattr(prof, "profiler", None), "kineto_results", None)
        self._events = results.events() if exc[0] is None and results is not None else []

    # -- turning events into points -------------------------------------------------------------------------------
    def record(self, graph: GradGraph, backward: bool, module_inputs: Optional[Dict[str, set]] = None,
               ) -> Dict[str, Any]:
        """Write ``graph.meta["memory"]`` from the run's events; returns it."""
        events = self._events
        want = "CUDA" if self.cuda else "CPU"
        mem: List[Tuple[int, int]] = []
        ops: List[Any] = []
        evals: List[Any] = []
        calls: List[Tuple[int, int, int]] = []
        for e in events:
            name = e.name()
            if name == "[memory]":
                if want in str(e.device_type()):
                    mem.append((e.start_ns(), e.nbytes()))
            elif name.startswith(_EVAL):
                evals.append(e)
            elif name.startswith(_CALL):
                calls.append((e.start_ns(), _end_ns(e), int(name[len(_CALL):])))
            elif not name.startswith(_NOT_OPS) and not _user_annotation(e):
                ops.append(e)
        mem.sort(key=lambda m: m[0])
        times = [m[0] for m in mem]
        level: List[int] = []
        run = 0
        for _, b in mem:
            run += b
            level.append(run)
        seq_to_node = {s: v for v, s in graph.abs_seq.items()}
        fwd = self._forward_points(ops, evals, seq_to_node)
        bwd = self._backward_points(evals, seq_to_node, graph) if backward else []
        points = fwd + bwd
        nodes_at, alloc, amax = [], [], []
        prev_level, k = 0, 0
        for v, t in points:
            hi = bisect.bisect_right(times, t)
            peak = prev_level
            while k < hi:
                peak = max(peak, level[k])
                k += 1
            cur = level[hi - 1] if hi > 0 else 0
            nodes_at.append(v)
            alloc.append(int(cur))
            amax.append(int(max(peak, cur)))
            prev_level = cur
        source = ("CUDA caching allocator (torch.profiler memory events), bytes allocated since the step began"
                  if self.cuda else "CPU allocator (torch.profiler memory events), bytes allocated since the step "
                  "began")
        record: Dict[str, Any] = {
            "device": str(self.device),
            "allocator": source if points else None,
            "forward_points": len(fwd),
            "nodes": nodes_at,
            "allocated": alloc if points else None,
            "allocated_max": amax if points else None,
            "allocator_peak": self.allocator_peak,
            "allocator_peak_source": ("torch.cuda.max_memory_allocated minus the step's start" if self.cuda
                                      else None),
            "baseline": self.baseline,
            "module_inputs": {k: sorted(v) for k, v in (module_inputs or {}).items() if v},
            "inputs": sorted(self.input_ids),
            "backward": backward,
            "peak_at": (self._peak_place(times, level, points, len(fwd), ops, evals, calls, seq_to_node)
                        if points else None),
        }
        graph.meta["memory"] = record
        return record

    def _peak_place(self, times: List[int], level: List[int], points: List[Tuple[int, int]], n_fwd: int,
                    ops: List[Any], evals: List[Any], calls: List[Tuple[int, int, int]],
                    seq_to_node: Dict[int, int]) -> Optional[Dict[str, Any]]:
        """Where the allocator's level first reached its maximum over the points: the allocation's own op (the
        outermost op event around it and the innermost, the one that allocated), and, in the forward, the torch
        call around it with its line and module, whether or not that call made a node; in the backward, the node
        that was running."""
        hi = bisect.bisect_right(times, points[-1][1])
        if hi == 0:
            return None
        k = max(range(hi), key=lambda i: (level[i], -i))
        t = times[k]
        around = [e for e in ops if e.start_ns() <= t <= _end_ns(e)]
        outer = min(around, key=lambda e: (e.start_ns(), -_end_ns(e)), default=None)
        inner = max(around, key=lambda e: (e.start_ns(), -_end_ns(e)), default=None)
        # the point whose span holds the allocation (points end in time order)
        p = min(bisect.bisect_left([pt[1] for pt in points], t), len(points) - 1)
        bwd_start = min((e.start_ns() for e in evals), default=None)
        out: Dict[str, Any] = {
            "bytes": int(level[k]), "point": p,
            "phase": "backward" if bwd_start is not None and t >= bwd_start and p >= n_fwd else "forward",
            "op": outer.name() if outer is not None else None,
            "alloc_op": inner.name() if inner is not None else None,
            "call": None, "source": None, "code": None, "module": None, "node": None}
        if out["phase"] == "backward":
            out["node"] = points[p][0]
            return out
        places = self._places or []
        inside = [c for c in calls if c[0] <= t <= c[1] and c[2] < len(places)]
        if not inside:
            return out
        name, fname, line, module, lo, end = places[max(inside)[2]]
        import linecache
        out.update(call=name or None, module=module,
                   source=user_source(fname, line) if fname is not None and line is not None else None,
                   code=(linecache.getline(fname, line).strip() or None) if fname and line else None)
        if lo is not None and end is not None and end > lo:
            made = [seq_to_node[q] for q in range(lo, end) if q in seq_to_node]
            out["node"] = made[-1] if made else None
        return out

    @staticmethod
    def _forward_points(ops: List[Any], evals: List[Any], seq_to_node: Dict[int, int]) -> List[Tuple[int, int]]:
        """One point per top-level forward op event that created graph nodes: (its last node, its end time)."""
        bwd_start = min((e.start_ns() for e in evals), default=None)
        ops = [e for e in ops if bwd_start is None or e.start_ns() < bwd_start]
        by_thread: Dict[Any, List[Any]] = {}
        for e in ops:
            by_thread.setdefault(e.start_thread_id(), []).append(e)
        top: List[Any] = []
        for evs in by_thread.values():
            evs.sort(key=lambda e: (e.start_ns(), -_end_ns(e)))
            end = -1
            for e in evs:
                if e.start_ns() >= end:
                    top.append(e)
                    end = _end_ns(e)
        top = [e for e in top if e.sequence_nr() >= 0]
        top.sort(key=lambda e: e.start_ns())
        seqs = sorted(seq_to_node)
        points: List[Tuple[int, int]] = []
        for j, e in enumerate(top):
            lo = e.sequence_nr()
            hi = top[j + 1].sequence_nr() if j + 1 < len(top) else None
            a = bisect.bisect_left(seqs, lo)
            b = bisect.bisect_left(seqs, hi) if hi is not None and hi > lo else len(seqs)
            if hi is not None and hi <= lo:
                b = a + 1 if a < len(seqs) and seqs[a] == lo else a
            if b > a:
                points.append((seq_to_node[seqs[b - 1]], _end_ns(e)))
        return points

    @staticmethod
    def _backward_points(evals: List[Any], seq_to_node: Dict[int, int], graph: GradGraph
                         ) -> List[Tuple[int, int]]:
        """One point per node run in backward, in the order they ran: (node, end time). AccumulateGrad reports no
        sequence number; the engine runs one as soon as it is ready (it has the highest priority), so each is
        matched to the leaf whose last consumer ran most recently."""
        evals = sorted(evals, key=lambda e: e.start_ns())
        nx = graph.nx
        nodes = nx.nodes
        waiting = {v: len(nx.succ[v]) for v in nx.nodes if nodes[v].get("kind") == "leaf"}
        ready: List[int] = []
        points: List[Tuple[int, int]] = []
        for e in evals:
            s = e.sequence_nr()
            v = seq_to_node.get(s) if s >= 0 else None
            if v is None:
                if not ready:
                    continue
                v = ready.pop(0)
            points.append((v, _end_ns(e)))
            for u in nx.pred[v]:
                if u in waiting:
                    waiting[u] -= 1
                    if waiting[u] == 0:
                        ready.append(u)
        return points


def storage_ids(graph: GradGraph, roots: Sequence[Any]) -> Dict[Tuple[str, int], int]:
    """(device, data_ptr) -> the graph's storage id, by reading each node's saved tensors once (the capture keeps
    only its own small ids). Walks in capture's order, so node ``i`` of the walk is graph node ``i``."""
    w = walk(list(roots))
    make_deep_free_safe(len(w.order))
    out: Dict[Tuple[str, int], int] = {}
    nodes = graph.nx.nodes
    for i, fn in enumerate(w.order):
        for s in nodes[i].get("saved") or ():
            sid = s.get("storage")
            if sid is None or s.get("freed") or s.get("packed"):
                continue
            name = s.get("name") or ""
            base, idx = name, None
            if name.endswith("]") and "[" in name:
                base, _, rest = name.partition("[")
                idx = int(rest[:-1]) if rest[:-1].isdigit() else None
            try:
                val = getattr(fn, "_saved_" + base)
            except Exception:  # a saved value that cannot be read without unpacking hooks, or none of that name
                continue
            if idx is not None and isinstance(val, (list, tuple)) and idx < len(val):
                val = val[idx]
            if isinstance(val, torch.Tensor):
                k = _storage_key(val)
                if k is not None:
                    out.setdefault(k, sid)
        for t in (nodes[i].get("tensor"),):
            if t and t.get("storage") is not None and hasattr(fn, "variable"):
                k = _storage_key(fn.variable)
                if k is not None:
                    out.setdefault(k, t["storage"])
    return out


def module_input_ids(rec: MemoryRecorder, ids: Dict[Tuple[str, int], int]) -> Dict[str, set]:
    """Per module path, the graph storage ids among the storages its calls received."""
    return {path: {ids[k] for k in keys if k in ids} for path, keys in rec.module_inputs.items()}



def step_peak(step: Any, device: torch.device) -> Dict[str, Any]:
    """The allocator's peak while ``step()`` runs (a forward and its backward), in bytes above what was allocated
    when it began. CUDA: ``torch.cuda.max_memory_allocated``; CPU: the maximum of the running sum of
    ``torch.profiler``'s memory events (the CPU allocator has no counter of its own). Returns ``{"bytes",
    "source"}``."""
    if device.type == "cuda":
        refuse_during_cuda_graph_capture("the memory peak (memory=True)")
        torch.cuda.synchronize(device)
        base = torch.cuda.memory_allocated(device)
        torch.cuda.reset_peak_memory_stats(device)
        step()
        torch.cuda.synchronize(device)
        return {"bytes": int(torch.cuda.max_memory_allocated(device) - base),
                "source": "torch.cuda.max_memory_allocated minus the step's start"}
    from torch.profiler import ProfilerActivity
    from torch.profiler import profile as torch_profile
    if torch._C._autograd._profiler_enabled():
        raise RuntimeError("the CPU memory peak is measured with torch.profiler, and a profiler is already running "
                           "here: measure outside your torch.profiler block.")
    prof = torch_profile(activities=[ProfilerActivity.CPU], profile_memory=True)
    try:
        try:
            start_profiler(prof)
            step()
        finally:
            stop_profiler(prof)
    finally:
        stop_profiler(prof)  # again (idempotent): an interrupt at any line of the first leaves this one
    events = prof.profiler.kineto_results.events()  # type: ignore[union-attr]
    return {"bytes": int(events_peak(events, "CPU")),
            "source": "CPU allocator (torch.profiler memory events), bytes allocated since the step began"}


def start_profiler(prof: Any) -> Any:
    """Start ``prof`` (a ``torch.profiler.profile``) with Ctrl-C held back, so that an interrupt cannot leave it
    half started, or started where no one will stop it, and with its own log lines kept out of the user's output
    (:mod:`graphwidget._util.fds`). Raises torch's ``RuntimeError`` when it cannot start; then none is left running.
    Returns ``prof``."""
    if torch._C._autograd._profiler_enabled():  # never touch a profiler of the user's
        raise RuntimeError("a profiler is already running in this thread")
    try:
        with deferred_interrupts():
            with without_chatter():
                prof.__enter__()
    except BaseException:  # torch's refusal, or a Ctrl-C held back while it started: none is left running
        stop_profiler(prof)
        raise
    return prof


def stop_profiler(prof: Any) -> None:
    """Stop ``prof`` if a profiler is running (idempotent; after :func:`start_profiler` refused to start over
    another one, the running one is never ours, and the callers never reach this), with Ctrl-C held back."""
    with deferred_interrupts():
        if torch._C._autograd._profiler_enabled() and getattr(prof, "profiler", None) is not None:
            with without_chatter():
                prof.__exit__(None, None, None)


def events_peak(events: Sequence[Any], device_type: str = "CPU") -> int:
    """The maximum of the running sum of the memory events of one device type (0 when none)."""
    mem = sorted((e.start_ns(), e.nbytes()) for e in events
                 if e.name() == "[memory]" and device_type in str(e.device_type()))
    run = peak = 0
    for _, b in mem:
        run += b
        peak = max(peak, run)
    return peak

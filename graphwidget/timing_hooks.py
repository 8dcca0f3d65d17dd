"""The instruments behind :func:`graphwidget.profile`: clocks, the forward op timer, and the backward node hooks.

Everything here runs in the hot path of every measured repeat, so it is kept minimal: closures that store one stamp
in a list slot, no per-node dicts, one pass over the graph that both walks it (capture's order) and hooks it.
"""
from __future__ import annotations

import bisect
import functools
import sys
import time
from contextlib import ExitStack, contextmanager
from typing import Any, Callable, Dict, Iterator, List, Optional, Sequence, Tuple

import torch
from torch.overrides import TorchFunctionMode

from . import native
from ._apply_patch import patch_function_apply
from ._seq import NO_SEQ, next_seq
from .deep_free import make_deep_free_safe

_KEY = object()  # our key in a node's hook dict: never collides with RemovableHandle's integer ids


class CpuClock:
    """Stamps are ``perf_counter_ns`` integers."""

    name = "perf_counter_ns"
    stamp = staticmethod(time.perf_counter_ns)

    def sync(self) -> None:  # nothing is asynchronous on CPU
        pass

    @staticmethod
    def ms(a: Any, b: Any) -> float:
        return (b - a) / 1e6


class CudaClock(CpuClock):
    """Stamps are CUDA events recorded on the current stream; read only after :meth:`sync` (one per run)."""

    name = "cuda_event"

    def __init__(self, device: torch.device) -> None:
        self.device = device

    def stamp(self) -> Any:  # type: ignore[override]
        e = torch.cuda.Event(enable_timing=True)
        e.record()  # on the current stream: in backward, the stream the engine runs the node on
        return e

    def sync(self) -> None:
        torch.cuda.synchronize(self.device)

    @staticmethod
    def ms(a: Any, b: Any) -> float:
        return float(a.elapsed_time(b))


class OpTimer(TorchFunctionMode):
    """Records ``(seq_lo, seq_hi, start, end)`` for every torch call (and ``Function.apply``) that creates nodes.

    Kept minimal on purpose: it runs on every op of every measured forward. The four numbers go into one flat list of
    ints: 10k surviving tuples would be GC-tracked and trigger extra collections inside the user's forward (measured:
    +18 ms on the 10k-op chain); ints are not tracked, and the temporary tuple dies at once."""

    def __init__(self, stamp: Callable[[], Any]) -> None:
        super().__init__()
        self.flat: List[Any] = []
        self._stamp = stamp
        self._extend = self.flat.extend
        self._restore_apply: Optional[Callable[[], None]] = None

    @property
    def calls(self) -> List[Tuple[int, int, Any, Any]]:
        f = self.flat
        return list(zip(f[0::4], f[1::4], f[2::4], f[3::4]))

    def __torch_function__(self, func: Any, types: Any, args: Sequence[Any] = (), kwargs: Any = None) -> Any:
        stamp = self._stamp
        lo = next_seq()
        t0 = stamp()
        out = func(*args, **kwargs) if kwargs else func(*args)
        t1 = stamp()
        hi = next_seq()
        if hi != lo:
            self._extend((lo, hi, t0, t1))
        return out

    def __enter__(self) -> "OpTimer":
        super().__enter__()
        # Function.apply bypasses torch-function modes; wrap it so custom autograd.Functions are timed too.
        extend, stamp = self._extend, self._stamp

        def around(apply: Callable[..., Any], args: Tuple[Any, ...], kwargs: Dict[str, Any]) -> Any:
            lo, t0 = next_seq(), stamp()
            out = apply(*args, **kwargs)
            t1, hi = stamp(), next_seq()
            if hi != lo:
                extend((lo, hi, t0, t1))
            return out

        self._restore_apply = patch_function_apply(around)
        return self

    def __exit__(self, *exc: Any) -> None:
        try:
            if self._restore_apply is not None:
                self._restore_apply()
                self._restore_apply = None
        finally:
            super().__exit__(*exc)


class _Hooks(dict):
    """A node's hook dict. Weak-referenceable, like torch's ``OrderedDict``: if the user later adds a hook to the same
    node, torch reuses this dict and its ``RemovableHandle`` holds a weak reference to it."""

    __slots__ = ("__weakref__",)


@contextmanager
def lean_hook_registration(new: List[Any], shared: List[Any]) -> Iterator[None]:
    """While active, ``Node.register_prehook``/``register_hook`` put the hook in a fresh :class:`_Hooks` dict (listed
    in ``new``, cleared on removal) or, when the node already has user hooks, in theirs under our own key (listed in
    ``shared``), and return ``None`` instead of a ``RemovableHandle``. torch looks this helper up on
    ``torch.autograd.Function`` at every registration; if a future torch stops doing so, registration takes the
    public path and returns real handles, which :func:`instrument` keeps and removes instead."""
    cls = torch.autograd.Function
    old = cls.__dict__.get("_register_hook")  # normally inherited from _HookMixin, i.e. None here
    add_new, add_shared = new.append, shared.append

    def register(hooks: Any, hook: Any) -> Tuple[Any, None]:
        if hooks is None:
            hooks = _Hooks()
            add_new(hooks)
        else:
            add_shared(hooks)
        hooks[_KEY] = hook
        return hooks, None

    cls._register_hook = staticmethod(register)  # type: ignore[attr-defined]
    try:
        yield
    finally:
        if old is None:
            del cls._register_hook  # type: ignore[attr-defined]
        else:
            cls._register_hook = old  # type: ignore[attr-defined]


@functools.lru_cache(maxsize=None)
def accumulate_grad_type() -> type:
    leaf = torch.zeros(1, requires_grad=True)
    return type(leaf.view_as(leaf).grad_fn.next_functions[0][0])


class Run:
    """One instrumented run's nodes (pre-order = graph ids), structure signature, hook stamps and hook bookkeeping."""

    def __init__(self) -> None:
        self.order: List[Any] = []
        self.types: List[type] = []
        self.arity: List[int] = []
        self.leaves: List[torch.Tensor] = []
        self.starts: List[Any] = []
        self.ends: List[Any] = []
        self.new: List[Any] = []
        self.shared: List[Any] = []
        self.handles: List[Any] = []
        self.calls: List[Tuple[int, int, Any, Any]] = []  # forward: (seq_lo, seq_hi, start, end) per call
        self.base, self.fwd_wall, self.bwd_wall = 0, 0.0, 0.0
        self.fwd: List[Optional[float]] = []
        self.bwd: List[Optional[float]] = []
        self.n = 0
        #: the compiled core's Instrumented (hooks.cpp) when it did the walk and the hooks; else None
        self.native: Any = None

    def layout(self) -> List[Tuple[int, int]]:
        """The calls' sequence-number ranges relative to the run's start: equal runs share the node -> call map."""
        b = self.base
        return [(c[0] - b, c[1] - b) for c in self.calls]

    def remove_hooks(self) -> None:
        """Empty our hook dicts (torch's own removal also leaves an empty dict behind) and drop our entries from
        dicts shared with user hooks."""
        for d in self.new:
            d.clear()
        for d in self.shared:
            d.pop(_KEY, None)
        for h in self.handles:
            h.remove()
        self.new, self.shared, self.handles = [], [], []
        if self.native is not None:
            self.native.remove()

    def bwd_ms(self) -> List[Optional[float]]:
        """Per node: backward ms from the stamps of a CPU-clock run (None where the node did not run)."""
        if self.native is not None:
            return self.native.bwd_ms()
        return [(b - a) / 1e6 if b is not None and a is not None else None for a, b in zip(self.starts, self.ends)]

    def drop_nodes(self) -> None:
        """Forget the nodes (the graph may be freed); types, arity and timings stay."""
        self.order, self.leaves = [], []
        if self.native is not None:
            self.native.remove()

    def seqs(self) -> List[Optional[int]]:
        """Each node's autograd sequence number (``None`` for AccumulateGrad, which has none)."""
        if self.native is not None:
            return self.native.seqs()
        return [s if s < NO_SEQ else None for s in (fn._sequence_nr() for fn in self.order)]


def root_nodes(roots: Sequence[torch.Tensor]) -> List[Any]:
    """Root nodes exactly as :func:`graphwidget.capture` picks them (same order, duplicates dropped), so ids agree."""
    out: List[Any] = []
    seen = set()
    for t in roots:
        r = t.grad_fn if t.grad_fn is not None else t.view_as(t).grad_fn.next_functions[0][0]
        if r not in seen:
            seen.add(r)
            out.append(r)
    return out


def _instrument_native(roots: Sequence[Any], hook: bool) -> Optional[Run]:
    """The compiled core's walk + C++ hooks (graphwidget/_native/hooks.cpp), or None when it is not built or the
    roots are something it does not handle. Its stamps are CLOCK_MONOTONIC ns, i.e. ``time.perf_counter_ns`` on
    Linux, so only CPU-clock runs on Linux use it."""
    mod = native.load()
    if mod is None or sys.platform != "linux":
        return None
    try:
        h = mod.instrument(list(roots), hook)
    except mod.Unsupported:
        return None
    run = Run()
    run.native = h
    run.n = h.n
    run.types, run.arity, run.leaves = h.types, h.arity, h.leaves
    make_deep_free_safe(h.wrapped + len(roots))  # only wrapped nodes recurse when freed (deep_free.py)
    return run


def instrument(roots: Sequence[Any], stamp: Optional[Callable[[], Any]]) -> Run:
    """Walk the graph in capture's order (depth-first pre-order, ``next_functions`` in order) and, when ``stamp`` is
    given, hook every node on the way.

    With the compiled core and the CPU clock (``time.perf_counter_ns``), C++ does both and its hooks never enter
    Python. Otherwise: one Python pass, no per-node dicts, closures that only store a stamp; every name used per
    node is a local: at ~3 µs a node, attribute lookups are a visible share."""
    if stamp is None or stamp is time.perf_counter_ns:
        fast = _instrument_native(roots, stamp is not None)
        if fast is not None:
            return fast
    run = Run()
    starts, ends = run.starts, run.ends
    add_node, add_type, add_arity = run.order.append, run.types.append, run.arity.append
    add_leaf, add_handle, acc = run.leaves.append, run.handles.append, accumulate_grad_type()
    index: Dict[int, int] = {}
    stack = list(reversed(roots))
    push, pop = stack.append, stack.pop
    n = 0
    with ExitStack() as ctx:
        if stamp is not None:
            ctx.enter_context(lean_hook_registration(run.new, run.shared))
        while stack:
            fn = pop()
            key = id(fn)
            if key in index:
                continue
            index[key] = i = n
            n += 1
            add_node(fn)
            t = type(fn)
            add_type(t)
            if t is acc:
                add_leaf(fn.variable)
            if stamp is not None:
                def pre(grad_outputs: Any, i: int = i) -> None:
                    starts[i] = stamp()

                def post(grad_inputs: Any, grad_outputs: Any, i: int = i) -> None:
                    ends[i] = stamp()

                h = fn.register_prehook(pre)
                if h is not None:  # the public path was taken: keep the handle to remove it
                    add_handle(h)
                h = fn.register_hook(post)
                if h is not None:
                    add_handle(h)
            nxt = fn.next_functions
            k = len(nxt)
            add_arity(k)
            if k == 1:  # the common case: a chain
                child = nxt[0][0]
                if child is not None and id(child) not in index:
                    push(child)
            else:
                for j in range(k - 1, -1, -1):
                    child = nxt[j][0]
                    if child is not None and id(child) not in index:
                        push(child)
    if stamp is not None:  # the hooks fire only in backward, after this
        starts.extend([None] * n)
        ends.extend([None] * n)
    run.n = n
    make_deep_free_safe(n)  # this walk wrapped every node: freeing a deep graph now recurses (see deep_free.py)
    return run


def call_map(seqs: Sequence[Optional[int]], calls: Sequence[Tuple[int, int, Any, Any]]) -> List[int]:
    """Per node: index of the call that created it and owns its forward time (the call's last node in the graph),
    ``-2`` for the call's other nodes (their op ran once: 0.0), ``-1`` when no recorded call made it."""
    # Outermost calls only: a Function.apply inside an intercepted call belongs to that call.
    ranges: List[Tuple[int, int, int]] = []
    for k in sorted(range(len(calls)), key=lambda k: (calls[k][0], -calls[k][1])):
        lo, hi = calls[k][0], calls[k][1]
        if not ranges or lo >= ranges[-1][1]:
            ranges.append((lo, hi, k))
    los = [r[0] for r in ranges]
    owner: List[int] = []
    last: Dict[int, int] = {}
    for i, s in enumerate(seqs):
        k = -1
        if s is not None:
            j = bisect.bisect_right(los, s) - 1
            if j >= 0 and s < ranges[j][1]:
                k = ranges[j][2]
                if k not in last or seqs[last[k]] < s:  # type: ignore[operator]
                    last[k] = i
        owner.append(k)
    for i, k in enumerate(owner):
        if k >= 0 and last[k] != i:
            owner[i] = -2
    return owner

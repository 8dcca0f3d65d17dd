"""The backward node hooks behind :func:`graphwidget.profile`, and the map from nodes to the forward calls.

Everything here runs in every measured repeat, so it is kept minimal: the capture's walk (same ids), closures that
store one stamp in a list slot, no per-node dicts.
"""
from __future__ import annotations

import bisect
import functools
import sys
import time
from contextlib import contextmanager
from typing import Any, Callable, Dict, Iterator, List, Optional, Sequence, Tuple

import torch

from ..capture import native
from ..capture._deep_free import make_deep_free_safe
from ..capture.seq import NO_SEQ
from ..capture.walk import walk

_KEY = object()  # our key in a node's hook dict: never collides with RemovableHandle's integer ids


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
    Python. Otherwise: the capture's walk, then one pass that registers closures that only store a stamp."""
    if stamp is None or stamp is time.perf_counter_ns:
        fast = _instrument_native(roots, stamp is not None)
        if fast is not None:
            return fast
    w = walk(roots)  # the capture's own walk: same order, hence the same ids
    run = Run()
    order = run.order = w.order
    n = run.n = len(order)
    run.arity = [len(nxt) for nxt in w.nexts]
    types = run.types = [type(fn) for fn in order]
    acc = accumulate_grad_type()
    run.leaves = [fn.variable for fn, t in zip(order, types) if t is acc]
    make_deep_free_safe(n)  # this walk wrapped every node: freeing a deep graph now recurses (see _deep_free.py)
    if stamp is None:
        return run
    starts, ends = run.starts, run.ends
    starts.extend([None] * n)
    ends.extend([None] * n)
    add_handle = run.handles.append
    try:
        with lean_hook_registration(run.new, run.shared):
            for i, fn in enumerate(order):
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
    except BaseException:  # KeyboardInterrupt mid-registration included: leave no hook behind
        run.remove_hooks()
        raise
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

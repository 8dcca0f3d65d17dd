"""The backward node hooks behind :func:`graphwidget.profile`, and the map from nodes to the forward calls.

Everything here runs in every measured repeat, so it is kept minimal: the capture's walk (same ids), closures that
store one stamp in a list slot, no per-node dicts.
"""
from __future__ import annotations

import bisect
import functools
import sys
import time
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

import torch

from ..attribution.shared_patch import SharedPatch, dynamo_compiling, local
from ..capturing._deep_free import make_deep_free_safe
from ..capturing.native import engine as core_engine
from ..capturing.seq import NO_SEQ
from ..capturing.walk import walk

_KEY = object()  # our key in a node's hook dict: never collides with RemovableHandle's integer ids


class _Hooks(dict):
    """A node's hook dict. Weak-referenceable, like torch's ``OrderedDict``: if the user later adds a hook to the same
    node, torch reuses this dict and its ``RemovableHandle`` holds a weak reference to it."""

    __slots__ = ("__weakref__",)


def _lean_register(hooks: Any, hook: Any) -> Tuple[Any, Any]:
    lean = getattr(local, "lean", None)
    if lean is None or dynamo_compiling():  # another thread, or not registering ours: torch's own helper
        return _saved_register[1](hooks, hook)
    if hooks is None:
        hooks = _Hooks()
        lean[0](hooks)
    else:
        lean[1](hooks)
    hooks[_KEY] = hook
    return hooks, None


_LEAN = staticmethod(_lean_register)
_Function = torch.autograd.Function
#: (what ``Function.__dict__`` held under ``_register_hook`` before we installed, normally nothing; the helper
#: other threads' registrations go to). Saved before the swap, so an interrupt in between leaves nothing to undo.
_saved_register: List[Any] = [None, _Function._register_hook]


def _install_lean() -> None:
    current = _Function.__dict__.get("_register_hook")
    if current is _LEAN:
        return
    _saved_register[0] = current
    _saved_register[1] = _Function._register_hook
    _Function._register_hook = _LEAN  # type: ignore[attr-defined,method-assign]


def _uninstall_lean() -> None:
    if _Function.__dict__.get("_register_hook") is _LEAN:
        if _saved_register[0] is None:
            del _Function._register_hook  # type: ignore[attr-defined]
        else:
            _Function._register_hook = _saved_register[0]  # type: ignore[attr-defined,method-assign]


LEAN_REGISTRATION = SharedPatch("torch.autograd.Function._register_hook", _install_lean, _uninstall_lean)


class LeanRegistration:
    """While entered (in this thread), ``Node.register_prehook``/``register_hook`` put the hook in a fresh
    :class:`_Hooks` dict (listed in ``new``, cleared on removal) or, when the node already has user hooks, in theirs
    under our own key (listed in ``shared``), and return ``None`` instead of a ``RemovableHandle``. torch looks this
    helper up on ``torch.autograd.Function`` at every registration; if a future torch stops doing so, registration
    takes the public path and returns real handles, which :func:`instrument` keeps and removes instead.

    The swap is process-wide but reference-counted (:class:`~graphwidget.attribution.shared_patch.SharedPatch`)
    and per thread: registrations from other threads (the user's own hooks) get torch's helper and real handles.
    :meth:`close` is idempotent."""

    def __init__(self, new: List[Any], shared: List[Any]) -> None:
        self._lean = (new.append, shared.append)

    def __enter__(self) -> "LeanRegistration":
        try:
            local.lean = self._lean
            LEAN_REGISTRATION.acquire(self)
        except BaseException:
            self.close()
            raise
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def close(self) -> None:
        if getattr(local, "lean", None) is self._lean:
            local.lean = None
        LEAN_REGISTRATION.release(self)


def lean_hook_registration(new: List[Any], shared: List[Any]) -> LeanRegistration:
    """See :class:`LeanRegistration`."""
    return LeanRegistration(new, shared)


@functools.lru_cache(maxsize=None)
def accumulate_grad_type() -> type:
    leaf = torch.zeros(1, requires_grad=True)
    view_fn = leaf.view_as(leaf).grad_fn
    assert view_fn is not None
    return type(view_fn.next_functions[0][0])


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


def _instrument_native(roots: Sequence[Any], hook: bool, run: Run) -> bool:
    """The compiled core's walk + C++ hooks (graphwidget/capturing/native/cpp/hooks.cpp) into ``run``; False when it
    is not built or the roots are something it does not handle. Its stamps are CLOCK_MONOTONIC ns, i.e.
    ``time.perf_counter_ns`` on Linux, so only CPU-clock runs on Linux use it. (Its hooks go when the handle is
    removed or freed.)"""
    mod = core_engine.load_core()
    if mod is None or sys.platform != "linux":
        return False
    try:
        run.native = mod.instrument(list(roots), hook)
    except mod.Unsupported:
        return False
    h = run.native
    run.n = h.n
    run.types, run.arity, run.leaves = h.types, h.arity, h.leaves
    make_deep_free_safe(h.wrapped + len(roots))  # only wrapped nodes recurse when freed (_deep_free.py)
    return True


def instrument(roots: Sequence[Any], stamp: Optional[Callable[[], Any]], run: Optional[Run] = None) -> Run:
    """Walk the graph in capture's order (depth-first pre-order, ``next_functions`` in order) and, when ``stamp`` is
    given, hook every node on the way.

    With the compiled core and the CPU clock (``time.perf_counter_ns``), C++ does both and its hooks never enter
    Python. Otherwise: the capture's walk, then one pass that registers closures that only store a stamp.

    Pass an empty ``run`` made *before* the ``try`` whose ``finally`` calls ``run.remove_hooks()``: every hook is
    known to it from the moment it is registered, so an interrupt at any point (even between this function
    returning and the caller's next line) leaves no hook behind."""
    if run is None:
        run = Run()
    if stamp is None or stamp is time.perf_counter_ns:
        if _instrument_native(roots, stamp is not None, run):
            return run
    w = walk(roots)  # the capture's own walk: same order, hence the same ids
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
    lean = LeanRegistration(run.new, run.shared)
    try:
        try:
            with lean:
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
        finally:
            lean.close()  # again (idempotent): in case an interrupt hit the with block's exit
    except BaseException:  # KeyboardInterrupt mid-registration included: leave no hook behind
        run.remove_hooks()
        raise
    return run


def same_structure(a: Run, b: Run) -> bool:
    """Do two runs have the same nodes (op type *names*, in order) with the same number of inputs? Names, not type
    objects: each torch.compile'd region makes its own ``CompiledFunctionBackward`` class, and a frame compiled
    again (as under our torch-function mode) makes another one with the same name and meaning."""
    if a.arity != b.arity or len(a.types) != len(b.types):
        return False
    return all(x is y or x.__name__ == y.__name__ for x, y in zip(a.types, b.types))


def first_difference(a: Run, b: Run) -> int:
    """Index of the first node where :func:`same_structure` fails (the shorter length when one is a prefix)."""
    for j, (x, y, m, n) in enumerate(zip(a.types, b.types, a.arity, b.arity)):
        if (x is not y and x.__name__ != y.__name__) or m != n:
            return j
    return min(len(a.types), len(b.types))


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

"""Process-wide patches that several threads (and nested calls) may need at once.

``trace`` and ``profile`` must change process-wide state for a while: ``torch.autograd.Function.apply`` (custom
Functions bypass torch-function modes), the global ``nn.Module`` forward hooks and, while profile registers its
backward hooks, ``torch.autograd.Function._register_hook``. Each such change is a :class:`SharedPatch`:

* **reference-counted and locked**: the first user installs it, the last one to leave uninstalls it. Two
  overlapping calls in two threads no longer "restore whatever was there" in the wrong order and leave a patch
  behind for the rest of the process.
* **inert for everyone else**: what is installed is a dispatcher that reads the *calling thread's* state; a thread
  that is not tracing/profiling goes straight to the original (so another thread's ops are never recorded, and
  another thread's ``register_hook`` gets torch's own behaviour and handle).
* **interrupt-safe**: install and uninstall are idempotent and check the real state (is our object the one
  installed?) rather than a flag set after the fact, so a ``KeyboardInterrupt`` at any point of ``acquire`` or
  ``release`` is repaired by calling ``release`` again. Callers release in two layers (the ``with`` block's exit
  and a ``finally`` around it), so one interrupt at any line, even at the first line of a cleanup, leaves nothing
  installed: the second layer runs the idempotent cleanup again.

Everything here is also invisible to torch.compile: the dispatchers start with :func:`dynamo_compiling`, which
Dynamo constant-folds to ``True`` while it traces (so it traces straight through to the original, without graph
breaks), and which costs one trivial call otherwise.
"""
from __future__ import annotations

import threading
from typing import Any, Callable, Dict, List, TypeVar

import torch

from .._util.interrupts import deferred_interrupts

T = TypeVar("T")

# Dynamo treats these functions as the constant True while tracing; eagerly they return False. is_dynamo_compiling
# is the cheap one (a bare `return False`; is_compiling also asks TorchScript), and only Dynamo traces through our
# dispatchers (AOT autograd runs with the torch-function mode stack cleared).
_compiler = getattr(torch, "compiler", None)
dynamo_compiling: Callable[[], bool] = (getattr(_compiler, "is_dynamo_compiling", None)
                                        or getattr(_compiler, "is_compiling", None)
                                        or (lambda: False))

#: Per-thread state of the dispatchers (each module keeps its own attribute names on it).
local = threading.local()

# Code objects of graphwidget's dispatchers and hooks that Dynamo must never compile as frames of their own. They run
# in eager code, but sometimes under Dynamo's frame callback (a module's hooks called from inside a compiled module's
# call, an op of an eager stretch between two compiled graphs): Dynamo would then compile *our* function (the frame
# counter goes up, a cache entry appears, and dynamo_compiling() is folded to True in the compiled copy). Dynamo
# still inlines them, with dynamo_compiling() True, when it traces code that calls them: skipping a frame is not a
# graph break.
_skipped: List[Any] = []
_hidden = [False]


def dynamo_skip(fn: Any = None, *, recursive: bool = False) -> Any:
    """Decorator: list ``fn``'s code for :func:`hide_from_dynamo`; with ``recursive`` the frames it calls are
    skipped too (only for functions that never call user code). Returns ``fn`` unchanged."""
    def mark(f: Any) -> Any:
        _skipped.append((f.__code__, recursive))
        _hidden[0] = False
        return f
    return mark(fn) if fn is not None else mark


def hide_from_dynamo() -> None:
    """Mark the listed code objects as frames Dynamo skips (``torch._dynamo.eval_frame.skip_code``). Only once
    Dynamo is imported (it compiles nothing before), so it costs a dict look-up per call until then."""
    if _hidden[0]:
        return
    import sys
    ef = sys.modules.get("torch._dynamo.eval_frame")
    if ef is None:
        return
    try:
        if hasattr(ef, "set_code_exec_strategy"):
            skip = ef.FrameAction.SKIP
            for code, recursive in _skipped:
                then = skip if recursive else ef.FrameAction.DEFAULT
                ef.set_code_exec_strategy(code, ef.FrameExecStrategy(skip, then))
        else:
            # torch < 2.6 has only skip_code: this frame is skipped, the frames it calls are not (no "recursive":
            # the dispatchers switch Dynamo's frame callback off around their listeners, see frames_unseen).
            # Without it Dynamo compiles our module hooks, then the helpers they call, as frames of their own on
            # the first trace of a compiled module (the user's frame counter goes up; they trace to nothing).
            for code, _ in _skipped:
                ef.skip_code(code)
            _SET_EVAL_FRAME[0] = ef.set_eval_frame
    except Exception:  # pragma: no cover - another torch's private API: Dynamo then compiles them, harmlessly
        pass
    _hidden[0] = True


# torch < 2.6: Dynamo's set_eval_frame, set once the recursive skips above had to be done by hand.
_SET_EVAL_FRAME: List[Any] = [None]
_UNCHANGED = object()


@dynamo_skip
def frames_unseen() -> Any:
    """Begin a stretch whose frames Dynamo must not compile (what ``dynamo_skip(recursive=True)`` gives on torch
    >= 2.6): on older torch, Dynamo's frame callback off, as ``torch._dynamo.disable`` does around a call. Returns
    the token for :func:`frames_seen`. Only for eager code: callers have returned already when
    :func:`dynamo_compiling` (Dynamo would break the user's graph on ``set_eval_frame``)."""
    set_eval_frame = _SET_EVAL_FRAME[0]
    return _UNCHANGED if set_eval_frame is None else set_eval_frame(None)


@dynamo_skip
def frames_seen(token: Any) -> None:
    """End what :func:`frames_unseen` began: Dynamo's frame callback as it was."""
    if token is not _UNCHANGED:
        _SET_EVAL_FRAME[0](token)


class SharedPatch:
    """A process-wide change needed by several users at once: installed by the first :meth:`acquire`, removed by
    the last :meth:`release`.

    ``install()`` and ``uninstall()`` must be idempotent and look at the real state (e.g. "is our function the one
    on the class?"), never at a flag of their own: that is what makes an interrupted ``acquire``/``release`` safe
    to repeat.
    """

    def __init__(self, name: str, install: Callable[[], None], uninstall: Callable[[], None]) -> None:
        self.name = name
        self._install, self._uninstall = install, uninstall
        self._users: Dict[int, Any] = {}
        self._threads: Dict[int, int] = {}  # id(token) -> the thread that acquired it
        self.lock = threading.RLock()

    def locked(self, fn: Callable[..., T], *args: Any) -> T:
        """``fn(*args)`` with :attr:`lock` held, and Ctrl-C held back while it is held. A ``with self.lock`` block has
        moments between taking the lock and its way out where a KeyboardInterrupt skips the release (Python 3.9
        raises a real SIGINT between the block's end and the call of ``__exit__``): the thread would keep the
        RLock, and every other thread that profiles or traces would wait on it for good."""
        with deferred_interrupts(): return self._hold(fn, *args)  # noqa: E701 - one line (see _hold)

    def _hold(self, fn: Callable[..., T], *args: Any) -> T:
        # One line whose body is a call: Python reports the way out of a block of several lines as a line of its
        # own, and a KeyboardInterrupt raised there (by a line tracer, as the interrupt tests do) skips the release.
        with self.lock: return fn(*args)  # noqa: E701 - one line on purpose

    def acquire(self, token: Any) -> None:
        """Register ``token`` as a user and make sure the patch is installed."""
        hide_from_dynamo()
        self.locked(self._add, token)

    def _add(self, token: Any) -> None:
        self._users[id(token)] = token
        self._threads[id(token)] = threading.get_ident()
        self._install()

    def release(self, token: Any) -> None:
        """Forget ``token`` (again is fine) and uninstall when nobody is left."""
        self.locked(self._remove, token)

    def _remove(self, token: Any) -> None:
        self._users.pop(id(token), None)
        self._threads.pop(id(token), None)
        if not self._users:
            self._uninstall()

    def only_this_thread(self) -> bool:
        """Is every user of the patch the calling thread's? (Call with :attr:`lock` held.)"""
        me = threading.get_ident()
        return bool(self._threads) and all(t == me for t in self._threads.values())

    @property
    def users(self) -> int:
        """How many users hold the patch now."""
        return len(self._users)


def thread_stack(name: str) -> List[Any]:
    """The calling thread's list ``name`` on :data:`local` (created empty on first use)."""
    stack = getattr(local, name, None)
    if stack is None:
        stack = []
        setattr(local, name, stack)
    return stack


def remove_identical(stack: List[Any], item: Any) -> None:
    """Remove ``item`` (compared by identity: bound methods compare equal by value) from ``stack``, if there."""
    for i in range(len(stack) - 1, -1, -1):
        if stack[i] is item:
            del stack[i]
            return

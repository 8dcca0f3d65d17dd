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
breaks), and which costs one trivial call (~0.1 µs) otherwise.
"""
from __future__ import annotations

import threading
from typing import Any, Callable, Dict, List

import torch

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
        skip = ef.FrameAction.SKIP
        for code, recursive in _skipped:
            ef.set_code_exec_strategy(code, ef.FrameExecStrategy(skip, skip if recursive else ef.FrameAction.DEFAULT))
    except Exception:  # pragma: no cover - another torch's private API: Dynamo then compiles them, harmlessly
        pass
    _hidden[0] = True


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
        self._lock = threading.RLock()

    def acquire(self, token: Any) -> None:
        """Register ``token`` as a user and make sure the patch is installed."""
        hide_from_dynamo()
        with self._lock:
            self._users[id(token)] = token
            self._install()

    def release(self, token: Any) -> None:
        """Forget ``token`` (again is fine) and uninstall when nobody is left."""
        with self._lock:
            self._users.pop(id(token), None)
            if not self._users:
                self._uninstall()

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

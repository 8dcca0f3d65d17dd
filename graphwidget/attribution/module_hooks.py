"""Global ``nn.Module`` forward pre/post hooks, shared by every recorder in every thread.

One pair of dispatcher hooks is registered process-wide (a
:class:`~graphwidget.attribution.shared_patch.SharedPatch`) while any recorder needs them; each call goes to the
*calling thread's* recorders only, so modules run by another thread never enter a traced graph's module stack.
Under Dynamo the hooks do nothing (and trace to nothing): a compiled region is one node, attributed where it was
called.
"""
from __future__ import annotations

import re
import warnings
from typing import Any, Callable, List, Optional, Tuple

from torch.nn.modules import module as _nn
from torch.utils.hooks import RemovableHandle

from .shared_patch import (
    SharedPatch,
    dynamo_compiling,
    dynamo_skip,
    frames_seen,
    frames_unseen,
    local,
    remove_identical,
    thread_stack,
)

Pre = Callable[[Any, Any], None]
Post = Callable[[Any, Any, Any], None]


@dynamo_skip(recursive=True)
def _pre(module: Any, args: Any) -> None:
    if dynamo_compiling():
        return
    listeners: Optional[List[Tuple[Pre, Post]]] = getattr(local, "modules", None)
    if listeners:
        token = frames_unseen()  # the listeners and what they call: never frames of Dynamo's (torch < 2.6)
        try:
            for pre, _ in listeners:
                pre(module, args)
        finally:
            frames_seen(token)


@dynamo_skip(recursive=True)
def _post(module: Any, args: Any, output: Any) -> None:
    if dynamo_compiling():
        return
    listeners: Optional[List[Tuple[Pre, Post]]] = getattr(local, "modules", None)
    if listeners:
        token = frames_unseen()
        try:
            for _, post in listeners:
                post(module, args, output)
        finally:
            frames_seen(token)


# One key for our entries in torch's global hook dicts, the same on every install: torch.compile guards a compiled
# frame on those dicts' keys, so a new key per install (a new RemovableHandle's id) would recompile the user's model
# on every trace. It is drawn once from torch's own handle counter, so it never collides with a handle's id.
_KEY: List[Optional[int]] = [None]


def _key() -> int:
    if _KEY[0] is None:
        _KEY[0] = RemovableHandle(_nn._global_forward_pre_hooks).id
    return _KEY[0]  # type: ignore[return-value]


def _ours(d: Any) -> List[Any]:
    return [k for k, v in list(d.items()) if v is _pre or v is _post]


def _installed() -> bool:
    k = _KEY[0]
    return (k is not None and _nn._global_forward_pre_hooks.get(k) is _pre
            and _nn._global_forward_hooks.get(k) is _post)


# torch warns on every call of a torch.compile'd module while any global module hook exists (the hooks would fire for
# the wrapper too). Ours are graphwidget's own and handle that, so the warning would only confuse: while they are
# installed, this one message is ignored.
_FILTER = ("ignore", re.compile(re.escape("Using `torch.compile(module)` when there are global hooks"), re.I),
           UserWarning, None, 0)


def _filters_changed() -> None:
    mutated = getattr(warnings, "_filters_mutated", None)  # invalidates the per-module "already warned" caches
    if mutated is not None:
        try:
            mutated()
        except Exception:  # pragma: no cover - another Python's internals
            pass


def _quiet() -> None:
    if not any(f is _FILTER for f in warnings.filters):
        warnings.filters.insert(0, _FILTER)  # type: ignore[arg-type,attr-defined]
        _filters_changed()


def _unquiet() -> None:
    if any(f is _FILTER for f in warnings.filters):
        warnings.filters[:] = [f for f in warnings.filters if f is not _FILTER]  # type: ignore[index]
        _filters_changed()


def _uninstall() -> None:
    _unquiet()
    _remove_entries()


def _remove_entries() -> None:
    always = getattr(_nn, "_global_forward_hooks_always_called", {})
    for d in (_nn._global_forward_pre_hooks, _nn._global_forward_hooks):
        for k in _ours(d):  # by identity: whatever key an earlier (interrupted) install used
            d.pop(k, None)
            always.pop(k, None)
    if _KEY[0] is not None:
        always.pop(_KEY[0], None)


def _install() -> None:
    _quiet()
    if _installed():
        return
    key = _key()
    always = getattr(_nn, "_global_forward_hooks_always_called", None)
    if always is not None:  # the post hook also runs when forward raises: the module stack stays balanced
        always[key] = True
    _nn._global_forward_hooks[key] = _post
    _nn._global_forward_pre_hooks[key] = _pre


MODULE_HOOKS = SharedPatch("global nn.Module forward hooks", _install, _uninstall)


def add_listener(pair: Optional[Tuple[Pre, Post]], token: Any) -> None:
    """Call ``pair[0](module, args)`` before and ``pair[1](module, args, output)`` after every module forward of
    this thread (the post hook also when the forward raises) until :func:`remove_listener`. With ``pair=None``
    the hooks are only held installed (for ``token``): the op timer does that so that a torch.compile'd frame sees
    the same hook dicts in every profile run and is not compiled once more for runs without them."""
    if pair is not None:
        thread_stack("modules").append(pair)
    MODULE_HOOKS.acquire(token)


def remove_listener(pair: Optional[Tuple[Pre, Post]], token: Any) -> None:
    """Undo :func:`add_listener` (idempotent)."""
    stack = getattr(local, "modules", None)
    if stack is not None and pair is not None:
        remove_identical(stack, pair)
    MODULE_HOOKS.release(token)


def suspend() -> bool:
    """Take the hooks out of torch's dicts while a compiled callable (``torch.compile(function)``) runs, when no
    other thread needs them; returns whether it did (then call :func:`resume`).

    Why: torch < 2.6 compiles a frame that calls a module with a guard that the global hook dicts are *empty* (it
    ran none); with ours in them the user's compiled function fails that guard and is compiled again. Inside it
    the hooks would record nothing anyway (compiled code: Dynamo traces them to nothing)."""
    return MODULE_HOOKS.locked(_suspend_locked)


def _suspend_locked() -> bool:
    if not MODULE_HOOKS.only_this_thread():
        return False  # another thread's module stack needs them: a recompile is the lesser evil
    _remove_entries()
    return True


def resume() -> None:
    """Undo :func:`suspend` (idempotent, and a no-op once nobody holds the hooks)."""
    MODULE_HOOKS.locked(_resume_locked)


def _resume_locked() -> None:
    if MODULE_HOOKS.users and not _installed():
        _install()


def originals_restored() -> bool:
    """True when no dispatcher hook of ours is registered (for tests and checks)."""
    always = getattr(_nn, "_global_forward_hooks_always_called", {})
    return (not _ours(_nn._global_forward_pre_hooks) and not _ours(_nn._global_forward_hooks)
            and (_KEY[0] is None or _KEY[0] not in always) and not any(f is _FILTER for f in warnings.filters))

"""Seeing custom ``autograd.Function`` calls, which bypass torch-function modes.

``trace`` (attribution) and ``profile`` (forward timing) both need to bracket every ``SomeFunction.apply(...)``
with the autograd sequence counter. This is the one place that swaps ``torch.autograd.Function.apply``: one
process-wide dispatcher (a :class:`~graphwidget.attribution.shared_patch.SharedPatch`, installed while anyone in
any thread needs it) that hands each call to the *calling thread's* active ``around`` functions; other threads, and
Dynamo while it traces, go straight to the original ``apply``.
"""
from __future__ import annotations

from typing import Any, Callable, Dict, List, Optional, Tuple

import torch

from .shared_patch import SharedPatch, dynamo_compiling, dynamo_skip, local, remove_identical, thread_stack

Around = Callable[[Callable[..., Any], Tuple[Any, ...], Dict[str, Any]], Any]

_Function = torch.autograd.Function
#: The ``apply`` found on the class when the dispatcher was installed (a classmethod object); None when not.
_saved: List[Any] = [None]


@dynamo_skip
def _chain(arounds: List[Around], apply: Callable[..., Any], args: Tuple[Any, ...], kwargs: Dict[str, Any]) -> Any:
    if len(arounds) == 1:
        return arounds[0](apply, args, kwargs)
    inner = arounds[-1]
    rest = arounds[:-1]
    return _chain(rest, lambda *a, **k: inner(apply, a, k), args, kwargs)


@dynamo_skip
def _apply(cls: Any, *args: Any, **kwargs: Any) -> Any:
    orig = _saved[0] or _ORIGINAL
    if not dynamo_compiling():
        arounds = getattr(local, "apply", None)
        if arounds:
            return _chain(arounds, orig.__get__(None, cls), args, kwargs)
    return orig.__get__(None, cls)(*args, **kwargs)


_DISPATCHER: Any = classmethod(_apply)
_ORIGINAL = _Function.__dict__["apply"]  # the classmethod object itself


def _install() -> None:
    current = _Function.__dict__.get("apply")
    if current is _DISPATCHER:
        return
    _saved[0] = current  # saved before the swap: an interrupt in between leaves nothing to undo
    _Function.apply = _DISPATCHER  # type: ignore[assignment]


def _uninstall() -> None:
    if _Function.__dict__.get("apply") is _DISPATCHER:
        _Function.apply = _saved[0] or _ORIGINAL  # type: ignore[assignment]


APPLY_PATCH = SharedPatch("torch.autograd.Function.apply", _install, _uninstall)


def add_around(around: Around) -> None:
    """Route this thread's ``Function.apply(*args, **kwargs)`` calls through ``around(bound_apply, args, kwargs)``
    (nested with any already added) until :func:`remove_around`."""
    thread_stack("apply").append(around)
    APPLY_PATCH.acquire(around)


def remove_around(around: Around) -> None:
    """Undo :func:`add_around` (idempotent: safe to call again after an interrupt)."""
    stack: Optional[List[Any]] = getattr(local, "apply", None)
    if stack is not None:
        remove_identical(stack, around)
    APPLY_PATCH.release(around)


def patch_function_apply(around: Around) -> Callable[[], None]:
    """Route this thread's ``Function.apply`` calls through ``around`` and return ``restore()`` (idempotent)."""
    add_around(around)
    return lambda: remove_around(around)

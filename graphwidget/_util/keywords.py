"""Keywords that could mean two things: an option of graphwidget's entry point, or a parameter of the user's function.

``gw.profile(f, x, repeat=3)`` with ``def f(x, repeat=1)`` used to take ``repeat`` as profile's option and run ``f``
with its own default, silently. Python binds such a keyword to the entry point before any of its code runs, so the
check has to sit in front of it: :func:`refuse_shadowed_options` wraps an entry point and, when a keyword the caller
passed is both one of its options and a named parameter of the function(s) it runs, raises a ``TypeError`` naming the
keyword and saying how to pass it to the function (``functools.partial``). It never guesses which was meant.

A function that only takes ``**kwargs`` does not clash (its keywords have no names to compare); a function whose
signature cannot be read (some builtins) is not checked.
"""
from __future__ import annotations

import functools
import inspect
from typing import Any, Callable, FrozenSet, Iterable, Mapping, Sequence, TypeVar

F = TypeVar("F", bound=Callable[..., Any])

_NAMED = (inspect.Parameter.POSITIONAL_OR_KEYWORD, inspect.Parameter.KEYWORD_ONLY)


def named_parameters(fn: Any) -> FrozenSet[str]:
    """The names ``fn`` accepts as keywords and does not have bound already (an ``nn.Module``: its ``forward``'s; a
    ``functools.partial``: less the keywords it binds), or an empty set when its signature cannot be read."""
    bound = frozenset(fn.keywords) if isinstance(fn, functools.partial) else frozenset()
    target = fn
    forward = getattr(fn, "forward", None)
    if callable(forward) and not inspect.isfunction(fn) and not inspect.ismethod(fn):
        target = forward  # an nn.Module (duck-typed: this module imports no torch)
    try:
        params = inspect.signature(target).parameters.values()
    except (TypeError, ValueError):
        return frozenset()
    return frozenset(p.name for p in params if p.kind in _NAMED) - bound


def _name(fn: Any) -> str:
    return str(getattr(fn, "__name__", None) or type(fn).__name__)


def refuse_shadowed_options(who: str, *functions: str) -> Callable[[F], F]:
    """Decorate entry point ``who`` whose parameters named ``functions`` are the user's callables (the rest of its
    named parameters are its options): a call passing a keyword that is both an option and a parameter of one of
    those callables raises ``TypeError`` before anything runs."""

    def wrap(api: F) -> F:
        sig = inspect.signature(api)
        names = list(sig.parameters)
        options = frozenset(n for n, p in sig.parameters.items() if p.kind in _NAMED and n not in functions)
        where = {f: names.index(f) for f in functions}

        @functools.wraps(api)
        def checked(*args: Any, **kwargs: Any) -> Any:
            clash = options.intersection(kwargs)
            if clash:
                for f, i in where.items():
                    refuse_if_shadowed(who, args[i] if i < len(args) else kwargs.get(f), clash)
            return api(*args, **kwargs)

        return checked  # type: ignore[return-value]

    return wrap


def refuse_if_shadowed(who: str, fn: Any, passed: Iterable[str]) -> None:
    """Raise ``TypeError`` when a keyword of ``passed`` (options the caller gave ``who``) is also a named parameter of
    ``fn``, or of any function in ``fn`` when it is a dict or list of them (``gw.compare``'s N sides). Anything not
    callable (a recording's path, a bad argument the entry point refuses itself) is not checked."""
    passed = frozenset(passed)
    for one in (fn.values() if isinstance(fn, Mapping) else fn if isinstance(fn, (list, tuple)) else (fn,)):
        if callable(one):
            both = sorted(passed & named_parameters(one))
            if both:
                raise TypeError(_message(who, one, both))


def _message(who: str, fn: Any, both: Sequence[str]) -> str:
    one, many = both[0], len(both) > 1
    kw = ", ".join(f"{k}=..." for k in both)
    names = ", ".join(repr(k) for k in both)
    what = ("are both options", "parameters") if many else ("is both an option", "a parameter")
    f = _name(fn) if inspect.isfunction(fn) or inspect.ismethod(fn) else "fn"
    return (f"{who}: {names} {what[0]} of {who} and {what[1]} of {_name(fn)}, so it is not clear which you meant "
            f"(nothing was run). To give it to the function, bind it: {who}(functools.partial({f}, {kw}), ...). To use "
            f"{who}'s own {one!r} option, bind the function's value the same way and pass the option beside it.")

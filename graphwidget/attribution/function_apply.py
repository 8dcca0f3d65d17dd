"""Seeing custom ``autograd.Function`` calls, which bypass torch-function modes.

``trace`` (attribution) and ``profile`` (forward timing) both need to bracket every ``SomeFunction.apply(...)``
with the autograd sequence counter; this is the one place that swaps ``torch.autograd.Function.apply`` and puts it
back.
"""
from __future__ import annotations

from typing import Any, Callable, Dict, Tuple

import torch

Around = Callable[[Callable[..., Any], Tuple[Any, ...], Dict[str, Any]], Any]


def patch_function_apply(around: Around) -> Callable[[], None]:
    """Route every ``Function.apply(*args, **kwargs)`` through ``around(bound_apply, args, kwargs)``.

    Returns ``restore()``, which puts the original ``apply`` back; call it in a ``finally``.
    """
    orig = torch.autograd.Function.__dict__["apply"]  # the classmethod object itself

    def apply(cls: Any, *args: Any, **kwargs: Any) -> Any:
        return around(orig.__get__(None, cls), args, kwargs)

    torch.autograd.Function.apply = classmethod(apply)  # type: ignore[assignment]

    def restore() -> None:
        torch.autograd.Function.apply = orig  # type: ignore[assignment]

    return restore

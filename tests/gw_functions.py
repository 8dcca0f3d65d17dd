"""Custom ``autograd.Function``s the tests share (one definition each; a uniquely named module, since ``conftest``
is ambiguous across test folders). ``tests/conftest.py`` also hands them out as fixtures."""
from __future__ import annotations

import torch


class Square(torch.autograd.Function):
    """x -> x * x, saving x (one tensor in ``ctx.saved_tensors``)."""

    @staticmethod
    def forward(ctx, x):  # type: ignore[override]
        ctx.save_for_backward(x)
        return x * x

    @staticmethod
    def backward(ctx, grad):  # type: ignore[override]
        (x,) = ctx.saved_tensors
        return 2 * x * grad


class Product(torch.autograd.Function):
    """(x, w) -> x * w, saving both (two tensors in ``ctx.saved_tensors``, nothing else)."""

    @staticmethod
    def forward(ctx, x, w):  # type: ignore[override]
        ctx.save_for_backward(x, w)
        return x * w

    @staticmethod
    def backward(ctx, grad):  # type: ignore[override]
        x, w = ctx.saved_tensors
        return grad * w, grad * x


class ScaledProduct(torch.autograd.Function):
    """(x, w) -> 2 * x * w, saving both and a non-tensor attribute (``ctx.scale``)."""

    @staticmethod
    def forward(ctx, x, w):  # type: ignore[override]
        ctx.save_for_backward(x, w)
        ctx.scale = 2.0
        return x * w * 2

    @staticmethod
    def backward(ctx, grad):  # type: ignore[override]
        x, w = ctx.saved_tensors
        return grad * w * 2, grad * x * 2

"""Built-in examples: small programs whose graphs teach something, used by the demo, the docs and the tests.

The centre piece is the homography grid warp from a user report ("why is loss.backward() so slow?"):
:func:`homography_repeat` lines tensors up with ``Tensor.repeat``; :func:`homography_broadcast` computes the same
thing with broadcasting. Same output, same gradients; the repeat version builds *fewer* nodes but its
``SelectBackward0`` nodes each materialise the whole repeated ``(B, H*W, 3, 3)`` tensor in backward, so its
backward is several times slower. Node counts mislead; shapes and times tell the truth.
"""
from __future__ import annotations

from typing import Dict, Tuple

import torch
import torch.nn.functional as F


def homography_inputs(batch: int = 8, height: int = 128, width: int = 128, channels: int = 3,
                      seed: int = 0) -> Dict[str, torch.Tensor]:
    """Inputs for the homography examples: ``img`` (B, C, H, W) and ``homo`` (B, 3, 3) require grad;
    ``cx``, ``cy``, ``scale`` (B,) do not. Deterministic for a given seed.

    >>> inp = homography_inputs(batch=2, height=16, width=16)
    >>> out = homography_repeat(**inp)
    """
    gen = torch.Generator().manual_seed(seed)
    img = torch.rand(batch, channels, height, width, generator=gen).requires_grad_()
    eye = torch.eye(3).expand(batch, 3, 3)
    homo = (eye + 0.05 * torch.randn(batch, 3, 3, generator=gen)).requires_grad_()
    cx = 0.1 * torch.randn(batch, generator=gen)
    cy = 0.1 * torch.randn(batch, generator=gen)
    scale = 1.0 + 0.1 * torch.rand(batch, generator=gen)
    return {"img": img, "homo": homo, "cx": cx, "cy": cy, "scale": scale}


def _base_grid(batch: int, height: int, width: int, dtype: torch.dtype) -> torch.Tensor:
    """(B, H*W, 2) pixel-centre coordinates in [-1, 1] (x, y), like affine_grid's."""
    ys = torch.linspace(-1, 1, height, dtype=dtype)
    xs = torch.linspace(-1, 1, width, dtype=dtype)
    gy, gx = torch.meshgrid(ys, xs, indexing="ij")
    return torch.stack((gx, gy), -1).reshape(1, height * width, 2).expand(batch, -1, -1)


def homography_repeat(img: torch.Tensor, homo: torch.Tensor, cx: torch.Tensor, cy: torch.Tensor,
                      scale: torch.Tensor) -> torch.Tensor:
    """Version A (slow backward): ``repeat`` lines every tensor up with the (B, H*W) grid."""
    B, _, H, W = img.shape
    base_grid = _base_grid(B, H, W, img.dtype)
    center_x = cx.unsqueeze(1)
    center_y = cy.unsqueeze(1)
    center = torch.cat((center_x, center_y), 1).unsqueeze(1).repeat(1, W * H, 1)
    s = scale.unsqueeze(1).repeat(1, H * W).unsqueeze(2).repeat(1, 1, 2)
    g = base_grid * s / 2
    g = g + center
    h = homo.unsqueeze(1).repeat(1, W * H, 1, 1)
    temp1 = h[:, :, 0, 0] * g[:, :, 0] + h[:, :, 0, 1] * g[:, :, 1] + h[:, :, 0, 2]
    temp2 = h[:, :, 2, 0] * g[:, :, 0] + h[:, :, 2, 1] * g[:, :, 1] + h[:, :, 2, 2]
    u = temp1 / temp2
    temp3 = h[:, :, 1, 0] * g[:, :, 0] + h[:, :, 1, 1] * g[:, :, 1] + h[:, :, 1, 2]
    temp4 = h[:, :, 2, 0] * g[:, :, 0] + h[:, :, 2, 1] * g[:, :, 1] + h[:, :, 2, 2]
    v = temp3 / temp4
    grid = torch.stack((u, v), 2).view(B, H, W, 2)
    return F.grid_sample(img, grid, align_corners=False)


def homography_broadcast(img: torch.Tensor, homo: torch.Tensor, cx: torch.Tensor, cy: torch.Tensor,
                         scale: torch.Tensor) -> torch.Tensor:
    """Version B (fast backward): the same maths with broadcasting, no ``repeat``."""
    B, _, H, W = img.shape
    base_grid = _base_grid(B, H, W, img.dtype)
    center_x = cx.unsqueeze(1)
    center_y = cy.unsqueeze(1)
    center = torch.cat((center_x, center_y), 1).unsqueeze(1)
    s = scale.view(B, 1, 1)
    g = base_grid * s / 2
    g = g + center
    h = homo
    temp1 = h[:, 0, 0].unsqueeze(1) * g[:, :, 0] + h[:, 0, 1].unsqueeze(1) * g[:, :, 1] + h[:, 0, 2].unsqueeze(1)
    temp2 = h[:, 2, 0].unsqueeze(1) * g[:, :, 0] + h[:, 2, 1].unsqueeze(1) * g[:, :, 1] + h[:, 2, 2].unsqueeze(1)
    u = temp1 / temp2
    temp3 = h[:, 1, 0].unsqueeze(1) * g[:, :, 0] + h[:, 1, 1].unsqueeze(1) * g[:, :, 1] + h[:, 1, 2].unsqueeze(1)
    temp4 = h[:, 2, 0].unsqueeze(1) * g[:, :, 0] + h[:, 2, 1].unsqueeze(1) * g[:, :, 1] + h[:, 2, 2].unsqueeze(1)
    v = temp3 / temp4
    grid = torch.stack((u, v), 2).view(B, H, W, 2)
    return F.grid_sample(img, grid, align_corners=False)


def select_loop(n: int = 256) -> Tuple[torch.Tensor, torch.Tensor]:
    """A Python loop of indexing: ``4n + 1`` tiny ``SelectBackward0`` nodes (``x[i, 0]`` is two selects) where one
    vectorised op would do.

    Returns ``(x, loss)``; ``x`` requires grad.
    """
    x = torch.randn(n, 4, requires_grad=True)
    total = x[0].sum() * 0
    for i in range(n):
        total = total + x[i, 0] * x[i, 1]
    return x, total


def tiny_chain(n: int = 10_000) -> Tuple[torch.Tensor, torch.Tensor]:
    """A chain of ``n`` tiny element-wise ops (the worst case for per-node overheads). Returns ``(x, y)``."""
    x = torch.randn(4, requires_grad=True)
    y = x
    for i in range(n):
        y = y * 1.0001 if i % 2 else y + 0.5
    return x, y.sum()


class SmallConvNet(torch.nn.Module):
    """A small conv net (conv-bn-relu x2, pool, linear): a realistic module tree for module paths."""

    def __init__(self, channels: int = 3, classes: int = 10) -> None:
        super().__init__()
        self.features = torch.nn.Sequential(
            torch.nn.Conv2d(channels, 16, 3, padding=1), torch.nn.BatchNorm2d(16), torch.nn.ReLU(),
            torch.nn.Conv2d(16, 32, 3, padding=1), torch.nn.BatchNorm2d(32), torch.nn.ReLU(),
        )
        self.head = torch.nn.Linear(32, classes)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.features(x)
        x = F.adaptive_avg_pool2d(x, 1).flatten(1)
        return self.head(x)


def convnet_loss(model: torch.nn.Module, x: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
    """Cross-entropy loss of ``model(x)``: the function to hand to ``gw.trace`` / ``gw.profile``."""
    return F.cross_entropy(model(x), target)

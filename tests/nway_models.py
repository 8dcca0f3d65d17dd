"""The small transformer block the N-way tests compare three ways (eager, a refactor, torch.compile), shared by
tests/test_nway.py and tests/browser/test_nway_view.py (a uniquely named module: ``conftest`` is ambiguous)."""
from __future__ import annotations

from typing import Any, Dict, Tuple

import torch
import torch.nn.functional as F


class Block(torch.nn.Module):
    """Pre-norm transformer block: attention, then an MLP with GELU; returns a scalar loss."""

    def __init__(self, d: int = 32, heads: int = 4) -> None:
        super().__init__()
        self.ln1 = torch.nn.LayerNorm(d)
        self.attn = torch.nn.MultiheadAttention(d, heads, batch_first=True)
        self.ln2 = torch.nn.LayerNorm(d)
        self.fc1 = torch.nn.Linear(d, 4 * d)
        self.fc2 = torch.nn.Linear(4 * d, d)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = self.ln1(x)
        a, _ = self.attn(y, y, y, need_weights=False)
        x = x + a
        return (x + self.fc2(F.gelu(self.fc1(self.ln2(x))))).pow(2).mean()


def refactored(block: Block) -> Any:
    """The same maths written differently: the MLP's first layer by hand, ``square`` for ``pow(2)``."""

    def refactor(x: torch.Tensor) -> torch.Tensor:
        y = block.ln1(x)
        a, _ = block.attn(y, y, y, need_weights=False)
        x = x + a
        h = F.linear(block.ln2(x), block.fc1.weight, block.fc1.bias)
        return (x + block.fc2(F.gelu(h))).square().mean()

    return refactor


def three_ways(seed: int = 0) -> Tuple[Dict[str, Any], torch.Tensor]:
    """``({"eager", "refactor", "compiled"}, x)``: compiled with AOTAutograd's eager backend (the autograd graph
    holds the same CompiledFunctionBackward region as with inductor, without a C++ compile in the tests)."""
    torch.manual_seed(seed)
    block = Block()
    x = torch.randn(2, 8, 32, requires_grad=True)
    return {"eager": block, "refactor": refactored(block),
            "compiled": torch.compile(block, backend="aot_eager")}, x

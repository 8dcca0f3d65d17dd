"""Real rewrites of a forward pass, each a pair of implementations with the truth about it: the same maths or not.

Shared by tests/test_verdicts.py (small sizes) and tests/bench/bench_verdicts.py (realistic sizes, with an
independent plain timing). Each builder takes a size factor and returns a :class:`Case`. ``same`` is the truth,
established independently of graphwidget (a float64 run of both sides agrees, or the maths is different by
construction); the tests assert graphwidget's verdict against it.
"""
from __future__ import annotations

import copy
import math
from dataclasses import dataclass, field
from typing import Any, Callable, Dict, Tuple

import torch
import torch.nn as nn
import torch.nn.functional as F


@dataclass
class Case:
    fn_a: Callable[..., Any]
    fn_b: Callable[..., Any]
    args: Tuple[Any, ...]
    kwargs: Dict[str, Any] = field(default_factory=dict)
    same: bool = True
    labels: Tuple[str, str] = ("A", "B")
    threads: int = 0  # torch.set_num_threads while it runs (0: leave as is)


def _g(seed: int) -> torch.Generator:
    return torch.Generator().manual_seed(seed)


def _randn(*shape: int, seed: int = 0, grad: bool = True, dtype: torch.dtype = torch.float32) -> torch.Tensor:
    return torch.randn(*shape, generator=_g(seed)).to(dtype).requires_grad_(grad)


# -- the rewrites people make ----------------------------------------------------------------------------------------
def attention_sdpa(k: int = 1) -> Case:
    def hand(q: torch.Tensor, kk: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
        w = torch.softmax(q @ kk.transpose(-2, -1) / math.sqrt(q.shape[-1]), dim=-1)
        return (w @ v).square().mean()

    def sdpa(q: torch.Tensor, kk: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
        return F.scaled_dot_product_attention(q, kk, v).square().mean()

    shape = (2 * k, 4, 32 * k, 16)
    return Case(hand, sdpa, (_randn(*shape, seed=1), _randn(*shape, seed=2), _randn(*shape, seed=3)),
                labels=("attention", "sdpa"))


def _hand_layer_norm(x: torch.Tensor, w: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    mu = x.mean(-1, keepdim=True)
    var = (x - mu).pow(2).mean(-1, keepdim=True)
    return (x - mu) / torch.sqrt(var + 1e-5) * w + b


def layer_norm(k: int = 1) -> Case:
    def hand(x: torch.Tensor, w: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        return _hand_layer_norm(x, w, b).square().mean()

    def fused(x: torch.Tensor, w: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        return F.layer_norm(x, (x.shape[-1],), w, b).square().mean()

    d = 64 * k
    return Case(hand, fused, (_randn(8 * k, 32, d, seed=4), _randn(d, seed=5), _randn(d, seed=6)),
                labels=("hand LayerNorm", "F.layer_norm"))


def einsum_bmm(k: int = 1) -> Case:
    def es(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        return torch.einsum("bij,bjk->bik", a, b).tanh().sum()

    def bmm(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        return torch.bmm(a, b).tanh().sum()

    return Case(es, bmm, (_randn(4 * k, 32, 48, seed=7), _randn(4 * k, 48, 40, seed=8)), labels=("einsum", "bmm"))


def unfold_conv(k: int = 1) -> Case:
    def unfolded(x: torch.Tensor, w: torch.Tensor) -> torch.Tensor:
        n, _, h, wd = x.shape
        cols = F.unfold(x, 3, padding=1)                        # (N, C*9, H*W)
        out = (w.view(w.shape[0], -1) @ cols).view(n, w.shape[0], h, wd)
        return out.relu().mean()

    def conv(x: torch.Tensor, w: torch.Tensor) -> torch.Tensor:
        return F.conv2d(x, w, padding=1).relu().mean()

    return Case(unfolded, conv, (_randn(2 * k, 8, 24, 24, seed=9), _randn(16, 8, 3, 3, seed=10)),
                labels=("unfold+matmul", "conv2d"))


def gpt2_sdpa(k: int = 1) -> Case:
    from transformers import GPT2Config, GPT2LMHeadModel
    torch.manual_seed(0)
    cfg = dict(n_layer=2 * k, n_head=4, n_embd=64, vocab_size=300, n_positions=64, resid_pdrop=0.0,
               embd_pdrop=0.0, attn_pdrop=0.0)
    eager = GPT2LMHeadModel(GPT2Config(**cfg, attn_implementation="eager"))
    sdpa = GPT2LMHeadModel(GPT2Config(**cfg, attn_implementation="sdpa"))
    sdpa.load_state_dict(eager.state_dict())
    ids = torch.randint(0, 300, (2, 32), generator=_g(11))

    def run_eager(ids: torch.Tensor) -> torch.Tensor:
        return eager(ids).logits.float().logsumexp(-1).mean()

    def run_sdpa(ids: torch.Tensor) -> torch.Tensor:
        return sdpa(ids).logits.float().logsumexp(-1).mean()

    return Case(run_eager, run_sdpa, (ids,), labels=("gpt2 eager", "gpt2 sdpa"))


class ConvNet(nn.Module):
    """A small ResNet-like net (conv, BatchNorm, residual blocks): torchvision-free."""

    def __init__(self, width: int = 16, blocks: int = 2) -> None:
        super().__init__()
        self.stem = nn.Sequential(nn.Conv2d(3, width, 3, padding=1, bias=False), nn.BatchNorm2d(width), nn.ReLU())
        self.blocks = nn.ModuleList(
            nn.Sequential(nn.Conv2d(width, width, 3, padding=1, bias=False), nn.BatchNorm2d(width), nn.ReLU(),
                          nn.Conv2d(width, width, 3, padding=1, bias=False), nn.BatchNorm2d(width))
            for _ in range(blocks))
        self.fc = nn.Linear(width, 10)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = self.stem(x)
        for blk in self.blocks:
            h = (h + blk(h)).relu()
        return self.fc(h.mean((2, 3))).logsumexp(-1).mean()


def channels_last(k: int = 1, threads: int = 0) -> Case:
    torch.manual_seed(0)
    model = ConvNet(width=16 * k, blocks=2 * k)
    model_cl = copy.deepcopy(model).to(memory_format=torch.channels_last)
    x = torch.randn(4 * k, 3, 32, 32, generator=_g(12))

    def contiguous(x: torch.Tensor) -> torch.Tensor:
        return model(x)

    def cl(x: torch.Tensor) -> torch.Tensor:
        return model_cl(x.contiguous(memory_format=torch.channels_last))

    return Case(contiguous, cl, (x.requires_grad_(),), labels=("contiguous", "channels_last"), threads=threads)


def loop_cumsum(k: int = 1) -> Case:
    def loop(x: torch.Tensor) -> torch.Tensor:
        acc, outs = torch.zeros_like(x[0]), []
        for i in range(x.shape[0]):
            acc = acc + x[i]
            outs.append(acc)
        return torch.stack(outs).sin().sum()

    def cumsum(x: torch.Tensor) -> torch.Tensor:
        return x.cumsum(0).sin().sum()

    return Case(loop, cumsum, (_randn(64 * k, 16, seed=13),), labels=("loop", "cumsum"))


_W, _B = _randn(32, 48, seed=14), _randn(32, seed=15)


def dropped_bias(k: int = 1) -> Case:
    def with_bias(x: torch.Tensor) -> torch.Tensor:
        return F.linear(x, _W, _B).tanh().sum()

    def without(x: torch.Tensor) -> torch.Tensor:
        return F.linear(x, _W).tanh().sum()

    return Case(with_bias, without, (_randn(16 * k, 48, seed=16),), same=False, labels=("with bias", "no bias"))


def relu_silu(k: int = 1) -> Case:
    def relu(x: torch.Tensor, w: torch.Tensor) -> torch.Tensor:
        return F.relu(x @ w).sum()

    def silu(x: torch.Tensor, w: torch.Tensor) -> torch.Tensor:
        return F.silu(x @ w).sum()

    return Case(relu, silu, (_randn(16 * k, 32, seed=17), _randn(32, 24, seed=18)), same=False,
                labels=("relu", "silu"))


def identical(k: int = 1) -> Case:
    def f(x: torch.Tensor, w: torch.Tensor) -> torch.Tensor:
        return (x @ w).tanh().sum()

    return Case(f, f, (_randn(64 * k, 64, seed=19), _randn(64, 64, seed=20)), labels=("f", "f again"))


def wasted_matmul(k: int = 1) -> Case:
    def lean(x: torch.Tensor, w: torch.Tensor) -> torch.Tensor:
        return (x @ w).tanh().sum()

    def wasteful(x: torch.Tensor, w: torch.Tensor) -> torch.Tensor:
        unused = x @ w @ w  # computed, recorded in no output
        del unused
        return (x @ w).tanh().sum()

    return Case(lean, wasteful, (_randn(128 * k, 128, seed=21), _randn(128, 128, seed=22)),
                labels=("lean", "wasted matmul"))


# -- the cases that fooled the old verdicts --------------------------------------------------------------------------
fc1, fc2 = nn.Linear(16, 32), nn.Linear(32, 8)
lin1, lin2 = nn.Linear(64, 32), nn.Linear(32, 8)


def frozen_layer(k: int = 1) -> Case:
    """Layers reached through globals; B detaches fc1's weight (a frozen-layer bug): fc1.weight gets no gradient."""
    def a(x: torch.Tensor) -> torch.Tensor:
        return fc2(torch.relu(fc1(x))).sum()

    def b(x: torch.Tensor) -> torch.Tensor:
        return fc2(torch.relu(F.linear(x, fc1.weight.detach(), fc1.bias))).sum()

    return Case(a, b, (torch.randn(4 * k, 16, generator=_g(23)),), same=False, labels=("trained", "frozen fc1"))


def submodules(k: int = 1) -> Case:
    """Two submodules called from a function: their weights must be named lin1.* and lin2.* and never crossed."""
    def modules(x: torch.Tensor) -> torch.Tensor:
        return lin2(torch.relu(lin1(x))).sum()

    def functional(x: torch.Tensor) -> torch.Tensor:
        return F.linear(F.relu(F.linear(x, lin1.weight, lin1.bias)), lin2.weight, lin2.bias).sum()

    return Case(modules, functional, (torch.randn(8 * k, 64, generator=_g(24)),), labels=("modules", "functional"))


def bf16_layer_norm(k: int = 1) -> Case:
    """The maths runs in bfloat16; only the loss is cast to float32."""
    def hand(x: torch.Tensor, w: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        return _hand_layer_norm(x, w, b).float().square().mean()

    def fused(x: torch.Tensor, w: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        return F.layer_norm(x, (x.shape[-1],), w, b).float().square().mean()

    bf = torch.bfloat16
    return Case(hand, fused, (_randn(4 * k, 16, 64, seed=25, dtype=bf), _randn(64, seed=26, dtype=bf),
                              _randn(64, seed=27, dtype=bf)), labels=("hand bf16", "F.layer_norm bf16"))


def softmax_ones(k: int = 1) -> Case:
    """Backpropagating ones through a normalised output: the true gradient is 0, both sides hold rounding noise."""
    def builtin(x: torch.Tensor) -> torch.Tensor:
        return torch.softmax(x, -1)

    def by_hand(x: torch.Tensor) -> torch.Tensor:
        e = x.exp()
        return e / e.sum(-1, keepdim=True)

    return Case(builtin, by_hand, (_randn(8 * k, 50, seed=28),), labels=("softmax", "exp/sum"))


def layer_norm_ones(k: int = 1) -> Case:
    def builtin(x: torch.Tensor) -> torch.Tensor:
        return F.layer_norm(x, (x.shape[-1],))

    def formula(x: torch.Tensor) -> torch.Tensor:
        mu = x.mean(-1, keepdim=True)
        return (x - mu) / torch.sqrt((x - mu).pow(2).mean(-1, keepdim=True) + 1e-5)

    return Case(builtin, formula, (_randn(8 * k, 64, seed=29),), labels=("layer_norm", "formula"))


def gelu_tanh(k: int = 1) -> Case:
    def exact(x: torch.Tensor, w: torch.Tensor) -> torch.Tensor:
        return F.gelu(x @ w).sum()

    def approx(x: torch.Tensor, w: torch.Tensor) -> torch.Tensor:
        return F.gelu(x @ w, approximate="tanh").sum()

    return Case(exact, approx, (_randn(16 * k, 32, seed=30), _randn(32, 32, seed=31)), same=False,
                labels=("gelu", "gelu tanh"))


class Drifting(nn.Module):
    """A forward that updates its own weight in place (a running-average trick gone wrong)."""

    def __init__(self) -> None:
        super().__init__()
        self.weight = nn.Parameter(torch.randn(8, 8, generator=_g(32)))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        with torch.no_grad():
            self.weight.mul_(0.5)
        return (x @ self.weight).sum()


def mutating(k: int = 1) -> Case:
    m = Drifting()
    return Case(m, m, (torch.randn(4 * k, 8, generator=_g(33)).requires_grad_(),), labels=("drift", "drift again"))


REWRITES: Dict[str, Callable[..., Case]] = {
    "attention -> sdpa": attention_sdpa, "hand LayerNorm -> F.layer_norm": layer_norm, "einsum -> bmm": einsum_bmm,
    "unfold+matmul -> conv2d": unfold_conv, "gpt2 eager -> sdpa": gpt2_sdpa, "channels_last": channels_last,
    "loop -> cumsum": loop_cumsum, "dropped bias": dropped_bias, "relu -> silu": relu_silu, "identical": identical,
    "extra wasted matmul": wasted_matmul,
}
TRAPS: Dict[str, Callable[..., Case]] = {
    "frozen fc1 (closure)": frozen_layer, "submodules from a function": submodules,
    "bf16 LayerNorm": bf16_layer_norm, "softmax vs exp/sum, ones": softmax_ones,
    "layer_norm vs formula, ones": layer_norm_ones,
    "channels_last, 1 thread": lambda k=1: channels_last(k, threads=1),
    "gelu exact vs tanh": gelu_tanh, "in-place parameter update": mutating,
}

"""Models for the memory tests and bench: a chain whose saved activations are known by construction, GPT-2 from a
config, and a hand-written ResNet (conv/BN/residual blocks; torchvision is not used)."""
from __future__ import annotations

import gc
from typing import Any, Callable, Tuple

import torch
from torch import nn


def independent_peak(fn: Callable[[], Any]) -> int:
    """The CPU allocator's peak over ``fn()`` from torch.profiler's memory events summed by hand, without
    graphwidget. The sum starts at 0: a block allocated before the window and freed inside it (garbage of an earlier
    test collected mid-run) would pull it below the truth, so garbage is collected first and not during the window."""
    from torch.profiler import ProfilerActivity, profile
    gc.collect()
    gc.disable()
    try:
        with profile(activities=[ProfilerActivity.CPU], profile_memory=True) as prof:
            fn()
    finally:
        gc.enable()
    run = peak = 0
    for e in sorted((e for e in prof.profiler.kineto_results.events() if e.name() == "[memory]"),
                    key=lambda e: e.start_ns()):
        run += e.nbytes()
        peak = max(peak, run)
    return peak


class TanhChain(nn.Module):
    """``n`` layers of ``tanh(linear(x))``, width ``w``: each tanh saves its output, which the next linear saves too
    (one storage), and the first linear saves the input. Saved activations: ``n + 1`` tensors of ``batch * w``
    floats, known by construction."""

    def __init__(self, n: int = 6, w: int = 512) -> None:
        super().__init__()
        self.layers = nn.ModuleList([nn.Linear(w, w) for _ in range(n)])

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        for layer in self.layers:
            x = torch.tanh(layer(x))
        return x.sum()


class Block(nn.Module):
    def __init__(self, c_in: int, c_out: int, stride: int = 1) -> None:
        super().__init__()
        self.conv1 = nn.Conv2d(c_in, c_out, 3, stride, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(c_out)
        self.conv2 = nn.Conv2d(c_out, c_out, 3, 1, 1, bias=False)
        self.bn2 = nn.BatchNorm2d(c_out)
        self.short = None
        if stride != 1 or c_in != c_out:
            self.short = nn.Sequential(nn.Conv2d(c_in, c_out, 1, stride, bias=False), nn.BatchNorm2d(c_out))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        out = torch.relu(self.bn1(self.conv1(x)))
        out = self.bn2(self.conv2(out))
        return torch.relu(out + (x if self.short is None else self.short(x)))


class ResNet(nn.Module):
    def __init__(self, widths=(32, 64, 128), blocks: int = 2, classes: int = 10) -> None:
        super().__init__()
        self.stem = nn.Sequential(nn.Conv2d(3, widths[0], 3, 1, 1, bias=False), nn.BatchNorm2d(widths[0]), nn.ReLU())
        layers = []
        c = widths[0]
        for i, w in enumerate(widths):
            for j in range(blocks):
                layers.append(Block(c, w, 2 if (j == 0 and i > 0) else 1))
                c = w
        self.layers = nn.Sequential(*layers)
        self.head = nn.Linear(c, classes)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.layers(self.stem(x))
        return self.head(x.mean((2, 3)))


def resnet() -> ResNet:
    """In training mode, as a backward runs: batch norm normalises by the batch and saves its statistics."""
    torch.manual_seed(0)
    return ResNet().train()


class Funnel(nn.Module):
    """``tanh(linear)`` layers of different widths (64 → 256 → 1024 → 32), so the nodes hold different amounts at the
    peak: what the viewer's "alive at the peak" colour must tell apart."""

    def __init__(self) -> None:
        super().__init__()
        self.up = nn.Linear(64, 256)
        self.wide = nn.Linear(256, 1024)
        self.down = nn.Linear(1024, 32)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.tanh(self.down(torch.tanh(self.wide(torch.tanh(self.up(x)))))).pow(2).mean()


def gpt2_small() -> Tuple[nn.Module, torch.Tensor]:
    """GPT-2 from a config (4 layers, width 128; no weights downloaded) in eager attention, and a batch of 8 x 128
    token ids: the model the memory tests and bench checkpoint. Needs transformers."""
    import warnings

    import transformers
    transformers.logging.set_verbosity_error()
    from transformers import GPT2Config, GPT2LMHeadModel
    torch.manual_seed(0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        cfg = GPT2Config(n_layer=4, n_embd=128, n_head=4, n_positions=128, vocab_size=512, attn_pdrop=0,
                         resid_pdrop=0, embd_pdrop=0, bos_token_id=0, eos_token_id=0, use_cache=False)
        model = GPT2LMHeadModel(cfg)
    model.config._attn_implementation = "eager"
    ids = torch.randint(0, 512, (8, 128), generator=torch.Generator().manual_seed(1))
    return model, ids

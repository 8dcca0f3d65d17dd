"""Where the memory peak is and what it is made of (issue 33): a forward peak made by an op that creates no graph node
is placed at that op's line and module; the peak's parts add up to it, with what else is resident listed apart; the
checkpoint advice ties identical blocks, always lists the largest saving and states its recompute interval.

Truth is independent: the allocator's peak summed by hand from torch.profiler's memory events, the line found by
reading the model's source, the saving of a module's activations known by construction.
"""
from __future__ import annotations

import inspect

import torch
from memory_models import independent_peak
from torch import nn

import graphwidget as gw
from graphwidget.analysis.memory_checkpoints import checkpoint_candidates

TEMP = 8 * 1024 * 1024  # float32 elements: a 32 MiB temporary


class Scorer(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.lin = nn.Linear(64, 64)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        with torch.no_grad():
            s = torch.ones(TEMP).mul_(0.5).sum()  # the temporary: no node
        return self.lin(x) * s


class WithTemporary(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.scorer = Scorer()
        self.head = nn.Linear(64, 1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.head(self.scorer(x) * 2).sum()


def _line_of(fn, text: str) -> int:
    lines, first = inspect.getsourcelines(fn)
    return first + next(i for i, t in enumerate(lines) if text in t)



def test_a_forward_peak_made_by_a_no_grad_temporary_is_placed_at_its_line_and_module():
    torch.manual_seed(0)
    m, x = WithTemporary(), torch.randn(32, 64)
    g = gw.profile(m, x, repeat=1, warmup=0, memory=True)
    rep = g.memory()
    peak = rep.peak
    assert peak["phase"] == "forward"
    assert peak["module"] == "scorer"
    assert peak["source_line"].endswith(f"test_memory_place.py:{_line_of(Scorer.forward, 'torch.ones(TEMP)')}")
    # the op whose allocation first reached the peak (the temporary is alive through the whole line): no node
    assert peak["node"] is None and peak["call"] in ("Tensor.mul_", "Tensor.sum")
    assert f"{peak['call']} (no graph node), module scorer" in rep.headline()
    m.zero_grad(set_to_none=True)
    hand = independent_peak(lambda: m(x).backward())
    assert TEMP * 4 <= peak["bytes"] and abs(peak["bytes"] - hand) <= 0.05 * hand, (peak["bytes"], hand)


def test_a_peak_made_by_a_graph_op_names_that_node():
    class Wide(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.up = nn.Linear(64, 64 * 1024)

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return (self.up(x) + 1).sum()  # the add's output beside the linear's: the peak, in the forward

    class Outer(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.block = Wide()

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return self.block(x)

    torch.manual_seed(0)
    g = gw.profile(Outer(), torch.randn(256, 64), repeat=1, warmup=0, memory=True)
    peak = g.memory().peak
    assert (peak["phase"], peak["source"]) == ("forward", "allocator")
    # the linear's output and the add's (64 MiB each) are both alive when the add allocates: the peak is its node
    assert peak["node"] is not None and peak["module"] == "block"
    assert g.node(peak["node"])["op"] == "AddBackward0"
    assert peak["source_line"].endswith(f":{_line_of(Wide.forward, 'self.up(x) + 1')}")


def test_the_parts_of_the_peak_add_up_to_it_and_parameters_are_listed_apart():
    torch.manual_seed(0)
    m, x = WithTemporary(), torch.randn(32, 64)
    peak = gw.profile(m, x, repeat=1, warmup=0, memory=True).memory().peak
    assert sum(peak["by_kind"].values()) + peak["overcount_bytes"] == peak["bytes"]
    assert "parameters" not in peak["by_kind"]
    assert peak["resident"]["parameters"] == sum(p.numel() * 4 for p in m.parameters())


class Block(nn.Module):
    def __init__(self, d: int) -> None:
        super().__init__()
        self.f1, self.f2 = nn.Linear(d, 4 * d), nn.Linear(4 * d, d)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x + self.f2(torch.tanh(self.f1(x)))


class Stack(nn.Module):
    def __init__(self, d: int = 64, n: int = 6) -> None:
        super().__init__()
        self.layers = nn.ModuleList(Block(d) for _ in range(n))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        for layer in self.layers:
            x = layer(x)
        return x.sum()


def test_checkpoint_advice_ties_identical_blocks_and_keeps_the_largest_saving():
    torch.manual_seed(0)
    m, x = Stack(), torch.randn(512, 64)
    orders = []
    for _ in range(2):
        g = gw.profile(m, x, repeat=5, warmup=1, memory=True)
        every = checkpoint_candidates(g, top=0)
        top = checkpoint_candidates(g, top=3)
        best = max(every, key=lambda r: r["saving_bytes"])
        assert best["saving_bytes"] in [r["saving_bytes"] for r in top]  # never cut off
        for r in every:
            lo, hi = r["recompute_interval"]
            assert lo <= hi and r["recompute_ms"] > 0
        # identical single blocks: one recompute time, ordered by index
        singles = [r for r in every if r["class"] == "Block" and len(r["modules"]) == 1]
        by_saving = {}
        for r in singles:
            by_saving.setdefault(r["saving_bytes"], []).append(r)
        for rows in by_saving.values():
            assert len({r["recompute_ms"] for r in rows}) == 1
        orders.append([r["label"] for r in every if r["class"] == "Block"])
    # the same blocks in the same order in both runs, whatever the timing noise (savings are exact bytes)
    assert sorted(orders[0]) == sorted(orders[1])

"""Ctrl-C anywhere inside gw.compare leaves nothing behind: no mode, hook or patch of ours, the caller's parameters,
buffers, inputs, RNG state, grad mode and default dtype as they were.

As for trace and profile (tests/test_sessions.py): a line tracer raises KeyboardInterrupt at the k-th line of
graphwidget's own code that compare runs, for every k at its start and end and a sample in between. Before, about one
interrupt in a hundred left the torch-function mode, the global module hooks and the Function.apply patch installed
(the recorder was not closed in a finally), and an interrupt during compare's own clean-up left BatchNorm's running
statistics changed or grad mode off.
"""
from __future__ import annotations

from typing import Any

import pytest
import torch
from test_sessions import clean_state, count_lines, interrupt_at

import graphwidget as gw
from graphwidget.experiment import speed


class Net(torch.nn.Module):
    """A module with a buffer its forward updates (BatchNorm) and a weight the forward updates in place."""

    def __init__(self) -> None:
        super().__init__()
        self.lin = torch.nn.Linear(4, 4)
        self.bn = torch.nn.BatchNorm1d(4)
        self.scale = torch.nn.Parameter(torch.ones(4))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        with torch.no_grad():
            self.scale.mul_(1.5)
        return torch.nn.functional.dropout(self.bn(self.lin(x)) * self.scale, 0.25).square().sum()


def snapshot(net: Net, x: torch.Tensor) -> Any:
    return ([t.detach().clone() for t in list(net.parameters()) + list(net.buffers())], x.detach().clone(),
            torch.get_rng_state(), torch.get_default_dtype())


def same(a: Any, b: Any) -> bool:
    return (all(torch.equal(p, q) for p, q in zip(a[0], b[0])) and torch.equal(a[1], b[1])
            and torch.equal(a[2], b[2]) and a[3] == b[3])


@pytest.mark.slow
@pytest.mark.parametrize("profile", [False, True])
def test_an_interrupt_at_any_line_of_compare_leaves_nothing_behind(profile: bool, monkeypatch: Any) -> None:
    # Timing decides how long it samples; fixed here so every run takes the same lines: three calls per
    # measurement, and a budget spent at once (six rounds, the fewest it stops at).
    monkeypatch.setattr(speed, "TARGET_MS", 0.0)
    torch.manual_seed(0)
    net = Net()
    x = torch.randn(6, 4, requires_grad=True)

    def call() -> Any:
        return gw.compare(net, net, x, profile=profile, repeat=1, budget=1e-6, threads=1, advise=False)

    call()  # one-time set-up (caches, lazy imports) out of the way
    before = snapshot(net, x)
    total = count_lines(call)
    assert total > 200 and same(snapshot(net, x), before)
    # every line of the start and of the end (set-up, clean-up), a sample in between
    edge = 120 if profile else 300
    step = max(5, (total - 2 * edge) // (100 if profile else 400))
    ks = sorted(set(range(1, edge + 1)) | set(range(edge + 1, total - edge, step))
                | set(range(max(1, total - edge), total + 1)))
    interrupted = 0
    for k in ks:
        where = interrupt_at(k, call)
        interrupted += where is not None
        assert clean_state() == [], (k, where, clean_state())
        assert same(snapshot(net, x), before), (k, where)
        assert x.grad is None and all(p.grad is None for p in net.parameters()), (k, where)
    # a call's line count varies a little (garbage collection, caches): the last few lines may never be reached
    # on a loaded machine the timer thread starts late and some interrupts land after a short call: most, not all
    assert interrupted >= 0.9 * len(ks), (interrupted, len(ks))


def test_an_interrupt_at_any_line_of_the_float64_run_leaves_nothing_behind() -> None:
    # The float64 reference run pushes a torch-function mode and widens the inputs in place: an interrupt on the line
    # that leaves a block (Python reports the way out as a line of its own) once left the mode on the stack.
    from graphwidget.experiment.reference import run_float64
    net = torch.nn.Sequential(torch.nn.Linear(4, 4), torch.nn.Tanh())
    x = torch.randn(3, 4, requires_grad=True)
    tensors = [x, *net.parameters()]

    def call() -> Any:
        return run_float64(lambda t: net(t).sum(), (x,), {}, tensors)

    call()
    total = count_lines(call)
    assert total > 10
    for k in range(1, total + 1):
        where = interrupt_at(k, call)
        assert not torch._C._len_torch_function_stack(), (k, where)
        assert torch.get_default_dtype() == torch.float32, (k, where)
        assert all(t.dtype == torch.float32 for t in tensors), (k, where)
        assert clean_state() == [], (k, where, clean_state())


def test_compare_runs_reentrant_checkpointing_and_leaves_the_callers_grad() -> None:
    # compare used torch.autograd.grad, which reentrant checkpointing refuses: such models raised a CompareError.
    # Now their gradients come from .backward() (every reachable .grad saved and put back), the blocks' parameters
    # included, and judged against the float64 run as any other.
    from test_sessions import Blocks, Caller

    class Plain(torch.nn.Module):
        def __init__(self, m: Blocks) -> None:
            super().__init__()
            self.m = m

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            m = self.m
            return m.c(torch.sigmoid(m.b(torch.tanh(m.a(x))))).square().sum()

    class Changed(Plain):
        def forward(self, x: torch.Tensor) -> torch.Tensor:
            from torch.utils.checkpoint import checkpoint
            m = self.m
            h = checkpoint(lambda t: torch.tanh(m.a(t) * 1.01), x, use_reentrant=True)  # inside the block
            return m.c(torch.sigmoid(m.b(h))).square().sum()

    torch.manual_seed(0)
    model, x = Blocks(), torch.randn(3, 4, requires_grad=True)
    caller = Caller(model, x)
    d = gw.compare(Plain(model), model, x)
    assert d.equivalent is True
    names = [t["name"] for t in d.equivalence["tensors"]]
    assert "grad m.a.weight" in names and "grad m.b.bias" in names, names  # the checkpointed blocks' parameters
    assert caller.state() == "before" and clean_state() == []
    assert gw.compare(Plain(model), Changed(model), x).equivalent is False  # a change inside a block is caught
    assert caller.state() == "before"


@pytest.mark.slow
def test_a_real_ctrl_c_at_a_random_moment_of_compare_leaves_nothing_behind() -> None:
    from test_sessions import Blocks, Caller, hammer
    torch.manual_seed(0)
    model, x = Blocks(), torch.randn(3, 4, requires_grad=True)
    caller = Caller(model, x)
    counts = hammer(lambda: gw.compare(model, model, x, advise=False), caller, 300, changes_grads=False)
    assert counts["in graphwidget"] >= 300 and counts["left behind"] == 0, counts

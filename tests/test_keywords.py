"""A keyword that is both an option of an entry point and a parameter of the user's function is refused, naming it,
before anything runs (issue 30): ``gw.profile(f, x, repeat=3)`` with ``def f(x, repeat=1)`` used to run ``f`` once
per run with its own default and say nothing."""
from __future__ import annotations

import functools
import inspect

import pytest
import torch

import graphwidget as gw


class Calls:
    """A function with keywords named like graphwidget's options, counting its calls."""

    def __init__(self) -> None:
        self.n = 0

    def f(self, x: torch.Tensor, repeat: int = 1, title: str = "", label: str = "") -> torch.Tensor:
        self.n += 1
        y = x
        for _ in range(repeat):
            y = y * 2
        return y.sum()


@pytest.mark.parametrize("entry, option", [
    (lambda f, x: gw.profile(f, x, repeat=3), "repeat"),
    (lambda f, x: gw.trace(f, x, title="t"), "title"),
    (lambda f, x: gw.compare(f, f, x, repeat=2), "repeat"),
    (lambda f, x: gw.compare({"a": f, "b": f}, x, repeat=2), "repeat"),
    (lambda f, x: gw.record(f, x, label="mine"), "label"),
])
def test_a_keyword_both_an_option_and_a_parameter_is_refused_before_anything_runs(entry, option) -> None:
    c, x = Calls(), torch.randn(3, requires_grad=True)
    with pytest.raises(TypeError) as info:
        entry(c.f, x)
    msg = str(info.value)
    assert f"'{option}' is both an option of graphwidget." in msg and "a parameter of f" in msg, msg
    assert f"functools.partial(f, {option}=...)" in msg and "nothing was run" in msg, msg
    assert c.n == 0 and x.grad is None


def test_bound_with_partial_the_function_gets_its_keyword_and_the_option_stays_the_option() -> None:
    c, x = Calls(), torch.randn(3, requires_grad=True)
    g = gw.profile(functools.partial(c.f, repeat=3), x)
    assert len(g.nodes(op="MulBackward0")) == 3  # the function's repeat
    x.grad = None
    g = gw.profile(functools.partial(c.f, repeat=1), x, repeat=2, warmup=0)
    assert len(g.nodes(op="MulBackward0")) == 1 and g.meta["timing"]["repeat"] == 2  # and profile's own
    assert torch.equal(x.grad, torch.full((3,), 2.0))  # one plain backward's gradient
    assert gw.trace(functools.partial(c.f, title="x"), x, title="mine").meta["title"] == "mine"


def test_a_module_whose_forward_names_an_option_is_refused_and_kwargs_only_functions_are_not() -> None:
    class Scaled(torch.nn.Module):
        def forward(self, x: torch.Tensor, memory: bool = False) -> torch.Tensor:
            return (x * (3 if memory else 2)).sum()

    x = torch.randn(3, requires_grad=True)
    with pytest.raises(TypeError, match="'memory' is both an option of graphwidget.trace and a parameter of Scaled"):
        gw.trace(Scaled(), x, memory=True)

    def loose(x: torch.Tensor, **kw: object) -> torch.Tensor:  # its keywords have no names to clash with
        return (x * 2).sum()

    assert len(gw.profile(loose, x, repeat=2, warmup=0).nodes(op="MulBackward0")) == 1
    assert len(gw.trace(Scaled(), x, title="plain").nodes(op="MulBackward0")) == 1  # no clash: runs


def test_ranks_is_an_option_too_and_signatures_still_read_as_before() -> None:
    def step(x: torch.Tensor, ranks: int = 1) -> torch.Tensor:
        return (x * ranks).sum()

    with pytest.raises(TypeError, match="'ranks' is both an option of graphwidget.profile"):
        gw.profile(step, torch.randn(2, requires_grad=True), ranks="all")
    # what help() and editors show is the entry point's own signature, not the check's (*args, **kwargs)
    assert "repeat" in inspect.signature(gw.profile).parameters
    assert list(inspect.signature(gw.compare.__wrapped__ if hasattr(gw.compare, "__wrapped__") else gw.compare)
                .parameters)[0] == "fn_a"
    assert "label" in inspect.signature(gw.record).parameters and "title" in inspect.signature(gw.trace).parameters

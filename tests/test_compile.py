"""torch.compile under gw.trace and gw.profile: graphwidget's instrumentation stays out of Dynamo's sight.

Before (issue 10): Dynamo traced into the torch-function mode, the ``Function.apply`` wrapper and the module hooks,
broke the user's graph (several compiled regions instead of one, many more nodes than ``capture`` sees) and
``profile(repeat>1)`` failed with "CompiledFunctionBackward with 3 inputs vs CompiledFunctionBackward with 3
inputs" (node types compared by identity). Now a compiled region is one ``CompiledFunctionBackward`` node, as
``capture`` shows it, with its source line and forward/backward time, and no graph break is added. A
``torch.compile(module)``, a ``module.compile()`` or a ``torch.compile(function)`` handed to trace/profile runs the
user's own compiled code: nothing is compiled again. A compiled function called from inside ``fn`` is compiled once
more for graphwidget's mode (the same graph), then never again.

CPU, small models: the first compile takes a few seconds.
"""
from __future__ import annotations

from typing import Any, Dict, List

import pytest
import torch
from gw_functions import Square

import graphwidget as gw
from graphwidget.profiling.hooks import Run, instrument, same_structure

dynamo = pytest.importorskip("torch._dynamo")
from torch._dynamo.utils import counters  # noqa: E402

# Every test here is slow (a first torch.compile in a process costs seconds: Dynamo and Inductor warm up, Inductor
# runs g++ on a cold cache). Under pytest-xdist one worker runs the file: it pays that warm-up and builds the module
# fixture once, instead of each worker doing it; Dynamo's counters are process-wide anyway.
pytestmark = pytest.mark.xdist_group("torch-compile")

COMPILED = "CompiledFunctionBackward"


class Net(torch.nn.Module):
    """Two linear layers, a custom autograd.Function inside the compiled region, optionally a graph break."""

    def __init__(self, graph_break: bool = False) -> None:
        super().__init__()
        self.a = torch.nn.Linear(8, 16)
        self.b = torch.nn.Linear(16, 4)
        self.graph_break = graph_break

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = Square.apply(torch.relu(self.a(x)))
        if self.graph_break:
            torch._dynamo.graph_break()
        return self.b(h).pow(2).sum()


def ops(g: Any) -> List[str]:
    return sorted(d["op"] for _, d in g.nx.nodes(data=True))


def grads(m: torch.nn.Module) -> List[torch.Tensor]:
    out = [p.grad.clone() for p in m.parameters()]
    m.zero_grad(set_to_none=True)
    return out


def compiles() -> Dict[str, int]:
    """Dynamo's process-wide counters that change when anything is (re)compiled or a graph is broken."""
    return {"graphs": counters["stats"]["unique_graphs"], "breaks": sum(counters["graph_break"].values()),
            "frames": counters["frames"]["total"]}


@pytest.fixture(scope="module")
def compiled() -> Dict[str, Any]:
    torch._dynamo.reset()
    torch.manual_seed(0)
    m = Net()
    cm = torch.compile(m)
    x = torch.randn(5, 8)
    out = cm(x)  # the user's own compile, outside graphwidget
    cap = gw.capture(out)
    out.backward()
    return {"m": m, "cm": cm, "x": x, "capture": cap, "ref": grads(m)}


@pytest.mark.slow
def test_trace_sees_one_compiled_region_like_capture(compiled: Dict[str, Any]) -> None:
    m, cm, x, cap = compiled["m"], compiled["cm"], compiled["x"], compiled["capture"]
    assert ops(cap).count(COMPILED) == 1
    before = compiles()
    g = gw.trace(cm, x)
    assert compiles() == before, "trace must run the user's compiled program: no recompile, no graph break"
    assert len(g) == len(cap) and ops(g) == ops(cap)
    assert ops(g).count(COMPILED) == 1
    n = g.nodes(op=COMPILED)[0]
    region = g.node(n)
    # one node with the region's inputs and outputs, attributed to the line that called the compiled module
    assert region["source"] and region["source"].endswith(f"test_compile.py:{line_of('g = gw.trace(cm, x)')}")
    assert sorted(g.nx.nodes[s]["op"] for s in g.nx.predecessors(n)) == ["AccumulateGrad"] * 4  # inputs: 4 params
    assert len(region["outputs"]) == 1  # its output: the loss
    g.output.backward()
    assert all(torch.equal(a, b) for a, b in zip(compiled["ref"], grads(m))), "gradients changed"
    g2 = gw.trace(cm, x)
    assert compiles() == before
    assert ops(g2) == ops(cap)
    g2.output.backward()
    assert all(torch.equal(a, b) for a, b in zip(compiled["ref"], grads(m)))


def line_of(text: str) -> int:
    with open(__file__) as f:
        return next(i for i, line in enumerate(f, 1) if text in line and "line_of" not in line)


@pytest.mark.slow
def test_profile_repeats_a_compiled_model(compiled: Dict[str, Any]) -> None:
    m, cm, x, cap = compiled["m"], compiled["cm"], compiled["x"], compiled["capture"]
    before = compiles()
    g = gw.profile(cm, x, repeat=3, warmup=1)
    assert compiles() == before, "profile's runs must run the program already compiled, not compile new ones"
    assert len(g) == len(cap) and ops(g) == ops(cap)
    region = g.node(g.nodes(op=COMPILED)[0])
    assert region["fwd_ms"] is not None and region["fwd_ms"] > 0
    assert region["bwd_ms"] is not None and region["bwd_ms"] > 0
    assert all(torch.equal(a, b) for a, b in zip(compiled["ref"], grads(m))), "gradients changed"


@pytest.mark.slow
def test_graph_breaks_of_the_user_are_kept_and_none_added() -> None:
    torch.manual_seed(1)
    m = Net(graph_break=True)
    cm = torch.compile(m)
    x = torch.randn(5, 8)
    out = cm(x)
    cap = gw.capture(out)
    out.backward()
    ref = grads(m)
    assert ops(cap).count(COMPILED) == 2  # the user's graph break: two regions
    breaks = compiles()["breaks"]
    g = gw.trace(cm, x)
    assert compiles()["breaks"] - breaks <= 1  # at most the user's own break, seen again by the one recompile
    assert ops(g) == ops(cap)
    g.output.backward()
    assert all(torch.equal(a, b) for a, b in zip(ref, grads(m)))
    p = gw.profile(cm, x, repeat=3)
    assert ops(p) == ops(cap)
    assert all(torch.equal(a, b) for a, b in zip(ref, grads(m)))


@pytest.mark.slow
def test_compiled_regions_of_the_same_name_are_the_same_structure() -> None:
    """Each compile makes its own CompiledFunctionBackward class: profile compares node types by name."""
    w = torch.randn(4, requires_grad=True)
    f1 = torch.compile(lambda t: (t * t).sum())
    f2 = torch.compile(lambda t: (t * t).sum())
    r1, r2 = Run(), Run()
    # The outputs are kept: on torch < 2.5 a custom Function's grad_fn (its ctx) holds its node weakly, so the
    # grad_fn of a dropped output has no next_functions left to walk.
    o1, o2 = f1(w), f2(w)
    instrument([o1.grad_fn], None, r1)
    instrument([o2.grad_fn], None, r2)
    assert r1.types[0].__name__ == r2.types[0].__name__ == COMPILED
    assert r1.types[0] is not r2.types[0]
    assert same_structure(r1, r2)


@pytest.mark.slow
@pytest.mark.parametrize("how", ["function", "module.compile()"])
def test_compiled_callables_handed_to_trace_run_as_compiled(how: str) -> None:
    torch.manual_seed(2)
    m = Net()
    if how == "function":
        fn = torch.compile(lambda t: m(t))
    else:
        m.compile()
        fn = m
    x = torch.randn(5, 8)
    out = fn(x)
    cap = gw.capture(out)
    out.backward()
    ref = grads(m)
    before = compiles()
    g = gw.trace(fn, x)
    p = gw.profile(fn, x, repeat=3)
    assert compiles() == before
    assert ops(g) == ops(p) == ops(cap) and ops(g).count(COMPILED) == 1
    assert p.node(p.nodes(op=COMPILED)[0])["fwd_ms"] > 0
    assert all(torch.equal(a, b) for a, b in zip(ref, grads(m)))


@pytest.mark.slow
def test_compiled_function_called_inside_fn_compiles_once_more_then_never() -> None:
    torch.manual_seed(3)
    m = Net()
    cfn = torch.compile(lambda t: m(t))
    x = torch.randn(5, 8)

    def loss(t: torch.Tensor) -> torch.Tensor:
        return cfn(t) * 2

    out = loss(x)
    cap = gw.capture(out)
    out.backward()
    ref = grads(m)
    before = compiles()
    g = gw.trace(loss, x)
    once = compiles()
    assert once["breaks"] == before["breaks"] and once["graphs"] - before["graphs"] <= 1
    assert ops(g) == ops(cap) and ops(g).count(COMPILED) == 1
    assert g.node(g.nodes(op=COMPILED)[0])["source"] is not None
    g.output.backward()
    assert all(torch.equal(a, b) for a, b in zip(ref, grads(m)))
    p = gw.profile(loss, x, repeat=3)
    assert compiles() == once
    assert ops(p) == ops(cap)
    assert all(torch.equal(a, b) for a, b in zip(ref, grads(m)))

"""gw.compare's divergence search: where two implementations part (graphwidget/experiment/divergence.py), on the
per-node values of graphwidget/experiment/values.py. Real models built here; every verdict is checked against
float64 truth computed independently of the search."""
from __future__ import annotations

import torch

import graphwidget as gw
from graphwidget.experiment.divergence import find_divergence
from graphwidget.experiment.values import Budget, SideValues, digest


def _line(fn, needle: str) -> str:
    """``file.py:N`` of the line of ``fn``'s source holding ``needle`` (where a divergence must point)."""
    import inspect
    lines, start = inspect.getsourcelines(fn)
    for k, text in enumerate(lines):
        if needle in text:
            return f"{inspect.getsourcefile(fn).split('/')[-1]}:{start + k}"
    raise AssertionError(f"{needle!r} not in {fn.__name__}")


def _tanh(x, w):
    h = x @ w
    h = torch.tanh(h)
    return (h * h).sum()


def _gelu(x, w):
    h = x @ w
    h = torch.nn.functional.gelu(h)
    return (h * h).sum()


def test_side_values_round_trip_without_pickle():
    v = SideValues()
    t = torch.randn(3, 4)
    v.put("fwd", 5, 0, t)
    v.put("grad64", 2, 1, t.double())
    small = Budget(0)
    v.put("fwd64", 7, 0, torch.randn(1000), small)
    flat = v.to_tensors()
    assert set(flat) == {"fwd/5/0", "grad64/2/1", "digest/fwd64/7/0"}
    back = SideValues.from_tensors(flat)
    assert torch.equal(back.fwd[(5, 0)], t) and torch.equal(back.grad64[(2, 1)], t.double())
    d, exact = back.get("fwd64", 7)
    assert not exact and d.shape[0] == 2 + 256 and small.digested == 1
    assert torch.equal(digest(torch.arange(10.0))[2:], torch.arange(10.0, dtype=torch.float64))


def test_search_works_on_values_alone():
    """find_divergence reads only graphs, values and the matching: values built by hand (as a recording holds them)
    give the answer."""
    x = torch.randn(4, 4, requires_grad=True)
    ga, gb = gw.capture((x.exp() * 2).sum()), gw.capture((x.exp() * 3).sum())
    d = gw.diff(ga, gb)
    mul = next(n for n in ga.nx if ga.node(n)["op"] == "MulBackward0")
    exp = next(n for n in ga.nx if ga.node(n)["op"] == "ExpBackward0")
    va, vb = SideValues(), SideValues()
    e = x.detach().exp()
    for v, k in ((va, 2.0), (vb, 3.0)):
        v.put("fwd", exp, 0, e)
        v.put("fwd64", exp, 0, e.double())
        v.put("fwd", mul, 0, e * k)
        v.put("fwd64", mul, 0, e.double() * k)
    vb2 = SideValues.from_tensors(vb.to_tensors())
    first, found = find_divergence(ga, va, gb, vb2, d.matched)
    assert first is not None and first["a"] == mul and first["b"] == d.counterpart(mul)
    assert [r["a"] for r in found] == [mul]


def test_changed_op_is_the_first_divergence_and_search_reruns_from_values():
    torch.manual_seed(0)
    x, w = torch.randn(8, 16, requires_grad=True), torch.randn(16, 16, requires_grad=True)
    d = gw.compare(_tanh, _gelu, x, w)
    assert d.equivalent is False
    div = d.divergence
    assert div is not None and div["phase"] == "forward" and not div["inherited"]
    assert div["source_a"].endswith(_line(_tanh, "tanh(h)")) and div["source_b"].endswith(_line(_gelu, "gelu(h)"))
    assert d.a.node(div["region_a"][0])["op"] == "TanhBackward0"
    assert all(r["inherited"] for r in d.divergences[1:])
    same = gw.compare(_tanh, _tanh, x, w)
    assert same.equivalent and same.divergence is None and same.divergences == []

"""gw.compare's verdicts and isolation: which node fields count as a change and when times differ, the speed verdict
read off a ratio's interval, a changed maths flagged loudly with dtype-aware tolerances, the caller's tensors, grads,
buffers and RNG left alone, per-phase verdicts from plain runs, and errors that say what was wrong. Real torch
throughout; no timing assertions (speed lives in tests/bench). The matching and the document: tests/test_diff.py."""
from __future__ import annotations

from typing import List

import pytest
import torch
import torch.nn.functional as F

import graphwidget as gw
from graphwidget.analysis.diff.fields import changed_fields, times_differ
from graphwidget.analysis.diff.verdicts import speed_verdict
from graphwidget.experiment.compare import CompareError

EX = gw.examples


# -- fields ---------------------------------------------------------------------------------------------------------
def test_changed_fields_and_the_time_noise_rule() -> None:
    base = {"op": "MulBackward0", "outputs": [{"shape": [2], "dtype": "float32", "device": "cpu"}], "saved": [],
            "attrs": {}, "saved_bytes": 0, "grad_bytes": 8, "tensor": None, "out_stride": [[1]],
            "fwd_ms": 1.0, "bwd_ms": 1.0, "source": "a.py:1"}
    # where it was made never counts, and neither do times alone (a node with the same tensors does the same work)
    assert changed_fields(base, dict(base, source="b.py:9", fwd_ms=1.2, bwd_ms=9.0)) == []
    assert changed_fields(base, dict(base, outputs=[{"shape": [4], "dtype": "float32", "device": "cpu"}],
                                     grad_bytes=16, out_stride=[[2]])) == ["outputs", "out_stride", "grad_bytes"]
    assert changed_fields(base, dict(base, out_stride=None)) == []  # an untraced side has nothing to compare
    assert not times_differ(0.002, 0.004)  # 2x, but 2 µs: below the floor
    assert times_differ(1.0, 1.6) and not times_differ(1.0, 1.4) and not times_differ(None, 3.0)


def test_speed_verdict_reads_the_interval_and_the_band() -> None:
    assert speed_verdict(0.31, 0.28, 0.35) == "faster"
    assert speed_verdict(1.2, 1.05, 1.3) == "slower"
    assert speed_verdict(0.44, 0.27, 1.08) == "not enough evidence"  # a point estimate of 0.44 is not a speed-up
    assert speed_verdict(1.0, 0.97, 1.03) == "same speed"  # wholly inside ±5 %
    assert speed_verdict(0.97, 0.96, 0.98) == "same speed"  # measurably faster, but by less than the band
    assert speed_verdict(0.97, 0.94, 0.99) == "not enough evidence"  # straddles the band's edge: sample more
    assert speed_verdict(0.97, 0.96, 0.98, band=0.01) == "faster"  # a tighter band makes 3 % count


# -- equivalence ----------------------------------------------------------------------------------------------------
def homography_wrong_index(img, homo, cx, cy, scale):
    """The broadcast version with one index typo (h[:, 0, 1] where h[:, 1, 0] belongs): different maths."""
    B, _, H, W = img.shape
    ys, xs = torch.linspace(-1, 1, H), torch.linspace(-1, 1, W)
    gy, gx = torch.meshgrid(ys, xs, indexing="ij")
    g = torch.stack((gx, gy), -1).reshape(1, H * W, 2) * scale.view(B, 1, 1) / 2
    g = g + torch.stack((cx, cy), 1).unsqueeze(1)
    h = homo
    den = h[:, 2, 0].unsqueeze(1) * g[:, :, 0] + h[:, 2, 1].unsqueeze(1) * g[:, :, 1] + h[:, 2, 2].unsqueeze(1)
    u = (h[:, 0, 0].unsqueeze(1) * g[:, :, 0] + h[:, 0, 1].unsqueeze(1) * g[:, :, 1] + h[:, 0, 2].unsqueeze(1)) / den
    v = (h[:, 0, 1].unsqueeze(1) * g[:, :, 0] + h[:, 1, 1].unsqueeze(1) * g[:, :, 1] + h[:, 1, 2].unsqueeze(1)) / den
    return F.grid_sample(img, torch.stack((u, v), 2).view(B, H, W, 2), align_corners=False)


def test_a_rewrite_that_changes_the_maths_is_flagged_loudly() -> None:
    inp = EX.homography_inputs(batch=2, height=8, width=8)
    d = gw.compare(EX.homography_repeat, homography_wrong_index, **inp, labels=("repeat", "typo"))
    assert d.equivalent is False
    bad = {t["name"] for t in d.equivalence["tensors"] if not t["allclose"]}
    assert {"output", "grad homo"} <= bad
    assert d.summary()["equivalence"]["equivalent"] is False
    lines = d.report().splitlines()
    assert lines[0] == d.sentence() and "NOT EQUIVALENT, the maths changed (output differs in float64 by" in lines[0]
    assert lines[1].startswith("!! NOT EQUIVALENT")
    assert "NOT EQUIVALENT" in repr(d)
    # the good rewrite passes, with its (tiny, summation-order) errors reported
    ok = gw.compare(EX.homography_repeat, EX.homography_broadcast, **inp)
    assert ok.equivalent is True
    rows = {t["name"]: t for t in ok.equivalence["tensors"]}
    assert set(rows) == {"output", "grad img", "grad homo"}
    assert rows["grad homo"]["max_rel"] < 1e-4 and rows["grad homo"]["shape_a"] == [2, 3, 3]


def test_dtype_aware_tolerance() -> None:
    x = torch.randn(64, 64, dtype=torch.float64, requires_grad=True)
    close32 = gw.compare(lambda t: (t.float() @ t.float()).sum(), lambda t: (t.float().T @ t.float().T).T.sum(), x)
    assert close32.equivalent is True  # float32 matmul in another order: within float32's tolerance
    d = gw.compare(lambda t: (t @ t).sum(), lambda t: (t @ t).sum() * (1 + 1e-5), x)
    assert d.equivalent is False  # 1e-5 is far outside float64's tolerance ...
    d16 = gw.compare(lambda t: (t.half() * 2).float().sum(), lambda t: (t.half() * 2).float().sum() * (1 + 1e-5), x)
    assert d16.equivalent is True  # ... and inside float16-level noise


# -- isolation ------------------------------------------------------------------------------------------------------
class BNNet(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.lin = torch.nn.Linear(5, 5)
        self.bn = torch.nn.BatchNorm1d(5)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.nn.functional.dropout(self.bn(self.lin(x)), 0.5).square().sum()


@pytest.mark.parametrize("profile", [False, True])
def test_compare_leaves_the_callers_tensors_grads_buffers_and_rng_alone(profile: bool) -> None:
    torch.manual_seed(0)
    net = BNNet()
    x = torch.randn(6, 5, requires_grad=True)
    x_before = x.detach().clone()
    grad_obj = torch.full((5, 5), 7.0)
    net.lin.weight.grad = grad_obj
    stats = net.bn.running_mean.clone(), net.bn.num_batches_tracked.clone()
    rng = torch.get_rng_state()
    d = gw.compare(net, net, x, profile=profile, repeat=3)
    assert x.grad is None and torch.equal(x, x_before)
    assert net.lin.weight.grad is grad_obj and torch.equal(grad_obj, torch.full((5, 5), 7.0))
    assert net.lin.bias.grad is None
    assert torch.equal(net.bn.running_mean, stats[0]) and torch.equal(net.bn.num_batches_tracked, stats[1])
    assert torch.equal(torch.get_rng_state(), rng)
    # both sides started from the same RNG state and buffers: dropout drew the same mask, so A == B exactly
    assert d.equivalent is True and all(t["max_abs"] == 0.0 for t in d.equivalence["tensors"])
    assert {t["name"] for t in d.equivalence["tensors"]} == {"output", "grad arg0", "grad lin.weight",
                                                             "grad lin.bias", "grad bn.weight", "grad bn.bias"}


def test_each_side_gets_its_own_copy_of_the_inputs() -> None:
    seen: List[torch.Tensor] = []

    def in_place(x: torch.Tensor, shift: torch.Tensor) -> torch.Tensor:
        seen.append(x)
        shift.add_(1)  # mutates its input: must not leak into the other side or the caller
        return (x * shift).sum()

    x, shift = torch.randn(3, requires_grad=True), torch.zeros(3)
    d = gw.compare(in_place, in_place, x, shift)
    assert torch.equal(shift, torch.zeros(3))
    assert seen[0] is not x and seen[1] is not x and seen[0] is not seen[1]
    assert d.equivalent is True


def test_profile_gives_verdicts_per_phase_from_plain_runs_and_per_node_times_from_instrumented_ones() -> None:
    inp = EX.homography_inputs(batch=2, height=16, width=16)
    d = gw.compare(EX.homography_repeat, EX.homography_broadcast, **inp, profile=True, repeat=4,
                   labels=("repeat", "broadcast"), budget=1.0)
    t = d.timing
    assert t["instrumented"] is False and t["per_node"] == {"rounds": 4, "instrumented": True, "order": "A,B,B,A,..."}
    assert t["rounds"] >= 5 and t["stopped"] in ("decided", "budget", "max rounds") and t["clock"] in ("cpu", "wall")
    for phase in ("step", "forward", "backward"):
        ph = t[phase]
        assert ph["low"] <= ph["ratio"] <= ph["high"] and len(ph["ms"]) == 2 and min(ph["ms"]) > 0
        assert ph["verdict"] == speed_verdict(ph["ratio"], ph["low"], ph["high"], t["band"])
        other = ph["wall" if t["clock"] == "cpu" else "cpu"]  # the other clock, shown beside
        assert other["low"] <= other["ratio"] <= other["high"]
    # the top level is the whole step's, and names the side by its label
    assert (t["ratio"], t["low"], t["high"]) == (t["step"]["ratio"], t["step"]["low"], t["step"]["high"])
    assert t["verdict"] in ("broadcast faster", "broadcast slower", "same speed within ±5 %", "not enough evidence")
    for g in (d.a, d.b):
        assert g.meta["timed"] and g.meta["timing"]["interleaved"] and g.meta["timing"]["runs_used"] == 4
        assert all(g.node(i)["bwd_ms"] is not None for i in g.nx.nodes)
        assert all(g.node(i)["source"] for i in g.nx.nodes if g.node(i)["kind"] != "leaf")
    # one ratio everywhere: the table's time rows are the plain runs' medians and the verdict's ratio
    s = d.summary()
    for key, phase in (("forward_ms", "forward"), ("backward_ms", "backward"), ("step_ms", "step")):
        assert [s["a"][key], s["b"][key]] == t[phase]["ms"] and s["ratio"][key] == t[phase]["ratio"]
    text = d.report()
    assert text.splitlines()[0] == d.sentence() == s["sentence"]
    if t["step"]["verdict"] == "not enough evidence":
        assert "whole step: not enough evidence" in text and "whole step 1" not in text.split("\n")[0]


# -- errors ---------------------------------------------------------------------------------------------------------
def test_errors_say_what_was_wrong() -> None:
    x = torch.randn(3, requires_grad=True)
    with pytest.raises(TypeError, match="fn_b .* must be callable"):
        gw.compare(lambda t: t.sum(), "not a function", x)
    with pytest.raises(ValueError, match="different structures.*A .* returned a tensor.*B .* returned tuple"):
        gw.compare(lambda t: t.sum(), lambda t: (t.sum(), t.exp()), x)
    with pytest.raises(CompareError, match=r"side B \('bad'\) raised ZeroDivisionError") as info:
        gw.compare(lambda t: t.sum(), lambda t: 1 / 0, x, labels=("good", "bad"))
    assert info.value.side == "B" and isinstance(info.value.__cause__, ZeroDivisionError)
    with pytest.raises(ValueError, match="none of the tensor inputs requires grad.*requires_grad_"):
        gw.compare(lambda t: t.exp().sum(), lambda t: t.exp().sum(), torch.randn(3))
    with pytest.raises(ValueError, match="labels must be two non-empty strings"):
        gw.compare(lambda t: t.sum(), lambda t: t.sum(), x, labels="ab")
    with pytest.raises(ValueError, match=r"repeat \(instrumented rounds for per-node times\) must be an integer >= 1"):
        gw.compare(lambda t: t.sum(), lambda t: t.sum(), x, profile=True, repeat=0)
    with pytest.raises(ValueError, match=r"band must be a fraction in \[0, 1\)"):
        gw.compare(lambda t: t.sum(), lambda t: t.sum(), x, band=5)
    with pytest.raises(ValueError, match="budget must be a number of seconds > 0"):
        gw.compare(lambda t: t.sum(), lambda t: t.sum(), x, budget=0)
    with pytest.raises(ValueError, match="threads must be None"):
        gw.compare(lambda t: t.sum(), lambda t: t.sum(), x, threads=0)
    g = gw.capture((x * 2).sum())
    with pytest.raises(TypeError, match="gw.load_json"):
        gw.diff(g, g.to_json())
    with pytest.raises(TypeError, match="Capture it first"):
        gw.diff(g, x)
    d = gw.diff(g, g)
    with pytest.raises(TypeError, match="already a Diff"):
        gw.diff(d, g)
    with pytest.raises(TypeError, match="one graph, not a diff"):
        gw.DiffWidget(g)
    with pytest.raises(KeyError, match="no node 99"):
        d.status(99, "a")

"""compare's verdicts on real rewrites: "same maths?" against the truth of each case, "faster?" from plain runs.

Every case here fooled an earlier verdict (tests/rewrites.py says how): a frozen layer reached through a global was
called equivalent, two submodules' weights were compared with each other, rounding in bfloat16 or around a true zero
or through a badly conditioned net was called a change of maths, a forward that updates its weight made a function
differ from itself. Real torch throughout; no assertion on which side is faster (speed lives in
tests/bench/bench_verdicts.py).
"""
from __future__ import annotations

from typing import Any

import pytest
import rewrites as rw
import torch
import torch.nn.functional as F

import graphwidget as gw
from graphwidget.analysis.diff.verdicts import speed_verdict
from graphwidget.experiment import speed

CASES = {**rw.REWRITES, **rw.TRAPS}


def run(case: rw.Case, **kw: Any) -> gw.Diff:
    old = torch.get_num_threads()
    if case.threads:
        torch.set_num_threads(case.threads)
    try:
        return gw.compare(case.fn_a, case.fn_b, *case.args, labels=case.labels, advise=False, **case.kwargs, **kw)
    finally:
        torch.set_num_threads(old)


@pytest.mark.parametrize("name", list(CASES))
def test_the_maths_verdict_matches_the_truth(name: str) -> None:
    case = CASES[name](1)
    d = run(case)
    eq = d.equivalence
    assert d.equivalent is case.same, d.report()
    assert eq["method"] == "float64", eq["fallback_reason"]  # every case here can run in float64
    first = d.report().splitlines()[0]
    la, lb = case.labels
    assert first.startswith(f"{lb} vs {la}: " + ("same maths (" if case.same else "NOT EQUIVALENT, the maths changed"))
    for t in eq["tensors"]:
        if t["allclose"] and t.get("ref_diff") is not None:
            assert t["ref_diff"] <= t["tol"]
    if case.same:
        # the float32 disagreement is bounded by the two roundings and the float64 difference (triangle inequality)
        for t in eq["tensors"]:
            if t.get("rounding") is not None:
                assert t["max_rel"] <= 2 * t["rounding"] + t["ref_diff"] + 1e-12
    names = [t["name"] for t in eq["tensors"]]
    assert len(names) == len(set(names)), names  # every tensor named once


def test_a_frozen_layer_reached_through_a_global_is_caught_and_named() -> None:
    d = run(rw.frozen_layer())
    rows = {t["name"]: t for t in d.equivalence["tensors"]}
    assert list(rows) == ["output", "grad fc1.weight", "grad fc1.bias", "grad fc2.weight", "grad fc2.bias"]
    assert rows["grad fc1.weight"]["only"] == "A" and not rows["grad fc1.weight"]["allclose"]
    assert "gradient only in trained" in d.sentence() and "fc1.weight" in d.sentence()
    assert "fc1.weight: gradient only in trained" in d.report()
    # nothing else was blamed: the output and the other gradients agree
    assert all(t["allclose"] for n, t in rows.items() if n != "grad fc1.weight")


def test_submodules_called_from_a_function_are_named_by_their_variable_and_never_crossed() -> None:
    d = run(rw.submodules())
    names = [t["name"] for t in d.equivalence["tensors"]]
    # in the order the forward called the modules (the input does not require grad here)
    assert names == ["output", "grad lin1.weight", "grad lin1.bias", "grad lin2.weight", "grad lin2.bias"]
    shapes = {t["name"]: (t["shape_a"], t["shape_b"]) for t in d.equivalence["tensors"]}
    assert shapes["grad lin1.weight"] == ([32, 64], [32, 64]) and shapes["grad lin2.weight"] == ([8, 32], [8, 32])
    # the graph's leaves carry the same names (the matching anchors on them)
    leaves = {d.a.node(i)["tensor"]["name"] for i in d.a.nodes(op="AccumulateGrad")}
    assert leaves == {"lin1.weight", "lin1.bias", "lin2.weight", "lin2.bias"}


def test_two_copies_of_a_model_pair_by_the_name_within_the_model() -> None:
    d = run(rw.channels_last())
    names = [t["name"] for t in d.equivalence["tensors"] if t["name"].startswith("grad ")]
    assert "grad model.fc.weight (B: model_cl.fc.weight)" in names
    assert not [t for t in d.equivalence["tensors"] if t.get("only")]


def test_rounding_is_told_apart_from_a_change_of_maths_in_words() -> None:
    same = run(rw.bf16_layer_norm())
    assert same.equivalent and same.equivalence["precision"] == "bfloat16"
    assert "same maths (bfloat16 rounding)" in same.sentence()
    assert "same maths within bfloat16 rounding (hand bf16 vs F.layer_norm bf16" in same.report()
    zero = run(rw.softmax_ones())
    assert zero.equivalent and zero.equivalence["near_zero"] >= 1  # the true gradient is 0: all rounding noise
    changed = run(rw.gelu_tanh())
    assert not changed.equivalent
    grad = next(t for t in changed.equivalence["tensors"] if t["name"] == "grad arg0")
    assert grad["ref_diff"] > 1000 * grad["tol"]  # in float64 the two maths still differ, far beyond rounding


def test_zero_gradient_and_no_gradient_are_the_same_maths_and_told_apart() -> None:
    w = torch.randn(3, requires_grad=True)

    def uses_w_times_zero(x: torch.Tensor) -> torch.Tensor:
        return (x.exp() + w * 0).sum()

    def ignores_w(x: torch.Tensor) -> torch.Tensor:
        return x.exp().sum()

    d = gw.compare(uses_w_times_zero, ignores_w, torch.randn(3, requires_grad=True), advise=False)
    row = next(t for t in d.equivalence["tensors"] if t["name"] == "grad w")
    assert d.equivalent and row["allclose"]
    assert row["note"].startswith("zero gradient in A, no gradient in B (not in its graph)")


def test_a_forward_that_updates_its_weight_is_compared_with_itself_on_the_original_values() -> None:
    case = rw.mutating()
    m = case.fn_a
    before = m.weight.detach().clone()
    d = run(case)
    assert d.equivalent and all(t["max_abs"] == 0.0 for t in d.equivalence["tensors"])
    assert torch.equal(m.weight.detach(), before)  # the caller's weight is as it was
    assert d.equivalence["mutated"] == {"A": ["weight"], "B": ["weight"]}
    assert "drift changes weight in place" in d.report()


def test_a_change_behind_the_version_counter_is_found_and_undone() -> None:
    w = torch.nn.Parameter(torch.ones(4))

    def sneaky(x: torch.Tensor) -> torch.Tensor:
        w.data.mul_(2)  # .data has a version counter of its own: only the values tell
        return (x * w).sum()

    d = gw.compare(sneaky, sneaky, torch.randn(4, requires_grad=True), advise=False)
    assert d.equivalent and d.equivalence["mutated"] == {"A": ["w"], "B": ["w"]}
    assert torch.equal(w.detach(), torch.ones(4))


def test_a_side_that_changes_its_input_in_place_is_reported_and_isolated() -> None:
    def shifts(x: torch.Tensor, shift: torch.Tensor) -> torch.Tensor:
        shift.add_(1)  # its own copy of the input: never the caller's, never the other side's
        return (x * shift).sum()

    def pure(x: torch.Tensor, shift: torch.Tensor) -> torch.Tensor:
        return (x * (shift + 1)).sum()

    x, shift = torch.randn(3, requires_grad=True), torch.zeros(3)
    d = gw.compare(shifts, pure, x, shift, labels=("in place", "pure"), advise=False)
    assert d.equivalent and torch.equal(shift, torch.zeros(3))
    assert d.equivalence["mutated"] == {"A": ["input arg1"]}
    assert "in place changes input arg1 in place" in d.report()


def test_no_float64_reference_falls_back_loudly() -> None:
    def float32_only(x: torch.Tensor) -> torch.Tensor:
        if x.dtype != torch.float32:
            raise TypeError("this kernel takes float32 only")
        return x.sin().sum()

    x = torch.randn(5, requires_grad=True)
    d = gw.compare(float32_only, float32_only, x, advise=False)
    eq = d.equivalence
    assert d.equivalent and eq["method"] == "fixed"
    assert "cannot run in float64 (TypeError: this kernel takes float32 only)" in eq["fallback_reason"]
    assert "fixed tolerance: no float64 reference" in d.sentence()
    assert "no float64 reference: side A cannot run in float64" in d.report()
    already = gw.compare(lambda t: t.sin().sum(), lambda t: t.sin().sum(), x.detach().double().requires_grad_(),
                         advise=False)
    assert already.equivalence["method"] == "fixed"
    assert already.equivalence["fallback_reason"] == "the sides already compute in float64"


def test_the_float64_run_leaves_nothing_changed() -> None:
    lin = torch.nn.Linear(4, 3)
    w_before, dtype_before = lin.weight.detach().clone(), torch.get_default_dtype()
    seen = []

    def f(x: torch.Tensor) -> torch.Tensor:
        seen.append((lin.weight.dtype, torch.get_default_dtype(), torch.ones(1).dtype))
        return lin(x).sum()

    gw.compare(f, f, torch.randn(2, 4, requires_grad=True), advise=False)
    # the float32 runs, then the float64 runs: everything the forward reached was float64 there
    assert seen == [(torch.float32, torch.float32, torch.float32)] * 2 + [(torch.float64,) * 3] * 2
    assert lin.weight.dtype == torch.float32 and torch.equal(lin.weight.detach(), w_before)
    assert torch.get_default_dtype() == dtype_before


# -- speed ----------------------------------------------------------------------------------------------------------
def test_speed_verdicts_come_from_plain_runs_with_the_threads_said() -> None:
    case = rw.einsum_bmm()
    before = torch.get_num_threads()
    d = run(case, profile=True, repeat=1, budget=0.5, threads=1)
    t = d.timing
    assert torch.get_num_threads() == before  # put back
    assert t["threads"] == 1 and t["threads_why"] == "1 thread, as asked"
    assert t["instrumented"] is False and t["inner"] >= speed.MIN_INNER
    for phase in ("step", "forward", "backward"):
        ph = t[phase]
        assert ph["verdict"] == speed_verdict(ph["ratio"], ph["low"], ph["high"], t["band"])
    assert "whole step" in d.sentence()


def test_a_busy_machine_is_timed_single_threaded_and_says_why() -> None:
    load, cores = speed.busy()
    assert cores >= 1 and load >= 0
    assert speed.choose_threads(3, cuda=False) == (3, "3 threads, as asked")
    n, why = speed.choose_threads(None, cuda=False)
    if torch.get_num_threads() > 1 and load >= cores:
        assert n == 1 and why.startswith("1 thread instead of the configured") and "the machine is busy" in why
    else:
        assert n == torch.get_num_threads() and "as configured" in why


def test_the_band_is_a_parameter() -> None:
    d = run(rw.identical(), profile=True, repeat=1, budget=0.5, band=0.5)
    assert d.timing["band"] == 0.5 and d.timing["step"]["verdict"] in ("same speed", "not enough evidence")
    assert "same speed (within ±50 %)" in d.sentence() or "not enough evidence" in d.sentence()


def test_gelu_exact_and_tanh_differ_in_a_single_layer_of_float32_only_by_2e_4() -> None:
    """The smallest real change the verdict must keep: the two GELUs differ by ~1e-4 relative in float32."""
    x, w = torch.randn(16, 32), torch.randn(32, 32)
    a, b = F.gelu(x @ w), F.gelu(x @ w, approximate="tanh")
    rel = float((a - b).abs().max() / a.abs().max())
    assert 1e-6 < rel < 1e-3
    d = gw.compare(lambda x, w: F.gelu(x @ w).sum(), lambda x, w: F.gelu(x @ w, approximate="tanh").sum(),
                   x.requires_grad_(), w.requires_grad_(), advise=False)
    assert d.equivalent is False


def test_the_speed_interval_is_distribution_free_and_holds_the_median() -> None:
    # order statistics chosen by the binomial distribution: over 8 rounds only the whole range holds the median
    # with 95 % confidence, over 20 the 6th to the 15th; the stricter look interval is nested around it
    assert speed.median_interval(list(range(8))) == (0, 7)
    assert speed.median_interval(list(range(20))[::-1]) == (5, 14)
    assert speed.median_interval(list(range(20)), speed.LOOK_LEVEL) == (3, 16)
    assert speed.median_interval([2.0]) == (2.0, 2.0)
    # and it holds the true median at least 95 % of the time, over few rounds too (seeded draws)
    import random
    rng = random.Random(0)
    for n in (6, 8, 10, 16):
        hits = 0
        for _ in range(4000):
            lo, hi = speed.median_interval([rng.lognormvariate(0, 0.3) for _ in range(n)])
            hits += lo <= 1.0 <= hi
        assert hits >= 0.95 * 4000 - 60, (n, hits)  # 60: three standard deviations of the count at 95 %


# -- what every surface leads with ----------------------------------------------------------------------------------
@pytest.mark.slow
def test_every_text_surface_leads_with_the_sentence_and_the_advisor_runs_on_both_sides() -> None:
    inp = gw.examples.homography_inputs(batch=2, height=8, width=8)
    d = gw.compare(gw.examples.homography_repeat, gw.examples.homography_broadcast, **inp,
                   labels=("repeat", "broadcast"))
    sentence = d.sentence()
    assert sentence.startswith("broadcast vs repeat: same maths (float32 rounding)")
    assert d.report().splitlines()[0] == sentence and d.summary()["sentence"] == sentence
    assert repr(d).startswith(f"<Diff {sentence} — ")
    bundle = d._repr_mimebundle_()
    bundle = bundle[0] if isinstance(bundle, tuple) else bundle
    assert bundle["text/plain"].startswith(f"<Diff {sentence} — ")
    # the advisor ran on both sides: the repeat's finding is A's, and B resolved it
    assert [f["rule"] for f in d.a.findings] == ["repeat-broadcast"] and d.b.findings == []
    skipped = gw.compare(gw.examples.homography_repeat, gw.examples.homography_broadcast, **inp, advise=False)
    assert not skipped.a.findings and not skipped.b.findings


# -- documents read back --------------------------------------------------------------------------------------------
def test_the_verdicts_survive_a_round_trip_and_a_hostile_file() -> None:
    import json
    x = torch.randn(3, requires_grad=True)
    d = gw.compare(lambda t: t.exp().sum(), lambda t: (t.exp() * 2).sum(), x, profile=True, budget=0.2, repeat=1,
                   advise=False)
    again = gw.load_json(d.to_json())
    assert again.sentence() == d.sentence() and again.report() == d.report()
    doc = json.loads(d.to_json())
    for key, value in (("timing", {"ratio": "fast", "high": [1], "verdict": 3, "step": {"ratio": "x"}}),
                       ("timing", {"step": {"ratio": 1.0, "low": None, "high": 1.1, "ms": "x"}, "band": "wide"}),
                       ("equivalence", {"equivalent": "yes", "tensors": "x"}),
                       ("equivalence", {"equivalent": False, "tensors": [1, {"name": ["a"], "only": "A"}],
                                        "mutated": {"A": "w"}})):
        bad = json.loads(json.dumps(doc))
        bad["summary"][key] = value
        read = gw.load_json(json.dumps(bad))
        # wrongly typed fields are dropped on reading; every surface still speaks
        assert read.sentence().startswith("B vs A: ") and read.report() and repr(read)
        from graphwidget.views.diff_payload import static_diff_html
        assert "graphwidget diff" in static_diff_html(read)


@pytest.mark.slow
def test_a_hostile_timing_never_reaches_the_table() -> None:
    import json
    x = torch.randn(3, requires_grad=True)
    d = gw.compare(lambda t: t.exp().sum(), lambda t: t.exp().sum(), x, profile=True, budget=0.2, repeat=1,
                   advise=False)
    doc = json.loads(d.to_json())
    doc["summary"]["timing"]["step"]["ms"] = ["fast", "slow"]
    doc["summary"]["timing"]["backward"]["ratio"] = "x"
    read = gw.load_json(json.dumps(doc))
    s = read.summary()
    assert s["a"]["step_ms"] is None or isinstance(s["a"]["step_ms"], float)
    assert read.timing["step"]["ms"] == ["fast", "slow"]  # kept as written
    assert read.report()

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


# -- decoders written twice, each with its own copy of the weights under other names (tests/divergence_models.py) --
import divergence_models as dm  # noqa: E402


def _f64_layer_outputs(a, b, ids):
    """Independent float64 truth: each block's output in A and B (forward hooks on the modules, no graphwidget)."""
    outs = {"a": [], "b": []}
    a64, b64 = __import__("copy").deepcopy(a).double(), __import__("copy").deepcopy(b).double()
    hooks = [m.register_forward_hook(lambda _m, _i, o, k=k: outs[k].append(o.detach()))
             for k, mods in (("a", a64.blocks), ("b", b64.layers)) for m in mods]
    a64(ids), b64(ids)
    for h in hooks:
        h.remove()
    return [float((x - y).abs().max() / x.abs().max()) for x, y in zip(outs["a"], outs["b"])]


def _only_cause(d):
    causes = [r for r in d.divergences if not r["inherited"]]
    assert causes and causes[0] == d.divergence, causes
    return causes


def test_renamed_weight_copies_are_equivalent_and_paired_through_the_graph():
    a, b, ids = dm.pair()
    d = gw.compare(a, b, ids, advise=False)
    assert d.equivalent is True and d.divergence is None
    grads = [t for t in d.equivalence["tensors"] if t["kind"] == "gradient"]
    assert len(grads) == len(list(a.parameters())) and not any(t.get("only") for t in grads)
    assert any(t["name"] == "grad blocks.2.attn.q.weight (B: layers.2.self_attn.q_proj.weight)" for t in grads)


def test_bug_in_one_block_points_at_its_line_and_nothing_upstream():
    a, b, ids = dm.pair("scale", at=2)
    truth = _f64_layer_outputs(a, b, ids)
    assert max(truth[:2]) < 1e-12 and truth[2] > 1e-6  # float64: blocks 0-1 agree, block 2 differs
    d = gw.compare(a, b, ids, advise=False)
    assert d.equivalent is False
    div = d.divergence
    assert div["phase"] == "forward" and div["op"] == "DivBackward0" and div["module_b"] == "layers.2.self_attn"
    assert div["source_b"].endswith(_line(dm.SelfAttentionB.forward, "the scale bug"))
    assert div["source_a"].endswith(_line(dm.AttnA.forward, "math.sqrt(d // h)"))
    assert div["rel"] > div["rounding"]
    assert len(_only_cause(d)) == 1
    assert "first differs at divergence_models.py:" in d.sentence() and "layers.2.self_attn" in d.sentence()


def test_gelu_variant_in_one_layer():
    a, b, ids = dm.pair("gelu", at=1)
    truth = _f64_layer_outputs(a, b, ids)
    assert truth[0] < 1e-12 and truth[1] > 1e-9
    d = gw.compare(a, b, ids, advise=False)
    div = d.divergence
    assert d.equivalent is False and div["op"] == "GeluBackward0" and div["module_b"] == "layers.1"
    assert div["source_b"].endswith(_line(dm.LayerB.forward, "the GELU variant"))
    assert len(_only_cause(d)) == 1


def test_detached_residual_is_a_cut_gradient_path():
    a, b, ids = dm.pair("detach", at=3)
    truth = _f64_layer_outputs(a, b, ids)
    assert max(truth) < 1e-12  # the forward is the same maths: only gradients differ
    d = gw.compare(a, b, ids, advise=False)
    div = d.divergence
    assert d.equivalent is False and div["phase"] == "backward" and div["cut"]["side"] == "B"
    assert div["op"] == "AddBackward0" and div["module_b"] == "layers.3"
    assert div["source_b"].endswith(_line(dm.LayerB.forward, "the detached residual"))
    assert not [r for r in d.divergences if r["phase"] == "forward"]
    assert "gradient path cut at divergence_models.py:" in d.sentence()


def test_a_weight_copy_that_differs_is_itself_the_divergence():
    a, b, ids = dm.pair()
    with torch.no_grad():
        b.layers[3].up.weight[0, 0] += 0.5
    d = gw.compare(a, b, ids, advise=False)
    div = d.divergence
    assert d.equivalent is False and div["kind"] == "parameter"
    assert (div["name_a"], div["name_b"]) == ("blocks.3.fc1.weight", "layers.3.up.weight")
    assert "parameter blocks.3.fc1.weight (B: layers.3.up.weight) differs" in d.sentence()
    assert len(_only_cause(d)) == 1


def _masked_like(x):
    return (x * (torch.rand_like(x) > 0.5)).sum()


def _masked_shape(x):
    return (x * (torch.rand(x.shape) > 0.5)).sum()


def _dropout(x):
    return torch.nn.functional.dropout(x.tanh(), 0.3).sum()


def _dropout_again(x):
    return torch.nn.functional.dropout(torch.tanh(x), p=0.3, training=True).sum()


def test_random_draws_made_identically_are_the_same_maths():
    torch.manual_seed(1)
    x = torch.randn(64, 64, requires_grad=True)
    for fa, fb in ((_masked_like, _masked_shape), (_dropout, _dropout_again)):
        torch.manual_seed(3)
        d = gw.compare(fa, fb, x, advise=False)
        assert d.equivalence["method"] == "float64"
        assert d.equivalent is True and d.divergence is None, d.sentence()
    # and a real difference in the draws is still one
    d = gw.compare(_masked_like, lambda x: (x * (torch.rand_like(x) > 0.4)).sum(), x, advise=False)
    assert d.equivalent is False and d.divergence is not None


def test_divergence_travels_through_the_diff_document():
    a, b, ids = dm.pair("gelu", at=1)
    d = gw.compare(a, b, ids, advise=False)
    back = gw.load_json(d.to_json())
    assert back.divergence == d.divergence and back.divergences == d.divergences
    assert back.sentence() == d.sentence()
    assert "first differs at" in d.report().splitlines()[0]


def test_output_roots_are_paired_by_evidence():
    x, w = torch.randn(4, 4, requires_grad=True), torch.randn(4, 4, requires_grad=True)
    d = gw.diff(gw.capture((x @ w).tanh()), gw.capture((x @ w).tanh() * 2.0))
    pairs = {d.a.node(p)["op"]: d.b.node(q)["op"] for p, q in d.matched}
    assert pairs["TanhBackward0"] == "TanhBackward0" and [d.b.node(i)["op"] for i in d.added] == ["MulBackward0"]
    d = gw.compare(lambda x, w: (x @ w).tanh().sum(), lambda x, w: ((x @ w).tanh() * 2.0).sum(), x, w)
    assert d.divergence["op_b"] == "SumBackward0" and d.b.node(d.divergence["region_b"][0])["op"] == "MulBackward0"


def test_ports_whose_structure_differs():
    torch.manual_seed(0)
    x = torch.randn(2, 10, 32, requires_grad=True)
    # fused qkv vs separate to_q/to_k/to_v: gradients cannot pair one to one, the forward values still judge
    fused = dm.FusedAttn()
    split = dm.SplitAttn()
    split.load_state_dict(dm.fused_to_split(fused.state_dict()))
    d = gw.compare(fused, split, x, advise=False)
    assert d.equivalent is True and d.divergence is None, d.sentence()
    lone = {t["name"] for t in d.equivalence["tensors"] if t.get("unpaired")}
    assert lone == {"grad qkv.weight", "grad qkv.bias", "grad to_q.weight", "grad to_q.bias", "grad to_k.weight",
                    "grad to_k.bias", "grad to_v.weight", "grad to_v.bias"}
    assert "gradients not paired one to one" in d.sentence()
    assert {e["name"] for e in d.unpaired["leaves_only_a"]} == {"qkv.weight", "qkv.bias"}
    buggy = dm.SplitAttn(bug="softmax")
    buggy.load_state_dict(dm.fused_to_split(fused.state_dict()))
    d = gw.compare(fused, buggy, x, advise=False)
    assert d.equivalent is False and d.divergence["op"] == "SoftmaxBackward0"
    assert d.divergence["source_b"].endswith(_line(dm.SplitAttn.forward, "the softmax bug"))
    # to_q vs q_proj: every parameter renamed, paired through the graph
    hf = dm.HFAttn()
    hf.load_state_dict(dm.split_to_hf(split.state_dict()))
    d = gw.compare(split, hf, x, advise=False)
    assert d.equivalent is True and d.divergence is None
    assert not any(t.get("only") or t.get("unpaired") for t in d.equivalence["tensors"])
    d = gw.compare(buggy, hf, x, advise=False)
    assert d.equivalent is False and d.divergence["source_a"].endswith(_line(dm.SplitAttn.forward, "softmax bug"))
    # a block as a Module vs as a function of a parameter dict
    mod = dm.MLPModule()
    params = dm.module_to_params(mod.state_dict())
    d = gw.compare(mod, lambda x: dm.mlp_block(x, params), x, advise=False)
    assert d.equivalent is True and d.divergence is None, d.sentence()
    d = gw.compare(mod, lambda x: dm.mlp_block(x, params, bug=True), x, advise=False)
    assert d.equivalent is False and d.divergence["source_b"].endswith(_line(dm.mlp_block, "the activation bug"))


def test_nway_pairs_carry_the_divergence():
    torch.manual_seed(0)
    x, w = torch.randn(8, 16, requires_grad=True), torch.randn(16, 16, requires_grad=True)
    d = gw.compare({"tanh": _tanh, "again": _tanh, "gelu": _gelu}, x, w, advise=False)
    assert d.pair("tanh", "again").divergence is None
    div = d.pair("tanh", "gelu").divergence
    assert div is not None and div["source_b"].endswith(_line(_gelu, "gelu(h)"))
    back = gw.load_json(d.to_json())
    assert back.pair("tanh", "gelu").divergence == div


def test_a_tiny_budget_compares_by_digests_and_says_so():
    a, b, ids = dm.pair("scale", at=1)
    d = gw.compare(a, b, ids, advise=False, divergence=1)
    assert d.divergence is not None and d.divergence["module_b"] == "layers.1.self_attn"
    assert d.divergence["op"] == "DivBackward0"
    assert any("compared by 256 sampled elements" in n for n in d.unpaired["notes"])
    import pytest
    with pytest.raises(ValueError, match="divergence must be True"):
        gw.compare(a, b, ids, divergence=-3)


def test_a_digest_samples_inside_a_tensor_of_more_than_2_to_the_24_elements():
    # Sample positions in float32 rounded past the end here (numel - 1 = 2**24 + 3 is not a float32): gw.record of a
    # GPT-2's embedding gradient raised IndexError.
    n = 2**24 + 4
    t = torch.arange(n, dtype=torch.int32)
    d = digest(t)
    assert d[0].item() == n and d[1].item() == n - 1
    assert d[2].item() == 0 and d[-1].item() == n - 1  # the first and the last element, in order
    assert torch.all(d[3:] > d[2:-1])


def test_a_side_measured_as_its_float64_values_appear_gives_the_same_search():
    """compare measures B's float64 values against A's the moment they exist instead of keeping them
    (Collector.stream_against): the search must read exactly what it reads from kept values."""
    from graphwidget.experiment.values import measure_against
    torch.manual_seed(3)
    x = torch.randn(5, 6, requires_grad=True)
    ga, gb = gw.capture((x.exp() * 2).sin().sum()), gw.capture((x.exp() * 2.001).sin().sum())
    d = gw.diff(ga, gb)
    to_a = {b: a for a, b in d.matched}
    e = x.detach().exp()
    kept = {}
    for k, (g, mul) in enumerate(((ga, 2.0), (gb, 2.001))):
        v = SideValues()
        ops = {g.node(n)["op"]: n for n in g.nx}
        for op, f32, f64 in (("ExpBackward0", e, e.double()),
                             ("MulBackward0", e * mul, e.double() * mul),
                             ("SinBackward0", (e * mul).sin(), (e.double() * mul).sin())):
            v.put("fwd", ops[op], 0, f32)
            v.put("fwd64", ops[op], 0, f64)
            v.put("grad", ops[op], 0, torch.ones_like(f32) * (k + 1))
            v.put("grad64", ops[op], 0, torch.ones_like(f64) * (k + 1))
        kept[k] = v
    va, vb = kept[0], kept[1]
    streamed = SideValues()
    streamed.fwd, streamed.grad = dict(vb.fwd), dict(vb.grad)
    for name in ("fwd64", "grad64"):
        for (n, o), t in vb.kind(name).items():
            assert measure_against(streamed, name, n, o, t, va, to_a)
    assert not streamed.fwd64 and not streamed.grad64 and not streamed.fwd and not streamed.grad
    assert sum(map(len, streamed.measured.values())) == 6
    want = find_divergence(ga, va, gb, vb, d.matched)
    got = find_divergence(ga, va, gb, streamed, d.matched)
    assert got == want
    assert want[0] is not None and ga.node(want[0]["a"])["op"] == "MulBackward0"
    assert any(r["phase"] == "backward" for r in want[1])  # the gradients differ too: both kinds are read


def test_finite_tensors_take_the_short_path_to_the_same_figures():
    """equivalence.measure's path for all-finite tensors (two reused float64 buffers) gives the figures of the
    general masked path, for the dtypes and layouts values come in."""
    from graphwidget.experiment import equivalence as eq
    torch.manual_seed(4)
    for dt in (torch.float32, torch.float16, torch.bfloat16, torch.float64):
        a64 = torch.randn(7, 9, dtype=torch.float64)
        b64 = a64 * (1 + 1e-6 * torch.randn(7, 9, dtype=torch.float64))
        for x, y, x64, y64 in ((a64.to(dt), b64.to(dt), a64, b64), (a64.to(dt).t(), b64.to(dt).t(), a64.t(), b64.t()),
                               (a64.to(dt), b64.to(dt), None, None)):
            fast = eq._figures_finite(x, y, x64, y64)
            general = eq._figures_general({}, x, y, x64, y64)
            assert fast is not None and fast == general, (dt, fast, general)
    bad = torch.tensor([1.0, float("nan")])
    assert eq._figures_finite(bad, bad, None, None) is None  # a NaN goes the general way
    row = eq.check("x", bad, torch.tensor([float("nan"), 1.0]))
    assert not row["allclose"] and "NaN in different places" in row["note"]

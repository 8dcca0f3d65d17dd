"""gw.profile: per-node forward/backward times with real torch, nothing left behind, gradients untouched.

No speed claims here (which op is slowest, by how much): those are measurements, in tests/bench/bench_timing.py.
Hook mechanics are checked exactly with an injected clock.
"""
from __future__ import annotations

import copy
import gc

import pytest
import torch
from gw_functions import Square
from hypothesis import given, settings
from hypothesis import strategies as st

import graphwidget as gw
from graphwidget import examples as ex
from graphwidget.capturing import native
from graphwidget.capturing.roots import root_nodes
from graphwidget.profiling.cross_check import profile_torch
from graphwidget.profiling.hooks import instrument

CUDA_REASON = ("CUDA is not available on this machine, so the CUDA-event timing path (timing_hooks.CudaClock: events "
               "recorded in the hooks, one synchronise per run) is not exercised here")


def _global_state():
    from torch.nn.modules import module as m
    F = torch.autograd.Function
    return (F.__dict__["apply"], "_register_hook" in F.__dict__, len(m._global_forward_pre_hooks),
            len(m._global_forward_hooks), torch._C._len_torch_function_stack(), gc.isenabled())


def _convnet(seed=0, batch=4):
    torch.manual_seed(seed)
    model = ex.SmallConvNet()
    x = torch.randn(batch, 3, 16, 16)
    target = torch.randint(0, 10, (batch,))
    return model, x, target


# -- what the graph carries ----------------------------------------------------------------------------------------
def test_profile_annotates_times_source_and_modules():
    model, x, target = _convnet()
    g = gw.profile(ex.convnet_loss, model, x, target, repeat=3, warmup=1)
    t = g.meta["timing"]
    assert g.meta["timed"] and g.meta["traced"]
    assert {"forward_ms", "backward_ms", "unattributed_ms", "repeat", "warmup", "device"} <= set(t)
    assert (t["repeat"], t["warmup"], t["device"], t["clock"]) == (3, 1, "cpu", "perf_counter_ns")
    s = g.summary()
    assert s["backward_ms"] == t["backward_ms"] > 0 and s["forward_ms"] > 0 and s["unattributed_ms"] >= 0
    for n, d in g.nx.nodes(data=True):
        assert d["bwd_ms"] is not None and d["bwd_ms"] >= 0, (n, d["op"])  # every node ran in backward
        if d["kind"] != "leaf":
            assert d["fwd_ms"] is not None and d["source"] is not None, (n, d["op"], d["seq"])
    convs = sorted(g.node(n)["module"] for n in g.nodes(op="ConvolutionBackward0"))
    assert convs == ["features.0", "features.3"]
    assert g.node(g.nodes(op="AddmmBackward0")[0])["module"] == "head"
    assert sorted(g.node(n)["tensor"]["name"] for n in g.nodes(kind="leaf"))[:2] == ["features.0.bias",
                                                                                     "features.0.weight"]
    assert isinstance(g.output, torch.Tensor) and g.output.dim() == 0
    assert gw.load_json(g.to_json()).meta["timing"]["backward_ms"] == t["backward_ms"]


@pytest.mark.parametrize("make", [
    lambda: ex.convnet_loss(*_convnet()),
    lambda: ex.homography_repeat(**ex.homography_inputs(2, 8, 8)),
    lambda: ex.select_loop(20)[1],
    lambda: [(ex.tiny_chain(5)[1]), torch.randn(3, requires_grad=True) * 2],
])
def test_ids_are_captures_ids(make):
    out = make()
    roots = out if isinstance(out, list) else [out]
    g = gw.capture(out)
    run = instrument(root_nodes(roots), None)
    assert [t.__name__ for t in run.types] == [g.node(i)["op"] for i in range(len(g))]


def test_hooks_stamp_every_node_exactly_with_an_injected_clock():
    # A fake clock that advances 1 ms per stamp: with the hooks alone stamping, a chain's nodes run one after the
    # other (pre, post, pre, post, ...), so every node must come out at exactly 1.0 ms and in pre-order.
    x = torch.randn(3, requires_grad=True)
    y = x.exp().sin().sum()
    ticks = iter(range(0, 10**12, 10**6))
    run = instrument(root_nodes([y]), lambda: next(ticks))
    try:
        y.backward()
    finally:
        run.remove_hooks()
    assert [t.__name__ for t in run.types] == ["SumBackward0", "SinBackward0", "ExpBackward0", "AccumulateGrad"]
    assert run.starts == [0, 2 * 10**6, 4 * 10**6, 6 * 10**6]
    assert run.bwd_ms() == [1.0, 1.0, 1.0, 1.0]
    # removed means removed: another backward through a fresh graph stamps nothing
    before = list(run.starts)
    x.exp().sin().sum().backward()
    assert run.starts == before


def test_engine_time_is_wall_minus_node_time_per_run():
    g = gw.profile(ex.homography_repeat, **ex.homography_inputs(2, 16, 16), repeat=5)
    t = g.meta["timing"]
    assert t["runs_used"] == 3  # iqm of 5 runs: fastest and slowest dropped whole
    assert t["backward_nodes_ms"] == pytest.approx(sum(d["bwd_ms"] or 0.0 for _, d in g.nx.nodes(data=True)))
    assert t["unattributed_ms"] == pytest.approx(t["backward_ms"] - t["backward_nodes_ms"])
    fwd = sum(d["fwd_ms"] or 0.0 for _, d in g.nx.nodes(data=True))
    assert fwd == pytest.approx(t["forward_ops_ms"])


def test_homography_repeat_selects_write_the_repeated_tensor():
    # Structure only: why the repeat version's backward is slow. The measured ranking is in tests/bench/bench_timing.py.
    rep = gw.profile(ex.homography_repeat, **ex.homography_inputs(), repeat=1, warmup=0)
    sel = rep.nodes(op="SelectBackward0")
    big = [n for n in sel for _, _, e in rep.nx.in_edges(n, data=True) if e["shape"] == [8, 16384, 3, 3]]
    assert len(big) == 12
    assert all(rep.node(n)["bwd_ms"] is not None for n in sel)
    assert {r["op"] for r in rep.timing_table(top=None, by="bwd_ms", group="op")} >= {"SelectBackward0"}


def test_cross_check_reports_both_tables():
    g = gw.profile(ex.homography_repeat, **ex.homography_inputs(2, 16, 16), repeat=3, cross_check=True)
    cc = g.meta["timing"]["cross_check"]
    ops = {d["op"] for _, d in g.nx.nodes(data=True)}
    assert set(cc["hooks_by_op"]) <= ops and cc["hooks_top"] in ops
    assert "SelectBackward0" in cc["profiler_by_op"] and cc["profiler_top"] in set(cc["profiler_by_op"])
    assert 0 < cc["hooks_top_share"] <= 1 and 0 < cc["profiler_top_share"] <= 1
    per_node = [d["bwd_ms_profiler"] for n, d in g.nx.nodes(data=True) if d["op"] == "SelectBackward0"]
    assert all(v is not None and v > 0 for v in per_node)
    g.to_json()  # the cross-check is JSON-safe


def test_profile_torch_gives_the_same_table():
    inp = ex.homography_inputs(2, 16, 16)
    g = profile_torch(ex.homography_broadcast, **inp)
    ref = gw.trace(ex.homography_broadcast, **inp)
    assert [d["op"] for _, d in g.nx.nodes(data=True)] == [d["op"] for _, d in ref.nx.nodes(data=True)]
    for n, d in g.nx.nodes(data=True):
        if d["op"] != "AccumulateGrad":  # the profiler gives AccumulateGrad no sequence number
            assert d["bwd_ms"] is not None, d["op"]
            assert d["fwd_ms"] is not None and d["source"] is not None, (n, d["op"], d["seq"])
    assert g.timing_table(top=3)


# -- nothing left behind -------------------------------------------------------------------------------------------
def test_gradients_are_bit_identical_to_a_plain_run():
    model, x, target = _convnet(batch=8)
    plain_model = copy.deepcopy(model)
    ex.convnet_loss(plain_model, x, target).backward()
    g = gw.profile(ex.convnet_loss, model, x, target, repeat=3, warmup=2)
    for (name, p), (_, q) in zip(model.named_parameters(), plain_model.named_parameters()):
        assert torch.equal(p.grad, q.grad), name
    # Existing gradients accumulate exactly once, as loss.backward() would.
    before = {n: p.grad.clone() for n, p in model.named_parameters()}
    ex.convnet_loss(plain_model, x, target).backward()
    gw.profile(ex.convnet_loss, model, x, target, repeat=2)
    for (name, p), (_, q) in zip(model.named_parameters(), plain_model.named_parameters()):
        assert torch.equal(p.grad, q.grad), name
        assert not torch.equal(p.grad, before[name])
    assert g.output.requires_grad


def test_homography_input_gradients_bit_identical():
    inp = ex.homography_inputs(2, 32, 32)
    plain = {k: (v.detach().clone().requires_grad_() if v.requires_grad else v) for k, v in inp.items()}
    ex.homography_repeat(**plain).sum().backward()
    gw.profile(ex.homography_repeat, **inp, repeat=3)
    for k in ("img", "homo"):
        assert torch.equal(inp[k].grad, plain[k].grad), k


def test_every_hook_and_patch_is_removed():
    before = _global_state()
    x = torch.randn(5, requires_grad=True)

    def f(x):  # no tensors saved for backward, so its graph can run backward again
        return ((x + 1) - 2).sum()

    g = gw.profile(f, x, repeat=2)
    assert _global_state() == before
    nodes, stack = [], [g.output.grad_fn]
    while stack:
        fn = stack.pop()
        if fn not in nodes:
            nodes.append(fn)
            stack.extend(c for c, _ in fn.next_functions if c is not None)
    assert len(nodes) == len(g) == 4
    seen = []
    for node in nodes:
        # The node's hook dicts hold only what we register now: profile's entries are gone.
        h1 = node.register_prehook(lambda go: seen.append(1))
        h2 = node.register_hook(lambda gi, go: seen.append(2))
        assert len(h1.hooks_dict_ref()) == 1 and len(h2.hooks_dict_ref()) == 1
    x.grad = None
    g.output.backward()
    assert len(seen) == 2 * len(nodes) and torch.equal(x.grad, torch.ones(5))


def test_backward_false_leaves_the_graph_to_the_user():
    inp = ex.homography_inputs(2, 16, 16)
    g = gw.profile(ex.homography_broadcast, **inp, repeat=2, backward=False)
    assert g.meta["timing"]["backward_ms"] is None and g.meta["timing"]["unattributed_ms"] is None
    assert all(d["bwd_ms"] is None for _, d in g.nx.nodes(data=True))
    assert inp["img"].grad is None
    plain = {k: (v.detach().clone().requires_grad_() if v.requires_grad else v) for k, v in inp.items()}
    ex.homography_broadcast(**plain).sum().backward()
    g.output.sum().backward()
    assert torch.equal(inp["img"].grad, plain["img"].grad)


def test_failure_restores_gradients_and_patches():
    before = _global_state()
    x = torch.randn(4, requires_grad=True)
    x.grad = torch.full((4,), 7.0)
    calls = []

    def f(x):
        calls.append(1)
        if len(calls) == 3:
            raise RuntimeError("boom")
        return (x * x).sum()

    with pytest.raises(RuntimeError, match="boom"):
        gw.profile(f, x, repeat=3)
    assert torch.equal(x.grad, torch.full((4,), 7.0))
    assert _global_state() == before


def test_a_function_that_changes_its_graph_is_rejected():
    x = torch.randn(4, requires_grad=True)
    calls = []

    def f(x):
        calls.append(1)
        y = x * 2
        if len(calls) > 2:
            y = y.exp()
        return y.sum()

    with pytest.raises(ValueError, match="different graph than run 0.*node 1: MulBackward0 with 2 inputs vs "
                                         "ExpBackward0 with 1 inputs"):
        gw.profile(f, x, repeat=3)
    assert x.grad is None


# -- what fn may return --------------------------------------------------------------------------------------------
def test_non_scalar_and_collections():
    x = torch.randn(3, 4, requires_grad=True)
    gw.profile(lambda: x.sin() * 2, repeat=2)  # non-scalar: gradient of ones
    assert torch.equal(x.grad, 2 * x.detach().cos())
    x.grad = None
    g = gw.profile(lambda: (x.sin(), {"b": x.exp()}, 3), repeat=2)  # every tensor that requires grad is a root
    assert len(g.meta["roots"]) == 2 and torch.allclose(x.grad, x.detach().cos() + x.detach().exp())
    x.grad = None
    g = gw.profile(lambda: {"loss": (x * 3).sum(), "logits": x.exp()}, repeat=2)  # a "loss" is what is differentiated
    assert len(g.meta["roots"]) == 1 and torch.equal(x.grad, torch.full_like(x, 3.0))
    class Output:  # like a HuggingFace ModelOutput: differentiate .loss, not .logits
        def __init__(self):
            self.loss, self.logits = (x * 5).sum(), x.exp()

    x.grad = None
    gw.profile(Output, repeat=2)
    assert torch.equal(x.grad, torch.full_like(x, 5.0))
    lin = torch.nn.Linear(4, 2)
    g = gw.profile(lin, torch.randn(3, 4), repeat=2)  # a module as fn: its (3, 2) output gets a gradient of ones
    assert g.node(g.nodes(op="AddmmBackward0")[0])["module"] == "" and lin.weight.grad.shape == (2, 4)
    with pytest.raises(ValueError, match="no tensor that requires grad"):
        gw.profile(lambda: x.detach() * 2)
    with pytest.raises(RuntimeError, match="runs the backward itself"):
        gw.profile(lambda: (lambda loss: (loss.backward(), loss)[1])((x * x).sum()))
    with pytest.raises(TypeError, match="expects a callable"):
        gw.profile(x)
    with pytest.raises(ValueError, match="repeat >= 1"):
        gw.profile(lambda: x.sum(), repeat=0)


def test_custom_function_and_stat_median():
    x = torch.randn(100, requires_grad=True)
    apply_before = torch.autograd.Function.__dict__["apply"]
    g = gw.profile(lambda: Square.apply(x).sum(), repeat=3, stat="median")
    (custom,) = g.nodes(kind="custom")
    assert g.node(custom)["fwd_ms"] > 0 and g.node(custom)["bwd_ms"] > 0
    assert g.meta["timing"]["stat"] == "median" and g.meta["timing"]["runs_used"] == 3
    assert torch.autograd.Function.__dict__["apply"] is apply_before
    assert torch.equal(x.grad, 2 * x.detach())


@settings(max_examples=12, deadline=None)
@given(st.lists(st.sampled_from(["mul", "add", "sin", "cat", "select", "mm"]), min_size=1, max_size=12))
def test_random_programs_profile_consistently(ops):
    w = torch.randn(4, 4, requires_grad=True)

    def f():
        y = w
        for op in ops:
            y = {"mul": lambda t: t * 1.5, "add": lambda t: t + w, "sin": torch.sin, "mm": lambda t: t @ w,
                 "cat": lambda t: torch.cat([t, t])[:4], "select": lambda t: t[1:].sum(0).expand(4, 4)}[op](y)
        return y.sum()

    ref = f()
    g = gw.profile(f, repeat=2, warmup=0)
    assert len(g) == len(gw.capture(ref))
    t = g.meta["timing"]
    nodes = sum(d["bwd_ms"] or 0.0 for _, d in g.nx.nodes(data=True))
    assert nodes + t["unattributed_ms"] == pytest.approx(t["backward_ms"], rel=0.05)
    plain = w.grad.clone()
    w.grad = None
    ref.backward()
    assert torch.equal(w.grad, plain)


@pytest.mark.skipif(not torch.cuda.is_available(), reason=CUDA_REASON)
def test_cuda_events_path():
    inp = {k: v.cuda().detach().requires_grad_(v.requires_grad) for k, v in ex.homography_inputs().items()}
    g = gw.profile(ex.homography_repeat, **inp, repeat=3, cross_check=True)
    t = g.meta["timing"]
    assert t["device"].startswith("cuda") and t["clock"] == "cuda_event"
    assert all(d["bwd_ms"] is not None for _, d in g.nx.nodes(data=True))
    assert t["cross_check"]["hooks_top"] == t["cross_check"]["profiler_top"]
    plain = {k: (v.detach().clone().requires_grad_() if v.requires_grad else v) for k, v in inp.items()}
    ex.homography_repeat(**plain).sum().backward()
    assert torch.equal(inp["img"].grad, plain["img"].grad)


@pytest.mark.skipif(not native.available(), reason="compiled core not built")
def test_native_hooks_time_every_node_and_are_really_removed():
    """The C++ hooks (hooks.cpp): stamps for every node that ran, and after remove() they no longer fire."""
    mod = native.load_core()
    x = torch.randn(64, requires_grad=True)
    y = (x.exp() * x).sin().sum()
    first = mod.instrument([y.grad_fn], True)
    first.remove()
    second = mod.instrument([y.grad_fn], True)
    assert second.n == len(gw.capture(y)) and second.types == [type(n) for n in _preorder(y.grad_fn)]
    y.backward()
    second.remove()
    assert all(v is None for v in first.bwd_ms())          # removed before backward: never fired
    ms = second.bwd_ms()
    assert all(v is not None and v >= 0 for v in ms)        # every node ran, leaf included
    assert second.leaves == [x] and second.seqs()[-1] is None  # AccumulateGrad: the leaf, no sequence number
    # the graph still works and gives the usual gradient
    assert torch.allclose(x.grad, (torch.cos((x.exp() * x)) * (x.exp() * x + x.exp())).detach())


def _preorder(root):
    order, seen, stack = [], set(), [root]
    while stack:
        fn = stack.pop()
        if fn in seen:
            continue
        seen.add(fn)
        order.append(fn)
        stack.extend(c for c, _ in reversed(fn.next_functions) if c is not None and c not in seen)
    return order


@pytest.mark.skipif(not native.available(), reason="compiled core not built")
def test_native_and_python_walks_agree(monkeypatch):
    """Same nodes, order, types, arity, leaves and sequence numbers from the C++ walk and the Python one."""
    model, x, target = _convnet(batch=2)
    w = torch.randn(4, requires_grad=True)
    programs = [
        [ex.homography_repeat(**ex.homography_inputs(2, 16, 16)).sum()],
        [ex.convnet_loss(model, x, target)],
        [Square.apply(w).sum(), (w * 2).sum()],
    ]
    for roots in programs:
        fast = instrument(root_nodes(roots), None)
        monkeypatch.setenv("GRAPHWIDGET_NATIVE", "0")
        slow = instrument(root_nodes(roots), None)
        monkeypatch.delenv("GRAPHWIDGET_NATIVE")
        assert fast.native is not None and slow.native is None
        assert fast.types == slow.types and fast.arity == slow.arity and fast.seqs() == slow.seqs()
        assert len(fast.leaves) == len(slow.leaves) and all(a is b for a, b in zip(fast.leaves, slow.leaves))
        fast.remove_hooks()


def test_profile_with_the_python_hooks(monkeypatch):
    """Without the compiled core, profile's Python hooks give the same kind of answer."""
    monkeypatch.setenv("GRAPHWIDGET_NATIVE", "0")
    inp = ex.homography_inputs(2, 32, 32)
    g = gw.profile(ex.homography_repeat, **inp, repeat=2, warmup=0)
    s = g.summary()
    timed = [d["bwd_ms"] for _, d in g.nx.nodes(data=True) if d["bwd_ms"] is not None]
    assert len(timed) == len(g) and s["backward_ms"] >= s["unattributed_ms"] >= 0
    assert abs(sum(timed) + s["unattributed_ms"] - s["backward_ms"]) < 0.05 * s["backward_ms"] + 0.05

"""The compiled capture core (graphwidget/capturing/native/cpp/capture.cpp) gives exactly the Python path's graph.

Every program below is captured with ``engine="python"`` and ``engine="native"`` and the two JSON texts (node and
edge order, key order, every value) must be equal. The programs cover what the capture tests cover (saved layouts,
freed graphs, custom Functions, sparse, subclasses, views, a transformer, ...) plus random programs (hypothesis).

``make test`` sets GRAPHWIDGET_REQUIRE_NATIVE=1, so on this project's CI a core that failed to build is a failure,
not a silent skip.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
import weakref
from typing import Callable, Dict, List, Tuple

import pytest
import torch
from gw_functions import ScaledProduct
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import graphwidget as gw
from graphwidget import examples as ex
from graphwidget.capturing import native
from graphwidget.capturing.api import capture_raw
from graphwidget.capturing.seq import rank_seq_python

pytestmark = pytest.mark.skipif(
    not native.available() and os.environ.get("GRAPHWIDGET_REQUIRE_NATIVE") != "1",
    reason=f"compiled capture core not built here ({native.status()['reason']})",
)


def test_core_is_built_where_required():
    """CI builds the core in `make setup`; if that broke, say so here instead of testing Python twice."""
    st_ = native.status()
    assert st_["available"], f"the compiled capture core is not available: {st_['reason']}"
    assert native.build() == native.library_path()  # already built: a no-op that returns the library


def same(obj, **kw) -> gw.GradGraph:
    """Capture with both engines; assert identical JSON and identical absolute seq numbers."""
    a = gw.capture(obj, engine="python", **kw)
    b = gw.capture(obj, engine="native", **kw)
    ja, jb = a.to_json(version=1), b.to_json(version=1)
    if ja != jb:  # show the first differing record, not two walls of JSON
        da, db = json.loads(ja), json.loads(jb)
        for key in ("meta", "nodes", "edges"):
            if da[key] != db[key]:
                if isinstance(da[key], list):
                    for x, y in zip(da[key], db[key]):
                        assert x == y, key
                assert da[key] == db[key], key
        assert ja == jb
    assert a.abs_seq == b.abs_seq
    assert a.to_json() == b.to_json()  # and version 2 (columns) alike
    return b


class Tagged(torch.Tensor):
    """A plain subclass: its records come from the Python tensor_record in both engines."""


def _conv_layouts():
    x = torch.randn(2, 3, 8, 8, requires_grad=True)
    conv = torch.nn.Conv2d(3, 4, 3).to(memory_format=torch.channels_last)
    y = conv(x.to(memory_format=torch.channels_last)).permute(0, 2, 3, 1)
    return (y * y.detach().transpose(1, 2)).sum(), {"module": conv}


def _shared_and_storage():
    x = torch.randn(4, 6, requires_grad=True)
    a = x * 2
    base = torch.randn(4, 6)
    return (a * a + a * base[:, :3].repeat(1, 2) + a * base[:, 1:4].repeat(1, 2)).sum(), {}


def _homography(kind: str):
    fn = ex.homography_repeat if kind == "repeat" else ex.homography_broadcast
    return fn(**ex.homography_inputs(batch=2, height=16, width=16)).sum(), {}


def _freed():
    x = torch.randn(3, 3, requires_grad=True)
    y = (x.exp() * x).sum() + ScaledProduct.apply(x, x.t().contiguous()).sum()
    y.backward()
    return y, {}


def _retained():
    x = torch.randn(3, 3, requires_grad=True)
    y = (x.sin() @ x).sum()
    y.backward(retain_graph=True)
    return y, {}


def _leaf_only():
    return torch.randn(5, requires_grad=True), {}


def _roots_list():
    x = torch.randn(3, requires_grad=True)
    return [(x * 2).sum(), x.exp().sum(), (x * 2).sum()], {}


def _roots_dict():
    x = torch.randn(3, requires_grad=True)
    return {"a": x.sin().sum(), "b": x.cos().mean()}, {}


def _custom():
    x, w = torch.randn(4, requires_grad=True), torch.randn(4, requires_grad=True)
    return ScaledProduct.apply(x, w).sum(), {}


def _checkpoint():
    from torch.utils.checkpoint import checkpoint
    lin = torch.nn.Linear(4, 4)
    x = torch.randn(2, 4, requires_grad=True)
    return checkpoint(lambda t: lin(t).relu(), x, use_reentrant=False).sum(), {"module": lin}


def _double_backward():
    x = torch.randn(3, requires_grad=True)
    (gx,) = torch.autograd.grad((x ** 3).sum(), x, create_graph=True)
    return gx.sum(), {}


def _complex():
    z = torch.randn(4, dtype=torch.complex64, requires_grad=True)
    return (z * z.conj()).real.sum(), {}


def _sparse():
    i = torch.tensor([[0, 1], [1, 0]])
    s = torch.sparse_coo_tensor(i, torch.tensor([1.0, 2.0]), (2, 2), requires_grad=True, check_invariants=True)
    w = torch.randn(2, 2, requires_grad=True)
    return torch.sparse.mm(s, w).sum(), {}


def _views_inplace():
    x = torch.randn(4, 4, requires_grad=True)
    y = x * 1
    y[0].mul_(2)
    y.t_()
    return y[1:, ::2].sum(), {}


def _transformer():
    torch.manual_seed(0)
    layer = torch.nn.TransformerEncoderLayer(d_model=16, nhead=2, dim_feedforward=32, batch_first=True)
    return layer(torch.randn(2, 5, 16)).sum(), {"module": layer}


def _select_loop():
    loss, _ = ex.select_loop(32)
    x = torch.randn(3, 4, requires_grad=True)
    return [loss, sum(r.sum() for r in x.unbind(0))], {}


def _saved_lists_and_odd_values():
    x = torch.randn(5, 4, requires_grad=True)
    idx = torch.tensor([0, 2, 2])
    parts = [
        x[idx, 1:3].sum(),                                    # IndexBackward0 saves a list of index tensors
        x.clamp(min=float("-inf"), max=0.5).sum(),            # non-finite saved scalar: repr, via Python jsonable
        torch.nn.functional.leaky_relu(x, 0.1).sum(),         # float attr
        x.pow(2.5).sum(dim=(0, 1)),                           # tuple attr
        x.to(torch.float64).sum().float(),                    # dtype attr
        torch.cat([x, x * 2, x.t().t()], 1).sum(),            # several inputs, one producer twice
        (x * x).sum(),                                        # a * a: the "also" edges
        torch.nn.functional.max_pool2d(x[None, None], 2).sum(),
        x.half().float().sum(),
    ]
    return torch.stack(parts).sum(), {}


def _subclass():
    x = torch.randn(3, 3).as_subclass(Tagged).requires_grad_()
    return (x * x.t()).sum(), {}


def _meta_device():
    x = torch.randn(3, 4, device="meta", requires_grad=True)
    return (x.exp() * x).sum(), {}


def _convnet():
    torch.manual_seed(0)
    model = ex.SmallConvNet()
    x, target = torch.randn(2, 3, 32, 32), torch.randint(0, 10, (2,))
    return ex.convnet_loss(model, x, target), {"module": model}


def _deep_chain():
    x = torch.randn(4, requires_grad=True)
    y = x
    for i in range(20_000):
        y = y * 1.0001 if i % 2 else y + 0.5
    return y, {}


def _nested():
    import warnings
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # "nested tensors are in prototype stage"
        t = torch.nested.nested_tensor([torch.randn(2, 3), torch.randn(4, 3)], requires_grad=True)
    return t.sin() * 2, {}


def _grad_fn_root():
    x = torch.randn(3, requires_grad=True)
    return (x.exp() * 2).grad_fn, {}


PROGRAMS: Dict[str, Callable[[], Tuple[object, dict]]] = {
    "conv_layouts": _conv_layouts, "shared_and_storage": _shared_and_storage,
    "homography_repeat": lambda: _homography("repeat"), "homography_broadcast": lambda: _homography("broadcast"),
    "freed": _freed, "retained": _retained, "leaf_only": _leaf_only, "roots_list": _roots_list,
    "roots_dict": _roots_dict, "custom": _custom, "checkpoint": _checkpoint, "double_backward": _double_backward,
    "complex": _complex, "sparse": _sparse, "views_inplace": _views_inplace, "transformer": _transformer,
    "select_loop": _select_loop, "saved_lists_and_odd_values": _saved_lists_and_odd_values,
    "subclass": _subclass, "meta_device": _meta_device, "convnet": _convnet, "deep_chain": _deep_chain,
    "grad_fn_root": _grad_fn_root, "nested": _nested,
}


@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_native_equals_python(name):
    obj, kw = PROGRAMS[name]()
    g = same(obj, **kw)
    assert len(g) >= 1


@pytest.mark.parametrize("first", ["python", "native"])
def test_same_result_whichever_engine_touches_the_graph_first(first):
    """Wrappers and tensor objects created by one walk must not change what the other reports."""
    obj, kw = _shared_and_storage()
    second = "native" if first == "python" else "python"
    a = gw.capture(obj, engine=first, **kw).to_json()
    b = gw.capture(obj, engine=second, **kw).to_json()
    assert a == b


def test_the_seed_facts_come_through_the_native_core():
    g = gw.capture(ex.homography_repeat(**ex.homography_inputs()), engine="native")
    selects = [g.node(n) for n in g.nodes(op="SelectBackward0")]
    # the twelve selects on the repeated (8, 16384, 3, 3) tensor each write a gradient that size: 4.5 MiB
    assert sum(d["grad_bytes"] == 8 * 16384 * 3 * 3 * 4 for d in selects) == 12
    assert any(o and o["shape"] == [8, 16384, 3, 3] for n in g.nodes(op="RepeatBackward0")
               for o in g.node(n)["outputs"])


def test_native_capture_keeps_no_tensor_alive_and_gradients_identical():
    import gc
    import weakref
    x = torch.randn(64, requires_grad=True)
    y = (x.exp() * x).sum()
    ref = weakref.ref(y)
    g = gw.capture(y, engine="native")
    y.backward()
    grad = x.grad.clone()
    x.grad = None
    y2 = (x.exp() * x).sum()
    y2.backward()
    assert torch.equal(grad, x.grad)
    del y, g
    gc.collect()
    assert ref() is None


def test_rank_seq_matches_python():
    x = torch.randn(3, requires_grad=True)
    y = x
    for _ in range(50):
        y = (y * 1.5).sin()
    for name in ("deep", "multi"):
        obj = y.sum() if name == "deep" else [y.sum(), (x * 3).sum()]
        a = capture_raw(obj, engine="python")
        b = capture_raw(obj, engine="python")
        abs_native = native.load_core().rank_seq(a.nx._node)
        abs_python = rank_seq_python(b.nx._node)
        assert abs_native == abs_python
        assert [d["seq"] for d in a.nx._node.values()] == [d["seq"] for d in b.nx._node.values()]


def test_rank_seq_leaves_odd_graphs_to_python():
    mod = native.load_core()
    attrs = {0: {"seq": "x"}, 1: {"seq": 3}}
    with pytest.raises(mod.Unsupported):
        mod.rank_seq(attrs)
    assert attrs == {0: {"seq": "x"}, 1: {"seq": 3}}  # untouched when it declines


def test_engine_argument_is_checked():
    x = torch.randn(2, requires_grad=True)
    with pytest.raises(ValueError, match="engine must be one of"):
        gw.capture(x * 2, engine="fast")


def test_disabled_core_falls_back_and_native_engine_says_why(monkeypatch):
    x = torch.randn(2, requires_grad=True)
    y = (x * 2).sum()
    monkeypatch.setenv("GRAPHWIDGET_NATIVE", "0")
    assert not native.available() and "GRAPHWIDGET_NATIVE=0" in native.status()["reason"]
    assert len(gw.capture(y)) == 3  # auto: the Python path
    with pytest.raises(RuntimeError, match="compiled core is unavailable"):
        gw.capture(y, engine="native")


def test_a_stale_build_is_not_loaded(tmp_path):
    """Another torch or another source means another library name: nothing built means Python, with the reason."""
    code = (
        "from graphwidget.capturing import native as n; import graphwidget as gw, torch\n"
        "print(n.available()); print(n.status()['reason'])\n"
        "print(len(gw.capture((torch.randn(2, requires_grad=True) * 2).sum())))\n"
    )
    # every place a build is looked for is empty: GRAPHWIDGET_NATIVE_DIR and the user cache (native.search_roots())
    env = dict(os.environ, GRAPHWIDGET_NATIVE_DIR=str(tmp_path), XDG_CACHE_HOME=str(tmp_path / "cache"))
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    lines = out.stdout.splitlines()
    assert lines[0] == "False" and "build-native" in lines[1] and lines[2] == "3"


UNARY = {"sin": torch.sin, "exp": lambda t: (t * 0.1).exp(), "neg": torch.neg, "tanh": torch.tanh,
         "relu": torch.relu, "sum0": lambda t: t.sum(0, keepdim=True).expand_as(t), "t": lambda t: t.t(),
         "select": lambda t: t[0].unsqueeze(0).expand_as(t), "contig": lambda t: t.t().contiguous().t()}
BINARY = {"add": torch.add, "mul": torch.mul, "sub": torch.sub, "mm": lambda a, b: (a @ b) * 0.1}

step = st.one_of(
    st.tuples(st.just("u"), st.sampled_from(sorted(UNARY)), st.integers(0, 1000)),
    st.tuples(st.just("b"), st.sampled_from(sorted(BINARY)), st.integers(0, 1000), st.integers(0, 1000)),
)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(n_leaves=st.integers(1, 3), steps=st.lists(step, min_size=0, max_size=20), backward=st.booleans())
def test_random_programs_give_identical_graphs(n_leaves, steps, backward):
    values: List[torch.Tensor] = [torch.randn(3, 3, requires_grad=True) for _ in range(n_leaves)]
    for s in steps:
        if s[0] == "u":
            values.append(UNARY[s[1]](values[s[2] % len(values)]))
        else:
            values.append(BINARY[s[1]](values[s[2] % len(values)], values[s[3] % len(values)]))
    root = values[-1].sum()
    if backward:
        root.backward()
    same(root)


def test_nested_tensors_are_described_not_crashed_on():
    """Ragged tensors have no single shape: their records say so instead of raising from inside torch."""
    obj, _ = _nested()
    for engine in ("python", "native"):
        g = gw.capture(obj, engine=engine)
        saved = [s for n in g.nodes() for s in g.node(n)["saved"] if s["dtype"] == "float32"]  # not a 0-d scalar
        assert saved and all(s["memory_format"] == "nested" and s["shape"] is None and s["bytes"] == 18 * 4
                             for s in saved)
        leaf = g.node(g.nodes(kind="leaf")[0])["tensor"]
        assert leaf["memory_format"] == "nested" and leaf["storage_bytes"] == 72


def test_a_non_json_value_gets_jsons_own_error():
    g = gw.capture((torch.randn(3, requires_grad=True) * 2).sum())
    g.nx.nodes[0]["attrs"] = {"x": float("nan")}
    with pytest.raises(ValueError, match="Out of range float"):  # json's own error, as without the core
        g.to_json()


def test_records_are_untracked_plain_data_and_retrack_when_edited():
    """Captured and loaded records leave the cycle collector (no cycles in plain data); a record re-tracks itself
    as soon as a container is put in it, so user edits stay collectable."""
    import gc
    y = ex.homography_repeat(**ex.homography_inputs(2, 16, 16)).sum()
    for make in (lambda: gw.capture(y, engine="native"), lambda: gw.load_json(gw.capture(y).to_json())):
        g = make()
        d = g.nx._node[1]
        assert not gc.is_tracked(d) and not gc.is_tracked(g.nx._node) and not gc.is_tracked(d["outputs"])
        d["note"] = ["a container"]
        assert gc.is_tracked(d)
        probe = _Probe()
        probe.me = probe  # a cycle of the user's hanging off a record: found and freed once the graph goes
        ref = weakref.ref(probe)
        g.nx._node[2]["cycle"] = probe
        del g, d, probe
        gc.collect()
        assert ref() is None


class _Probe:
    me: object = None


DEEP_WALKED = """
import resource, sys
hard = resource.getrlimit(resource.RLIMIT_STACK)[1]
resource.setrlimit(resource.RLIMIT_STACK, (8 * 2**20, hard))
import torch
import graphwidget as gw
x = torch.zeros(1, requires_grad=True)
y = x
for _ in range(400_000):
    y = y + 1
seen, stack = set(), [y.grad_fn]  # user code walks the graph first: every node gets a Python wrapper
while stack:
    f = stack.pop()
    if f in seen:
        continue
    seen.add(f)
    stack.extend(c for c, _ in f.next_functions if c is not None)
del seen, stack, f
g = gw.capture(y, engine="native")
assert len(g) == 400_001
print("soft stack", resource.getrlimit(resource.RLIMIT_STACK)[0], flush=True)
del y
del g
print("survived", flush=True)
"""


@pytest.mark.slow  # a deep chain in a subprocess: ~6-8 s
def test_deep_graph_walked_in_python_first_gets_the_stack_guard():
    """The core counts the nodes that already have a Python wrapper (user code walked next_functions): freeing those
    recurses inside torch, so the core raises the stack limit as the Python engine does. Without that count this
    died with SIGSEGV (exit 139) on the default 8 MiB stack."""
    from graphwidget.capturing._deep_free import required_stack
    proc = subprocess.run([sys.executable, "-c", DEEP_WALKED], capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, f"exit {proc.returncode}\n{proc.stderr[-2000:]}"
    assert "survived" in proc.stdout
    soft = int(proc.stdout.split("soft stack ")[1].split()[0])
    assert soft == -1 or soft >= required_stack(400_000)  # -1: RLIM_INFINITY


def test_reading_nodes_leaves_their_python_wrappers_alone():
    """The core reads unwrapped nodes through a reader object of their type and never registers it as their Python
    object: a wrapper user code holds stays the node's wrapper, with its hooks, and nodes nobody touched get none."""
    x = torch.randn(4, requires_grad=True)
    y = (x.exp() * 2).sin().sum()
    mul = y.grad_fn.next_functions[0][0].next_functions[0][0]  # MulBackward0: wrapped by this walk
    seen = []
    handle = mul.register_hook(lambda grads, _: seen.append(grads[0].shape))
    g = gw.capture(y, engine="native")
    assert y.grad_fn.next_functions[0][0].next_functions[0][0] is mul
    y.backward()
    assert seen == [torch.Size([4])]
    handle.remove()
    # a chain of one type, never touched from Python: only the first node of the type gets a wrapper
    z = x
    for _ in range(200):
        z = z * 1.5
    mod = native.load_core()
    from graphwidget.capturing.engines import _type_info
    from graphwidget.capturing.records import NATIVE_TEMPLATES
    from graphwidget.capturing.tensors import dtype_name, jsonable, packed_record, tensor_record
    wrapped = mod.capture([z.grad_fn], {}, _type_info, jsonable, dtype_name, tensor_record, packed_record,
                          NATIVE_TEMPLATES, True)[5]
    assert wrapped <= 3, wrapped  # the root (z.grad_fn), the first MulBackward0 read, the leaf's AccumulateGrad
    assert len(g) == 5


def test_a_tensor_saved_again_under_one_name_shares_its_record_and_list():
    """A tensor every step of a loop saves is one record (and the steps one `saved` list), in both engines; the same
    tensor under another name is a record of its own, and so is each of several tensors on one storage."""
    x = torch.randn(3, requires_grad=True)
    shared, w = torch.randn(3), torch.randn(4, 3)
    y = x
    for _ in range(3):
        y = y * shared  # MulBackward0 saves `shared` as `other` at every step
    z = shared * x  # ...and here as `self`
    h = x
    for i in range(4):
        h = h * w[i]  # four views of one storage: four tensors
    ys = [y.sum(), z.sum(), h.sum()]
    for engine in ("python", "native"):
        g = gw.capture(ys, engine=engine)
        muls = [d for _, d in g.nx.nodes(data=True) if d["op"] == "MulBackward0"]
        (as_self,) = [s for d in muls for s in d["saved"] if s["name"] == "self"]
        on_shared = [d for d in muls if d["saved"] and d["saved"][0]["storage"] == as_self["storage"]]
        as_other = [d["saved"][0] for d in on_shared if d["saved"][0]["name"] == "other"]
        assert len(as_other) == 3 and all(r is as_other[0] for r in as_other), engine
        assert as_self is not as_other[0], engine
        lists = [d["saved"] for d in on_shared if d["saved"][0] is as_other[0]]
        # the first step's list holds the record made for it; the later steps share one list
        assert len(lists) == 3 and len({id(s) for s in lists}) == 2 and lists[0] == lists[1], engine
        views = [d["saved"][0] for d in muls if d["saved"] and d["saved"][0]["storage"] != as_self["storage"]]
        assert len(views) == 4 and len({id(r) for r in views}) == 4, engine
        assert len({r["storage"] for r in views}) == 1, engine
    same(ys)


def test_nodes_share_equal_attrs_but_not_equal_looking_values_of_other_types():
    """Repeated values are one object per capture (a million adds hold one {"alpha": 1}), in both engines; values
    Python calls equal but JSON writes differently (2 and 2.0, 0.0 and -0.0) stay apart."""
    x = torch.randn(3, requires_grad=True)
    ys = [x + 1, torch.add(x, x, alpha=2), torch.add(x, x, alpha=2.0), torch.add(x, x, alpha=2),
          x.pow(2), x.pow(2.0), x.pow(2), x.clamp(min=0.0), x.clamp(min=-0.0), x.clamp(min=0.0)]
    for engine in ("python", "native"):
        g = gw.capture(ys, engine=engine)
        root_of = dict(zip(range(len(ys)), g.meta["roots"]))
        attrs = {i: g.nx.nodes[root_of[i]]["attrs"] for i in range(len(ys))}
        texts = {i: json.dumps(a) for i, a in attrs.items()}
        assert texts[1] == '{"alpha": 2}' and texts[2] == '{"alpha": 2.0}', engine
        assert attrs[1] is attrs[3] and attrs[1] is not attrs[2], engine
        assert '"exponent": 2}' in texts[4] and '"exponent": 2.0}' in texts[5] and attrs[4] is attrs[6], engine
        assert '"min": 0.0' in texts[7] and '"min": -0.0' in texts[8], engine
        assert attrs[7] is attrs[9] and attrs[7] is not attrs[8], engine
        leaves = g.nodes(op="AccumulateGrad")
        assert g.node(leaves[0])["saved"] == [] and g.node(leaves[0])["attrs"] == {}
        assert g.nx.nodes[root_of[0]]["outputs"] is g.nx.nodes[root_of[1]]["outputs"], engine  # both one float32 [3]
    same(ys)

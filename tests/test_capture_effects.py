"""Capture changes nothing and says what it sees (issue 10): checkpointed and hooked saved tensors are never unpacked,
stale saved tensors are named, jagged nested tensors, model outputs, vmap, parameters vs activations, library lines.

Every capture runs under both engines (the pure-Python one and the compiled core, when built) and, where both run,
their JSON must be identical.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import warnings
from typing import Any, Dict, List

import pytest
import torch
from gw_functions import Product
from torch.utils.checkpoint import checkpoint
from torch_facts import HAS_INPUT_METADATA, HAS_SAVED_HOOK_FACTS, needs_saved_hook_facts

import graphwidget as gw
from graphwidget.capturing import native

ENGINES = ["python", "native"] if native.available() or os.environ.get("GRAPHWIDGET_REQUIRE_NATIVE") == "1" \
    else ["python"]


def both(obj: Any, **kw: Any) -> gw.GradGraph:
    """Capture with every engine; the JSON texts must be equal. Returns the last engine's graph."""
    texts: Dict[str, str] = {}
    g = None
    for engine in ENGINES:
        g = gw.capture(obj, engine=engine, **kw)
        texts[engine] = g.to_json(version=1)  # records: a difference is shown node by node
    if len(texts) == 2 and texts["python"] != texts["native"]:
        a, b = json.loads(texts["python"]), json.loads(texts["native"])
        for x, y in zip(a["nodes"], b["nodes"]):
            assert x == y
        assert a == b
    assert g is not None
    return g


def saved_records(g: gw.GradGraph) -> List[Dict[str, Any]]:
    return [s for n in g.nodes() for s in g.node(n)["saved"]]


# -- checkpointing: capture must not re-run the forward ----------------------------------------------------------

class Block(torch.nn.Module):
    """Linear + BatchNorm: a recompute would move the running statistics and num_batches_tracked."""

    def __init__(self) -> None:
        super().__init__()
        self.lin = torch.nn.Linear(16, 16)
        self.bn = torch.nn.BatchNorm1d(16)
        self.calls = 0

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        self.calls += 1
        return self.bn(self.lin(x)).relu()


class Net(torch.nn.Module):
    def __init__(self, use_checkpoint: bool) -> None:
        super().__init__()
        self.blocks = torch.nn.ModuleList([Block() for _ in range(3)])
        self.use_checkpoint = use_checkpoint

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        for b in self.blocks:
            x = checkpoint(b, x, use_reentrant=False) if self.use_checkpoint else b(x)
        return x.pow(2).mean()


def _net(use_checkpoint: bool) -> Net:
    torch.manual_seed(0)
    net = Net(use_checkpoint)
    net.train()
    return net


def _state(net: Net) -> List[torch.Tensor]:
    return [t.detach().clone() for t in net.state_dict().values()]


def _grads(net: Net) -> List[torch.Tensor]:
    return [p.grad.clone() for p in net.parameters()]


@needs_saved_hook_facts
@pytest.mark.parametrize("engine", ENGINES)
def test_checkpointed_capture_runs_no_forward_and_changes_nothing(engine):
    x = torch.randn(8, 16)
    # reference: the same program, no capture
    ref = _net(True)
    ref(x).backward()
    ref_grads = _grads(ref)

    net = _net(True)
    loss = net(x)
    calls = [b.calls for b in net.blocks]
    before = _state(net)
    g = gw.capture(loss, module=net, engine=engine)
    assert [b.calls for b in net.blocks] == calls, "capture re-ran a checkpointed forward"
    after = _state(net)
    assert all(torch.equal(a, b) for a, b in zip(before, after)), "running stats / num_batches_tracked moved"
    loss.backward()
    assert [b.calls for b in net.blocks] == [c + 1 for c in calls]  # backward recomputes each block once
    assert all(torch.equal(a, b) for a, b in zip(ref_grads, _grads(net))), "gradients changed by the capture"

    packed = [s for s in saved_records(g) if s["packed"]]
    assert packed and all(s["packed"] == "checkpoint" and s["bytes"] == 0 and s["shape"] is None
                          and s["freed"] is False for s in packed)
    s = g.summary()
    assert s["saved_tensors_packed"] == len(packed)
    plain = gw.capture(_net(False)(x), engine=engine).summary()
    assert s["saved_bytes"] < plain["saved_bytes"], (s["saved_bytes"], plain["saved_bytes"])


@needs_saved_hook_facts
def test_checkpointed_graph_is_the_same_in_both_engines():
    net = _net(True)
    g = both(net(torch.randn(8, 16)), module=net)
    assert g.summary()["saved_tensors_packed"] > 0


@needs_saved_hook_facts
def test_checkpointed_custom_function_is_packed_not_unpacked():
    calls = []

    def body(x, w):
        calls.append(1)
        return Product.apply(x, w).sin()

    x, w = torch.randn(5, requires_grad=True), torch.randn(5, requires_grad=True)
    y = checkpoint(body, x, w, use_reentrant=False).sum()
    g = both(y)
    assert len(calls) == 1
    custom = g.node(g.nodes(kind="custom")[0])
    assert [s["name"] for s in custom["saved"]] == ["saved_tensors[0]", "saved_tensors[1]"]
    assert all(s["packed"] == "checkpoint" for s in custom["saved"])
    y.backward()
    assert len(calls) == 2


@needs_saved_hook_facts
@pytest.mark.parametrize("engine", ENGINES)
def test_saved_tensor_hooks_are_never_called_by_capture(engine):
    packs, unpacks = [], []

    def pack(t):
        packs.append(1)
        return t.clone()

    def unpack(t):
        unpacks.append(1)
        return t

    x = torch.randn(4, 4, requires_grad=True)
    with torch.autograd.graph.saved_tensors_hooks(pack, unpack):
        y = (x.exp() * x).sum()
    n_packs = len(packs)
    g = gw.capture(y, engine=engine)
    assert len(packs) == n_packs and unpacks == [], "capture ran a saved-tensor hook"
    assert {s["packed"] for s in saved_records(g)} == {"hooks"}
    assert g.summary()["saved_bytes"] == 0
    y.backward()
    assert unpacks  # backward does unpack them: the hooks were real
    with torch.autograd.graph.save_on_cpu():
        z = (x.sin() * x).sum()
    gz = gw.capture(z, engine=engine)
    assert {s["packed"] for s in saved_records(gz)} == {"hooks"}
    z.backward()  # still works


@needs_saved_hook_facts
def test_hooks_registered_on_one_saved_tensor_leave_the_others_described():
    x = torch.randn(3, requires_grad=True)
    y = (x.exp() * x).sum()
    mul = y.grad_fn.next_functions[0][0]
    mul._raw_saved_self.register_hooks(lambda t: t, lambda t: t)
    g = both(y)
    saved = {s["name"]: s for s in g.node(1)["saved"]}
    assert saved["self"]["packed"] == "hooks" and saved["other"]["packed"] is None
    assert saved["other"]["shape"] == [3] and saved["other"]["bytes"] == 12


@needs_saved_hook_facts
def test_hooked_and_stale_tensors_deep_in_a_chain_of_one_op():
    """The compiled core learns where a node type keeps each saved tensor from its first nodes and reads later ones
    there: a hooked, a stale and an ordinary saved tensor far down a chain of MulBackward0 must still be told apart."""
    x = torch.randn(3, requires_grad=True)
    ws = [torch.randn(3) for _ in range(12)]
    y = x
    for w in ws:
        y = y * w
    nodes = []
    fn = y.grad_fn
    while fn is not None and type(fn).__name__ == "MulBackward0":
        nodes.append(fn)
        fn = fn.next_functions[0][0]
    unpacks = []
    nodes[2]._raw_saved_other.register_hooks(lambda t: t, lambda t: unpacks.append(1) or t)  # ws[9]
    ws[4].add_(1)  # saved as `other` by the node of ws[4]: stale
    g = both(y.sum())
    assert unpacks == []
    others = [next(r for r in g.node(n)["saved"] if r["name"] == "other") for n in g.nodes(op="MulBackward0")]
    assert [r["packed"] for r in others].count("hooks") == 1 and others[2]["packed"] == "hooks"
    assert [r["stale"] for r in others].count(True) == 1 and others[12 - 1 - 4]["stale"]
    assert all(r["shape"] == [3] for i, r in enumerate(others) if i != 2)


# -- stale saved tensors ------------------------------------------------------------------------------------------

def test_saved_tensor_modified_in_place_is_stale_not_freed():
    x = torch.randn(3, requires_grad=True)
    a = x.exp()
    y = (a * x).sum()
    a.mul_(2)  # ExpBackward0 saved its result; MulBackward0 saved `a` as self
    g = both(y)
    stale = [s for s in saved_records(g) if s["stale"]]
    assert {s["name"] for s in stale} == {"result", "self"}
    # torch < 2.5 has no SavedTensor.data and unpacking a stale tensor fails: it is named, its shape is unknown
    shape, size = ([3], 12) if HAS_SAVED_HOOK_FACTS else (None, 0)
    assert all(not s["freed"] and s["shape"] == shape and s["bytes"] == size for s in stale)
    s = g.summary()
    assert s["saved_tensors_stale"] == 2 and s["saved_tensors_freed"] == 0 and s["saved_bytes"] > 0
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        y.backward()  # what "stale" promises


def test_stale_list_and_custom_function_groups():
    x = torch.randn(4, 3, requires_grad=True)
    idx = torch.tensor([0, 2])
    w = torch.randn(3)
    y = x[idx].sum() + Product.apply(x, w).sum()
    idx.add_(1)  # IndexBackward0 saved it in a list
    w.add_(1)    # Product saved it
    g = both(y)
    index = g.node(g.nodes(op="IndexBackward0")[0])
    assert [(s["name"], s["stale"]) for s in index["saved"]] == [("indices[0]", True)]
    custom = g.node(g.nodes(kind="custom")[0])
    assert [(s["name"], s["stale"]) for s in custom["saved"]] == [("saved_tensors[0]", True),
                                                                 ("saved_tensors[1]", True)]
    # the shapes: read from the raw data, which torch < 2.5 does not expose (then unknown, never guessed)
    shapes = [s["shape"] for s in index["saved"] + custom["saved"]]
    assert shapes == ([[2], [4, 3], [3]] if HAS_SAVED_HOOK_FACTS else [None] * 3)


def test_freed_is_still_freed():
    x = torch.randn(3, requires_grad=True)
    y = (x.exp() * x).sum()
    y.backward()
    g = both(y)
    assert all(s["freed"] and not s["stale"] and s["packed"] is None for s in saved_records(g))


# -- layouts and inputs -------------------------------------------------------------------------------------------

def test_jagged_nested_tensors():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # nested tensors are a prototype
        nt = torch.nested.nested_tensor([torch.randn(2, 3), torch.randn(4, 3)], layout=torch.jagged,
                                        requires_grad=True)
    g = both(nt.sin() * 2)
    assert [g.node(n)["op"] for n in g.nodes()] == ["MulBackward0", "SinBackward0", "AccumulateGrad"]
    for n in g.nodes():
        outs = g.node(n)["outputs"]
        if outs is None:  # unknown: torch < 2.5 has no _input_metadata and no consumer saved a jagged size
            assert not HAS_INPUT_METADATA and g.node(n)["kind"] != "leaf"
        else:  # a jagged tensor has no one shape
            assert outs and all(o is None for o in outs)
    leaf = g.node(2)["tensor"]
    assert leaf["memory_format"] == "nested" and leaf["shape"] is None
    json.loads(g.to_json())


def test_capture_inside_vmap_names_vmap():
    def f(v):
        return gw.capture((v * 2).sum())

    with pytest.raises(ValueError, match=r"torch\.vmap"):
        torch.vmap(f)(torch.randn(3, 4, requires_grad=True))


def test_wide_fan_in_with_repeated_producers():
    a, b = torch.randn(2, requires_grad=True), torch.randn(2, requires_grad=True)
    parts = [a, b, a * 2, a, b] * 400  # the same producers feed many slots of one node
    g = both(torch.cat(parts).sum())
    cat = g.nodes(op="CatBackward0")[0]
    assert g.nx.in_degree(cat) == 3
    slots = sorted([e["slot"]] + [x["slot"] for x in e["also"] or []] for _, _, e in g.nx.in_edges(cat, data=True))
    assert sorted(s for group in slots for s in group) == list(range(2000))


# -- parameters vs activations ------------------------------------------------------------------------------------

def test_saved_bytes_split_into_parameters_and_activations():
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(4, 6), torch.nn.ReLU(), torch.nn.Linear(6, 3))
    x = torch.randn(5, 4)
    g = both(model(x).sum(), module=model)
    s = g.summary()
    # first Linear: its input does not require grad, so AddmmBackward0 saves only mat1 = x (5x4, an activation);
    # ReLU saves its result (5x6); second Linear saves mat1 = that result and mat2 = weight.t() (a view of 3x6)
    assert s["saved_parameter_bytes"] == 3 * 6 * 4
    assert s["saved_activation_bytes"] == 5 * 4 * 4 + 5 * 6 * 4
    assert s["saved_bytes"] == s["saved_parameter_bytes"] + s["saved_activation_bytes"]
    leaves = {g.node(n)["tensor"]["name"]: g.node(n)["tensor"]["storage"] for n in g.nodes(kind="leaf")}
    addmm = g.node(g.nodes(op="AddmmBackward0")[0])
    mat2 = next(r for r in addmm["saved"] if r["name"] == "mat2")
    assert mat2["storage"] == leaves["2.weight"] and leaves["0.weight"] is not None


# -- library lines ------------------------------------------------------------------------------------------------

def test_torch_nn_nodes_keep_the_user_line_and_name_the_library_line():
    torch.manual_seed(0)
    mha = torch.nn.MultiheadAttention(8, 2, batch_first=True)
    x = torch.randn(2, 3, 8, requires_grad=True)
    line = None

    def run():
        nonlocal line
        import inspect
        line = inspect.currentframe().f_lineno + 1
        return (mha(x, x, x)[0] * 2).sum()

    g = gw.trace(run)
    nodes = [g.node(n) for n in g.nodes() if g.node(n)["kind"] != "leaf"]
    assert all(d["source"].endswith(f":{line}") for d in nodes), {d["source"] for d in nodes}
    inside = [d["lib_source"] for d in nodes if d["lib_source"]]
    # the attention's own nodes say where inside torch.nn they were made, relative to site-packages
    assert all(s.startswith("torch/") for s in inside), inside
    assert len({s for s in inside if s.startswith("torch/nn/functional.py:")}) >= 5
    # the user's own ops (* 2, sum) were made by the user's line: no library line
    mine = [d for d in nodes if d["op"] in ("MulBackward0", "SumBackward0") and d["module"] is None]
    assert mine and all(d["lib_source"] is None for d in mine)
    for d in nodes:
        if d["lib_source"]:
            path, _, num = d["lib_source"].rpartition(":")
            assert os.path.exists(os.path.join(os.path.dirname(os.path.dirname(torch.__file__)), path))
            assert int(num) > 0


def test_transformer_library_lines_and_plain_capture_has_none():
    torch.manual_seed(0)
    tr = torch.nn.Transformer(d_model=8, nhead=2, num_encoder_layers=1, num_decoder_layers=1,
                              dim_feedforward=16, batch_first=True)
    src, tgt = torch.randn(2, 3, 8), torch.randn(2, 4, 8)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        g = gw.trace(tr, src, tgt)
    libs = {g.node(n)["lib_source"] for n in g.nodes()} - {None}
    assert any(s.startswith("torch/nn/modules/transformer.py:") for s in libs)
    assert any(s.startswith("torch/nn/functional.py:") for s in libs)
    sources = {g.node(n)["source"] for n in g.nodes()} - {None}
    assert len(sources) == 1  # everything was made by the one user call
    plain = gw.capture(g.output)
    assert all(plain.node(n)["lib_source"] is None for n in plain.nodes())


def test_new_saved_keys_round_trip_and_are_validated():
    net = _net(True)
    g = gw.capture(net(torch.randn(8, 16)), module=net)
    text = g.to_json()
    assert gw.load_json(text).to_json() == text
    doc = json.loads(g.to_json(version=1))
    # torch < 2.5 cannot tell a checkpointed tensor (it unpacks it): every record says packed null, still validated
    assert any(s["packed"] for n in doc["nodes"] for s in n["saved"]) is HAS_SAVED_HOOK_FACTS
    node = next(n for n in doc["nodes"] if n["saved"] and (any(s["packed"] for s in n["saved"])
                                                           or not HAS_SAVED_HOOK_FACTS))
    node["saved"][0]["packed"] = "maybe"
    with pytest.raises(ValueError, match=r"saved\[0\]\.packed"):
        gw.load_json(json.dumps(doc))


_DEGRADED = textwrap.dedent("""
    import sys, warnings, torch, graphwidget as gw
    sys.path.insert(0, sys.argv[1])
    from graphwidget.capturing.compat import MissingFactWarning
    from test_capture_effects import _grads, _net, saved_records
    warnings.simplefilter("always")
    x = torch.randn(8, 16)
    ref = _net(True)
    ref(x).backward()
    net = _net(True)
    with warnings.catch_warnings(record=True) as seen:
        loss = net(x)
        calls = [b.calls for b in net.blocks]
        graphs = [gw.capture(loss, module=net, engine="python") for _ in range(2)]
    notes = [str(w.message) for w in seen if issubclass(w.category, MissingFactWarning)
             and "unpack_hook" in str(w.message)]
    reran = [b.calls for b in net.blocks] != calls
    packed = [s for g in graphs for s in saved_records(g) if s["packed"]]
    loss.backward()
    same = all(torch.equal(a, b) for a, b in zip(_grads(ref), _grads(net)))
    print(len(notes), reran, len(packed), same)
    print(notes[0] if notes else "")
""")


@pytest.mark.skipif(HAS_SAVED_HOOK_FACTS, reason="this torch exposes SavedTensor.unpack_hook/.data (torch >= 2.5)")
def test_checkpoint_on_torch_without_saved_hook_facts_warns_once_and_keeps_gradients():
    """What torch 2.4 degrades to: capture unpacks checkpointed tensors (the forward is recomputed, nothing is
    marked packed), says so once per process (a fresh one: the warning is per process), and backward still gives
    the gradients of a program never captured."""
    r = subprocess.run([sys.executable, "-c", _DEGRADED, os.path.dirname(__file__)], capture_output=True,
                       text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    counts, message = r.stdout.splitlines()[:2]
    assert counts == "1 True 0 True", r.stdout
    assert "checkpoint" in message and "upgrade torch" in message, message

"""Capture engine: structure, annotations, JSON, safety. Real torch throughout."""
from __future__ import annotations

import gc
import json
import weakref
from typing import Any, Dict, List, Tuple

import networkx as nx
import pytest
import torch
from gw_functions import Square
from torch_facts import HAS_INPUT_METADATA, HAS_SAVED_HOOK_FACTS, SEED_NODES, full_slices

import graphwidget as gw
from graphwidget import examples as ex


def ops(g: gw.GradGraph) -> list:
    return [d["op"] for _, d in g.nx.nodes(data=True)]


# -- structure ------------------------------------------------------------------------------------------------------

def test_simple_graph_structure_and_edge_direction():
    x = torch.randn(3, requires_grad=True)
    w = torch.randn(3, requires_grad=True)
    y = (x * w).sum()
    g = gw.capture(y)
    assert ops(g) == ["SumBackward0", "MulBackward0", "AccumulateGrad", "AccumulateGrad"]
    assert g.meta["roots"] == [0]
    # forward data flow: leaf -> mul -> sum
    assert set(g.nx.edges) == {(1, 0), (2, 1), (3, 1)}
    assert nx.is_directed_acyclic_graph(g.nx)
    e = g.nx.edges[2, 1]
    assert e["slot"] == 0 and e["output"] == 0 and e["shape"] == [3] and e["dtype"] == "float32"
    assert g.nx.edges[3, 1]["slot"] == 1
    mul = g.node(1)
    assert mul["kind"] == "backward" and mul["outputs"] == [{"shape": [3], "dtype": "float32", "device": "cpu"}]
    names = {s["name"] for s in mul["saved"]}
    assert names == {"self", "other"}
    assert mul["saved_bytes"] == 2 * 3 * 4
    leaf = g.node(2)
    assert leaf["kind"] == "leaf" and leaf["tensor"]["shape"] == [3] and leaf["tensor"]["requires_grad"]
    s = g.summary()
    assert s["nodes"] == 4 and s["edges"] == 3 and s["leaves"] == 2 and s["depth"] == 3
    assert s["ops"]["AccumulateGrad"] == 2


def test_saved_tensor_layout_facts():
    x = torch.randn(2, 3, 8, 8, requires_grad=True)
    conv = torch.nn.Conv2d(3, 4, 3).to(memory_format=torch.channels_last)
    y = conv(x.to(memory_format=torch.channels_last)).permute(0, 2, 3, 1)
    z = (y * y.detach().transpose(1, 2)).sum()
    g = gw.capture(z)
    conv_node = g.node(g.nodes(op="ConvolutionBackward0")[0])
    formats = {s["name"]: s["memory_format"] for s in conv_node["saved"]}
    assert formats["weight"] == "channels_last" and formats["input"] == "channels_last"
    mul = g.node(g.nodes(op="MulBackward0")[0])
    other = next(s for s in mul["saved"] if s["name"] == "other")
    assert other["contiguous"] is False and other["memory_format"] == "non_contiguous"
    assert other["stride"] != sorted(other["stride"], reverse=True)
    assert conv_node["attrs"]["stride"] == [1, 1] and conv_node["attrs"]["padding"] == [0, 0]


def test_shared_subgraph_appears_once_and_ids_are_deterministic():
    def program():
        x = torch.ones(4, requires_grad=True)
        a = x.exp()
        return (a * a + a.sin()).sum()

    g1, g2 = gw.capture(program()), gw.capture(program())
    assert ops(g1).count("ExpBackward0") == 1
    exp_id = g1.nodes(op="ExpBackward0")[0]
    assert g1.nx.out_degree(exp_id) == 2  # feeds mul and sin
    mul_id = g1.nodes(op="MulBackward0")[0]
    e = g1.nx.edges[exp_id, mul_id]  # a * a: one edge, both slots kept
    # torch < 2.5: exp's output shape is unknown to a plain capture (no _input_metadata, mul saves no size)
    shape, dtype = ([4], "float32") if HAS_INPUT_METADATA else (None, None)
    assert e["slot"] == 0 and e["also"] == [{"output": 0, "slot": 1, "shape": shape, "dtype": dtype}]
    assert g1.to_json() == g2.to_json()


def test_storage_sharing_counts_distinct_storages_once():
    big = torch.randn(1000, 100, requires_grad=True)
    rows = [big[i] for i in range(5)]  # views of one storage
    y = sum((r * r).sum() for r in rows)
    g = gw.capture(y)
    s = g.summary()
    # every MulBackward0 saves two views of `big`'s storage: logical bytes are small, storage bytes are the whole
    assert s["saved_bytes_logical"] == 5 * 2 * 100 * 4
    mul = g.node(g.nodes(op="MulBackward0")[0])
    assert all(t["storage_bytes"] == 1000 * 100 * 4 for t in mul["saved"])


# -- the seed example ---------------------------------------------------------------------------------------------

def test_homography_repeat_shows_the_big_tensors():
    inp = ex.homography_inputs()
    ga = gw.capture(ex.homography_repeat(**inp))
    gb = gw.capture(ex.homography_broadcast(**ex.homography_inputs()))
    assert (len(ga), len(gb)) == SEED_NODES
    # the repeat version has FEWER nodes (torch < 2.5 adds a full slice per `:`, two per select chain in it, one in
    # the broadcast version: set aside, the rest is the same graph as on torch >= 2.5) ...
    assert len(ga) - len(full_slices(ga)) < len(gb) - len(full_slices(gb))
    # ... but its selects operate on the repeated (8, 16384, 3, 3) tensor: visible in the node data
    sel = [ga.node(n) for n in ga.nodes(op="SelectBackward0")]
    big = [d for d in sel if d["attrs"]["self_sym_sizes"] == [8, 16384, 3, 3]]
    assert len(big) == 12
    assert all(d["outputs"][0]["shape"] == [8, 16384, 3] for d in big)
    rep = [ga.node(n) for n in ga.nodes(op="RepeatBackward0")]
    assert [8, 16384, 3, 3] in [d["outputs"][0]["shape"] for d in rep]
    assert {tuple(d["attrs"]["repeats"]) for d in rep} >= {(1, 16384, 1, 1)}
    # what backward writes: each of those selects writes a gradient of the whole repeated tensor
    assert all(ga.node(n)["grad_bytes"] == 8 * 16384 * 9 * 4 for n in ga.nodes(op="SelectBackward0")
               if ga.node(n)["attrs"]["self_sym_sizes"] == [8, 16384, 3, 3])
    assert ga.summary()["grad_bytes"] > 3 * gb.summary()["grad_bytes"]
    # broadcast version: its selects are tiny
    sel_b = [gb.node(n) for n in gb.nodes(op="SelectBackward0")]
    assert sel_b and all(d["attrs"]["self_sym_sizes"] in ([8, 3, 3], [8, 3]) for d in sel_b)


def test_homography_versions_agree_numerically():
    a_in, b_in = ex.homography_inputs(batch=2, height=16, width=16), ex.homography_inputs(batch=2, height=16,
                                                                                        width=16)
    a, b = ex.homography_repeat(**a_in), ex.homography_broadcast(**b_in)
    torch.testing.assert_close(a, b)
    a.sum().backward()
    b.sum().backward()
    torch.testing.assert_close(a_in["homo"].grad, b_in["homo"].grad)
    torch.testing.assert_close(a_in["img"].grad, b_in["img"].grad)


# -- freed graphs, retained graphs --------------------------------------------------------------------------------

def test_freed_graph_is_captured_with_saved_marked_freed():
    x = torch.randn(5, requires_grad=True)
    y = (x.exp() * x).sum()
    y.backward()
    g = gw.capture(y)
    assert ops(g) == ["SumBackward0", "MulBackward0", "ExpBackward0", "AccumulateGrad"]
    mul = g.node(1)
    assert mul["outputs"][0]["shape"] == [5]  # structure and shapes survive
    assert mul["saved"] and all(s["freed"] and s["shape"] is None for s in mul["saved"])
    assert g.summary()["saved_tensors_freed"] >= 3
    assert g.summary()["saved_bytes"] == 0


def test_retained_graph_shows_sizes():
    x = torch.randn(5, requires_grad=True)
    y = (x.exp() * x).sum()
    y.backward(retain_graph=True)
    mul = gw.capture(y).node(1)
    assert all(not s["freed"] and s["bytes"] == 20 for s in mul["saved"])


# -- nothing kept alive, nothing changed ------------------------------------------------------------------------

def test_capture_keeps_no_tensor_alive():
    x = torch.randn(256, 256, requires_grad=True)
    h = torch.randn(256, 256)
    y = (x * h).sum()
    ref_h = weakref.ref(h)
    g = gw.capture(y)
    del h
    gc.collect()
    assert ref_h() is not None  # still saved by the graph (MulBackward0 saves `other`)
    del y
    gc.collect()
    assert ref_h() is None, "the captured graph must not keep saved tensors alive"
    assert len(g) == 3  # the graph object itself is still usable


def test_capture_and_trace_do_not_change_gradients():
    def run(instrument):
        torch.manual_seed(0)
        model = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.Tanh(), torch.nn.Linear(16, 1))
        x = torch.randn(4, 8, requires_grad=True)
        if instrument == "trace":
            g = gw.trace(lambda: model(x).pow(2).mean())
            loss = g.output
        else:
            loss = model(x).pow(2).mean()
            if instrument == "capture":
                gw.capture(loss, module=model)
        loss.backward()
        return [p.grad.clone() for p in model.parameters()] + [x.grad.clone()]

    plain = run(None)
    for mode in ("capture", "trace"):
        for a, b in zip(plain, run(mode)):
            assert torch.equal(a, b), mode


# -- bad input ----------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("bad,exc,words", [
    (3.0, TypeError, "expects a torch.Tensor"),
    ("loss", TypeError, "expects a torch.Tensor"),
    (torch.randn(3), ValueError, "does not require grad"),
    ([], ValueError, "empty"),
    ([torch.randn(2), 5], ValueError, "does not require grad"),
    ({"cache": object()}, ValueError, "no tensor in it"),
])
def test_bad_input_errors_say_what_to_do(bad, exc, words):
    with pytest.raises(exc, match=words):
        gw.capture(bad)


def test_no_grad_and_inference_mode_errors():
    x = torch.randn(3, requires_grad=True)
    with torch.no_grad():
        y = x * 2
    with pytest.raises(ValueError, match="no_grad"):
        gw.capture(y)
    with torch.inference_mode():
        z = x * 2
    with pytest.raises(ValueError, match="inference_mode"):
        gw.capture(z)


def test_module_kwarg_must_be_a_module():
    with pytest.raises(TypeError, match="nn.Module"):
        gw.capture(torch.randn(2, requires_grad=True).sum(), module="model")


# -- graph shapes that must come out right --------------------------------------------------------------------------

def test_leaf_only():
    x = torch.randn(2, requires_grad=True)
    g = gw.capture(x)
    assert ops(g) == ["AccumulateGrad"] and g.nx.number_of_edges() == 0
    assert g.node(0)["tensor"]["shape"] == [2]


def test_multiple_roots_list_and_dict():
    x = torch.randn(3, requires_grad=True)
    a, b = x.sin(), x.cos()
    g = gw.capture([a, b])
    assert sorted(ops(g)) == ["AccumulateGrad", "CosBackward0", "SinBackward0"]
    assert len(g.meta["roots"]) == 2
    assert len(gw.capture({"a": a, "b": b, "again": a})) == 3


def test_custom_function_node():
    x = torch.randn(4, requires_grad=True)
    g = gw.capture(Square.apply(x).sum())
    node = g.node(g.nodes(kind="custom")[0])
    assert node["op"] == "SquareBackward" and node["saved"][0]["shape"] == [4]
    assert g.summary()["custom"] == 1


def test_checkpoint_graph():
    from torch.utils.checkpoint import checkpoint
    lin = torch.nn.Linear(4, 4)
    x = torch.randn(2, 4, requires_grad=True)
    y = checkpoint(lambda t: lin(t).relu(), x, use_reentrant=False).sum()
    g = gw.capture(y, module=lin)
    assert "ReluBackward0" in ops(g) and "AddmmBackward0" in ops(g)
    assert {d["tensor"]["name"] for _, d in g.nx.nodes(data=True) if d["kind"] == "leaf"} >= {"weight", "bias"}
    y.backward()  # the captured graph still works
    assert lin.weight.grad is not None


def test_double_backward_graph():
    x = torch.randn(3, requires_grad=True)
    y = (x ** 3).sum()
    (gx,) = torch.autograd.grad(y, x, create_graph=True)
    g = gw.capture(gx.sum())
    assert len(g) > 3 and "PowBackward0" in ops(g) and "MulBackward0" in ops(g)
    assert g.nodes(kind="leaf")


def test_complex_and_sparse_tensors():
    z = torch.randn(4, dtype=torch.complex64, requires_grad=True)
    g = gw.capture((z * z.conj()).real.sum())
    # a non-leaf's outputs are null on torch < 2.5 where no consumer saved their size
    dtypes = {o["dtype"] for _, d in g.nx.nodes(data=True) for o in d["outputs"] or () if o}
    assert "complex64" in dtypes
    mul = g.node(g.nodes(op="MulBackward0")[0])
    assert {s["dtype"] for s in mul["saved"]} == {"complex64"}
    i = torch.tensor([[0, 1], [1, 0]])
    s = torch.sparse_coo_tensor(i, torch.tensor([1.0, 2.0]), (2, 2), requires_grad=True, check_invariants=True)
    w = torch.randn(2, 2, requires_grad=True)
    g2 = gw.capture(torch.sparse.mm(s, w).sum())
    leaf = [d for _, d in g2.nx.nodes(data=True) if d["kind"] == "leaf" and d["tensor"]["memory_format"] == "sparse"]
    assert leaf and leaf[0]["tensor"]["stride"] is None
    json.loads(g2.to_json())


def test_views_and_inplace():
    x = torch.randn(4, 4, requires_grad=True)
    y = x * 1
    y[0].mul_(2)
    y.t_()
    g = gw.capture(y.sum())
    assert "CopySlices" in ops(g) and any(op.startswith("TBackward") for op in ops(g))


def test_transformer_encoder_layer_with_parameter_names():
    torch.manual_seed(0)
    layer = torch.nn.TransformerEncoderLayer(d_model=16, nhead=2, dim_feedforward=32, batch_first=True)
    layer.train()
    x = torch.randn(2, 5, 16, requires_grad=True)
    loss = layer(x).pow(2).mean()
    g = gw.capture(loss, module=layer)
    names = {d["tensor"]["name"] for _, d in g.nx.nodes(data=True) if d["kind"] == "leaf"}
    assert {"self_attn.in_proj_weight", "linear1.weight", "norm2.bias"} <= names
    assert len(g) > 40
    assert nx.is_directed_acyclic_graph(g.nx)


# -- JSON -----------------------------------------------------------------------------------------------------------

def test_json_round_trip_is_exact():
    g = gw.trace(ex.homography_repeat, **ex.homography_inputs(batch=2, height=8, width=8))
    text = g.to_json()
    g2 = gw.load_json(text)
    assert g2.to_json() == text
    assert dict(g2.nx.nodes(data=True)) == dict(g.nx.nodes(data=True))
    assert list(g2.nx.edges(data=True)) == list(g.nx.edges(data=True))
    assert g2.meta == g.meta
    data = json.loads(text)
    assert data["format"] == "graphwidget" and data["version"] == 3
    assert json.loads(g2.to_json(version=1)) == json.loads(g.to_json(version=1))  # records too


def test_load_json_rejects_garbage():
    with pytest.raises(ValueError, match="not JSON"):
        gw.load_json("{nope")
    with pytest.raises(ValueError, match="not a graphwidget graph"):
        gw.load_json("{}")
    with pytest.raises(ValueError, match="version 99"):
        gw.load_json(json.dumps({"format": "graphwidget", "version": 99, "nodes": [], "edges": []}))


def test_containers_take_every_tensor_that_requires_grad_and_pass_over_the_rest():
    # A model output (a mapping with caches, ints, None) is captured like its tensors that require grad.
    x = torch.randn(3, requires_grad=True)
    a, b = x.exp(), (x * 2).sum()
    out = {"logits": a, "loss": b, "past_key_values": object(), "n": 3, "mask": torch.ones(3), "none": None}
    g = gw.capture(out)
    assert g.to_json() == gw.capture([a, b]).to_json()
    assert g.summary()["roots"] == 2
    mixed = gw.capture([a, 5, "label"])
    assert mixed.to_json() == gw.capture(a).to_json()


@pytest.mark.parametrize("engine", ["python", "auto"])
def test_saved_tensors_modified_in_place_are_stale_on_every_torch(engine: str):
    """A saved tensor modified in place after the forward is there and stale (backward will fail), never dropped:
    on torch >= 2.5 described from its raw data, on torch 2.4 (no SavedTensor.data) with its shape unknown."""
    x = torch.randn(3, requires_grad=True)
    a = x.exp()
    y = (a * x).sum()
    a.mul_(2)
    g = gw.capture(y, engine=engine)
    saved = {(d["op"], s["name"]): s for _, d in g.nx.nodes(data=True) for s in d["saved"]}
    assert {k for k, s in saved.items() if s["stale"]} == {("MulBackward0", "self"), ("ExpBackward0", "result")}
    assert not saved[("MulBackward0", "other")]["stale"] and saved[("MulBackward0", "other")]["shape"] == [3]
    for key in (("MulBackward0", "self"), ("ExpBackward0", "result")):
        assert not saved[key]["freed"]
        assert saved[key]["shape"] == ([3] if HAS_SAVED_HOOK_FACTS else None)
    assert gw.load_json(g.to_json()).summary()["saved_tensors_stale"] == 2
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        y.backward()


# -- modules: what each is, and which nodes belong to which -----------------------------------------------------------
def test_trace_and_capture_record_what_each_module_is() -> None:
    model = torch.nn.Sequential(torch.nn.Linear(3, 4), torch.nn.ReLU(), torch.nn.Linear(4, 2))
    x = torch.randn(5, 3)
    t = gw.trace(model, x)
    assert t.meta["modules"] == {"": "Sequential", "0": "Linear", "1": "ReLU", "2": "Linear"}
    c = gw.capture(model(x).sum(), module=model)
    assert c.meta["modules"] == t.meta["modules"] and c.meta["modules_inferred"] is True
    plain = gw.capture(model(x).sum())
    assert "modules" not in plain.meta and all(d["module"] is None for _, d in plain.nx.nodes(data=True))
    again = gw.load_json(c.to_json())
    assert again.meta["modules"] == c.meta["modules"]


def test_a_plain_capture_puts_each_node_in_the_module_of_its_parameters() -> None:
    import rewrites
    model = rewrites.ConvNet(width=8, blocks=2)
    g = gw.capture(model(torch.randn(2, 3, 8, 8)), module=model)
    nodes = [d for _, d in g.nx.nodes(data=True) if d["kind"] != "leaf"]
    # every op that reads a parameter is in that parameter's module, exactly
    for v, d in g.nx.nodes(data=True):
        params = [g.node(u)["tensor"]["name"] for u in g.nx.predecessors(v) if g.node(u)["kind"] == "leaf"]
        if params:
            assert {p.rpartition(".")[0] for p in params} == {d["module"]}, (d["op"], params, d["module"])
    # and the model opens as stem / blocks / fc: no op outside a module it could have come from
    tops = {(d["module"] or "").split(".")[0] for d in nodes}
    assert tops == {"", "stem", "blocks", "fc"}
    assert {d["module"] for d in nodes if d["op"] == "ReluBackward0"} == {"stem", "blocks.0", "blocks.1"}


def _blocks_ops(g: Any, prefix: str) -> Dict[str, List[Tuple[str, str]]]:
    """Per block ``<prefix>.<k>``: (module path inside the block, op) of its nodes in creation order."""
    ops: Dict[str, List[Tuple[int, str, str]]] = {}
    for _, d in g.nx.nodes(data=True):
        parts = (d["module"] or "").split(".")
        if d["kind"] != "leaf" and parts[0] == prefix and len(parts) > 1:
            ops.setdefault(f"{prefix}.{parts[1]}", []).append((d["seq"], ".".join(parts[2:]), d["op"]))
    return {k: [(m, op) for _, m, op in sorted(v)] for k, v in ops.items()}


@pytest.mark.parametrize("kind", ["post-activation", "pre-norm"])
def test_a_plain_capture_puts_the_same_nodes_in_every_one_of_identical_blocks(kind: str) -> None:
    """Twelve identical residual blocks (names that sort 0, 1, 10, 11, 2, ...): the ops between blocks (the residual
    add, the activation after it) go to the same module in every block, the first one included, so that a view can
    fold the blocks ("blocks.0–11 · Block ×12"); at the block's level, where trace puts them."""
    from torch import nn

    class PostActivation(nn.Module):  # ResNet's basic block: conv, bn, relu, conv, bn, add, relu
        def __init__(self) -> None:
            super().__init__()
            self.conv1, self.bn1 = nn.Conv2d(4, 4, 3, padding=1, bias=False), nn.BatchNorm2d(4)
            self.conv2, self.bn2 = nn.Conv2d(4, 4, 3, padding=1, bias=False), nn.BatchNorm2d(4)
            self.relu = nn.ReLU()

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return self.relu(x + self.bn2(self.conv2(self.relu(self.bn1(self.conv1(x))))))

    class Attention(nn.Module):  # with a parameterless child, as GPT-2's (its dropouts)
        def __init__(self) -> None:
            super().__init__()
            self.fc, self.drop = nn.Linear(8, 8), nn.Dropout(0.1)

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return self.drop(self.fc(x).softmax(-1))

    class PreNorm(nn.Module):  # a transformer block's shape: x + f(norm(x)), twice
        def __init__(self) -> None:
            super().__init__()
            self.ln1, self.attn = nn.LayerNorm(8), Attention()
            self.ln2, self.fc, self.act = nn.LayerNorm(8), nn.Linear(8, 8), nn.GELU()

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            x = x + self.attn(self.ln1(x))
            return x + self.act(self.fc(self.ln2(x)))

    class Net(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            post = kind == "post-activation"
            self.a, self.b = (nn.Conv2d(3, 4, 1), nn.Conv2d(3, 4, 1)) if post else (nn.Embedding(9, 8), nn.Embedding(9, 8))
            self.blocks = nn.Sequential(*(PostActivation() if post else PreNorm() for _ in range(12)))
            self.out = nn.Linear(4 if post else 8, 2)

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            h = self.blocks(self.a(x) + self.b(x))  # the first block's input: an op between two modules (GPT-2's)
            return self.out(h.mean((2, 3)) if kind == "post-activation" else h.mean(1))

    torch.manual_seed(0)
    model = Net().eval()
    x = torch.randn(2, 3, 6, 6) if kind == "post-activation" else torch.randint(0, 9, (2, 5))
    plain = gw.capture(model(x).sum(), module=model)
    traced = gw.trace(lambda t: model(t).sum(), x)
    got, want = _blocks_ops(plain, "blocks"), _blocks_ops(traced, "blocks")
    assert set(got) == {f"blocks.{k}" for k in range(12)}
    # every block alike (but the last: what follows the model's last block, the head's mean, has no parameter to
    # say where it was made, and goes with the block)
    assert all(ops == got["blocks.1"] for k, ops in got.items() if k != "blocks.11"), \
        {k: v for k, v in got.items() if v != got["blocks.1"]}
    assert [op for _, op in got["blocks.1"]] == [op for _, op in want["blocks.1"]]


def test_a_plain_capture_of_gpt2_places_every_parameter_op_as_trace_does() -> None:
    transformers = pytest.importorskip("transformers")
    torch.manual_seed(0)
    cfg = transformers.GPT2Config(n_layer=2, n_head=2, n_embd=32, vocab_size=100, n_positions=32)
    model = transformers.GPT2LMHeadModel(cfg)
    ids = torch.randint(0, 100, (1, 8))
    plain = gw.capture(model(ids).logits.sum(), module=model)
    traced = gw.trace(lambda i: model(i).logits.sum(), ids)
    by_seq = {d["seq"]: d["module"] for _, d in traced.nx.nodes(data=True)}
    reads_param = [d for v, d in plain.nx.nodes(data=True) if d["kind"] != "leaf"
                   and any(plain.node(u)["kind"] == "leaf" and plain.node(u)["tensor"]["requires_grad"]
                           for u in plain.nx.predecessors(v))]
    # per block ln_1, c_attn, c_proj, ln_2, c_fc, mlp.c_proj; then wte, wpe, ln_f and the tied lm_head
    assert len(reads_param) >= 2 * 6 + 4
    assert all(d["module"] == by_seq[d["seq"]] for d in reads_param)
    blocks = {d["module"].split(".")[2] for _, d in plain.nx.nodes(data=True)
              if (d["module"] or "").startswith("transformer.h.")}
    assert blocks == {"0", "1"}

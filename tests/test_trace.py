"""gw.trace: where nodes were created (file:line, code, module path) and forward strides; nothing left behind."""
from __future__ import annotations

import inspect
import os

import pytest
import torch
from gw_functions import Square

import graphwidget as gw
from graphwidget import examples as ex

HERE = os.path.abspath(__file__)


class Block(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.attn = torch.nn.Linear(8, 8)
        self.mlp = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.GELU(), torch.nn.Linear(16, 8))

    def forward(self, x):
        return x + self.mlp(self.attn(x).relu())


class Encoder(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.layers = torch.nn.ModuleList([Block() for _ in range(4)])

    def forward(self, x):
        for layer in self.layers:
            x = layer(x)
        return x


def line_of(fn, text):
    src, start = inspect.getsourcelines(fn)
    for i, line in enumerate(src):
        if text in line:
            return start + i
    raise AssertionError(text)


def test_source_code_and_module_paths():
    torch.manual_seed(0)
    enc = Encoder()
    x = torch.randn(3, 8, requires_grad=True)

    def loss_fn(model, inp):
        out = model(inp)
        return out.pow(2).mean()

    g = gw.trace(loss_fn, enc, x)
    assert g.meta["traced"] is True
    assert torch.is_tensor(g.output) and g.output.requires_grad
    pow_node = g.node(g.nodes(op="PowBackward0")[0])
    assert pow_node["source"] == f"{HERE}:{line_of(loss_fn, 'out.pow(2)')}"
    assert pow_node["code"] == "return out.pow(2).mean()"
    assert pow_node["module"] is None  # outside any module
    modules = {d["module"] for _, d in g.nx.nodes(data=True) if d["kind"] == "backward"}
    assert {"layers.3.attn", "layers.0.mlp.0", "layers.2.mlp.1", "layers.1"} <= modules
    relu = g.node(g.nodes(op="ReluBackward0")[0])
    assert relu["code"] == "return x + self.mlp(self.attn(x).relu())"
    # leaves are named after the model's parameters
    names = {d["tensor"]["name"] for _, d in g.nx.nodes(data=True) if d["kind"] == "leaf"}
    assert "layers.3.mlp.2.weight" in names
    # every backward node was attributed
    unattributed = [d["op"] for _, d in g.nx.nodes(data=True) if d["kind"] != "leaf" and d["source"] is None]
    assert unattributed == []


def test_linear_inner_nodes_get_the_same_line():
    lin = torch.nn.Linear(4, 2)
    g = gw.trace(lambda x: lin(x).sum(), torch.randn(3, 4))
    t_node = g.node(g.nodes(op="TBackward0")[0])
    addmm = g.node(g.nodes(op="AddmmBackward0")[0])
    assert t_node["source"] == addmm["source"] and t_node["module"] == "" == addmm["module"]


def test_custom_function_gets_its_own_line_and_apply_is_restored():
    original = torch.autograd.Function.__dict__["apply"]

    def fn(x):
        y = Square.apply(x)
        return y.sum()

    g = gw.trace(fn, torch.randn(5, requires_grad=True))
    node = g.node(g.nodes(kind="custom")[0])
    assert node["code"] == "y = Square.apply(x)"
    assert torch.autograd.Function.__dict__["apply"] is original


def test_forward_strides_of_outputs():
    def fn(x):
        y = x.transpose(0, 1)
        return (y * 2).sum()

    x = torch.randn(3, 5, requires_grad=True)
    g = gw.trace(fn, x)
    tr = g.node(g.nodes(op="TransposeBackward0")[0])
    assert tr["out_stride"] == [[1, 5]] and tr["out_contiguous"] == [False]
    # element-wise ops keep the input's layout: the product is transposed too (a thing users never see)
    mul = g.node(g.nodes(op="MulBackward0")[0])
    assert mul["out_stride"] == [[1, 5]] and mul["out_contiguous"] == [False]
    g2 = gw.trace(lambda x: (x.transpose(0, 1).contiguous() * 2).sum(), x)
    assert g2.node(g2.nodes(op="MulBackward0")[0])["out_contiguous"] == [True]


def test_homography_nodes_point_at_the_example_lines():
    g = gw.trace(ex.homography_repeat, **ex.homography_inputs(batch=2, height=8, width=8))
    rep = [g.node(n) for n in g.nodes(op="RepeatBackward0")]
    assert any(d["code"] == "h = homo.unsqueeze(1).repeat(1, W * H, 1, 1)" for d in rep)
    assert all(d["source"].startswith(os.path.abspath(ex.homography_repeat.__code__.co_filename)) for d in rep)


def test_trace_leaves_no_hooks_behind_and_errors_clearly():
    from torch.nn.modules import module as nn_module
    before = (len(nn_module._global_forward_pre_hooks), len(nn_module._global_forward_hooks))
    modes_before = torch.overrides._get_current_function_mode_stack()
    gw.trace(lambda x: (x * 2).sum(), torch.randn(2, requires_grad=True))
    with pytest.raises(ZeroDivisionError):
        gw.trace(lambda x: 1 / 0, torch.randn(2))
    assert (len(nn_module._global_forward_pre_hooks), len(nn_module._global_forward_hooks)) == before
    assert torch.overrides._get_current_function_mode_stack() == modes_before
    with pytest.raises(TypeError, match="callable"):
        gw.trace(torch.randn(2))
    with pytest.raises(ValueError, match="no tensor that requires grad"):
        gw.trace(lambda: torch.randn(2) * 2)


def test_trace_multiple_outputs_and_module_fn():
    model = ex.SmallConvNet()
    x = torch.randn(2, 3, 8, 8)
    g = gw.trace(model, x)
    assert g.node(g.nodes(op="ConvolutionBackward0")[0])["module"] in {"features.0", "features.3"}
    g2 = gw.trace(lambda t: {"a": t.sin(), "b": (t.cos(), 3)}, torch.randn(2, requires_grad=True))
    assert len(g2.meta["roots"]) == 2 and isinstance(g2.output, dict)


def test_trace_does_not_change_results():
    torch.manual_seed(0)
    model = ex.SmallConvNet()
    x, t = torch.randn(4, 3, 8, 8), torch.tensor([1, 2, 3, 4])
    plain = ex.convnet_loss(model, x, t)
    plain.backward()
    grads = [p.grad.clone() for p in model.parameters()]
    model.zero_grad()
    g = gw.trace(ex.convnet_loss, model, x, t)
    assert torch.equal(g.output, plain)
    g.output.backward()
    assert all(torch.equal(a, p.grad) for a, p in zip(grads, model.parameters()))

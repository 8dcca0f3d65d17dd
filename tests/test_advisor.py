"""The advisor on real torch graphs.

Every rule fires on a minimal example, at the line that causes it (the line carrying a ``# <- rule`` marker below),
and stays silent on its near-miss twin; well-written code gets no warning at all; findings carry their evidence, sort
by severity and share, and advising never changes a gradient. The API (findings in the graph's JSON and views, advice
without torch, ``resolved`` across two versions of a program): tests/test_advisor_api.py.

``memory-layout`` is the one rule that measures. Its positive example is a bmm whose matrices are stored
batch-innermost, which no BLAS call can take (about x50-x150 slower here, on a loaded 2-core box as on an idle
one): the test checks the rule measured and reported it, not how fast anything is. Its twins are silent without
any measurement (layouts BLAS takes as they are), or by measurement (the channels-last CNN of the well-written set).
"""
from __future__ import annotations

from pathlib import Path
from typing import Any, Dict, List

import numpy as np
import pytest
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch_facts import FULL_SLICES

import graphwidget as gw
from graphwidget import examples as ex
from graphwidget.analysis.advisor import Finding

HERE = Path(__file__).resolve()
HOMOGRAPHY = Path(ex.__file__).resolve().parent / "homography.py"
SMALL = dict(batch=2, height=32, width=32)


def line_of(marker: str, path: Path = HERE) -> str:
    """``file:LINE`` of the one line ending with ``marker`` here, or starting with it in another file (what a
    traced node's ``source`` says)."""
    lines = path.read_text().splitlines()
    hits = [i for i, text in enumerate(lines, 1)
            if (text.rstrip().endswith(marker) if path == HERE else text.strip().startswith(marker))]
    assert len(hits) == 1, (marker, hits)
    return f"{path}:{hits[0]}"


def rules_of(fs: List[Finding]) -> List[str]:
    return [f.rule for f in fs]


def warnings_of(fs: List[Finding]) -> List[str]:
    return [str(f) for f in fs if f.severity == "warning"]


# -- the programs ------------------------------------------------------------------------------------------------------
def repeat_mul(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    r = x.repeat(1, y.shape[1])  # <- repeat-broadcast
    return (r * y).sum()


def repeat_narrow_mul(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    r = x.repeat(1, y.shape[1]).narrow(0, 0, x.shape[0]).narrow(1, 0, y.shape[1])  # <- repeat then full slices
    return (r * y).sum()


def repeat_part_mul(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    r = x.repeat(1, 2 * y.shape[1]).narrow(1, 0, y.shape[1])
    return (r * y).sum()


def tile_mul(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    return (x.repeat(1, 4) * y).sum()  # tiles a dim of size > 1: broadcasting cannot do that


def repeat_cat(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    return torch.cat([x.repeat(1, y.shape[1]), y], 1).sum()


def repeat_view(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    r = x.repeat(1, y.shape[1]).view(x.shape[0], 32, -1)  # sizes spelled out: dropping the repeat breaks it
    return (r * y.view(x.shape[0], 32, -1)).sum()


def repeat_returned(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    return x.repeat(1, y.shape[1])


def repeat_add_constant(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    return (x.repeat(1, y.shape[1]) + y).sum()  # y's shape is not recorded by AddBackward0: unprovable


def expand_copy(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    e = x.unsqueeze(1).expand(-1, y.shape[1], -1).contiguous()  # <- materialised-expand
    return (e * y).sum()


def expand_view(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    e = x.unsqueeze(1).expand(-1, y.shape[1], -1)
    return (e * y).sum()


def expand_copy_matmul(x: torch.Tensor, w: torch.Tensor) -> torch.Tensor:
    e = x.unsqueeze(1).expand(-1, w.shape[0], -1).contiguous()
    return torch.matmul(e, w.unsqueeze(0).transpose(1, 2)).sum()


def interleave_mul(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    r = x.repeat_interleave(y.shape[1], dim=1)  # <- repeat_interleave
    return (r * y).sum()


def interleave_values(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    return (x.repeat_interleave(y.shape[1] // x.shape[1], dim=1) * y).sum()


def select_loop(x: torch.Tensor) -> torch.Tensor:
    total = x[0].sum() * 0
    for i in range(x.shape[0]):
        total = total + x[i, 0] * x[i, 1]  # <- loop-built
    return total


def short_loop(x: torch.Tensor) -> torch.Tensor:
    total = x[0].sum() * 0
    for i in range(4):
        total = total + x[i, 0] * x[i, 1]
    return total


def recurrence(x: torch.Tensor, h: torch.Tensor) -> torch.Tensor:
    for t in range(x.shape[1]):
        h = torch.tanh(h + x[:, t])  # <- index-repeated
    return h.sum()


def recurrence_narrowed(x: torch.Tensor, h: torch.Tensor) -> torch.Tensor:
    for t in range(x.shape[1]):
        h = torch.tanh(h + x.narrow(0, 0, x.shape[0])[:, t])  # a full slice before each select, on any torch
    return h.sum()


def recurrence_unbind(x: torch.Tensor, h: torch.Tensor) -> torch.Tensor:
    for xt in x.unbind(1):
        h = torch.tanh(h + xt)
    return h.sum()


def qkv(p: torch.Tensor) -> torch.Tensor:
    q, k, v = p[0], p[1], p[2]
    return (torch.softmax(q @ k.T, -1) @ v).sum()


def upcast(mlp: nn.Module, x: torch.Tensor, target: np.ndarray) -> torch.Tensor:
    pred = mlp(x)
    return ((pred - torch.from_numpy(target)) ** 2).mean()  # <- dtype-upcast


def upcast_on_purpose(mlp: nn.Module, x: torch.Tensor, target: np.ndarray) -> torch.Tensor:
    pred = mlp(x)
    return ((pred.double() - torch.from_numpy(target)) ** 2).mean()


def cast_float(mlp: nn.Module, x: torch.Tensor, target: np.ndarray) -> torch.Tensor:
    pred = mlp(x)
    return ((pred - torch.from_numpy(target).float()) ** 2).mean()


def bmm(a: torch.Tensor, w: torch.Tensor) -> torch.Tensor:
    return torch.bmm(a, w).sum()  # <- memory-layout


W_BIG = torch.randn(64, 4096, generator=torch.Generator().manual_seed(1))


def saved_view(x: torch.Tensor, t: torch.Tensor) -> torch.Tensor:
    big = torch.tanh(x @ W_BIG)
    return (big[:, :8] * t).sum()  # <- saved-view-storage


def saved_view_cloned(x: torch.Tensor, t: torch.Tensor) -> torch.Tensor:
    big = torch.tanh(x @ W_BIG)
    return (big[:, :8].clone() * t).sum()


def leaf(*shape: int) -> torch.Tensor:
    return torch.randn(*shape, generator=torch.Generator().manual_seed(sum(shape))).requires_grad_()


def data(*shape: int) -> torch.Tensor:
    return torch.randn(*shape, generator=torch.Generator().manual_seed(7))


def mlp32(out: int = 256) -> nn.Module:
    torch.manual_seed(0)
    return nn.Sequential(nn.Linear(32, 256), nn.ReLU(), nn.Linear(256, out))


# -- each rule fires, at the right line, with the rewrite ------------------------------------------------------------
def test_repeat_broadcast_fires_on_the_seed_at_the_repeat_line():
    g = gw.trace(ex.homography_repeat, **ex.homography_inputs(**SMALL))
    (f,) = g.advise()
    assert f.rule == "repeat-broadcast" and f.severity == "warning"
    assert f.source == line_of("h = homo.unsqueeze(1).repeat(1, W * H, 1, 1)", HOMOGRAPHY)
    assert f.code == "h = homo.unsqueeze(1).repeat(1, W * H, 1, 1)"
    assert g.node(f.nodes[0])["op"] == "RepeatBackward0"  # the cause first, then the 24 selects that read it
    # (and on torch 2.4 the full slices of h[:, :, 0, 0] before them: they read, and write gradients of, all of h)
    slices = ["SliceBackward0"] * 24 if FULL_SLICES else []
    assert sorted(g.node(n)["op"] for n in f.nodes[1:]) == ["SelectBackward0"] * 24 + slices
    assert f.suggestion.startswith("h = homo.unsqueeze(1)  # no repeat")
    assert f.evidence["shape"] == [2, 1024, 3, 3] and f.evidence["factor"] == 1024
    assert f.evidence["grad_bytes"] == sum(g.node(n)["grad_bytes"] for n in f.nodes)
    assert "1,024x along dim 1" in f.message and "24 SelectBackward0" in f.message


def test_repeat_broadcast_minimal_and_its_twins():
    x, y = leaf(512, 1), data(512, 1024)
    (f,) = gw.trace(repeat_mul, x, y).advise()
    assert (f.rule, f.source, f.severity) == ("repeat-broadcast", line_of("# <- repeat-broadcast"), "warning")
    assert f.suggestion.startswith("r = x  # no repeat")
    # the same repeat where broadcasting cannot serve, or cannot be proven to
    for fn, a in ((tile_mul, (leaf(512, 256), y)), (repeat_cat, (x, y)), (repeat_view, (x, y)),
                  (repeat_returned, (x, y)), (repeat_add_constant, (x, y))):
        assert gw.trace(fn, *a).advise(min_share=0) == [], fn.__name__
    # ... and with the other operand recorded (it requires grad), the add proves it
    (f,) = gw.trace(repeat_add_constant, x, leaf(512, 1024)).advise()
    assert f.rule == "repeat-broadcast"


def test_full_slices_after_a_repeat_are_seen_through():
    """A slice that takes a whole dim copies and indexes nothing (torch 2.4 records one for every ``:`` in
    ``h[:, :, 0, 0]``; ``narrow(d, 0, size)`` records one on any torch): the repeat behind it is still found."""
    x, y = leaf(512, 1), data(512, 1024)
    g = gw.trace(repeat_narrow_mul, x, y)
    assert [g.node(n)["op"] for n in g.nx if g.node(n)["op"] == "SliceBackward0"] == ["SliceBackward0"] * 2
    (f,) = g.advise()
    assert f.rule == "repeat-broadcast" and f.source == line_of("# <- repeat then full slices")
    assert sorted(g.node(n)["op"] for n in f.nodes) == ["RepeatBackward0"] + ["SliceBackward0"] * 2  # the mul broadcasts
    # a slice that takes part of the repeated dim indexes it: not proven, no finding
    assert gw.trace(repeat_part_mul, x, y).advise(min_share=0) == []


def test_repeat_interleave_of_a_size_one_dim_is_a_repeat():
    x, y = leaf(512, 1), data(512, 1024)
    (f,) = gw.trace(interleave_mul, x, y).advise()
    assert f.rule == "repeat-broadcast" and f.source == line_of("# <- repeat_interleave")
    assert f.suggestion.startswith("r = x  # no repeat_interleave")
    # of a dim of size 4 it interleaves real values: nothing to broadcast
    assert gw.trace(interleave_values, leaf(512, 4), data(512, 1024)).advise(min_share=0) == []


def test_materialised_expand_and_its_twins():
    x, y = leaf(128, 16), data(128, 1024, 16)
    (f,) = gw.trace(expand_copy, x, y).advise()
    assert (f.rule, f.source) == ("materialised-expand", line_of("# <- materialised-expand"))
    assert f.suggestion.startswith("e = x.unsqueeze(1).expand(-1, y.shape[1], -1)  # no contiguous")
    assert [gw.trace(expand_copy, x, y).node(n)["op"] for n in f.nodes[:2]] == ["CloneBackward0", "ExpandBackward0"]
    assert gw.trace(expand_view, x, y).advise(min_share=0) == []
    assert gw.trace(expand_copy_matmul, x, leaf(64, 16)).advise(min_share=0) == []


def test_loop_built_fires_on_a_loop_and_suggests_the_vectorised_line():
    g = gw.trace(select_loop, leaf(64, 4))
    (f,) = g.advise()
    assert (f.rule, f.severity, f.source) == ("loop-built", "warning", line_of("# <- loop-built"))
    assert f.suggestion.startswith("total = total + (x[:, 0] * x[:, 1]).sum(0)")
    assert f.evidence["iterations"] == 64 and f.evidence["reads"] == 128 and f.evidence["nodes"] == 384
    # the vectorised line computes the same
    x = leaf(64, 4)
    torch.testing.assert_close(select_loop(x), x[0].sum() * 0 + (x[:, 0] * x[:, 1]).sum(0))
    # the built-in example too, at its line
    (f,) = gw.trace(lambda: ex.select_loop(256)[1]).advise()
    assert f.rule == "loop-built" and f.source == line_of("total = total + x[i, 0] * x[i, 1]", HOMOGRAPHY)
    # captured without source lines, a loop cannot be told from its lines: its reads are an index-repeated finding
    (f,) = gw.capture(ex.select_loop(256)[1]).advise()
    assert f.rule == "index-repeated" and f.source is None


def test_loop_built_twins_a_short_loop_and_a_recurrence():
    assert [f for f in gw.trace(short_loop, leaf(64, 4)).advise(min_share=0) if f.severity == "warning"] == []
    assert "loop-built" not in rules_of(gw.trace(short_loop, leaf(64, 4)).advise(min_share=0))
    fs = gw.trace(recurrence, leaf(16, 64, 64), torch.zeros(16, 64)).advise()
    assert "loop-built" not in rules_of(fs)  # each step feeds the next: not vectorisable


def test_index_repeated_fires_on_per_step_indexing_and_suggests_unbind():
    g = gw.trace(recurrence, leaf(16, 64, 64), torch.zeros(16, 64))
    (f,) = g.advise()
    assert (f.rule, f.severity, f.source) == ("index-repeated", "warning", line_of("# <- index-repeated"))
    assert f.evidence["reads"] == 64 and f.evidence["bytes"] == 16 * 64 * 64 * 4
    assert f.evidence["written_bytes"] == 64 * f.evidence["bytes"]
    assert f.suggestion.startswith("x_parts = x.unbind(1)")
    # the seed's selects, when the repeat rule is not asked: the first line that indexes h
    (f,) = gw.trace(ex.homography_repeat, **ex.homography_inputs(**SMALL)).advise(rules=["index-repeated"])
    assert f.rule == "index-repeated" and f.source == line_of("temp1 = h[:, :, 0, 0]", HOMOGRAPHY)
    assert f.suggestion.startswith("h_parts = h.unbind(2)")


def test_index_repeated_sees_through_full_slices():
    """A full slice before the select (``narrow`` of a whole dim; torch 2.4's ``:``) indexes nothing: the reads are
    still selects along dim 1, and the fix is still one unbind, not a split along the slice's dim."""
    g = gw.trace(recurrence_narrowed, leaf(16, 64, 64), torch.zeros(16, 64))
    assert sum(g.node(n)["op"] == "SliceBackward0" for n in g.nx) >= 64
    (f,) = g.advise()
    assert f.rule == "index-repeated" and f.evidence["reads"] == 64
    assert ".unbind(1)  # once" in f.suggestion and "split" not in f.suggestion


def test_index_repeated_twins_unbind_once_and_three_reads():
    assert gw.trace(recurrence_unbind, leaf(16, 64, 64), torch.zeros(16, 64)).advise(min_share=0) == []
    assert gw.trace(qkv, leaf(3, 256, 256)).advise(min_share=0) == []


def test_dtype_upcast_names_the_line_where_float64_enters():
    mlp, x, target = mlp32(), data(512, 32), np.random.default_rng(0).random((512, 256))
    g = gw.trace(upcast, mlp, x, target, module=mlp)
    (f,) = g.advise()
    assert (f.rule, f.severity, f.source) == ("dtype-upcast", "warning", line_of("# <- dtype-upcast"))
    assert g.node(f.nodes[0])["op"] == "SubBackward0" and f.evidence["param_dtype"] == "float32"
    assert "torch.from_numpy(target).float()" in f.suggestion
    assert f.evidence["float64_nodes"] == 3


def test_dtype_upcast_twins_float64_on_purpose():
    target = np.random.default_rng(0).random((512, 256))
    mlp = mlp32()
    assert gw.trace(upcast_on_purpose, mlp, data(512, 32), target).advise(min_share=0) == []
    assert gw.trace(cast_float, mlp, data(512, 32), target).advise(min_share=0) == []
    m64 = mlp32().double()  # a float64 model on purpose: nothing is promoted
    assert gw.trace(upcast, m64, data(512, 32).double(), target).advise(min_share=0) == []


@pytest.mark.slow  # times the bmm in both layouts over interleaved rounds: 3-18 s
@pytest.mark.timing
def test_memory_layout_measures_and_reports_both_times():
    a = torch.randn(64, 64, 64, generator=torch.Generator().manual_seed(0)).permute(2, 0, 1)  # batch innermost
    w = leaf(64, 64, 32)
    g = gw.trace(bmm, a, w)
    rng = torch.get_rng_state()
    (f,) = g.advise(rules=["memory-layout"])
    assert torch.equal(rng, torch.get_rng_state())  # measuring uses its own generator
    assert (f.rule, f.severity, f.source) == ("memory-layout", "warning", line_of("# <- memory-layout"))
    ev = f.evidence
    assert ev["alternative"] == "contiguous" and ev["strides"] == [1, 4096, 64] and ev["rounds"] >= 3
    assert ev["ms"] > 0 and ev["alt_ms"] > 0 and ev["speedup"] == pytest.approx(ev["ms"] / ev["alt_ms"], rel=1e-2)
    assert f"{ev['ms']:.3g} ms as captured and {ev['alt_ms']:.3g} ms with contiguous" in f.message
    assert f.suggestion.startswith("a = a.contiguous()")


def test_memory_layout_leaves_layouts_blas_takes_alone():
    # transposed and strided-batch operands are what BLAS takes as they are: nothing to measure
    a = torch.randn(64, 32, 64).transpose(1, 2)
    base = torch.randn(64, 64, 2, 32)[:, :, 0]
    assert gw.trace(bmm, a, leaf(64, 32, 16)).advise(rules=["memory-layout"], min_share=0) == []
    assert gw.trace(bmm, base, leaf(64, 32, 16)).advise(rules=["memory-layout"], min_share=0) == []
    from graphwidget.analysis.advisor import memory_layout
    assert memory_layout._blas_ok([64, 32], [1, 64]) and not memory_layout._blas_ok([64, 64], [4096, 64])


def test_saved_view_storage_is_info_and_its_twins():
    x, t = data(256, 64), leaf(256, 8)
    (f,) = gw.trace(saved_view, x, t).advise()
    assert (f.rule, f.severity, f.source) == ("saved-view-storage", "info", line_of("# <- saved-view-storage"))
    assert f.evidence["storage_bytes"] == 256 * 4096 * 4 and f.evidence["bytes"] == 256 * 8 * 4
    assert gw.trace(saved_view_cloned, x, t).advise(min_share=0) == []
    # when the storage is saved whole anyway (tanh saves its result), the view costs nothing more
    assert gw.trace(saved_view, leaf(256, 64), t).advise(min_share=0) == []


# -- well-written code: no warnings -----------------------------------------------------------------------------------
class BasicBlock(nn.Module):
    def __init__(self, cin: int, cout: int, stride: int = 1) -> None:
        super().__init__()
        self.conv1 = nn.Conv2d(cin, cout, 3, stride, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(cout)
        self.conv2 = nn.Conv2d(cout, cout, 3, 1, 1, bias=False)
        self.bn2 = nn.BatchNorm2d(cout)
        self.down = (nn.Sequential(nn.Conv2d(cin, cout, 1, stride, bias=False), nn.BatchNorm2d(cout))
                     if stride != 1 or cin != cout else None)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        identity = x if self.down is None else self.down(x)
        out = F.relu(self.bn1(self.conv1(x)))
        return F.relu(self.bn2(self.conv2(out)) + identity)


class TinyResNet(nn.Module):
    """torchvision's ResNet layout, by hand: stem, max-pool, basic blocks with a downsampling shortcut, pool, fc."""

    def __init__(self, classes: int = 10) -> None:
        super().__init__()
        self.stem = nn.Sequential(nn.Conv2d(3, 16, 3, 1, 1, bias=False), nn.BatchNorm2d(16), nn.ReLU())
        self.pool = nn.MaxPool2d(2)
        self.layer1 = BasicBlock(16, 16)
        self.layer2 = BasicBlock(16, 32, stride=2)
        self.fc = nn.Linear(32, classes)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.layer2(self.layer1(self.pool(self.stem(x))))
        return self.fc(torch.flatten(F.adaptive_avg_pool2d(x, 1), 1))


def _well_written() -> Dict[str, Any]:
    torch.manual_seed(0)
    mlp = nn.Sequential(nn.Linear(128, 256), nn.ReLU(), nn.Linear(256, 10))
    layer = nn.TransformerEncoderLayer(d_model=64, nhead=4, dim_feedforward=128, batch_first=True)
    cnn = ex.SmallConvNet()
    batch = np.random.default_rng(0).random((16, 32, 32, 3), dtype=np.float32)  # (N, H, W, C) from NumPy
    resnet = TinyResNet()
    labels = torch.randint(0, 10, (16,))
    return {
        "homography_broadcast": (ex.homography_broadcast, (), ex.homography_inputs(batch=4, height=64, width=64), None),
        "mlp_cross_entropy": (lambda x, y: F.cross_entropy(mlp(x), y), (data(256, 128), labels.repeat(16)), {}, mlp),
        "transformer_encoder_layer": (lambda x: layer(x).pow(2).mean(), (data(8, 32, 64),), {}, layer),
        "cnn_channels_last_numpy": (ex.convnet_loss, (cnn, torch.from_numpy(batch).permute(0, 3, 1, 2), labels), {},
                                    cnn),
        "torchvision_style_resnet": (lambda x, y: F.cross_entropy(resnet(x), y), (data(8, 3, 32, 32), labels[:8]),
                                     {}, resnet),
    }


@pytest.mark.parametrize("name", list(_well_written()))
def test_well_written_code_gets_no_warnings(name: str):
    fn, args, kwargs, module = _well_written()[name]
    g = gw.trace(fn, *args, module=module, **kwargs)
    assert warnings_of(g.advise(min_share=0)) == []
    assert g.advise() == []


@pytest.mark.parametrize("name", ["homography_broadcast", "transformer_encoder_layer"])
def test_well_written_code_profiled_gets_no_warnings(name: str):
    fn, args, kwargs, module = _well_written()[name]
    g = gw.profile(fn, *args, module=module, repeat=3, **kwargs)
    assert warnings_of(g.advise(min_share=0)) == []


# -- evidence, order, filtering --------------------------------------------------------------------------------------
def test_profiled_findings_carry_measured_backward_time():
    g = gw.profile(ex.homography_repeat, repeat=3, **ex.homography_inputs(**SMALL))
    (f,) = g.advise()
    ev = f.evidence
    assert ev["bwd_ms"] == pytest.approx(sum(g.node(n)["bwd_ms"] for n in f.nodes), rel=1e-4)
    assert ev["share_of_backward"] == pytest.approx(ev["bwd_ms"] / g.meta["timing"]["backward_ms"], rel=1e-4)
    assert ev["share"] == ev["share_of_backward"] and ev["share_of"] == "backward_ms"


def test_findings_sort_warnings_first_then_by_share_and_min_share_hides_small_ones():
    def two(x: torch.Tensor, y: torch.Tensor, xs: torch.Tensor, t: torch.Tensor) -> torch.Tensor:
        return repeat_mul(x, y) + saved_view(xs, t)
    g = gw.trace(two, leaf(512, 1), data(512, 1024), data(256, 64), leaf(256, 8))
    fs = g.advise(min_share=0)
    assert rules_of(fs) == ["repeat-broadcast", "saved-view-storage"]
    assert [f.severity for f in fs] == ["warning", "info"]
    share = fs[0].share
    assert 0 < share < 0.99
    assert "repeat-broadcast" in rules_of(g.advise(min_share=share))
    assert "repeat-broadcast" not in rules_of(g.advise(min_share=share + 1e-3))
    assert rules_of(g.advise(rules=["saved-view-storage"], min_share=0)) == ["saved-view-storage"]


def test_one_root_cause_one_finding():
    # the seed's repeat explains its 24 selects: they are not reported again as index-repeated
    g = gw.trace(ex.homography_repeat, **ex.homography_inputs(**SMALL))
    assert rules_of(g.advise(min_share=0)) == ["repeat-broadcast"]
    # a loop's selects are the loop's, not index-repeated's
    assert rules_of(gw.trace(select_loop, leaf(256, 4)).advise(min_share=0)) == ["loop-built"]


def test_untraced_graphs_are_advised_without_source_lines():
    x, y = leaf(512, 1), data(512, 1024)
    (f,) = gw.capture(repeat_mul(x, y)).advise()
    assert f.rule == "repeat-broadcast" and f.source is None and f.code is None
    assert f.message.startswith("a RepeatBackward0 materialises a (512, 1024) tensor")
    assert str(f).startswith("warning repeat-broadcast ?: ")


def test_advise_never_changes_a_gradient():
    x, y = leaf(512, 1), data(512, 1024)
    out = repeat_mul(x, y)
    gw.capture(out).advise()
    out.backward()
    x2 = x.detach().clone().requires_grad_()
    repeat_mul(x2, y).backward()
    assert torch.equal(x.grad, x2.grad)

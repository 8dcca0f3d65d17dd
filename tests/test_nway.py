"""N-way comparison: ``gw.compare({...} or [...], *inputs)`` -> MultiDiff; what got fused; the N-way document.

Every side is judged against the reference by the two-way rules (the same records), any pair is a two-way Diff,
counterparts go through the reference, the document reads back and refuses a broken file, and the views (the
stacked panes of the export and the widget) carry every pane and link their selections.
"""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Dict

import pytest
import torch
from gw_functions import Square
from nway_models import Block, refactored, three_ways
from torch_facts import STORE_MAY_GO_FIRST

import graphwidget as gw
from graphwidget.analysis.diff import fusion
from graphwidget.analysis.diff.multi import MultiDiff
from graphwidget.experiment.nway_speed import order
from graphwidget.views.packed import unpack

dynamo = pytest.importorskip("torch._dynamo")


def _changed_maths(block: Block) -> Any:
    def tanh_gelu(x: torch.Tensor) -> torch.Tensor:
        y = block.ln1(x)
        a, _ = block.attn(y, y, y, need_weights=False)
        x = x + a
        h = torch.nn.functional.gelu(block.fc1(block.ln2(x)), approximate="tanh")
        return (x + block.fc2(h)).pow(2).mean()
    return tanh_gelu


@pytest.fixture(scope="module")
def three() -> Dict[str, Any]:
    sides, x = three_ways()
    d = gw.compare(sides, x, advise=False)
    return {"sides": sides, "x": x, "d": d}


def test_every_side_is_judged_against_the_reference_like_a_two_way_compare(three: Dict[str, Any]) -> None:
    d: MultiDiff = three["d"]
    assert isinstance(d, MultiDiff) and d.sides == ("eager", "refactor", "compiled") and d.reference == "eager"
    assert d.equivalent is True
    eager, refactor = three["sides"]["eager"], three["sides"]["refactor"]
    two = gw.compare(eager, refactor, three["x"], labels=("eager", "refactor"), advise=False)
    p = d.pair("eager", "refactor")
    assert isinstance(p, gw.Diff) and p.labels == ("eager", "refactor")
    # the same record as the two-way compare: the same tensors, verdicts and figures
    strip = lambda eq: [(t["name"], t["allclose"], t["max_abs"]) for t in eq["tensors"]]  # noqa: E731
    assert strip(p.equivalence) == strip(two.equivalence) and p.equivalence["method"] == two.equivalence["method"]
    # the same float64 reference and tolerance, so the same words
    for key in ("precision", "reference_precision", "rounding", "near_zero", "equivalent"):
        assert p.equivalence.get(key) == two.equivalence.get(key), key
    assert p.equivalence["reference_precision"] == "float64"
    assert p.summary()["sentence"] == two.summary()["sentence"]
    assert p.matched == two.matched and p.added == two.added == [] and p.removed == []
    rows = {r["label"]: r for r in d.table()}
    assert rows["eager"]["reference"] and rows["refactor"]["maths"].startswith("same maths")
    assert rows["compiled"]["fused"] == {"regions": 1, "covers": len(d.pair(0, 2).removed) + 1}
    assert "compiled same maths" in d.sentence() and "1 compiled region" in d.sentence()


def test_a_maths_change_on_one_side_is_said_for_that_side_only() -> None:
    torch.manual_seed(0)
    block = Block()
    x = torch.randn(2, 8, 32, requires_grad=True)
    d = gw.compare([block, refactored(block), _changed_maths(block)], x, advise=False)
    assert d.sides == ("Block", "refactor", "tanh_gelu")  # a list's labels: the functions' names
    rows = {r["label"]: r for r in d.table()}
    assert rows["refactor"]["equivalent"] is True
    assert rows["tanh_gelu"]["equivalent"] is False and rows["tanh_gelu"]["maths"].startswith("NOT EQUIVALENT")
    assert d.equivalent is False
    # the other pairs have their verdicts too, in both orders
    assert d.pair("refactor", "tanh_gelu").equivalent is False and d.pair("tanh_gelu", "refactor").equivalent is False
    # reference= reorders: the named side first
    d2 = gw.compare({"a": block, "b": refactored(block)}, x, reference="b", advise=False)
    assert d2.sides == ("b", "a")


def test_counterparts_go_through_the_reference(three: Dict[str, Any]) -> None:
    d: MultiDiff = three["d"]
    ref = d.graphs["eager"]
    lin = [i for i in ref.nodes(op="AddmmBackward0")][0]
    got = d.counterparts("eager", lin)
    assert got["eager"] == lin and got["refactor"] == d.pair(0, 1).counterpart(lin, "a")
    assert got["compiled"] is None  # fused: no node of its own
    assert d.counterparts("refactor", got["refactor"])["eager"] == lin
    # what covers it instead
    (reg,) = d.regions("compiled")
    assert lin in reg["covers"] and reg["op"] == "CompiledFunctionBackward"


def test_a_region_covers_the_reference_nodes_it_compiled(three: Dict[str, Any]) -> None:
    d: MultiDiff = three["d"]
    (reg,) = d.regions("compiled")
    pair = d.pair(0, 2)
    ref = d.graphs["eager"]
    # every eager node but the leaves is inside the one region: the removed ones and the root it is matched to
    non_leaves = {i for i in ref.nx if ref.node(i)["op"] != "AccumulateGrad"}
    assert set(reg["covers"]) == non_leaves == set(pair.removed) | {pair.counterpart(reg["node"], "b")}
    assert reg["ops"]["AddmmBackward0"] == 3 and reg["inputs"] and reg["consumers"] == []
    assert "covers" in fusion.describe(reg, "eager")


class Breaks(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.a = torch.nn.Linear(8, 16)
        self.b = torch.nn.Linear(16, 4)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = Square.apply(torch.relu(self.a(x)))
        torch._dynamo.graph_break()
        return self.b(h).pow(2).sum()


def test_a_graph_break_gives_two_regions_each_covering_its_part() -> None:
    torch.manual_seed(0)
    m = Breaks()
    x = torch.randn(5, 8)
    eager = gw.capture(m(x), module=m)
    cm = torch.compile(m, backend="aot_eager")
    compiled = gw.capture(cm(x), module=m)
    regs = fusion.regions(gw.diff(eager, compiled))
    assert len(regs) == 2
    ops = [sorted(r["ops"]) for r in regs]
    first = next(r for r in regs if "ReluBackward0" in r["ops"])
    second = next(r for r in regs if r is not first)
    assert sorted(first["ops"]) == ["AddmmBackward0", "ReluBackward0", "SquareBackward", "TBackward0"], ops
    assert sorted(second["ops"]) == ["AddmmBackward0", "PowBackward0", "SumBackward0", "TBackward0"], ops
    assert first["shared_with"] == [second["node"]]


def test_a_tensor_both_sides_use_has_the_references_name_on_both() -> None:
    # the module itself names its weights "fc1.weight", a closure over it "block.fc1.weight": one tensor, one name
    # (A's), so the leaves match by name (and what lies above them by identical sub-graphs)
    torch.manual_seed(0)
    block = Block()
    x = torch.randn(2, 8, 32, requires_grad=True)
    d = gw.compare(block, refactored(block), x, advise=False)

    def names(g: gw.GradGraph) -> list:
        return sorted(g.node(i)["tensor"]["name"] for i in g.nodes(op="AccumulateGrad"))

    assert names(d.a) == names(d.b) and "fc1.weight" in names(d.b)
    assert all(d._phases[i] == "anchor" for i in d.a.nodes(op="AccumulateGrad"))  # type: ignore[attr-defined]
    assert d.equivalent and not any("(B: " in t["name"] for t in d.equivalence["tensors"])


@pytest.mark.xfail(STORE_MAY_GO_FIRST, strict=False,
                   reason="torch 2.4: compare of the partly compiled block fails in aot_eager with 'Attempting to use "
                          "FunctionalTensor on its own' (seen on the py3.9/torch 2.4.1 leg after the divergence "
                          "merge; open, see the closing note)")
def test_a_region_in_the_middle_covers_only_what_it_compiled() -> None:
    # Only the MLP compiled: the region sits between ordinary nodes (the attention's residual before it, the add
    # after it), and covers exactly the reference's MLP nodes, whatever their line.
    torch.manual_seed(0)
    block = Block()
    x = torch.randn(2, 8, 32, requires_grad=True)

    def mlp(h: torch.Tensor) -> torch.Tensor:
        return block.fc2(torch.nn.functional.gelu(block.fc1(block.ln2(h))))

    fused = torch.compile(mlp, backend="aot_eager")

    def partly(t: torch.Tensor) -> torch.Tensor:
        y = block.ln1(t)
        a, _ = block.attn(y, y, y, need_weights=False)
        t = t + a
        return (t + fused(t)).pow(2).mean()

    d = gw.compare({"eager": block, "partly": partly}, x, advise=False)
    (reg,) = d.regions("partly")
    ref = d.graphs["eager"]
    mlp_nodes = {i for i in ref.nx if ref.node(i)["op"] != "AccumulateGrad" and
                 (ref.node(i)["module"] in ("ln2", "fc1", "fc2") or ref.node(i)["op"] == "GeluBackward0")}
    assert set(reg["covers"]) == mlp_nodes, sorted((ref.node(i)["op"], ref.node(i)["module"]) for i in
                                                   set(reg["covers"]) ^ mlp_nodes)
    assert reg["ops"]["GeluBackward0"] == 1 and reg["ops"]["AddmmBackward0"] == 2
    # the attention, the residual adds and the loss stay matched to ordinary nodes of the partly compiled side
    for op in ("PowBackward0", "MeanBackward0", "NativeLayerNormBackward0"):
        assert any(d.counterparts("eager", i)["partly"] is not None for i in ref.nodes(op=op))
    assert d.equivalent


def test_gw_diff_of_n_graphs_you_already_have(three: Dict[str, Any]) -> None:
    d: MultiDiff = three["d"]
    graphs = {label: gw.load_json(d.graphs[label].to_json()) for label in d.sides}
    m = gw.diff(graphs, reference="refactor")
    assert m.sides == ("refactor", "eager", "compiled") and m.equivalent is None
    assert m.pair(0, 1).matched == [(b, a) for a, b in sorted(d.pair(0, 1).matched, key=lambda p: p[1])]
    two = gw.diff(graphs["eager"], graphs["refactor"])
    assert isinstance(two, gw.Diff) and two.matched == d.pair(0, 1).matched
    assert "graphwidget" in m._repr_mimebundle_()["text/html"]


def test_turning_order_meets_every_pair_in_both_orders() -> None:
    for n in (2, 3, 4, 5):
        for start in range(0, 2 * n, 2):
            a, b = order(start, n), order(start + 1, n)
            assert sorted(a) == list(range(n)) and b == a[::-1]
    assert [order(r, 2) for r in range(4)] == [[0, 1], [1, 0], [1, 0], [0, 1]]


@pytest.mark.slow
def test_profiled_every_pair_gets_the_two_way_timing_record() -> None:
    torch.manual_seed(0)
    block = Block()
    x = torch.randn(2, 8, 32, requires_grad=True)
    d = gw.compare({"eager": block, "refactor": refactored(block), "tanh": _changed_maths(block)}, x,
                   profile=True, budget=0.5, repeat=2, advise=False)
    for k in (1, 2):
        t = d.pair(0, k).timing
        assert set(t) >= {"step", "forward", "backward", "ratio", "low", "high", "verdict", "clock", "rounds",
                          "band", "per_node", "threads"}
        assert t["step"]["low"] <= t["step"]["ratio"] <= t["step"]["high"] and len(t["step"]["ms"]) == 2
    # the pairs share the rounds and one clock: the reference's step time is the same in both records
    assert len({d.pair(i, j).timing["clock"] for i in range(3) for j in range(3) if i != j}) == 1
    assert d.pair(0, 1).timing["rounds"] == d.pair(0, 2).timing["rounds"]
    assert d.pair(0, 1).timing["step"]["ms"][0] == d.pair(0, 2).timing["step"]["ms"][0]
    # B/A of a pair without the reference, and its reverse, from the same rounds
    r12, r21 = d.pair(1, 2).timing["step"]["ratio"], d.pair(2, 1).timing["step"]["ratio"]
    assert r12 == pytest.approx(1 / r21, rel=0.2)
    assert all(r["step"] is not None for r in d.table()[1:])
    assert all(g.meta.get("timed") for g in d.graphs.values())
    # the two-way words read the N-way records: the sentence's speed part and each ratio's interval
    for k in (1, 2):
        t, s = d.pair(0, k).timing, d.pair(0, k).summary()
        assert s["interval"]["step_ms"] == [t["step"]["low"], t["step"]["high"]]
        assert "whole step" in s["sentence"]


def test_memory_measures_every_sides_peak_against_the_reference() -> None:
    ex = gw.examples
    inp = ex.homography_inputs(batch=2, height=32, width=32)
    d = gw.compare({"repeat": ex.homography_repeat, "broadcast": ex.homography_broadcast,
                    "again": ex.homography_repeat}, **inp, memory=True, advise=False)
    peaks = {k: d.pair(0, k).summary()["memory"]["peak"] for k in (1, 2)}
    assert all(p["measured"] for p in peaks.values())
    assert peaks[1]["a"] == peaks[2]["a"] > 0  # one measured step of the reference, shared by its pairs
    assert peaks[1]["b"] < peaks[1]["a"]  # as two-way: broadcasting holds less than repeating
    back = gw.load_json(d.to_json())
    assert back.pair(0, 1).summary()["memory"]["peak"]["b"] == peaks[1]["b"]
    with pytest.raises(TypeError, match="memory must be True or False"):
        gw.compare({"a": ex.homography_repeat, "b": ex.homography_broadcast}, **inp, memory="yes")


def test_the_callers_state_is_left_alone() -> None:
    torch.manual_seed(0)
    block = Block()
    x = torch.randn(2, 8, 32, requires_grad=True)
    before = {n: p.detach().clone() for n, p in block.named_parameters()}
    rng = torch.get_rng_state()
    gw.compare([block, refactored(block)], x, labels=["a", "b"], advise=False)
    assert x.grad is None and all(p.grad is None for p in block.parameters())
    assert all(torch.equal(before[n], p) for n, p in block.named_parameters())
    assert torch.equal(rng, torch.get_rng_state())


def test_usage_errors_say_what_to_write() -> None:
    f = lambda t: t.sum()  # noqa: E731
    x = torch.randn(3, requires_grad=True)
    with pytest.raises(ValueError, match="unique"):
        gw.compare([f, f], x, labels=["a", "a"])
    with pytest.raises(TypeError, match="must be callable"):
        gw.compare({"a": f, "b": 3}, x)
    with pytest.raises(ValueError, match="reference='c' is not one of the sides"):
        gw.compare({"a": f, "b": f}, x, reference="c")
    with pytest.raises(ValueError, match="at least two"):
        gw.compare({"a": f}, x)


# -- the document --------------------------------------------------------------------------------------------------------
def test_the_document_reads_back(three: Dict[str, Any], tmp_path: Path) -> None:
    d: MultiDiff = three["d"]
    text = d.to_json()
    doc = json.loads(text)
    assert doc["format"] == "graphwidget-nway" and doc["version"] == 1 and doc["kind"] == "sides"
    assert [p["side"] for p in doc["pairs"]] == [1, 2] and len(doc["graphs"]) == 3
    assert doc["pairs"][1]["regions"][0]["covers"] == d.regions(2)[0]["covers"]
    assert json.loads(d.to_json(indent=1)) == doc
    back = gw.load_json(text)
    assert isinstance(back, MultiDiff) and back.sides == d.sides and back.sentence() == d.sentence()
    assert back.pair(0, 2).matched == d.pair(0, 2).matched and back.regions(2) == d.regions(2)
    assert back.pair(1, 2).equivalent is True  # the verdicts of the pairs without the reference travel too
    assert back.report() == d.report()


@pytest.mark.parametrize("edit,message", [
    (lambda doc: doc.update(version=2), "upgrade graphwidget"),
    (lambda doc: doc["pairs"].pop(), "has no entry in \"pairs\""),
    (lambda doc: doc["pairs"][0].update(side=5), "side"),
    (lambda doc: doc["pairs"][1]["regions"][0].update(node=10_000), "regions\\[0\\]"),
    (lambda doc: doc["pairs"][1]["regions"][0]["covers"].append(10_000), "covers"),
    (lambda doc: doc["pairs"][0]["matched"].append([0, 0]), "matched twice"),
    (lambda doc: doc.update(labels=["eager", "eager", "x"]), "unique"),
    (lambda doc: doc.update(kind="ranks"), "needs its \"ranks\""),
    (lambda doc: doc.update(verdicts=[{"a": 0, "b": 0}]), "verdicts\\[0\\]"),
])
def test_a_broken_document_is_refused_saying_what(three: Dict[str, Any], edit: Any, message: str) -> None:
    doc = json.loads(three["d"].to_json())
    edit(doc)
    with pytest.raises(gw.SchemaError, match=message):
        gw.load_json(json.dumps(doc))


def test_rank_records_are_checked_too(three: Dict[str, Any]) -> None:
    doc = json.loads(three["d"].to_json())
    n = doc["graphs"][0]["nodes"]["count"]
    ranks = {"world_size": 4, "ranks": [0, 1, 2], "shown": [0, 1, 2], "reference_rank": 0,
             "nodes": {"ids": list(range(n)), "step_ms": {"0": [1.0] * n}, "stats": {"spread_ms": [0.0] * n}}}
    doc.update(kind="ranks", ranks=ranks)
    assert gw.load_json(json.dumps(doc)).ranks["world_size"] == 4
    for bad, message in ((dict(ranks, shown=[0, 1]), "ranks.shown"),
                         (dict(ranks, nodes={"ids": [0], "step_ms": {"0": [1.0, 2.0]}}), "must be a list of 1"),
                         (dict(ranks, nodes={"ids": [0], "step_ms": {"7": [1.0]}}), "keyed by rank"),
                         (dict(ranks, straggler={"rank": 9}), "ranks.straggler"),
                         (dict(ranks, world_size=2), "world_size")):
        doc["ranks"] = bad
        with pytest.raises(gw.SchemaError, match=message):
            gw.load_json(json.dumps(doc))


# -- the views -----------------------------------------------------------------------------------------------------------
def test_the_export_inlines_the_document_once_for_the_n_way_view(three: Dict[str, Any], tmp_path: Path) -> None:
    d: MultiDiff = three["d"]
    page = d.export_html(tmp_path / "nway.html").read_text()
    assert page.count('id="gw-nway-root"') == 1 and page.count('id="gw-nway-data" data-kind="nway"') == 1
    assert "What got fused" in page and "Content-Security-Policy" in page
    again = gw.export_html(d.to_json(), tmp_path / "again.html").read_text()  # from the document as well
    assert again.count('id="gw-nway-root"') == 1 and "What got fused" in again


def test_the_widget_carries_the_exports_document_and_selects_through_the_reference(three: Dict[str, Any]) -> None:
    pytest.importorskip("anywidget")
    from graphwidget.views.nway_view import payload
    from graphwidget.views.nway_widget import NWayWidget
    d: MultiDiff = three["d"]
    w = d.widget(height=300)
    assert isinstance(w, NWayWidget) and w.height == 300 and w.sync is True
    gz, colour = payload(d)
    assert w._nway == gz and w._nway[:2] == b"\x1f\x8b" and w.colour_by == colour  # the export's bytes
    sent = unpack(w._nway)
    assert sent["labels"] == list(d.sides) and sent["graphs"] == [d.graphs[x].to_dict(version=1) for x in d.sides]
    assert w.selected is None and w.selected_all == [None, None, None]
    lin = d.graphs["eager"].nodes(op="AddmmBackward0")[0]
    (reg,) = d.regions("compiled")
    w.selected = lin  # the refactor's counterpart; the compiled side fused it: its region, as the view marks it
    assert w.selected_all == [lin, d.pair(0, 1).counterpart(lin, "a"), reg["node"]]
    assert w.selected_in("refactor") == d.counterparts("eager", lin)["refactor"]
    assert w.selected_in("compiled") == reg["node"]
    # a node of another side, from Python
    top = next(i for i in d.graphs["compiled"].nx if not d.graphs["compiled"].nx._succ[i])
    w.select(top, "compiled")
    ref_top = d.pair(0, 2).counterpart(top, "b")
    assert w.selected == ref_top and w.selected_all[2] == top and w.selected_all[0] == ref_top
    # a click in the front end saves both traits together: Python keeps what the view shows
    w.set_state({"selected": None, "selected_all": [None, None, reg["node"]]})
    assert w.selected is None and w.selected_in("compiled") == reg["node"]
    w.select(None)
    assert w.selected_all == [None, None, None]
    with pytest.raises(Exception, match="no node"):
        w.selected = 10_000
    with pytest.raises(Exception, match="no node"):
        w.select(10_000, "refactor")
    with pytest.raises(TypeError, match="unexpected keyword"):
        d.widget(heigth=300)
    bundle = d._repr_mimebundle_()
    assert "application/vnd.jupyter.widget-view+json" in bundle and "gw-nway-table" in bundle["text/html"]

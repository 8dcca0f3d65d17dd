"""gw.diff / gw.compare: the matching gives a person's answer on the issue's cases (exact sets, not "some"), and the
document round-trips into tables, figures, widgets and exports. Real torch throughout; no timing assertions (speed
lives in tests/bench/bench_diff.py). Verdicts, isolation and errors: tests/test_diff_compare.py."""
from __future__ import annotations

import json
import random
import subprocess
import sys
from collections import Counter
from pathlib import Path
from typing import Dict, Set, Tuple

import pytest
import torch
from torch_facts import FULL_SLICES, full_slices

import graphwidget as gw
from graphwidget.model import schema

ROOT = Path(__file__).resolve().parents[1]
EX = gw.examples


def ops(g: gw.GradGraph, ids) -> Counter:
    return Counter(g.node(i)["op"] for i in ids)


def leaf_name(g: gw.GradGraph, i: int):
    t = g.node(i).get("tensor")
    return t.get("name") if t else None


# -- the expected answers, computed independently of the matcher ------------------------------------------------------
def parallel_pairs(ga: gw.GradGraph, gb: gw.GradGraph, skip_a: Set[int], skip_b: Set[int]) -> Set[Tuple[int, int]]:
    """Walk both graphs from their roots in step, input slot by input slot, passing through the nodes in ``skip_*``
    (the ones a person says were removed/added): the pairs a person would draw."""
    def inputs(g: gw.GradGraph, n: int, skip: Set[int]) -> Dict[int, int]:
        out = {}
        for u, _, e in g.nx.in_edges(n, data=True):
            for slot in [e["slot"]] + [x["slot"] for x in e.get("also") or []]:
                v = u
                while v in skip:  # removed/added nodes are single-input: look through them
                    (v,) = list(g.nx.predecessors(v))
                out[slot] = v
        return out

    pairs: Set[Tuple[int, int]] = set()
    stack = list(zip(ga.meta["roots"], gb.meta["roots"]))
    while stack:
        a, b = stack.pop()
        if (a, b) in pairs:
            continue
        pairs.add((a, b))
        ia, ib = inputs(ga, a, skip_a), inputs(gb, b, skip_b)
        assert ia.keys() == ib.keys()
        stack.extend((ia[s], ib[s]) for s in ia)
    return pairs


def seed_graphs(named: bool) -> Tuple[gw.GradGraph, gw.GradGraph, gw.Diff]:
    inp = EX.homography_inputs(batch=2, height=8, width=8)
    if named:
        d = gw.compare(EX.homography_repeat, EX.homography_broadcast, **inp, labels=("repeat", "broadcast"))
        return d.a, d.b, d
    ga, gb = gw.trace(EX.homography_repeat, **inp), gw.trace(EX.homography_broadcast, **inp)
    return ga, gb, gw.diff(ga, gb, labels=("repeat", "broadcast"))


# -- matching: the cases ----------------------------------------------------------------------------------
@pytest.mark.parametrize("named", [True, False], ids=["compare", "diff-of-traces"])
def test_seed_pair_repeats_removed_unsqueezes_added_rest_matched(named: bool) -> None:
    ga, gb, d = seed_graphs(named)
    repeat = set(ga.nodes(op="RepeatBackward0"))
    unsq_a = set(ga.nodes(op="UnsqueezeBackward0"))
    unsq_b = set(gb.nodes(op="UnsqueezeBackward0"))
    assert len(repeat) == 1 and len(unsq_a) == 1 and len(unsq_b) == 12
    # torch < 2.5 records A's `h[:, :, i, j]` as two full slices (batch, pixels), B's `h[:, i, j]` as one (batch):
    # A's slice over the repeated pixel dim has no counterpart, the batch slices pair up
    extra = {i for i in full_slices(ga) if ga.node(i)["attrs"]["dim"] == 1}
    assert len(extra) == (12 if FULL_SLICES else 0)
    assert {gb.node(i)["attrs"]["dim"] for i in full_slices(gb)} <= {0}
    # removed: homo.unsqueeze(1).repeat(...); added: the twelve h[:, i, j].unsqueeze(1); nothing else
    assert set(d.removed) == repeat | unsq_a | extra
    assert set(d.added) == unsq_b
    # every other node matched, to exactly the node a person would pair it with
    expected = parallel_pairs(ga, gb, repeat | unsq_a | extra, unsq_b)
    assert set(d.matched) == expected
    assert len(expected) == len(ga) - 2 - len(extra) == len(gb) - 12
    a_of = dict(d.matched)
    for op in ("GridSampler2DBackward0", "StackBackward0", "ViewBackward0", "AccumulateGrad"):
        assert {gb.node(a_of[i])["op"] for i in ga.nodes(op=op)} == {op}
    divs = ga.nodes(op="DivBackward0")
    assert len(divs) == 2 and sorted(a_of[i] for i in divs) == sorted(gb.nodes(op="DivBackward0"))
    img_a, homo_a = sorted(ga.nodes(op="AccumulateGrad"), key=lambda i: len(ga.node(i)["tensor"]["shape"]))[::-1]
    img_b, homo_b = sorted(gb.nodes(op="AccumulateGrad"), key=lambda i: len(gb.node(i)["tensor"]["shape"]))[::-1]
    assert a_of[img_a] == img_b and a_of[homo_a] == homo_b
    if named:
        assert {leaf_name(ga, i) for i in ga.nodes(op="AccumulateGrad")} == {"img", "homo"}
    # the selects are matched and changed (a (B, HW, 3) slice became a (B, 3) one); grid_sample is unchanged
    changed = {a: f for a, _, f in d.changed}
    for s in ga.nodes(op="SelectBackward0"):
        assert "outputs" in changed[s]
    assert ga.nodes(op="GridSampler2DBackward0")[0] not in changed
    # the gradient bytes tell the story: backward of the repeat version writes several times more
    s = d.summary()
    assert s["a"]["grad_bytes"] > 3 * s["b"]["grad_bytes"]
    assert s["counts"] == {"matched": len(expected), "changed": len(d.changed), "added": 12,
                           "removed": 2 + len(extra)}


def test_identical_functions_all_matched_nothing_changed() -> None:
    inp = EX.homography_inputs(batch=2, height=8, width=8)
    d = gw.compare(EX.homography_repeat, EX.homography_repeat, **inp)
    assert d.matched == [(i, i) for i in sorted(d.a.nx.nodes)]
    assert d.changed == [] and d.added == [] and d.removed == []
    assert d.equivalent is True
    assert all(r["max_abs"] == 0.0 for r in d.equivalence["tensors"])
    assert d.by_op() == [] and d.by_source() == []
    # the same through diff() of two separate traces (unnamed leaves: anchored by shape, in order)
    d2 = gw.diff(gw.trace(EX.homography_broadcast, **inp), gw.trace(EX.homography_broadcast, **inp))
    assert d2.matched == [(i, i) for i in range(len(d2.a))] and d2.changed == []


class MLP(torch.nn.Module):
    def __init__(self, extra: bool = False) -> None:
        super().__init__()
        self.fc1 = torch.nn.Linear(6, 8)
        self.extra = torch.nn.Linear(8, 8) if extra else None
        self.fc2 = torch.nn.Linear(8, 3)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = torch.relu(self.fc1(x))
        if self.extra is not None:
            h = torch.relu(self.extra(h))
        return self.fc2(h).sum()


def node_key(g: gw.GradGraph, i: int) -> Tuple:
    """What identifies a node of MLP to a person: op, module path, leaf name, line of code."""
    d = g.node(i)
    return (d["op"], d.get("module"), leaf_name(g, i), d.get("code"))


def test_extra_linear_relu_in_the_middle_only_that_layer_added() -> None:
    torch.manual_seed(0)
    a, b = MLP(), MLP(extra=True)
    b.fc1.load_state_dict(a.fc1.state_dict())
    b.fc2.load_state_dict(a.fc2.state_dict())
    x = torch.randn(4, 6, requires_grad=True)
    d = gw.compare(a, b, x, labels=("plain", "extra"))
    keys_a = {node_key(d.a, i): i for i in d.a.nx.nodes}
    keys_b = {node_key(d.b, i): i for i in d.b.nx.nodes}
    assert len(keys_a) == len(d.a) and len(keys_b) == len(d.b)  # the keys identify nodes
    assert d.removed == []
    assert {node_key(d.b, i) for i in d.added} == set(keys_b) - set(keys_a)
    assert ops(d.b, d.added) == Counter({"AddmmBackward0": 1, "TBackward0": 1, "ReluBackward0": 1,
                                         "AccumulateGrad": 2})
    assert {leaf_name(d.b, i) for i in d.added} == {None, "extra.weight", "extra.bias"}
    # every other node is matched to the node of the same parameter / position
    assert set(d.matched) == {(keys_a[k], keys_b[k]) for k in keys_a}
    assert {leaf_name(d.a, i) for i in d.a.nodes(op="AccumulateGrad")} == {"arg0", "fc1.weight", "fc1.bias",
                                                                          "fc2.weight", "fc2.bias"}
    # the maths changed (an extra layer): flagged, and the shared parameters' gradients were compared by name
    assert d.equivalent is False
    names = [t["name"] for t in d.equivalence["tensors"]]
    # every tensor that receives a gradient: B's extra layer's parameters get one only in B
    assert names == ["output", "grad arg0", "grad fc1.weight", "grad fc1.bias", "grad fc2.weight", "grad fc2.bias",
                     "grad extra.weight", "grad extra.bias"]
    assert [t["name"] for t in d.equivalence["tensors"] if t.get("only") == "B"] == ["grad extra.weight",
                                                                                    "grad extra.bias"]


def test_same_model_batch_8_vs_16_all_matched_shapes_changed() -> None:
    torch.manual_seed(0)
    m = MLP()
    ga = gw.trace(m, torch.randn(8, 6, requires_grad=True))
    gb = gw.trace(m, torch.randn(16, 6, requires_grad=True))
    d = gw.diff(ga, gb)
    assert d.added == [] and d.removed == []
    assert d.matched == [(i, i) for i in range(len(ga))]  # same program: same ids, every one paired with itself
    batch_dependent = {i for i in ga.nx.nodes if ga.node(i)["outputs"] != gb.node(i)["outputs"]}
    # addmm x2, relu, the input leaf x
    assert ops(ga, batch_dependent) == Counter({"AddmmBackward0": 2, "ReluBackward0": 1, "AccumulateGrad": 1})
    changed = {a: f for a, _, f in d.changed}
    assert batch_dependent <= set(changed)
    for i in batch_dependent:
        assert "outputs" in changed[i]
    # the parameters and their transposes do not depend on the batch
    for i in ga.nodes(op="TBackward0") + [i for i in ga.nodes(op="AccumulateGrad") if leaf_name(ga, i)]:
        assert i not in changed


def loop_form(x: torch.Tensor, w: torch.Tensor) -> torch.Tensor:
    y = x[:, 0] * w[0]
    for i in range(1, x.shape[1]):
        y = y + x[:, i] * w[i]
    return y.tanh().sum()


def vector_form(x: torch.Tensor, w: torch.Tensor) -> torch.Tensor:
    y = (x * w).sum(1)
    return y.tanh().sum()


def test_python_loop_vs_vectorised_leaves_and_tail_matched_loop_removed() -> None:
    torch.manual_seed(0)
    x, w = torch.randn(5, 4, requires_grad=True), torch.randn(4, requires_grad=True)
    d = gw.compare(loop_form, vector_form, x, w, labels=("loop", "vectorised"))
    got = {(d.a.node(a)["op"], leaf_name(d.a, a), d.b.node(b)["op"], leaf_name(d.b, b)) for a, b in d.matched}
    assert got == {("SumBackward0", None, "SumBackward0", None), ("TanhBackward0", None, "TanhBackward0", None),
                   ("AccumulateGrad", "arg0", "AccumulateGrad", "arg0"),
                   ("AccumulateGrad", "arg1", "AccumulateGrad", "arg1")}
    tail_and_leaves = {a for a, _ in d.matched}
    assert set(d.removed) == set(d.a.nx.nodes) - tail_and_leaves  # every node of the loop
    # torch < 2.5 adds a full slice for each `x[:, i]`: removed with the loop, the rest is the same
    slices = full_slices(d.a)
    assert len(slices) == (4 if FULL_SLICES else 0) and slices <= set(d.removed)
    assert ops(d.a, set(d.removed) - slices) == Counter({"SelectBackward0": 8, "MulBackward0": 4, "AddBackward0": 3})
    assert ops(d.b, d.added) == Counter({"MulBackward0": 1, "SumBackward1": 1})
    assert d.equivalent is True  # same maths, summed in another order


def narrowed_repeat(x: torch.Tensor, g: torch.Tensor) -> torch.Tensor:
    h = x.unsqueeze(1).repeat(1, 3, 1)
    return (h.narrow(0, 0, 4).narrow(1, 0, 3).select(2, 1) * g).sum()


def narrowed_broadcast(x: torch.Tensor, g: torch.Tensor) -> torch.Tensor:
    return (x.narrow(0, 0, 4).select(1, 1).unsqueeze(1) * g).sum()


def test_a_chain_with_an_extra_like_node_pairs_the_one_that_agrees() -> None:
    # the seed pair's select chains on torch 2.4, on any torch: two full slices (dims 0, 1) of the repeated tensor in
    # A, one (dim 0) in B. The slices along dim 0 pair up; A's slice along the repeated dim is removed with the repeat
    x, g = torch.randn(4, 5, requires_grad=True), torch.randn(4, 3, requires_grad=True)
    d = gw.compare(narrowed_repeat, narrowed_broadcast, x, g)
    assert d.equivalent is True
    a_of = dict(d.matched)
    (slice_b,) = d.b.nodes(op="SliceBackward0")
    pairs = [(d.a.node(a)["attrs"]["dim"], d.b.node(b)["attrs"]["dim"]) for a, b in a_of.items() if b == slice_b]
    assert pairs == [(0, 0)]
    assert sorted((d.a.node(i)["op"], d.a.node(i)["attrs"].get("dim")) for i in d.removed) == \
        [("RepeatBackward0", None), ("SliceBackward0", 1), ("UnsqueezeBackward0", 1)]
    assert ops(d.b, d.added) == Counter({"UnsqueezeBackward0": 1})


def spine_dag(n: int, retyped: Set[int]) -> torch.Tensor:
    """A random DAG of like nodes (one shape, unnamed leaves) on a spine: each op reads the op made last and up to two
    of the 9 values made last, so every node depends on every edit below it; the one-input ops numbered in
    ``retyped`` subtract a number instead of multiplying by one."""
    rng = random.Random(0)
    vals = [torch.randn(4, requires_grad=True) for _ in range(3)]
    made = 2
    for k in range(n):
        if rng.random() < 0.06:
            vals.append(torch.randn(4, requires_grad=True))
            continue
        last = len(vals) - 1
        ins = sorted({made, *(rng.randrange(max(0, last - 8), last + 1) for _ in range(rng.randint(0, 2)))})
        made = last + 1
        a = vals[ins[0]]
        if len(ins) == 1:
            y = a - 0.25 if k in retyped else a * 2.0
        elif len(ins) == 2:
            y = a + vals[ins[1]]
        else:
            y = torch.add(a, vals[ins[1]], alpha=2.0) - vals[ins[2]]
        vals.append(y)
    return sum(vals[-4:]).sum()


@pytest.mark.parametrize("edits", [150, 400])
def test_many_retyped_ops_on_a_spine_cost_only_themselves(edits: int) -> None:
    # Every node depends on every edit below it and feeds every edit above it, so neither identical-sub-DAG hash
    # reaches between two edits: the extension must carry the matching from edit to edit (it once stopped after a
    # fixed number of rounds and left most of such a graph unmatched). A re-typed node (a different op) is removed
    # and added; every other node pairs with the node an in-step walk of both graphs pairs it with.
    n = 2000
    ga = gw.capture(spine_dag(n, set()))
    gb = gw.capture(spine_dag(n, set(random.Random(1).sample(range(n // 10, n), edits))))
    d = gw.diff(ga, gb)
    walked = parallel_pairs(ga, gb, set(), set())
    retyped = {(a, b) for a, b in walked if ga.node(a)["op"] != gb.node(b)["op"]}
    assert len(retyped) >= edits // 10  # only one-input ops are re-typed
    assert set(map(tuple, d.matched)) == walked - retyped
    assert sorted(d.removed) == sorted(a for a, _ in retyped)
    assert sorted(d.added) == sorted(b for _, b in retyped)


@pytest.mark.slow
def test_matching_is_deterministic(tmp_path: Path) -> None:
    ga, gb, d = seed_graphs(named=False)
    again = gw.diff(gw.load_json(ga.to_json()), gw.load_json(gb.to_json()), labels=d.labels)
    assert again.matched == d.matched and again.changed == d.changed
    # and in fresh processes: string hashing is salted per process, the matcher must not depend on it
    code = ("import graphwidget as gw, sys, json\n"
            "a, b = (gw.load_json(open(p).read()) for p in sys.argv[1:3])\n"
            "print(json.dumps(gw.diff(a, b).matched))")
    pa, pb = tmp_path / "a.json", tmp_path / "b.json"
    pa.write_text(ga.to_json())
    pb.write_text(gb.to_json())
    for seed in ("1", "2"):
        out = subprocess.run([sys.executable, "-c", code, str(pa), str(pb)], capture_output=True, text=True,
                             env={"PYTHONHASHSEED": seed}, cwd=ROOT, timeout=120)
        assert out.returncode == 0, out.stderr
        assert [tuple(p) for p in json.loads(out.stdout)] == d.matched


# -- the document ---------------------------------------------------------------------------------------------------
def test_json_round_trip_and_the_format() -> None:
    inp = EX.homography_inputs(batch=2, height=8, width=8)
    d = gw.compare(EX.homography_repeat, EX.homography_broadcast, **inp, labels=("repeat", "broadcast"))
    text = d.to_json()
    doc = json.loads(text)
    assert doc["format"] == "graphwidget-diff" and doc["version"] == 1 and doc["labels"] == ["repeat", "broadcast"]
    # each graph a graph document of the current version (columns), as a graph file holds
    assert doc["a"]["format"] == "graphwidget" and doc["a"]["version"] == schema.VERSION
    assert doc["b"]["nodes"]["count"] == len(d.b) and doc["b"] == json.loads(d.b.to_json())
    assert doc["matched"] == [list(p) for p in d.matched]
    # compare advised both sides: the repeat's finding is in A and resolved in B
    assert [f["rule"] for f in doc["findings"]["a"]] == ["repeat-broadcast"] and doc["findings"]["resolved"] == [0]
    assert set(doc["summary"]) >= {"a", "b", "delta", "ratio", "timing", "equivalence"}
    row = next(r for r in doc["changes"]["by_op"] if r["key"] == "UnsqueezeBackward0")
    assert len(row["added"]) == 12 and len(row["removed"]) == 1 and row["a"]["count"] == 1 and row["b"]["count"] == 12
    assert row["delta"]["count"] == 11
    # rows sorted by |delta grad_bytes|: SelectBackward0 (the repeated tensor's gradient) comes first, after the
    # full slices on torch < 2.5 (each writes the repeated tensor's gradient too)
    lead = ["SliceBackward0"] if FULL_SLICES else []
    assert [r["key"] for r in doc["changes"]["by_op"]][:len(lead) + 1] == lead + ["SelectBackward0"]
    back = gw.load_json(text)
    assert isinstance(back, gw.Diff)
    assert (back.labels, back.matched, back.changed, back.added, back.removed) == \
        (d.labels, d.matched, d.changed, d.added, d.removed)
    assert back.summary() == d.summary() and back.equivalent is True
    assert json.loads(back.to_json()) == doc
    assert json.loads(d.to_json(indent=1)) == doc
    for i in d.removed:
        assert back.status(i, "a") == "removed"
    assert back.status(d.added[0], "b") == "added"
    a0, b0, _ = d.changed[0]
    assert back.status(a0, "a") == back.status(b0, "b") == "changed" and back.counterpart(a0) == b0


def test_broken_diff_documents_are_refused() -> None:
    x = torch.randn(3, requires_grad=True)
    d = gw.diff(gw.capture(x.exp().sum()), gw.capture((x.exp() * 2).sum()))
    doc = json.loads(d.to_json())
    for change, msg in ((lambda o: o.update(version=9), "upgrade graphwidget"),
                        (lambda o: o.update(matched=[[0, 99]]), "not in that graph"),
                        (lambda o: o["removed"].append(0), "matched once or removed"),
                        (lambda o: o.update(changed=[[0, 2, ["op"]]]), "not in \"matched\""),
                        (lambda o: o.update(labels=["only one"]), "labels must be two"),
                        (lambda o: o["a"]["nodes"].pop("op"), "nodes.op is missing")):
        bad = json.loads(json.dumps(doc))
        change(bad)
        with pytest.raises(gw.SchemaError, match=msg):
            gw.load_json(json.dumps(bad))


def test_tables_and_figure() -> None:
    _, _, d = seed_graphs(named=True)
    by_op = d.by_op()
    touched = ({d.a.node(i)["op"] for i in d.removed} | {d.b.node(i)["op"] for i in d.added}
               | {d.a.node(a)["op"] for a, _, _ in d.changed})
    assert {r["key"] for r in by_op} == touched  # a row for every op type that changed, and only those
    assert touched >= {"RepeatBackward0", "UnsqueezeBackward0", "SelectBackward0", "MulBackward0"}
    rep = next(r for r in by_op if r["key"] == "RepeatBackward0")
    assert rep["removed"] == d.a.nodes(op="RepeatBackward0") and rep["added"] == [] and rep["changed"] == []
    assert rep["a"]["count"] == 1 and rep["b"]["count"] == 0 and rep["delta"]["count"] == -1
    sel = next(r for r in by_op if r["key"] == "SelectBackward0")
    assert sel["a"]["grad_bytes"] > 10 * sel["b"]["grad_bytes"] and len(sel["changed"]) == 24
    assert "SelectBackward0" in str(by_op) and "<table>" in by_op._repr_html_()
    src = d.by_source()
    assert all(r["key"].endswith(tuple("0123456789")) or r["key"] in ("(leaf)", "(no source)") for r in src)
    assert sorted(i for r in src for i in r["added"]) == sorted(d.added)
    assert sorted(i for r in src for i in r["removed"]) == sorted(d.removed)
    fig = d.figure()
    assert {tr.name for tr in fig.data} == {"repeat", "broadcast"}
    assert "RepeatBackward0" in fig.data[0].y


def test_hostile_labels_are_escaped_in_static_html_and_figure() -> None:
    x = torch.randn(3, requires_grad=True)
    evil = "<img src=x onerror=alert(1)>"
    d = gw.diff(gw.capture(x.exp().sum()), gw.capture((x.exp() * 2).sum()), labels=(evil, "b&b"))
    bundle = d._repr_mimebundle_()
    assert evil not in bundle["text/html"] and "&lt;img src=x" in bundle["text/html"]
    fig = d.figure()
    assert all("<img" not in (tr.name or "") for tr in fig.data)
    # the title names both labels too: escaped there as well (plotly renders its HTML; an <a href> would be live)
    assert fig.layout.title.text == "&lt;img src=x onerror=alert(1)&gt; vs b&amp;b per op type"
    assert all("<" not in (a.text or "") for a in fig.layout.annotations)


def test_diff_works_without_torch(tmp_path: Path) -> None:
    inp = EX.homography_inputs(batch=2, height=8, width=8)
    ga, gb = gw.trace(EX.homography_repeat, **inp), gw.trace(EX.homography_broadcast, **inp)
    (tmp_path / "a.json").write_text(ga.to_json())
    (tmp_path / "b.json").write_text(gb.to_json())
    expected = gw.diff(ga, gb)
    (tmp_path / "d.json").write_text(expected.to_json())
    code = (
        "import sys; sys.modules['torch'] = None  # any import of torch now fails\n"
        "import graphwidget as gw, json\n"
        "a, b = (gw.load_json(open(sys.argv[1] + n).read()) for n in ('/a.json', '/b.json'))\n"
        "d = gw.diff(a, b)\n"
        "e = gw.load_json(open(sys.argv[1] + '/d.json').read())\n"
        "d.by_op(); d.by_source(); d.report(); d._repr_mimebundle_()\n"
        "print(json.dumps([d.matched, e.matched, len(d.removed), len(d.added)]))\n")
    out = subprocess.run([sys.executable, "-c", code, str(tmp_path)], capture_output=True, text=True, cwd=ROOT,
                         timeout=120)
    assert out.returncode == 0, out.stderr
    matched, loaded, removed, added = json.loads(out.stdout)
    assert [tuple(p) for p in matched] == expected.matched == [tuple(p) for p in loaded]
    assert (removed, added) == (2 + len({i for i in full_slices(ga) if ga.node(i)["attrs"]["dim"] == 1}), 12)


# -- views ------------------------------------------------------------------------------------------------------------
def test_diff_widget_traits_link_counterparts_and_check_values() -> None:
    import traitlets
    _, _, d = seed_graphs(named=True)
    w = gw.DiffWidget(d, height=400)
    assert w.colour_by == "grad_bytes" and "bwd_ms" not in w.available_metrics  # not profiled
    assert w.sync is True and len(w._diff) > 100
    pair = d.changed[0]
    w.selected_a = pair[0]
    assert w.selected_b == pair[1]  # the counterpart follows
    w.selected_b = d.added[0]
    assert w.selected_a is None  # an added node has none; clearing one side leaves the other
    assert w.selected_b == d.added[0]
    with pytest.raises(traitlets.TraitError, match="graph A .'repeat'. has no node with id 999"):
        w.selected_a = 999
    with pytest.raises(traitlets.TraitError, match="compare with profile=True for times"):
        w.colour_by = "bwd_ms"
    with pytest.raises(traitlets.TraitError, match="at least 120"):
        w.height = 50
    with pytest.raises(TypeError, match="unexpected keyword argument.*selected.*takes height, selected_a"):
        gw.DiffWidget(d, selected=3)
    assert repr(w).startswith("DiffWidget broadcast vs repeat: same maths")
    # also from the document and its JSON text
    assert gw.DiffWidget(d.to_dict()).diff.matched == d.matched
    assert gw.DiffWidget(d.to_json()).diff.added == d.added


def test_export_html_of_a_diff(tmp_path: Path) -> None:
    import base64
    import re

    from graphwidget.views.packed import unpack
    _, _, d = seed_graphs(named=True)
    for obj in (d, d.to_json(), d.to_dict()):
        page = gw.export_html(obj, tmp_path / "d.html").read_text()
        m = re.search(r'<script type="application/octet-stream" id="gw-graph-data" data-kind="diff" '
                      r'data-encoding="gzip\+base64" data-colour="grad_bytes">([^<]*)</script>', page)
        assert m
        # the payload holds the document with each graph as records (what the packed form unpacks to)
        sent = unpack(base64.b64decode(m.group(1)))
        assert sent == {**json.loads(d.to_json()), "a": d.a.to_dict(version=1), "b": d.b.to_dict(version=1)}
        assert "<title>repeat vs broadcast</title>" in page and "default-src 'none'" in page
    one = gw.export_html(d.a, tmp_path / "a.html").read_text()
    assert 'data-kind="diff"' not in one

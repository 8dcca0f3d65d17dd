"""The exports for other tools, by structure: ``export_chrome_trace`` (Chrome Trace Event Format) and
``export_model_explorer`` (Model Explorer's JSON graph and node data). That they open in those tools is
tests/browser/test_interop_clients.py."""
from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any, Dict, List

import pytest
import torch

import graphwidget as gw
from graphwidget.analysis.memory_accounting import predicted_backward_order


class Net(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.enc = torch.nn.Sequential(torch.nn.Linear(6, 12), torch.nn.GELU())
        self.head = torch.nn.Linear(12, 3)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = self.enc(x)
        return self.head(h * h.sigmoid()).softmax(-1)


def _loss(m: torch.nn.Module, x: torch.Tensor) -> torch.Tensor:
    return m(x).pow(2).mean()


def _load(path: Path) -> Dict[str, Any]:
    text = path.read_text(encoding="utf-8")
    return json.loads(text, parse_constant=lambda c: pytest.fail(f"non-standard JSON constant {c}"))


def _x(ev: List[Dict[str, Any]], tid: int, cat: str) -> List[Dict[str, Any]]:
    return [e for e in ev if e["ph"] == "X" and e["tid"] == tid and e["cat"] == cat]


@pytest.fixture(scope="module")
def net() -> Net:
    torch.manual_seed(0)
    return Net()


def test_trace_has_one_step_per_run_with_that_runs_times(net: Net, tmp_path: Path) -> None:
    g = gw.profile(_loss, net, torch.randn(5, 6), repeat=4, module=net)
    doc = _load(g.export_chrome_trace(tmp_path / "t.json"))
    ev = doc["traceEvents"]
    assert all(isinstance(e["pid"], int) and isinstance(e["tid"], int) for e in ev)
    names = {(e["tid"], e["args"]["name"]) for e in ev if e["ph"] == "M" and e["name"] == "thread_name"}
    assert names == {(1, "forward ops"), (2, "backward nodes")}
    steps = [e for e in ev if e["ph"] == "X" and e["cat"] == "step" and e["tid"] == 2]
    assert [e["name"] for e in steps] == [f"step {k}: backward" for k in range(4)]
    assert g.steps is not None and len(g.steps) == 4
    nodes = _x(ev, 2, "backward")
    for k, s in enumerate(g.steps):
        mine = [e for e in nodes if e["args"]["step"] == k]
        per_node = {e["args"]["node"]: e["args"]["ms"] for e in mine if "node" in e["args"]}
        assert per_node == {v: s["bwd"][v] for v in range(len(g)) if not math.isnan(s["bwd"][v])}
        engine = [e for e in mine if e["name"] == "(autograd engine)"]
        assert len(engine) == 1
        assert engine[0]["args"]["ms"] == pytest.approx(s["bwd_wall"] - sum(per_node.values()))
        # the step's span holds its events: the measured wall time, children inside it
        span = steps[k]
        assert span["dur"] == pytest.approx(s["bwd_wall"] * 1000, abs=1e-3)
        assert all(span["ts"] <= e["ts"] and e["ts"] + e["dur"] <= span["ts"] + span["dur"] for e in mine)
        ends = [e["ts"] + e["dur"] for e in mine]
        assert all(a <= b["ts"] for a, b in zip(ends, mine[1:]))  # end to end, never overlapping
    # the per-node numbers are the statistic of the kept steps (iqm: their mean), recomputed here from the steps
    kept = [s for s in g.steps if s["kept"]]
    assert len(kept) == g.meta["timing"]["runs_used"]
    for v, d in g.nx.nodes(data=True):
        if d["bwd_ms"] is not None:
            assert d["bwd_ms"] == pytest.approx(sum(s["bwd"][v] for s in kept) / len(kept))
    # forward ops in creation order, named by the forward op, with where they came from
    fwd = [e for e in _x(ev, 1, "forward") if e["args"]["step"] == 0]
    seqs = [g.nx.nodes[e["args"]["node"]]["seq"] for e in fwd]
    assert seqs == sorted(seqs) and fwd
    first = fwd[0]["args"]
    assert fwd[0]["name"] == g.nx.nodes[first["node"]]["op"].replace("Backward0", "")
    assert "test_interop.py:" in first["source"] and first["module"] == "enc.0"


def test_backward_order_is_the_recorded_one_and_the_prediction_agrees(net: Net, tmp_path: Path) -> None:
    g = gw.profile(_loss, net, torch.randn(5, 6), repeat=2, memory=True, module=net)
    mem = g.meta["memory"]
    ran = mem["nodes"][mem["forward_points"]:]
    ev = _load(g.export_chrome_trace(tmp_path / "m.json"))["traceEvents"]
    order = [e["args"]["node"] for e in _x(ev, 2, "backward") if e["args"]["step"] == 0 and "node" in e["args"]]
    assert order == list(dict.fromkeys(ran))
    step = [e for e in ev if e.get("cat") == "step" and e["tid"] == 2][0]
    assert step["args"]["order"].startswith("recorded")
    # without the memory run, the order is predicted from the graph: the same order the engine was seen to run
    assert predicted_backward_order(g) == order


def test_a_graph_read_from_a_file_is_one_step_of_its_statistic(net: Net, tmp_path: Path) -> None:
    g = gw.profile(_loss, net, torch.randn(5, 6), repeat=3, module=net)
    h = gw.load_json(g.to_json())
    assert h.steps is None
    ev = _load(h.export_chrome_trace(tmp_path / "f.json"))["traceEvents"]
    bwd = _x(ev, 2, "backward")
    assert {e["args"]["step"] for e in bwd} == {0}
    got = {e["args"]["node"]: e["args"]["ms"] for e in bwd if "node" in e["args"]}
    assert got == {v: d["bwd_ms"] for v, d in g.nx.nodes(data=True) if d["bwd_ms"] is not None}
    engine = [e for e in bwd if e["name"] == "(autograd engine)"]
    assert engine[0]["args"]["ms"] == g.meta["timing"]["unattributed_ms"]


def test_untimed_graph_says_to_profile_it(net: Net, tmp_path: Path) -> None:
    g = gw.trace(_loss, net, torch.randn(5, 6))
    with pytest.raises(ValueError, match=r"no measured times .*gw\.trace.*gw\.profile\(fn, \*args\)"):
        g.export_chrome_trace(tmp_path / "x.json")
    assert not (tmp_path / "x.json").exists()


def test_unwritable_paths_raise_the_same_oserror_as_export_html(net: Net, tmp_path: Path) -> None:
    g = gw.profile(_loss, net, torch.randn(5, 6), repeat=1)
    blocker = tmp_path / "a_file"
    blocker.write_text("")
    for export in (g.export_html, g.export_chrome_trace, g.export_model_explorer):
        with pytest.raises(OSError) as err:
            export(blocker / "sub" / "out.json")
        assert str(blocker) in str(err.value)
        with pytest.raises(IsADirectoryError):
            export(tmp_path)


def test_a_compare_writes_both_sides_as_two_processes(tmp_path: Path) -> None:
    x = torch.randn(64, 32, requires_grad=True)
    d = gw.compare(lambda t: (t * t).sum(), lambda t: t.pow(2).sum(), x, profile=True, repeat=3,
                   labels=("mul", "pow"))
    ev = _load(d.export_chrome_trace(tmp_path / "d.json"))["traceEvents"]
    procs = {e["pid"]: e["args"]["name"] for e in ev if e["ph"] == "M" and e["name"] == "process_name"}
    assert procs == {1: "mul", 2: "pow"}
    ops = {e["pid"]: {e["name"] for e in ev if e["ph"] == "X" and e["cat"] == "backward"} for e in ev}
    assert "MulBackward0" in ops[1] and "PowBackward0" in ops[2]
    untimed = gw.diff(gw.capture((x * x).sum()), gw.capture(x.pow(2).sum()))
    with pytest.raises(ValueError, match="profile=True"):
        untimed.export_chrome_trace(tmp_path / "u.json")


HOSTILE = 'q"\'</script><b>x</b>\n\\\ud800end'


class Hostile(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.inner = torch.nn.ModuleDict({HOSTILE: torch.nn.Linear(3, 2)})

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.inner[HOSTILE](x).sum()


def test_hostile_names_stay_valid_json_and_text(tmp_path: Path) -> None:
    m = Hostile()
    x = torch.randn(2, 3)
    g = gw.profile(lambda m, x: m(x), m, x, repeat=1, module=m, title=HOSTILE)
    trace = tmp_path / "t.json"
    g.export_chrome_trace(trace)
    paths = g.export_model_explorer(tmp_path / "me.json")
    clean = HOSTILE.replace("\ud800", "?")
    for p in [trace, *paths]:
        raw = p.read_bytes()
        raw.decode("utf-8")  # strict UTF-8: the lone surrogate did not get through
        _load(p)
    doc = _load(trace)
    assert {e["args"]["module"] for e in doc["traceEvents"] if e.get("cat") == "forward"} == {"", "inner." + clean}
    assert doc["traceEvents"][0]["args"]["name"] == clean
    me = _load(paths[0])
    spaces = {n["namespace"] for n in me["graphs"][0]["nodes"]}
    assert "inner (ModuleDict)/" + clean.replace("/", "|") + " (Linear)" in spaces  # a "/" would split a layer


def test_model_explorer_graph_is_the_graph(net: Net, tmp_path: Path) -> None:
    g = gw.profile(_loss, net, torch.randn(5, 6), repeat=2, module=net)
    paths = g.export_model_explorer(tmp_path / "g.json")
    assert [p.name for p in paths] == ["g.json", "g.bwd_ms.json", "g.fwd_ms.json", "g.saved_bytes.json"]
    doc = _load(paths[0])
    assert set(doc) == {"label", "graphs"} and len(doc["graphs"]) == 1
    nodes = {n["id"]: n for n in doc["graphs"][0]["nodes"]}
    assert set(nodes) == {str(v) for v in g.nx.nodes}
    edges = {(e["sourceNodeId"], n["id"], e["sourceNodeOutputId"], e["targetNodeInputId"])
             for n in nodes.values() for e in n["incomingEdges"]}
    assert edges == {(str(u), str(v), str(a["output"]), str(a["slot"])) for u, v, a in g.nx.edges(data=True)}
    for v, d in g.nx.nodes(data=True):
        n = nodes[str(v)]
        assert n["label"] == d["op"]
        mod = d["module"]
        if mod:
            parts = mod.split(".")
            want = "/".join(f"{p} ({g.meta['modules']['.'.join(parts[:i + 1])]})" for i, p in enumerate(parts))
            assert n["namespace"] == want
        for i, o in enumerate(d["outputs"] or []):
            meta = {a["key"]: a["value"] for a in n["outputsMetadata"][i]["attrs"]}
            assert meta["tensor_shape"] == o["dtype"] + "[" + ",".join(map(str, o["shape"])) + "]"
        attrs = {a["key"]: a["value"] for a in n["attrs"]}
        assert all(isinstance(a["value"], str) for a in n["attrs"])
        if d["bwd_ms"] is not None:
            assert float(attrs["bwd_ms"]) == d["bwd_ms"]
    data = _load(paths[1])
    assert data["results"] == {str(v): {"value": d["bwd_ms"]} for v, d in g.nx.nodes(data=True)
                               if d["bwd_ms"] is not None}
    # an untimed capture has no node data to write but the graph (saved bytes: only when some are non-zero)
    c = gw.capture(_loss(net, torch.randn(5, 6)))
    assert [p.name for p in c.export_model_explorer(tmp_path / "c.json")] == ["c.json", "c.saved_bytes.json"]

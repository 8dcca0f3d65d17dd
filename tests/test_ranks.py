"""One graph per rank under torch.distributed: real processes, ``torchrun --nproc_per_node=4`` on gloo (CPU).

Each test reads what tests/dist_worker.py saw in one scenario (the four that end normally share one launch, the
failing ones have a launch each); every rank writes what it saw (its result, or how it
stopped and when) and rank 0 the RankSet's findings. What must hold:

* a DDP model whose rank 2 takes a data-dependent branch: its graph differs, found with the branch's line;
* a rank made slow on purpose (a node that sleeps on rank 3 only): rank 3 is the straggler, at that node;
* a parameter unused on one rank (DDP with find_unused_parameters): named for that rank only;
* a rank that raises: no hang; every other rank stops with an error naming rank 2, its exception and its line —
  at once when they are not blocked in a collective of the step, else as soon as rank 2's process is gone;
* a rank that never arrives: the others stop at graphwidget's timeout, and the late rank stops too;
* gradients bit-identical with and without capture; nothing gathered when ``ranks=None``; both transports.

The other tests (no processes) check the RankSet's analysis on hand-made rank graphs.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any, Dict, Tuple

import pytest
import torch
from torch_facts import STORE_MAY_GO_FIRST

import graphwidget as gw
from graphwidget.analysis.ranks import RankSet

ROOT = Path(__file__).resolve().parents[1]
WORKER = Path(__file__).resolve().parent / "dist_worker.py"
dist = pytest.importorskip("torch.distributed")
pytestmark = pytest.mark.skipif(not dist.is_available() or not dist.is_gloo_available(),
                                reason="torch.distributed with gloo is not available")


#: Every test that starts torchrun runs in one xdist worker, one job at a time: two `--standalone` jobs started
#: together can fail to set up their process group.
TORCHRUN = "torchrun-jobs"


def torchrun(scenarios: str, out: Path, timeout: float = 400) -> str:
    """torchrun --standalone --nproc_per_node=4 dist_worker.py SCENARIOS OUT; what to show if a rank wrote nothing."""
    out.mkdir(parents=True, exist_ok=True)
    env = dict(os.environ, PYTHONPATH=str(ROOT), OMP_NUM_THREADS="1")
    cmd = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc_per_node=4", str(WORKER),
           scenarios, str(out)]
    proc = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True, timeout=timeout)
    return f"(torchrun exit {proc.returncode}):\n{proc.stderr[-4000:]}"


def launch(scenario: str, out: Path) -> Dict[int, Dict[str, Any]]:
    """One scenario in a torchrun of its own; every rank's result."""
    return read_results(out, torchrun(scenario, out))


def read_results(out: Path, why: str) -> Dict[int, Dict[str, Any]]:
    results = {}
    for r in range(4):
        p = out / f"result{r}.json"
        assert p.is_file(), f"rank {r} wrote no result {why}"
        results[r] = json.loads(p.read_text())
    return results


#: The scenarios that end normally share one torchrun (each rank imports torch once for all of them). "grads" goes
#: first: it checks that nothing of graphwidget's (process group, file) exists before any ``ranks=`` call.
SHARED = ("grads", "diverge", "slow", "unused")
_shared: Dict[str, Any] = {}


def shared(scenario: str, tmp_path_factory: pytest.TempPathFactory) -> Tuple[Dict[int, Dict[str, Any]], Path]:
    """The results of ``scenario`` from the one launch of :data:`SHARED` in this process, and its output folder."""
    if "root" not in _shared:
        root = tmp_path_factory.mktemp("ranks")
        _shared["root"], _shared["why"] = root, torchrun(",".join(SHARED), root)
    out = _shared["root"] / scenario
    return read_results(out, _shared["why"]), out


def ok(res: Dict[int, Dict[str, Any]]) -> None:
    for r, x in res.items():
        assert "raised" not in x, f"rank {r}: {x.get('traceback')}"


@pytest.mark.slow
@pytest.mark.xdist_group(TORCHRUN)
def test_a_rank_that_takes_a_branch_is_found_with_the_line(
        tmp_path_factory: pytest.TempPathFactory, tmp_path: Path) -> None:
    res, out = shared("diverge", tmp_path_factory)
    ok(res)
    assert [res[r]["returned"] for r in range(4)] == ["RankSet", "GradGraph", "GradGraph", "GradGraph"]
    rec = res[0]["record"]
    assert rec["groups"] == [[0, 1, 3], [2]] and rec["reference_rank"] == 0
    (div,) = rec["divergent"]
    assert div["rank"] == 2 and div["removed"] == [] and len(div["added"]) == 1
    first = div["first"]
    assert first["op"] == "MulBackward0" and first["in"] == "rank"
    assert first["source"].endswith(res[0]["lines"]["branch"]) and "h = h * 2" in first["code"]
    assert "rank 2's graph differs" in res[0]["sentence"]
    # no rank was made slow: none is the straggler (DDP's hooks in AccumulateGrad, a run lost to the machine and
    # differences far below a step do not make one)
    assert rec["straggler"] is None, rec["per_rank"]
    # the N-way view of the chosen ranks (the reference and the divergent one), readable back
    d = gw.load_json((out / "nway.json").read_text())
    assert isinstance(d, gw.MultiDiff) and d.kind == "ranks" and d.sides[:2] == ("rank 0", "rank 2")
    assert len(d.pair(0, 1).added) == 1 and d.ranks["divergent"][0]["rank"] == 2
    assert rec["gather"]["via"] == "files"  # Ranks(dir=...): each rank wrote its graph, rank 0 read the files
    # the files the ranks wrote make the same RankSet on the command line
    written = out / "written"
    assert sorted(p.name for p in written.glob("rank*.json")) == [f"rank{r:05d}.json" for r in range(4)]
    cli = subprocess.run([sys.executable, "-m", "graphwidget", "ranks", str(written), "--out",
                          str(tmp_path / "cli.html"), "--json", str(tmp_path / "cli.json"), "--fail-on-divergence"],
                         capture_output=True, text=True, timeout=300, cwd=ROOT)
    assert cli.returncode == 1, cli.stderr  # --fail-on-divergence: rank 2 differs
    assert "rank 2's graph differs" in cli.stdout and res[0]["lines"]["branch"] in cli.stdout
    assert (tmp_path / "cli.html").stat().st_size > 10_000
    back = gw.load_json((tmp_path / "cli.json").read_text())
    assert back.ranks["divergent"][0]["first"] == first and back.sides[:2] == ("rank 0", "rank 2")


@pytest.mark.slow
@pytest.mark.xdist_group(TORCHRUN)
def test_a_slow_rank_is_the_straggler_at_its_slow_node(tmp_path_factory: pytest.TempPathFactory) -> None:
    res, out = shared("slow", tmp_path_factory)
    ok(res)
    rec = res[0]["record"]
    s = rec["straggler"]
    assert s is not None and s["rank"] == 3, rec["per_rank"]
    assert s["excess_ms"] > 200  # the node sleeps 250 ms per forward on rank 3
    d = gw.load_json((out / "nway.json").read_text())
    assert d.graphs[d.reference].node(s["node"])["op"] == "SlowBackward"
    stats = rec["nodes"]["stats"]
    k = rec["nodes"]["ids"].index(s["node"])
    assert stats["straggler"][k] == 3 and stats["spread_ms"][k] > 200
    assert "rank 3 is the straggler" in res[0]["sentence"]


@pytest.mark.slow
@pytest.mark.xdist_group(TORCHRUN)
def test_an_unused_parameter_is_named_for_its_rank(tmp_path_factory: pytest.TempPathFactory) -> None:
    res, out = shared("unused", tmp_path_factory)
    ok(res)
    rec = res[0]["record"]
    assert rec["unused"] == {"1": ["module.extra.weight", "module.extra.bias"]}
    per = {p["rank"]: p for p in rec["per_rank"]}
    assert per[1]["unused"] == ["module.extra.weight", "module.extra.bias"]
    assert all(per[r]["unused"] == [] for r in (0, 2, 3))
    assert rec["straggler"] is None, rec["per_rank"]  # rank 1 computes less (no extra layer): not a straggler
    # skipping the layer is a divergence too: the line of the layer rank 1 does not run
    div = {d["rank"]: d for d in rec["divergent"]}
    assert div[1]["first"]["in"] == "reference" and "self.extra(h)" in div[1]["first"]["code"]


@pytest.mark.slow
@pytest.mark.xdist_group(TORCHRUN)
def test_a_rank_that_raises_stops_the_others_with_its_error(tmp_path: Path) -> None:
    # No collective inside the step: the others reach graphwidget's wait and stop as soon as rank 2 reports.
    res = launch("raise_nocomm", tmp_path)
    assert res[2]["raised"] == "ValueError"
    named = 0
    for r in (0, 1, 3):
        assert res[r]["raised"] == "RankError", res[r]
        assert res[r]["ended_at"] - res[2]["raised_at"] < 30  # the wait's timeout is 60 s
        if STORE_MAY_GO_FIRST and "lost the job's store" in res[r]["message"]:
            continue  # torch 2.4: the store went down before this rank read rank 2's error (tests/torch_facts.py)
        assert "rank 2 raised ValueError: rank 2 broke on purpose" in res[r]["message"]
        assert "dist_worker.py" in res[r]["message"]  # the line that raised
        named += 1
    assert named >= 1  # the error reached the others
    # Under DDP the others are blocked in the backward's allreduce when rank 2 raises in its forward: they stop
    # when rank 2's process ends (gloo sees the peer gone), and name rank 2 as the cause.
    res = launch("raise", tmp_path / "ddp")
    assert res[2]["raised"] == "ValueError"
    for r in (0, 1, 3):
        assert res[r]["raised"] == "RankError", res[r]
        assert "rank 2 failed first (ValueError: rank 2 broke on purpose" in res[r]["message"]
        assert res[r]["ended_at"] - res[2]["raised_at"] < 60


@pytest.mark.slow
@pytest.mark.xdist_group(TORCHRUN)
def test_a_rank_that_never_arrives_times_out_everywhere(tmp_path: Path) -> None:
    res = launch("hang", tmp_path)
    named = 0
    for r in (0, 1, 3):
        assert res[r]["raised"] == "RankError", res[r]
        assert res[r]["seconds"] < 6 + 30
        if STORE_MAY_GO_FIRST and "lost the job's store" in res[r]["message"]:
            continue  # torch 2.4: the first rank to give up took the store down (tests/torch_facts.py)
        assert "ranks [2] did not finish their step within 6 s" in res[r]["message"], res[r]
        named += 1
    assert named >= 1
    # the late rank does not wait for ranks that are gone: it stops at once, saying they gave up
    assert res[2]["raised"] == "RankError"
    if not (STORE_MAY_GO_FIRST and "lost the job's store" in res[2]["message"]):  # torch 2.4: tests/torch_facts.py
        assert "stopped waiting" in res[2]["message"], res[2]


@pytest.mark.slow
@pytest.mark.xdist_group(TORCHRUN)
def test_gradients_are_bit_identical_and_nothing_is_gathered_without_ranks(
        tmp_path_factory: pytest.TempPathFactory) -> None:
    res, out = shared("grads", tmp_path_factory)
    ok(res)
    for r in range(4):
        x = res[r]
        assert x["plain_twice_equal"], "the control: two plain steps must agree bit for bit"
        assert x["same_grads_plain"] and x["same_grads_ranks"]
        assert x["nothing_gathered"]
    assert res[0]["trace_object"] == ["RankSet", [0, 1, 2, 3], "object"]
    assert res[0]["trace_files"] == ["RankSet", [0, 1, 2, 3], "files"]
    assert sorted(p.name for p in (out / "via-files").glob("rank*.json")) == \
        [f"rank{r:05d}.json" for r in range(4)]


# -- the analysis on hand-made rank graphs (no processes) ----------------------------------------------------------------
def _graphs() -> Dict[int, gw.GradGraph]:
    lin = torch.nn.Linear(4, 4)

    def step(x: torch.Tensor, branch: bool) -> torch.Tensor:
        h = torch.relu(lin(x))
        if branch:
            h = h * 2
        return h.sum()

    out = {}
    for r in range(3):
        g = gw.profile(step, torch.randn(2, 4), r == 2, repeat=1, warmup=0)
        g.meta["rank"] = {"rank": r, "world_size": 3, "unused": [] if r else ["extra.weight"]}
        out[r] = g
    return out


def _timed(extra: Dict[int, Dict[str, float]], step_ms: float = 20.0) -> RankSet:
    """The three ranks of :func:`_graphs` with every node at 0.1 ms forward and backward, plus ``extra[rank][op]``
    ms in that rank's first node of ``op``, and a whole step of ``step_ms`` on every rank."""
    graphs = _graphs()
    for r, g in graphs.items():
        for _, rec in g.nx.nodes(data=True):
            rec["fwd_ms"], rec["bwd_ms"] = 0.1, 0.1
        for op, ms in extra.get(r, {}).items():
            g.nx.nodes[g.nodes(op=op)[0]]["bwd_ms"] += ms
        g.meta["timing"] = {"forward_ms": step_ms / 4, "backward_ms": 3 * step_ms / 4}
    return RankSet(graphs)


def test_the_straggler_is_slow_computing_not_waiting_nor_by_a_hair() -> None:
    rs = _timed({1: {"AddmmBackward0": 20.0}})
    s = rs.straggler
    assert s is not None and s["rank"] == 1 and s["excess_ms"] == pytest.approx(20.0, abs=0.5)
    assert rs[0].node(s["node"])["op"] == "AddmmBackward0"
    # the same time inside AccumulateGrad (where DDP's hooks launch the allreduce) is not compute: no straggler,
    # and it stays in the rank's wait
    rs = _timed({1: {"AccumulateGrad": 20.0}})
    assert rs.straggler is None
    per = {p["rank"]: p for p in rs.per_rank()}
    assert per[1]["compute_ms"] == pytest.approx(per[0]["compute_ms"])
    assert per[1]["wait_ms"] == pytest.approx(per[0]["wait_ms"])
    # well above the others' compute, but a small part of the step the others wait in: noise, no straggler
    assert _timed({1: {"AddmmBackward0": 0.5}}, step_ms=20.0).straggler is None
    # a third of a 1 ms step is below the floor (identical ranks of a sub-millisecond step differ that much by
    # noise); 2 ms on a 4 ms step is not
    assert _timed({1: {"AddmmBackward0": 0.5}}, step_ms=1.0).straggler is None
    assert _timed({1: {"AddmmBackward0": 2.0}}, step_ms=4.0).straggler["rank"] == 1


def test_rankset_groups_maps_and_reads_back(tmp_path: Path) -> None:
    rs = RankSet(_graphs())
    assert rs.groups == [[0, 1], [2]] and rs.reference == 0
    assert rs.mapping(1) == {i: i for i in rs[1].nx}
    (div,) = rs.divergent
    assert div["rank"] == 2 and div["first"]["op"] == "MulBackward0" and "h = h * 2" in div["first"]["code"]
    assert rs.unused == {0: ["extra.weight"]}
    st = rs.node_stats(0)
    assert set(st["times"]) == {0, 1, 2} and st["min"] <= st["median"] <= st["max"]
    rs.save(tmp_path)
    back = gw.load(tmp_path)
    assert back.ranks == [0, 1, 2] and back.divergent[0]["first"] == div["first"]
    d = rs.nway()
    assert d.sides[:2] == ("rank 0", "rank 2") and d.kind == "ranks"  # (+ a straggler, if jitter made one)
    again = gw.load_json(d.to_json())
    assert again.ranks["groups"] == [[0, 1], [2]] and again.sentence() == d.sentence()
    page = rs.export_html(tmp_path / "ranks.html").read_text()
    assert "rank 2&#x27;s graph differs" in page and 'id="gw-nway-data"' in page


def test_every_ranks_nodes_carry_their_spread_over_the_ranks() -> None:
    rs = RankSet(_graphs())
    d = rs.nway("all")
    ref = rs[rs.reference]
    for n in ref.nx:
        assert ref.nx.nodes[n]["rank_spread_ms"] == pytest.approx(rs.node_stats(n)["spread_ms"])
    # rank 2's extra node has no reference node, so no spread; its others carry their reference node's
    m2 = {j: i for i, j in rs.mapping(2).items()}
    for j, rec in rs[2].nx.nodes(data=True):
        assert rec["rank_spread_ms"] == (None if j not in m2 else ref.nx.nodes[m2[j]]["rank_spread_ms"])
    assert any(rec["rank_spread_ms"] is None for _, rec in rs[2].nx.nodes(data=True))
    # the views open coloured by it, and it survives the JSON round trip of the graphs and the document
    from graphwidget.views.nway_view import colour
    assert colour(d) == "rank_spread_ms"
    back = gw.load_json(ref.to_json())
    assert back.nx.nodes[0]["rank_spread_ms"] == ref.nx.nodes[0]["rank_spread_ms"]
    again = gw.load_json(d.to_json())
    assert [again.graphs[x].nx.nodes[0]["rank_spread_ms"] for x in again.sides] == \
        [d.graphs[x].nx.nodes[0]["rank_spread_ms"] for x in d.sides]
    doc = json.loads(ref.to_json(version=1))  # the record form, one object per node
    doc["nodes"][0]["rank_spread_ms"] = -1.0
    with pytest.raises(gw.SchemaError, match="rank_spread_ms"):
        gw.load_json(json.dumps(doc))


def test_the_command_line_reads_a_folder_of_rank_graphs(tmp_path: Path, capsys: Any) -> None:
    from graphwidget.entry.cli import main
    rs = RankSet(_graphs())
    rs.save(tmp_path / "job")
    assert main(["ranks", str(tmp_path / "job"), "--show", "1,2", "--json", str(tmp_path / "d.json")]) == 0
    out = capsys.readouterr().out
    assert rs.report() in out
    d = gw.load_json((tmp_path / "d.json").read_text())
    assert d.sides == ("rank 0", "rank 1", "rank 2")  # the reference rank first, then those asked for
    assert main(["ranks", str(tmp_path / "job"), "--fail-on-divergence"]) == 1
    # what is wrong is said, with exit status 2 and no traceback
    (tmp_path / "empty").mkdir()
    assert main(["ranks", str(tmp_path / "empty")]) == 2
    assert "no per-rank graphs (rank*.json)" in capsys.readouterr().err
    assert main(["ranks", str(tmp_path / "job"), "--show", "0,x"]) == 2
    assert "--show takes ranks separated by commas" in capsys.readouterr().err
    assert main(["ranks", str(tmp_path / "job"), "--show", "0,7"]) == 2
    assert "no graph of rank 7" in capsys.readouterr().err
    assert main(["ranks", str(tmp_path / "nowhere")]) == 2
    assert "is not a folder of per-rank graphs" in capsys.readouterr().err


def test_ranks_none_is_the_plain_function_and_ranks_need_a_process_group() -> None:
    x = torch.randn(3, requires_grad=True)
    g = gw.profile(lambda t: (t * 2).sum(), x, repeat=1)
    assert isinstance(g, gw.GradGraph) and "rank" not in g.meta
    if not dist.is_initialized():
        with pytest.raises(RuntimeError, match="no process group is initialised"):
            gw.profile(lambda t: (t * 2).sum(), x, ranks="all")
    with pytest.raises(ValueError, match="ranks must be None"):
        gw.trace(lambda t: (t * 2).sum(), x, ranks="some")
    with pytest.raises(ValueError, match="needs dir="):
        gw.trace(lambda t: (t * 2).sum(), x, ranks=gw.Ranks(via="files"))

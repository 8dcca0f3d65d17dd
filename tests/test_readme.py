"""The Python examples of the README and of docs/capture.md run as written, and the values their comments name hold.

Blocks are found by the heading above them (the first ```python block after it). The tests check what the code
computes, never the prose around it.
"""
from __future__ import annotations

import re
from pathlib import Path

from torch_facts import FULL_SLICES, SEED_NODES, full_slices, needs_saved_hook_facts

ROOT = Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text()
CAPTURE_DOC = (ROOT / "docs" / "capture.md").read_text()
BLOCKS = re.findall(r"```python\n(.*?)```", README, flags=re.S)


def block_after(heading: str, text: str = README) -> str:
    start = text.index(heading)
    return re.search(r"```python\n(.*?)```", text[start:], flags=re.S).group(1)


def test_seed_example_block_runs_and_its_numbers_hold():
    ns: dict = {}
    exec(block_after("## The seed example"), ns)
    a, b, sel = ns["a"], ns["b"], ns["sel"]
    assert (a.summary()["nodes"], b.summary()["nodes"]) == SEED_NODES
    mib_a, mib_b = (round(g.summary()["grad_bytes"] / 2**20, 1) for g in (a, b))
    # torch 2.4's full slices each write the whole repeated gradient too; without them it is newer torch's 90.5 MiB
    slices_a = sum(a.node(i)["grad_bytes"] for i in full_slices(a))
    assert round((a.summary()["grad_bytes"] - slices_a) / 2**20, 1) == 90.5 and mib_b == 12.5
    assert mib_a == (198.5 if FULL_SLICES else 90.5)
    assert (sel["attrs"]["self_sym_sizes"], sel["grad_bytes"]) == ([8, 16384, 3, 3], 4718592)
    assert sel["code"].startswith("temp1 = h[:, :, 0, 0] * g[:, :, 0] + ")


def test_capture_block_runs():
    ns: dict = {}
    exec(block_after("## Capture"), ns)
    g = ns["g"]
    assert g.output is not None and g.node(0)["source"] is not None
    assert ns["g2"].to_json() == ns["text"]


def test_there_are_python_examples():
    assert len(BLOCKS) >= 5


def test_capture_doc_engines_block_runs():
    ns: dict = {}
    exec(block_after("## Engines", CAPTURE_DOC), ns)
    assert set(ns["native"].status()) == {"available", "path", "reason"}
    assert ns["g"].summary()["nodes"] == 4
    assert ns["gw"].capture(ns["loss"]).summary()["ops"]["SelectBackward0"] == 4 * 256 + 1


def test_before_after_block_runs_and_matches_what_it_says(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # the block writes diff.html where it runs
    ns: dict = {}
    exec(block_after("## Before/after"), ns)
    d = ns["d"]
    # torch 2.4: A's full slices over the repeated pixel dim are only in A too (the README says so)
    extra = ["SliceBackward0"] * 12 if FULL_SLICES else []
    assert d.equivalent is True and sorted(ns["removed"]) == ["RepeatBackward0"] + extra + ["UnsqueezeBackward0"]
    assert d.sentence().startswith("broadcast vs repeat: same maths (float32 rounding); whole step")
    assert d.timing["step"]["verdict"] in ("faster", "slower", "same speed", "not enough evidence")
    assert ns["added"] == ["UnsqueezeBackward0"] * 12
    assert [ns["d2"].b.node(i)["op"] for i in ns["d2"].added] == ["MulBackward0"]
    assert type(ns["again"]).__name__ == "Diff" and ns["path"].is_file()
    bad = ns["bad"]  # homo shifted by 0.01 in B: the first divergence is where homo is first used, not upstream
    assert bad.equivalent is False and bad.divergence is not None and not bad.divergence["inherited"]
    assert ns["bad"].divergence["source_b"] == bad.divergence["source_b"] and "first differs at" in bad.sentence()


def test_advisor_block_runs():
    ns: dict = {}
    exec(block_after("## The advisor"), ns)
    f = ns["f"]
    assert (f.rule, f.severity) == ("repeat-broadcast", "warning")
    assert f.code == "h = homo.unsqueeze(1).repeat(1, W * H, 1, 1)" and ns["g"].findings is not None


def test_profile_block_runs():
    ns: dict = {}
    exec(block_after("## Timings: `gw.profile`"), ns)
    s, p = ns["s"], ns["p"]
    assert s["backward_ms"] > 0 and p.node(ns["sel"])["bwd_ms"] is not None
    assert ns["fig"] is not None


def test_viewer_block_runs(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # the block writes graph.html where it runs
    ns: dict = {}
    exec(block_after("## The viewer"), ns)
    w, g = ns["w"], ns["g"]
    assert w.selected == g.nodes(op="RepeatBackward0")[0] and w.colour_by == "saved_bytes"
    assert g.findings and (tmp_path / "graph.html").is_file()


@needs_saved_hook_facts
def test_capture_doc_changes_nothing_blocks_run():
    ns: dict = {}
    section = CAPTURE_DOC[CAPTURE_DOC.index("## Capture changes nothing"):
                          CAPTURE_DOC.index("## Parameters vs activations")]
    checkpoint_block, stale_block = re.findall(r"```python\n(.*?)```", section, flags=re.S)
    exec(checkpoint_block, ns)
    exec(stale_block, ns)
    assert ns["ckpt"]["saved_bytes"] < ns["plain"]["saved_bytes"]


def test_capture_doc_parameters_vs_activations_block_runs():
    ns: dict = {"torch": __import__("torch"), "gw": __import__("graphwidget")}
    exec(block_after("## Parameters vs activations", CAPTURE_DOC), ns)
    assert ns["s"]["saved_parameter_bytes"] > 0


def test_capture_doc_library_lines_block_runs():
    ns: dict = {"torch": __import__("torch"), "gw": __import__("graphwidget")}
    exec(block_after("## Where inside `torch.nn`", CAPTURE_DOC), ns)
    assert ns["lines"] and all(line.startswith("torch/") for line in ns["lines"])


def test_nway_block_runs(monkeypatch):
    import torch
    # AOTAutograd's eager backend: the same compiled region in the autograd graph, without inductor's C++ compile
    compile_ = torch.compile
    monkeypatch.setattr(torch, "compile", lambda fn, **kw: compile_(fn, backend="aot_eager"))
    ns: dict = {}
    monkeypatch.chdir(Path(__import__("tempfile").mkdtemp()))
    exec(block_after("## More than two"), ns)
    d = ns["d"]
    assert d.sides == ("repeat", "broadcast", "compiled") and d.equivalent is True
    assert ns["p"].labels == ("repeat", "compiled") and ns["fused"]["covers"]
    assert [r["label"] for r in ns["rows"]] == list(d.sides) and ns["path"].is_file()

"""The GPU check's own logic, on any machine: its rules, its result files, its summary, its helpers on real torch,
the refusal inside a CUDA graph capture (its CPU side), and a dry run of the script itself on the CPU."""
from __future__ import annotations

import json
import math
import os
import subprocess
import sys
from pathlib import Path

import gpu_check as gc_
import pytest
import torch

from graphwidget.attribution.cuda_capture import cuda_graph_capturing, refuse_during_cuda_graph_capture

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]


def test_rules_judge_at_their_boundaries() -> None:
    assert gc_.within(110.0, 100.0, 0.10) == (True, "within 10% of the truth")
    assert gc_.within(110.5, 100.0, 0.10)[0] is False
    assert gc_.within(89.0, 100.0, 0.10)[0] is False
    assert gc_.within(None, 100.0, 0.10)[0] is None
    assert gc_.within(0.0, 0.0, 0.10)[0] is True and gc_.within(1.0, 0.0, 0.10)[0] is False
    assert gc_.at_most(1.2, 1.2)[0] is True and gc_.at_most(1.2001, 1.2)[0] is False
    assert gc_.in_range(0.7, 0.7, 1.3)[0] is True and gc_.in_range(0.69, 0.7, 1.3)[0] is False
    assert gc_.equal(1, 1)[0] is True and gc_.equal(1, 2)[0] is False and gc_.equal(None, 2)[0] is None
    assert [gc_.speed_word(r, 0.05) for r in (0.94, 0.96, 1.04, 1.06)] == ["faster", "same speed", "same speed",
                                                                             "slower"]
    assert gc_.median([3.0, 1.0, 2.0]) == 2.0 and gc_.median([4.0, 1.0, 2.0, 3.0]) == 2.5
    with pytest.raises(ValueError):
        gc_.median([])


def _report() -> gc_.Report:
    rep = gc_.Report({"device": "cuda:0", "torch": "2.11.0", "python": "3.12.3"})
    rep.add("timing", "overhead", 1.5, 1.0, gc_.at_most(1.5, 1.2), "x", speed=True)
    rep.add("memory", "peak | bytes", 1024, 1024, gc_.equal(1024, 1024), "B")
    rep.add("memory", "ratio", math.inf, 1.0, gc_.within(math.inf, 1.0, 0.1))
    rep.add("cuda_graphs", "note", None)
    try:
        raise RuntimeError("boom")
    except RuntimeError as exc:
        rep.error("compare", exc)
    rep.seconds["timing"] = 12.5
    return rep


def test_report_counts_failures_and_keeps_speed_apart() -> None:
    rep = _report()
    assert rep.counts() == {"passed": 1, "failed": 2, "not_judged": 1, "errors": 1}
    assert [c["name"] for c in rep.failed()] == ["overhead", "ratio"]
    assert [c["name"] for c in rep.failed(speed=False)] == ["ratio"]
    assert not rep.passed
    assert gc_.exit_code(rep, dry_run=False) == 1 and gc_.exit_code(rep, dry_run=True) == 1
    rep.errors.clear()
    assert gc_.exit_code(rep, dry_run=True) == 0 and gc_.exit_code(rep, dry_run=False) == 1


def test_report_files_are_strict_json_and_a_markdown_table(tmp_path: Path) -> None:
    rep = _report()
    paths = rep.write(str(tmp_path / "out"))
    doc = json.loads(Path(paths[0]).read_text(), parse_constant=lambda c: pytest.fail(f"non-JSON constant {c}"))
    assert doc["counts"]["failed"] == 2 and doc["passed"] is False
    assert [c["value"] for c in doc["checks"]][:3] == [1.5, 1024, "inf"]
    assert doc["errors"][0]["error"] == "RuntimeError: boom" and "raise RuntimeError" in doc["errors"][0]["traceback"]
    md = Path(paths[1]).read_text()
    assert "| memory | peak \\| bytes | 1,024 B | 1,024 B | equal to the truth | ok |" in md
    assert "| timing | overhead | 1.5 x | 1 x | <= 1.2 | FAIL |" in md
    assert "### compare: RuntimeError: boom" in md and "timing 12.5" in md


def test_summary_has_one_line_per_check_and_the_counts_last() -> None:
    lines = _report().summary().splitlines()
    assert lines[0].startswith("FAIL timing: overhead") and "<= 1.2" in lines[0]
    assert lines[1].startswith("ok   memory: peak | bytes")
    assert lines[4] == "ERR  compare: RuntimeError: boom"
    assert lines[-1] == "1 passed, 2 failed, 1 not judged, 1 errors; timing 12s"


def test_same_bits_compares_bits_not_values() -> None:
    a = torch.tensor([0.0, 1.0, float("nan")])
    assert gc_.same_bits([a], [a.clone()]) == (True, "")
    ok, why = gc_.same_bits([a], [torch.tensor([-0.0, 1.0, float("nan")])])  # -0.0 == 0.0, but not in bits
    assert not ok and why.startswith("tensor 0")
    assert gc_.same_bits([None, a], [None, a.clone()])[0]
    assert not gc_.same_bits([a], [None])[0] and not gc_.same_bits([a], [a.double()])[0]
    ok, why = gc_.same_bits([torch.ones(3)], [torch.ones(3) + 1e-7])
    assert not ok and "max abs difference" in why


def test_counted_syncs_counts_and_puts_torch_back() -> None:
    orig = (torch.cuda.synchronize, torch.cuda.Event.synchronize, torch.cuda.Stream.synchronize)
    with pytest.raises(KeyError):
        with gc_.counted_syncs() as counts:
            assert torch.cuda.synchronize is not orig[0]
            raise KeyError("interrupted")
    assert counts == {"synchronize": 0, "event": 0, "stream": 0}
    assert (torch.cuda.synchronize, torch.cuda.Event.synchronize, torch.cuda.Stream.synchronize) == orig


def test_hand_written_gpt2_trains_like_a_model() -> None:
    model, ids, which = gc_.gpt2(torch.device("cpu"), torch.float32, dict(n_layer=2, n_embd=32, n_head=2,
                                 vocab_size=50, n_positions=16), 2, 16, hand=True)
    assert which.startswith("hand-written GPT-2 (2 layers")
    loss = model(input_ids=ids, labels=ids).loss
    assert abs(loss.item() - math.log(50)) < 1.0  # random weights: about uniform over the vocabulary
    loss.backward()
    assert all(p.grad is not None for p in model.parameters())


def test_no_capture_in_progress_is_not_refused() -> None:
    assert cuda_graph_capturing() is False
    refuse_during_cuda_graph_capture("graphwidget.profile")  # returns: nothing is being captured


@pytest.mark.slow
def test_dry_run_writes_its_files_and_fails_only_on_errors(tmp_path: Path) -> None:
    env = {**os.environ, "GRAPHWIDGET_NATIVE": "0", "PYTHONPATH": str(ROOT)}
    r = subprocess.run([sys.executable, str(HERE / "gpu_check.py"), "--dry-run", "--only", "memory", "cuda_graphs",
                        "--hand-gpt2", "--out", str(tmp_path)], env=env, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    doc = json.loads((tmp_path / "gpu_check.json").read_text())
    assert doc["meta"]["dry_run"] is True and doc["meta"]["device"] == "cpu" and not doc["errors"]
    assert set(doc["seconds"]) == {"memory", "cuda_graphs"}
    peak = next(c for c in doc["checks"] if c["name"].startswith("g.memory().peak"))
    assert peak["ok"] is True and peak["value"] == peak["truth"] > 0  # the CPU truth is exact too
    assert "passed" in r.stdout.splitlines()[-2]

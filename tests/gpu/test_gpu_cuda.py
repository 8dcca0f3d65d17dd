"""The GPU check's correctness parts as tests, on CUDA at small sizes (skipped without CUDA, like every test here
that needs a device this machine lacks). The speed targets are judged by the full-size run
(``tests/gpu/run.sh``, which prints its figures), never here."""
from __future__ import annotations

from typing import List

import gpu_check
import pytest
import torch

pytestmark = [pytest.mark.gpu,
              pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device (tests/gpu/run.sh)")]


def _run(group: str) -> gpu_check.Report:
    rep = gpu_check.run("cuda", quick=True, only=[group])
    assert not rep.errors, rep.errors[0]["traceback"]
    return rep


def _failed(rep: gpu_check.Report) -> List[str]:
    return [f"{c['group']}: {c['name']}: {c['value']} vs {c['truth']} ({c['detail']})" for c in rep.failed(speed=False)]


def test_memory_peak_is_the_allocators_and_the_checkpoint_saving_is_measured() -> None:
    rep = _run("memory")
    assert not _failed(rep)
    names = [c["name"] for c in rep.checks if c["ok"] is True]
    assert any("max_memory_allocated" in n for n in names)


def test_one_synchronisation_per_profiled_run() -> None:
    rep = _run("timing")
    syncs = [c for c in rep.checks if "synchronis" in c["name"]]
    assert syncs and all(c["ok"] is True for c in syncs), syncs


def test_compare_maths_verdicts_and_nothing_left_on_the_device() -> None:
    rep = _run("compare")
    assert not _failed(rep)


def test_gradients_unchanged_by_every_tool_fp32_amp_and_compiled() -> None:
    rep = _run("neutrality")
    assert not _failed(rep)


def test_cuda_graphs_capture_works_and_profile_says_why_not_inside_a_capture() -> None:
    rep = _run("cuda_graphs")
    assert not _failed(rep)

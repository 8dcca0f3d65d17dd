"""The command line's exit statuses, as CI sees them: real ``python -m graphwidget`` subprocesses. 1 means only "the
result changed"; every other failure has a status of its own (graphwidget/entry/exits.py), one line on stderr and no
traceback unless ``--traceback``; ``--help`` and usage errors are answered before torch is imported."""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import List

import pytest

from graphwidget.entry.exits import EXIT, STATUS

REPO = Path(__file__).resolve().parents[1]

MODULE = '''\
import time
import torch

def make_inputs():
    return {"x": torch.linspace(-1, 1, 6, dtype=torch.float32).requires_grad_()}

def broken_inputs():
    raise RuntimeError("no data here")

def a(x):
    return (x * 2).sum()

def b(x):
    return (x + x).sum()

def c(x):
    return (x * 2.5).sum()

class Picky(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        return x * 3

    @staticmethod
    def backward(ctx, g):
        raise ValueError("my backward refuses")

def bad_backward(x):
    return Picky.apply(x).sum()

def slow(x):
    print("slow forward started", flush=True)
    time.sleep(120)
    return x.sum()
'''


@pytest.fixture()
def work(tmp_path: Path) -> Path:
    (tmp_path / "cm.py").write_text(MODULE)
    return tmp_path


def _env(work: Path) -> dict:
    return {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO), str(work)]), "GRAPHWIDGET_NATIVE": "0"}


def gw(work: Path, *args: str, importtime: bool = False) -> subprocess.CompletedProcess:
    pre: List[str] = ["-X", "importtime"] if importtime else []
    return subprocess.run([sys.executable, *pre, "-m", "graphwidget", *args], cwd=work, env=_env(work),
                          capture_output=True, text=True, timeout=600)


def torch_modules(importtime_stderr: str) -> List[str]:
    """The torch modules ``-X importtime`` saw imported."""
    names = [ln.rsplit("|", 1)[-1].strip() for ln in importtime_stderr.splitlines() if ln.startswith("import time:")]
    return [n for n in names if n == "torch" or n.startswith("torch.")]


def one_message(stderr: str) -> str:
    assert "Traceback" not in stderr, stderr
    lines, warning = [], False
    for ln in stderr.splitlines():
        # an old torch's MissingFactWarning (what it does not expose: tests/torch_facts.py) and its source line
        # come before the message; they are facts of that torch, not a second message
        if "MissingFactWarning: graphwidget:" in ln or (warning and ln.startswith(" ")):
            warning = True
            continue
        warning = False
        if ln.strip() and not ln.startswith("import time:"):
            lines.append(ln)
    assert len(lines) == 1, stderr
    return lines[0]


def test_the_table_has_one_meaning_per_status() -> None:
    codes = [c for c, _ in STATUS.values()]
    assert len(set(codes)) == len(codes) and EXIT["not equivalent"] == 1 and EXIT["usage"] == 2


@pytest.mark.parametrize("args, code, says", [
    (("--help",), 0, "exit status (every command)"),
    (("compare", "--help"), 0, "exit status:"),
    (("ranks", "--help"), 0, "--traceback"),
    (("compare", "cm:a", "cm:b"), 2, "--inputs MODULE:MAKE_INPUTS is needed to run two functions"),
    (("record", "cm:a", "--out", "a.gwrec"), 2, "the following arguments are required: --inputs"),
    (("record", "--help"), 0, "exit status:"),
    (("compare", "cm:a", "cm:b", "--inputs", "cm:make_inputs", "--fail-if-slower", "-1"), 2, "R is a ratio > 0"),
    (("compare", "cm:a", "cm:b", "--inputs", "cm:make_inputs", "--labels", "x"), 2, "two names"),
    (("compare", "cm:a", "cm:b", "--inputs", "cm:make_inputs", "--out", "no/such/dir/d.html"), 2, "does not exist"),
    (("frobnicate",), 2, "invalid choice"),
])
def test_help_and_usage_errors_are_answered_before_torch_loads(work: Path, args: tuple, code: int,
                                                               says: str) -> None:
    r = gw(work, *args, importtime=True)
    assert r.returncode == code, r.stdout + r.stderr
    assert says in r.stdout + r.stderr
    if sys.version_info >= (3, 10):  # 3.9 has no sys.orig_argv: the package cannot tell it runs as the CLI, and
        # loads torch on import as always (graphwidget/__init__.py, _running_the_cli); the answers are the same
        assert torch_modules(r.stderr) == [], "torch was imported to answer " + " ".join(args)


def test_compare_help_lists_every_exit_status(work: Path) -> None:
    out = gw(work, "compare", "--help").stdout
    for code, meaning in STATUS.values():
        assert f"{code:>3}  {meaning.split()[0]}" in out, out


@pytest.mark.slow  # real compare subprocesses, each loading torch
def test_compare_exit_statuses_as_measured(work: Path) -> None:
    """Each status triggered for real: equivalent 0, changed 1, user code failing 4, a write failing 5."""
    same = gw(work, "compare", "cm:a", "cm:b", "--inputs", "cm:make_inputs")
    assert same.returncode == EXIT["ok"] == 0, same.stderr
    changed = gw(work, "compare", "cm:a", "cm:c", "--inputs", "cm:make_inputs")
    assert changed.returncode == EXIT["not equivalent"] == 1, changed.stderr
    # a ValueError raised inside the user's backward: their code failed (4), not a usage error (2)
    r = gw(work, "compare", "cm:a", "cm:bad_backward", "--inputs", "cm:make_inputs")
    assert r.returncode == EXIT["error"] == 4, r.stdout + r.stderr
    assert "my backward refuses" in one_message(r.stderr)
    # the --inputs function raising: their code failed (4)
    r = gw(work, "compare", "cm:a", "cm:b", "--inputs", "cm:broken_inputs")
    assert r.returncode == EXIT["error"], r.stdout + r.stderr
    assert "no data here" in one_message(r.stderr) and "cm:broken_inputs" in r.stderr
    # with --traceback the user's frame is shown
    r = gw(work, "compare", "cm:a", "cm:b", "--inputs", "cm:broken_inputs", "--traceback")
    assert r.returncode == EXIT["error"] and "Traceback" in r.stderr and "broken_inputs" in r.stderr


@pytest.mark.slow
@pytest.mark.skipif(not Path("/dev/full").exists() or not os.access("/dev", os.W_OK),
                    reason="needs /dev/full and a writable /dev (the --out folder check passes there)")
def test_a_write_failing_after_the_run_is_its_own_status(work: Path) -> None:
    r = gw(work, "compare", "cm:a", "cm:b", "--inputs", "cm:make_inputs", "--out", "/dev/full")
    assert r.returncode == EXIT["write failed"] == 5, r.stdout + r.stderr
    msg = one_message(r.stderr)
    assert "/dev/full" in msg and "No space left" in msg


@pytest.mark.slow  # a real compare subprocess, loading torch
def test_a_reader_that_leaves_stops_the_command_quietly(work: Path) -> None:
    """``compare ... | head`` whose reader has gone: no "cannot write a file" (5) and no message, but the status a
    shell gives a command stopped by SIGPIPE; and a reader that reads it all still gets the verdict's status."""
    read, write = os.pipe()
    os.close(read)  # the reader is gone before the first line
    try:
        r = subprocess.run([sys.executable, "-m", "graphwidget", "compare", "cm:a", "cm:c", "--inputs",
                            "cm:make_inputs"], cwd=work, env=_env(work), stdout=write, stderr=subprocess.PIPE,
                           text=True, timeout=600)
    finally:
        os.close(write)
    assert r.returncode == EXIT["output closed"] == 141, r.stderr
    assert "Broken pipe" not in r.stderr and "cannot write" not in r.stderr and "Exception ignored" not in r.stderr
    whole = gw(work, "compare", "cm:a", "cm:c", "--inputs", "cm:make_inputs")
    assert whole.returncode == EXIT["not equivalent"] and "NOT EQUIVALENT" in whole.stdout


@pytest.mark.slow  # real compare subprocesses, each loading torch
def test_ctrl_c_is_interrupted_not_a_changed_result(work: Path) -> None:
    p = subprocess.Popen([sys.executable, "-m", "graphwidget", "compare", "cm:a", "cm:slow", "--inputs",
                          "cm:make_inputs"], cwd=work, env=_env(work), stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True)
    try:
        assert p.stdout is not None
        deadline = time.monotonic() + 600
        while time.monotonic() < deadline:
            line = p.stdout.readline()
            if "slow forward started" in line or not line:
                break
        p.send_signal(signal.SIGINT)
        out, err = p.communicate(timeout=120)
    finally:
        if p.poll() is None:
            p.kill()
    assert p.returncode == EXIT["interrupted"] == 130, err
    assert "interrupted" in one_message(err)

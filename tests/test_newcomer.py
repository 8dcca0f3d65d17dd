"""What a newcomer meets first: `make demo` without Node.js says so before downloading anything, and the doctor's
report says where to report a bug."""
from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.parametrize("target", ["demo", "setup"])
def test_make_without_node_says_so_before_any_download(tmp_path: Path, target: str) -> None:
    make = shutil.which("make")
    if make is None:
        pytest.skip("make is not installed")
    # a checkout without the built viewer, on a PATH with neither node nor npm (nor python: nothing could start)
    shutil.copy(ROOT / "Makefile", tmp_path / "Makefile")
    shutil.copy(ROOT / "pyproject.toml", tmp_path / "pyproject.toml")
    (tmp_path / "js").mkdir()
    shutil.copy(ROOT / "js" / "package.json", tmp_path / "js" / "package.json")
    empty = tmp_path / "bin"
    empty.mkdir()
    r = subprocess.run([make, target], cwd=tmp_path, env={"PATH": str(empty), "HOME": str(tmp_path)},
                       capture_output=True, text=True, timeout=60)
    assert r.returncode != 0
    assert "needs Node.js 18+ with npm" in r.stdout and "Nothing was downloaded" in r.stdout
    assert not (tmp_path / ".venv").exists()  # it stopped before the virtualenv, let alone torch
    # with the viewer already built, Node is not needed: the check lets the make go on
    (tmp_path / "graphwidget" / "static").mkdir(parents=True)
    for f in ("viewer.js", "widget.js"):
        (tmp_path / "graphwidget" / "static" / f).write_text("")
    r = subprocess.run([make, "need-node"], cwd=tmp_path, env={"PATH": str(empty)}, capture_output=True,
                       text=True, timeout=60)
    assert r.returncode == 0, r.stdout + r.stderr


def test_doctor_says_where_to_report_a_bug() -> None:
    import sys
    r = subprocess.run([sys.executable, "-m", "graphwidget", "doctor"], capture_output=True, text=True, timeout=300,
                       cwd=ROOT)
    assert r.returncode == 0, r.stderr
    assert r.stdout.rstrip().splitlines()[-1].startswith("Report a bug on the project's issue tracker")
    readme = (ROOT / "README.md").read_text()
    assert "## Reporting a bug" in readme  # the section the doctor and pyproject point to

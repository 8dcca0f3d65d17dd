"""The main job (`make demo` = `python -m graphwidget demo`) tells the seed story and writes offline viewers."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import graphwidget as gw
from graphwidget.examples.demo import run_demo

ROOT = Path(__file__).resolve().parents[1]


def test_demo_tells_the_story_and_writes_viewers(tmp_path, capsys):
    made = run_demo(tmp_path, profile=True)
    out = capsys.readouterr().out
    a, b = made["graphs"]["homography (repeat)"], made["graphs"]["homography (broadcast)"]
    sa, sb = a.summary(), b.summary()
    assert sa["nodes"] < sb["nodes"]                      # fewer nodes ...
    assert sa["grad_bytes"] > 3 * sb["grad_bytes"]        # ... far bigger gradients
    assert sa["backward_ms"] > sb["backward_ms"]          # ... and a slower backward
    assert "counts mislead" in out and "sizes tell" in out and "measured times tell the truth" in out
    names = {p.name for p in made["written"]}
    assert {"homography_repeat.html", "homography_broadcast.html", "homography_repeat_report.html"} <= names
    html = (tmp_path / "homography_repeat.html").read_text()
    assert "<script src=" not in html and "https://" not in html.split("<script")[0]
    # the JSON beside each viewer is the same graph
    again = gw.load_json((tmp_path / "homography_repeat.json").read_text())
    assert again.summary()["nodes"] == sa["nodes"]


def test_demo_cli_runs(tmp_path):
    proc = subprocess.run([sys.executable, "-m", "graphwidget", "demo", "--out", str(tmp_path), "--no-profile"],
                          cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert "homography (repeat): 49 nodes" in proc.stdout
    assert (tmp_path / "homography_broadcast.html").is_file()
    bad = subprocess.run([sys.executable, "-m", "graphwidget"], cwd=ROOT, capture_output=True, text=True)
    assert bad.returncode == 2 and "demo" in bad.stdout

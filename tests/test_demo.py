"""The main job (`make demo` = `python -m graphwidget demo`) tells the seed story with the diff of the seed pair, its
words following its numbers, and writes offline viewers (out/demo.html is the diff)."""
from __future__ import annotations

import base64
import re
import subprocess
import sys
from pathlib import Path

import pytest
from torch_facts import FULL_SLICES, SEED_NODES, full_slices

import graphwidget as gw
from graphwidget.entry.demo import run_demo
from graphwidget.views.packed import unpack

ROOT = Path(__file__).resolve().parents[1]


def test_demo_tells_the_story_and_writes_viewers(tmp_path, capsys):
    made = run_demo(tmp_path, profile=True, repeat=4)
    out = capsys.readouterr().out
    d = made["diff"]
    a, b = made["graphs"]["homography (repeat)"], made["graphs"]["homography (broadcast)"]
    assert a is d.a and b is d.b
    sa, sb = a.summary(), b.summary()
    assert (sa["nodes"], sb["nodes"]) == SEED_NODES
    # fewer nodes (torch < 2.5 adds a node per full slice, twice as many in repeat's `h[:, :, i, j]`: set aside) ...
    assert sa["nodes"] - len(full_slices(a)) < sb["nodes"] - len(full_slices(b))
    assert sa["grad_bytes"] > 3 * sb["grad_bytes"]        # ... far bigger gradients
    assert "counts mislead" in out and "sizes tell" in out
    assert "same maths? same maths within float32 rounding" in out and d.equivalent is True
    assert out.count(d.sentence()) == 1
    # the speed lines are the ones the verdicts call for (no claim about which side is faster)
    t = d.timing
    assert t["per_node"]["rounds"] == 4 and a.meta["timing"]["interleaved"]
    assert f"measured ({t['rounds']} interleaved rounds of plain runs" in out
    for phase in ("step", "forward", "backward"):
        ph = t[phase]
        line = next(ln for ln in out.splitlines() if f"repeat {ph['ms'][0]:.2f} ms, broadcast {ph['ms'][1]:.2f} ms" in ln)
        assert {"faster": "faster [", "slower": "slower [", "same speed": "same speed",
                "not enough evidence": "not enough evidence"}[ph["verdict"]] in line
    assert ("tell the truth" in out) == (t["step"]["verdict"] == "faster")
    # and on torch < 2.5 the full slice over the repeated pixel dim, which the broadcast version has no need for
    extra = "SliceBackward0 x12, " if FULL_SLICES else ""
    assert (f"only in repeat: {extra}RepeatBackward0, UnsqueezeBackward0; only in broadcast: UnsqueezeBackward0 x12"
            in out)
    names = {p.name for p in made["written"]}
    assert {"demo.html", "homography_repeat.html", "homography_broadcast.html", "homography_repeat_report.html",
            "demo_diff.json"} <= names
    html = (tmp_path / "demo.html").read_text()
    assert "<script src=" not in html and "https://" not in html.split("<script")[0]
    m = re.search(r'<script type="application/octet-stream" id="gw-graph-data" data-kind="diff" '
                  r'data-encoding="gzip\+base64"[^>]*>([^<]*)</script>', html)
    assert m, "demo.html carries the diff document"
    doc = unpack(base64.b64decode(m.group(1)))
    assert doc["format"] == "graphwidget-diff" and doc["labels"] == ["repeat", "broadcast"]
    assert doc["summary"]["timing"]["per_node"]["rounds"] == 4 and doc["summary"]["sentence"] == d.sentence()
    # the JSON beside each viewer is the same graph; the diff JSON loads back as a Diff
    again = gw.load_json((tmp_path / "homography_repeat.json").read_text())
    assert again.summary()["nodes"] == sa["nodes"]
    back = gw.load_json((tmp_path / "demo_diff.json").read_text())
    assert back.matched == d.matched and back.timing == d.timing


@pytest.mark.slow  # the whole demo in a subprocess: ~6-11 s
def test_demo_cli_runs(tmp_path):
    proc = subprocess.run([sys.executable, "-m", "graphwidget", "demo", "--out", str(tmp_path), "--no-profile"],
                          cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert f"homography (repeat): {SEED_NODES[0]} nodes" in proc.stdout
    assert "backward (median" not in proc.stdout  # not timed: no timing sentence at all
    assert (tmp_path / "homography_broadcast.html").is_file() and (tmp_path / "demo.html").is_file()
    bad = subprocess.run([sys.executable, "-m", "graphwidget"], cwd=ROOT, capture_output=True, text=True)
    assert bad.returncode == 2 and "demo" in bad.stdout and "compare" in bad.stdout


@pytest.mark.slow  # the whole demo in a subprocess
def test_demo_prints_each_step_as_it_starts(tmp_path):
    """The first line arrives while the demo still runs (not everything at the end), the steps come one by one,
    and the compiled-core hint is the demo's own last line (no second interpreter importing torch again)."""
    import os
    import time
    env = {**os.environ, "GRAPHWIDGET_NATIVE": "0"}
    t0 = time.monotonic()
    p = subprocess.Popen([sys.executable, "-m", "graphwidget", "demo", "--out", str(tmp_path), "--no-profile"],
                         cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert p.stdout is not None
    stamped = [(time.monotonic() - t0, line.rstrip("\n")) for line in p.stdout]
    err = p.stderr.read() if p.stderr else ""
    assert p.wait(timeout=600) == 0, err
    end = time.monotonic() - t0
    first_at, first = stamped[0]
    assert first.startswith("graphwidget demo:")
    steps = [(t, ln) for t, ln in stamped if ln.startswith("== ")]
    assert len(steps) >= 3
    # the first line comes before the run's long parts, the steps before the lines they announce
    assert first_at < steps[-1][0] and first_at < end - 1.0, (first_at, end)
    assert steps[0][0] < stamped[-2][0]
    assert stamped[-1][1].startswith("== the demo ran without the optional compiled core")

"""Recordings (``gw.record``, ``rec.save``, ``gw.load``, ``gw.compare`` of recordings, ``python -m graphwidget
record``): made in separate processes, they give the verdict, matching and first divergence of the in-process
compare; broken files are refused saying what is wrong, and run nothing."""
from __future__ import annotations

import json
import os
import pickle
import struct
import subprocess
import sys
from pathlib import Path

import pytest
import torch

import graphwidget as gw
from graphwidget.model import recfile

sys.path.insert(0, str(Path(__file__).parent))
import divergence_models as dm  # noqa: E402
import record_models  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
TESTS = Path(__file__).resolve().parent


def _env() -> dict:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), str(TESTS), env.get("PYTHONPATH", "")])
    env.setdefault("GRAPHWIDGET_NATIVE", "0")
    return env


def _cli(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "graphwidget", *args], cwd=cwd, env=_env(), capture_output=True,
                          text=True, timeout=300)


def _record_in_subprocess(name: str, out: Path) -> None:
    p = _cli("record", f"record_models:{name}", "--inputs", "record_models:make_inputs", "--out", str(out),
             "--label", name, cwd=out.parent)
    assert p.returncode == 0, p.stderr
    assert out.is_file()


def _line(text: str) -> int:
    """The line of divergence_models.py that holds ``text`` (the injected change)."""
    lines = (TESTS / "divergence_models.py").read_text().splitlines()
    return next(i for i, x in enumerate(lines, 1) if text in x)


def _rows(d):
    return [(r["name"], r["kind"], r["allclose"]) for r in d.equivalence["tensors"]]


def _where(div):
    return None if div is None else (div["phase"], div["a"], div["b"], div["op"], div["source_a"], div["source_b"])


@pytest.mark.slow
@pytest.mark.parametrize("bug,line", [(None, None), ("scale", "the scale bug"), ("detach", "the detached residual")])
def test_recordings_from_two_processes_agree_with_one_process(tmp_path, bug, line):
    name_b = "decoder_b" if bug is None else f"decoder_b_{bug}"
    _record_in_subprocess("decoder_a", tmp_path / "a.gwrec")
    _record_in_subprocess(name_b, tmp_path / "b.gwrec")
    labels = ("decoder_a", name_b)
    live = gw.compare(record_models.decoder_a, getattr(record_models, name_b), *record_models.make_inputs(),
                      labels=labels)
    files = gw.compare(str(tmp_path / "a.gwrec"), str(tmp_path / "b.gwrec"), labels=labels)
    assert files.equivalent is live.equivalent is (bug is None)
    assert _rows(files) == _rows(live)
    for x, y in zip(files.equivalence["tensors"], live.equivalence["tensors"]):
        for k in ("max_rel", "ref_diff", "tol"):
            assert x.get(k) == pytest.approx(y.get(k), rel=1e-6, abs=1e-12)
    assert files.matched == live.matched and files.added == live.added and files.removed == live.removed
    assert _where(files.divergence) == _where(live.divergence)
    assert files.sentence() == live.sentence()
    if bug is None:
        assert files.divergence is None
    else:  # the change's own line, on B's side
        assert files.divergence["source_b"].endswith(f"divergence_models.py:{_line(line)}")
        assert files.divergence["phase"] == ("backward" if bug == "detach" else "forward")
    # recorded in another process, read back: the report says where each came from, nothing about versions
    assert "recorded with torch" not in files.report()


@pytest.mark.slow
def test_cli_round_trip_from_a_fresh_shell(tmp_path):
    _record_in_subprocess("decoder_a", tmp_path / "main.gwrec")
    _record_in_subprocess("decoder_b_scale", tmp_path / "feature.gwrec")
    p = _cli("compare", "main.gwrec", "feature.gwrec", "--markdown", "summary.md", cwd=tmp_path)
    assert p.returncode == 1, p.stderr  # not equivalent
    md = (tmp_path / "summary.md").read_text()
    assert "NOT EQUIVALENT" in md and "feature vs main" in md
    assert "First divergence (forward)" in md
    assert f"divergence_models.py:{_line('the scale bug')}`" in md  # B's source line
    assert f"divergence_models.py:{_line('s = (q @ k.transpose')}`" in md  # A's
    assert "| nodes |" in md and "| gradients written |" in md
    same = _cli("compare", "main.gwrec", "main.gwrec", "--markdown", "same.md", cwd=tmp_path)
    assert same.returncode == 0, same.stderr
    assert "same maths" in (tmp_path / "same.md").read_text()
    # a recording against a function run here on the recorded inputs
    mixed = _cli("compare", "main.gwrec", "record_models:decoder_b", cwd=tmp_path)
    assert mixed.returncode == 0, mixed.stderr
    (tmp_path / "cut.gwrec").write_bytes((tmp_path / "main.gwrec").read_bytes()[:5000])
    bad = _cli("compare", "main.gwrec", "cut.gwrec", cwd=tmp_path)
    assert bad.returncode == 2 and "truncated" in bad.stderr and "Traceback" not in bad.stderr


# -- in one process ------------------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def decoders():
    a, b, ids = dm.pair("scale", n=2, at=1)
    return a, b, ids


def test_save_load_round_trip_keeps_what_compare_reads(tmp_path, decoders):
    a, b, ids = decoders
    rec = gw.record(a, ids, label="a")
    path = rec.save(tmp_path / "a.gwrec")
    back = gw.load(path)
    assert isinstance(back, gw.Recording) and back.label == "a"
    assert back.graph.to_json() == rec.graph.to_json()
    assert [n for n, *_ in back.grads] == [n for n, *_ in rec.grads]
    for (_, _, g1, _), (_, _, g2, _) in zip(rec.grads, back.grads):
        assert torch.equal(g1, g2)
    assert all(torch.equal(x, y) for x, y in zip(rec.ref_outputs, back.ref_outputs))
    assert back.inputs == rec.inputs and back.params == rec.params
    assert torch.equal(back.args[0], ids)
    assert back.values is not None and set(back.values.fwd) == set(rec.values.fwd)
    # the float64 gradients are what compare's own float64 run gives
    assert all(g.dtype == torch.float64 for g in back.ref_grads.values() if g is not None)


def test_compare_recording_with_a_function_and_the_inputs(tmp_path, decoders):
    a, b, ids = decoders
    rec = gw.record(a, ids, label="a").save(tmp_path / "a.gwrec")
    live = gw.compare(a, b, ids, labels=("a", "b"))
    d1 = gw.compare(str(rec), b, labels=("a", "b"))  # on the recorded inputs
    d2 = gw.compare(gw.load(rec), b, ids, labels=("a", "b"))  # on the same inputs, given again
    for d in (d1, d2):
        assert d.equivalent is False and _rows(d) == _rows(live) and _where(d.divergence) == _where(live.divergence)
    with pytest.raises(ValueError, match=r"inputs differ .*arg0: values differ"):
        gw.compare(str(rec), b, torch.randint(0, 50, (2, 12)))
    with pytest.raises(ValueError, match=r"arg0: dtype int64 vs int32"):
        gw.compare(str(rec), b, ids.int())


def test_recordings_of_other_inputs_are_refused(decoders):
    a, b, ids = decoders
    ra = gw.record(a, ids)
    rb = gw.record(b, torch.randint(0, 50, (2, 12), generator=torch.Generator().manual_seed(5)))
    with pytest.raises(ValueError, match=r"the inputs differ between DecoderA and DecoderB \(digest .*arg0: values differ"):
        gw.compare(ra, rb)


def test_outputs_only_recording_is_judged_on_outputs_and_says_so():
    torch.manual_seed(0)
    w = torch.randn(6, 3, requires_grad=True)
    x = torch.randn(4, 6)
    ra = gw.record(lambda x: torch.tanh(x @ w), x, label="a", backward=False)
    rb = gw.record(lambda x: torch.tanh(x @ w), x, label="b")
    d = gw.compare(ra, rb)
    assert d.equivalent is True
    assert all(r["kind"] == "output" for r in d.equivalence["tensors"])
    assert "outputs only: no gradients" in d.sentence() and "recorded without a backward" in d.sentence()
    with torch.no_grad():  # a forward with nothing that requires grad: recorded too, outputs only
        rc = gw.record(lambda x: torch.tanh(x @ w) * 1.5, x, label="c")
    assert rc.backward is False and len(rc.graph) == 0
    d2 = gw.compare(ra, rc)
    assert d2.equivalent is False and "outputs only" in d2.sentence()


def test_other_versions_load_and_are_reported(tmp_path, decoders):
    a, b, ids = decoders
    ra, rb = gw.record(a, ids, label="a"), gw.record(b, ids, label="b")
    rb.env["torch"], rb.env["graphwidget"] = "2.4.1", "0.0.9"
    rb.save(tmp_path / "old.gwrec")
    d = gw.compare(ra, str(tmp_path / "old.gwrec"))
    report = d.report()
    assert "a was recorded with torch" in report and "b with torch 2.4.1" in report
    assert "old.gwrec) was written by graphwidget 0.0.9" in report
    assert d.equivalent is False  # and the verdict is still given


# -- broken files: a ValueError naming what is wrong, nothing run ----------------------------------------------------
@pytest.fixture(scope="module")
def saved(tmp_path_factory):
    torch.manual_seed(0)
    lin = torch.nn.Linear(4, 3)
    path = tmp_path_factory.mktemp("rec") / "a.gwrec"
    gw.record(lin, torch.randn(2, 4)).save(path)
    return path.read_bytes()


def _load(tmp_path, data: bytes):
    p = tmp_path / "x.gwrec"
    p.write_bytes(data)
    return gw.load(p)


@pytest.mark.parametrize("cut,words", [(4, "too short"), (40, "truncated: the header says"),
                                       (-10, "truncated: the tensors need")])
def test_truncated_files_are_refused(tmp_path, saved, cut, words):
    with pytest.raises(ValueError, match=words):
        _load(tmp_path, saved[:cut])


def test_edited_files_are_refused(tmp_path, saved):
    n = struct.unpack("<Q", saved[:8])[0]
    flipped = bytearray(saved)
    flipped[-3] ^= 0x01  # one bit of one tensor
    with pytest.raises(ValueError, match="content digest does not match"):
        _load(tmp_path, bytes(flipped))
    header = json.loads(saved[8:8 + n])
    name = next(k for k in header if k.startswith("grad/"))
    header[name]["shape"] = list(reversed(header[name]["shape"])) + [1]  # same bytes, another shape
    text = json.dumps(header, separators=(",", ":")).encode()
    text += b" " * (-len(text) % 8)
    with pytest.raises(ValueError, match="content digest does not match"):
        _load(tmp_path, struct.pack("<Q", len(text)) + text + saved[8 + n:])
    with pytest.raises(ValueError, match="follow the last tensor"):
        _load(tmp_path, saved + b"\0" * 8)
    broken = bytearray(saved)
    broken[8 + saved.index(b'"data_offsets"') - 8] = ord("}")  # the header's JSON broken
    with pytest.raises(ValueError, match="header is not UTF-8 JSON"):
        _load(tmp_path, bytes(broken))


def test_foreign_files_are_refused_and_nothing_runs(tmp_path, saved):
    marker = tmp_path / "ran"

    class Boom:
        def __reduce__(self):
            return (Path.touch, (marker,))

    with pytest.raises(ValueError):  # a pickle under a recording's name
        _load(tmp_path, pickle.dumps(Boom()))
    zipped = tmp_path / "t.pt"
    torch.save({"x": torch.ones(2)}, zipped)
    with pytest.raises(ValueError):
        _load(tmp_path, zipped.read_bytes())
    assert not marker.exists()
    meta = json.dumps({"__metadata__": {"format": "pt"}, "w": {"dtype": "F32", "shape": [1],
                                                               "data_offsets": [0, 4]}}).encode()
    with pytest.raises(ValueError, match="safetensors file, but not a graphwidget recording"):
        _load(tmp_path, struct.pack("<Q", len(meta)) + meta + b"\0" * 4)
    n = struct.unpack("<Q", saved[:8])[0]
    newer = saved[8:8 + n].replace(b'"version":"1"', b'"version":"7"')
    with pytest.raises(ValueError, match="format version 7 .* upgrade graphwidget"):
        _load(tmp_path, saved[:8] + newer + saved[8 + n:])


def test_file_is_safetensors_layout(saved):
    n = struct.unpack("<Q", saved[:8])[0]
    header = json.loads(saved[8:8 + n])
    assert header["__metadata__"]["format"] == recfile.FORMAT and n % 8 == 0
    end = max(e["data_offsets"][1] for k, e in header.items() if k != "__metadata__")
    assert 8 + n + end == len(saved)


# -- speed ---------------------------------------------------------------------------------------------------------
def test_speed_between_recordings_only_on_one_machine_and_not_interleaved():
    torch.manual_seed(0)
    x = torch.randn(64, 256)
    lin = torch.nn.Linear(256, 256)
    slow = torch.nn.Sequential(*(torch.nn.Linear(256, 256) for _ in range(8)))
    ra = gw.record(lin, x, label="one", profile=True, budget=0.5)
    rb = gw.record(slow, x, label="eight", profile=True, budget=0.5)
    assert len(ra.timing["samples"]) >= 5
    d = gw.compare(ra, rb, labels=("one", "eight"))
    t = d.timing
    assert t["order"] == "not interleaved" and t["step"]["ratio"] > 2  # eight layers against one: plain runs agree
    assert "not interleaved" in d.sentence()
    rb.timing = dict(rb.timing, machine="0" * 16)
    d2 = gw.compare(ra, rb)
    assert d2.timing is None and "timed on different machines" in d2.report()

"""The compiled core's loader and build (graphwidget/capturing/native/): where builds live, what a failed or refused
build says, the load-time self-check, the one note at the first large capture, and the loud degradation on a torch
that hides a fact (torch 2.4: no ``grad_fn._input_metadata``).

Builds themselves take minutes, so these tests drive the pieces a build is made of (with a real compiler, real
libraries and real subprocesses); tests/test_native.py checks the built core against the Python engine.
"""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import textwrap
import warnings
from pathlib import Path
from types import SimpleNamespace
from typing import Dict

import pytest
import torch

import graphwidget as gw
from graphwidget.capturing import native
from graphwidget.capturing.compat import MissingFactWarning, fill_outputs, missing_facts

OLD_TORCH = native.torch_version()[:2] < native.MIN_TORCH
HAS_INPUT_METADATA = not missing_facts()


def _env(tmp_path: Path, **extra: str) -> Dict[str, str]:
    """An environment in which no core is found: empty user cache and GRAPHWIDGET_NATIVE_DIR."""
    env = dict(os.environ)
    env.pop("GRAPHWIDGET_NATIVE", None)
    env["XDG_CACHE_HOME"] = str(tmp_path / "cache")
    env["GRAPHWIDGET_NATIVE_DIR"] = str(tmp_path / "native")
    env.update(extra)
    return env


def _cli(args, env, timeout=300) -> subprocess.CompletedProcess:
    # cwd: env's scratch folder, so the graphwidget that runs is the installed one (the matrix installs a wheel)
    return subprocess.run([sys.executable, "-m", "graphwidget", *args], capture_output=True, text=True, env=env,
                          timeout=timeout, cwd=env["XDG_CACHE_HOME"].rsplit("/", 1)[0])


# -- where builds live -------------------------------------------------------------------------------------------

def test_builds_live_outside_the_package_one_folder_per_environment(monkeypatch, tmp_path):
    package = Path(gw.__file__).parent
    for root in native.search_roots():
        assert package not in root.resolve().parents, f"{root} is inside the package: uninstall would leave it"
    assert native.library_path().parent.name == native.env_tag()
    assert native.module_name() in native.library_path().name
    here = native.env_tag()
    monkeypatch.setattr(sys, "prefix", str(tmp_path / "another-venv"))
    assert native.env_tag() != here, "two environments must not share a build folder"


def test_search_order_env_dir_then_user_cache_then_system(monkeypatch, tmp_path):
    monkeypatch.setenv("GRAPHWIDGET_NATIVE_DIR", str(tmp_path / "admin"))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    roots = native.search_roots()
    assert roots == [tmp_path / "admin", tmp_path / "cache" / "graphwidget" / "native", native.system_root()]
    assert native.build_root() == tmp_path / "admin"
    assert native.build_root(system=True) == Path(sys.prefix) / "share" / "graphwidget" / "native"
    # A read-only system build is found when nothing else is (the admin case).
    lib = tmp_path / "sys" / native.env_tag() / f"{native.module_name()}.so"
    lib.parent.mkdir(parents=True)
    lib.write_bytes(b"")
    monkeypatch.setattr(native.paths, "system_root", lambda: tmp_path / "sys")
    assert native.find_library() == lib


def test_pruning_never_touches_another_environment(tmp_path):
    mine, other = tmp_path / "cpython-311-aaaaaaaaaa", tmp_path / "cpython-311-bbbbbbbbbb"
    for d in (mine, other):
        d.mkdir()
        (d / "gw_native_000000000000.so").write_bytes(b"old")
    keep = mine / "gw_native_111111111111.so"
    keep.write_bytes(b"new")
    native.paths.prune(mine, keep)
    assert sorted(p.name for p in mine.iterdir()) == ["gw_native_111111111111.so"]
    assert (other / "gw_native_000000000000.so").read_bytes() == b"old"


# -- a broken library never reaches the load path ----------------------------------------------------------------

def test_truncated_library_is_refused_in_a_child_process(tmp_path):
    """A half-written .so used to be loaded in-process (SIGBUS). The build now imports a fresh library in a child
    process first; a truncated one fails there, and this process goes on."""
    src = native.find_library() or Path(torch._C.__file__)
    broken = tmp_path / f"{native.module_name()}.so"
    data = src.read_bytes()
    broken.write_bytes(data[: len(data) // 3])
    with pytest.raises(native.BuildError, match="does not work"):
        native.builder._verify(broken, native.module_name())


# -- refused or failing builds say what to do, without a traceback --------------------------------------------

def test_old_torch_is_refused_up_front():
    with pytest.raises(native.BuildError, match=r"needs torch >= 2\.13.*this is torch 2\.4\.1.*works fully without"):
        native.check_torch("2.4.1")
    native.check_torch("2.13.0+cpu")
    native.check_torch("2.14.1")


@pytest.mark.skipif(not OLD_TORCH, reason="this torch can build the core")
def test_build_native_refuses_this_old_torch_in_seconds(tmp_path):
    r = _cli(["build-native"], _env(tmp_path), timeout=120)
    assert r.returncode == 6  # the status "build failed" (graphwidget/entry/exits.py)
    assert "needs torch >= 2.13" in r.stderr and "Traceback" not in r.stderr, r.stderr
    assert not (tmp_path / "native").exists(), "nothing is compiled or written for a refused torch"


@pytest.mark.skipif(OLD_TORCH, reason="this torch is refused before the compiler is looked for")
def test_missing_compiler_is_named_with_the_command(tmp_path):
    r = _cli(["build-native"], _env(tmp_path, CXX=str(tmp_path / "no-such-g++")), timeout=120)
    assert r.returncode == 6, r.stdout
    assert "no-such-g++" in r.stderr and "apt-get install g++" in r.stderr, r.stderr
    assert "Traceback" not in r.stderr


@pytest.mark.skipif(OLD_TORCH, reason="this torch is refused before any folder is written")
def test_unwritable_build_folder_is_a_message_not_a_traceback(tmp_path):
    locked = tmp_path / "locked"
    locked.mkdir()
    if subprocess.run(["chattr", "+i", str(locked)], capture_output=True).returncode != 0:
        pytest.skip("chattr +i is not available here (the only way to make a folder unwritable for root)")
    try:
        r = _cli(["build-native"], _env(tmp_path, GRAPHWIDGET_NATIVE_DIR=str(locked / "sub")), timeout=120)
    finally:
        subprocess.run(["chattr", "-i", str(locked)], check=True)
    assert r.returncode == 6  # the status "build failed" (graphwidget/entry/exits.py)
    assert "cannot write to" in r.stderr and "GRAPHWIDGET_NATIVE_DIR" in r.stderr, r.stderr
    assert "Traceback" not in r.stderr


@pytest.mark.skipif(shutil.which("g++") is None, reason="needs g++")
def test_build_log_shows_the_start_of_the_compiler_errors(tmp_path):
    header = tmp_path / "broken.h"
    header.write_text("struct Node { int x; };\ninline int f(Node n) { return n.y; }\n")
    src = tmp_path / "broken.cpp"
    src.write_text('#include "broken.h"\nint g() { return undefined_thing + 1; }\n' + "// pad\n" * 50)
    out = subprocess.run(["g++", "-c", str(src), "-o", str(tmp_path / "b.o")], capture_output=True, text=True)
    assert out.returncode != 0
    log = "lots of build chatter\n" * 200 + out.stderr + "ninja: build stopped: subcommand failed.\n"
    shown = native.first_errors(log).splitlines()
    assert shown[0].startswith("In file included from"), shown[0]
    assert any("has no member named" in line and "'y'" in line.replace("‘", "'").replace("’", "'")
               for line in shown[:3])
    assert all(line in log.splitlines() for line in shown), "whole lines only, never cut mid-line"


# -- the self-check ----------------------------------------------------------------------------------------------

def test_first_difference_names_the_field():
    x = torch.ones(3, requires_grad=True)
    a = gw.capture((x * 2).sum(), engine="python").to_json()
    b = gw.capture((x * 3).exp().sum(), engine="python").to_json()
    assert native.first_difference(a, a) is None
    d = native.first_difference(a, b)
    assert d is not None and d.startswith("graph.")


@pytest.mark.skipif(not native.available(), reason=f"compiled core not built ({native.status()['reason']})")
def test_self_check_passes_for_the_real_core_and_catches_a_wrong_one():
    mod = native.load_core()
    assert native.self_check(mod) is None

    def wrong_capture(*args):
        node, *rest = mod.capture(*args)
        first = next(iter(node.values()))
        first["op"] = first["op"] + "X"  # a core that misnames one node
        return (node, *rest)

    wrong = SimpleNamespace(capture=wrong_capture, rank_seq=mod.rank_seq,
                            untrack_tree=mod.untrack_tree, instrument=mod.instrument, Unsupported=mod.Unsupported)
    problem = native.self_check(wrong)
    assert problem is not None and ".op" in problem, problem
    assert native.load_core() is mod, "checking another module must not replace the loaded core"


def test_probe_does_not_touch_the_global_rng():
    torch.manual_seed(0)
    before = torch.rand(3)
    torch.manual_seed(0)
    native.engine.probe()
    assert torch.equal(torch.rand(3), before)


# -- the first large capture without a core says so, once --------------------------------------------------------

_LARGE = textwrap.dedent("""
    import warnings, torch, graphwidget as gw
    from graphwidget.capturing import native
    warnings.simplefilter("always")
    with warnings.catch_warnings(record=True) as seen:
        x = torch.ones(2, requires_grad=True)
        y = x
        for _ in range(native.LARGE_GRAPH):
            y = y * 1.0
        gw.capture(y); gw.capture(y); gw.capture((x * 2).sum())
    notes = [str(w.message) for w in seen if issubclass(w.category, native.CoreNotBuiltWarning)]
    print(len(notes)); print(notes[0] if notes else "")
""")


@pytest.mark.slow  # a subprocess capturing a LARGE_GRAPH chain twice: 3-5 s
def test_first_large_capture_without_core_says_how_to_build_it_once(tmp_path):
    r = subprocess.run([sys.executable, "-c", _LARGE], capture_output=True, text=True, env=_env(tmp_path),
                       timeout=300)
    assert r.returncode == 0, r.stderr
    count, message = r.stdout.splitlines()[:2]
    assert count == "1", r.stdout
    assert "build-native" in message and native.BUILD_TIME in message and "GRAPHWIDGET_NATIVE=0" in message


@pytest.mark.slow  # the same subprocess with GRAPHWIDGET_NATIVE=0: 3-5 s
def test_no_note_when_python_was_chosen(tmp_path):
    r = subprocess.run([sys.executable, "-c", _LARGE], capture_output=True, text=True,
                       env=_env(tmp_path, GRAPHWIDGET_NATIVE="0"), timeout=300)
    assert r.returncode == 0, r.stderr
    assert r.stdout.splitlines()[0] == "0"


# -- a torch that hides a fact: loud, and filled where the forward can see it ----------------------------------

def _program():
    x = torch.linspace(0, 1, 12).reshape(2, 6).requires_grad_()
    w = torch.linspace(1, 2, 6).requires_grad_()
    h = x.unsqueeze(1).repeat(1, 4, 1)
    # select(), not h[:, :, 0]: torch 2.4 records a SliceBackward0 for each full slice, a node no forward output
    # shows (its outputs stay unknown there even under trace)
    return (h.select(2, 0) * h.select(2, 1)).sum() + (x * w).sum()


def test_fill_outputs_restores_what_input_metadata_gives():
    """What ``gw.trace`` does on torch 2.4: from a graph whose non-leaf outputs are unknown, the recorded forward
    outputs give back the same outputs, edge shapes and grad_bytes as a capture on a torch that exposes them."""
    full = gw.capture(_program(), engine="python")
    if not HAS_INPUT_METADATA:
        pytest.skip("this torch gives no full capture to compare with (see the trace test below)")
    degraded = gw.load_json(full.to_json())
    found = {}
    g = degraded.nx
    for n, d in g.nodes(data=True):
        if d["kind"] == "leaf":
            continue
        found[n] = [(o["shape"], getattr(torch, o["dtype"]), torch.device(o["device"])) for o in d["outputs"]]
        d["outputs"] = None
        for _, _, e in g.out_edges(n, data=True):
            for item in [e, *(e.get("also") or ())]:
                item["shape"] = item["dtype"] = None
    for v, d in g.nodes(data=True):  # grad_bytes as a capture without the facts computes it: leaves only
        d["grad_bytes"] = sum(4 * torch.Size(e["shape"]).numel() for _, _, e in g.in_edges(v, data=True)
                              if e["shape"] is not None)
    assert degraded.to_json() != full.to_json()
    assert fill_outputs(degraded, found) == len(found)
    assert degraded.to_json() == full.to_json()


_MISSING = textwrap.dedent("""
    import warnings, torch, graphwidget as gw
    from graphwidget.capturing.compat import MissingFactWarning
    warnings.simplefilter("always")
    with warnings.catch_warnings(record=True) as seen:
        for _ in range(2):
            x = torch.ones(3, requires_grad=True)
            gw.capture((x.exp() * 2).sum(), engine="python")
    notes = [str(w.message) for w in seen
             if issubclass(w.category, MissingFactWarning) and "_input_metadata" in str(w.message)]
    print(len(notes)); print(notes[0] if notes else "")
""")


@pytest.mark.skipif(HAS_INPUT_METADATA, reason="this torch exposes grad_fn._input_metadata (torch >= 2.5)")
def test_missing_input_metadata_is_said_once_and_trace_fills_it(tmp_path):
    r = subprocess.run([sys.executable, "-c", _MISSING], capture_output=True, text=True, env=_env(tmp_path),
                       timeout=300)
    assert r.returncode == 0, r.stderr
    count, message = r.stdout.splitlines()[:2]
    assert count == "1" and "_input_metadata" in message and "gw.trace" in message, r.stdout
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", MissingFactWarning)
        g = gw.capture(_program(), engine="python")
        t = gw.trace(_program)
    # A plain capture knows a non-leaf output only where every consumer saved its size (self_sym_sizes) and a dtype
    # is known: here the repeat (read by the two selects), the unsqueeze (read by the repeat) and x * w (read by
    # its sum). The product of the two selects is read by a sum too, but nothing around it knows its dtype.
    x = torch.linspace(0, 1, 12).reshape(2, 6)
    truth = {"UnsqueezeBackward0": list(x.unsqueeze(1).shape), "RepeatBackward0": list(x.unsqueeze(1).repeat(1, 4, 1).shape),
             "MulBackward0": list(x.shape)}
    filled = {}
    for n, d in g.nx.nodes(data=True):
        if d["kind"] == "leaf":
            assert d["outputs"] and d["outputs"][0]["shape"] == list(d["tensor"]["shape"])
        elif d["outputs"] is not None:
            assert len(d["outputs"]) == 1 and d["outputs"][0]["dtype"] == "float32", d
            shape = d["outputs"][0]["shape"]
            sizes = [(g.nx.nodes[v].get("attrs") or {}).get("self_sym_sizes") for _, v in g.nx.out_edges(n)]
            assert sizes and all(s == shape for s in sizes), (d["op"], shape, sizes)
            assert d["op"] not in filled
            filled[d["op"]] = shape
        else:
            assert d["outputs"] is None, "unknown, not 'no outputs'"
    assert filled == truth
    assert len([n for n, d in g.nx.nodes(data=True) if d["kind"] != "leaf" and d["outputs"] is None]) == 6
    sel = [d for _, d in t.nx.nodes(data=True) if d["op"] == "SelectBackward0"]
    assert sel and all(d["outputs"] == [{"shape": [2, 4], "dtype": "float32", "device": "cpu"}] for d in sel)
    # each select on the repeated (2, 4, 6) tensor writes a gradient of that whole shape
    assert all(d["grad_bytes"] == 2 * 4 * 6 * 4 for d in sel)


def test_doctor_names_missing_facts_of_this_torch():
    from graphwidget.entry import doctor
    r = doctor.report()
    assert r["facts"]["missing"] == missing_facts()
    assert json.loads(json.dumps(r)) == r


# -- doctor ------------------------------------------------------------------------------------------------------

@pytest.mark.slow  # two `python -m graphwidget doctor` subprocesses: ~7 s
def test_doctor_is_the_one_report_for_a_bug(tmp_path):
    r = _cli(["doctor"], _env(tmp_path), timeout=120)
    assert r.returncode == 0, r.stderr
    out = r.stdout
    for must in (f"torch        {torch.__version__}", f"python       {sys.version.split()[0]}", "networkx",
                 "anywidget", "ipywidgets", "plotly", "graphwidget  ", "engine:", "bundle:", "chromium",
                 native.env_tag()):
        assert must in out, f"{must!r} missing from:\n{out}"
    # the package that ran (the installed one), and its bundle looked for where the package keeps it
    pkg = Path(next(x for x in out.splitlines() if x.startswith("package:")).split(":", 1)[1].strip())
    assert (pkg / "__init__.py").is_file() and pkg.name == "graphwidget", out
    assert f"bundle:       {pkg / 'static' / 'widget.js'}  " in out, out
    if (pkg / "static" / "widget.js").is_file():
        assert "MISSING" not in out, out
    # no core in this environment's (empty) folders: the engine is Python and the reason says how to build
    assert "engine:       python" in out and "build-native" in out
    off = _cli(["doctor", "--json"], _env(tmp_path, GRAPHWIDGET_NATIVE="0"), timeout=120)
    data = json.loads(off.stdout)
    assert data["engine"]["engine"] == "python" and "GRAPHWIDGET_NATIVE=0" in data["engine"]["why"]
    assert data["versions"]["torch"] == str(torch.__version__)
    assert data["supported"]["torch"] is True
    assert data["environment"]["GRAPHWIDGET_NATIVE"] == "0"

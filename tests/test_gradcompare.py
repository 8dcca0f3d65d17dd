"""``%gradcompare`` through IPython's own test shell, and ``python -m graphwidget compare`` with real torch: in a
subprocess where the run itself is the test (exit status and report of a real ``python -m graphwidget``), in-process
through ``graphwidget.entry.cli.main(argv)`` where only a usage error or a failure message is checked."""
from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path
from types import SimpleNamespace
from typing import Any, Callable, Iterator

import pytest
from IPython.core.error import UsageError
from IPython.core.interactiveshell import InteractiveShell
from torch_facts import FULL_SLICES, SEED_NODES

import graphwidget as gw
from graphwidget.entry.gradcompare import split_words

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture()
def ns(user_ns: Callable[[str], dict]) -> dict:
    return user_ns("import torch, graphwidget as gw\n"
                   "inputs = gw.examples.homography_inputs(2, 8, 8)\n"
                   "x = torch.randn(5, 4, requires_grad=True)\n"
                   "w = torch.randn(4, requires_grad=True)\n"
                   "def loop(x, w):\n"
                   "    y = x[:, 0] * w[0]\n"
                   "    for i in range(1, x.shape[1]):\n"
                   "        y = y + x[:, i] * w[i]\n"
                   "    return y.sum()\n"
                   "def vec(x, w):\n"
                   "    return (x * w).sum()\n"
                   "def plus(x, w):\n"
                   "    return (x * w).sum() + 1\n"
                   "number = 3\n")


def run(ip: InteractiveShell, line: str) -> Any:
    return ip.run_line_magic("gradcompare", line)


def test_registered_with_load_ext(ip: InteractiveShell) -> None:
    assert "gradcompare" in ip.magics_manager.magics["line"]
    assert "gradgraph" in ip.magics_manager.magics["line"]


def test_compares_two_functions_on_positional_arguments(ip: InteractiveShell, ns: dict) -> None:
    d = run(ip, "loop vec x w")
    assert isinstance(d, gw.Diff)
    assert d.labels == ("loop", "vec") and d.equivalent is True
    assert {d.a.node(i)["tensor"]["name"] for i in d.a.nodes(op="AccumulateGrad")} == {"arg0", "arg1"}
    assert d.b.nodes(op="SelectBackward0") == [] and len(d.a.nodes(op="SelectBackward0")) == 8
    # the caller's tensors are untouched
    assert ns["x"].grad is None and ns["w"].grad is None


def test_keyword_and_unpacked_arguments_labels_profile_and_html(ip: InteractiveShell, ns: dict,
                                                               tmp_path: Path) -> None:
    page = tmp_path / "d.html"
    d = run(ip, "gw.examples.homography_repeat gw.examples.homography_broadcast **inputs "
                f"--labels repeat,broadcast --profile --repeat 3 --html {page}")
    assert d.labels == ("repeat", "broadcast") and d.equivalent is True
    assert d.timing["per_node"]["rounds"] == 3 and d.a.meta["timed"] and d.b.meta["timed"]
    assert 'data-kind="diff"' in page.read_text()
    d2 = run(ip, "loop plus w=w x=x")  # keywords in any order
    assert d2.equivalent is False  # "+ 1" changed the output
    d3 = run(ip, "loop vec *[x, w]")
    assert d3.matched == run(ip, "loop vec x w").matched


def test_the_result_is_the_cell_value(ip: InteractiveShell, ns: dict) -> None:
    res = ip.run_cell("d = %gradcompare loop vec x w\nd", store_history=False)
    assert res.error_in_exec is None and isinstance(res.result, gw.Diff)


@pytest.mark.parametrize("line, message", [
    ("", "needs two functions"),
    ("loop", "needs two functions"),
    ("loop nothere x w", "FN_B `nothere` is not defined"),
    ("loop number x w", "FN_B `number` is int, not a function"),
    ("loop vec x undefined_thing", "ARG `undefined_thing` is not defined"),
    ("loop vec x w[", "unclosed bracket"),
    ("loop vec x 1/0", "could not be evaluated (ZeroDivisionError"),
    ("loop vec x w --labels onlyone", "--labels 'onlyone': write two names"),
    ("loop vec x w --repeat many", "--repeat 'many': write a whole number"),
    ("loop vec x w --color red", "unknown option --color"),
    ("loop vec x w --labels", "--labels needs a value"),
    ("loop vec **x", "** needs a dict"),
    ("loop vec x.detach() w.detach()", "none of the tensor inputs requires grad"),
    ("loop vec x w --profile --repeat 0", "must be an integer >= 1"),
])
def test_usage_errors_say_what_to_write(ip: InteractiveShell, ns: dict, line: str, message: str) -> None:
    with pytest.raises(UsageError) as info:
        run(ip, line)
    assert message in str(info.value)
    assert "usage: %gradcompare" in str(info.value)


def test_a_raising_side_propagates_with_its_side(ip: InteractiveShell, ns: dict) -> None:
    ip.run_cell("def broken(x, w):\n    raise KeyError('oops')\n", store_history=False)
    from graphwidget.experiment.compare import CompareError
    with pytest.raises(CompareError, match=r"side B \('broken'\) raised KeyError"):
        run(ip, "loop broken x w")


def test_split_words_keeps_expressions_whole() -> None:
    assert split_words("f g torch.randn(2, 3) {'a': 1} 'x y' --labels a,b") == \
        ["f", "g", "torch.randn(2, 3)", "{'a': 1}", "'x y'", "--labels", "a,b"]


# -- the command line -------------------------------------------------------------------------------------------------
MODULE = textwrap.dedent("""
    import torch
    import graphwidget as gw

    def make_inputs():
        return gw.examples.homography_inputs(2, 8, 8)

    def shifted(img, homo, cx, cy, scale):          # a bug: not the same maths
        return gw.examples.homography_broadcast(img, homo + 0.01, cx, cy, scale)

    def as_tuple(img, homo, cx, cy, scale):
        return (gw.examples.homography_broadcast(img, homo, cx, cy, scale),)

    def explodes(img, homo, cx, cy, scale):
        raise RuntimeError("boom")
""")


def cli(tmp_path: Path, *args: str) -> subprocess.CompletedProcess:
    (tmp_path / "cmpmod.py").write_text(MODULE)
    return subprocess.run([sys.executable, "-m", "graphwidget", "compare", *args], cwd=tmp_path,
                          capture_output=True, text=True, timeout=600,
                          env={"PYTHONPATH": f"{tmp_path}:{ROOT}", "PATH": "/usr/bin:/bin"})


@pytest.fixture()
def cli_in_process(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                   capsys: pytest.CaptureFixture) -> Iterator[Callable[..., SimpleNamespace]]:
    """``python -m graphwidget compare ARGS`` as :func:`cli` runs it (cmpmod.py in the working folder, importable),
    but in this process: ``graphwidget.entry.cli.main(argv)``'s return value (or argparse's ``SystemExit`` code) is
    the exit status, capsys gives stdout and stderr. The cmpmod it imported is forgotten after."""
    from graphwidget.entry.cli import main
    (tmp_path / "cmpmod.py").write_text(MODULE)
    monkeypatch.chdir(tmp_path)
    monkeypatch.syspath_prepend(str(tmp_path))
    sys.modules.pop("cmpmod", None)  # this test's cmpmod.py, not another test's

    def run_main(*args: str) -> SimpleNamespace:
        capsys.readouterr()
        try:
            code = main(["compare", *args])
        except SystemExit as exc:  # argparse's usage errors
            code = exc.code
        out = capsys.readouterr()
        return SimpleNamespace(returncode=code, stdout=out.out, stderr=out.err)

    yield run_main
    sys.modules.pop("cmpmod", None)


def test_cli_equivalent_rewrite_exits_0_and_writes_the_view(tmp_path: Path) -> None:
    p = cli(tmp_path, "graphwidget.examples:homography_repeat", "graphwidget.examples:homography_broadcast",
            "--inputs", "cmpmod:make_inputs", "--out", "diff.html", "--labels", "repeat,broadcast")
    assert p.returncode == 0, p.stderr
    # torch < 2.5: repeat's twelve extra full slices (over the repeated pixel dim) are only in repeat too
    extra = 12 if FULL_SLICES else 0
    assert f"diff 'repeat' vs 'broadcast': {SEED_NODES[0] - 2 - extra} nodes matched" in p.stdout
    assert p.stdout.startswith("broadcast vs repeat: same maths (float32 rounding)")
    assert "same maths within float32 rounding (repeat vs broadcast" in p.stdout
    assert f"{2 + extra} only in repeat, 12 only in broadcast" in p.stdout
    html = (tmp_path / "diff.html").read_text()
    assert 'id="gw-graph-data" data-kind="diff" data-encoding="gzip+base64"' in html
    assert "default-src 'none'" in html


def test_cli_maths_change_exits_1_and_says_so(tmp_path: Path) -> None:
    p = cli(tmp_path, "graphwidget.examples:homography_repeat", "cmpmod:shifted", "--inputs", "cmpmod:make_inputs")
    assert p.returncode == 1, p.stdout + p.stderr
    first, second = p.stdout.splitlines()[:2]
    assert first.startswith("shifted vs homography_repeat: NOT EQUIVALENT, the maths changed (output differs in "
                            "float64 by")
    assert second.startswith("!! NOT EQUIVALENT")
    assert "FAIL (exit 1): shifted does not compute the same outputs and gradients" in p.stdout


@pytest.mark.slow  # two CLI subprocesses that time both backwards: ~5 s
@pytest.mark.timing
def test_cli_fail_if_slower_follows_the_interval(tmp_path: Path) -> None:
    p = cli(tmp_path, "graphwidget.examples:homography_repeat", "graphwidget.examples:homography_broadcast",
            "--inputs", "cmpmod:make_inputs", "--fail-if-slower", "1000", "--repeat", "3")
    # no rewrite is 1000x slower beyond noise: the gate passes, and the report carries the interval
    assert p.returncode == 0, p.stdout + p.stderr
    assert "interleaved rounds" in p.stdout
    assert "ok: homography_broadcast's whole step is not slower than 1000" in p.stdout
    q = cli(tmp_path, "graphwidget.examples:homography_repeat", "graphwidget.examples:homography_broadcast",
            "--inputs", "cmpmod:make_inputs", "--fail-if-slower", "0.001", "--repeat", "3")
    # nothing runs in a thousandth of the time: B is "slower than 0.001 x A" beyond noise, so the gate fails
    assert q.returncode == 3, q.stdout + q.stderr  # slower than the bound: its own exit status
    assert "FAIL (exit 3): homography_broadcast's whole step is slower than 0.001" in q.stdout


@pytest.mark.parametrize("args, code, message", [
    (("cmpmod:nope", "cmpmod:shifted", "--inputs", "cmpmod:make_inputs"), 2, "cmpmod has no 'nope'"),
    (("missingmod:f", "cmpmod:shifted", "--inputs", "cmpmod:make_inputs"), 2, "cannot import missingmod"),
    (("cmpmod", "cmpmod:shifted", "--inputs", "cmpmod:make_inputs"), 2, "write MODULE:NAME"),
    (("cmpmod:make_inputs", "cmpmod:shifted"), 2, "--inputs MODULE:MAKE_INPUTS is needed to run two functions"),
    (("cmpmod:shifted", "cmpmod:shifted", "--inputs", "cmpmod:make_inputs", "--labels", "x"), 2,
     "write two names separated by a comma"),
    (("cmpmod:shifted", "cmpmod:shifted", "--inputs", "cmpmod:make_inputs", "--fail-if-slower", "-1"), 2,
     "R is a ratio > 0"),
    (("cmpmod:shifted", "cmpmod:explodes", "--inputs", "cmpmod:make_inputs"), 4,
     "ERROR: graphwidget.compare: side B ('explodes') raised RuntimeError: boom"),
    (("cmpmod:shifted", "cmpmod:shifted", "--inputs", "cmpmod:make_inputs", "--out", "/proc/diff.html"), 2,
     "--out /proc/diff.html: cannot write in /proc"),
    (("cmpmod:shifted", "cmpmod:shifted", "--inputs", "cmpmod:make_inputs", "--out", "no/such/dir/d.html"), 2,
     "the folder no/such/dir does not exist"),
    (("cmpmod:shifted", "cmpmod:as_tuple", "--inputs", "cmpmod:make_inputs"), 1, "different structures"),
])
def test_cli_errors(cli_in_process: Callable[..., SimpleNamespace], args: tuple, code: int, message: str) -> None:
    p = cli_in_process(*args)
    assert p.returncode == code, p.stdout + p.stderr
    assert message in p.stderr
    assert p.stderr.count("Traceback") <= (1 if code == 4 else 0)
    if "--out" in args:  # refused before anything ran: no report printed
        assert p.stdout == ""

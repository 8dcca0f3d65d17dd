"""The public surface as a user and an IDE meet it: completion offers every public name, every result type
round-trips through ``to_json``/``gw.load_json`` and ``save``/``gw.load`` to the same type, and ``repr`` is cheap after
the first call."""
from __future__ import annotations

import warnings
from pathlib import Path
from typing import Any

import pytest
import torch

import graphwidget as gw
from graphwidget.analysis.ranks import RankSet


def test_dir_and_completion_offer_every_public_name_and_no_helpers() -> None:
    names = dir(gw)
    assert set(gw.__all__) <= set(names)
    # the module's own helpers and the stage packages it happens to have imported are not offered
    assert not {"Any", "annotations", "capturing", "analysis", "model", "views"} & set(names)
    from IPython.core.completer import provisionalcompleter
    from IPython.core.interactiveshell import InteractiveShell
    ip = InteractiveShell.instance()
    ip.run_cell("import graphwidget as gw")
    with provisionalcompleter():
        offered = {c.text for c in ip.Completer.completions("gw.comp", 7)}
    assert "compare" in offered  # a lazy name, never used before in this shell's module


def _stage_modules() -> "list[Any]":
    """Every module of the package but ``graphwidget`` itself and ``__main__`` (importing it runs the command line)."""
    import importlib
    import pkgutil
    return [importlib.import_module(m.name) for m in pkgutil.walk_packages(gw.__path__, "graphwidget.")
            if not m.name.endswith(".__main__")]


def test_no_stage_function_shares_a_public_name_unless_it_is_the_public_one() -> None:
    """One name, one behaviour: ``graphwidget.profiling.profile`` used to be the stage function behind ``gw.profile``
    (no ``ranks=``), ``analysis.diff.diff`` took two graphs only, ``experiment.compare.compare`` two functions only; a
    reader (or an import) finding the same name in a stage got a different function. Re-exports of the public object
    itself (``experiment.ranks.profile`` is ``gw.profile``) are fine."""
    import inspect
    public = {n: getattr(gw, n) for n in gw.__all__}
    twins = sorted(f"{mod.__name__}.{name} (from {value.__module__})"
                   for mod in _stage_modules() for name, value in vars(mod).items()
                   if name in public and (inspect.isfunction(value) or inspect.isclass(value))
                   and value is not public[name])
    assert not twins, twins


def _graph(scale: float = 2.0) -> gw.GradGraph:
    x = torch.randn(3, 4, requires_grad=True)
    return gw.capture((x.tanh() * scale).sum())


def _f(x: torch.Tensor) -> torch.Tensor:
    return (x.unsqueeze(1).repeat(1, 3, 1) * 2).sum()


def _g(x: torch.Tensor) -> torch.Tensor:
    return (x.unsqueeze(1) * 2).sum() * 3


def _results() -> Any:
    x = torch.randn(4, 5, requires_grad=True)
    g = _graph()
    d = gw.diff(_graph(), _graph(3.0))
    m = gw.compare({"a": _f, "b": _g, "c": _f}, x)
    rs = RankSet({0: _graph(), 1: _graph(), 2: _graph(3.0)})
    return [g, d, m, rs]


@pytest.mark.parametrize("suffix", [".json", ".json.gz"])
def test_every_result_type_round_trips_to_its_own_type(tmp_path: Path, suffix: str) -> None:
    for obj in _results():
        kind = type(obj)
        back = gw.load_json(obj.to_json())
        assert type(back) is kind, (kind, type(back))
        assert back.to_json() == obj.to_json()
        target = tmp_path / (kind.__name__ + ("" if kind is RankSet else suffix))
        obj.save(target)
        again = gw.load(target)
        assert type(again) is kind
        if kind is RankSet:
            assert again.ranks == obj.ranks and again.groups == obj.groups and again.divergent == obj.divergent
        else:
            assert again.to_json() == obj.to_json()


def test_a_multidiff_of_ranks_stays_a_multidiff() -> None:
    rs = RankSet({0: _graph(), 1: _graph(3.0)})
    d = rs.nway("all")
    assert type(gw.load_json(d.to_json())).__name__ == "MultiDiff"


def test_load_ranks_still_works_but_says_to_use_load(tmp_path: Path) -> None:
    RankSet({0: _graph(), 1: _graph()}).save(tmp_path)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        rs = gw.load_ranks(tmp_path)  # type: ignore[attr-defined]
    assert rs.ranks == [0, 1]
    assert any(issubclass(w.category, DeprecationWarning) and "gw.load" in str(w.message).replace("graphwidget.",
                                                                                                      "gw.")
               for w in caught)


def test_a_failed_save_leaves_no_file(tmp_path: Path) -> None:
    d = gw.diff(_graph(), _graph(3.0))
    with pytest.raises(OSError):
        d.save(tmp_path / "missing-folder" / "d.json")
    assert not (tmp_path / "missing-folder").exists()


def test_repr_is_computed_once_per_shape_of_the_graph() -> None:
    x = torch.randn(2, requires_grad=True)
    y = x
    for _ in range(2000):
        y = y * 1.5
    g = gw.capture(y.sum())
    passes = []
    summary = g.summary
    g.summary = lambda: passes.append(1) or summary()  # type: ignore[method-assign]
    first = repr(g)
    assert repr(g) == first and g.headline() in first and len(passes) == 1  # one pass over the nodes, not three
    g.nx.add_node(len(g), op="Extra")  # a changed shape is never shown stale
    assert f"{len(g)} nodes" in repr(g) and len(passes) == 2


USER_SCRIPT = '''
import torch
import graphwidget as gw

def f(x: torch.Tensor) -> torch.Tensor:
    return (x * 2).sum()

x = torch.randn(3, requires_grad=True)
g = gw.capture(f(x))
reveal_type(g)
reveal_type(gw.trace(f, x))
reveal_type(gw.profile(f, x, ranks="all"))
reveal_type(gw.compare(f, f, x, profile=True))
reveal_type(gw.compare({"a": f, "b": f}, x))
reveal_type(gw.compare([f, f], x, reference=0))
reveal_type(gw.compare("a.gwrec", "b.gwrec"))
reveal_type(gw.diff(g, g))
reveal_type(gw.diff({"a": g, "b": g}))
reveal_type(gw.record(f, x))
reveal_type(gw.load_json(g.to_json()))
reveal_type(gw.load("g.json"))
'''

EXPECTED = [  # what mypy reveals, line by line (the names as mypy prints them)
    "graphwidget.model.graph.GradGraph",
    "graphwidget.model.graph.GradGraph",
    "graphwidget.model.graph.GradGraph | graphwidget.analysis.ranks.RankSet",
    "graphwidget.analysis.diff.result.Diff",
    "graphwidget.analysis.diff.multi.MultiDiff",
    "graphwidget.analysis.diff.multi.MultiDiff",
    "graphwidget.analysis.diff.result.Diff",
    "graphwidget.analysis.diff.result.Diff",
    "graphwidget.analysis.diff.multi.MultiDiff",
    "graphwidget.experiment.recording.Recording",
    "graphwidget.model.graph.GradGraph | graphwidget.analysis.diff.result.Diff | "
    "graphwidget.analysis.diff.multi.MultiDiff | graphwidget.analysis.ranks.RankSet",
    "graphwidget.model.graph.GradGraph | graphwidget.analysis.diff.result.Diff | "
    "graphwidget.analysis.diff.multi.MultiDiff | graphwidget.analysis.ranks.RankSet | "
    "graphwidget.experiment.recording.Recording",
]


def test_mypy_reveals_the_result_types_of_a_users_script(tmp_path: Path) -> None:
    """The types an editor shows: two functions give a Diff, a dict or list of them a MultiDiff, the loaders the union
    of what they can return (no ``Any``); ``ranks=`` may give a RankSet."""
    api = pytest.importorskip("mypy.api")
    script = tmp_path / "user.py"
    script.write_text(USER_SCRIPT)
    out, err, _ = api.run([str(script), "--no-incremental", "--follow-imports=silent", "--show-error-codes",
                           "--no-error-summary", "--cache-dir", str(tmp_path / "cache")])
    revealed = [line.split('Revealed type is "', 1)[1].rstrip('"') for line in out.splitlines()
                if "Revealed type is" in line]
    def plain(r: str) -> str:  # older mypy prints Union[A, B] where newer prints A | B
        r = r.replace("builtins.", "")
        return " | ".join(r[len("Union["):-1].split(", ")) if r.startswith("Union[") else r

    assert [plain(r) for r in revealed] == EXPECTED, out + err

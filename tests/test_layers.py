"""The package's import rules: one direction of data, and torch-free stages that stay torch-free.

torch objects -> captured graph -> analyses -> views. Each stage folder may import only the stages listed for it in
:data:`ALLOWED` (and itself); ``entry`` (command line, magics, the demo) and the package's ``__init__`` (the one place
that wires stages together) sit on top and may import anything. The few convenience methods that let a graph or a
diff show itself (``g.widget()``, ``g.advise()``, ``d.figure()``) import upward lazily, inside the method: they are
listed one by one in :data:`FACADES`, and a lazy import anywhere else must follow the same rules as a top-level one.
"""
from __future__ import annotations

import ast
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from no_torch import BLOCK_TORCH

PKG = Path(__file__).resolve().parents[1] / "graphwidget"

#: stage -> the stages it may import (its own folder is always allowed).
ALLOWED = {
    "_util": set(),
    "_version": set(),
    "model": {"_util", "_version"},
    "analysis": {"model", "_util"},
    "views": {"analysis", "model", "_util", "_version"},
    "capturing": {"model", "_util", "_version"},
    "attribution": {"capturing", "model", "_util"},
    "profiling": {"attribution", "capturing", "model", "_util"},
    "experiment": {"profiling", "attribution", "capturing", "analysis", "model", "_util"},
    "examples": {"_util"},
    "__main__": {"entry"},
}
#: (module, imported stage): lazy imports inside the methods of the graph's and the diff's convenience API.
FACADES = {
    ("graphwidget/model/graph.py", "analysis"),   # g.summary(), g.advise(), g.timing_table()
    ("graphwidget/model/graph.py", "views"),      # g.widget(), g.figure(), g.export_html(), rich display,
    #                                               g.export_chrome_trace(), g.export_model_explorer()
    ("graphwidget/analysis/diff/result.py", "views"),  # d.widget(), d.figure(), d.export_html(), rich display,
    #                                                    d.export_chrome_trace()
    ("graphwidget/analysis/diff/multi.py", "views"),   # N-way: d.widget(), d.export_html(), rich display
}


def _stage(path: Path) -> str:
    rel = path.relative_to(PKG)
    return rel.parts[0] if len(rel.parts) > 1 else rel.stem


def _imports(path: Path):
    """(imported stage, line, lazy) for every import of a graphwidget module in ``path``."""
    tree = ast.parse(path.read_text())
    pkg = list(path.relative_to(PKG.parent).with_suffix("").parts[:-1])
    lazy_lines = {n.lineno for f in ast.walk(tree) if isinstance(f, (ast.FunctionDef, ast.AsyncFunctionDef))
                  for n in ast.walk(f) if isinstance(n, (ast.Import, ast.ImportFrom))}
    for node in ast.walk(tree):
        targets = []
        if isinstance(node, ast.ImportFrom):
            if node.level:
                base = pkg[: len(pkg) - node.level + 1]
                mod = base + (node.module.split(".") if node.module else [])
                targets = [mod + [a.name] if len(mod) == 1 else mod for a in node.names]
            elif node.module and node.module.split(".")[0] == "graphwidget":
                targets = [node.module.split(".") + [a.name] for a in node.names]
        elif isinstance(node, ast.Import):
            targets = [a.name.split(".") for a in node.names if a.name.split(".")[0] == "graphwidget"]
        for t in targets:
            if len(t) >= 2 and t[0] == "graphwidget":
                yield t[1], node.lineno, node.lineno in lazy_lines


def _violations():
    out = []
    for path in sorted(PKG.rglob("*.py")):
        stage = _stage(path)
        if stage in ("entry", "__init__"):
            continue
        allowed = ALLOWED[stage] | {stage}
        rel = str(path.relative_to(PKG.parent))
        for target, line, lazy in _imports(path):
            if target in allowed or (lazy and (rel, target) in FACADES):
                continue
            out.append(f"{rel}:{line}: {stage} imports {target}" + (" (inside a function)" if lazy else ""))
    return out


def test_every_stage_is_known():
    stages = {_stage(p) for p in PKG.rglob("*.py")}
    assert stages - {"entry", "__init__"} <= set(ALLOWED), stages - set(ALLOWED)


def test_no_stage_imports_upward():
    bad = _violations()
    assert not bad, "imports against the direction of data (tests/test_layers.py says which are allowed):\n" + \
        "\n".join(bad)


def test_the_rule_catches_an_upward_import(tmp_path, monkeypatch):
    """The check itself: a model module importing a view is reported (so the test above can fail)."""
    fake = tmp_path / "graphwidget"
    (fake / "model").mkdir(parents=True)
    (fake / "views").mkdir()
    (fake / "model" / "bad.py").write_text("from ..views import widget\n\ndef f():\n    from ..capturing import api\n")
    monkeypatch.setattr(sys.modules[__name__], "PKG", fake)
    assert _violations() == ["graphwidget/model/bad.py:1: model imports views",
                             "graphwidget/model/bad.py:4: model imports capturing (inside a function)"]


@pytest.mark.parametrize("stage", ["model", "analysis"])
def test_torch_free_stages_import_every_module_without_torch(stage):
    """Saved graphs are read, summarised, diffed and advised without torch: every module of ``model/`` and
    ``analysis/`` (every advisor rule included) imports with torch blocked."""
    modules = sorted(".".join(p.relative_to(PKG.parent).with_suffix("").parts).replace(".__init__", "")
                     for p in (PKG / stage).rglob("*.py"))
    code = BLOCK_TORCH + textwrap.dedent(f"""
        import importlib
        for m in {modules!r}:
            importlib.import_module(m)
        assert "torch" not in sys.modules
        print(len({modules!r}))
    """)
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120,
                          cwd=PKG.parent)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert int(proc.stdout.strip()) == len(modules) > 3


def _module_graph(root: Path):
    """Imports between graphwidget's modules (``a.b`` -> ``a.c``), at module level and inside functions, except the
    upward imports of the :data:`FACADES` methods and type-checking-only imports."""
    import networkx as nx
    g = nx.DiGraph()
    mods = {".".join(p.relative_to(root.parent).with_suffix("").parts).replace(".__init__", ""): p
            for p in root.rglob("*.py")}
    for name, path in mods.items():
        g.add_node(name)
        tree = ast.parse(path.read_text())
        is_pkg = path.name == "__init__.py"
        pkg = name.split(".") if is_pkg else name.split(".")[:-1]
        typing_only = {n for t in tree.body if isinstance(t, ast.If) and "TYPE_CHECKING" in ast.dump(t.test)
                       for n in ast.walk(t)}
        rel = str(path.relative_to(root.parent))
        for node in ast.walk(tree):
            if not isinstance(node, ast.ImportFrom) or node in typing_only:
                continue
            if node.level:
                base = pkg[: len(pkg) - node.level + 1]
                mod = ".".join(base + (node.module.split(".") if node.module else []))
            elif node.module and node.module.startswith("graphwidget"):
                mod = node.module
            else:
                continue
            for a in node.names:
                target = f"{mod}.{a.name}" if f"{mod}.{a.name}" in mods else mod
                facade = (rel, target.split(".")[1]) in FACADES if "." in target else False
                if target in mods and target != name and not facade:
                    g.add_edge(name, target)
    return g


def test_no_import_cycles():
    """No module imports a module that imports it back, through any chain, even lazily inside a function (a loader
    that calls back into its caller): each module can be read, loaded and tested on its own."""
    import networkx as nx
    g = _module_graph(PKG)
    # a package's __init__ re-exporting its own modules is how packages work, not a cycle between modules
    g.remove_edges_from([(u, v) for u, v in list(g.edges) if v.startswith(u + ".") or u.startswith(v + ".")])
    cycles = list(nx.simple_cycles(g))
    assert not cycles, cycles[:5]

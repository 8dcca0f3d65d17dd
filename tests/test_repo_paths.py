"""Every repository path named in code comments, docstrings, messages and docs exists.

Files move; the words that name them rot silently (a comment saying "see graphwidget/capture.py" after the file became
a package). This test reads every text file the repository tracks and checks two kinds of names:

- a path under one of the repository's own top-level folders (``graphwidget/capturing/api.py``, ``tests/bench/``,
  ``js/src/model/colour.ts``), taken relative to the repository, the naming file's folder, ``graphwidget/`` or
  ``js/src/``: it must exist;
- a bare source-file name (``records.py``, ``pane.ts``, ``capture.cpp``) in the package, the front end's sources,
  the docs and the CI scripts: some tracked file must have that name, unless it names another project's file
  (:data:`EXTERNAL`) or is the stock example of a user's file (:data:`EXAMPLES`). Test files and fixtures are not
  checked for bare names: they invent sources such as ``train.py`` on purpose.
"""
from __future__ import annotations

import re
import subprocess
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TOP = ("graphwidget", "js", "tests", "docs", "notebooks", ".ci")
TEXT = (".py", ".ts", ".mjs", ".cpp", ".h", ".md", ".css", ".toml", ".cfg", ".ipynb", "Makefile", ".ci/run",
        ".ci/matrix")
#: Files of other projects that comments name on purpose (torch's sources, a library's entry point).
EXTERNAL = {
    "engine.cpp", "function.h", "python_cpp_function.cpp", "python_function.cpp", "saved_variable.cpp",
    "saved_variable.h", "input_metadata.h", "variable.h", "custom_function.h", "python_engine.cpp",
    "graph.py", "checkpoint.py", "functions.cpp", "python_hook.cpp", "accumulate_grad.h", "dagre.js",
    "elk-worker.min.js", "widget.py", "_file_contents.py", "_cellmagic.py", "_base.py", "_map.py", "_viz.py",
    "_cli.py", "_compat.py", "worker.ts", "worker_events.ts", "dot.py", "setup.py", "conftest.py",
    "__init__.py", "__main__.py", "cpp_extension.py", "profiler.py", "anomaly_mode.py", "module.py",
    "hooks.py", "_ops.py", "utils.py", "sdpa.py", "modeling_gpt2.py", "_dynamo.py", "eval_frame.py",
    "overrides.py", "_jit_internal.py", "_contextlib.py",
}
#: How docs and docstrings write "a user's file".
EXAMPLES = {"model.py", "file.py", "train.py"}
#: Paths that tests name on purpose although they do not exist: this file's example of a stale name, and the module
#: tests/test_layers.py writes into a temporary folder to show that an upward import is caught.
INVENTED = {"graphwidget/capture.py", "graphwidget/model/bad.py"}
FULL = re.compile(r"(?<![\w./-])((?:%s)/[\w./-]*[\w/])" % "|".join(re.escape(t) for t in TOP))
BARE = re.compile(r"(?<![\w./-])([A-Za-z_][\w-]*\.(?:py|ts|cpp|ipynb|mjs))\b(?![\w(/-])")
BARE_CHECKED = ("graphwidget/", "js/src/", "docs/", ".ci/", "README.md", "CONTRIBUTING.md", "Makefile")


def _tracked() -> list:
    out = subprocess.run(["git", "ls-files"], cwd=ROOT, capture_output=True, text=True, check=True).stdout
    return [p for p in out.splitlines() if (ROOT / p).is_file()]


FILES = _tracked()
NAMES = {Path(p).name for p in FILES}


def _texts():
    for p in FILES:
        if p.endswith(TEXT) and "node_modules" not in p and not p.endswith("package-lock.json"):
            yield p


def _exists(ref: str, naming: str) -> bool:
    ref = ref.rstrip("./")
    for base in (ROOT, (ROOT / naming).parent, ROOT / "graphwidget", ROOT / "js" / "src"):
        target = base / ref
        if target.exists() or any(Path(f).match(ref + "*") for f in FILES if f.startswith(ref)):
            return True
        # a module named without its suffix (graphwidget/capturing/api) or a glob-like mention
        if target.with_suffix(".py").exists() or target.with_suffix(".ts").exists():
            return True
    # built or generated places that git does not track but the build makes
    return ref.startswith(("graphwidget/static", "js/node_modules", "tests/artifacts", "js/dist"))


def _stale() -> list:
    problems = []
    for p in _texts():
        text = (ROOT / p).read_text(encoding="utf-8", errors="replace")
        for no, line in enumerate(text.splitlines(), 1):
            if "://" in line and not FULL.search(line.split("://")[0]):
                line = re.sub(r"\S+://\S+", "", line)  # URLs name other sites' paths
            for m in FULL.finditer(line):
                if m.group(1) not in INVENTED and not _exists(m.group(1), p):
                    problems.append(f"{p}:{no}: {m.group(1)}")
            for m in BARE.finditer(line) if p.startswith(BARE_CHECKED) else ():
                name = m.group(1)
                if name not in NAMES and name not in EXTERNAL | EXAMPLES:
                    problems.append(f"{p}:{no}: {name}")
    return problems


def test_every_repository_path_named_in_the_repository_exists():
    problems = _stale()
    assert not problems, "names of files that do not exist:\n" + "\n".join(problems)


def test_nothing_names_folders_beside_the_checkout():
    """Material kept beside the repository on a developer's machine is not part of it: no file names a folder that
    sits next to the checkout (``../<folder>`` leading out of the repository from where the file is) or a file inside
    one (``<folder>/<entry>`` on its own, not inside a longer path), which a reader of the project cannot open.

    The folders are found on disk, so what sits beside a checkout varies (a clone in /tmp has every temporary folder
    as a neighbour): a relative path that stays inside the repository (``../nway`` from js/src/entries) and a longer
    path that merely ends in a neighbour's name (``/tmp/gw-shots/x.png``, written by a test) are not hits — unless it
    is the neighbour's own absolute path and the checkout is not in the temporary folder."""
    root = ROOT.resolve()
    # an absolute path to a neighbour's entry counts, except beside a clone in the temporary folder: every absolute
    # /tmp/... path a test writes to would be one there
    absolute = "" if root.parent == Path(tempfile.gettempdir()).resolve() else re.escape(f"{root.parent}/") + "|"
    neighbours = {}
    for d in sorted(root.parent.iterdir()):
        if d.is_dir() and d != root:
            try:
                neighbours[d.name] = [e.name for e in d.iterdir()]
            except OSError:
                neighbours[d.name] = []
    texts = {p: (ROOT / p).read_text(encoding="utf-8", errors="replace") for p in _texts()}
    hits = []
    for p, text in texts.items():
        here = (root / p).parent
        for name, entries in neighbours.items():
            if name not in text:
                continue
            for m in re.finditer(r"((?:\.\./)+)" + re.escape(name) + r"(?![\w.-])", text):
                if not (here / m.group(1) / name).resolve().is_relative_to(root):
                    hits.append((p, m.group(0)))
            for e in entries:
                if re.search(f"(?:{absolute}" + r"(?<![\w./-]))" + re.escape(f"{name}/{e}"), text):
                    hits.append((p, f"{name}/{e}"))
    assert not hits, f"material outside the repository named in {hits}"

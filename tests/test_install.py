"""Installing graphwidget as a user does: from a wheel and from an sdist, in a fresh venv outside the repository,
with no Node.js on PATH; and uninstalling it leaves nothing importable.

The slow test builds both with ``python -m build`` (the sdist first, then the wheel from the sdist, as a release
does) from a copy of this checkout, installs each into one fresh venv (torch pinned to the version running these
tests, so pip takes it from the local wheel cache instead of a multi-GB download) and runs the demo. The fast tests
drive the build hook (hatch_build.py) directly.
"""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tarfile
import zipfile
from pathlib import Path
from typing import Dict, List

import pytest
import torch

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
import hatch_build  # noqa: E402  (the build hook, importable only from the checkout)

sys.path.remove(str(REPO))
NODE_TOOLS = ("node", "npm", "npx", "corepack", "nodejs")


def path_without_node(tmp: Path) -> str:
    """PATH with every folder holding node/npm replaced by a folder of links to its other programs."""
    out: List[str] = []
    for i, d in enumerate(os.environ.get("PATH", "").split(os.pathsep)):
        p = Path(d)
        if not p.is_dir():
            continue
        if not any((p / t).exists() for t in NODE_TOOLS):
            out.append(d)
            continue
        shadow = tmp / f"path{i}"
        shadow.mkdir(parents=True, exist_ok=True)
        for f in p.iterdir():
            if f.name not in NODE_TOOLS and not (shadow / f.name).exists():
                (shadow / f.name).symlink_to(f)
        out.append(str(shadow))
    return os.pathsep.join(out)


# -- the build hook ----------------------------------------------------------------------------------------------

def _tree(tmp: Path, bundle: bool) -> Path:
    root = tmp / "src"
    (root / "js" / "src").mkdir(parents=True)
    (root / "js" / "src" / "a.ts").write_text("export const a = 1;\n")
    if bundle:
        (root / "graphwidget" / "static").mkdir(parents=True)
        for b in hatch_build.BUNDLE:
            (root / b).write_text("// built\n")
    return root


def test_bundle_state(tmp_path):
    assert hatch_build.bundle_state(_tree(tmp_path / "a", bundle=False)) == "missing"
    root = _tree(tmp_path / "b", bundle=True)
    assert hatch_build.bundle_state(root) == "ok"
    src = root / "js" / "src" / "a.ts"
    later = (root / hatch_build.BUNDLE[0]).stat().st_mtime + 10
    os.utime(src, (later, later))
    assert hatch_build.bundle_state(root) == "stale"


def test_no_node_and_no_bundle_says_what_to_install(tmp_path, monkeypatch):
    root = _tree(tmp_path, bundle=False)
    monkeypatch.setenv("PATH", path_without_node(tmp_path / "bin"))
    with pytest.raises(RuntimeError) as err:
        hatch_build.build_bundle(root)
    msg = str(err.value)
    assert "Node.js 18+" in msg and "install a wheel" in msg and "node and npm is not on PATH" in msg


# -- the real thing ----------------------------------------------------------------------------------------------

def _run(cmd: List[str], env: Dict[str, str], cwd: Path, timeout: int = 900) -> subprocess.CompletedProcess:
    r = subprocess.run(cmd, env=env, cwd=str(cwd), capture_output=True, text=True, timeout=timeout)
    assert r.returncode == 0, f"{' '.join(cmd)} failed ({r.returncode}):\n{r.stdout[-3000:]}\n{r.stderr[-3000:]}"
    return r


def _checkout_copy(dest: Path) -> Path:
    """The files a clean clone has (tracked and new, not ignored), as they are in this working tree."""
    files = subprocess.run(["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"], cwd=REPO,
                           capture_output=True, check=True).stdout.decode().split("\0")
    for f in filter(None, files):
        src = REPO / f
        if src.is_file():
            (dest / f).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, dest / f)
    return dest


USE = """
import sys, torch, graphwidget as gw
assert "site-packages" in gw.__file__, gw.__file__
x = torch.randn(4, 3, requires_grad=True)
g = gw.capture((x.exp() * 2).sum())
assert g.summary()["nodes"] == 4, g.summary()
gw.export_html(g, sys.argv[1])
text = open(sys.argv[1], encoding="utf-8").read()
assert "graphwidgetViewer" in text and len(text) > 50_000
from graphwidget.capturing import native
assert "site-packages" not in str(native.library_path())
print("ok", gw.__version__)
"""


@pytest.mark.slow
def test_wheel_and_sdist_install_without_node_and_uninstall_cleanly(tmp_path):
    if shutil.which("npm") is None:
        pytest.skip("building the sdist from a checkout needs npm (installing it does not)")
    src = _checkout_copy(tmp_path / "checkout")
    # The release build: the hook makes the bundle with esbuild only (npm install --omit=dev).
    shutil.rmtree(src / "graphwidget" / "static", ignore_errors=True)
    _run([sys.executable, "-m", "build", "--outdir", str(tmp_path / "dist")], dict(os.environ), src)
    assert (src / "js" / "node_modules" / "esbuild").is_dir()
    for dev_only in ("vitest", "typescript"):
        assert not (src / "js" / "node_modules" / dev_only).exists(), f"{dev_only} installed for a build"
    (sdist,) = (tmp_path / "dist").glob("graphwidget-*.tar.gz")
    (wheel,) = (tmp_path / "dist").glob("graphwidget-*.whl")
    with tarfile.open(sdist) as t:
        names = t.getnames()
    assert any(n.endswith("graphwidget/static/widget.js") for n in names), "the sdist ships the bundle"
    assert not any("node_modules" in n for n in names)
    with zipfile.ZipFile(wheel) as z:
        wnames = z.namelist()
    assert "graphwidget/static/viewer.js" in wnames and not any("_native/build" in n for n in wnames)

    # A fresh venv outside the repository, no Node.js anywhere on PATH.
    venv = tmp_path / "venv"
    _run([sys.executable, "-m", "venv", str(venv)], dict(os.environ), tmp_path)
    py = str(venv / "bin" / "python")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTHON", "VIRTUAL_ENV", "GRAPHWIDGET"))}
    env["PATH"] = f"{venv / 'bin'}{os.pathsep}{path_without_node(tmp_path / 'bin')}"
    env["XDG_CACHE_HOME"] = str(tmp_path / "cache")
    torch_pin = f"torch=={torch.__version__}"
    _run([py, "-m", "pip", "install", "-q", torch_pin], env, tmp_path)
    work = tmp_path / "work"
    work.mkdir()

    for artifact in (wheel, sdist):
        _run([py, "-m", "pip", "install", "-q", str(artifact), torch_pin], env, work)
        r = _run([py, "-c", USE, str(work / "g.html")], env, work)
        assert r.stdout.startswith("ok"), r.stdout
        _run([py, "-m", "graphwidget", "demo", "--no-profile", "--out", str(work / "demo")], env, work)
        assert sorted(p.suffix for p in (work / "demo").iterdir()) and any(
            p.suffix == ".html" for p in (work / "demo").iterdir())
        r = _run([py, "-m", "graphwidget", "doctor"], env, work)
        assert "engine:       python" in r.stdout and "bundle:" in r.stdout, r.stdout
        _run([py, "-m", "pip", "uninstall", "-y", "-q", "graphwidget"], env, work)
        gone = subprocess.run([py, "-c", "import graphwidget"], env=env, cwd=str(work), capture_output=True,
                              text=True)
        assert gone.returncode != 0 and "No module named 'graphwidget'" in gone.stderr, gone.stderr
        shutil.rmtree(work / "demo")


# -- runtime dependencies ----------------------------------------------------------------------------------------

BLOCK_NUMPY = """\
import sys
class NoNumpy:
    def find_spec(self, name, path=None, target=None):
        if name == "numpy" or name.startswith("numpy."):
            raise ModuleNotFoundError("No module named " + repr(name), name=name)
sys.meta_path.insert(0, NoNumpy())
"""


def _declared_dependencies() -> List[str]:
    """The distribution names in pyproject.toml's [project].dependencies (what a fresh ``pip install`` gets)."""
    try:
        import tomllib  # type: ignore[import-not-found]
    except ModuleNotFoundError:  # Python < 3.11
        import tomli as tomllib  # type: ignore[no-redef]
    import re

    deps = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["dependencies"]
    return [re.split(r"[<>=!~;\[ ]", d, maxsplit=1)[0].lower() for d in deps]


def test_numpy_is_a_runtime_dependency_because_torch_warns_without_it():
    """Without numpy, ``import torch`` prints "Failed to initialize NumPy": a fresh install's first output would be
    that warning, so numpy must be installed with graphwidget."""
    r = subprocess.run([sys.executable, "-c", BLOCK_NUMPY + "import torch\n"], capture_output=True, text=True,
                       timeout=300)
    assert r.returncode == 0, r.stderr
    assert "numpy" in r.stderr.lower(), "torch no longer warns without numpy: " + r.stderr
    assert "numpy" in _declared_dependencies()
    r = subprocess.run([sys.executable, "-W", "error", "-c", "import torch, numpy"], capture_output=True, text=True,
                       timeout=300)
    assert r.returncode == 0 and "Failed to initialize NumPy" not in r.stderr, r.stderr

"""Hatch build hook: the front-end bundle (``graphwidget/static/widget.js`` and ``viewer.js``).

The bundle is built from ``js/`` with esbuild and shipped in both the wheel and the sdist, so ``pip install`` of
either needs no Node.js. The hook builds it only when it is missing or older than the TypeScript sources, and then
with the minimum: ``npm install --omit=dev`` (esbuild, dagre and svgcanvas, the only ``dependencies`` in
js/package.json; not vitest/typescript) and ``node build.mjs``. A checkout whose ``js/node_modules`` already has
esbuild (a contributor's ``make``) is built as it is, so its dev tools stay installed. Without Node.js and without a
bundle the build stops with one message saying what to install instead of a traceback from npm.
"""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any, Dict, List

from hatchling.builders.hooks.plugin.interface import BuildHookInterface

BUNDLE = ("graphwidget/static/widget.js", "graphwidget/static/viewer.js")
#: What a source build needs when the bundle has to be made (js/build.mjs).
NODE_HINT = ("install Node.js 18+ with npm (https://nodejs.org; Debian/Ubuntu: `apt-get install nodejs npm`), or "
             "install a wheel built elsewhere instead (`python -m build` in a clone with Node.js writes one to dist/; "
             "graphwidget is not on the package index yet): wheels and sdists built that way ship the bundle and "
             "need no Node.js")


def _newest(paths: List[Path]) -> float:
    return max((p.stat().st_mtime for p in paths), default=0.0)


def _sources(js: Path) -> List[Path]:
    src = [p for p in (js / "src").rglob("*") if p.is_file()] if (js / "src").is_dir() else []
    return src + [p for p in (js / "build.mjs", js / "package.json") if p.is_file()]


def bundle_state(root: Path) -> str:
    """``"ok"``, ``"missing"`` or ``"stale"`` (a TypeScript source is newer than the bundle)."""
    bundle = [root / b for b in BUNDLE]
    if not all(p.is_file() for p in bundle):
        return "missing"
    oldest = min(p.stat().st_mtime for p in bundle)
    return "stale" if _newest(_sources(root / "js")) > oldest else "ok"


def build_bundle(root: Path, log: Any = print) -> None:
    """Build the bundle with esbuild; raise ``RuntimeError`` naming what to install when Node.js is missing."""
    js = root / "js"
    npm, node = shutil.which("npm"), shutil.which("node")
    if not (npm and node):
        missing = " and ".join(n for n, p in (("node", node), ("npm", npm)) if not p)
        raise RuntimeError(f"graphwidget: this source tree has no built front end ({', '.join(BUNDLE)}) and "
                           f"building it needs Node.js, but {missing} is not on PATH: {NODE_HINT}.")
    if not (js / "node_modules" / "esbuild").is_dir():
        log("graphwidget: npm install --omit=dev (esbuild, dagre and svgcanvas only) in js/")
        _run([npm, "install", "--omit=dev", "--no-audit", "--no-fund"], js)
    log("graphwidget: building the front-end bundle (node js/build.mjs)")
    _run([node, "build.mjs"], js)


def _run(cmd: List[str], cwd: Path) -> None:
    proc = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True)
    if proc.returncode != 0:
        out = (proc.stdout + proc.stderr).strip().splitlines()
        raise RuntimeError(f"graphwidget: `{' '.join(cmd)}` failed in {cwd} (exit {proc.returncode}):\n"
                           + "\n".join(out[:30]) + f"\nTo skip this step, {NODE_HINT}.")


class BundleHook(BuildHookInterface):  # type: ignore[misc]
    """Make sure the bundle exists (building it when needed) before hatch collects the files."""

    PLUGIN_NAME = "custom"

    def initialize(self, version: str, build_data: Dict[str, Any]) -> None:
        root = Path(self.root)
        state = bundle_state(root)
        if state == "stale" and not (shutil.which("npm") and shutil.which("node")):
            sys.stderr.write("graphwidget: js/ sources are newer than graphwidget/static/*.js but Node.js is not "
                             "installed: packaging the existing bundle.\n")
            state = "ok"
        if state != "ok" and not os.environ.get("GRAPHWIDGET_SKIP_JS"):
            build_bundle(root, log=lambda m: sys.stderr.write(m + "\n"))
        missing = [b for b in BUNDLE if not (root / b).is_file()]
        if missing:
            raise RuntimeError(f"graphwidget: the front-end bundle is missing ({', '.join(missing)}): {NODE_HINT}.")

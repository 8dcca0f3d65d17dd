"""Where the built front end lives (``graphwidget/static``, built from ``js/``) and how to read it.

The bundles are built by ``make setup`` / ``pip install`` (the build hook ``hatch_build.py`` runs esbuild) and shipped
in the wheel and the sdist; a checkout that has not been built gets :class:`BundleMissingError` saying what to run.
"""
from __future__ import annotations

import functools
from pathlib import Path
from typing import Tuple

STATIC = Path(__file__).resolve().parent.parent / "static"
WIDGET_JS = "widget.js"
VIEWER_JS = "viewer.js"


class BundleMissingError(RuntimeError):
    """The JavaScript bundle has not been built."""


def bundle_path(name: str) -> Path:
    """Path of a built bundle file, or a clear error saying how to build it."""
    path = STATIC / name
    if not path.is_file():
        raise BundleMissingError(
            f"graphwidget's front end is not built: {path} is missing. In a source checkout run `make setup` (or "
            f"`cd js && npm install && npm run build`); a wheel or sdist from PyPI ships it built.")
    return path


@functools.lru_cache(maxsize=4)
def _read(path: Path, stamp: Tuple[float, int]) -> str:
    return path.read_text(encoding="utf-8")


def read_bundle(name: str) -> str:
    """The text of a built bundle (cached until the file changes)."""
    path = bundle_path(name)
    st = path.stat()
    return _read(path, (st.st_mtime, st.st_size))

"""Where builds of the compiled core live, and what names them.

Never inside the package (``pip uninstall`` must leave nothing importable behind), and one folder per environment, so
building for one venv never touches another's build::

    <root>/<python tag>-<hash of sys.prefix>/gw_native_<key>.so

``<key>`` hashes the C++ sources, graphwidget's version, torch's version and git revision, the Python ABI and the
machine, so after any upgrade the old build is simply not found (and capture uses Python) until the next build.
Roots searched, in order: ``$GRAPHWIDGET_NATIVE_DIR`` (e.g. a read-only folder an admin filled), the per-user
cache (``<cache>/graphwidget/native``, where ``<cache>`` is ``$XDG_CACHE_HOME`` or ``~/.cache``), and
``<sys.prefix>/share/graphwidget/native``
(``build-native --system``: an admin's build for everyone using that Python). Builds go to the first of these
unless ``--system`` is given.
"""
from __future__ import annotations

import functools
import hashlib
import os
import platform
import shutil
import sys
import sysconfig
from pathlib import Path
from typing import Any, Dict, List, Optional

#: The C++ sources, compiled into one extension module (module.cpp defines it).
CPP_DIR = Path(__file__).with_name("cpp")
SOURCES = [CPP_DIR / n for n in ("module.cpp", "capture.cpp", "hooks.cpp", "untrack.cpp")]
HEADERS = [CPP_DIR / "common.h"]

#: ``GRAPHWIDGET_NATIVE=0`` ignores a built core (capture, profile and JSON then use pure Python).
ENV_DISABLE = "GRAPHWIDGET_NATIVE"


def disabled_by_env() -> bool:
    return os.environ.get(ENV_DISABLE, "1") == "0"


def env_tag() -> str:
    """This environment's folder name: Python's tag and a hash of ``sys.prefix`` (``cpython-311-3fa2c9d01b``)."""
    prefix = os.path.realpath(sys.prefix)
    return f"{sys.implementation.cache_tag}-{hashlib.sha256(prefix.encode()).hexdigest()[:10]}"


@functools.lru_cache(maxsize=None)
def _key() -> str:
    """Hash of what the library depends on; computed once (the engine asks on every capture)."""
    import torch

    from ..._version import __version__
    h = hashlib.sha256()
    for p in SOURCES + HEADERS:
        h.update(p.read_bytes())
    git = getattr(getattr(torch, "version", None), "git_version", "")
    h.update(f"|{__version__}|{torch.__version__}|{git}|{sys.implementation.cache_tag}|"
             f"{sysconfig.get_config_var('SOABI')}|{platform.machine()}".encode())
    return h.hexdigest()[:12]


def module_name() -> str:
    """Name of the extension for these sources, torch and Python (``gw_native_<key>``)."""
    return f"gw_native_{_key()}"


def user_root() -> Path:
    """The per-user cache: ``$XDG_CACHE_HOME/graphwidget/native`` (default ``~/.cache/graphwidget/native``)."""
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "graphwidget" / "native"


def system_root() -> Path:
    """Builds for everyone using this Python: ``<sys.prefix>/share/graphwidget/native`` (``build-native --system``)."""
    return Path(sys.prefix) / "share" / "graphwidget" / "native"


def search_roots() -> List[Path]:
    """Where the engine looks, in order: ``$GRAPHWIDGET_NATIVE_DIR``, the user cache, the system folder."""
    roots = []
    env = os.environ.get("GRAPHWIDGET_NATIVE_DIR")
    if env:
        roots.append(Path(env))
    roots += [user_root(), system_root()]
    return roots


def build_root(system: bool = False) -> Path:
    """Where a build writes: ``$GRAPHWIDGET_NATIVE_DIR`` if set, else the user cache (``system=True``: the
    system folder)."""
    if system:
        return system_root()
    env = os.environ.get("GRAPHWIDGET_NATIVE_DIR")
    return Path(env) if env else user_root()


def library_in(root: Path) -> Path:
    return root / env_tag() / f"{module_name()}.so"


def find_library() -> Optional[Path]:
    """The built library for this environment, from the first root that has it; ``None`` when not built."""
    for root in search_roots():
        p = library_in(root)
        if p.is_file():
            return p
    return None


def library_path() -> Path:
    """The library the engine uses: the one found, else where a build will write it."""
    return find_library() or library_in(build_root())


def prune(env_dir: Path, keep: Path) -> None:
    """Drop this environment's builds for older sources or torch versions (never another environment's folder)."""
    for p in env_dir.glob("gw_native_*"):
        if p != keep and p.name != keep.name.replace(".so", ".build.log"):
            try:
                p.unlink()
            except OSError:
                pass


def clean(system: bool = False) -> List[Path]:
    """Remove this environment's builds from the writable roots (run it before ``pip uninstall graphwidget`` to
    leave nothing behind); returns what was removed."""
    removed = []
    roots = [build_root(system)] if system else [r for r in search_roots() if r != system_root()]
    for root in roots:
        d = root / env_tag()
        if d.is_dir():
            shutil.rmtree(d)
            removed.append(d)
    return removed


def locations() -> Dict[str, Any]:
    """For ``doctor``: this environment's tag, each root searched and whether it holds this environment's build."""
    out: Dict[str, Any] = {"env_tag": env_tag(), "roots": []}
    for root in search_roots():
        try:
            lib = library_in(root)
            out["roots"].append({"root": str(root), "library": str(lib), "exists": lib.is_file()})
        except Exception as exc:  # noqa: BLE001 - no torch: the name cannot be computed
            out["roots"].append({"root": str(root), "library": None, "exists": False, "error": str(exc)})
    return out

"""Build and load graphwidget's compiled core (``graphwidget/_native/``: capture and timing hooks).

The core makes :func:`graphwidget.capture` 2.5-3.5x faster on big graphs (see the README's measured figures) and
produces exactly the same graph as the pure-Python path, which stays as the fallback. It is a torch C++ extension,
so it must be compiled against the torch you run; it is built once, on request, never silently during a capture
(a build takes about a minute)::

    python -m graphwidget build-native      # or: graphwidget.native.build()

``make setup`` does this for you. The build goes to ``graphwidget/_native/build/`` when the package folder is
writable (an editable install, a venv), else to ``~/.cache/graphwidget/native``; ``GRAPHWIDGET_NATIVE_DIR``
overrides both. Its name carries a hash of the source, torch's version and the Python ABI, so an upgrade of any of
them makes :func:`available` false until the next build instead of loading a stale binary. Set
``GRAPHWIDGET_NATIVE=0`` to ignore a built core.
"""
from __future__ import annotations

import functools
import hashlib
import importlib.machinery
import importlib.util
import os
import platform
import sys
from pathlib import Path
from types import ModuleType
from typing import Any, Dict, Optional

NATIVE_DIR = Path(__file__).with_name("_native")
#: The sources, compiled into one extension module (module.cpp defines it).
SOURCES = [NATIVE_DIR / n for n in ("module.cpp", "capture.cpp", "hooks.cpp", "json.cpp")]
HEADERS = [NATIVE_DIR / "common.h"]

_module: Optional[ModuleType] = None
_load_error: Optional[str] = None


@functools.lru_cache(maxsize=None)
def _key() -> str:
    """Hash of the sources, torch's version and the Python ABI; computed once (load() runs on every capture)."""
    import torch
    h = hashlib.sha256()
    for p in SOURCES + HEADERS:
        h.update(p.read_bytes())
    h.update(f"|{torch.__version__}|{sys.implementation.cache_tag}|{platform.machine()}".encode())
    return h.hexdigest()[:12]


def module_name() -> str:
    """Name of the extension for this source, torch and Python (``gw_native_<hash>``)."""
    return f"gw_native_{_key()}"


def build_root() -> Path:
    """Where builds go: ``$GRAPHWIDGET_NATIVE_DIR``, else the package's ``_native/build`` if writable, else
    ``~/.cache/graphwidget/native``."""
    env = os.environ.get("GRAPHWIDGET_NATIVE_DIR")
    if env:
        return Path(env)
    local = NATIVE_DIR / "build"
    if os.access(NATIVE_DIR, os.W_OK):
        return local
    return Path.home() / ".cache" / "graphwidget" / "native"


def library_path() -> Path:
    """The shared library :func:`build` writes (it may not exist yet)."""
    name = module_name()
    return build_root() / name / f"{name}.so"


def _import(path: Path, name: str) -> ModuleType:
    loader = importlib.machinery.ExtensionFileLoader(name, str(path))
    spec = importlib.util.spec_from_file_location(name, str(path), loader=loader)
    assert spec is not None
    module = importlib.util.module_from_spec(spec)
    loader.exec_module(module)
    return module


def load() -> Optional[ModuleType]:
    """The compiled core if it has been built for this torch and Python (and ``GRAPHWIDGET_NATIVE`` is not 0),
    else ``None``. Never compiles."""
    global _module, _load_error
    if os.environ.get("GRAPHWIDGET_NATIVE", "1") == "0":
        return None
    if _module is not None:
        return _module
    try:
        path = library_path()
    except Exception as exc:  # noqa: BLE001 - no torch, unreadable source: just no native core
        _load_error = f"cannot locate the build ({exc})"
        return None
    if not path.exists():
        _load_error = f"not built (expected {path}); run `python -m graphwidget build-native`"
        return None
    try:
        _module = _import(path, module_name())
    except ImportError as exc:
        _load_error = f"built but does not load ({exc}); rebuild with `python -m graphwidget build-native`"
        return None
    _load_error = None
    return _module


def available() -> bool:
    """True when :func:`graphwidget.capture` will use the compiled core by default."""
    return load() is not None


def status() -> Dict[str, Any]:
    """What :func:`load` found: ``available``, the library ``path`` and, when unavailable, the ``reason``.

    >>> import graphwidget.native as native
    >>> sorted(native.status())
    ['available', 'path', 'reason']
    """
    mod = load()
    try:
        path: Optional[str] = str(library_path())
    except Exception:  # noqa: BLE001
        path = None
    reason = None
    if mod is None:
        reason = "disabled by GRAPHWIDGET_NATIVE=0" if os.environ.get("GRAPHWIDGET_NATIVE") == "0" else _load_error
    return {"available": mod is not None, "path": path, "reason": reason}


def _put_ninja_on_path() -> None:
    """torch runs ``ninja`` from PATH; the PyPI ``ninja`` package (a dev dependency) puts it next to the venv's
    Python, which is not on PATH when the venv is not activated (``.venv/bin/python -m graphwidget ...``)."""
    import shutil
    if shutil.which("ninja"):
        return
    candidates = [Path(sys.executable).parent]
    try:
        import ninja  # type: ignore[import-not-found]
        candidates.insert(0, Path(ninja.BIN_DIR))
    except (ImportError, AttributeError):
        pass
    for d in candidates:
        if (d / "ninja").exists():
            os.environ["PATH"] = f"{d}{os.pathsep}{os.environ.get('PATH', '')}"
            return


def _prune_old_builds(keep: Path) -> None:
    """Drop builds for other sources/torch versions next to the new one (each is ~1 MB plus objects)."""
    import shutil
    for d in keep.parent.glob("gw_native_*"):
        if d != keep and d.is_dir():
            shutil.rmtree(d, ignore_errors=True)


def build(verbose: bool = False) -> Path:
    """Compile the core for the running torch and Python (about a minute; needs a C++ compiler and ninja) and
    return the library's path. A no-op when it is already built.

    Raises ``RuntimeError`` saying what is missing when it cannot be built; graphwidget keeps working without it.
    """
    global _module, _load_error
    path = library_path()
    if not path.exists():
        from torch.utils import cpp_extension
        _put_ninja_on_path()
        try:
            cpp_extension.verify_ninja_availability()
        except RuntimeError:
            raise RuntimeError(
                "graphwidget.native.build needs ninja: `pip install ninja` (graphwidget works without the "
                "compiled core, only slower on big graphs).") from None
        name = module_name()
        path.parent.mkdir(parents=True, exist_ok=True)
        try:
            cpp_extension.load(
                name=name, sources=[str(p) for p in SOURCES], build_directory=str(path.parent),
                extra_cflags=["-O2"], verbose=verbose, is_python_module=True)
        except Exception as exc:  # compiler missing or failing: say so plainly
            raise RuntimeError(
                f"graphwidget.native.build could not compile {NATIVE_DIR} against torch "
                f"({type(exc).__name__}: {str(exc)[-2000:]}). graphwidget works without it, only slower on big "
                f"graphs.") from None
        _prune_old_builds(path.parent)
    _module = None
    _load_error = None
    if load() is None:
        raise RuntimeError(f"graphwidget.native.build: built {path} but cannot load it: {_load_error}")
    return path


def _register() -> None:
    # The model stage writes/reads JSON faster with the core; it asks through this provider, never imports us.
    from ..model.io import register_accelerator
    register_accelerator(load)


_register()

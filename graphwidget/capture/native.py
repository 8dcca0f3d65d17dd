"""Build and load graphwidget's compiled core (C++ sources in ``graphwidget/capture/_native/``).

The core is an accelerator: capture and ``profile``'s hooks in C++, 2.5-3.5x faster on big graphs, giving exactly the
pure-Python engine's graph. Pure Python is what a ``pip install`` gives; the core is compiled against the torch you
run, once, on request — never silently during a capture::

    python -m graphwidget build-native      # or: graphwidget.capture.native.build()

A build is about 2 minutes of compiler CPU time (124-133 s measured, g++ 12 -O2): 4 min of wall time on this 2-core
machine with ninja while other work ran (load ~5), 8-9 min under heavy load or without ninja on a busy machine (see
``BUILD_TIME``). It needs a C++ compiler (g++) and Python's headers, and uses ninja when it is installed.

Where builds live. Never inside the package (``pip uninstall`` must leave nothing importable behind), and one folder
per environment, so building for one venv never touches another's build::

    <root>/<python tag>-<hash of sys.prefix>/gw_native_<key>.so

``<key>`` hashes the C++ sources, graphwidget's version, torch's version and git revision, the Python ABI and the
machine, so after any upgrade the old build is simply not found (and capture uses Python) until the next build.
Roots searched, in order: ``$GRAPHWIDGET_NATIVE_DIR`` (e.g. a read-only folder an admin filled), the per-user
cache (``$XDG_CACHE_HOME`` or ``~/.cache``, then ``graphwidget/native``), and ``<sys.prefix>/share/graphwidget/native``
(``build-native --system``: an admin's build for everyone using that Python). Builds go to the first of these
unless ``--system`` is given.

A build is written atomically: compiled in a temporary folder, imported in a separate process (a broken library
kills that process, not yours), then renamed into place. At first load the core captures a small probe graph and
compares it with the Python engine's; if they differ it disables itself with a warning. ``GRAPHWIDGET_NATIVE=0``
ignores a built core.
"""
from __future__ import annotations

import functools
import hashlib
import importlib.machinery
import importlib.util
import json
import os
import platform
import re
import shutil
import subprocess
import sys
import sysconfig
import tempfile
import time
import warnings
from pathlib import Path
from types import ModuleType
from typing import Any, Dict, List, Optional, Tuple

NATIVE_DIR = Path(__file__).with_name("_native")
#: The sources, compiled into one extension module (module.cpp defines it).
SOURCES = [NATIVE_DIR / n for n in ("module.cpp", "capture.cpp", "hooks.cpp", "json.cpp")]
HEADERS = [NATIVE_DIR / "common.h"]

#: The oldest torch the core compiles against: torch 2.13 made autograd's ``Node`` an ``intrusive_ptr`` target, and
#: the sources use that API (torch 2.12 and older fail with ``intrusive_ptr<Node>`` vs ``shared_ptr`` errors).
MIN_TORCH: Tuple[int, int] = (2, 13)
#: What a build costs, measured with ``python -m graphwidget build-native`` on this project's 2-core machine (g++ 12,
#: -O2): 124-133 s of compiler CPU; wall 235 s with ninja at load ~5, 503-555 s at load ~10-12, 527 s without ninja
#: at load ~6. Said in every message that suggests a build.
BUILD_TIME = "about 2 min of compiler CPU: 4-9 min on a 2-core machine, the more the busier it is"
#: A capture of this many nodes without the core says, once, that the core exists and how to build it.
LARGE_GRAPH = 20_000
#: Exit code of the build's import check when the library loaded but is not the core (wrong symbols).
_ENV_DISABLE = "GRAPHWIDGET_NATIVE"

_module: Optional[ModuleType] = None   # the loaded, self-checked core
_load_error: Optional[str] = None      # why load() returned None (not built, does not load, ...)
_disabled: Optional[str] = None        # set for the rest of the process: failed to import or failed its self-check
_warned_large = False


class BuildError(RuntimeError):
    """The core cannot be built here; the message says what is missing and what to do. graphwidget works without
    it (pure Python, slower on big graphs)."""


class CoreNotBuiltWarning(UserWarning):
    """A large capture ran on the pure-Python engine because the compiled core is not built."""


class CoreDisabledWarning(RuntimeWarning):
    """A built core was found but not used: it does not load, or it disagrees with the Python engine."""


# ---------------------------------------------------------------------------------------------------------------
# Where builds live

def env_tag() -> str:
    """This environment's folder name: Python's tag and a hash of ``sys.prefix`` (``cpython-311-3fa2c9d01b``)."""
    prefix = os.path.realpath(sys.prefix)
    return f"{sys.implementation.cache_tag}-{hashlib.sha256(prefix.encode()).hexdigest()[:10]}"


@functools.lru_cache(maxsize=None)
def _key() -> str:
    """Hash of what the library depends on; computed once (load() runs on every capture)."""
    import torch

    from .._version import __version__
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
    """Where :func:`load` looks, in order: ``$GRAPHWIDGET_NATIVE_DIR``, the user cache, the system folder."""
    roots = []
    env = os.environ.get("GRAPHWIDGET_NATIVE_DIR")
    if env:
        roots.append(Path(env))
    roots += [user_root(), system_root()]
    return roots


def build_root(system: bool = False) -> Path:
    """Where :func:`build` writes: ``$GRAPHWIDGET_NATIVE_DIR`` if set, else the user cache (``system=True``: the
    system folder)."""
    if system:
        return system_root()
    env = os.environ.get("GRAPHWIDGET_NATIVE_DIR")
    return Path(env) if env else user_root()


def _library_in(root: Path) -> Path:
    return root / env_tag() / f"{module_name()}.so"


def find_library() -> Optional[Path]:
    """The built library for this environment, from the first root that has it; ``None`` when not built."""
    for root in search_roots():
        p = _library_in(root)
        if p.is_file():
            return p
    return None


def library_path() -> Path:
    """The library :func:`load` uses: the one found, else where :func:`build` will write it."""
    return find_library() or _library_in(build_root())


# ---------------------------------------------------------------------------------------------------------------
# Loading

def _disabled_by_env() -> bool:
    return os.environ.get(_ENV_DISABLE, "1") == "0"


def _import(path: Path, name: str) -> ModuleType:
    loader = importlib.machinery.ExtensionFileLoader(name, str(path))
    spec = importlib.util.spec_from_file_location(name, str(path), loader=loader)
    assert spec is not None
    module = importlib.util.module_from_spec(spec)
    loader.exec_module(module)
    return module


def load() -> Optional[ModuleType]:
    """The compiled core if it has been built for this environment (and ``GRAPHWIDGET_NATIVE`` is not 0), else
    ``None``. Never compiles. The first successful import is checked against the Python engine (:func:`self_check`);
    a core that disagrees is disabled for the rest of the process with a :class:`CoreDisabledWarning`."""
    global _module, _load_error, _disabled
    if _module is not None:
        return None if _disabled_by_env() else _module
    if _disabled_by_env() or _disabled is not None:
        return None
    try:
        path = find_library()
    except Exception as exc:  # noqa: BLE001 - no torch, unreadable sources: just no compiled core
        _load_error = f"cannot locate the build ({type(exc).__name__}: {exc})"
        return None
    if path is None:
        _load_error = (f"not built for this environment (looked for {env_tag()}/{module_name()}.so in "
                       f"{', '.join(str(r) for r in search_roots())}); build it with "
                       f"`python -m graphwidget build-native` ({BUILD_TIME})")
        return None
    try:
        mod = _import(path, module_name())
    except ImportError as exc:
        _disable(f"{path} does not load ({exc}); rebuild with `python -m graphwidget build-native`")
        return None
    _module = mod  # provisional: the self-check captures with engine="native", which calls load() again
    try:
        problem = self_check(mod)
    except Exception as exc:  # noqa: BLE001 - a crash inside the check is a failed check
        problem = f"the probe capture raised {type(exc).__name__}: {exc}"
    if problem is not None:
        _module = None
        _disable(f"{path} gives a different graph than the Python engine on the probe graph ({problem}); it is "
                 f"disabled. Rebuild with `python -m graphwidget build-native`, and report this if it persists "
                 f"(`python -m graphwidget doctor` prints what to include)")
        return None
    _load_error = None
    return mod


def _disable(reason: str) -> None:
    global _disabled, _load_error
    _disabled = _load_error = reason
    warnings.warn(f"graphwidget: the compiled core is not used: {reason}. Capture uses the pure-Python engine.",
                  CoreDisabledWarning, stacklevel=3)


def available() -> bool:
    """True when :func:`graphwidget.capture` will use the compiled core by default."""
    return load() is not None


def status() -> Dict[str, Any]:
    """What :func:`load` found: ``available``, the library ``path`` and, when unavailable, the ``reason``.

    >>> from graphwidget.capture import native
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
        reason = f"disabled by {_ENV_DISABLE}=0" if _disabled_by_env() else _load_error
    return {"available": mod is not None, "path": path, "reason": reason}


def note_python_capture(nodes: int) -> None:
    """Called by the pure-Python engine after a capture: at the first large one with no core built, say once that
    the core exists and how to build it (silent when ``GRAPHWIDGET_NATIVE=0`` chose Python on purpose)."""
    global _warned_large
    if _warned_large or nodes < LARGE_GRAPH or _disabled_by_env():
        return
    if load() is not None:  # the core is there; the caller asked for engine="python" or the graph needed it
        return
    _warned_large = True
    warnings.warn(
        f"graphwidget: captured {nodes:,} nodes with the pure-Python engine because the compiled core is "
        f"unavailable ({_load_error}). The core captures big graphs 2.5-3.5x faster: build it once with "
        f"`python -m graphwidget build-native` ({BUILD_TIME}; needs g++). Set {_ENV_DISABLE}=0 to use Python "
        f"without this note.", CoreNotBuiltWarning, stacklevel=4)


# ---------------------------------------------------------------------------------------------------------------
# Self-check: the core against the Python engine on a small probe graph

def _probe() -> Tuple[Any, Any]:
    """A small program touching what capture records: views, a repeat + select (the seed), a custom Function with
    saved tensors, named parameters, two roots, a freed part. Built from fixed values (the global RNG is not
    touched: loading the core must not change a user's random numbers)."""
    import torch

    class _Twice(torch.autograd.Function):
        @staticmethod
        def forward(ctx: Any, x: Any, w: Any) -> Any:
            ctx.save_for_backward(x, w)
            return x * w * 2

        @staticmethod
        def backward(ctx: Any, grad: Any) -> Any:  # pragma: no cover - never run by the probe
            x, w = ctx.saved_tensors
            return grad * w * 2, grad * x * 2

    module = torch.nn.Module()
    module.weight = torch.nn.Parameter(torch.linspace(-1, 1, 12).reshape(3, 4))
    x = torch.linspace(0, 1, 24).reshape(2, 3, 4).requires_grad_()
    h = x.unsqueeze(1).repeat(1, 2, 1, 1)
    y = (h[:, :, 0, 0] * h[:, :, 1, 1]).sum() + (x.transpose(1, 2) @ module.weight).relu().sum()
    freed = (x.exp() * x).sum()
    freed.backward()
    z = _Twice.apply(x.permute(2, 0, 1).contiguous(), x.permute(2, 0, 1)).mean()
    return [y, z, freed], module


def first_difference(a: str, b: str) -> Optional[str]:
    """``None`` when two graphs' JSON texts are equal, else where they first differ (``nodes[3].op: 'A' != 'B'``)."""
    if a == b:
        return None
    da, db = json.loads(a), json.loads(b)

    def walk(x: Any, y: Any, at: str) -> Optional[str]:
        if type(x) is not type(y):
            return f"{at}: {x!r:.80} != {y!r:.80}"
        if isinstance(x, dict):
            if list(x) != list(y):
                return f"{at}: keys {list(x)} != {list(y)}"
            for k in x:
                d = walk(x[k], y[k], f"{at}.{k}")
                if d:
                    return d
            return None
        if isinstance(x, list):
            for i, (u, v) in enumerate(zip(x, y)):
                d = walk(u, v, f"{at}[{i}]")
                if d:
                    return d
            return None if len(x) == len(y) else f"{at}: {len(x)} items != {len(y)}"
        return None if x == y else f"{at}: {x!r:.80} != {y!r:.80}"

    return walk(da, db, "graph") or "the texts differ in formatting only"


def self_check(mod: Any) -> Optional[str]:
    """Capture the probe graph with the Python engine and with ``mod`` (the core) and compare the JSON texts —
    capture, seq ranking and the core's JSON writer in one go. ``None`` when identical, else the first difference.
    """
    from ..model.io import to_dict
    from .api import capture_raw
    roots_obj, module = _probe()
    expected = capture_raw(roots_obj, module, engine="python", rank=True)
    want = json.dumps(to_dict(expected), separators=(",", ":"), allow_nan=False)
    global _module
    saved, _module = _module, mod  # capture(engine="native") asks load() for the core: give it the one under test
    try:
        got = capture_raw(roots_obj, module, engine="native", rank=True).to_json()
    finally:
        _module = saved
    return first_difference(want, got)


# ---------------------------------------------------------------------------------------------------------------
# Building

def torch_version() -> Tuple[int, ...]:
    """The running torch's version as numbers (``2.13.0+cpu`` -> ``(2, 13, 0)``)."""
    import torch
    return _parse_version(str(torch.__version__))


def _parse_version(text: str) -> Tuple[int, ...]:
    nums = []
    for part in text.split("+")[0].split("."):
        m = re.match(r"\d+", part)
        if not m:
            break
        nums.append(int(m.group()))
    return tuple(nums)


def check_torch(version: Optional[str] = None) -> None:
    """Raise :class:`BuildError` when the core cannot compile against this torch (before minutes of compiler
    errors); ``version`` defaults to the running torch's."""
    if version is None:
        import torch
        version = str(torch.__version__)
    if _parse_version(version)[:2] < MIN_TORCH:
        need = ".".join(map(str, MIN_TORCH))
        raise BuildError(
            f"the compiled core needs torch >= {need} (it uses the intrusive_ptr Node API torch {need} introduced); "
            f"this is torch {version}. graphwidget works fully without the core (pure Python, slower on big "
            f"graphs); to use it, `pip install 'torch>={need}'`.")


def compiler() -> Optional[str]:
    """The C++ compiler torch's build uses (``$CXX``, else ``c++``/``g++``), or ``None`` when there is none."""
    cxx = os.environ.get("CXX")
    if cxx:
        return shutil.which(cxx)
    return shutil.which("c++") or shutil.which("g++")


def ninja() -> Optional[str]:
    """ninja, from PATH or the PyPI ``ninja`` package (it installs next to the venv's Python, which is not on PATH
    when the venv is not activated); ``None`` when absent or ``GRAPHWIDGET_NINJA=0`` — the build then compiles one
    file at a time (slower, but one compiler process: ~1 GB of memory instead of one per core)."""
    if os.environ.get("GRAPHWIDGET_NINJA") == "0":
        return None
    found = shutil.which("ninja")
    if found:
        return found
    candidates = [Path(sys.executable).parent]
    try:
        import ninja as _ninja  # type: ignore[import-not-found]
        candidates.insert(0, Path(_ninja.BIN_DIR))
    except (ImportError, AttributeError):
        pass
    for d in candidates:
        if (d / "ninja").is_file():
            return str(d / "ninja")
    return None


def preflight() -> List[str]:
    """What is missing for a build, each as ``what: the command that fixes it``; empty when a build can start."""
    missing = []
    try:
        check_torch()
    except BuildError as exc:
        return [str(exc)]
    except ImportError:
        return ["torch is not installed: pip install torch"]
    if compiler() is None:
        cxx = os.environ.get("CXX")
        what = f"$CXX={cxx!r} is not an executable" if cxx else "no C++ compiler (c++/g++ not found on PATH)"
        missing.append(f"{what}: install g++ (Debian/Ubuntu: `apt-get install g++`; Fedora: `dnf install gcc-c++`; "
                       f"macOS: `xcode-select --install`)")
    include = sysconfig.get_paths().get("include") or ""
    if not (Path(include) / "Python.h").is_file():
        ver = f"{sys.version_info[0]}.{sys.version_info[1]}"
        missing.append(f"Python's headers are missing (no {include}/Python.h): Debian/Ubuntu: "
                       f"`apt-get install python{ver}-dev`")
    import torch
    if not (Path(torch.__file__).parent / "include" / "torch" / "extension.h").is_file():
        missing.append(f"this torch ({torch.__file__}) ships no C++ headers: install torch from PyPI")
    try:
        import setuptools  # noqa: F401
    except ImportError:
        missing.append("setuptools is missing (the build drives the compiler through it): `pip install setuptools`")
    return missing


#: Runs in a child process: compile the extension with torch's BuildExtension (ninja when present, else one file at
#: a time through setuptools — torch's cpp_extension.load() would insist on ninja).
_BUILD_SCRIPT = r"""
import os, sys
from setuptools import setup
from torch.utils.cpp_extension import BuildExtension, CppExtension
name, out, use_ninja, *sources = sys.argv[1:]
setup(name=name, packages=[], py_modules=[],
      script_args=["build_ext", "--build-lib", out, "--build-temp", os.path.join(out, "obj")],
      ext_modules=[CppExtension(name, sources, extra_compile_args=["-O2", "-g0"])],
      cmdclass={"build_ext": BuildExtension.with_options(use_ninja=use_ninja == "1")})
"""

#: Runs in a child process on the fresh library: if it is truncated or broken, that process dies, not the caller.
_VERIFY_SCRIPT = r"""
import importlib.machinery, importlib.util, sys
import torch
path, name = sys.argv[1:]
loader = importlib.machinery.ExtensionFileLoader(name, path)
spec = importlib.util.spec_from_file_location(name, path, loader=loader)
mod = importlib.util.module_from_spec(spec)
loader.exec_module(mod)
missing = [f for f in ("capture", "rank_seq", "instrument", "json_arrays", "Unsupported") if not hasattr(mod, f)]
if missing:
    sys.exit("loaded, but it has no " + ", ".join(missing))
from graphwidget.capture import native
problem = native.self_check(mod)
if problem:
    sys.exit("it disagrees with the Python engine on the probe graph: " + problem)
"""

_ERROR_LINE = re.compile(r"(\berror\b|\bError\b|FAILED:|undefined reference|No such file or directory)")


def first_errors(log: str, limit: int = 12) -> str:
    """The start of the compiler's complaints: from the first error line (with the ``In file included from`` lines
    just before it) on, ``limit`` whole lines at most. Where a failed build begins is where to look."""
    lines = log.splitlines()
    first = next((i for i, line in enumerate(lines) if _ERROR_LINE.search(line)), None)
    if first is None:
        return "\n".join(lines[-limit:])
    start = first
    while start > 0 and first - start < 4 and re.search(r"In file included from|In function|In member function|"
                                                          r"^\s+from |: In ", lines[start - 1]):
        start -= 1
    shown = lines[start:start + limit]
    return "\n".join(line if len(line) <= 400 else line[:400] + " [...]" for line in shown)


def build(verbose: bool = False, system: bool = False) -> Path:
    """Compile the core for this environment ({time}; needs g++ and Python's headers) and return the library's
    path; a no-op when it is already built. ``system=True`` writes to :func:`system_root` (for an admin).

    Raises :class:`BuildError` saying what is missing, or where the compiler's full log is and its first errors;
    graphwidget keeps working without the core.
    """
    global _module, _load_error, _disabled
    existing = find_library()
    if existing is not None and not system and _disabled is None:
        _module = None
        if load() is not None:
            return existing
    missing = preflight()
    if missing:
        raise BuildError("cannot build the compiled core here: " + "; ".join(missing))
    name = module_name()
    env_dir = build_root(system) / env_tag()
    target = env_dir / f"{name}.so"
    try:
        env_dir.mkdir(parents=True, exist_ok=True)
        (env_dir / "prefix.txt").write_text(os.path.realpath(sys.prefix) + "\n")
        tmp = Path(tempfile.mkdtemp(prefix=f".{name}-", dir=env_dir))
    except OSError as exc:
        raise BuildError(f"cannot write to {env_dir} ({type(exc).__name__}: {exc.strerror or exc}); set "
                         f"GRAPHWIDGET_NATIVE_DIR to a folder you can write to") from None
    log_path = env_dir / f"{tmp.name.lstrip('.')}.build.log"  # one log per build: two builds may run at once
    try:
        _compile(name, tmp, log_path, verbose)
        built = next(tmp.glob(f"{name}*.so"), None)
        if built is None:
            raise BuildError(f"the compiler finished but produced no {name}*.so in {tmp}; full log: {log_path}")
        _verify(built, name)
        os.replace(built, target)  # atomic: a reader sees the old file, no file, or the whole new one
        os.replace(log_path, env_dir / f"{name}.build.log")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    _prune(env_dir, keep=target)
    _module, _load_error, _disabled = None, None, None
    if find_library() != target:
        return target  # a root searched before this one holds another build (GRAPHWIDGET_NATIVE_DIR)
    if load() is None:
        raise BuildError(f"built {target} but cannot load it: {_load_error}")
    return target


build.__doc__ = (build.__doc__ or "").format(time=BUILD_TIME)


def _compile(name: str, out: Path, log_path: Path, verbose: bool) -> None:
    nj = ninja()
    env = dict(os.environ)
    if nj:
        env["PATH"] = f"{Path(nj).parent}{os.pathsep}{env.get('PATH', '')}"
    cmd = [sys.executable, "-c", _BUILD_SCRIPT, name, str(out), "1" if nj else "0", *[str(s) for s in SOURCES]]
    t0 = time.perf_counter()
    with open(log_path, "w", encoding="utf-8", errors="replace") as log:
        log.write(f"# graphwidget build-native: {name}, torch from {sys.prefix}, ninja: {nj or 'no'}\n")
        log.flush()
        if verbose:
            proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, env=env, text=True,
                                    errors="replace", cwd=out)
            assert proc.stdout is not None
            for line in proc.stdout:
                sys.stderr.write(line)
                log.write(line)
            rc = proc.wait()
        else:
            rc = subprocess.call(cmd, stdout=log, stderr=subprocess.STDOUT, env=env, cwd=out)
    seconds = time.perf_counter() - t0
    if rc != 0:
        text = log_path.read_text(encoding="utf-8", errors="replace")
        raise BuildError(
            f"the compiler failed after {seconds:.0f} s (exit {rc}). Full log: {log_path}\n"
            f"First errors:\n{first_errors(text)}\n"
            f"graphwidget works without the compiled core (pure Python, slower on big graphs).")


def _verify(path: Path, name: str) -> None:
    """Import the fresh library in a child process and run the self-check there."""
    env = dict(os.environ)
    env.pop(_ENV_DISABLE, None)
    proc = subprocess.run([sys.executable, "-c", _VERIFY_SCRIPT, str(path), name], capture_output=True, text=True,
                          env=env, errors="replace", cwd=path.parent)
    if proc.returncode != 0:
        why = (f"killed by signal {-proc.returncode}" if proc.returncode < 0 else f"exit {proc.returncode}")
        tail = (proc.stderr or proc.stdout).strip().splitlines()[-5:]
        raise BuildError(f"the freshly built {path.name} does not work ({why}): {' | '.join(tail)}; it was not "
                         f"installed")


def _prune(env_dir: Path, keep: Path) -> None:
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
            lib = _library_in(root)
            out["roots"].append({"root": str(root), "library": str(lib), "exists": lib.is_file()})
        except Exception as exc:  # noqa: BLE001 - no torch: the name cannot be computed
            out["roots"].append({"root": str(root), "library": None, "exists": False, "error": str(exc)})
    return out


def _register() -> None:
    # The model stage writes/reads JSON faster with the core; it asks through this provider, never imports us.
    from ..model.io import register_accelerator
    register_accelerator(load)


_register()

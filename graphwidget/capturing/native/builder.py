"""Building the compiled core: what a build needs, the compiler run, and the checks before a build is used.

A build is written atomically: compiled in a temporary folder, imported in a separate process (a broken library kills
that process, not yours) where it must pass the engine's self-check, then renamed into place. It needs a C++ compiler
(g++) and Python's headers, and uses ninja when it is installed.
"""
from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import sysconfig
import tempfile
import time
from pathlib import Path
from typing import List, Optional, Tuple

from . import engine, paths

#: The oldest torch the core compiles against: torch 2.13 made autograd's ``Node`` an ``intrusive_ptr`` target, and
#: the sources use that API (torch 2.12 and older fail with ``intrusive_ptr<Node>`` vs ``shared_ptr`` errors).
MIN_TORCH: Tuple[int, int] = (2, 13)


class BuildError(RuntimeError):
    """The core cannot be built here; the message says what is missing and what to do. graphwidget works without
    it (pure Python, slower on big graphs)."""


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
    file at a time (slower, but one compiler process's memory instead of one per core)."""
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
from graphwidget.capturing.native import engine
missing = [f for f in engine.REQUIRED if not hasattr(mod, f)]
if missing:
    sys.exit("loaded, but it has no " + ", ".join(missing))
problem = engine.self_check(mod)
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
    existing = paths.find_library()
    if existing is not None and not system and engine.refused() is None:
        engine.forget()
        if engine.load_core() is not None:
            return existing
    missing = preflight()
    if missing:
        raise BuildError("cannot build the compiled core here: " + "; ".join(missing))
    name = paths.module_name()
    env_dir = paths.build_root(system) / paths.env_tag()
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
    paths.prune(env_dir, keep=target)
    engine.forget()
    if paths.find_library() != target:
        return target  # a root searched before this one holds another build (GRAPHWIDGET_NATIVE_DIR)
    if engine.load_core() is None:
        raise BuildError(f"built {target} but cannot load it: {engine.status()['reason']}")
    return target


build.__doc__ = (build.__doc__ or "").format(time=engine.BUILD_TIME)


def _compile(name: str, out: Path, log_path: Path, verbose: bool) -> None:
    nj = ninja()
    env = dict(os.environ)
    if nj:
        env["PATH"] = f"{Path(nj).parent}{os.pathsep}{env.get('PATH', '')}"
    cmd = [sys.executable, "-c", _BUILD_SCRIPT, name, str(out), "1" if nj else "0", *[str(s) for s in paths.SOURCES]]
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
    env.pop(paths.ENV_DISABLE, None)
    proc = subprocess.run([sys.executable, "-c", _VERIFY_SCRIPT, str(path), name], capture_output=True, text=True,
                          env=env, errors="replace", cwd=path.parent)
    if proc.returncode != 0:
        why = (f"killed by signal {-proc.returncode}" if proc.returncode < 0 else f"exit {proc.returncode}")
        tail = (proc.stderr or proc.stdout).strip().splitlines()[-5:]
        raise BuildError(f"the freshly built {path.name} does not work ({why}): {' | '.join(tail)}; it was not "
                         f"installed")

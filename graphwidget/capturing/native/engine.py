"""Which engine captures: the compiled core when it is built and passes its self-check, else pure Python.

This is the one place that decides. :func:`load_core` finds the build (:mod:`.paths`), imports it and checks it
against the pure-Python engine on a small probe graph (:func:`self_check`, which is handed the module under test:
nothing is swapped in globally while it runs). A core that does not load or disagrees is disabled for the rest of the
process with a :class:`CoreDisabledWarning`. ``GRAPHWIDGET_NATIVE=0`` ignores a built core.
"""
from __future__ import annotations

import importlib.machinery
import importlib.util
import json
import warnings
from pathlib import Path
from types import ModuleType
from typing import Any, Dict, Optional, Tuple

from . import paths

#: What a build costs, said in every message that suggests one.
BUILD_TIME = "a few minutes of compiling, once per environment"
#: A capture of this many nodes without the core says, once, that the core exists and how to build it.
LARGE_GRAPH = 20_000
#: The functions a library must have to be the core.
REQUIRED = ("capture", "rank_seq", "instrument", "untrack_tree", "Unsupported")

_module: Optional[ModuleType] = None   # the loaded, self-checked core
_load_error: Optional[str] = None      # why load_core() returned None (not built, does not load, ...)
_disabled: Optional[str] = None        # set for the rest of the process: failed to import or failed its self-check
_warned_large = False


class CoreNotBuiltWarning(UserWarning):
    """A large capture ran on the pure-Python engine because the compiled core is not built."""


class CoreDisabledWarning(RuntimeWarning):
    """A built core was found but not used: it does not load, or it disagrees with the Python engine."""


def import_library(path: Path, name: str) -> ModuleType:
    """Import the extension at ``path`` (its module name is ``name``)."""
    loader = importlib.machinery.ExtensionFileLoader(name, str(path))
    spec = importlib.util.spec_from_file_location(name, str(path), loader=loader)
    assert spec is not None
    module = importlib.util.module_from_spec(spec)
    loader.exec_module(module)
    return module


def forget() -> None:
    """Drop what was loaded or refused, so the next :func:`load_core` looks again (after a build)."""
    global _module, _load_error, _disabled
    _module, _load_error, _disabled = None, None, None


def refused() -> Optional[str]:
    """Why a built core was disabled for this process (it did not load or failed its self-check), else ``None``."""
    return _disabled


def load_core() -> Optional[ModuleType]:
    """The compiled core if it has been built for this environment (and ``GRAPHWIDGET_NATIVE`` is not 0), else
    ``None``. Never compiles. The first successful import is checked against the Python engine (:func:`self_check`);
    a core that disagrees is disabled for the rest of the process with a :class:`CoreDisabledWarning`."""
    global _module, _load_error
    if paths.disabled_by_env():
        return None
    if _module is not None:
        return _module
    if _disabled is not None:
        return None
    try:
        path = paths.find_library()
    except Exception as exc:  # noqa: BLE001 - no torch, unreadable sources: just no compiled core
        _load_error = f"cannot locate the build ({type(exc).__name__}: {exc})"
        return None
    if path is None:
        _load_error = (f"not built for this environment (looked for {paths.env_tag()}/{paths.module_name()}.so in "
                       f"{', '.join(str(r) for r in paths.search_roots())}); build it with "
                       f"`python -m graphwidget build-native` ({BUILD_TIME})")
        return None
    try:
        mod = import_library(path, paths.module_name())
    except ImportError as exc:
        _disable(f"{path} does not load ({exc}); rebuild with `python -m graphwidget build-native`")
        return None
    try:
        problem = self_check(mod)
    except Exception as exc:  # noqa: BLE001 - a crash inside the check is a failed check
        problem = f"the probe capture raised {type(exc).__name__}: {exc}"
    if problem is not None:
        _disable(f"{path} gives a different graph than the Python engine on the probe graph ({problem}); it is "
                 f"disabled. Rebuild with `python -m graphwidget build-native`, and report this if it persists "
                 f"(`python -m graphwidget doctor` prints what to include)")
        return None
    _module, _load_error = mod, None
    return mod


def _disable(reason: str) -> None:
    global _disabled, _load_error
    _disabled = _load_error = reason
    warnings.warn(f"graphwidget: the compiled core is not used: {reason}. Capture uses the pure-Python engine.",
                  CoreDisabledWarning, stacklevel=4)


def available() -> bool:
    """True when :func:`graphwidget.capture` will use the compiled core by default."""
    return load_core() is not None


def status() -> Dict[str, Any]:
    """What :func:`load_core` found: ``available``, the library ``path`` and, when unavailable, the ``reason``.

    >>> from graphwidget.capturing import native
    >>> sorted(native.status())
    ['available', 'path', 'reason']
    """
    mod = load_core()
    try:
        path: Optional[str] = str(paths.library_path())
    except Exception:  # noqa: BLE001
        path = None
    reason = None
    if mod is None:
        reason = f"disabled by {paths.ENV_DISABLE}=0" if paths.disabled_by_env() else _load_error
    return {"available": mod is not None, "path": path, "reason": reason}


def note_python_capture(nodes: int) -> None:
    """Called after a pure-Python capture: at the first large one with no core built, say once that the core exists
    and how to build it (silent when ``GRAPHWIDGET_NATIVE=0`` chose Python on purpose)."""
    global _warned_large
    if _warned_large or nodes < LARGE_GRAPH or paths.disabled_by_env():
        return
    if load_core() is not None:  # the core is there; the caller asked for engine="python" or the graph needed it
        return
    _warned_large = True
    warnings.warn(
        f"graphwidget: captured {nodes:,} nodes with the pure-Python engine because the compiled core is "
        f"unavailable ({_load_error}). The core captures big graphs several times faster: build it once with "
        f"`python -m graphwidget build-native` ({BUILD_TIME}; needs g++). Set {paths.ENV_DISABLE}=0 to use Python "
        f"without this note.", CoreNotBuiltWarning, stacklevel=4)


# ---------------------------------------------------------------------------------------------------------------
# Self-check: a core against the Python engine on a small probe graph

def probe() -> Tuple[Any, Any]:
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


def self_check(core: Any) -> Optional[str]:
    """Capture the probe graph with the Python engine and with ``core`` and compare the JSON texts — capture and seq
    ranking in one go. ``None`` when identical, else the first difference."""
    from ...model.writer import to_dict, to_json
    from ..engines import native_graph, python_graph
    from ..roots import parameter_names, roots_of
    roots_obj, module = probe()
    names = parameter_names(module)
    expected = python_graph(roots_of(roots_obj), names, None, rank=True)
    want = json.dumps(to_dict(expected, version=1), separators=(",", ":"), allow_nan=False)
    got = to_json(native_graph(core, roots_of(roots_obj), names, None, rank=True), version=1)
    return first_difference(want, got)

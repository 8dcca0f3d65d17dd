"""graphwidget: see, measure and compare PyTorch autograd graphs inside Jupyter.

>>> import torch, graphwidget as gw
>>> x = torch.randn(4, requires_grad=True)
>>> g = gw.capture((x * 2).sum())

The package is one folder per stage of the data's way — ``capturing`` (torch objects -> graph), ``attribution``
(source lines, module paths), ``profiling`` (timings), ``experiment`` (running two implementations, timing layouts),
``model`` (the graph and its JSON form; torch-free), ``analysis`` (summary, tables, diff, advisor; torch-free),
``views`` (widget, export, charts) — plus ``entry`` (command line, magics, the demo) at the top. This module is the
whole public surface, and the one place that wires the stages together (docs/internals.md).
"""
from __future__ import annotations

import importlib as _importlib
import sys as _sys
from typing import TYPE_CHECKING, Any

from ._version import __version__
from .model import GradGraph, SchemaError

__all__ = [
    "__version__", "capture", "trace", "profile", "GradGraph", "load_json", "load", "SchemaError", "diff", "compare",
    "Diff", "MultiDiff", "RankSet", "Ranks", "RankError", "GraphWidget", "DiffWidget", "export_html",
    "examples", "load_ipython_extension", "advise", "with_checkpoint", "record", "Recording",
]

_TORCH_NAMES = ("capture", "trace", "profile", "examples", "Ranks", "RankError")
#: ``_TORCH_ERROR`` while ``python -m graphwidget`` has not loaded torch yet (see :func:`_running_the_cli`).
_DEFERRED = "torch is loaded by the command line once its arguments are read"

if TYPE_CHECKING:  # what editors and mypy see of the names loaded on first use (below)
    import os

    from . import examples
    from .analysis.advisor import advise
    from .analysis.diff import Diff
    from .analysis.diff.multi import MultiDiff, diff
    from .analysis.ranks import RankSet
    from .capturing import capture
    from .experiment.checkpointing import with_checkpoint
    from .experiment.nway import compare
    from .experiment.ranks import RankError, Ranks, profile, trace
    from .experiment.recording import Recording, record
    from .views.diff_widget import DiffWidget
    from .views.export import export_html
    from .views.widget import GraphWidget


def _running_the_cli() -> bool:
    """True while ``python -m graphwidget`` imports this package to find its ``__main__``: the command line loads
    torch itself once its arguments are read (:func:`_load_torch_stages`), so ``--help`` and usage errors are
    answered without waiting for torch. (Python 3.9 has no ``sys.orig_argv``: there torch loads here as always.)"""
    argv = getattr(_sys, "orig_argv", None)
    if not argv or _sys.argv[:1] != ["-m"]:
        return False
    for i, a in enumerate(argv[1:], 1):
        if a == "-m":
            return argv[i + 1:i + 2] == ["graphwidget"]
        if a.startswith("-m") and not a.startswith("--"):
            return a[2:] == "graphwidget"
    return False


def _load_torch_stages() -> None:
    """Import the torch stages and wire them into the torch-free ones (once; a no-op without torch)."""
    global _TORCH_ERROR
    if _TORCH_ERROR not in (None, _DEFERRED) or "capture" in globals():
        return
    try:
        import torch as _torch  # noqa: F401 - capture, trace and profile need it; saved graphs do not
    except ImportError:  # pragma: no cover - exercised by tests/test_house.py in a subprocess
        _TORCH_ERROR = "torch is not installed"
        return
    _TORCH_ERROR = None
    from . import examples
    from .analysis.advisor.memory_layout import register_measurer as _register_measurer
    from .capturing import capture
    from .capturing.native import engine as _core_engine
    from .experiment.layout_timing import measure_call as _measure_call

    # gw.profile / gw.trace: the stages' functions, plus ranks= (the graphs of a torch.distributed job's ranks)
    from .experiment.ranks import RankError, Ranks, profile, trace
    from .model.writer import register_accelerator as _register_accelerator

    globals().update(examples=examples, capture=capture, RankError=RankError, Ranks=Ranks, profile=profile,
                     trace=trace)
    # The torch-free stages learn of the torch stages here, and only here: the model writes JSON faster with the
    # compiled core, and the advisor's memory-layout rule measures with torch.
    _register_accelerator(_core_engine.load_core)
    _register_measurer(_measure_call)


_TORCH_ERROR: Any = _DEFERRED
if not _running_the_cli():
    _load_torch_stages()

# Views pull in anywidget/ipywidgets/plotly and analyses need only the model: they load on first use.
_LAZY = {
    "GraphWidget": ("views.widget", "GraphWidget"),
    "DiffWidget": ("views.diff_widget", "DiffWidget"),
    "export_html": ("views.export", "export_html"),
    "diff": ("analysis.diff.multi", "diff"),  # two graphs, or N (a dict or a list)
    "compare": ("experiment.nway", "compare"),  # two functions, or N sides (a dict or a list)
    "Diff": ("analysis.diff", "Diff"),
    "MultiDiff": ("analysis.diff.multi", "MultiDiff"),
    "RankSet": ("analysis.ranks", "RankSet"),
    "load_ranks": ("analysis.ranks", "load_ranks"),
    "advise": ("analysis.advisor", "advise"),
    "with_checkpoint": ("experiment.checkpointing", "with_checkpoint"),
    "record": ("experiment.recording", "record"),  # one side kept for a later compare (gw.load reads its file)
    "Recording": ("experiment.recording", "Recording"),
}


def __dir__() -> "list[str]":
    """What ``dir(gw)`` and an IDE's completion offer: the public names (lazy ones included, before their first use)
    and the module's dunder attributes — not the helpers this module imports for itself."""
    return sorted(set(__all__) | {n for n in globals() if n.startswith("__") and n.endswith("__")})


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        mod, attr = _LAZY[name]
        value = getattr(_importlib.import_module(f".{mod}", __name__), attr)
        globals()[name] = value
        return value
    if name in _TORCH_NAMES and _TORCH_ERROR == _DEFERRED:
        _load_torch_stages()
        if name in globals():
            return globals()[name]
    if name in _TORCH_NAMES and _TORCH_ERROR:
        raise ImportError(f"graphwidget.{name} needs PyTorch ({_TORCH_ERROR}): pip install torch. Saved graphs "
                          f"load, diff and display without it.")
    raise AttributeError(f"module 'graphwidget' has no attribute {name!r}")


def load_json(text: str | bytes) -> GradGraph | Diff | MultiDiff | RankSet:
    """Read what ``to_json()`` wrote: a :class:`GradGraph`, a diff (``gw.diff``/``gw.compare``) or an N-way
    comparison (:class:`MultiDiff`: ``gw.compare`` of N sides, a rank set's view). The document is
    validated first; a broken file raises ``ValueError`` naming the node and the field. Works without torch.

    >>> g2 = gw.load_json(g.to_json())        # doctest: +SKIP
    """
    from ._util.gc import gc_paused
    from .model import io, schema
    with gc_paused():
        data = io.parse(text)
        if isinstance(data, dict) and data.get("format") == schema.DIFF_FORMAT:
            from .analysis.diff import Diff
            return Diff.from_dict(data)
        if isinstance(data, dict) and data.get("format") == schema.NWAY_FORMAT:
            from .analysis.diff.multi import MultiDiff
            multi = MultiDiff.from_dict(data)
            if data.get("result") == "RankSet":
                from .analysis.ranks import RankSet
                return RankSet.from_nway(multi)
            return multi
        return io.graph_from_parsed(data)


def load(path: str | os.PathLike[str]) -> GradGraph | Diff | MultiDiff | RankSet | Recording:
    """Read what a result's ``save`` wrote: a graph, a diff or an N-way comparison file (any ``to_json()``, like
    :func:`load_json`; ``.gz``: gzip-compressed), or a folder of per-rank graphs (:meth:`RankSet.save`) as a
    :class:`RankSet`. Works without torch.

    >>> g.save("g.json.gz"); g2 = gw.load("g.json.gz")        # doctest: +SKIP

    A recording's file (``gw.record(fn, *inputs).save("a.gwrec")``) gives the :class:`Recording` (needs torch).
    """
    from pathlib import Path
    if isinstance(path, (str, Path)) and Path(path).is_dir():
        from .analysis.ranks import RankSet
        return RankSet.from_dir(path)
    from .model import recfile
    # a recording, another safetensors file (refused, saying so), or what is left of a truncated recording
    if recfile.kind(path) is not None or str(path).endswith(recfile.SUFFIX):
        from .experiment.recording import load_recording
        return load_recording(path)
    from .model.io import read_file
    return load_json(read_file(path))


def load_ipython_extension(ipython: Any) -> None:
    """``%load_ext graphwidget``: registers the ``%gradgraph`` / ``%%gradgraph`` magics (and ``%gradcompare``)."""
    from .entry.magics import register
    register(ipython)

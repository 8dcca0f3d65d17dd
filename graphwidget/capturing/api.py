"""``capture``: an autograd graph into a :class:`~graphwidget.model.GradGraph`, with the compiled core when it is
built and the pure-Python engine otherwise (both give the same graph; :mod:`.native.engine` decides)."""
from __future__ import annotations

from typing import Any, Optional

import torch

from .._util.gc import gc_paused
from ..model.graph import GradGraph
from .engines import native_graph, python_graph
from .modules import infer_modules, module_classes, parameter_aliases
from .native import engine as core_engine
from .roots import parameter_names, roots_of
from .seq import finalize_seq

ENGINES = ("auto", "native", "python")


def capture_raw(obj: Any, module: Optional[torch.nn.Module] = None, title: Optional[str] = None,
                engine: str = "auto", rank: bool = False) -> GradGraph:
    """:func:`capture` without the final renumbering of ``seq``: nodes keep torch's absolute sequence numbers,
    which :func:`graphwidget.trace` and the profiler cross-check match against. Call :func:`finalize` after.

    With ``rank=True`` the graph comes back already finalised (what :func:`capture` wants)."""
    if engine not in ENGINES:
        raise ValueError(f"graphwidget.capture: engine must be one of {ENGINES}, got {engine!r}.")
    roots = roots_of(obj)
    names = parameter_names(module)
    core = core_engine.load_core() if engine != "python" else None
    with gc_paused():
        if engine != "python":
            if core is None and engine == "native":
                raise RuntimeError(f"graphwidget.capture(engine='native'): the compiled core is unavailable: "
                                   f"{core_engine.status()['reason']}.")
            if core is not None:
                try:
                    return native_graph(core, roots, names, title, rank)
                except core.Unsupported:
                    if engine == "native":
                        raise ValueError("graphwidget.capture(engine='native'): this graph has something only the "
                                         "Python path handles (symbolic shapes or an unusual root); use "
                                         "engine='auto'.") from None
        graph = python_graph(roots, names, title, rank, core=core)
    core_engine.note_python_capture(graph.nx.number_of_nodes())
    return graph


def finalize(graph: GradGraph) -> GradGraph:
    """Rank a :func:`capture_raw` graph's ``seq`` (with the compiled core when it is loaded)."""
    return finalize_seq(graph, core_engine.load_core())


def capture(obj: Any, *, module: Optional[torch.nn.Module] = None, title: Optional[str] = None,
            engine: str = "auto") -> GradGraph:
    """Capture the autograd graph behind ``obj`` into a :class:`GradGraph`.

    ``obj`` is a tensor that requires grad (usually the loss), a list/tuple/dict of such tensors (one graph with
    several roots), or a ``grad_fn`` node. ``module`` names leaf parameters (``fc1.weight``), records what each of
    its modules is (``meta["modules"]``) and puts each node in the module whose parameters it consumes or between
    whose nodes it lies (``node["module"]``, inferred: :mod:`graphwidget.capturing.modules`). ``engine``:
    ``"auto"`` uses the compiled core when it is built (:mod:`graphwidget.capturing.native`) and pure Python
    otherwise; ``"python"`` and ``"native"`` force one (both give the same graph).

    >>> import torch, graphwidget as gw
    >>> x = torch.randn(3, requires_grad=True)
    >>> g = gw.capture((x * 2).sum())
    >>> g.summary()["nodes"]
    3
    """
    with gc_paused():  # renumbering allocates 100k's of tuples too: keep the collector out of it
        graph = capture_raw(obj, module, title, engine, rank=True)
        if module is not None:  # what each module is, and which nodes belong to which (from the parameters' names)
            classes = module_classes(module)
            graph.meta["modules"] = classes
            infer_modules(graph, classes, parameter_aliases(module))
        return graph

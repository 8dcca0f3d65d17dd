"""``capture``: an autograd graph into a :class:`~graphwidget.model.GradGraph`, with the compiled core when it is
built and the pure-Python engine otherwise (both give the same graph)."""
from __future__ import annotations

from typing import Any, Dict, List, Optional, Tuple

import torch

from .._util.gc import gc_paused
from ..model.graph import GradGraph
from . import native
from ._deep_free import make_deep_free_safe
from .records import _MISSING_SEEN, NATIVE_TEMPLATES, _TypeInfo, build_records, fill_outputs
from .roots import Node, roots_of
from .seq import finalize_seq, rank_seq_python
from .tensors import dtype_name, jsonable, packed_record, tensor_record
from .walk import walk


def parameter_names(module: Optional[torch.nn.Module]) -> Dict[int, str]:
    """id(parameter) -> qualified name (``fc1.weight``) for leaves of a module."""
    if module is None:
        return {}
    if not isinstance(module, torch.nn.Module):
        raise TypeError(f"module= must be a torch.nn.Module (to name parameters); got {type(module).__name__}.")
    names = {id(p): n for n, p in module.named_parameters(remove_duplicate=False)}
    for n, b in module.named_buffers():
        names.setdefault(id(b), n)
    return names


ENGINES = ("auto", "native", "python")


def _type_info(fn: Node) -> Tuple[str, str, Tuple[Tuple[str, ...], ...], Tuple[Tuple[str, str], ...]]:
    info = _TypeInfo(fn)
    return info.op, info.kind, info.tensor_attrs, info.other_attrs


def _capture_native(roots: List[Node], names: Dict[int, str], title: Optional[str],
                    required: bool, rank: bool) -> Optional[GradGraph]:
    """The compiled core's capture (graphwidget/_native/capture.cpp): the same graph as the Python path below,
    2.5-3.5x faster on big graphs. ``None`` when the core is not built, or when this graph has something only the
    Python path handles (symbolic shapes, unknown root objects) — unless ``required``, which turns both into errors.
    """
    mod = native.load()
    if mod is None:
        if required:
            raise RuntimeError(f"graphwidget.capture(engine='native'): the compiled core is unavailable: "
                               f"{native.status()['reason']}.")
        return None
    try:
        node, succ, pred, root_ids, abs_seq, wrapped = mod.capture(
            list(roots), dict(names), _type_info, jsonable, dtype_name, tensor_record, packed_record,
            NATIVE_TEMPLATES, rank)
    except mod.Unsupported:
        if required:
            raise ValueError("graphwidget.capture(engine='native'): this graph has something only the Python "
                             "path handles (symbolic shapes or an unusual root); use engine='auto'.") from None
        return None
    graph = GradGraph.from_adjacency(node, succ, pred, roots=sorted(set(root_ids)), title=title)
    if rank:
        graph.set_abs_seq_raw(abs_seq)
    # The core reads most nodes without giving them a Python wrapper, and unwrapped nodes are freed by torch's own
    # iterative deleteNode: only wrapped ones recurse when the graph is freed (deep_free.py). ``wrapped`` counts
    # every node that has a wrapper, including those user code made before (a walk over next_functions): a plain
    # 1M-node chain captured this way frees on the default 8 MiB stack, one the user walked first gets the guard
    # (tests/test_deep.py).
    make_deep_free_safe(wrapped + len(roots))
    return graph


def capture_raw(obj: Any, module: Optional[torch.nn.Module] = None, title: Optional[str] = None,
                engine: str = "auto", rank: bool = False) -> GradGraph:
    """:func:`capture` without the final renumbering of ``seq``: nodes keep torch's absolute sequence numbers,
    which :mod:`graphwidget.trace` and the profiler cross-check match against. Call :func:`finalize_seq` after.

    With ``rank=True`` the graph comes back already finalised (what :func:`capture` wants)."""
    if engine not in ENGINES:
        raise ValueError(f"graphwidget.capture: engine must be one of {ENGINES}, got {engine!r}.")
    roots = roots_of(obj)
    names = parameter_names(module)
    if engine != "python":
        with gc_paused():
            graph = _capture_native(roots, names, title, required=engine == "native", rank=rank)
        if graph is not None:
            return graph
    with gc_paused():
        w = walk(roots)
        nodes, edges = build_records(w, names)
        root_ids = sorted({w.index[id(r)] for r in roots})
        n = len(w.order)
        del w, roots
        graph = GradGraph.from_records(nodes, edges, roots=root_ids, title=title)
        if "_input_metadata" in _MISSING_SEEN:  # torch < 2.5: what the consumers' saved sizes tell
            fill_outputs(graph, {})
        if rank and engine == "python":  # pure Python to the end
            graph.abs_seq = rank_seq_python(graph.nx._node)
        elif rank:
            finalize_seq(graph)
    make_deep_free_safe(n)
    return graph


def capture(obj: Any, *, module: Optional[torch.nn.Module] = None, title: Optional[str] = None,
            engine: str = "auto") -> GradGraph:
    """Capture the autograd graph behind ``obj`` into a :class:`GradGraph`.

    ``obj`` is a tensor that requires grad (usually the loss), a list/tuple/dict of such tensors (one graph with
    several roots), or a ``grad_fn`` node. ``module`` names leaf parameters (``fc1.weight``). ``engine``:
    ``"auto"`` uses the compiled core when it is built (:mod:`graphwidget.native`) and pure Python otherwise;
    ``"python"`` and ``"native"`` force one (both give the same graph).

    >>> import torch, graphwidget as gw
    >>> x = torch.randn(3, requires_grad=True)
    >>> g = gw.capture((x * 2).sum())
    >>> g.summary()["nodes"]
    3
    """
    with gc_paused():  # renumbering allocates 100k's of tuples too: keep the collector out of it
        return capture_raw(obj, module, title, engine, rank=True)

"""The two capture engines behind one signature: root nodes -> :class:`~graphwidget.model.GradGraph`.

:func:`python_graph` is the pure-Python engine (``walk`` + ``records``); :func:`native_graph` runs the compiled core
it is given (``native/cpp/capture.cpp``), which builds exactly the same graph, faster. Neither chooses: which engine
runs is decided in one place, :mod:`graphwidget.capturing.native.engine`, and the core is always passed in.
"""
from __future__ import annotations

from typing import Any, Dict, List, Optional, Tuple

from ..model.graph import GradGraph
from ._deep_free import make_deep_free_safe
from .compat import fill_outputs, missing_seen
from .records import NATIVE_TEMPLATES, TypeInfo, build_records
from .roots import Node
from .seq import finalize_seq, rank_seq_python
from .tensors import dtype_name, jsonable, packed_record, tensor_record
from .walk import walk


def _type_info(fn: Node) -> Tuple[str, str, Tuple[Tuple[str, ...], ...], Tuple[Tuple[str, str], ...]]:
    info = TypeInfo(fn)
    return info.op, info.kind, info.tensor_attrs, info.other_attrs


def native_graph(core: Any, roots: List[Node], names: Dict[int, str], title: Optional[str],
                 rank: bool) -> GradGraph:
    """Capture with the compiled ``core``. Raises ``core.Unsupported`` when the graph has something only the
    Python engine handles (symbolic shapes, unknown root objects)."""
    node, succ, pred, root_ids, abs_seq, wrapped = core.capture(
        list(roots), dict(names), _type_info, jsonable, dtype_name, tensor_record, packed_record,
        NATIVE_TEMPLATES, rank)
    graph = GradGraph.from_adjacency(node, succ, pred, roots=sorted(set(root_ids)), title=title)
    if rank:
        graph.set_abs_seq_raw(abs_seq)
    # The core reads most nodes without giving them a Python wrapper, and unwrapped nodes are freed by torch's own
    # iterative deleteNode: only wrapped ones recurse when the graph is freed (_deep_free.py). ``wrapped`` counts
    # every node that has a wrapper, including those user code made before (a walk over next_functions): a plain
    # deep chain captured this way frees on the default stack, one the user walked first gets the guard
    # (tests/test_deep.py).
    make_deep_free_safe(wrapped + len(roots))
    return graph


def python_graph(roots: List[Node], names: Dict[int, str], title: Optional[str], rank: bool,
                 core: Any = None) -> GradGraph:
    """Capture with the pure-Python engine. With ``rank``, ``seq`` is ranked too (by ``core`` when one is given,
    which only speeds the ranking up)."""
    w = walk(roots)
    nodes, edges = build_records(w, names)
    root_ids = sorted({w.index[id(r)] for r in roots})
    n = len(w.order)
    del w
    graph = GradGraph.from_records(nodes, edges, roots=root_ids, title=title)
    if "_input_metadata" in missing_seen():  # torch < 2.5: what the consumers' saved sizes tell
        fill_outputs(graph, {})
    if rank and core is None:
        graph.abs_seq = rank_seq_python(graph.nx._node)
    elif rank:
        finalize_seq(graph, core)
    make_deep_free_safe(n)
    return graph

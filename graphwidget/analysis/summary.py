"""Graph-wide numbers of one graph: what ``GradGraph.summary()`` returns."""
from __future__ import annotations

from collections import Counter
from typing import TYPE_CHECKING, Any, Dict

from .._util.gc import gc_paused
from ..model._digraph import dag_depth, node_dicts

if TYPE_CHECKING:  # pragma: no cover
    from ..model.graph import GradGraph

#: Keys of ``meta["timing"]`` copied into the summary of a profiled graph.
TIMING_KEYS = ("forward_ms", "backward_ms", "unattributed_ms")


def summarise(graph: "GradGraph") -> Dict[str, Any]:
    """Node/edge/root/leaf/custom counts, saved bytes (distinct storages: ``saved_bytes``; views:
    ``saved_bytes_logical``), saved tensors already freed, the bytes of gradients backward writes (``grad_bytes``),
    depth, a histogram of ops (most frequent first) and, for profiled graphs, the timing totals.

    >>> gw.capture((x * w).sum()).summary()["nodes"]     # doctest: +SKIP
    4
    """
    with gc_paused():
        return _summarise(graph)


def _summarise(graph: "GradGraph") -> Dict[str, Any]:
    g = graph.nx
    ops: Counter = Counter()
    leaves = custom = freed = 0
    logical = grad = 0
    storages: Dict[Any, int] = {}
    for d in node_dicts(g).values():
        ops[d["op"]] += 1
        grad += d.get("grad_bytes") or 0
        kind = d.get("kind")
        if kind == "leaf":
            leaves += 1
        elif kind == "custom":
            custom += 1
        for s in d.get("saved") or ():
            if s.get("freed"):
                freed += 1
                continue
            logical += s.get("bytes") or 0
            key = s.get("storage")
            storages[("anon", id(s)) if key is None else key] = s.get("storage_bytes") or 0
    out: Dict[str, Any] = {
        "nodes": g.number_of_nodes(),
        "edges": g.number_of_edges(),
        "roots": len(graph.meta.get("roots") or ()),
        "leaves": leaves,
        "custom": custom,
        "saved_tensors_freed": freed,
        "saved_bytes": sum(storages.values()),
        "saved_bytes_logical": logical,
        "grad_bytes": grad,
        "depth": dag_depth(g),
        "ops": dict(sorted(ops.items(), key=lambda kv: (-kv[1], kv[0]))),
    }
    timing = graph.meta.get("timing")
    if timing:
        for k in TIMING_KEYS:
            out[k] = timing.get(k)
    return out

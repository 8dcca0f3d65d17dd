"""Graph-wide numbers of one graph: what ``GradGraph.summary()`` returns."""
from __future__ import annotations

from collections import Counter
from typing import TYPE_CHECKING, Any, Dict, Iterable, Tuple

from .._util.gc import gc_paused
from ..model._digraph import dag_depth, node_dicts

if TYPE_CHECKING:  # pragma: no cover
    from ..model.graph import GradGraph

#: Keys of ``meta["timing"]`` copied into the summary of a profiled graph.
TIMING_KEYS = ("forward_ms", "backward_ms", "unattributed_ms")


def summarise(graph: "GradGraph") -> Dict[str, Any]:
    """Node/edge/root/leaf/custom counts, saved bytes (distinct storages: ``saved_bytes``; views:
    ``saved_bytes_logical``) split into ``saved_parameter_bytes`` (storages of the graph's leaves: weights a
    matmul or conv saved) and ``saved_activation_bytes`` (the rest: what the forward computed), saved tensors
    already freed, packed by saved-tensor hooks (``saved_tensors_packed``: checkpointing; not held, so not in the
    bytes) and stale (``saved_tensors_stale``: modified in place after the forward, so backward would fail), the bytes
    of gradients backward writes (``grad_bytes``), depth, a histogram of ops (most frequent first) and, for
    profiled graphs, the timing totals.

    >>> gw.capture((x * w).sum()).summary()["nodes"]     # doctest: +SKIP
    4
    """
    with gc_paused():
        return _summarise(graph)


_FIELDS = ("op", "grad_bytes", "kind", "tensor", "saved")


def _grouped(graph: "GradGraph") -> Iterable[Tuple[Tuple[Any, ...], int]]:
    """The :data:`_FIELDS` of the nodes, as ``(values, how many nodes have them)``: each node once from the networkx
    graph, or each distinct combination once with its count from the columns of a graph read from a file (no
    networkx graph built)."""
    held = graph.held
    if held is None:
        return (((d["op"], d.get("grad_bytes"), d.get("kind"), d.get("tensor"), d.get("saved")), 1)
                for d in node_dicts(graph.nx).values())
    coded = [held.coded(k) for k in _FIELDS]
    tables = [values for _, values in coded]
    counts = Counter(zip(*[codes for codes, _ in coded]))
    return ((tuple(t[c] for t, c in zip(tables, key)), k) for key, k in counts.items())


def _summarise(graph: "GradGraph") -> Dict[str, Any]:
    held = graph.held
    ops: Counter = Counter()
    leaves = custom = freed = packed = stale = 0
    logical = grad = 0
    storages: Dict[Any, int] = {}
    leaf_storages = set()
    for (op, grad_bytes, kind, tensor, saved), k in _grouped(graph):
        ops[op] += k
        grad += (grad_bytes or 0) * k
        if kind == "leaf":
            leaves += k
            if tensor and tensor.get("storage") is not None:
                leaf_storages.add(tensor["storage"])
        elif kind == "custom":
            custom += k
        for s in saved or ():
            if s.get("freed"):
                freed += k
                continue
            if s.get("packed"):
                packed += k
                continue
            if s.get("stale"):
                stale += k  # still held (the graph keeps it), so it counts in the bytes too
            logical += (s.get("bytes") or 0) * k
            key = s.get("storage")
            storages[("anon", id(s)) if key is None else key] = s.get("storage_bytes") or 0
    parameter = sum(b for k, b in storages.items() if k in leaf_storages)
    total = sum(storages.values())
    out: Dict[str, Any] = {
        "nodes": held.n if held is not None else graph.nx.number_of_nodes(),
        "edges": held.m if held is not None else graph.nx.number_of_edges(),
        "roots": len(graph.meta.get("roots") or ()),
        "leaves": leaves,
        "custom": custom,
        "saved_tensors_freed": freed,
        "saved_tensors_packed": packed,
        "saved_tensors_stale": stale,
        "saved_bytes": total,
        "saved_activation_bytes": total - parameter,
        "saved_parameter_bytes": parameter,
        "saved_bytes_logical": logical,
        "grad_bytes": grad,
        "depth": held.depth() if held is not None else dag_depth(graph.nx),
        "ops": dict(sorted(ops.items(), key=lambda kv: (-kv[1], kv[0]))),
    }
    timing = graph.meta.get("timing")
    if timing:
        for key in TIMING_KEYS:
            out[key] = timing.get(key)
    return out

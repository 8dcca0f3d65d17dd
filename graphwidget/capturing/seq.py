"""Autograd sequence numbers: the thread-local counter autograd numbers nodes with as it creates them.

``next_seq()`` reads the number the next node will get (a plain counter read, cheap enough to bracket every torch
call); bracketing a call with it gives exactly the nodes that call created. It is private torch API, so it may be
``None`` on a torch without it.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any, Dict

if TYPE_CHECKING:  # pragma: no cover
    from ..model.graph import GradGraph

try:
    from torch._C._autograd import _get_sequence_nr as next_seq
except ImportError:  # pragma: no cover - older torch
    next_seq = None  # type: ignore[assignment]

#: AccumulateGrad (and some graph-root nodes) report UINT64_MAX: anything at or above this is "no number".
NO_SEQ = 2**63


def finalize_seq(graph: "GradGraph", core: Any = None) -> "GradGraph":
    """Replace torch's absolute sequence numbers by their rank within the graph (creation order 0, 1, ...).

    Absolute numbers come from a process-wide counter, so the same program captured twice would differ; ranks
    keep the order and make captures comparable. The absolute numbers stay available, unserialised, in
    ``graph.abs_seq`` (node id -> number) for matching against ``torch.profiler`` events. ``core``: the compiled
    core (:func:`graphwidget.capturing.native.engine.core`), which ranks the same way, faster; ``None``: Python.
    """
    attrs = graph.nx._node  # the node attribute dicts themselves: no view objects per node
    if core is not None:
        try:
            graph.abs_seq = core.rank_seq(attrs)
            return graph
        except core.Unsupported:
            pass  # a seq that is not a plain int (hand-made graph): the general version below
    graph.abs_seq = rank_seq_python(attrs)
    return graph


def rank_seq_python(attrs: Dict[Any, Dict[str, Any]]) -> Dict[Any, int]:
    """Pure-Python :func:`finalize_seq` on node attribute dicts: ranks written in place, absolute numbers returned."""
    abs_seq = {n: d["seq"] for n, d in attrs.items() if d.get("seq") is not None}
    # Pre-order visits a chain newest-first, so this is mostly one descending run: timsort is ~linear on it.
    for rank, n in enumerate(sorted(abs_seq, key=abs_seq.__getitem__)):
        attrs[n]["seq"] = rank
    return abs_seq

"""What is alive at each step of the forward and the backward, from the graph (torch-free): the saved storages with
the forward op that first saved them and the backward node after which they are freed, each gradient from the node
that writes it to the one that consumes it, the engine's predicted backward order, and the sweeps that sum them per
point. :mod:`graphwidget.analysis.memory` builds the report on it, :mod:`graphwidget.analysis.memory_checkpoints`
the checkpoint candidates. See docs/memory.md.
"""
from __future__ import annotations

from typing import Any, Dict, Iterable, List, Optional, Set, Tuple

from ..model._digraph import node_dicts
from ..model.dtypes import nbytes

_INF = float("inf")


def _edge_bytes(shape: Any, dtype: Any) -> int:
    return nbytes(shape, dtype) or 0


def predicted_backward_order(graph: Any) -> List[int]:
    """The order the autograd engine runs the nodes on one device: a node is ready once every node that consumes
    its output has run; among ready nodes, AccumulateGrad first, then the highest sequence number (the engine's
    priority)."""
    import heapq
    nodes = node_dicts(graph.nx)
    succ, pred = graph.nx.succ, graph.nx.pred
    waiting = {v: len(succ[v]) for v in nodes}

    def key(v: int) -> Tuple[int, int, int]:
        d = nodes[v]
        return (0 if d.get("kind") == "leaf" else 1, -(d.get("seq") or 0), v)

    heap = [key(v) for v in nodes if waiting[v] == 0]
    heapq.heapify(heap)
    out: List[int] = []
    while heap:
        v = heapq.heappop(heap)[2]
        out.append(v)
        for u in pred[v]:
            waiting[u] -= 1
            if waiting[u] == 0:
                heapq.heappush(heap, key(u))
    return out


def _padded(values: Any, n: int) -> List[Any]:
    vals = list(values or [])
    return (vals + [None] * n)[:n]


def has_memory(graph: Any) -> bool:
    """Whether the graph carries a memory record (``gw.profile(..., memory=True)``)."""
    return isinstance(graph.meta.get("memory"), dict)


def _in(module: Optional[str], path: str) -> bool:
    if module is None:
        return False
    return path == "" or module == path or module.startswith(path + ".")


class Storage:
    """One storage the graph saves: its bytes, whether it is a parameter's, the nodes that save it, and the points
    between which the graph keeps it (``start`` inclusive, ``end`` exclusive)."""

    __slots__ = ("sid", "bytes", "parameter", "savers", "start", "end")

    def __init__(self, sid: Any, nbytes: int, parameter: bool) -> None:
        self.sid, self.bytes, self.parameter = sid, nbytes, parameter
        self.savers: List[int] = []
        self.start, self.end = 0, _INF


class Accounting:
    """The graph's side of the timeline: per point, saved activation bytes and gradient bytes alive, and the
    intervals of every storage and gradient (so a peak can list its holders and a checkpoint can be simulated)."""

    def __init__(self, graph: Any) -> None:
        mem = graph.meta["memory"]
        self.graph = graph
        self.nodes = node_dicts(graph.nx)
        self.point_nodes: List[int] = list(mem.get("nodes") or [])
        self.forward_points = int(mem.get("forward_points") or 0)
        nodes = self.nodes
        #: No backward ran (gw.trace): its points follow the engine's order predicted from sequence numbers.
        self.predicted_backward = not mem.get("backward") and len(self.point_nodes) == self.forward_points
        if self.predicted_backward:
            self.point_nodes += predicted_backward_order(graph)
        self.n = len(self.point_nodes)
        # Backward position of each node: the point after which it has run.
        self.bpos: Dict[int, int] = {}
        for p in range(self.forward_points, self.n):
            self.bpos.setdefault(self.point_nodes[p], p)
        fseq = [nodes.get(v, {}).get("seq") for v in self.point_nodes[:self.forward_points]]
        self._fseq = [s if s is not None else -1 for s in fseq]
        leaf_storages: Set[Any] = set()
        self.parameter_bytes = 0
        for d in nodes.values():
            t = d.get("tensor")
            if d.get("kind") == "leaf" and t:
                if t.get("storage") is not None:
                    leaf_storages.add(t["storage"])
                if t.get("requires_grad", True):
                    self.parameter_bytes += t.get("storage_bytes") or t.get("bytes") or 0
        self.storages: Dict[Any, Storage] = {}
        for v in sorted(nodes, key=lambda v: (nodes[v].get("seq") is None, nodes[v].get("seq") or 0, v)):
            for s in nodes[v].get("saved") or ():
                if s.get("freed") or s.get("packed") or s.get("storage") is None:
                    continue
                st = self.storages.get(s["storage"])
                if st is None:
                    st = self.storages[s["storage"]] = Storage(s["storage"], s.get("storage_bytes") or 0,
                                                               s["storage"] in leaf_storages)
                if v not in st.savers:
                    st.savers.append(v)
        for st in self.storages.values():
            st.start = self._forward_point(nodes[st.savers[0]].get("seq"))
            ends = [self.bpos.get(v) for v in st.savers]
            st.end = _INF if any(e is None for e in ends) else float(max(e for e in ends if e is not None))
        # Gradients: one buffer per (node, output) that some consumer writes into.
        self.grads: Dict[Tuple[int, int], List[Any]] = {}  # key -> [bytes, start, end]
        for u, v, e in graph.nx.edges(data=True):
            for c in [e] + list(e.get("also") or ()):
                key = (u, c.get("output") or 0)
                b = _edge_bytes(c.get("shape"), c.get("dtype"))
                w = self.bpos.get(v, _INF)
                leaf = nodes[u].get("kind") == "leaf"
                end = _INF if leaf else self.bpos.get(u, _INF)
                g = self.grads.get(key)
                if g is None:
                    self.grads[key] = [b, w, end]
                else:
                    g[0] = max(g[0], b)
                    g[1] = min(g[1], w)
        # The roots' own gradient (ones): alive from the start of the backward until the root has run.
        for r in graph.meta.get("roots") or ():
            outs = nodes.get(r, {}).get("outputs") or []
            for k, o in enumerate(outs):
                if o:
                    self.grads[(r, -1 - k)] = [_edge_bytes(o.get("shape"), o.get("dtype")), self.forward_points,
                                               self.bpos.get(r, _INF)]
        self.saved = self._sweep((st.bytes, st.start, st.end) for st in self.storages.values() if not st.parameter)
        self.saved_parameters = self._sweep((st.bytes, st.start, st.end) for st in self.storages.values()
                                            if st.parameter)
        self.gradients = self._sweep((g[0], g[1], g[2]) for g in self.grads.values())

    def _forward_point(self, seq: Optional[int]) -> int:
        """The first forward point whose node was created at or after ``seq`` (the op that saved it)."""
        if seq is None:
            return 0
        import bisect
        # forward points are in creation order, so their seqs increase (-1 for an unknown node keeps its place)
        i = bisect.bisect_left(self._fseq, seq)
        return min(i, max(self.forward_points - 1, 0))

    def _sweep(self, intervals: Iterable[Tuple[int, Any, Any]]) -> List[int]:
        diff = [0] * (self.n + 1)
        for b, a, e in intervals:
            if not b or a == _INF or a >= self.n:
                continue
            a = max(int(a), 0)
            diff[a] += b
            if e != _INF and e < self.n:
                diff[int(e)] -= b
        out, run = [], 0
        for p in range(self.n):
            run += diff[p]
            out.append(run)
        return out

    def alive_storages(self, p: int) -> List[Storage]:
        return [st for st in self.storages.values() if st.start <= p < st.end]

    def alive_grads(self, p: int) -> List[Tuple[Tuple[int, int], int]]:
        return [(k, g[0]) for k, g in self.grads.items() if g[0] and g[1] <= p < g[2]]

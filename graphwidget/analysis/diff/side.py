"""One graph as the matcher reads it (:mod:`graphwidget.analysis.diff.match`): arrays indexed by position (node ids
sorted), built in one pass over the graph — ops, output shapes, each node's inputs in slot order, its consumers, an
interned label shared by both sides, the leaves and an inputs-first order. What only the extension asks (neighbour
sets, names, source lines, where a node's output goes) is read lazily. Torch-free.
"""
from __future__ import annotations

import operator
from operator import itemgetter
from typing import TYPE_CHECKING, Any, Dict, List, Optional, Tuple

from ...model._digraph import adjacency

if TYPE_CHECKING:  # pragma: no cover
    from ...model.graph import GradGraph

_Sig = Tuple[Tuple[int, int], ...]  # a node's inputs' (slot, output), in slot order


class Side:
    """One graph as arrays indexed by position (node ids sorted): what the phases read, built in one pass. Facts
    only the extension needs (neighbour sets, names, source lines, where a node's output goes) are read lazily."""

    __slots__ = ("ids", "n", "recs", "op", "shape", "label", "pin", "sig", "ups", "downs", "leaves", "leaf_names",
                 "_succs", "_nbrs", "roots", "order", "rank", "_by_op")

    def __init__(self, graph: "GradGraph", labels: Dict[Any, int]) -> None:
        node, _, pred = adjacency(graph.nx)
        ids = list(node)
        n = len(ids)
        # captured and loaded graphs: ids 0..n-1 in order, positions are ids
        identity = all(map(operator.eq, ids, range(n)))
        if not identity:
            ids.sort()
        pos: Any = None if identity else {i: k for k, i in enumerate(ids)}
        self.ids, self.n = ids, n
        recs = self.recs = [node[i] for i in ids]
        op: List[str] = []
        shape: List[Tuple[Any, ...]] = []
        # A node's inputs are two tuples, in slot order: `pin`, the input positions, and `sig`, the (slot, output)
        # of each, interned (a handful of distinct ones): one small object per node rather than a tuple per edge.
        pin: List[Tuple[int, ...]] = []
        sig: List[Tuple[Tuple[int, int], ...]] = []
        ups: List[Tuple[int, ...]] = []  # distinct pred positions, in the graph's order
        downs: List[List[int]] = [[] for _ in range(n)]  # distinct consumer positions
        label: List[int] = []  # interned (op, shapes, sig) -- or a leaf's name -- shared by both sides
        leaves: List[int] = []  # AccumulateGrad nodes without inputs, and their names
        leaf_names: List[Optional[str]] = []
        sigs: Dict[_Sig, _Sig] = {}  # interned signatures
        # (slot, output, also) of each edge record in the graph's order -> the signature in slot order and the
        # permutation to it (None: already in order), or (None, None) when two records share a slot or one has other
        # uses (the general path sorts)
        orders: Dict[Tuple[Any, ...], Tuple[Optional[_Sig], Optional[Tuple[int, ...]]]] = {}
        fields = _EDGE_FIELDS
        add_op, add_shape, add_pin, add_sig, add_ups, add_label = (op.append, shape.append, pin.append, sig.append,
                                                                 ups.append, label.append)
        intern = labels.setdefault
        shape_of: Dict[Tuple[Any, ...], Tuple[Any, ...]] = {}
        shapes = shape_of.setdefault
        for k, d in enumerate(recs):
            o = d.get("op") or "?"
            add_op(o)
            outs = d.get("outputs")
            if not outs:
                sh: Tuple[Any, ...] = ()
            elif len(outs) == 1:
                x = outs[0]
                t = x.get("shape") if isinstance(x, dict) else None
                sh = (tuple(t),) if isinstance(t, list) else (None,)
            else:
                sh = tuple(_shape(x) for x in outs)
            sh = shapes(sh, sh)  # one object per distinct shape: a big graph has a handful
            add_shape(sh)
            pd = pred[ids[k]]
            if not pd:
                add_pin(())
                add_sig(())
                add_ups(())
                t = d.get("tensor")
                name = t.get("name") if isinstance(t, dict) else None
                if o == "AccumulateGrad":
                    leaves.append(k)
                    leaf_names.append(name)
                add_label(intern((o, sh, name), len(labels)))
                continue
            if len(pd) == 1:  # most nodes: one input
                ((u, e),) = pd.items()
                p = u if identity else pos[u]
                downs[p].append(k)
                up = (p,)
                # each edge record's (slot, output, also), read in one call: a pattern (a handful of distinct ones)
                # gives the signature in slot order and the permutation to it
                try:
                    raw: Tuple[Any, ...] = (fields(e),)
                    got = orders.get(raw)
                except (KeyError, TypeError):  # a record without one of them, or with other uses (a list)
                    got = _GENERAL
            else:
                up = tuple(pd) if identity else tuple([pos[u] for u in pd])
                for p in up:
                    downs[p].append(k)
                try:
                    raw = tuple(map(fields, pd.values()))
                    got = orders.get(raw)
                except (KeyError, TypeError):
                    got = _GENERAL
            if got is None:
                got = orders[raw] = _in_slot_order(raw, sigs)
            g, perm = got
            if g is not None:  # one record per input and no two on one slot (the usual case)
                add_ups(up)
                add_pin(up if perm is None else tuple([up[i] for i in perm]))
                add_sig(g)
                add_label(intern((o, sh, g), len(labels)))
                continue
            plist: List[Tuple[int, int, int]] = []
            for u, e in pd.items():
                p = u if identity else pos[u]
                plist.append((e.get("slot") or 0, e.get("output") or 0, p))
                also = e.get("also")
                if also:
                    plist.extend((x.get("slot") or 0, x.get("output") or 0, p) for x in also if isinstance(x, dict))
            plist.sort()
            key = tuple([(a, b) for a, b, _ in plist])
            add_ups(up)
            add_pin(tuple([c for _, _, c in plist]))
            gk = sigs.setdefault(key, key)
            add_sig(gk)
            add_label(intern((o, sh, gk), len(labels)))
        self.leaves, self.leaf_names = leaves, leaf_names
        self.op, self.shape, self.label, self.pin, self.sig = op, shape, label, pin, sig
        self.ups, self.downs = ups, downs
        self._succs: Dict[int, Tuple[Tuple[int, int], ...]] = {}
        self._nbrs: List[Optional[Tuple[int, ...]]] = [None] * n
        roots = graph.meta.get("roots") or []
        if identity:
            found = [r for r in roots if type(r) is int and 0 <= r < n]
        else:
            found = [pos[r] for r in roots if r in pos]
        self.roots = found or [k for k in range(n) if not downs[k]]
        self.order = _topological(ups, downs, n)
        rank = [0] * n  # position in the inputs-first order
        for r, k in enumerate(self.order):
            rank[k] = r
        self.rank = rank
        self._by_op: Dict[int, Dict[str, List[int]]] = {}

    def succs(self, k: int) -> Tuple[Tuple[int, int], ...]:
        """``(slot it feeds, consumer position)`` for every use of ``k``'s output (cached: only the unmatched part
        and the matched pairs next to it ask)."""
        v = self._succs.get(k)
        if v is None:
            pin, sig = self.pin, self.sig
            out = []
            for c in self.downs[k]:
                pc = pin[c]
                if len(pc) == 1:
                    out.append((sig[c][0][0], c))
                else:
                    out.extend((sc[0], c) for sc, p in zip(sig[c], pc) if p == k)
            v = self._succs[k] = tuple(out)
        return v

    def nbrs(self, k: int) -> Tuple[int, ...]:
        """Distinct neighbours of ``k`` (inputs, then consumers)."""
        v = self._nbrs[k]
        if v is None:
            v = self._nbrs[k] = tuple(dict.fromkeys([*self.ups[k], *self.downs[k]]))
        return v

    def name(self, k: int) -> Optional[str]:
        t = self.recs[k].get("tensor")
        return t.get("name") if isinstance(t, dict) else None

    def dtype(self, k: int) -> Optional[str]:
        d = self.recs[k]
        outs = d.get("outputs") or ()
        first = outs[0] if outs and isinstance(outs[0], dict) else d.get("tensor")
        return first.get("dtype") if isinstance(first, dict) else None

    def seq(self, k: int) -> int:
        s = self.recs[k].get("seq")
        return s if isinstance(s, int) else -1

    def source(self, k: int) -> Optional[str]:
        return self.recs[k].get("source")

    def code(self, k: int) -> Optional[str]:
        return self.recs[k].get("code")

    def neighbours_with_op(self, k: int, op: str) -> List[int]:
        """Neighbours of ``k`` whose op is ``op`` (cached per node: used for high fan-out nodes only)."""
        table = self._by_op.get(k)
        if table is None:
            table = {}
            for v in self.nbrs(k):
                table.setdefault(self.op[v], []).append(v)
            self._by_op[k] = table
        return table.get(op, [])


def _in_slot_order(raw: Tuple[Any, ...], sigs: Dict[_Sig, _Sig]) -> Tuple[Optional[_Sig], Optional[Tuple[int, ...]]]:
    """For edge records with these (slot, output, also) in the graph's order: the interned signature in slot order
    and the permutation that sorts the inputs (None when already sorted); (None, None) when two records tie or one
    has other uses (``also``)."""
    if any(also for _, _, also in raw):
        return _GENERAL
    key = tuple([(slot or 0, output or 0) for slot, output, _ in raw])
    if len(set(key)) != len(key):
        return _GENERAL
    perm = sorted(range(len(key)), key=key.__getitem__)
    g = tuple([key[i] for i in perm])
    return sigs.setdefault(g, g), (None if perm == list(range(len(key))) else tuple(perm))


#: What the fast path of :class:`Side` reads from an edge record.
_EDGE_FIELDS = itemgetter("slot", "output", "also")
#: :func:`_in_slot_order` for records the general path reads.
_GENERAL: Tuple[None, None] = (None, None)


def _shape(o: Any) -> Optional[Tuple[int, ...]]:
    if isinstance(o, dict) and isinstance(o.get("shape"), list):
        return tuple(o["shape"])
    return None


def _topological(ups: List[Tuple[int, ...]], downs: List[List[int]], n: int) -> List[int]:
    """Positions inputs-first (Kahn; ties by position, so the order is deterministic)."""
    indeg = [len(u) for u in ups]
    ready = [k for k in range(n - 1, -1, -1) if not indeg[k]]
    out: List[int] = []
    push, pop, emit = ready.append, ready.pop, out.append
    while ready:
        k = pop()
        emit(k)
        for c in downs[k]:
            indeg[c] -= 1
            if not indeg[c]:
                push(c)
    if len(out) != n:  # pragma: no cover - validated graphs are acyclic
        raise ValueError("graphwidget.diff: the graph has a cycle; an autograd graph is acyclic.")
    return out

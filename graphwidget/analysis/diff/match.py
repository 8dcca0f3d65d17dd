"""Which node of graph A is which node of graph B: GumTree's phases adapted to autograd DAGs (``docs/diff.md``).

1. **Anchors** — the roots (one each: paired whatever they are; several: same op and shapes, in order); leaves with
   leaves of the same name (``compare`` names inputs by argument position or keyword, parameters by their module
   path), else unnamed leaves of the same shape and dtype in order when both graphs have as many of them.
2. **Identical sub-DAGs** — a structural hash of what flows *in* (op, output shapes, the hashes of the inputs in slot
   order, a leaf's name), computed from the leaves up; pairs whose hash is unique in both graphs are matched, largest
   sub-DAG first, and each match spreads to its inputs (identical by construction, even where not unique).
3. **Extension**, in rounds until nothing changes:

   a. *anchored hashes* — the hash of where a node's output *goes* (op, shapes, its consumers' hashes and the slots
      it feeds), computed from the roots down, then the input hash again, both with every matched pair as an anchor
      (a matched node hashes to its pair), so only the unmatched part is hashed and an edit near a root or a leaf
      does not change every hash behind it; unique pairs match and spread as in 2;
   b. *chains* — below a matched pair, the same input slot leads on both sides to unmatched nodes: they are matched
      in step while their ops agree; where they part, the two chains of single-input nodes (up to
      :data:`CHAIN_MAX`) are aligned by the longest common subsequence of their ops when both end at the same
      matched node (an inserted ``unsqueeze`` or a removed ``repeat`` leaves the rest of the chain matched; among
      the longest, the pairs agreeing on most attributes; chains of different lengths are aligned whole, not in
      step);
   c. when (a) and (b) find nothing: *Dice* — an unmatched node next to matched ones is matched to the unmatched
      node of the same op with the highest share of matched neighbours in common (``2·common / (|N(a)| + |N(b)|)
      ≥`` :data:`MIN_DICE`); ties go to the same source line (or code), then to creation order (``seq``).
4. The rest is removed (only in A) or added (only in B).

Everything is deterministic: hashes are interned to small integers in a table shared by both graphs (no Python
``hash()``, which is salted per process), and every choice is ordered by node positions. Time and memory are linear
in nodes + edges per round, apart from the bounded chain alignment and the fan-out cap (:data:`FANOUT_CAP`); the
rounds after the first touch only the unmatched part. Torch-free: works on graphs read back with ``load_json``.
"""
from __future__ import annotations

import heapq
from typing import TYPE_CHECKING, Any, Dict, List, Optional, Sequence, Tuple

from ..._util.gc import gc_paused
from ...model._digraph import adjacency

if TYPE_CHECKING:  # pragma: no cover
    from ...model.graph import GradGraph

#: Smallest Dice score (share of matched neighbours in common) at which the extension matches two nodes. 0.3 lets a
#: node with one matched neighbour out of three on each side stay unmatched while a chain link (one of two) matches.
MIN_DICE = 0.3
#: Longest chain of single-input nodes aligned at once (the alignment is quadratic in it).
CHAIN_MAX = 64
#: How many unmatched same-op neighbours of one high fan-out node are looked at per candidate search.
FANOUT_CAP = 64
#: How many times a node whose best candidate was taken looks for another one.
_RETRIES = 4

PHASES = ("anchor", "hash-up", "hash-down", "chain", "dice")


class _Side:
    """One graph as arrays indexed by position (node ids sorted): what the phases read, built in one pass. Facts
    only the extension needs (neighbour sets, names, source lines) are read lazily from the node records."""

    __slots__ = ("ids", "n", "recs", "op", "shape", "preds", "ups", "downs", "succs", "_nbrs", "roots", "order",
                 "_by_op")

    def __init__(self, graph: "GradGraph") -> None:
        node, _, pred = adjacency(graph.nx)
        ids = list(node)
        n = len(ids)
        identity = ids == list(range(n))  # captured and loaded graphs: ids 0..n-1 in order, positions are ids
        if not identity:
            ids.sort()
        pos: Any = None if identity else {i: k for k, i in enumerate(ids)}
        self.ids, self.n = ids, n
        recs = self.recs = [node[i] for i in ids]
        op: List[str] = []
        shape: List[Tuple[Any, ...]] = []
        preds: List[List[Tuple[int, int, int]]] = []  # (slot, output, pred position), by slot
        ups: List[List[int]] = []  # distinct pred positions
        downs: List[List[int]] = [[] for _ in range(n)]  # distinct consumer positions
        succs: List[List[Tuple[int, int]]] = [[] for _ in range(n)]  # (slot it feeds, consumer position)
        add_op, add_shape, add_preds, add_ups = op.append, shape.append, preds.append, ups.append
        for k, d in enumerate(recs):
            add_op(d.get("op") or "?")
            outs = d.get("outputs")
            if not outs:
                add_shape(())
            elif len(outs) == 1:
                o = outs[0]
                sh = o.get("shape") if isinstance(o, dict) else None
                add_shape((tuple(sh),) if isinstance(sh, list) else (None,))
            else:
                add_shape(tuple(_shape(o) for o in outs))
            pd = pred[ids[k]]
            if not pd:
                add_preds([])
                add_ups([])
                continue
            plist: List[Tuple[int, int, int]] = []
            up: List[int] = []
            for u, e in pd.items():
                p = u if identity else pos[u]
                up.append(p)
                downs[p].append(k)
                plist.append((e.get("slot") or 0, e.get("output") or 0, p))
                also = e.get("also")
                if also:
                    plist.extend((x.get("slot") or 0, x.get("output") or 0, p) for x in also if isinstance(x, dict))
            if len(plist) > 1:
                plist.sort()
            add_preds(plist)
            add_ups(up)
            for slot, _, p in plist:
                succs[p].append((slot, k))
        self.op, self.shape, self.preds, self.ups, self.downs, self.succs = op, shape, preds, ups, downs, succs
        self._nbrs: List[Optional[Tuple[int, ...]]] = [None] * n
        roots = graph.meta.get("roots") or []
        have = set(ids)
        self.roots = ([r if identity else pos[r] for r in roots if r in have]
                      or [k for k in range(n) if not downs[k]])
        self.order = _topological(ups, downs, n)
        self._by_op: Dict[int, Dict[str, List[int]]] = {}

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


def _shape(o: Any) -> Optional[Tuple[int, ...]]:
    if isinstance(o, dict) and isinstance(o.get("shape"), list):
        return tuple(o["shape"])
    return None


def _topological(ups: List[List[int]], downs: List[List[int]], n: int) -> List[int]:
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


class Matching:
    """The result of :func:`match`: pairs of node ids, what is only in A / only in B, and how each pair was found."""

    def __init__(self, A: _Side, B: _Side) -> None:
        self.A, self.B = A, B
        self.ab = [-1] * A.n
        self.ba = [-1] * B.n
        self.how: List[Optional[str]] = [None] * A.n
        self.count = 0

    def add(self, a: int, b: int, how: str) -> None:
        self.ab[a], self.ba[b], self.how[a] = b, a, how
        self.count += 1

    @property
    def pairs(self) -> List[Tuple[int, int]]:
        """``(a_id, b_id)`` for every matched pair, by A's id."""
        ia, ib = self.A.ids, self.B.ids
        return [(ia[a], ib[b]) for a, b in enumerate(self.ab) if b >= 0]

    @property
    def removed(self) -> List[int]:
        return [self.A.ids[a] for a, b in enumerate(self.ab) if b < 0]

    @property
    def added(self) -> List[int]:
        return [self.B.ids[b] for b, a in enumerate(self.ba) if a < 0]

    def phases(self) -> Dict[int, str]:
        """A's id -> the phase that matched it (:data:`PHASES`), for explanations and tests."""
        return {self.A.ids[a]: h for a, h in enumerate(self.how) if h is not None}


def match(graph_a: "GradGraph", graph_b: "GradGraph") -> Matching:
    """Match the nodes of two graphs (see the module docstring and ``docs/diff.md``)."""
    with gc_paused():
        A, B = _Side(graph_a), _Side(graph_b)
        m = Matching(A, B)
        _anchor_roots(m)
        _anchor_leaves(m)
        height, depth = _ranks(A)
        table: Dict[Any, int] = {}
        _identical(m, _hash_up(A, table), _hash_up(B, table), height, "hash-up", _spread_up, "up")
        _extend(m, height, depth)
    return m


# -- 1. anchors ---------------------------------------------------------------------------------------------------
def _anchor_roots(m: Matching) -> None:
    """One root each: they are the outputs, paired whatever they are. Several: pair those of the same op and output
    shapes, in order, where both graphs have as many of that kind (the rest is left to the hashes)."""
    A, B = m.A, m.B
    if len(A.roots) == 1 and len(B.roots) == 1:
        pairs = [(A.roots[0], B.roots[0])]
    else:
        groups: Dict[Any, Tuple[List[int], List[int]]] = {}
        for r in A.roots:
            groups.setdefault((A.op[r], A.shape[r]), ([], []))[0].append(r)
        for r in B.roots:
            g = groups.get((B.op[r], B.shape[r]))
            if g is not None:
                g[1].append(r)
        pairs = [p for ra, rb in groups.values() if len(ra) == len(rb) for p in zip(ra, rb)]
    for a, b in pairs:
        if m.ab[a] < 0 and m.ba[b] < 0:
            m.add(a, b, "anchor")


def _leaves(side: _Side) -> List[int]:
    return [k for k in range(side.n) if not side.ups[k] and side.op[k] == "AccumulateGrad"]


def _anchor_leaves(m: Matching) -> None:
    A, B = m.A, m.B
    la, lb = _leaves(A), _leaves(B)
    name_a, name_b = {k: A.name(k) for k in la}, {k: B.name(k) for k in lb}
    named_b: Dict[str, List[int]] = {}
    for k in lb:
        nb = name_b[k]
        if nb:
            named_b.setdefault(nb, []).append(k)
    named_a: Dict[str, List[int]] = {}
    for k in la:
        na = name_a[k]
        if na:
            named_a.setdefault(na, []).append(k)
    for name, ks in named_a.items():
        other = named_b.get(name)
        if len(ks) == 1 and other and len(other) == 1 and m.ba[other[0]] < 0:
            m.add(ks[0], other[0], "anchor")
    # Unnamed leaves: same shape and dtype, in order, when both graphs have as many of that kind.
    groups: Dict[Any, Tuple[List[int], List[int]]] = {}
    for k in la:
        if not name_a[k] and m.ab[k] < 0:
            groups.setdefault((A.shape[k], A.dtype(k)), ([], []))[0].append(k)
    for k in lb:
        if not name_b[k] and m.ba[k] < 0:
            g = groups.get((B.shape[k], B.dtype(k)))
            if g is not None:
                g[1].append(k)
    for ka, kb in groups.values():
        if len(ka) == len(kb):
            for a, b in zip(ka, kb):
                m.add(a, b, "anchor")


# -- 2. identical sub-DAGs ----------------------------------------------------------------------------------------
def _hash_up(side: _Side, table: Dict[Any, int], anchor: Optional[List[int]] = None) -> List[int]:
    """Interned hash of each node's input sub-DAG (op, shapes, inputs' hashes by slot; leaves add their name).

    With ``anchor`` (``anchor[k]``: the pair number of a matched node, the same on both sides; -1 when unmatched) a
    matched node hashes to ``-1 - anchor[k]`` and only the unmatched nodes are hashed: after the first phases that is
    a small part of the graph."""
    op, shape, preds = side.op, side.shape, side.preds
    intern = table.setdefault
    if anchor is None:
        h = [0] * side.n
        order = side.order
    else:
        h = [-1 - x for x in anchor]
        order = [k for k in side.order if anchor[k] < 0]
    for k in order:
        pl = preds[k]
        if pl:
            key: Any = (op[k], shape[k], tuple([(s, o, h[p]) for s, o, p in pl]))
        else:
            key = (op[k], shape[k], side.name(k))
        h[k] = intern(key, len(table))
    return h


def _hash_down(side: _Side, table: Dict[Any, int], anchor: Optional[List[int]] = None) -> List[int]:
    """Interned hash of where each node's output goes (op, shapes, consumers' hashes with the slots fed); ``anchor``
    as in :func:`_hash_up`."""
    op, shape, succs = side.op, side.shape, side.succs
    intern = table.setdefault
    if anchor is None:
        h = [0] * side.n
        order = side.order[::-1]
    else:
        h = [-1 - x for x in anchor]
        order = [k for k in reversed(side.order) if anchor[k] < 0]
    for k in order:
        sc = succs[k]
        key = (op[k], shape[k], tuple(sorted([(s, h[c]) for s, c in sc])) if len(sc) > 1 else
               ((sc[0][0], h[sc[0][1]]),) if sc else ())
        h[k] = intern(key, len(table))
    return h


def _ranks(side: _Side) -> Tuple[List[int], List[int]]:
    """Sizes to order unique pairs by, largest first: for input sub-DAGs, the position in inputs-first order (a node
    comes after everything flowing into it); for consumer cones, the position in the reverse order."""
    up = [0] * side.n
    for r, k in enumerate(side.order):
        up[k] = r
    down = [side.n - 1 - r for r in up]
    return up, down


def _identical(m: Matching, ha: List[int], hb: List[int], size: List[int], how: str, spread: Any,
               direction: str) -> None:
    """Match the unmatched pairs whose hash is unique in both graphs (largest first) and spread each match along
    its identical sub-DAG; then spread from the matched nodes next to unmatched ones (in ``direction``: ``"up"``
    = towards their inputs, ``"down"`` = towards their consumers), which pairs up identical but non-unique
    neighbours by their place."""
    A, ab, ba = m.A, m.ab, m.ba
    free_a = [k for k, b in enumerate(ab) if b < 0]
    cls_a: Dict[int, List[int]] = {}
    for k in free_a:
        cls_a.setdefault(ha[k], []).append(k)
    cls_b: Dict[int, List[int]] = {}
    for k in [k for k, a in enumerate(ba) if a < 0]:
        cls_b.setdefault(hb[k], []).append(k)
    unique = []
    for h, ks in cls_a.items():
        if len(ks) == 1:
            other = cls_b.get(h)
            if other is not None and len(other) == 1:
                unique.append((-size[ks[0]], ks[0], other[0]))
    unique.sort()
    for _, a, b in unique:
        if ab[a] < 0 and ba[b] < 0:
            m.add(a, b, how)
            spread(m, ha, hb, a, b, how)
    # the matched nodes next to unmatched ones: consumers of unmatched nodes spread up, their inputs spread down
    back = A.downs if direction == "up" else A.ups
    frontier = {x for k in free_a if ab[k] < 0 for x in back[k] if ab[x] >= 0}
    for x in sorted(frontier):
        spread(m, ha, hb, x, ab[x], how)


def _spread_up(m: Matching, ha: List[int], hb: List[int], a: int, b: int, how: str) -> None:
    """Two nodes with the same input hash have the same inputs, slot by slot: match them too."""
    stack = [(a, b)]
    A, B = m.A, m.B
    while stack:
        x, y = stack.pop()
        px, py = A.preds[x], B.preds[y]
        if len(px) != len(py):
            continue
        for (_, _, u), (_, _, v) in zip(px, py):
            if m.ab[u] < 0 and m.ba[v] < 0 and ha[u] == hb[v]:
                m.add(u, v, how)
                stack.append((u, v))


def _spread_down(m: Matching, ha: List[int], hb: List[int], a: int, b: int, how: str) -> None:
    """Two nodes with the same consumer hash feed the same consumers in the same slots: match those too."""
    stack = [(a, b)]
    A, B = m.A, m.B
    while stack:
        x, y = stack.pop()
        cx = sorted((s, ha[c], c) for s, c in A.succs[x])
        cy = sorted((s, hb[c], c) for s, c in B.succs[y])
        if len(cx) != len(cy):
            continue
        for (_, h1, u), (_, h2, v) in zip(cx, cy):
            if h1 == h2 and m.ab[u] < 0 and m.ba[v] < 0:
                m.add(u, v, how)
                stack.append((u, v))


# -- 3. extension -------------------------------------------------------------------------------------------------
def _anchored_hashes(m: Matching, height: List[int], depth: List[int]) -> None:
    """Phase 2 again with every matched pair as an anchor: a node's hash then describes its place relative to the
    nearest matched nodes, so an edit near the root (or a leaf) no longer changes every hash behind it."""
    A, B = m.A, m.B
    for how, hasher, size, spread, direction in (("hash-down", _hash_down, depth, _spread_down, "down"),
                                                 ("hash-up", _hash_up, height, _spread_up, "up")):
        table: Dict[Any, int] = {}
        anchor_a = [k if b >= 0 else -1 for k, b in enumerate(m.ab)]
        _identical(m, hasher(A, table, anchor_a), hasher(B, table, m.ba), size, how, spread, direction)


def _extend(m: Matching, height: List[int], depth: List[int], max_rounds: int = 16) -> None:
    """Anchored hashes and chains while they find pairs (cheap, linear); Dice when they stall; until nothing
    changes."""
    rank = depth  # consumers first: a chain is aligned from its matched upper end
    for _ in range(max_rounds):
        before = m.count
        if before == m.A.n or before == m.B.n:
            return
        _anchored_hashes(m, height, depth)
        for _ in range(max_rounds):
            n0 = m.count
            _chains(m, rank)
            if m.count == n0:
                break
        if m.count == before:
            _dice(m)
            if m.count == before or m.count == m.A.n or m.count == m.B.n:
                return


def _walk_up(side: _Side, matched: List[int], start: int) -> Tuple[List[int], int]:
    """From ``start`` towards the leaves through unmatched single-input nodes: the chain and the matched node that
    ends it (-1 when it ends at a leaf, a node with several inputs, or :data:`CHAIN_MAX`)."""
    chain: List[int] = []
    v = start
    while matched[v] < 0:
        chain.append(v)
        ups = side.ups[v]
        if len(ups) != 1 or len(chain) >= CHAIN_MAX:
            return chain, -1
        v = ups[0]
    return chain, v


def _chains(m: Matching, rank: List[int]) -> None:
    A, B, ab, ba = m.A, m.B, m.ab, m.ba
    # only matched consumers of unmatched nodes can start a chain
    starts = {c for a, b in enumerate(ab) if b < 0 for c in A.downs[a] if ab[c] >= 0}
    for x in sorted(starts, key=rank.__getitem__):
        y = ab[x]
        slots_b = {s: p for s, _, p in B.preds[y]}
        for s, _, p in A.preds[x]:
            q = slots_b.get(s)
            if q is None or ab[p] >= 0 or ba[q] >= 0:
                continue
            if A.op[p] == B.op[q]:
                # Matching in step would pair the first of two like nodes with the only one on the other side
                # (h[:, :, i] vs h[:, i] on torch < 2.5: two full slices vs one): when two chains of different
                # lengths end at the same matched node, align them whole instead.
                ca, ea = _walk_up(A, ab, p)
                cb, eb = _walk_up(B, ba, q)
                if ea < 0 or eb < 0 or ab[ea] != eb or len(ca) == len(cb):
                    p, q = _lockstep(m, p, q)
                    if p < 0 or ab[p] >= 0 or ba[q] >= 0:
                        continue
                    ca, ea = _walk_up(A, ab, p)
                    cb, eb = _walk_up(B, ba, q)
            else:
                ca, ea = _walk_up(A, ab, p)
                cb, eb = _walk_up(B, ba, q)
            if (ea >= 0) != (eb >= 0) or (ea >= 0 and ab[ea] != eb):
                continue  # the chains do not lead to the same place
            for a, b in _lcs(ca, cb, A, B):
                if ab[a] < 0 and ba[b] < 0:
                    m.add(a, b, "chain")


def _lockstep(m: Matching, p: int, q: int) -> Tuple[int, int]:
    """Match two unmatched chains in step while their ops agree (any length, linear); returns where they part
    (-1 when one ends: a matched node, a leaf, or a node with several inputs after a match)."""
    A, B, ab, ba = m.A, m.B, m.ab, m.ba
    while ab[p] < 0 and ba[q] < 0 and A.op[p] == B.op[q]:
        m.add(p, q, "chain")
        up, uq = A.ups[p], B.ups[q]
        if len(up) != 1 or len(uq) != 1:
            return -1, -1
        p, q = up[0], uq[0]
    return p, q


def _lcs(ca: Sequence[int], cb: Sequence[int], A: _Side, B: _Side) -> List[Tuple[int, int]]:
    """Longest common subsequence of two chains' ops; among the longest, the one whose pairs agree on the most
    attributes (of two full slices, the one along the same dim), then the pairs nearest the matched end."""
    opa, opb = A.op, B.op
    la, lb = len(ca), len(cb)
    if la == lb and all(opa[x] == opb[y] for x, y in zip(ca, cb)):
        return list(zip(ca, cb))  # the usual case: nothing inserted or removed
    # one more pair of the same op outweighs any number of agreeing attributes: the common length comes first
    pair = 1 + min(la, lb) * max([len(A.recs[x].get("attrs") or ()) for x in ca] or [0])

    def weight(x: int, y: int) -> int:
        if opa[x] != opb[y]:
            return 0
        ax, ay = A.recs[x].get("attrs") or {}, B.recs[y].get("attrs") or {}
        return pair + sum(1 for k, v in ax.items() if k in ay and ay[k] == v)

    # table[i][j]: best score of ca[i:] and cb[j:]
    table = [[0] * (lb + 1) for _ in range(la + 1)]
    w = [[weight(x, y) for y in cb] for x in ca]
    for i in range(la - 1, -1, -1):
        row, nxt, wi = table[i], table[i + 1], w[i]
        for j in range(lb - 1, -1, -1):
            row[j] = max(nxt[j + 1] + wi[j] if wi[j] else 0, nxt[j], row[j + 1])
    out = []
    i = j = 0
    while i < la and j < lb:
        if w[i][j] and table[i][j] == table[i + 1][j + 1] + w[i][j]:
            out.append((ca[i], cb[j]))
            i += 1
            j += 1
        elif table[i + 1][j] >= table[i][j + 1]:
            i += 1
        else:
            j += 1
    return out


def _dice(m: Matching) -> None:
    """Greedy best-first matching of unmatched nodes next to matched ones by the Dice score of their neighbours."""
    A, B, ab, ba = m.A, m.B, m.ab, m.ba
    heap: List[Tuple[Any, ...]] = []
    retries: Dict[int, int] = {}
    cursor: Dict[Tuple[int, str], int] = {}  # high fan-out B node, op -> first index not known to be matched

    def same_place(a: int, b: int) -> int:
        sa, sb = A.source(a), B.source(b)
        if sa and sa == sb:
            return 0
        ca, cb = A.code(a), B.code(b)
        return 1 if ca and ca == cb else 2

    def push(a: int) -> None:
        opa = A.op[a]
        counts: Dict[int, int] = {}
        for nb in A.nbrs(a):
            y = ab[nb]
            if y < 0:
                continue
            around = B.nbrs(y)
            if len(around) > FANOUT_CAP:
                same = B.neighbours_with_op(y, opa)
                start = cursor.get((y, opa), 0)
                while start < len(same) and ba[same[start]] >= 0:
                    start += 1
                cursor[(y, opa)] = start
                picked = []
                for b in same[start:]:
                    if ba[b] < 0:
                        picked.append(b)
                        if len(picked) >= FANOUT_CAP:
                            break
                around = tuple(picked)
            for b in around:
                if ba[b] < 0 and B.op[b] == opa:
                    counts[b] = counts.get(b, 0) + 1
        if not counts:
            return
        na = len(A.nbrs(a))
        for b, c in counts.items():
            score = 2.0 * c / (na + len(B.nbrs(b)))
            if score >= MIN_DICE:
                heapq.heappush(heap, (-score, same_place(a, b), A.seq(a), B.seq(b), a, b))

    for a in [a for a, b in enumerate(ab) if b < 0]:
        if any(ab[nb] >= 0 for nb in A.nbrs(a)):
            push(a)
    while heap:
        _, _, _, _, a, b = heapq.heappop(heap)
        if ab[a] >= 0:
            continue
        if ba[b] >= 0:  # its best candidate went to another node: look again (a few times)
            r = retries.get(a, 0)
            if r < _RETRIES:
                retries[a] = r + 1
                push(a)
            continue
        m.add(a, b, "dice")
        for nb in A.nbrs(a):
            if ab[nb] < 0:
                push(nb)

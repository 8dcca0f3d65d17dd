"""Which node of graph A is which node of graph B: GumTree's phases adapted to autograd DAGs (``docs/diff.md``).

1. **Anchors** — roots with roots (in order); leaves with leaves of the same name (``compare`` names inputs by
   argument position or keyword, parameters by their module path), else unnamed leaves of the same shape and dtype
   in order when both graphs have as many of them.
2. **Identical sub-DAGs** — a structural hash of what flows *in* (op, output shapes, the hashes of the inputs in slot
   order, a leaf's name), computed from the leaves up; pairs whose hash is unique in both graphs are matched, largest
   sub-DAG first, and the match spreads to their inputs. Then the same with a hash of where a node's output *goes*
   (op, shapes, the hashes of its consumers and the slots it feeds), computed from the roots down, spreading to the
   consumers.
3. **Extension** — (a) *chains*: below two matched nodes, the same input slot leads in both graphs to a chain of
   unmatched single-input nodes; the two chains are aligned by the longest common subsequence of their ops (an
   inserted ``unsqueeze`` or a removed ``repeat`` leaves the rest of the chain matched); (b) *Dice*: an unmatched node
   next to matched ones is matched to the unmatched node of the same op with the highest share of matched neighbours
   in common (``2·common / (|N(a)| + |N(b)|) ≥`` :data:`MIN_DICE`); ties go to the same source line (or code), then to
   creation order. (a) and (b) repeat until nothing changes.
4. The rest is removed (only in A) or added (only in B).

Everything is deterministic: hashes are interned to small integers in a table shared by both graphs (no Python
``hash()``, which is salted per process), and every choice is ordered by node positions. Time and memory are linear
in nodes + edges apart from the bounded chain alignment (:data:`CHAIN_MAX`) and fan-out cap (:data:`FANOUT_CAP`).
Torch-free: works on graphs read back with ``load_json``.
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
    """One graph as arrays indexed by position (node ids sorted): what the phases read, built in one pass."""

    __slots__ = ("ids", "n", "op", "shape", "name", "dtype", "seq", "source", "code", "preds", "succs", "ups",
                 "nbrs", "roots", "order", "_by_op")

    def __init__(self, graph: "GradGraph") -> None:
        node, _, pred = adjacency(graph.nx)
        ids = sorted(node)
        pos = {i: k for k, i in enumerate(ids)}
        n = len(ids)
        self.ids, self.n = ids, n
        self.op: List[str] = []
        self.shape: List[Tuple[Any, ...]] = []
        self.name: List[Optional[str]] = []
        self.dtype: List[Optional[str]] = []
        self.seq: List[int] = []
        self.source: List[Optional[str]] = []
        self.code: List[Optional[str]] = []
        self.preds: List[List[Tuple[int, int, int]]] = []  # (slot, output, pred position), by slot
        self.ups: List[List[int]] = []  # distinct pred positions
        succs: List[List[Tuple[int, int]]] = [[] for _ in range(n)]  # (slot it feeds, consumer position)
        for k, i in enumerate(ids):
            d = node[i]
            self.op.append(d.get("op") or "?")
            outs = d.get("outputs") or ()
            self.shape.append(tuple(_shape(o) for o in outs))
            t = d.get("tensor") if isinstance(d.get("tensor"), dict) else None
            self.name.append(t.get("name") if t else None)
            first = outs[0] if outs and isinstance(outs[0], dict) else (t or {})
            self.dtype.append(first.get("dtype"))
            s = d.get("seq")
            self.seq.append(s if isinstance(s, int) else -1)
            self.source.append(d.get("source"))
            self.code.append(d.get("code"))
            plist: List[Tuple[int, int, int]] = []
            for u, e in pred[i].items():
                p = pos[u]
                plist.append((e.get("slot") or 0, e.get("output") or 0, p))
                for extra in e.get("also") or ():
                    if isinstance(extra, dict):
                        plist.append((extra.get("slot") or 0, extra.get("output") or 0, p))
            plist.sort()
            self.preds.append(plist)
            ups = list(dict.fromkeys(p for _, _, p in plist))
            self.ups.append(ups)
            for slot, _, p in plist:
                succs[p].append((slot, k))
        self.succs = succs
        self.nbrs: List[Tuple[int, ...]] = [
            tuple(dict.fromkeys([*self.ups[k], *(c for _, c in succs[k])])) for k in range(n)]
        roots = graph.meta.get("roots") or []
        self.roots = [pos[r] for r in roots if r in pos] or [k for k in range(n) if not succs[k]]
        self.order = _topological(self.ups, succs, n)
        self._by_op: Dict[int, Dict[str, List[int]]] = {}

    def neighbours_with_op(self, k: int, op: str) -> List[int]:
        """Neighbours of ``k`` whose op is ``op`` (cached per node: used for high fan-out nodes only)."""
        table = self._by_op.get(k)
        if table is None:
            table = {}
            for v in self.nbrs[k]:
                table.setdefault(self.op[v], []).append(v)
            self._by_op[k] = table
        return table.get(op, [])


def _shape(o: Any) -> Optional[Tuple[int, ...]]:
    if isinstance(o, dict) and isinstance(o.get("shape"), list):
        return tuple(o["shape"])
    return None


def _topological(ups: List[List[int]], succs: List[List[Tuple[int, int]]], n: int) -> List[int]:
    """Positions inputs-first (Kahn; ties by position, so the order is deterministic)."""
    indeg = [len(u) for u in ups]
    ready = [k for k in range(n) if indeg[k] == 0]
    ready.reverse()
    out: List[int] = []
    while ready:
        k = ready.pop()
        out.append(k)
        seen = set()
        for _, c in succs[k]:
            if c in seen:
                continue
            seen.add(c)
            indeg[c] -= 1
            if indeg[c] == 0:
                ready.append(c)
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
        table: Dict[Any, int] = {}
        up_a, up_b = _hash_up(A, table), _hash_up(B, table)
        _identical(m, up_a, up_b, _height(A), "hash-up", _spread_up)
        table = {}
        down_a, down_b = _hash_down(A, table), _hash_down(B, table)
        _identical(m, down_a, down_b, _depth(A), "hash-down", _spread_down)
        _extend(m)
    return m


# -- 1. anchors ---------------------------------------------------------------------------------------------------
def _anchor_roots(m: Matching) -> None:
    A, B = m.A, m.B
    if len(A.roots) == len(B.roots):
        pairs = list(zip(A.roots, B.roots))
    else:  # different numbers of outputs: pair those of the same op, in order
        by_op: Dict[str, List[int]] = {}
        for r in B.roots:
            by_op.setdefault(B.op[r], []).append(r)
        pairs = []
        for r in A.roots:
            rest = by_op.get(A.op[r])
            if rest:
                pairs.append((r, rest.pop(0)))
    for a, b in pairs:
        if m.ab[a] < 0 and m.ba[b] < 0:
            m.add(a, b, "anchor")


def _leaves(side: _Side) -> List[int]:
    return [k for k in range(side.n) if not side.ups[k] and side.op[k] == "AccumulateGrad"]


def _anchor_leaves(m: Matching) -> None:
    A, B = m.A, m.B
    la, lb = _leaves(A), _leaves(B)
    named_b: Dict[str, List[int]] = {}
    for k in lb:
        if B.name[k]:
            named_b.setdefault(B.name[k], []).append(k)
    named_a: Dict[str, List[int]] = {}
    for k in la:
        if A.name[k]:
            named_a.setdefault(A.name[k], []).append(k)
    for name, ks in named_a.items():
        other = named_b.get(name)
        if len(ks) == 1 and other and len(other) == 1 and m.ba[other[0]] < 0:
            m.add(ks[0], other[0], "anchor")
    # Unnamed leaves: same shape and dtype, in order, when both graphs have as many of that kind.
    groups: Dict[Any, Tuple[List[int], List[int]]] = {}
    for k in la:
        if not A.name[k] and m.ab[k] < 0:
            groups.setdefault((A.shape[k], A.dtype[k]), ([], []))[0].append(k)
    for k in lb:
        if not B.name[k] and m.ba[k] < 0:
            g = groups.get((B.shape[k], B.dtype[k]))
            if g is not None:
                g[1].append(k)
    for ka, kb in groups.values():
        if len(ka) == len(kb):
            for a, b in zip(ka, kb):
                m.add(a, b, "anchor")


# -- 2. identical sub-DAGs ----------------------------------------------------------------------------------------
def _hash_up(side: _Side, table: Dict[Any, int]) -> List[int]:
    """Interned hash of each node's input sub-DAG (op, shapes, inputs' hashes by slot; leaves add their name)."""
    h = [0] * side.n
    op, shape, preds, name = side.op, side.shape, side.preds, side.name
    intern = table.setdefault
    for k in side.order:
        pl = preds[k]
        if pl:
            key: Any = (op[k], shape[k], tuple((s, o, h[p]) for s, o, p in pl))
        else:
            key = (op[k], shape[k], name[k])
        h[k] = intern(key, len(table))
    return h


def _hash_down(side: _Side, table: Dict[Any, int]) -> List[int]:
    """Interned hash of where each node's output goes (op, shapes, consumers' hashes with the slots fed)."""
    h = [0] * side.n
    op, shape, succs = side.op, side.shape, side.succs
    intern = table.setdefault
    for k in reversed(side.order):
        key = (op[k], shape[k], tuple(sorted((s, h[c]) for s, c in succs[k])))
        h[k] = intern(key, len(table))
    return h


def _height(side: _Side) -> List[int]:
    """Longest path from a leaf (a sub-DAG's size proxy: the largest identical sub-DAGs are matched first)."""
    h = [0] * side.n
    for k in side.order:
        ups = side.ups[k]
        if ups:
            h[k] = 1 + max(h[p] for p in ups)
    return h


def _depth(side: _Side) -> List[int]:
    """Longest path to a root."""
    d = [0] * side.n
    for k in reversed(side.order):
        cs = side.succs[k]
        if cs:
            d[k] = 1 + max(d[c] for _, c in cs)
    return d


def _identical(m: Matching, ha: List[int], hb: List[int], size: List[int], how: str, spread: Any) -> None:
    """Match the pairs whose hash is unique in both graphs (largest first) and spread each match along its
    identical sub-DAG."""
    cls_a: Dict[int, List[int]] = {}
    for k, h in enumerate(ha):
        cls_a.setdefault(h, []).append(k)
    cls_b: Dict[int, List[int]] = {}
    for k, h in enumerate(hb):
        cls_b.setdefault(h, []).append(k)
    unique = []
    for h, ks in cls_a.items():
        if len(ks) == 1:
            other = cls_b.get(h)
            if other is not None and len(other) == 1:
                unique.append((-size[ks[0]], ks[0], other[0]))
    unique.sort()
    for _, a, b in unique:
        if m.ab[a] < 0 and m.ba[b] < 0:
            m.add(a, b, how)
        if m.ab[a] == b:  # also spread from anchors that the hash confirms
            spread(m, ha, hb, a, b, how)


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
def _extend(m: Matching, max_rounds: int = 16) -> None:
    for _ in range(max_rounds):
        before = m.count
        _chains(m)
        _dice(m)
        if m.count == before:
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


def _chains(m: Matching) -> None:
    A, B = m.A, m.B
    for x in A.order[::-1]:  # consumers first: a chain is aligned from its matched upper end
        y = m.ab[x]
        if y < 0:
            continue
        slots_b = {s: p for s, _, p in B.preds[y]}
        for s, _, p in A.preds[x]:
            q = slots_b.get(s)
            if q is None or (m.ab[p] >= 0 and m.ba[q] >= 0):
                continue
            ca, ea = _walk_up(A, m.ab, p)
            cb, eb = _walk_up(B, m.ba, q)
            if not ca or not cb:
                continue
            if (ea >= 0) != (eb >= 0) or (ea >= 0 and m.ab[ea] != eb):
                continue  # the chains do not lead to the same place
            for a, b in _lcs(ca, cb, A.op, B.op):
                if m.ab[a] < 0 and m.ba[b] < 0:
                    m.add(a, b, "chain")


def _lcs(ca: Sequence[int], cb: Sequence[int], opa: List[str], opb: List[str]) -> List[Tuple[int, int]]:
    """Longest common subsequence of two chains' ops; the aligned pairs, nearest the matched end preferred."""
    la, lb = len(ca), len(cb)
    # table[i][j]: LCS length of ca[i:] and cb[j:]
    table = [[0] * (lb + 1) for _ in range(la + 1)]
    for i in range(la - 1, -1, -1):
        row, nxt = table[i], table[i + 1]
        oa = opa[ca[i]]
        for j in range(lb - 1, -1, -1):
            row[j] = nxt[j + 1] + 1 if oa == opb[cb[j]] else max(nxt[j], row[j + 1])
    out = []
    i = j = 0
    while i < la and j < lb:
        if opa[ca[i]] == opb[cb[j]] and table[i][j] == table[i + 1][j + 1] + 1:
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
    A, B = m.A, m.B
    heap: List[Tuple[Any, ...]] = []
    retries: Dict[int, int] = {}
    cursor: Dict[Tuple[int, str], int] = {}  # high fan-out B node, op -> first index not known to be matched

    def same_place(a: int, b: int) -> int:
        sa, sb = A.source[a], B.source[b]
        if sa and sa == sb:
            return 0
        ca, cb = A.code[a], B.code[b]
        return 1 if ca and ca == cb else 2

    def push(a: int) -> None:
        opa = A.op[a]
        counts: Dict[int, int] = {}
        for nb in A.nbrs[a]:
            y = m.ab[nb]
            if y < 0:
                continue
            around = B.nbrs[y]
            if len(around) > FANOUT_CAP:
                same = B.neighbours_with_op(y, opa)
                start = cursor.get((y, opa), 0)
                while start < len(same) and m.ba[same[start]] >= 0:
                    start += 1
                cursor[(y, opa)] = start
                picked = []
                for b in same[start:]:
                    if m.ba[b] < 0:
                        picked.append(b)
                        if len(picked) >= FANOUT_CAP:
                            break
                around = tuple(picked)
            for b in around:
                if m.ba[b] < 0 and B.op[b] == opa:
                    counts[b] = counts.get(b, 0) + 1
        if not counts:
            return
        na = len(A.nbrs[a])
        for b, c in counts.items():
            score = 2.0 * c / (na + len(B.nbrs[b]))
            if score >= MIN_DICE:
                heapq.heappush(heap, (-score, same_place(a, b), A.seq[a], B.seq[b], a, b))

    for a in range(A.n):
        if m.ab[a] < 0 and any(m.ab[nb] >= 0 for nb in A.nbrs[a]):
            push(a)
    while heap:
        _, _, _, _, a, b = heapq.heappop(heap)
        if m.ab[a] >= 0:
            continue
        if m.ba[b] >= 0:  # its best candidate went to another node: look again (a few times)
            r = retries.get(a, 0)
            if r < _RETRIES:
                retries[a] = r + 1
                push(a)
            continue
        m.add(a, b, "dice")
        for nb in A.nbrs[a]:
            if m.ab[nb] < 0:
                push(nb)

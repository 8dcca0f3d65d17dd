"""Which node of graph A is which node of graph B: GumTree's phases adapted to autograd DAGs (``docs/diff.md``).

1. **Anchors** — the roots (one each: paired when they are the same op on the same shapes and input slots; several:
   same op and shapes, in order, but only among those phases 2 and 3 leave unmatched; a lone root left unmatched
   at the end pairs with the other lone root of the same output shapes: roots are paired by the same evidence as any
   other node first, so ``(x @ w).tanh()`` against ``(x @ w).tanh() * 2.0`` pairs the two tanh and
   reports the multiplication as added); leaves with leaves of the same name (``compare`` names inputs by
   argument position or keyword, parameters by their module path), else unnamed leaves of the same shape and dtype
   in order when both graphs have as many of them.
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
in nodes + edges for indexing and the first hashes, apart from the bounded chain alignment and the fan-out cap
(:data:`FANOUT_CAP`); each later round costs the unmatched part and its matched neighbours, never a scan of the
whole graph (:class:`_Rounds`). Torch-free: works on graphs read back with ``load_json``.
"""
from __future__ import annotations

import heapq
from collections import Counter
from typing import TYPE_CHECKING, Any, Dict, Iterable, List, Optional, Sequence, Tuple

from ..._util.gc import gc_paused
from .side import Side

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

class Matching:
    """The result of :func:`match`: pairs of node ids, what is only in A / only in B, and how each pair was found."""

    def __init__(self, A: Side, B: Side) -> None:
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
        labels: Dict[Any, int] = {}
        A, B = Side(graph_a, labels), Side(graph_b, labels)
        del labels
        m = Matching(A, B)
        _anchor_roots(m)
        _anchor_leaves(m)
        table: Dict[Any, int] = {}
        ha, hb = _hash_up(A, table), _hash_up(B, table)
        del table
        _identical(m, ha, hb, _free(m.ab), _free(m.ba), True, "hash-up", _spread_up, "up")
        del ha, hb
        _extend(m)
    return m


def _free(matched: List[int], among: Optional[List[int]] = None) -> List[int]:
    """The unmatched positions (of ``among``, in its order; default all), ascending."""
    if among is None:
        return [k for k, x in enumerate(matched) if x < 0]
    return [k for k in among if matched[k] < 0]


# -- 1. anchors ---------------------------------------------------------------------------------------------------
def _anchor_roots(m: Matching) -> None:
    """One root each, of the same op on the same shapes and slots (the same label): they are the outputs, paired.
    Otherwise the roots are left to the hashes like any node (:func:`_roots_in_order` pairs what the other phases
    leave)."""
    A, B = m.A, m.B
    if len(A.roots) == 1 and len(B.roots) == 1 and m.ab[A.roots[0]] < 0 and m.ba[B.roots[0]] < 0 \
            and A.label[A.roots[0]] == B.label[B.roots[0]]:
        m.add(A.roots[0], B.roots[0], "anchor")


def _roots_in_order(m: Matching) -> None:
    """Several roots: pair the unmatched ones of the same op and output shapes, in order, where both graphs have as
    many of that kind unmatched. Only once the structure has paired what it can: among thousands of roots (every
    node nothing consumes), one root of a kind removed here and another added there would shift every pair after
    them."""
    A, B, ab, ba = m.A, m.B, m.ab, m.ba
    groups: Dict[Any, Tuple[List[int], List[int]]] = {}
    for r in A.roots:
        if ab[r] < 0:
            groups.setdefault((A.op[r], A.shape[r]), ([], []))[0].append(r)
    for r in B.roots:
        if ba[r] < 0:
            g = groups.get((B.op[r], B.shape[r]))
            if g is not None:
                g[1].append(r)
    for ra, rb in groups.values():
        if len(ra) == len(rb):
            for a, b in zip(ra, rb):
                m.add(a, b, "anchor")
    if len(A.roots) == 1 and len(B.roots) == 1:
        a, b = A.roots[0], B.roots[0]
        # a lone root each, both still unmatched when nothing else pairs them, with the same output shapes: the
        # two outputs (sum against mean at the very end, a compiled region's one node against the eager output)
        if ab[a] < 0 and ba[b] < 0 and A.shape[a] == B.shape[b]:
            m.add(a, b, "anchor")


def _anchor_leaves(m: Matching) -> None:
    A, B = m.A, m.B
    la, lb = A.leaves, B.leaves
    name_a, name_b = dict(zip(la, A.leaf_names)), dict(zip(lb, B.leaf_names))
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
def _hash_up(side: Side, table: Dict[Any, int]) -> List[int]:
    """Interned hash of each node's input sub-DAG (op, shapes, inputs' hashes by slot; leaves add their name): the
    node's label (op, shapes and its slots, interned once) followed by its inputs' hashes."""
    h = [0] * side.n
    _hash_into(side, table, h, side.order)
    return h


def _hash_into(side: Side, table: Dict[Any, int], h: List[int], order: Iterable[int]) -> None:
    """Hashes the nodes of ``order`` (inputs first) into ``h``, reading their inputs' hashes from ``h``."""
    label, pin = side.label, side.pin
    intern = table.setdefault
    for k in order:
        pk = pin[k]
        if len(pk) == 1:
            key: Tuple[int, ...] = (label[k], h[pk[0]])
        elif not pk:
            key = (label[k],)
        elif len(pk) == 2:
            key = (label[k], h[pk[0]], h[pk[1]])
        else:
            key = (label[k], *map(h.__getitem__, pk))
        h[k] = intern(key, len(table))


def _anchored_up(side: Side, table: Dict[Any, int], h: List[int], free: List[int]) -> None:
    """:func:`_hash_up` of the unmatched nodes ``free`` into ``h``, where every matched node already holds its
    anchor (``-1 - pair number``, the same on both sides): only the unmatched part is hashed."""
    _hash_into(side, table, h, sorted(free, key=side.rank.__getitem__))  # inputs first


def _anchored_down(side: Side, table: Dict[Any, int], h: List[int], free: List[int]) -> None:
    """Interned hash of where each unmatched node's output goes (op, shapes, consumers' hashes with the slots fed),
    into ``h`` as in :func:`_anchored_up`."""
    op, shape, rank, succs = side.op, side.shape, side.rank, side.succs
    intern = table.setdefault
    for k in sorted(free, key=rank.__getitem__, reverse=True):  # consumers first
        sc = succs(k)
        key = (op[k], shape[k], tuple(sorted([(s, h[c]) for s, c in sc])) if len(sc) > 1 else
               ((sc[0][0], h[sc[0][1]]),) if sc else ())
        h[k] = intern(key, len(table))


def _identical(m: Matching, ha: List[int], hb: List[int], free_a: List[int], free_b: List[int], up: bool,
               how: str, spread: Any, direction: str) -> None:
    """Match the unmatched pairs (``free_*``: the unmatched positions) whose hash is unique in both graphs, largest
    first (``up``: the largest input sub-DAG, i.e. the latest in A's inputs-first order; else the largest consumer
    cone, the earliest), and spread each match along its identical sub-DAG; then spread from the matched nodes next
    to unmatched ones (in ``direction``: ``"up"`` = towards their inputs, ``"down"`` = towards their consumers),
    which pairs up identical but non-unique neighbours by their place."""
    A, ab, ba = m.A, m.ab, m.ba
    hs_a = list(map(ha.__getitem__, free_a))
    hs_b = list(map(hb.__getitem__, free_b))
    count_a, count_b = Counter(hs_a), Counter(hs_b)
    at_a, at_b = dict(zip(hs_a, free_a)), dict(zip(hs_b, free_b))  # a unique hash's only node
    del hs_a, hs_b
    get_b = count_b.get
    partner = {at_a[h]: at_b[h] for h, c in count_a.items() if c == 1 and get_b(h) == 1}
    del count_a, count_b, at_a, at_b
    for a in sorted(partner, key=A.rank.__getitem__, reverse=up):
        b = partner[a]
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
    pa, pb, ab, ba, found = m.A.pin, m.B.pin, m.ab, m.ba, m.how
    count = 0
    while stack:
        x, y = stack.pop()
        px, py = pa[x], pb[y]
        if len(px) != len(py):
            continue
        for u, v in zip(px, py):
            if ab[u] < 0 and ba[v] < 0 and ha[u] == hb[v]:
                ab[u], ba[v], found[u] = v, u, how  # Matching.add, inline: most pairs of a big diff are found here
                count += 1
                stack.append((u, v))
    m.count += count


def _spread_down(m: Matching, ha: List[int], hb: List[int], a: int, b: int, how: str) -> None:
    """Two nodes with the same consumer hash feed the same consumers in the same slots: match those too."""
    stack = [(a, b)]
    A, B = m.A, m.B
    while stack:
        x, y = stack.pop()
        cx = sorted([(s, ha[c], c) for s, c in A.succs(x)])
        cy = sorted([(s, hb[c], c) for s, c in B.succs(y)])
        if len(cx) != len(cy):
            continue
        for (_, h1, u), (_, h2, v) in zip(cx, cy):
            if h1 == h2 and m.ab[u] < 0 and m.ba[v] < 0:
                m.add(u, v, how)
                stack.append((u, v))


# -- 3. extension -------------------------------------------------------------------------------------------------
class _Rounds:
    """What the extension's rounds share, so that a round costs what is still unmatched, not the whole graph: the
    unmatched positions of each side (filtered, never rebuilt from scratch) and each side's anchored hashes, where a
    matched node holds its anchor, written once when it is matched (a round re-hashes only the unmatched nodes)."""

    def __init__(self, m: Matching) -> None:
        self.m = m
        self.free_a, self.free_b = _free(m.ab), _free(m.ba)
        ab, ba = m.ab, m.ba
        anchor_a = [-1 - k if b >= 0 else 0 for k, b in enumerate(ab)]  # pair number: A's position
        anchor_b = [-1 - a if a >= 0 else 0 for a in ba]
        self.up_a, self.up_b = anchor_a, anchor_b
        self.down_a, self.down_b = list(anchor_a), list(anchor_b)

    def refresh(self) -> None:
        """Drop the nodes matched since the last call from the unmatched lists and anchor them."""
        m = self.m
        ab = m.ab
        up_a, up_b, down_a, down_b = self.up_a, self.up_b, self.down_a, self.down_b
        still: List[int] = []
        keep = still.append
        for a in self.free_a:
            b = ab[a]
            if b < 0:
                keep(a)
            else:
                up_a[a] = down_a[a] = up_b[b] = down_b[b] = -1 - a
        self.free_a = still
        self.free_b = _free(m.ba, self.free_b)


def _anchored_hashes(m: Matching, r: _Rounds) -> None:
    """Phase 2 again with every matched pair as an anchor: a node's hash then describes its place relative to the
    nearest matched nodes, so an edit near the root (or a leaf) no longer changes every hash behind it."""
    A, B = m.A, m.B
    for how, hasher, spread, direction in (("hash-down", _anchored_down, _spread_down, "down"),
                                           ("hash-up", _anchored_up, _spread_up, "up")):
        r.refresh()
        ha, hb = (r.down_a, r.down_b) if how == "hash-down" else (r.up_a, r.up_b)
        table: Dict[Any, int] = {}
        hasher(A, table, ha, r.free_a)
        hasher(B, table, hb, r.free_b)
        del table  # its keys are as big as the graph's unmatched part: gone before _identical adds its own tables
        _identical(m, ha, hb, r.free_a, r.free_b, how == "hash-up", how, spread, direction)


def _extend(m: Matching, max_rounds: int = 16) -> None:
    """Anchored hashes and chains while they find pairs (cheap, linear); Dice when they stall, then several roots in
    order; until nothing changes."""
    r = _Rounds(m)
    for _ in range(max_rounds):
        before = m.count
        if before == m.A.n or before == m.B.n:
            return
        _anchored_hashes(m, r)
        for _ in range(max_rounds):
            n0 = m.count
            r.refresh()
            _chains(m, r.free_a)
            if m.count == n0:
                break
        if m.count == before:
            r.refresh()
            _dice(m, r.free_a)
            if m.count == before:
                _roots_in_order(m)
            if m.count == before or m.count == m.A.n or m.count == m.B.n:
                return
    _roots_in_order(m)  # the rounds ran out before they stalled


def _walk_up(side: Side, matched: List[int], start: int) -> Tuple[List[int], int]:
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


def _chains(m: Matching, free_a: List[int]) -> None:
    """Below each matched pair, align the unmatched chains that the same input slot leads to (``free_a``: A's
    unmatched positions). A worklist, consumers first: a node matched here starts chains below it at once, so a long
    run of unmatched nodes costs one pass, not a pass per node with several inputs."""
    A, B, ab, ba, rank = m.A, m.B, m.ab, m.ba, m.A.rank
    # only matched consumers of unmatched nodes can start a chain; consumers first: a chain is aligned from its
    # matched upper end
    heap = [(-rank[c], c) for c in {c for a in free_a for c in A.downs[a] if ab[c] >= 0}]
    heapq.heapify(heap)
    new: List[int] = []  # A's nodes matched while a start is handled: starts themselves
    while heap:
        x = heapq.heappop(heap)[1]
        y = ab[x]
        slots_b = {s: p for (s, _), p in zip(B.sig[y], B.pin[y])}
        for (s, _), p in zip(A.sig[x], A.pin[x]):
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
                    p, q = _lockstep(m, p, q, new)
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
                    new.append(a)
        for a in new:
            if any(ab[u] < 0 for u in A.ups[a]):  # it starts chains of its own
                heapq.heappush(heap, (-rank[a], a))
        new.clear()


def _lockstep(m: Matching, p: int, q: int, new: List[int]) -> Tuple[int, int]:
    """Match two unmatched chains in step while their ops agree (any length, linear), appending A's matched nodes
    to ``new``; returns where they part (-1 when one ends: a matched node, a leaf, or a node with several inputs
    after a match)."""
    A, B, ab, ba = m.A, m.B, m.ab, m.ba
    # the same op with as many inputs, in the same slots: a `sub` of two tensors is not a `sub` of one and a number
    while ab[p] < 0 and ba[q] < 0 and A.op[p] == B.op[q] and A.sig[p] == B.sig[q]:
        m.add(p, q, "chain")
        new.append(p)
        up, uq = A.ups[p], B.ups[q]
        if len(up) != 1 or len(uq) != 1:
            return -1, -1
        p, q = up[0], uq[0]
    return p, q


def _lcs(ca: Sequence[int], cb: Sequence[int], A: Side, B: Side) -> List[Tuple[int, int]]:
    """Longest common subsequence of two chains' ops; among the longest, the one whose pairs agree on the most
    attributes (of two full slices, the one along the same dim), then the one whose pairs keep their place, then the
    pairs nearest the matched end. Only nodes of the same op with as many inputs in the same slots pair."""
    opa, opb, sa, sb = A.op, B.op, A.sig, B.sig
    la, lb = len(ca), len(cb)
    if la == lb and all(opa[x] == opb[y] and sa[x] == sb[y] for x, y in zip(ca, cb)):
        return list(zip(ca, cb))  # the usual case: nothing inserted or removed
    # The common length comes first (one more pair outweighs any number of agreeing attributes), then the attributes
    # (one agreeing attribute outweighs every pair's place), then pairs at the same place counted from either end: of
    # `mul mul mul mul` against `sub mul sub mul` (two ops re-typed), the two muls that kept their place, not a shifted
    # two.
    attr = 1 + min(la, lb)
    pair = 1 + min(la, lb) * (attr * max([len(A.recs[x].get("attrs") or ()) for x in ca] or [0]) + 1)

    def weight(i: int, j: int) -> int:
        x, y = ca[i], cb[j]
        if opa[x] != opb[y] or sa[x] != sb[y]:  # as in _lockstep: the same op on as many inputs
            return 0
        ax, ay = A.recs[x].get("attrs") or {}, B.recs[y].get("attrs") or {}
        return (pair + attr * sum(1 for k, v in ax.items() if k in ay and ay[k] == v)
                + (i == j or la - i == lb - j))

    # table[i][j]: best score of ca[i:] and cb[j:]
    table = [[0] * (lb + 1) for _ in range(la + 1)]
    w = [[weight(i, j) for j in range(lb)] for i in range(la)]
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


def _dice(m: Matching, free_a: List[int]) -> None:
    """Greedy best-first matching of unmatched nodes next to matched ones by the Dice score of their neighbours
    (``free_a``: A's unmatched positions, ascending)."""
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

    for a in free_a:
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

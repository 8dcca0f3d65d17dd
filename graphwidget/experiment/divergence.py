"""Where two implementations part: the first matched node pair whose values differ beyond what rounding explains
while the values flowing into it agree.

:func:`find_divergence` works only on two captured graphs, their :class:`~.values.SideValues` and the matching of
their nodes (``Diff.matched``), so it gives the same answer in one process and from recordings. It never runs code.

**Forward** (inputs first, in A's creation order): each matched pair's forward outputs are compared as the
equivalence verdict compares outputs (:func:`.equivalence.check`: A vs B, judged against what each side's float64
run says rounding explains). A pair that differs is a *new* divergence when the nearest matched nodes feeding it
(through unmatched nodes and nodes without a value) all agree on both sides; else it only *inherits* one. A leaf
(``AccumulateGrad``) is compared by its tensor's value: a port's weight copy that differs is itself a divergence
(``kind: "parameter"``). Unmatched nodes between a new divergence and the agreeing nodes feeding it (the removed and
added code, a GELU written out by hand) are its ``region_a`` / ``region_b``, and its source lines are theirs.

**Backward** (consumers first): a matched pair whose forward values agree but where one side feeds an input slot
the other does not (``.detach()``, ``.data``, a ``no_grad`` block) *cuts* a gradient path there (``cut``); a pair
whose forward values agree and whose incoming gradients differ while those of its nearest matched consumers agree,
and that no cut explains, is a new backward divergence; the rest inherit. Pairs whose forward values are not known
to agree (no value, other shapes) are never a backward cause: the structure, not the maths, differs there.

Matched pairs whose shapes differ (a fused ``qkv`` against separate ``q``/``k``/``v``) cannot be compared value
by value; they are listed under ``unpaired`` of the summary :func:`structure_notes` gives, never as a divergence.
"""
from __future__ import annotations

from typing import Any, Dict, List, Optional, Sequence, Tuple

import torch

from ..model.graph import GradGraph
from .equivalence import Precision, check, judge
from .values import SideValues

#: How many nodes the walk to the nearest matched inputs (or consumers) of one node visits at most.
_WALK_MAX = 4096

AGREE, DIFFERS, UNKNOWN = "agree", "differs", "unknown"


def _order(g: GradGraph) -> List[int]:
    """Node ids inputs first, ties (and the forward's own order) by creation order (``seq``)."""
    nx = g.nx
    indeg = {n: nx.in_degree(n) for n in nx.nodes}
    import heapq

    def key(n: int) -> Tuple[int, int]:
        s = nx.nodes[n].get("seq")
        return (s if isinstance(s, int) else -1, n)

    ready = [key(n) for n, d in indeg.items() if d == 0]
    heapq.heapify(ready)
    out: List[int] = []
    while ready:
        _, n = heapq.heappop(ready)
        out.append(n)
        for c in nx.successors(n):
            indeg[c] -= 1
            if indeg[c] == 0:
                heapq.heappush(ready, key(c))
    return out


def _pair_values(va: SideValues, vb: SideValues, kind: str, a: int, b: int
                 ) -> List[Tuple[int, Optional[torch.Tensor], Optional[torch.Tensor], Optional[torch.Tensor],
                                 Optional[torch.Tensor]]]:
    """``(output_nr, A, B, A64, B64)`` for every output both sides have a value of (digests where either side
    kept only a digest, so both are compared alike)."""
    wide = kind + "64"
    out: List[Tuple[int, Optional[torch.Tensor], Optional[torch.Tensor], Optional[torch.Tensor],
                    Optional[torch.Tensor]]] = []
    for o in sorted(set(va.outputs(kind, a)) & set(vb.outputs(kind, b))):
        xa, ea = va.get(kind, a, o)
        xb, eb = vb.get(kind, b, o)
        ya, fa = va.get(wide, a, o)
        yb, fb = vb.get(wide, b, o)
        exact = ea and eb and (ya is None or fa) and (yb is None or fb)
        if not exact:
            from .values import digest
            xa = xa if not ea else digest(xa)  # type: ignore[arg-type]
            xb = xb if not eb else digest(xb)  # type: ignore[arg-type]
            ya = None if ya is None else (ya if not fa else digest(ya))
            yb = None if yb is None else (yb if not fb else digest(yb))
            if xa is None or xb is None or xa.numel() < 2 or xb.numel() < 2 or float(xa[0]) != float(xb[0]):
                out.append((o, xa, xb, None, None))
                continue
            xa, xb = xa[2:], xb[2:]
            ya = ya[2:] if ya is not None and ya.numel() == xa.numel() + 2 else None
            yb = yb[2:] if yb is not None and yb.numel() == xb.numel() + 2 else None
        out.append((o, xa, xb, ya, yb))
    return out


def compare_pair(va: SideValues, vb: SideValues, kind: str, a: int, b: int, precision: Optional[Precision]
                 ) -> Tuple[str, Optional[Dict[str, Any]]]:
    """``(status, worst row)`` of one matched pair's values of ``kind`` (``"fwd"`` or ``"grad"``): ``"agree"``,
    ``"differs"``, or ``"unknown"`` (no value on one side, or shapes that differ: not comparable)."""
    # measured while B's float64 run made the value (values.Collector.stream_against)
    by_output = {o: judge(dict(row), precision) for o, (pa, row) in vb.measured.get((kind, b), {}).items() if pa == a}
    for o, xa, xb, ya, yb in _pair_values(va, vb, kind, a, b):
        if o in by_output or xa is None or xb is None or xa.shape != xb.shape:
            continue
        # the digests' samples and exact values alike: a view may be non-contiguous
        by_output[o] = check(f"{kind} {a}/{b}:{o}", xa, xb, precision, ya, yb,
                             kind="output" if kind == "fwd" else "gradient")
    rows = [by_output[o] for o in sorted(by_output)]
    if not rows:
        return UNKNOWN, None
    bad = [r for r in rows if not r["allclose"]]
    if bad:
        return DIFFERS, max(bad, key=lambda r: r.get("ref_diff") or r.get("max_rel") or 0.0)
    return AGREE, max(rows, key=lambda r: r.get("max_rel") or 0.0)


def _nearest(g: GradGraph, start: int, status: Dict[int, str], up: bool, matched: Dict[int, int]
             ) -> Tuple[List[int], List[int]]:
    """The nearest nodes feeding ``start`` (``up``; else consuming it) whose status is known, walking through
    unmatched nodes and nodes without a value; and the unmatched nodes passed (the region)."""
    nx = g.nx
    nbrs = nx.predecessors if up else nx.successors
    known: List[int] = []
    region: List[int] = []
    seen = {start}
    stack = list(nbrs(start))
    while stack and len(seen) < _WALK_MAX:
        n = stack.pop()
        if n in seen:
            continue
        seen.add(n)
        if n in matched and status.get(n, UNKNOWN) != UNKNOWN:
            known.append(n)
            continue
        if n not in matched:
            region.append(n)
        stack.extend(nbrs(n))
    return known, region


def _slots(g: GradGraph, n: int) -> Dict[int, int]:
    """Input slot -> the node feeding it."""
    out: Dict[int, int] = {}
    for p, _, e in g.nx.in_edges(n, data=True):
        out.setdefault(int(e.get("slot") or 0), p)
        for x in e.get("also") or ():
            if isinstance(x, dict):
                out.setdefault(int(x.get("slot") or 0), p)
    return out


def _where(g: GradGraph, n: int, region: Sequence[int]) -> Dict[str, Any]:
    """Source line, code and module of a divergence on one side: its region's newest node when it has one (the code
    that is only on this side), else the node itself."""
    nodes = g.nx.nodes
    pick = n
    if region:
        with_source = [r for r in region if nodes[r].get("source")]
        if with_source:
            pick = max(with_source, key=lambda r: (nodes[r].get("seq") if isinstance(nodes[r].get("seq"), int)
                                                    else -1, r))
    d = nodes[pick]
    if not d.get("source"):
        d = nodes[n]
    return {"source": d.get("source"), "code": d.get("code"), "module": d.get("module"), "op": d.get("op")}


def _name(g: GradGraph, n: int) -> Optional[str]:
    t = g.nx.nodes[n].get("tensor")
    return t.get("name") if isinstance(t, dict) else None


def _record(phase: str, ga: GradGraph, a: int, gb: GradGraph, b: int, row: Optional[Dict[str, Any]],
            inherited: bool, region_a: Sequence[int] = (), region_b: Sequence[int] = ()) -> Dict[str, Any]:
    wa, wb = _where(ga, a, region_a), _where(gb, b, region_b)
    da = ga.nx.nodes[a]
    kind = "parameter" if da.get("op") == "AccumulateGrad" else "node"
    rec: Dict[str, Any] = {
        "phase": phase, "kind": kind, "a": a, "b": b, "op": da.get("op"), "op_b": gb.nx.nodes[b].get("op"),
        "source_a": wa["source"], "source_b": wb["source"], "code_a": wa["code"], "code_b": wb["code"],
        "module_a": wa["module"], "module_b": wb["module"],
        "rel": None if row is None else row.get("max_rel"),
        "ref_diff": None if row is None else row.get("ref_diff"),
        "rounding": None if row is None else row.get("tol"),
        "inherited": inherited, "region_a": sorted(region_a), "region_b": sorted(region_b),
    }
    if kind == "parameter":
        rec["name_a"], rec["name_b"] = _name(ga, a), _name(gb, b)
    return rec


def find_divergence(graph_a: GradGraph, values_a: SideValues, graph_b: GradGraph, values_b: SideValues,
                    matching: Sequence[Tuple[int, int]], precision: Optional[Precision] = None
                    ) -> Tuple[Optional[Dict[str, Any]], List[Dict[str, Any]]]:
    """``(first, all)``: every divergent matched pair in order — the forward ones inputs first, then the backward
    ones consumers first — each a dict with ``phase`` (``"forward"`` / ``"backward"``), ``kind`` (``"node"`` or
    ``"parameter"``), ``a``, ``b`` (node ids), ``op`` (A's; ``op_b`` B's), ``source_a``/``source_b``,
    ``code_a``/``code_b``, ``module_a``/``module_b``, ``rel`` (A vs B, relative to the largest magnitude),
    ``ref_diff`` (the same between the float64 runs), ``rounding`` (what rounding explains there, relative),
    ``inherited`` (it only carries an earlier divergence), ``region_a``/``region_b`` (unmatched nodes between it and
    the agreeing nodes feeding it), ``cut`` (backward: ``{"side", "slot", "input"}``, the side whose gradient path
    is cut and the other side's node it no longer reaches), and for a parameter ``name_a``/``name_b``. ``first`` is
    the first that is not inherited (``None`` when there is none).

    Works only on its arguments (no run): the same answer from recordings as in one process. ``precision``: how
    ``compare`` judged the outputs (:class:`.equivalence.Precision`); ``None`` judges by the fixed tolerance."""
    ab = {int(x): int(y) for x, y in matching}
    ba = {y: x for x, y in ab.items()}
    order = [n for n in _order(graph_a) if n in ab]
    fwd: Dict[int, str] = {}
    rows: Dict[int, Optional[Dict[str, Any]]] = {}
    for a in order:
        fwd[a], rows[a] = compare_pair(values_a, values_b, "fwd", a, ab[a], precision)
    fwd_b = {ab[a]: s for a, s in fwd.items()}
    out: List[Dict[str, Any]] = []
    for a in order:
        if fwd[a] != DIFFERS:
            continue
        b = ab[a]
        near_a, region_a = _nearest(graph_a, a, fwd, True, ab)
        near_b, region_b = _nearest(graph_b, b, fwd_b, True, ba)
        inherited = any(fwd[x] == DIFFERS for x in near_a) or any(fwd_b[y] == DIFFERS for y in near_b)
        out.append(_record("forward", graph_a, a, graph_b, b, rows[a], inherited,
                           () if inherited else region_a, () if inherited else region_b))
    # -- backward: consumers first
    cuts: Dict[int, Dict[str, Any]] = {}
    cut_inputs_a: set = set()
    for a in order:
        if fwd[a] != AGREE:  # a pair not compared (other shapes, no value) proves no cut
            continue
        b = ab[a]
        sa, sb = _slots(graph_a, a), _slots(graph_b, b)
        for slot in sorted(set(sa) ^ set(sb)):
            side, node = ("B", sa[slot]) if slot in sa else ("A", sb[slot])
            cuts.setdefault(a, {"side": side, "slot": slot, "input": node})
            if side == "B":
                cut_inputs_a.add(node)
            elif node in ba:
                cut_inputs_a.add(ba[node])
    bwd: Dict[int, str] = {}
    brows: Dict[int, Optional[Dict[str, Any]]] = {}
    for a in order:
        bwd[a], brows[a] = compare_pair(values_a, values_b, "grad", a, ab[a], precision)
    bwd_b = {ab[a]: s for a, s in bwd.items()}
    for a in reversed(order):
        b = ab[a]
        if a in cuts:
            rec = _record("backward", graph_a, a, graph_b, b, brows[a], False)
            rec["cut"] = cuts[a]
            out.append(rec)
            continue
        if bwd[a] != DIFFERS or fwd[a] != AGREE:  # a node whose own forward is not known to agree is no cause
            continue
        near_a, _ = _nearest(graph_a, a, bwd, False, ab)
        near_b, _ = _nearest(graph_b, b, bwd_b, False, ba)
        inherited = (a in cut_inputs_a or any(bwd[x] == DIFFERS or x in cuts for x in near_a)
                     or any(bwd_b[y] == DIFFERS or ba[y] in cuts for y in near_b)
                     or any(fwd[x] == DIFFERS for x in near_a))
        out.append(_record("backward", graph_a, a, graph_b, b, brows[a], inherited))
    first = next((r for r in out if not r["inherited"]), None)
    return first, out


def structure_notes(graph_a: GradGraph, graph_b: GradGraph, matching: Sequence[Tuple[int, int]]
                    ) -> Dict[str, Any]:
    """What could not be compared one to one: matched pairs whose output shapes differ (``shapes_differ``), and
    leaves (parameters, inputs) with no counterpart of their shape (``leaves_only_a`` / ``leaves_only_b``), each by
    its name and role (the op that consumes it)."""
    ab = dict(matching)
    ba = {y: x for x, y in ab.items()}
    shapes = []
    for a, b in ab.items():
        oa, ob = graph_a.nx.nodes[a].get("outputs") or [], graph_b.nx.nodes[b].get("outputs") or []
        sa = [o.get("shape") if isinstance(o, dict) else None for o in oa]
        sb = [o.get("shape") if isinstance(o, dict) else None for o in ob]
        if sa and sb and sa != sb:
            shapes.append([a, b])

    def shape(g: GradGraph, n: int) -> Any:
        t = g.nx.nodes[n].get("tensor")
        return t.get("shape") if isinstance(t, dict) else None

    def lonely(g: GradGraph, partner: Dict[int, int]) -> List[Dict[str, Any]]:
        other = graph_b if g is graph_a else graph_a
        found = []
        for n, d in g.nx.nodes(data=True):
            if d.get("op") != "AccumulateGrad":
                continue
            if n in partner and shape(g, n) == shape(other, partner[n]):
                continue  # a one-to-one counterpart (a leaf matched to one of another shape is none)
            users = [g.nx.nodes[c].get("op") for c in g.nx.successors(n)]
            found.append({"id": n, "name": _name(g, n), "role": users[0] if users else None})
        return found

    return {"shapes_differ": shapes, "leaves_only_a": lonely(graph_a, ab), "leaves_only_b": lonely(graph_b, ba)}

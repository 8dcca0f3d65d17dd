"""What got fused: which nodes of a reference graph each compiled region of another graph stands for (torch-free).

``torch.compile`` replaces a whole stretch of the autograd graph by one ``CompiledFunctionBackward`` node (a
*region*). Its inputs are ordinary nodes — the parameters' and inputs' leaves, the ops before the region — and so are
its consumers, and the diff matches those around the region like any other node (leaves by name). So a region
covers the reference's nodes that lie *between* the counterparts of its inputs and of its consumers: reachable from
an input's counterpart along the graph's edges, and reaching a consumer's counterpart (or the reference's output,
for a region that is the output), less the boundary nodes themselves and any node matched to an ordinary node
outside the region.

Adjacent regions (a graph break: one region feeding the next) share a boundary no ordinary node marks. They are
covered together first, then each covered node goes to the most downstream region whose own inputs reach it: the
nodes before the break reach only the first region's inputs, the ones after it reach the second's too. A region fed
by another region alone (no parameter or input of its own) cannot be told apart from it and its nodes go to the
region before it; ``regions`` says so per region (``shared_with``).
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any, Dict, Iterable, List, Set

if TYPE_CHECKING:  # pragma: no cover
    from .result import Diff

#: Op names of compiled regions in the autograd graph (AOTAutograd's backward; its names across torch versions).
REGION_OPS = ("CompiledFunctionBackward", "CompiledFunction")


def is_region(op: Any) -> bool:
    return isinstance(op, str) and op.startswith(REGION_OPS)


def _reach(nx: Any, start: Iterable[int], forward: bool) -> Set[int]:
    """Nodes reachable from ``start`` (not including them unless reached again) along edges (``forward``: input
    → consumer) or against them."""
    nxt = nx._succ if forward else nx._pred
    seen: Set[int] = set()
    stack = [v for s in start for v in nxt[s]]
    while stack:
        v = stack.pop()
        if v not in seen:
            seen.add(v)
            stack.extend(nxt[v])
    return seen


def regions(d: "Diff") -> List[Dict[str, Any]]:
    """One record per compiled region of ``d.b`` (the side; ``d.a`` is the reference), in node-id order::

        {"node": b_id, "op": "CompiledFunctionBackward", "covers": [a_id, ...], "inputs": [b_id, ...],
         "consumers": [b_id, ...], "ops": {"AddmmBackward0": 3, ...}, "sources": ["model.py:12", ...],
         "bwd_ms": region time | None, "covered_bwd_ms": sum over the covered nodes | None, "shared_with": [b_id]}

    ``covers`` (the reference's node ids) is what the region stands for; ``ops`` and ``sources`` summarise them
    (the lines of the reference's code the region compiled). Empty when ``d.b`` has no compiled region."""
    ga, gb = d.a.nx, d.b.nx
    na, nb = ga._node, gb._node
    regs = sorted(n for n, rec in nb.items() if is_region(rec.get("op")))
    if not regs:
        return []
    reg_set = set(regs)
    roots_a = [n for n in ga if not ga._succ[n]]
    # components of regions joined by region -> region edges (graph breaks)
    comp: Dict[int, int] = {}
    for r in regs:
        if r in comp:
            continue
        stack, comp[r] = [r], r
        while stack:
            v = stack.pop()
            for w in list(gb._succ[v]) + list(gb._pred[v]):
                if w in reg_set and w not in comp:
                    comp[w] = r
                    stack.append(w)
    members: Dict[int, List[int]] = {}
    for r in regs:
        members.setdefault(comp[r], []).append(r)
    # a reference node whose counterpart is an ordinary node of B was not fused
    kept_outside = {x for x, y in d.matched if y not in reg_set}
    own_in: Dict[int, Set[int]] = {}
    for r in regs:
        own_in[r] = {a for u in gb._pred[r] if u not in reg_set
                     for a in (d.counterpart(u, "b"),) if a is not None}
    out: Dict[int, Dict[str, Any]] = {}
    for group in members.values():
        ins = set().union(*(own_in[r] for r in group))
        outs = {a for r in group for v in gb._succ[r] if v not in reg_set
                for a in (d.counterpart(v, "b"),) if a is not None}
        top = {a for r in group if not gb._succ[r] for a in roots_a}
        below = _reach(ga, outs, forward=False) | (_reach(ga, top, forward=False) | top)
        covered = (_reach(ga, ins, forward=True) & below) - ins - outs - kept_outside
        if not ins:  # a region with no matched input (inputs that are not leaves, unmatched): all above outs
            covered = below - outs - kept_outside
        # the most downstream region first: the one with the most regions of its group upstream of it
        upstream = {r: len(_reach(gb, [r], forward=False) & set(group)) for r in group}
        order = sorted(group, key=lambda r: (-upstream[r], r))
        reach_of = {r: _reach(ga, own_in[r], forward=True) for r in group}
        assigned: Dict[int, List[int]] = {r: [] for r in group}
        for x in sorted(covered):
            owner = next((r for r in order if x in reach_of[r]), order[-1])
            assigned[owner].append(x)
        for r in group:
            cov = assigned[r]
            ops: Dict[str, int] = {}
            for x in cov:
                op = str(na[x].get("op"))
                ops[op] = ops.get(op, 0) + 1
            sources = sorted({str(na[x]["source"]) for x in cov if na[x].get("source")})
            times = [na[x].get("bwd_ms") for x in cov]
            known = [t for t in times if isinstance(t, (int, float))]
            out[r] = {
                "node": r, "op": nb[r].get("op"), "covers": cov,
                "inputs": sorted(u for u in gb._pred[r]), "consumers": sorted(v for v in gb._succ[r]),
                "ops": dict(sorted(ops.items(), key=lambda kv: (-kv[1], kv[0]))), "sources": sources,
                "bwd_ms": nb[r].get("bwd_ms"), "covered_bwd_ms": sum(known) if known and len(known) == len(times)
                else None, "shared_with": sorted(x for x in group if x != r),
            }
    return [out[r] for r in regs]


def describe(rec: Dict[str, Any], label: str = "") -> str:
    """``"CompiledFunctionBackward #0 covers 23 nodes of eager: AddmmBackward0 ×4, ... (model.py:12-20)"``."""
    ops = ", ".join(f"{op} ×{n}" for op, n in list(rec["ops"].items())[:5])
    more = ", ..." if len(rec["ops"]) > 5 else ""
    where = f" ({', '.join(rec['sources'][:4])}{', ...' if len(rec['sources']) > 4 else ''})" if rec["sources"] else ""
    of = f" of {label}" if label else ""
    return f"{rec['op']} #{rec['node']} covers {len(rec['covers'])} nodes{of}: {ops}{more}{where}"

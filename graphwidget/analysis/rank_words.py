"""A rank set's record in words (torch-free): the sentence, the report, the nodes that vary most across ranks.

Shared by :class:`graphwidget.analysis.ranks.RankSet` and an N-way document of kind ``"ranks"`` read back
(:class:`graphwidget.analysis.diff.multi.MultiDiff`), which has the record but not every rank's graph.
"""
from __future__ import annotations

from typing import Any, Dict, List, Tuple

#: A rank is the straggler when its compute exceeds the median rank's by at least this share of it and of the
#: median rank's whole step (and :data:`STRAGGLER_FLOOR_MS`): below that, ranks differ by noise.
STRAGGLER_SHARE = 0.10
STRAGGLER_FLOOR_MS = 0.05


def ranks_sentence(r: Dict[str, Any]) -> str:
    """``"4 ranks: rank 3 is the straggler (+210 ms compute over the median, most in node #7); rank 2's graph
    differs (from train.py:44); unused parameters on rank 1: extra.weight, extra.bias"``."""
    n = len(r.get("ranks") or [])
    parts = []
    s = r.get("straggler")
    if s:
        where = f", most in node #{s['node']} (+{s['node_excess_ms']:.3g} ms)" if s.get("node") is not None else ""
        parts.append(f"rank {s['rank']} is the straggler (+{s['excess_ms']:.3g} ms compute over the median "
                     f"{s['median_ms']:.3g} ms{where})")
    elif any(p.get("compute_ms") is not None for p in r.get("per_rank") or []):
        parts.append("no straggler (no rank's compute stands out from the others')")
    div = r.get("divergent") or []
    for d in div:
        first = d.get("first") or {}
        src = f" at {first['source']}" if first.get("source") else ""
        parts.append(f"rank {d['rank']}'s graph differs{src} ({_n(len(d.get('added') or []), 'node')} only there, "
                     f"{len(d.get('removed') or [])} missing)")
    if not div and n > 1:
        parts.append("every rank built the same graph")
    for rank, names in sorted((r.get("unused") or {}).items(), key=lambda kv: int(kv[0])):
        shown = ", ".join(names[:4]) + (f", +{len(names) - 4} more" if len(names) > 4 else "")
        parts.append(f"unused parameters on rank {rank}: {shown}")
    return f"{n} rank{'s' if n != 1 else ''}: " + "; ".join(parts)


def _n(k: int, word: str) -> str:
    return f"{k} {word}{'s' if k != 1 else ''}"


def fmt(v: Any) -> str:
    return "-" if v is None else f"{v:.3g}"


def ranks_report(r: Dict[str, Any], top: int = 10) -> str:
    """The record as text: the sentence, a row per rank, the divergent lines, the nodes that vary most."""
    lines = [ranks_sentence(r), "", f"  {'rank':>5} {'fwd ms':>9} {'bwd ms':>9} {'compute':>9} {'wait':>9} "
                                    f"{'nodes':>7}  graph      unused"]
    for p in r.get("per_rank") or []:
        lines.append(f"  {p['rank']:>5} {fmt(p['forward_ms']):>9} {fmt(p['backward_ms']):>9} "
                     f"{fmt(p['compute_ms']):>9} {fmt(p['wait_ms']):>9} {p['nodes']:>7}  "
                     f"{'same' if p['same_structure'] else 'DIFFERS':<9}  {', '.join(p['unused']) or '-'}")
    for d in r.get("divergent") or []:
        first = d.get("first") or {}
        lines.append(f"  rank {d['rank']} parts from rank {r.get('reference_rank')} at {first.get('source') or '?'}"
                     f": {(first.get('code') or '').strip()} ({first.get('op')}, "
                     f"{'only on rank ' + str(d['rank']) if first.get('in') == 'rank' else 'missing there'})")
        if len(d.get("lines") or []) > 1:
            lines.append(f"    lines involved: {', '.join(d['lines'][:8])}")
    spread = top_spread(r, top)
    if spread:
        lines.append("  nodes whose time varies most across ranks (forward + backward ms):")
        for node, s in spread:
            lines.append(f"    #{node:<6} min {fmt(s['min'])}  median {fmt(s['median'])}  max {fmt(s['max'])} "
                         f"(rank {s['straggler']})  spread {fmt(s['spread_ms'])}")
    g = r.get("gather")
    if isinstance(g, dict) and g.get("via"):
        lines.append(f"  gathered by {g['via']} in {fmt(g.get('seconds'))} s ({g.get('bytes')} bytes)")
    return "\n".join(lines)


def top_spread(r: Dict[str, Any], top: int = 10) -> List[Tuple[int, Dict[str, Any]]]:
    """The ``top`` reference nodes with the largest spread of time across ranks: ``[(node id, stats)]``."""
    nodes = r.get("nodes") or {}
    st = nodes.get("stats")
    if not st:
        return []
    ids = nodes.get("ids") or []
    order = sorted((k for k in range(len(ids)) if st["spread_ms"][k]), key=lambda k: -st["spread_ms"][k])[:top]
    return [(ids[k], {key: st[key][k] for key in ("min", "median", "max", "straggler", "spread_ms")})
            for k in order]

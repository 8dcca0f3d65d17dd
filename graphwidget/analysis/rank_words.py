"""A rank set's record in words (torch-free): the sentence, the report, the nodes that vary most across ranks.

Shared by :class:`graphwidget.analysis.ranks.RankSet` and an N-way document of kind ``"ranks"`` read back
(:class:`graphwidget.analysis.diff.multi.MultiDiff`), which has the record but not every rank's graph.
"""
from __future__ import annotations

from typing import Any, Dict, List, Tuple

#: A rank is the straggler when it exceeds the median of the other ranks by at least this share of it and of their
#: whole step, and by :data:`STRAGGLER_FLOOR_MS`: below that, ranks differ by noise (two identical ranks of a
#: sub-millisecond step differ by a few tenths of a millisecond from run to run).
STRAGGLER_SHARE = 0.10
STRAGGLER_FLOOR_MS = 1.0


def ranks_sentence(r: Dict[str, Any]) -> str:
    """``"4 ranks: rank 3 is the straggler (+210 ms compute over the median, most in node #7); rank 2's graph
    differs (from train.py:44); unused parameters on rank 1: extra.weight, extra.bias"``."""
    n = len(r.get("ranks") or [])
    parts = []
    s = r.get("straggler")
    if s:
        parts.append(straggler_words(s))
    elif any(p.get("compute_ms") is not None for p in r.get("per_rank") or []):
        parts.append(f"no straggler (no rank's step or compute exceeds the other ranks' by "
                     f"{100 * STRAGGLER_SHARE:.0f} % and {STRAGGLER_FLOOR_MS:g} ms)")
    div = r.get("divergent") or []
    for d in div:
        first = d.get("first") or {}
        src = f" at {first['source']}" if first.get("source") else ""
        parts.append(f"rank {d['rank']}'s graph differs{src} ({_n(len(d.get('added') or []), 'node')} only there, "
                     f"{len(d.get('removed') or [])} missing)")
    if not div and n > 1:
        parts.append("every rank built the same graph")
    for rank, names in sorted((r.get("unused") or {}).items(), key=lambda kv: int(kv[0])):
        parts.append(f"unused parameters on rank {rank}: {', '.join(names)}")
    unknown = [p["rank"] for p in r.get("per_rank") or [] if p.get("unused_scanned") is False]
    if unknown:
        parts.append(f"unused parameters unknown on rank{'s' if len(unknown) > 1 else ''} "
                     f"{', '.join(map(str, unknown))} (no nn.Module found to scan: pass module=)")
    return f"{n} rank{'s' if n != 1 else ''}: " + "; ".join(parts)


def straggler_words(s: Dict[str, Any]) -> str:
    """``"rank 1 is the straggler (+50.2 ms over the other ranks' 3.1 ms, its whole step: forward wall + backward
    nodes; most in AddmmBackward0 of layers.0 at train.py:12, +0.3 ms)"``."""
    what = ("its whole step: forward wall + backward nodes" if s.get("measure", "compute") == "own"
            else "time inside nodes")
    others = s.get("others_ms", s.get("median_ms"))
    text = f"rank {s['rank']} is the straggler (+{s['excess_ms']:.3g} ms over the other ranks' {others:.3g} ms, {what}"
    ne = s.get("node_excess_ms")
    if s.get("node") is not None and ne is not None and ne >= STRAGGLER_FLOOR_MS:
        where = f"{s.get('op') or 'node #' + str(s['node'])}"
        if s.get("module"):
            where += f" of {s['module']}"
        if s.get("source"):
            where += f" at {str(s['source']).replace(chr(92), '/').rsplit('/', 1)[-1]}"
        text += f"; most in {where}, +{ne:.3g} ms"
    elif s.get("measure") == "own":
        text += "; in no node: Python time between ops or waiting"
    return text + ")"


def _n(k: int, word: str) -> str:
    return f"{k} {word}{'s' if k != 1 else ''}"


def _unused_cell(p: Dict[str, Any]) -> str:
    """The unused parameters of one rank: their names, "none", or "unknown" when no module was scanned."""
    if p.get("unused_scanned") is False:
        return "unknown"
    return ", ".join(p.get("unused") or []) or "none"


def fmt(v: Any) -> str:
    return "-" if v is None else f"{v:.3g}"


def ranks_report(r: Dict[str, Any], top: int = 10) -> str:
    """The record as text: the sentence, a row per rank, the divergent lines, the nodes that vary most."""
    lines = [ranks_sentence(r), "", f"  {'rank':>5} {'fwd ms':>9} {'bwd ms':>9} {'compute':>9} {'wait':>9} "
                                    f"{'nodes':>7}  graph      unused"]
    for p in r.get("per_rank") or []:
        lines.append(f"  {p['rank']:>5} {fmt(p['forward_ms']):>9} {fmt(p['backward_ms']):>9} "
                     f"{fmt(p['compute_ms']):>9} {fmt(p['wait_ms']):>9} {p['nodes']:>7}  "
                     f"{'same' if p['same_structure'] else 'DIFFERS':<9}  {_unused_cell(p)}")
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

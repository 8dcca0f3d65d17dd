"""Memory in a diff: the two peaks (measured by ``gw.compare(..., memory=True)``, or from graphs profiled with
``memory=True``), the change of saved activation bytes per module, and a line for the report. Torch-free."""
from __future__ import annotations

from typing import TYPE_CHECKING, Any, Dict, List, Optional, Tuple

from ..._util.text import human_bytes
from ...model._digraph import node_dicts

if TYPE_CHECKING:  # pragma: no cover
    from .result import Diff


def saved_by_module(graph: Any) -> Dict[str, int]:
    """Saved activation bytes (distinct storages, parameters' left out) per module path ("" for the top level)."""
    nodes = node_dicts(graph.nx)
    leaf = {(d.get("tensor") or {}).get("storage") for d in nodes.values() if d.get("kind") == "leaf"}
    seen: Dict[Any, str] = {}
    size: Dict[Any, int] = {}
    for v in sorted(nodes, key=lambda v: (nodes[v].get("seq") is None, nodes[v].get("seq") or 0, v)):
        for s in nodes[v].get("saved") or ():
            sid = s.get("storage")
            if sid is None or sid in leaf or s.get("freed") or s.get("packed") or sid in seen:
                continue
            seen[sid] = nodes[v].get("module") or ""
            size[sid] = s.get("storage_bytes") or 0
    out: Dict[str, int] = {}
    for sid, mod in seen.items():
        out[mod] = out.get(mod, 0) + size[sid]
    return out


def _strip(paths: Dict[str, int], prefix: str) -> Dict[str, int]:
    out: Dict[str, int] = {}
    for k, v in paths.items():
        k2 = k[len(prefix) + 1:] if k.startswith(prefix + ".") else ("" if k == prefix else k)
        out[k2] = out.get(k2, 0) + v
    return out


def _aligned(a: Dict[str, int], b: Dict[str, int]) -> Tuple[Dict[str, int], Dict[str, int]]:
    """The same model wrapped on one side (``gw.with_checkpoint`` names it ``model``): module paths there carry one
    more leading name. Strip it where that makes more paths agree."""
    best = (len(set(a) & set(b)), a, b)
    for side in (0, 1):
        mine, other = (a, b) if side == 0 else (b, a)
        for prefix in {k.split(".")[0] for k in mine if k}:
            stripped = _strip(mine, prefix)
            score = len(set(stripped) & set(other))
            if score > best[0]:
                best = (score, stripped, other) if side == 0 else (score, other, stripped)
    return best[1], best[2]


def _graph_peak(graph: Any) -> Optional[int]:
    if not isinstance(graph.meta.get("memory"), dict):
        return None
    from ..memory import Accounting, peak_point
    acc = Accounting(graph)
    if acc.n == 0:
        return None
    return peak_point(graph.meta["memory"], acc)[1]


def clean_measured(v: Any) -> Optional[Dict[str, Any]]:
    """A file's measured peaks, typed as the words need them (or None)."""
    if not isinstance(v, dict):
        return None
    peak = v.get("peak")
    if not (isinstance(peak, dict) and all(isinstance(peak.get(k), (int, float)) or peak.get(k) is None
                                           for k in ("a", "b"))):
        return None
    if not peak.get("measured"):
        return None
    return {"peak": [peak.get("a"), peak.get("b")], "source": str(peak.get("source") or ""), "measured": True}


def memory_summary(d: "Diff", top: int = 10) -> Optional[Dict[str, Any]]:
    """``{"peak": {"a", "b", "delta", "ratio", "source", "measured"}, "saved_by_module": [rows]}``, or None when
    neither a measured peak nor any saved bytes differ. Rows: ``{"module", "a", "b", "delta"}``, largest change
    first."""
    peak: Optional[Dict[str, Any]] = None
    if isinstance(d.memory, dict) and isinstance(d.memory.get("peak"), list):
        a, b = d.memory["peak"]
        peak = {"a": a, "b": b, "source": d.memory.get("source"), "measured": True}
    else:
        a, b = _graph_peak(d.a), _graph_peak(d.b)
        if a is not None or b is not None:
            peak = {"a": a, "b": b, "source": "memory=True profiles of each graph", "measured": True}
    if peak is not None:
        a, b = peak["a"], peak["b"]
        peak["delta"] = None if a is None or b is None else b - a
        peak["ratio"] = None if a is None or b is None or a == 0 else b / a
    sa, sb = _aligned(saved_by_module(d.a), saved_by_module(d.b))
    rows: List[Dict[str, Any]] = []
    for mod in set(sa) | set(sb):
        x, y = sa.get(mod, 0), sb.get(mod, 0)
        if x != y:
            rows.append({"module": mod, "a": x, "b": y, "delta": y - x})
    rows.sort(key=lambda r: (-abs(r["delta"]), r["module"]))
    if peak is None and not rows:
        return None
    return {"peak": peak, "saved_by_module": rows[:top]}


def memory_sentence(d: "Diff", mem: Optional[Dict[str, Any]] = None) -> Optional[str]:
    """``"peak −410 MiB (−35 %, measured), step +22 % (measured)"``: B against A."""
    mem = mem if mem is not None else memory_summary(d)
    if not mem or not mem.get("peak") or mem["peak"].get("delta") is None:
        return None
    p = mem["peak"]
    delta = p["delta"]
    sign = "+" if delta > 0 else "−" if delta < 0 else "±"
    pct = f", {100 * (p['ratio'] - 1):+.0f} %" if p.get("ratio") is not None else ""
    text = f"peak {sign}{human_bytes(abs(delta))} ({human_bytes(p['a'])} -> {human_bytes(p['b'])}{pct}, measured)"
    step = (d.timing or {}).get("step") if isinstance(d.timing, dict) else None
    if isinstance(step, dict) and isinstance(step.get("ratio"), (int, float)):
        text += f", step {100 * (step['ratio'] - 1):+.0f} % (measured, {step.get('verdict')})"
    return text


def memory_text(d: "Diff", mem: Optional[Dict[str, Any]]) -> Optional[str]:
    """The report's memory lines (None when there is nothing to say)."""
    if not mem:
        return None
    lines = []
    s = memory_sentence(d, mem)
    if s:
        lines.append(f"memory: {s}; source: {mem['peak'].get('source')}")
    rows = mem.get("saved_by_module") or []
    if rows:
        la, lb = d.labels
        lines.append(f"  saved activations by module ({la} -> {lb}):")
        for r in rows[:6]:
            lines.append(f"    {r['module'] or '(top level)'}: {human_bytes(r['a'])} -> {human_bytes(r['b'])} "
                         f"({'+' if r['delta'] > 0 else ''}{human_bytes(r['delta'])})")
    return "\n".join(lines) if lines else None

"""The Changes tables of a diff: per op type (``by_op``) or per forward source line (``by_source``), the nodes added,
removed and changed, and each side's count, times and bytes with the delta (B − A).

A row exists when something in it differs: a node added, removed or changed, or a total that moved (bytes at all,
times by the noise rule of :func:`graphwidget.analysis.diff.fields.times_differ`). Rows are sorted by the size of the
gradient-bytes delta, then of the backward-time delta (what the Changes tab lists first).
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any, Callable, Dict, Iterable, List, Optional, Tuple

from ..._util.text import TextTable, human_bytes
from ...model._digraph import node_dicts
from .fields import times_differ

if TYPE_CHECKING:  # pragma: no cover
    from .result import Diff

COST_KEYS = ("count", "bwd_ms", "fwd_ms", "grad_bytes", "saved_bytes")
LEAF_KEY = "(leaf)"
NO_SOURCE = "(no source)"


def op_key(d: Dict[str, Any]) -> str:
    return str(d.get("op") or "?")


def source_key(d: Dict[str, Any]) -> str:
    if d.get("source"):
        return str(d["source"])
    return LEAF_KEY if d.get("kind") == "leaf" else NO_SOURCE


def _sums(records: Iterable[Dict[str, Any]], key: Callable[[Dict[str, Any]], str]) -> Dict[str, Dict[str, Any]]:
    """Each group's costs (``COST_KEYS``) over ``records``, in one flat loop: this runs once per node of both graphs,
    so a function call per record for the sums would cost as much as the rest of the table. Times stay None in a
    group where no record has one, and are summed in record order."""
    acc: Dict[str, List[Any]] = {}
    get = acc.get
    for rec in records:
        k = key(rec)
        c = get(k)
        if c is None:
            c = acc[k] = [0, 0, 0, None, None]
        c[0] += 1
        v = rec.get("grad_bytes")
        if v:
            c[1] += v
        v = rec.get("saved_bytes")
        if v:
            c[2] += v
        v = rec.get("bwd_ms")
        if v is not None:
            c[3] = (c[3] or 0.0) + v
        v = rec.get("fwd_ms")
        if v is not None:
            c[4] = (c[4] or 0.0) + v
    return {k: {"count": n, "bwd_ms": b, "fwd_ms": f, "grad_bytes": g, "saved_bytes": s}
            for k, (n, g, s, b, f) in acc.items()}


def _empty() -> Dict[str, Any]:
    return {"count": 0, "bwd_ms": None, "fwd_ms": None, "grad_bytes": 0, "saved_bytes": 0}


def _delta(a: Dict[str, Any], b: Dict[str, Any]) -> Dict[str, Any]:
    return {k: (None if a[k] is None or b[k] is None else b[k] - a[k]) for k in COST_KEYS}


def rows(d: "Diff", key: Callable[[Dict[str, Any]], str]) -> "DiffTable":
    """The rows of ``d`` grouped by ``key(node record)`` (see the module docstring)."""
    na, nb = node_dicts(d.a.nx), node_dicts(d.b.nx)
    sa, sb = _sums(na.values(), key), _sums(nb.values(), key)
    # every key a node of either side has: what the removed, added and changed nodes below file under
    table: Dict[str, Dict[str, Any]] = {
        k: {"key": k, "added": [], "removed": [], "changed": [], "a": sa.get(k) or _empty(), "b": sb.get(k) or _empty()}
        for k in {**sa, **sb}}
    for i in d.removed:
        table[key(na[i])]["removed"].append(i)
    for i in d.added:
        table[key(nb[i])]["added"].append(i)
    for a, b, _ in d.changed:
        ka, kb = key(na[a]), key(nb[b])
        table[ka]["changed"].append([a, b])
        if kb != ka:
            table[kb]["changed"].append([a, b])
    out = DiffTable()
    for r in table.values():
        r["delta"] = _delta(r["a"], r["b"])
        moved = (r["delta"]["grad_bytes"] or r["delta"]["saved_bytes"]
                 or times_differ(r["a"]["bwd_ms"], r["b"]["bwd_ms"])
                 or times_differ(r["a"]["fwd_ms"], r["b"]["fwd_ms"]))
        if r["added"] or r["removed"] or r["changed"] or moved:
            out.append(r)
    out.sort(key=lambda r: (-abs(r["delta"]["grad_bytes"] or 0), -abs(r["delta"]["bwd_ms"] or 0.0), r["key"]))
    return out


class DiffTable(TextTable):
    """Rows of :meth:`Diff.by_op` / :meth:`Diff.by_source` (dicts in the diff format's ROW shape); prints as an
    aligned text table and renders as HTML in notebooks."""

    columns: Tuple[str, ...] = ("key", "A", "B", "grad bytes A -> B", "bwd ms A -> B", "added", "removed", "changed")

    def _cells(self, r: Dict[str, Any]) -> List[str]:
        a, b = r["a"], r["b"]
        key = r["key"].replace("\\", "/").rsplit("/", 1)[-1]
        return [key, str(a["count"]), str(b["count"]),
                f"{human_bytes(a['grad_bytes'])} -> {human_bytes(b['grad_bytes'])}",
                f"{_ms(a['bwd_ms'])} -> {_ms(b['bwd_ms'])}",
                str(len(r["added"])), str(len(r["removed"])), str(len(r["changed"]))]


def _ms(v: Optional[float]) -> str:
    return "-" if v is None else f"{v:.3f}"

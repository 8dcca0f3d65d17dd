"""Hand-made diff documents ("graphwidget-diff", docs/diff.md) for the diff view's tests and benchmark.

`make_diff` fills the summary and the Changes rows from the two graphs and the match the way the Python side
documents them, so the view is tested against complete documents without depending on the analysis code.
`diff_page` writes an export-like page: the document as gzip + base64 in a data-kind="diff" script with the
data-colour Python would write, viewer.js inlined, the export's Content-Security-Policy.
"""
from __future__ import annotations

import base64
import copy
import gzip
import json
import random
from typing import Any, Dict, Iterable, List, Optional, Sequence, Tuple

import fixtures as fx
from pagekit import STATIC

from graphwidget.views.export import CSP
from graphwidget.views.payload import COLOUR_METRICS, available_metrics, default_colour

COST_KEYS = ("bwd_ms", "fwd_ms", "grad_bytes", "saved_bytes")


def _totals(g: Dict[str, Any]) -> Dict[str, Any]:
    def total(key: str) -> Optional[float]:
        vals = [n.get(key) for n in g["nodes"] if n.get(key) is not None]
        return round(sum(vals), 6) if vals else None
    return {"nodes": len(g["nodes"]), "edges": len(g["edges"]), "saved_bytes": total("saved_bytes") or 0,
            "grad_bytes": total("grad_bytes") or 0, "forward_ms": total("fwd_ms"), "backward_ms": total("bwd_ms")}


def _delta(a: Optional[float], b: Optional[float]) -> Optional[float]:
    return None if a is None or b is None else round(b - a, 6)


def _ratio(a: Optional[float], b: Optional[float]) -> Optional[float]:
    return None if a is None or b is None or a == 0 else b / a


def _costs(nodes: Iterable[Dict[str, Any]]) -> Dict[str, Any]:
    nodes = list(nodes)
    out: Dict[str, Any] = {"count": len(nodes)}
    for k in COST_KEYS:
        vals = [n.get(k) for n in nodes if n.get(k) is not None]
        out[k] = round(sum(vals), 6) if vals else (None if k.endswith("ms") else 0)
    return out


def _rows(a: Dict[str, Any], b: Dict[str, Any], changed: List[Tuple[int, int, List[str]]], removed: List[int],
          added: List[int], key: str) -> List[Dict[str, Any]]:
    na = {n["id"]: n for n in a["nodes"]}
    nb = {n["id"]: n for n in b["nodes"]}
    keyf = (lambda n: n["op"]) if key == "op" else (lambda n: n.get("source") or "(no source)")
    rows: Dict[str, Dict[str, Any]] = {}

    def row(k: str) -> Dict[str, Any]:
        return rows.setdefault(k, {"key": k, "added": [], "removed": [], "changed": []})
    for i in removed:
        row(keyf(na[i]))["removed"].append(i)
    for j in added:
        row(keyf(nb[j]))["added"].append(j)
    for i, j, _ in changed:
        row(keyf(na[i]))["changed"].append([i, j])
    out = []
    for r in rows.values():
        sa = [na[i] for i in r["removed"]] + [na[i] for i, _ in r["changed"]]
        sb = [nb[j] for j in r["added"]] + [nb[j] for _, j in r["changed"]]
        r["a"], r["b"] = _costs(sa), _costs(sb)
        r["delta"] = {k: _delta(r["a"][k], r["b"][k]) for k in ("count",) + COST_KEYS}
        out.append(r)
    out.sort(key=lambda r: (-abs(r["delta"]["grad_bytes"] or 0), -abs(r["delta"]["bwd_ms"] or 0), r["key"]))
    return out


def make_diff(a: Dict[str, Any], b: Dict[str, Any], *, matched: Sequence[Tuple[int, int]],
              changed: Sequence[Tuple[int, int, List[str]]], removed: Sequence[int], added: Sequence[int],
              labels: Sequence[str] = ("A", "B"), timing: Optional[Dict[str, Any]] = None,
              equivalence: Optional[Dict[str, Any]] = None) -> Dict[str, Any]:
    ta, tb = _totals(a), _totals(b)
    changed = [(i, j, list(f)) for i, j, f in changed]
    return {
        "format": "graphwidget-diff", "version": 1, "labels": list(labels), "a": a, "b": b,
        "matched": [list(p) for p in matched], "changed": [list(c) for c in changed],
        "removed": list(removed), "added": list(added),
        "summary": {"a": ta, "b": tb, "delta": {k: _delta(ta[k], tb[k]) for k in ta},
                    "ratio": {k: _ratio(ta[k], tb[k]) for k in ta}, "timing": timing, "equivalence": equivalence},
        "changes": {"by_op": _rows(a, b, changed, list(removed), list(added), "op"),
                    "by_source": _rows(a, b, changed, list(removed), list(added), "source")},
        "findings": None,
    }


def small_pair(labels: Sequence[str] = ("repeat", "broadcast"), *, equivalent: bool = True) -> Dict[str, Any]:
    """A: loss ← mul ← (x, repeat ← w); B: loss ← mul ← (x, expand ← w) + an extra scale op.

    Matched: 0↔0 (unchanged), 1↔1 (changed: saved_bytes, bwd_ms), 2↔2 (unchanged leaf x), 4↔4 (leaf w).
    Removed: A 3 (RepeatBackward0). Added: B 3 (ExpandBackward0), B 5 (MulBackward0 scale).
    """
    n = fx.node
    a = fx.graph([
        n(0, "SumBackward0", shape=(), seq=3, source="model.py:30", code="loss = y.sum()", bwd_ms=0.02, fwd_ms=0.01),
        n(1, "MulBackward0", shape=(8, 9), seq=2, source="model.py:20", code="y = x * w.repeat(8, 1)",
          saved_list=[fx.saved("self", [8, 9]), fx.saved("other", [8, 9])], bwd_ms=0.5, fwd_ms=0.1),
        n(2, "AccumulateGrad", shape=(8, 9), leaf_name="x"),
        n(3, "RepeatBackward0", shape=(8, 9), seq=1, source="model.py:20", code="y = x * w.repeat(8, 1)",
          attrs={"repeats": [8, 1]}, bwd_ms=1.5, fwd_ms=0.2),
        n(4, "AccumulateGrad", shape=(1, 9), leaf_name="w"),
    ], [fx.edge(1, 0, shape=(8, 9)), fx.edge(2, 1, slot=0, shape=(8, 9)), fx.edge(3, 1, slot=1, shape=(8, 9)),
        fx.edge(4, 3, shape=(1, 9))], title="repeat", traced=True, timed=True)
    b = fx.graph([
        n(0, "SumBackward0", shape=(), seq=4, source="model.py:30", code="loss = y.sum()", bwd_ms=0.02, fwd_ms=0.01),
        n(1, "MulBackward0", shape=(8, 9), seq=3, source="model.py:20", code="y = x * w.expand(8, 9)",
          saved_list=[fx.saved("self", [8, 9])], bwd_ms=0.3, fwd_ms=0.1),
        n(2, "AccumulateGrad", shape=(8, 9), leaf_name="x"),
        n(3, "ExpandBackward0", shape=(8, 9), seq=2, source="model.py:21", code="y = x * w.expand(8, 9)",
          bwd_ms=0.1, fwd_ms=0.01),
        n(4, "AccumulateGrad", shape=(1, 9), leaf_name="w"),
        n(5, "MulBackward0", shape=(1, 9), seq=1, source="model.py:19", code="w = w * 2", bwd_ms=0.05, fwd_ms=0.01),
    ], [fx.edge(1, 0, shape=(8, 9)), fx.edge(2, 1, slot=0, shape=(8, 9)), fx.edge(3, 1, slot=1, shape=(8, 9)),
        fx.edge(5, 3, shape=(1, 9)), fx.edge(4, 5, shape=(1, 9))], title="broadcast", traced=True, timed=True)
    for g in (a, b):  # gradient bytes written: the sizes on the incoming edges
        for nd in g["nodes"]:
            nd["grad_bytes"] = sum(4 * _numel(e["shape"]) for e in g["edges"] if e["target"] == nd["id"]) or None
    eq = {"equivalent": True, "tensors": [{"name": "output", "allclose": True, "max_abs": 0.0, "max_rel": 0.0, "shape_a": [], "shape_b": []}]}
    if not equivalent:
        eq = {"equivalent": False, "tensors": [
            {"name": "output", "allclose": False, "max_abs": 0.25, "max_rel": 0.031, "shape_a": [], "shape_b": []},
            {"name": "grad w", "allclose": True, "max_abs": 1e-7, "max_rel": 2e-7, "shape_a": [1, 9], "shape_b": [1, 9]}]}
    return make_diff(a, b, matched=[(0, 0), (1, 1), (2, 2), (4, 4)], changed=[(1, 1, ["saved", "saved_bytes", "bwd_ms", "code"])],
                     removed=[3], added=[3, 5], labels=labels,
                     timing={"ratio": 0.31, "low": 0.28, "high": 0.35, "runs": 20, "verdict": "B faster"}, equivalence=eq)


def _numel(shape: Sequence[int]) -> int:
    p = 1
    for s in shape:
        p *= s
    return p


def big_pair(n: int, *, seed: int = 1, change: float = 0.02, remove: float = 0.01, add: float = 0.01) -> Dict[str, Any]:
    """A: a random DAG of n nodes. B: the same with a share of nodes changed (cost fields), removed and added."""
    rng = random.Random(seed)
    a = fx.random_dag(n, seed=seed, timed=True, title=f"A {n}")
    b = copy.deepcopy(a)
    b["meta"]["title"] = f"B {n}"
    ids = [nd["id"] for nd in a["nodes"] if nd["id"] != 0]
    rng.shuffle(ids)
    k_rm, k_ch = int(n * remove), int(n * change)
    removed = set(ids[:k_rm])
    changed_ids = ids[k_rm:k_rm + k_ch]
    b["nodes"] = [nd for nd in b["nodes"] if nd["id"] not in removed]
    b["edges"] = [e for e in b["edges"] if e["source"] not in removed and e["target"] not in removed]
    byid = {nd["id"]: nd for nd in b["nodes"]}
    changed = []
    for i in changed_ids:
        nd = byid[i]
        nd["saved_bytes"] = (nd["saved_bytes"] or 0) * 2 + 64
        if nd.get("bwd_ms") is not None:
            nd["bwd_ms"] = round(nd["bwd_ms"] * 1.7, 4)
        changed.append((i, i, ["saved_bytes", "bwd_ms"]))
    added = []
    nxt = max(byid) + 1
    targets = [nd["id"] for nd in b["nodes"]]
    for _ in range(int(n * add)):
        t = rng.choice(targets)
        b["nodes"].append(fx.node(nxt, rng.choice(["CloneBackward0", "ExpandBackward0"]), seq=nxt, module=byid[t].get("module"),
                                  source="model.py:999", code="h = h.clone()", bwd_ms=0.01, fwd_ms=0.01))
        b["edges"].append(fx.edge(nxt, t, slot=9))
        added.append(nxt)
        nxt += 1
    matched = [(i, i) for i in byid]
    return make_diff(a, b, matched=matched, changed=changed, removed=sorted(removed), added=added, labels=(f"A {n}", f"B {n}"),
                     timing={"ratio": 1.12, "low": 1.05, "high": 1.2, "runs": 10, "verdict": "B slower"},
                     equivalence={"equivalent": True, "tensors": []})


def encode(doc: Dict[str, Any]) -> str:
    return base64.b64encode(gzip.compress(json.dumps(doc).encode("utf-8"), 6)).decode("ascii")


def diff_page(doc: Dict[str, Any], *, title: str = "diff") -> str:
    """An export-like page for a diff: CSP, #gw-root, the data script with data-kind="diff" and the colour Python
    would choose (data-colour: the default of the metrics both graphs have, as views/diff_payload.py does), viewer.js
    inlined."""
    have = set(available_metrics(doc["a"]["nodes"])) & set(available_metrics(doc["b"]["nodes"]))
    colour = default_colour(tuple(m for m in COLOUR_METRICS if m in have))
    viewer = (STATIC / "viewer.js").read_text(encoding="utf-8").replace("</script", "<\\/script").replace("<!--", "<\\!--")
    return ("<!doctype html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
            f'<meta http-equiv="Content-Security-Policy" content="{CSP}">\n'
            f"<title>{title}</title>\n<style>html,body{{margin:0;padding:0}}#gw-root{{height:100vh;border:0}}</style>\n"
            "</head>\n<body>\n<div id=\"gw-root\" class=\"graphwidget-root\" data-gw-state=\"loading\"></div>\n"
            f'<script type="application/octet-stream" id="gw-graph-data" data-encoding="gzip+base64" data-kind="diff" '
            f'data-colour="{colour}">{encode(doc)}</script>\n'
            f"<script>{viewer}</script>\n</body>\n</html>\n")

"""Rule ``saved-view-storage`` (info): a saved tensor that is a small view of a much larger storage, which then stays
alive until backward because of it.

``y = big[:, :8] * w`` saves the view ``big[:, :8]`` for the gradient of ``w``; a view keeps its whole storage,
so all of ``big`` stays in memory until backward even when nothing else needs it. Reported when the saved views of
one storage together cover at most 1/:data:`MAX_COVER` of it, the rest is at least :data:`MIN_WASTE` bytes, and the
storage is not a parameter's (which lives anyway). "Info": something outside the graph may hold the storage too.
"""
from __future__ import annotations

from collections import defaultdict
from typing import Any, Dict, List, Set, Tuple

from ..._util.text import human_bytes
from .context import Context
from .finding import Finding
from .ops import fmt_shape

RULE = "saved-view-storage"
SEVERITY = "info"
SUMMARY = "a saved tensor that is a small view keeping a much larger storage alive until backward"
MAX_COVER = 4
MIN_WASTE = 1 << 20


def find(ctx: Context) -> List[Finding]:
    leaf_ids: Set[Any] = set()
    leaf_sizes: Set[Tuple[Any, Any]] = set()
    for d in ctx.node.values():
        t = d.get("tensor")
        if d.get("kind") == "leaf" and t:
            if t.get("storage") is not None:
                leaf_ids.add(t["storage"])
            leaf_sizes.add((t.get("storage_bytes") or t.get("bytes"), t.get("dtype")))
    # One pass of sums (most storages are saved whole, once); the records only for the few that qualify.
    covered: Dict[Any, int] = defaultdict(int)
    size: Dict[Any, int] = {}
    for d in ctx.node.values():
        for s in d.get("saved") or ():
            sid, b = s.get("storage"), s.get("bytes")
            if sid is None or b is None or s.get("freed") or s.get("packed"):
                continue
            covered[sid] += b  # a tensor saved twice counts twice: errs towards silence
            sb = s.get("storage_bytes") or 0
            if sb > size.get(sid, 0):
                size[sid] = sb
    wasteful = {sid for sid, c in covered.items()
                if c * MAX_COVER <= size.get(sid, 0) and size.get(sid, 0) - c >= MIN_WASTE}
    if not wasteful:
        return []
    by_storage: Dict[Any, List[Tuple[int, Dict[str, Any]]]] = defaultdict(list)
    for v, d in ctx.node.items():
        for s in d.get("saved") or ():
            if s.get("storage") in wasteful and not s.get("freed") and not s.get("packed"):
                by_storage[s["storage"]].append((v, s))
    out: List[Finding] = []
    for sid, recs in by_storage.items():
        storage = size[sid]
        waste = storage - covered[sid]
        dtype = recs[0][1].get("dtype")
        if sid in leaf_ids or (storage, dtype) in leaf_sizes:
            continue  # a parameter's storage lives anyway
        nodes = sorted({v for v, _ in recs}, key=ctx.rank.__getitem__)
        if any(v in ctx.claimed for v in nodes):
            continue
        v0, s0 = min(recs, key=lambda r: ctx.order(r[0]))
        op = ctx.node[v0].get("op")
        msg = (f"{op} saves `{s0.get('name')}` {fmt_shape(s0.get('shape'))} ({human_bytes(s0['bytes'])}), a view of a "
               f"{human_bytes(storage)} storage; saved views keep their whole storage, so {human_bytes(waste)} "
               f"more than the saved data stays in memory until backward, unless something else holds it anyway.")
        fix = ("save a copy of the small piece instead: .clone() the slice before the op that saves it (e.g. "
               "`part = big[:, :8].clone()`), or compute only the piece you need")
        total = ctx.total_saved_bytes
        out.append(ctx.finding(
            RULE, nodes, msg, fix, share=(waste / total) if total else None, share_of="saved_bytes",
            waste_bytes=waste, severity="info", at=v0,
            evidence={"bytes": covered[sid], "storage_bytes": storage, "shape": s0.get("shape"),
                      "saved_views": len(recs)}))
    return out

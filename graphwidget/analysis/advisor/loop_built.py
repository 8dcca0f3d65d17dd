"""Rule ``loop-built``: a Python loop that builds the graph out of many tiny nodes — ``for i in range(n): total =
total + x[i, 0] * x[i, 1]`` — where one vectorised expression would make a handful.

Every autograd node costs a few microseconds to record in forward and to run in backward whatever its size, so
thousands of nodes on a few bytes each are pure overhead. The rule looks for at least :data:`MIN_ITERATIONS`
index reads (select/slice/index) of the same tensor from the same source line(s), each a small piece of it, and
then checks that the loop *can* be vectorised:

* the lines involved (every line that made at least :data:`MIN_ITERATIONS` nodes and is connected to those reads)
  hold only indexing, views, element-wise arithmetic, reductions and stack/cat — no matmul, conv or custom
  Function (a per-sample model call is not "tiny");
* iterations do not feed each other: along any path through those nodes at most :data:`MAX_DEPTH` nodes are not
  plain accumulation (``+``, ``-``, stack, cat). A running sum qualifies; a recurrence (``h = tanh(h + x[i])``)
  does not, and is left alone (its reads may still be an ``index-repeated`` finding).
"""
from __future__ import annotations

from collections import Counter, defaultdict
from typing import Any, Dict, List, Optional, Set, Tuple

from ...model.dtypes import nbytes, numel
from . import suggest
from .context import Context
from .finding import Finding, short_source
from .ops import ACCUMULATE, COLLECT, INDEX, REDUCE, SPLIT, VIEW, fmt_shape, is_elementwise, norm_dim

RULE = "loop-built"
SEVERITY = "warning"
SUMMARY = "a Python loop of tiny index/arith nodes over one tensor that one vectorised expression would replace"
MIN_ITERATIONS = 16
MAX_DEPTH = 8
#: A read is "a piece" when it takes at most this fraction of the tensor.
MAX_PIECE = 1 / 8

Key = Tuple[str, Any]


def _tiny(op: str) -> bool:
    return (op in INDEX or op in VIEW or op in SPLIT or op in REDUCE or op in COLLECT or is_elementwise(op))


def find(ctx: Context) -> List[Finding]:
    by_key: Dict[Key, List[int]] = defaultdict(list)
    for v, d in ctx.node.items():
        src = d.get("source")
        if src:  # leaves have none
            by_key[(src, d.get("module"))].append(v)
    loop_keys = [k for k, vs in by_key.items() if len(vs) >= MIN_ITERATIONS]
    if not loop_keys:
        return []
    key_of: Dict[int, Key] = {}
    reads: Dict[Tuple[int, int], List[int]] = defaultdict(list)
    claimed, node, pred = ctx.claimed, ctx.node, ctx.pred
    for k in loop_keys:
        for v in by_key[k]:
            key_of[v] = k
            if node[v].get("op") in INDEX and v not in claimed and len(pred[v]) == 1:
                (u, e), = pred[v].items()
                if not e.get("also"):
                    # a full slice (torch < 2.5's `:` in x[:, i]) reads nothing by itself: the read is what follows
                    reads[(u, e.get("output") or 0)].append(ctx.past_full_slices(v))
    out: List[Finding] = []
    done: Set[Key] = set()
    for (u, out_k), readers in sorted(reads.items(), key=lambda kv: ctx.order(kv[0][0])):
        if len(readers) < MIN_ITERATIONS:
            continue
        tshape, tdtype = ctx.out(u, out_k)
        tnumel = numel(tshape)
        if not tnumel:
            continue
        pieces = [v for v in readers if (numel(ctx.out(v)[0]) or tnumel) <= tnumel * MAX_PIECE]
        if len(pieces) < MIN_ITERATIONS:
            continue
        comp = _component(ctx, {key_of[v] for v in pieces}, key_of, by_key)
        if comp & done:
            continue
        group = [v for key in comp for v in by_key[key]]
        if not all(_tiny(op or "") for op in {node[v].get("op") for v in group}):
            continue
        if _depth(ctx, group) > MAX_DEPTH:
            continue
        done |= comp
        group.sort(key=ctx.rank.__getitem__)
        pieces.sort(key=ctx.rank.__getitem__)
        nodes = pieces[:1] + [v for v in group if v != pieces[0]]
        ctx.claimed.update(nodes)
        out.append(_finding(ctx, u, out_k, tshape, tdtype, pieces, nodes, comp, by_key))
    return out


def _component(ctx: Context, start: Set[Key], key_of: Dict[int, Key], by_key: Dict[Key, List[int]]) -> Set[Key]:
    """The loop lines connected to ``start`` through edges between their nodes."""
    comp, todo = set(start), list(start)
    while todo:
        key = todo.pop()
        for v in by_key[key]:
            for nbrs in (ctx.succ[v], ctx.pred[v]):
                for w in nbrs:
                    other = key_of.get(w)
                    if other is not None and other not in comp:
                        comp.add(other)
                        todo.append(other)
    return comp


def _depth(ctx: Context, group: List[int]) -> int:
    """The most non-accumulating nodes on one path through ``group`` (iterations that feed each other grow it)."""
    depth: Dict[int, int] = dict.fromkeys(group, -1)  # -1: member not reached yet (never read: forward order)
    best = 0
    node, pred = ctx.node, ctx.pred
    for v in sorted(group, key=ctx.rank.__getitem__):
        d = 0
        for u in pred[v]:
            du = depth.get(u, 0)
            if du > d:
                d = du
        d += 0 if node[v].get("op") in ACCUMULATE else 1
        depth[v] = d
        if d > best:
            best = d
            if best > MAX_DEPTH:
                return best
    return best


def _loop_dim(ctx: Context, pieces: List[int], ndim: int) -> Tuple[Optional[int], int]:
    """The dim the loop walks (the one whose index changes from read to read) and how many distinct positions it
    visits (the iteration count)."""
    by_dim: Dict[Optional[int], Set[Any]] = defaultdict(set)
    for v in pieces:
        a = ctx.node[v].get("attrs") or {}
        pos = a.get("index", a.get("start"))
        by_dim[norm_dim(a.get("dim"), ndim)].add(pos if isinstance(pos, (int, float, str)) else id(v))
    dim, seen = max(by_dim.items(), key=lambda kv: len(kv[1]))
    return dim, len(seen)


def _finding(ctx: Context, u: int, k: int, tshape: Any, tdtype: Any, pieces: List[int], nodes: List[int],
             comp: Set[Key], by_key: Dict[Key, List[int]]) -> Finding:
    main = max(comp, key=lambda key: len(by_key[key]))
    at = min(by_key[main], key=ctx.rank.__getitem__)
    lines = sorted({short_source(key[0]) for key in comp})
    dim, iters = _loop_dim(ctx, pieces, len(tshape or ()))
    counts = Counter(ctx.node[v].get("op") for v in nodes)
    ops_txt = ", ".join(f"{c} {op}" for op, c in counts.most_common(3))
    name = ctx.tensor_name(u, k)
    where = f"line {lines[0]}" if len(lines) == 1 else f"lines {', '.join(lines)}"
    msg = (f"{len(nodes):,} autograd nodes from {where} ({ops_txt}): {len(pieces)} reads of small pieces of "
           f"{name} {fmt_shape(tshape)} and the arithmetic on them, about {iters} iterations of a Python loop. "
           f"Each node costs autograd a few µs to record and to run in backward while doing almost no work.")
    var = ctx.var_name(u, pieces)
    code = ctx.node[at].get("code")
    rewritten = suggest.vectorise_index(code, var, dim) if dim is not None else None
    if rewritten is not None:
        fix = f"{rewritten.strip()}  # one vectorised expression instead of the loop over dim {dim}"
    else:
        v = var or "the tensor"
        fix = (f"compute on the whole tensor at once: index {v} with slices (`[:, ...]` instead of `[i, ...]`) or a "
               f"tensor of indices, and replace the running sum / list with .sum(dim) or torch.stack")
    share = len(nodes) / len(ctx.node) if ctx.node else None
    return ctx.finding(
        RULE, nodes, msg, fix, share=share, share_of="nodes", waste_bytes=None, severity="warning", at=at,
        evidence={"nodes": len(nodes), "reads": len(pieces), "iterations": iters, "shape": tshape,
                  "bytes": nbytes(tshape, tdtype), "lines": len(comp)})

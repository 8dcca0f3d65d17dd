"""Where does a materialised copy go? The proof behind ``repeat-broadcast`` and ``materialised-expand``.

A tensor made by ``repeat`` (or ``expand(...).contiguous()``) of size-1 dimensions is *replicated* along those
dimensions: its values do not change along them. Dropping the copy (keeping the size-1 dims) gives the same results
exactly when every path from it ends in an element-wise op where another operand, one that does vary along those
dims, supplies their size: there broadcasting does what the copy did. This module follows the replicated
dimensions forward through the graph (through element-wise ops, indexing of other dims, unsqueeze/permute/expand,
reductions of other dims) and answers with where broadcasting takes over, or why it cannot be proven (a view with
hard-coded sizes, a matmul, ``cat``, the tensor being returned, an operand autograd did not record, ...). Anything
not understood blocks: the rules report only what is proven.
"""
from __future__ import annotations

import heapq
from dataclasses import dataclass, field
from typing import Dict, FrozenSet, List, Mapping, Optional, Set, Tuple

from . import ops
from .context import Context, Input

Dims = FrozenSet[int]
_NONE: Dims = frozenset()
#: How many nodes one proof may visit before it gives up (keeps pathological graphs linear overall).
VISIT_LIMIT = 20_000


@dataclass
class Spread:
    """The outcome of following one candidate's replicated dims."""
    ok: bool
    reason: Optional[str] = None
    carried: List[int] = field(default_factory=list)   # nodes whose output is still replicated
    absorbed: List[int] = field(default_factory=list)  # element-wise ops where broadcasting takes over
    nested: List[int] = field(default_factory=list)    # further repeats on the path (same root cause)


class _Blocked(Exception):
    pass


def repeat_dims(attrs: Mapping) -> Tuple[Optional[Dims], bool]:
    """``(dims repeated from size 1, whether any dim of size > 1 is tiled)`` of a RepeatBackward0's attrs."""
    repeats, sizes = attrs.get("repeats"), attrs.get("self_sym_sizes")
    if not isinstance(repeats, list) or not isinstance(sizes, list) or len(repeats) < len(sizes):
        return None, False
    padded = [1] * (len(repeats) - len(sizes)) + list(sizes)
    dims = frozenset(i for i, (r, s) in enumerate(zip(repeats, padded)) if r > 1 and s == 1)
    tiles = any(r > 1 and s > 1 for r, s in zip(repeats, padded))
    return dims, tiles


def expand_dims(in_shape: Optional[List[int]], out_shape: Optional[List[int]]) -> Optional[Dims]:
    """Dims an expand grew from size 1 (positions in the output)."""
    if in_shape is None or out_shape is None or len(out_shape) < len(in_shape):
        return None
    padded = [1] * (len(out_shape) - len(in_shape)) + list(in_shape)
    return frozenset(i for i, (a, b) in enumerate(zip(padded, out_shape)) if a == 1 and b > 1)


def view_map(dims: Dims, in_shape: Optional[List[int]], out_shape: Optional[List[int]]) -> Optional[Dims]:
    """Replicated dims through a view that only inserts or removes size-1 dims; None for any other view."""
    if in_shape is None or out_shape is None:
        return None
    src = [i for i, s in enumerate(in_shape) if s != 1]
    dst = [i for i, s in enumerate(out_shape) if s != 1]
    if [in_shape[i] for i in src] != [out_shape[i] for i in dst]:
        return None
    pos = dict(zip(src, dst))
    if any(d not in pos for d in dims):
        return None
    return frozenset(pos[d] for d in dims)


def spread(ctx: Context, start: int, dims: Dims, known: Mapping[int, Dims]) -> Spread:
    """Follow ``start``'s output 0, replicated along ``dims``, to where broadcasting takes over.

    ``known`` maps materialised copies (node -> their replicated dims): an operand straight from another one does
    not count as varying (``a.repeat(..) * b.repeat(..)`` proves nothing for either)."""
    rep: Dict[Tuple[int, int], Dims] = {(start, 0): dims}
    res = Spread(ok=True)
    heap: List[Tuple[int, int]] = []
    queued: Set[int] = set()

    def push(u: int) -> None:
        for v in ctx.succ[u]:
            if v not in queued:
                queued.add(v)
                heapq.heappush(heap, (ctx.order(v), v))

    push(start)
    if start in ctx.roots:
        return Spread(ok=False, reason="it is returned")
    try:
        while heap:
            if len(queued) > VISIT_LIMIT:
                raise _Blocked(f"more than {VISIT_LIMIT} nodes read it")
            _, v = heapq.heappop(heap)
            out = _step(ctx, v, rep, known)
            if out is None:       # v reads no replicated output of its producers
                continue
            if not out:
                res.absorbed.append(v)
                continue
            for k, d in out.items():
                rep[(v, k)] = d
            res.carried.append(v)
            if ctx.node[v].get("op") == "RepeatBackward0":
                res.nested.append(v)
            if v in ctx.roots or not ctx.succ[v]:
                raise _Blocked("it is returned")
            push(v)
    except _Blocked as exc:
        return Spread(ok=False, reason=str(exc), carried=res.carried, absorbed=res.absorbed, nested=res.nested)
    if not res.absorbed:
        return Spread(ok=False, reason="nothing broadcasts it", carried=res.carried)
    return res


def _step(ctx: Context, v: int, rep: Dict[Tuple[int, int], Dims],
          known: Mapping[int, Dims]) -> Optional[Dict[int, Dims]]:
    """Replicated dims of ``v``'s outputs ({} = broadcasting takes over here; None = ``v`` reads nothing
    replicated). Raises _Blocked when it cannot be proven."""
    d = ctx.node[v]
    op = d.get("op") or ""
    ins = ctx.inputs(v)
    reps = [(i, rep.get((i.node, i.output))) for i in ins]
    hit = [(i, r) for i, r in reps if r is not None]
    if not hit:
        return None
    if ops.is_elementwise(op):
        return _elementwise(ctx, v, op, reps, known)
    if len(hit) != 1 or len(ins) != 1:
        raise _Blocked(f"{op} reads it")
    inp, dims = hit[0]
    in_shape = inp.shape
    out_shape, _ = ctx.out(v)
    attrs = d.get("attrs") or {}
    if in_shape is None:
        raise _Blocked(f"{op}: unknown shape")
    nd = len(in_shape)
    if op in ("SelectBackward0", "SliceBackward0"):
        k = ops.norm_dim(attrs.get("dim"), nd)
        if op == "SliceBackward0" and k is not None and ops.full_slice(attrs, in_shape, out_shape, k):
            return {0: dims}  # x[:, :] on torch < 2.5, or narrow(d, 0, size): the same tensor, nothing indexed
        if k is None or k in dims:
            raise _Blocked(f"{op} indexes the repeated dim")
        return {0: dims if op == "SliceBackward0" else frozenset(r - (r > k) for r in dims)}
    if op in ("UnbindBackward0", "SplitBackward0", "SplitWithSizesBackward0"):
        k = ops.norm_dim(attrs.get("dim"), nd)
        if k is None or k in dims:
            raise _Blocked(f"{op} splits the repeated dim")
        n_out = len(d.get("outputs") or ())
        each = frozenset(r - (r > k) for r in dims) if op == "UnbindBackward0" else dims
        return {j: each for j in range(n_out)}
    if op == "UnsqueezeBackward0":
        k = ops.norm_dim(attrs.get("dim"), nd + 1)
        if k is None:
            raise _Blocked(f"{op}: unknown dim")
        return {0: frozenset(r + (r >= k) for r in dims)}
    if op in ("SqueezeBackward1", "SqueezeBackward2"):
        ks = ops.norm_dims(attrs.get("dim"), nd)
        if ks is None or any(k in dims for k in ks):
            raise _Blocked(f"{op} squeezes the repeated dim")
        gone = [k for k in ks if in_shape[k] == 1]
        return {0: frozenset(r - sum(1 for k in gone if k < r) for r in dims)}
    if op == "PermuteBackward0":
        perm = ops.norm_dims(attrs.get("dims"), nd)
        if perm is None or len(perm) != nd:
            raise _Blocked(f"{op}: unknown dims")
        return {0: frozenset(perm.index(r) for r in dims)}
    if op in ("TransposeBackward0", "TBackward0"):
        if op == "TBackward0":
            a, b = (0, 1) if nd == 2 else (0, 0)
        else:
            a, b = ops.norm_dim(attrs.get("dim0"), nd), ops.norm_dim(attrs.get("dim1"), nd)  # type: ignore
            if a is None or b is None:
                raise _Blocked(f"{op}: unknown dims")
        swap = {a: b, b: a}
        return {0: frozenset(swap.get(r, r) for r in dims)}
    if op in ("ExpandBackward0", "AliasBackward0"):
        if out_shape is None:
            raise _Blocked(f"{op}: unknown shape")
        return {0: ops.shift(dims, len(out_shape) - nd)}
    if op in ("SumBackward1", "MeanBackward1"):
        ks = ops.norm_dims(attrs.get("dim"), nd)
        if not ks or any(k in dims for k in ks):
            raise _Blocked(f"{op} reduces the repeated dim")
        if attrs.get("keepdim"):
            return {0: dims}
        return {0: frozenset(r - sum(1 for k in ks if k < r) for r in dims)}
    if op == "RepeatBackward0":
        more, tiles = repeat_dims(attrs)
        if more is None or tiles:
            raise _Blocked("a repeat tiles it further")
        lead = len(attrs["repeats"]) - nd
        return {0: ops.shift(dims, lead) | more}
    raise _Blocked(f"{op} reads it")


def _elementwise(ctx: Context, v: int, op: str, reps: List[Tuple[Input, Optional[Dims]]],
                 known: Mapping[int, Dims]) -> Dict[int, Dims]:
    out_shape, _ = ctx.out(v)
    if out_shape is None:
        raise _Blocked(f"{op}: unknown shape")
    nd = len(out_shape)
    # (shape, replicated dims in output coordinates) of every operand whose shape is known
    operands: List[Tuple[List[int], Dims]] = []
    for inp, r in reps:
        if inp.shape is None:
            raise _Blocked(f"{op}: unknown shape")
        lead = nd - len(inp.shape)
        if r is None and inp.output == 0 and inp.node in known:
            r = known[inp.node]
        operands.append((inp.shape, ops.shift(r, lead) if r and lead else (r or _NONE)))
    unknown = False
    if op in ops.BINARY:
        names = ops.BINARY[op]
        have = {i.slot for i, _ in reps}
        missing = [name for slot, name in enumerate(names) if slot not in have] + list(ops.EXTRA_OPERANDS.get(op, ()))
        saved = {s.get("name"): s for s in ctx.node[v].get("saved") or ()} if missing else {}
        for name in missing:
            s = saved.get(name)
            if s is not None and s.get("shape") is not None:
                operands.append((s["shape"], _NONE))
            else:
                unknown = True
    replicated: Set[int] = set()
    for _, r in operands:
        replicated |= r
    left: Set[int] = set()
    for k in replicated:
        if not (0 <= k < nd):
            raise _Blocked(f"{op}: shapes do not line up")
        served = False
        for shape, r in operands:
            j = k - (nd - len(shape))
            if 0 <= j < len(shape) and shape[j] > 1 and k not in r:
                served = True
                break
        if not served:
            if unknown:
                raise _Blocked(f"{op} has an operand autograd did not record")
            left.add(k)
    return {0: frozenset(left)} if left else {}


@dataclass
class Copy:
    """A materialised copy of size-1 dims: ``cause`` made it (RepeatBackward0, or the CloneBackward0 after an
    expand), ``head``'s output 0 is the replicated tensor (the cause itself, or torch's own view right after it),
    ``nodes`` are all of them."""
    cause: int
    head: int
    dims: Dims
    kind: str  # "repeat" (repeat, tile) | "expand-copy" (expand + contiguous/clone/reshape; repeat_interleave)
    nodes: List[int]


def candidates(ctx: Context) -> Dict[int, Copy]:
    """Every materialised copy of size-1 dims in the graph, by head node (computed once per advise call)."""
    if "copies" not in ctx.memo:
        ctx.memo["copies"] = _candidates(ctx)
    return ctx.memo["copies"]


def _candidates(ctx: Context) -> Dict[int, Copy]:
    found: Dict[int, Copy] = {}
    for v, d in ctx.node.items():
        op = d.get("op")
        if op == "RepeatBackward0":
            dims, tiles = repeat_dims(d.get("attrs") or {})
            if dims and not tiles:
                found[v] = Copy(v, v, dims, "repeat", [v])
        elif op == "CloneBackward0":
            ins = ctx.inputs(v)
            if len(ins) != 1 or ins[0].output != 0 or ctx.node[ins[0].node].get("op") != "ExpandBackward0":
                continue
            e = ins[0].node
            in_shape = (ctx.node[e].get("attrs") or {}).get("self_sym_sizes")
            dims = expand_dims(in_shape, ctx.out(e)[0])
            if not dims:
                continue
            head, hdims = v, dims
            # repeat_interleave is expand + clone + view inside one call: the view is torch's, not the user's.
            nxt = list(ctx.succ[v])
            if len(nxt) == 1:
                w = nxt[0]
                wd = ctx.node[w]
                if (wd.get("op") in ("ViewBackward0", "UnsafeViewBackward0", "ReshapeAliasBackward0")
                        and wd.get("source") == d.get("source") and wd.get("code") == d.get("code")
                        and isinstance(wd.get("seq"), int) and isinstance(d.get("seq"), int)
                        and wd["seq"] == d["seq"] + 1):
                    mapped = view_map(dims, ctx.out(v)[0], ctx.out(w)[0])
                    if mapped:
                        head, hdims = w, mapped
            found[head] = Copy(v, head, hdims, "expand-copy", [v, e] + ([head] if head != v else []))
    return found


"""Rule ``repeat-broadcast``: a ``repeat`` (or ``tile``, or ``repeat_interleave`` of a size-1 dim) whose result only
feeds ops where broadcasting would do the same — the seed case.

``h = homo.unsqueeze(1).repeat(1, H*W, 1, 1)`` copies each 3x3 matrix H*W times; every ``h[:, :, i, j]`` after it
reads, and in backward writes a gradient of, the whole ``(B, H*W, 3, 3)`` tensor. Without the repeat,
``h[:, :, i, j]`` is ``(B, 1)`` and broadcasts against ``(B, H*W)`` in the multiply: same values, a fraction of the
memory and time. The proof that broadcasting serves every use is :func:`.replicated.spread`.
"""
from __future__ import annotations

from collections import Counter
from typing import Callable, List

from ..._util.text import human_bytes
from ...model.dtypes import nbytes
from . import suggest
from .context import NOISE_BYTES, Context
from .finding import Finding
from .ops import fmt_shape
from .replicated import Copy, candidates, spread

RULE = "repeat-broadcast"
SEVERITY = "warning"
SUMMARY = "a repeat/tile/repeat_interleave of size-1 dims whose every use would broadcast"


def _is_repeat(c: Copy, ctx: Context) -> bool:
    return c.kind == "repeat" or "repeat_interleave" in (ctx.node[c.cause].get("code") or "")


def find(ctx: Context) -> List[Finding]:
    return materialisation_findings(ctx, RULE, lambda c: _is_repeat(c, ctx))


def _ops_summary(ctx: Context, nodes: List[int], limit: int = 3) -> str:
    counts = Counter(ctx.node[n].get("op") for n in nodes)
    parts = [f"{c} {op}" for op, c in counts.most_common(limit)]
    more = len(counts) - limit
    return ", ".join(parts) + (f" and {more} more kinds" if more > 0 else "")


def materialisation_findings(ctx: Context, rule: str, pick: Callable[[Copy], bool]) -> List[Finding]:
    """Findings for the materialised copies ``pick`` selects (shared with ``materialised-expand``): one per copy,
    in forward order, a copy reached from an earlier one folded into it (one root cause, one finding)."""
    copies = candidates(ctx)
    known = {h: c.dims for h, c in copies.items()}
    out: List[Finding] = []
    for head in sorted(copies, key=ctx.rank.__getitem__):
        c = copies[head]
        if not pick(c) or any(n in ctx.claimed for n in c.nodes):
            continue
        s = spread(ctx, head, c.dims, known)  # known is consulted only for operands outside the spread
        if not s.ok:
            continue
        shape, dtype = ctx.out(head)
        size = nbytes(shape, dtype) or 0
        factor = 1
        for k in c.dims:
            factor *= shape[k] if shape is not None else 1
        nested = [n for n in s.nested if n in copies]
        involved = [n for n in s.carried]
        readers_grad = ctx.grad_bytes(involved)
        # What goes away: the copy itself and, for everything still carrying the copies, all but 1/factor of the
        # gradients it writes.
        waste = int((size + readers_grad) * (1 - 1 / factor)) if factor > 1 else 0
        if waste < NOISE_BYTES:
            continue
        nodes = c.nodes + sorted(set(involved) - set(c.nodes), key=ctx.rank.__getitem__)
        ctx.claimed.update(nodes)
        ctx.claimed.update(n for h in nested for n in copies[h].nodes)
        cd = ctx.node[c.cause]
        code = cd.get("code")
        dims_txt = ", ".join(str(k) for k in sorted(c.dims))
        in_shape = list(shape) if shape is not None else None
        if in_shape is not None:
            for k in c.dims:
                in_shape[k] = 1
        what = f"`{suggest.strip_comment(code)}`" if code else f"a {cd.get('op')}"
        msg = (f"{what} materialises a {fmt_shape(shape)} tensor ({human_bytes(size)}) that only copies a "
               f"{fmt_shape(in_shape)} one {factor:,}x along dim {dims_txt}")
        if involved:
            msg += (f"; the {len(involved)} ops that read it ({_ops_summary(ctx, involved)}) work on, and write "
                    f"gradients of, the full size ({human_bytes(readers_grad)} written in backward)")
        msg += (f". Broadcasting does the same where it is used ({len(s.absorbed)} element-wise op"
                f"{'s' if len(s.absorbed) != 1 else ''}), without the copy.")
        if nested:
            msg += f" {len(nested)} further repeat{'s' if len(nested) > 1 else ''} on the way fold into this one."
        new, removed = suggest.remove_materialisation(code)
        keep = "dims" if len(c.dims) > 1 else "dim"
        if new is not None:
            fix = f"{new.strip()}  # no {removed}: keep the size-1 {keep}, broadcasting lines it up"
        else:
            fix = (f"drop the copy and keep the size-1 {keep} (x.unsqueeze(d) or x[:, None]); the element-wise "
                   f"ops broadcast it")
        if any(ctx.node[n].get("op") in ("SelectBackward0", "SliceBackward0") for n in involved):
            fix += "; the indexing after it stays as written and now reads the small tensor"
        out.append(ctx.finding(
            rule, nodes, msg, fix,
            share=(waste / ctx.total_grad_bytes) if ctx.total_grad_bytes else None,
            share_of="grad_bytes", waste_bytes=waste,
            evidence={"bytes": size, "shape": shape, "factor": factor, "dims": sorted(c.dims),
                      "readers": len(involved), "broadcast_at": sorted(s.absorbed, key=ctx.rank.__getitem__)[:16]}))
    return out

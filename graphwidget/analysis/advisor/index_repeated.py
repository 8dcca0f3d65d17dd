"""Rule ``index-repeated``: one tensor indexed piece by piece (``t[:, 0]``, ``t[:, 1]``, ...), each piece's backward
writing a gradient of the *whole* tensor, many times over.

``SelectBackward0``/``SliceBackward0``/``IndexBackward0`` create a zero tensor of their input's full size and copy
the piece's gradient into it; autograd then adds all those full-size tensors up. Reading k pieces of T that way
writes k·|T| bytes in backward where one ``unbind``/``split`` (or one index of all pieces at once) writes |T|. This
is why the seed's backward is slow even apart from the repeat. A chain of indexing from one expression
(``t[:, :, 0, 0]`` is two selects) counts as one read of its final piece.

Fires when at least :data:`MIN_READS` reads of the same tensor each take at most 1/:data:`MIN_RATIO` of it and
together write at least :data:`MIN_RATIO` times its size. Reads already explained by another finding (the seed's
repeat, a loop) are left to it.
"""
from __future__ import annotations

from collections import Counter, defaultdict
from typing import Dict, List, Tuple

from ..._util.text import human_bytes
from ...model.dtypes import nbytes
from .context import NOISE_BYTES, Context
from .finding import Finding
from .ops import INDEX, fmt_shape, norm_dim

RULE = "index-repeated"
SEVERITY = "warning"
SUMMARY = "many index/select/slice reads of one tensor, each writing a full-size gradient"
MIN_READS = 4
MIN_RATIO = 4


def _chain(ctx: Context, v: int) -> List[int]:
    """``v`` and the index ops that continue it from the same expression (each the only reader of the last)."""
    chain = [v]
    while True:
        last = chain[-1]
        nxt = list(ctx.succ[last])
        if len(nxt) != 1 or len(ctx.pred[nxt[0]]) != 1:
            return chain
        w = nxt[0]
        wd, ld = ctx.node[w], ctx.node[last]
        if wd.get("op") not in INDEX or wd.get("source") != ld.get("source") or wd.get("code") != ld.get("code"):
            return chain
        chain.append(w)


def find(ctx: Context) -> List[Finding]:
    groups: Dict[Tuple[int, int], List[int]] = defaultdict(list)
    for v, d in ctx.node.items():
        if d.get("op") in INDEX and v not in ctx.claimed:
            ins = ctx.inputs(v)
            if len(ins) == 1:
                groups[(ins[0].node, ins[0].output)].append(v)
    out: List[Finding] = []
    for (u, k), readers in groups.items():
        if len(readers) < MIN_READS:
            continue
        tshape, tdtype = ctx.out(u, k)
        tbytes = nbytes(tshape, tdtype)
        if not tbytes:
            continue
        chains = []
        for v in readers:
            ch = _chain(ctx, v)
            piece = ctx.out_bytes(ch[-1])
            if piece is not None and piece * MIN_RATIO <= tbytes:
                chains.append(ch)
        written = sum(ctx.node_grad_bytes(ch[0]) for ch in chains)
        if len(chains) < MIN_READS or written < MIN_RATIO * tbytes:
            continue
        chains.sort(key=lambda ch: ctx.order(ch[0]))
        nodes = [n for ch in chains for n in ch]
        all_written = ctx.grad_bytes(nodes)
        waste = max(0, all_written - tbytes)  # one unbind/split writes the tensor's gradient once
        if waste < NOISE_BYTES:
            continue
        ctx.claimed.update(nodes)
        line = Counter(ctx.node[ch[0]].get("source") for ch in chains).most_common(1)[0][0]
        at = next(ch[0] for ch in chains if ctx.node[ch[0]].get("source") == line)
        # what each read indexes: full slices before it (torch < 2.5's `:`) take the whole dim and keep every dim
        firsts = [ctx.node[ctx.past_full_slices(ch[0])] for ch in chains]
        ops_ = {d.get("op") for d in firsts}
        dims = {norm_dim((d.get("attrs") or {}).get("dim"), len(tshape or ())) for d in firsts}
        name = ctx.tensor_name(u, k)
        var = ctx.var_name(u, [ch[0] for ch in chains]) or "t"
        msg = (f"{len(chains)} reads of {name} {fmt_shape(tshape)} ({human_bytes(tbytes)}) take a piece of it each, "
               f"and each read's backward writes a gradient of the whole tensor: {human_bytes(written)} written "
               f"(x{written / tbytes:.0f} its size) and added up by autograd, where one split writes it once.")
        if ops_ == {"SelectBackward0"} and len(dims) == 1 and None not in dims:
            dim = dims.pop()
            fix = (f"{var}_parts = {var}.unbind({dim})  # once; then use {var}_parts[i] instead of indexing "
                   f"{var} each time")
        elif ops_ == {"SliceBackward0"} and len(dims) == 1 and None not in dims:
            dim = dims.pop()
            fix = (f"{var}_parts = {var}.split(sizes, dim={dim})  # once (or .chunk(n, {dim})); then use the "
                   f"parts instead of slicing {var} each time")
        else:
            fix = (f"index {var} once for all pieces (one unbind/split, or one index with all the indices) and use "
                   f"the pieces, instead of indexing it {len(chains)} times")
        out.append(ctx.finding(
            RULE, nodes, msg, fix,
            share=(all_written / ctx.total_grad_bytes) if ctx.total_grad_bytes else None, share_of="grad_bytes",
            waste_bytes=waste, at=at,
            evidence={"bytes": tbytes, "shape": tshape, "reads": len(chains), "written_bytes": written}))
    return out

"""Rule ``checkpoint-candidate``: a module (or a run of repeated blocks) whose activations, if recomputed in backward
with ``torch.utils.checkpoint``, would lower the memory peak by a real amount.

Needs a memory record (``gw.profile(..., memory=True)``). The prediction is
:func:`graphwidget.analysis.memory_checkpoints.checkpoint_candidates`: from the measured timeline, the activations
saved only inside the module (not its inputs) leave the forward and come back when the backward reaches the module.
The best candidate by peak bytes saved per ms of forward recomputed is reported, if it saves at least
:data:`MIN_BYTES` and :data:`MIN_SHARE` of the peak (a small model gets no finding). The suggestion says how to
measure it.
"""
from __future__ import annotations

from typing import Any, List

from ..._util.text import human_bytes
from ..memory_accounting import has_memory
from ..memory_checkpoints import checkpoint_candidates
from .context import Context
from .finding import Finding

RULE = "checkpoint-candidate"
SEVERITY = "warning"
SUMMARY = "activations that torch.utils.checkpoint would stop keeping, lowering the memory peak"
#: The predicted saving must be at least this many bytes ...
MIN_BYTES = 16 << 20
#: ... and at least this share of the peak.
MIN_SHARE = 0.10


def _nodes_of(ctx: Context, paths: List[str]) -> List[int]:
    out = []
    for v, d in ctx.node.items():
        m = d.get("module")
        if m is not None and any(m == p or m.startswith(p + ".") for p in paths):
            out.append(v)
    return sorted(out, key=ctx.order)


def find(ctx: Context) -> List[Finding]:
    graph = ctx.graph
    if not has_memory(graph):
        return []
    rows = checkpoint_candidates(graph, top=0)
    best: Any = None
    for r in rows:
        if r["saving_bytes"] >= MIN_BYTES and r["saving_bytes"] >= MIN_SHARE * r["peak_bytes"]:
            best = r
            break
    if best is None:
        return []
    nodes = _nodes_of(ctx, best["modules"])
    if not nodes:
        return []
    label = best["label"]
    ms = best["recompute_ms"]
    cost = f"recomputing {ms:.1f} ms of forward" if ms is not None else "recomputing its forward"
    msg = (f"checkpointing {label} would lower the memory peak by {human_bytes(best['saving_bytes'])} "
           f"(predicted from the measured timeline: {human_bytes(best['peak_bytes'])} -> "
           f"{human_bytes(best['new_peak_bytes'])}), {cost} in backward: it frees "
           f"{human_bytes(best['frees_bytes'])} of activations alive at the peak.")
    mods = best["modules"]
    shown = repr(mods) if len(mods) <= 3 else f"[{mods[0]!r}, ..., {mods[-1]!r}]"
    fix = (f"wrap {label} in torch.utils.checkpoint.checkpoint(block, x, use_reentrant=False) (each block its own "
           f"checkpoint); measure it first: gw.compare(model, gw.with_checkpoint(model, {shown}), *inputs, "
           f"memory=True, profile=True) reports the measured peak and step time of both")
    return [ctx.finding(
        RULE, nodes, msg, fix, share=best["saving_bytes"] / best["peak_bytes"] if best["peak_bytes"] else None,
        share_of="peak_bytes", waste_bytes=best["saving_bytes"], severity=SEVERITY,
        backward_time=False,  # the cost of a checkpoint is the forward it recomputes (recompute_ms), not this
        evidence={"modules": mods, "label": label, "peak_bytes": best["peak_bytes"],
                  "saving_bytes": best["saving_bytes"], "new_peak_bytes": best["new_peak_bytes"],
                  "frees_bytes": best["frees_bytes"], "recompute_ms": ms, "bytes_per_ms": best["bytes_per_ms"],
                  "peak_source": best["source"], "predicted": True})]

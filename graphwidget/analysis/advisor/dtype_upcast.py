"""Rule ``dtype-upcast``: float64 flowing through a graph whose parameters are float32.

NumPy's default dtype is float64, and ``torch.from_numpy`` keeps it: one ``pred - torch.from_numpy(target)`` and type
promotion turns that op and everything after it into float64 — twice the memory, and on GPUs many times slower.
The entry is the op whose output is float64 while a float32 (or half) tensor flows into it and no float64 tensor
*computed in the graph* does: the float64 came from outside (a constant, a NumPy array) or from a float64
parameter. An explicit cast (``x.double()``, ``.to(torch.float64)``) is on purpose and never an entry; a graph
without low-precision parameters (a float64 model on purpose) is left alone.
"""
from __future__ import annotations

from collections import defaultdict
from typing import Any, Dict, List, Tuple

from ..._util.text import human_bytes
from ...model.dtypes import nbytes
from . import suggest
from .context import NOISE_BYTES, Context
from .finding import Finding
from .ops import LOW_FLOATS, fmt_shape

RULE = "dtype-upcast"
SEVERITY = "warning"
SUMMARY = "float64 entering a float32 graph (typically torch.from_numpy) and promoting everything after it"
_CASTS = frozenset({"ToCopyBackward0", "ToCopyBackward1"})


def find(ctx: Context) -> List[Finding]:
    low_params = [n for n, d in ctx.node.items()
                  if d.get("kind") == "leaf" and (d.get("tensor") or {}).get("dtype") in LOW_FLOATS]
    if not low_params:
        return []
    param_dtype = (ctx.node[low_params[0]].get("tensor") or {}).get("dtype")
    entries: Dict[Tuple[Any, Any], List[int]] = defaultdict(list)
    for v, d in ctx.node.items():
        if d.get("kind") == "leaf" or d.get("op") in _CASTS or v in ctx.claimed:
            continue
        if ctx.out(v)[1] != "float64":
            continue
        ins = ctx.inputs(v)
        if not any(i.dtype in LOW_FLOATS for i in ins):
            continue
        if any(i.dtype == "float64" and not ctx.is_leaf(i.node) for i in ins):
            continue  # downstream of another entry, or of an explicit cast
        key = (d.get("source"), d.get("code")) if d.get("source") else (v, None)
        entries[key].append(v)
    out: List[Finding] = []
    for key in sorted(entries, key=lambda k: min(ctx.order(v) for v in entries[k])):
        starts = sorted(entries[key], key=ctx.rank.__getitem__)
        region = _region(ctx, starts)
        f64 = sum(nbytes(*ctx.out(v)) or 0 for v in region)
        if f64 < NOISE_BYTES:
            continue
        ctx.claimed.update(region)
        entry = starts[0]
        ed = ctx.node[entry]
        # What the float64 operand was: a float64 parameter, a saved operand, or unseen (not saved by the op).
        f64_params = [i.node for v in starts for i in ctx.inputs(v) if i.dtype == "float64" and ctx.is_leaf(i.node)]
        saved = [s for v in starts for s in ctx.node[v].get("saved") or ()
                 if s.get("dtype") == "float64" and s.get("name") != "result"]
        if f64_params:
            what = f"float64 {ctx.tensor_name(f64_params[0])} {fmt_shape(ctx.out(f64_params[0])[0])}"
        elif saved:
            what = f"a float64 tensor {fmt_shape(saved[0].get('shape'))}"
        else:
            what = "a float64 tensor"
        code = ed.get("code")
        line = f"`{suggest.strip_comment(code)}`" if code else f"this {ed.get('op')}"
        msg = (f"{what} meets the {param_dtype} computation in {line}: type promotion makes this op and the "
               f"{len(region) - len(starts)} after it float64 — {human_bytes(f64)} of float64 tensors and as much "
               f"again in gradients, twice the {param_dtype} size and much slower on GPUs.")
        rewritten = suggest.from_numpy_as_float32(code)
        if rewritten is not None:
            fix = f"{rewritten.strip()}  # float32 like the parameters"
        elif f64_params:
            fix = ("create the parameter as float32: nn.Parameter(torch.tensor(value, dtype=torch.float32)), or "
                   "model.float()")
        else:
            fix = ("make the float64 tensor float32 where it enters: torch.from_numpy(a).float(), "
                   "a.astype(np.float32), or torch.tensor(..., dtype=torch.float32)")
        out.append(ctx.finding(
            RULE, region, msg, fix,
            share=(ctx.grad_bytes(region) / ctx.total_grad_bytes) if ctx.total_grad_bytes else None,
            share_of="grad_bytes", waste_bytes=f64, at=entry,
            evidence={"bytes": f64, "float64_nodes": len(region), "entries": len(starts),
                      "shape": ctx.out(entry)[0], "param_dtype": param_dtype}))
    return out


def _region(ctx: Context, starts: List[int]) -> List[int]:
    """The entries and every node after them whose output is float64 (not yet claimed), in forward order."""
    seen = set(starts)
    todo = list(starts)
    while todo:
        v = todo.pop()
        for w in ctx.succ[v]:
            if w not in seen and w not in ctx.claimed and ctx.out(w)[1] == "float64":
                seen.add(w)
                todo.append(w)
    return starts + sorted(seen - set(starts), key=ctx.rank.__getitem__)

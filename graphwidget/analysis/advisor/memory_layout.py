"""Rule ``memory-layout``: a heavy op (convolution, mm, addmm/linear, bmm) fed operands in a layout it handles
badly — and *measured* to be so.

Layout can help or hurt: a NumPy ``(N, H, W, C)`` batch permuted to ``(N, C, H, W)`` is a channels-last tensor, and
a convolution runs it as fast as (on CPU often faster than) a contiguous one; a bmm operand whose matrices are not
row- or column-major (a batch-innermost permute) can be tens of times slower. So this rule never judges by strides
alone. For every such op whose operands are unusual — a conv whose input and weight disagree on memory format or are
neither contiguous nor channels-last, a matmul operand no BLAS call can take as it is — it rebuilds the operands with
the captured shapes, strides, dtype and device, runs forward + backward of that op in the captured layout and in the
alternatives (all contiguous; channels-last for convolutions) over interleaved rounds, and reports only when an
alternative is at least :data:`MIN_GAIN` faster in two separate measurements (the second always taken, however
clear the first), with both times.

Converting an operand that the graph computes (an activation) is timed as part of the alternative, since the
rewrite pays for it every step; data inputs and parameters can be converted once (in the loader, or
``model.to(...)``), so their conversion is not. Needs torch and the captured device; otherwise the rule is skipped.
Identical calls (the same op, shapes, strides) are measured once per process; :data:`BUDGET_S` caps the time
spent per graph.
"""
from __future__ import annotations

import math
import time
from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

from ...model.dtypes import nbytes
from . import suggest
from .context import Context
from .finding import Finding
from .ops import HEAVY, VIEW, fmt_shape

RULE = "memory-layout"
SEVERITY = "warning"
SUMMARY = "a conv/matmul whose operand layout is measurably slower than contiguous or channels-last"
#: Report only an alternative at least this much faster (time as captured / alternative >= 1 + MIN_GAIN).
MIN_GAIN = 0.15
ROUNDS = 9
#: Time for one comparison's rounds (after warm-up); fewer rounds (never below 5) when one round takes longer.
ROUND_BUDGET_MS = 2000.0
#: Total measuring time per advise() call; candidates beyond it (smallest first) are not measured.
BUDGET_S = 15.0
#: Operands bigger than this together are not rebuilt (memory).
MAX_BYTES = 512 * 2**20
_FORMATS = ("contiguous", "channels_last", "channels_last_3d")
#: How each op is called in user code (to name the argument in a suggestion).
_FUNCS = {"ConvolutionBackward0": ("conv1d", "conv2d", "conv3d"), "MmBackward0": ("mm", "matmul"),
          "AddmmBackward0": ("linear", "addmm"), "BmmBackward0": ("bmm", "matmul")}


#: What measures a call: ``Call -> (fastest alternative layout, its verdict)`` or ``None`` when none wins by
#: :data:`MIN_GAIN` twice. The analysis stage runs no torch: ``graphwidget/__init__.py`` registers
#: :func:`graphwidget.experiment.layout_timing.measure_call` here when torch is importable.
Measurer = Callable[["Call"], Optional[Tuple[str, Any]]]
_measurer: Optional[Measurer] = None


def register_measurer(measurer: Optional[Measurer]) -> None:
    """Let the rule measure candidate calls with ``measurer`` (``None``: never measure, so never report)."""
    global _measurer
    _measurer = measurer


@dataclass
class Operand:
    name: str
    slot: int
    shape: List[int]
    stride: List[int]
    dtype: str
    device: str
    origin: str            # "param" | "activation" | "input" (did not require grad: data, buffer, frozen weight)
    producer: Optional[int]
    memory_format: Optional[str] = None

    @property
    def requires_grad(self) -> bool:
        return self.origin != "input"


@dataclass
class Call:
    node: int
    op: str
    operands: List[Operand]
    attrs: Dict[str, Any] = field(default_factory=dict)
    bias_shape: Optional[List[int]] = None
    bias_grad: bool = False

    def signature(self) -> Tuple[Any, ...]:
        return (self.op, tuple((o.name, tuple(o.shape), tuple(o.stride), o.dtype, o.device, o.origin)
                               for o in self.operands), repr(sorted(self.attrs.items())),
                tuple(self.bias_shape) if self.bias_shape is not None else None, self.bias_grad)

    @property
    def bytes(self) -> int:
        return sum(nbytes(o.shape, o.dtype) or 0 for o in self.operands)


def contiguous_strides(shape: Sequence[int]) -> List[int]:
    out, acc = [0] * len(shape), 1
    for i in range(len(shape) - 1, -1, -1):
        out[i] = acc
        acc *= max(shape[i], 1)
    return out


def _blas_ok(shape: Sequence[int], stride: Sequence[int]) -> bool:
    """Whether a matmul operand's matrices are row- or column-major (any batch stride): what BLAS takes as is."""
    if len(shape) < 2:
        return True
    r, c = shape[-2], shape[-1]
    sr, sc = stride[-2], stride[-1]
    if r <= 1 or c <= 1:
        return True
    return (sc == 1 and sr >= c) or (sr == 1 and sc >= r)


def _origin(ctx: Context, v: int, slot: int) -> Tuple[str, Optional[int]]:
    for i in ctx.inputs(v):
        if i.slot == slot:
            u = i.node
            seen = 0
            while not ctx.is_leaf(u) and ctx.node[u].get("op") in VIEW and len(ctx.pred[u]) == 1 and seen < 8:
                u = next(iter(ctx.pred[u]))  # weight.t() is still the parameter
                seen += 1
            return ("param" if ctx.is_leaf(u) else "activation"), i.node
    return "input", None


def _operand(ctx: Context, v: int, name: str, slot: int) -> Optional[Operand]:
    d = ctx.node[v]
    attrs = d.get("attrs") or {}
    out_shape, out_dtype = ctx.out(v)
    device = ((d.get("outputs") or [{}])[0] or {}).get("device") or "cpu"
    origin, producer = _origin(ctx, v, slot)
    saved = next((s for s in d.get("saved") or () if s.get("name") == name), None)
    if saved is not None:
        if saved.get("freed") or saved.get("packed") or saved.get("shape") is None or saved.get("stride") is None:
            return None
        return Operand(name, slot, list(saved["shape"]), list(saved["stride"]),
                       saved.get("dtype") or out_dtype or "float32", saved.get("device") or device, origin, producer,
                       saved.get("memory_format"))
    shape, stride = attrs.get(f"{name}_sym_sizes"), attrs.get(f"{name}_sym_strides")
    if isinstance(shape, list) and isinstance(stride, list) and len(stride) == len(shape):
        return Operand(name, slot, list(shape), list(stride), out_dtype or "float32", device, origin, producer)
    # Not saved (it did not need to be): the edge gives the shape, the producer's traced strides the layout.
    for i in ctx.inputs(v):
        if i.slot == slot and i.shape is not None:
            pd = ctx.node[i.node]
            strides = pd.get("out_stride")
            st = strides[i.output] if isinstance(strides, list) and i.output < len(strides) else None
            if ctx.is_leaf(i.node):
                st = (pd.get("tensor") or {}).get("stride")
            if not isinstance(st, list) or len(st) != len(i.shape):
                st = contiguous_strides(i.shape)
            return Operand(name, slot, list(i.shape), list(st), i.dtype or out_dtype or "float32", device, origin,
                           producer)
    return None


def _call(ctx: Context, v: int) -> Optional[Call]:
    d = ctx.node[v]
    op = d.get("op") or ""
    attrs = d.get("attrs") or {}
    if op == "ConvolutionBackward0":
        x, w = _operand(ctx, v, "input", 0), _operand(ctx, v, "weight", 1)
        if x is None or w is None or len(x.shape) not in (3, 4, 5):
            return None
        keep = {k: attrs.get(k) for k in ("stride", "padding", "dilation", "transposed", "output_padding", "groups")}
        if any(val is None for val in keep.values()):
            return None
        bias = attrs.get("bias_sym_sizes_opt")
        has_bias_edge = any(i.slot == 2 for i in ctx.inputs(v))
        return Call(v, op, [x, w], keep, list(bias) if isinstance(bias, list) else None, has_bias_edge)
    if op == "MmBackward0":
        a, b = _operand(ctx, v, "self", 0), _operand(ctx, v, "mat2", 1)
        return Call(v, op, [a, b]) if a and b else None
    if op == "BmmBackward0":
        a, b = _operand(ctx, v, "self", 0), _operand(ctx, v, "mat2", 1)
        return Call(v, op, [a, b]) if a and b else None
    if op == "AddmmBackward0":
        a, b = _operand(ctx, v, "mat1", 1), _operand(ctx, v, "mat2", 2)
        if not (a and b):
            return None
        bias_in = next((i for i in ctx.inputs(v) if i.slot == 0), None)
        bias = list(bias_in.shape) if bias_in is not None and bias_in.shape is not None else [b.shape[-1]]
        keep = {"alpha": attrs.get("alpha", 1), "beta": attrs.get("beta", 1)}
        return Call(v, op, [a, b], keep, bias, bias_in is not None)
    return None


def _unusual(call: Call) -> bool:
    if call.op == "ConvolutionBackward0":
        x, w = call.operands
        fx, fw = x.memory_format, w.memory_format
        return fx not in _FORMATS or fw not in _FORMATS or fx != fw
    return any(not _blas_ok(o.shape, o.stride) for o in call.operands)


def layouts(call: Call) -> List[str]:
    alts = ["contiguous"]
    if call.op == "ConvolutionBackward0" and len(call.operands[0].shape) in (4, 5):
        alts.append("channels_last" if len(call.operands[0].shape) == 4 else "channels_last_3d")
    same = [a for a in alts if all(o.memory_format == a for o in call.operands)]
    return [a for a in alts if a not in same]


def find(ctx: Context) -> List[Finding]:
    calls: Dict[Tuple[Any, ...], List[Call]] = defaultdict(list)
    for v, d in ctx.node.items():
        if d.get("op") in HEAVY and v not in ctx.claimed:
            call = _call(ctx, v)
            if call is not None and _unusual(call) and call.bytes <= MAX_BYTES:
                calls[call.signature()].append(call)
    if not calls or _measurer is None:  # no torch here (a saved graph read back): nothing can be measured
        return []
    out: List[Finding] = []
    deadline = time.perf_counter() + BUDGET_S
    for sig in sorted(calls, key=lambda s: -calls[s][0].bytes):
        if time.perf_counter() > deadline:
            break
        group = calls[sig]
        result = _measurer(group[0])
        if result is None:
            continue
        best, verdict = result
        by_line: Dict[Any, List[Call]] = defaultdict(list)
        for c in group:
            d = ctx.node[c.node]
            by_line[(d.get("source"), d.get("code"), d.get("module")) if d.get("source") else c.node].append(c)
        for same_line in by_line.values():
            out.append(_finding(ctx, same_line, best, verdict))
    return out


def _layout_text(o: Operand) -> str:
    fmt = o.memory_format or ("contiguous" if o.stride == contiguous_strides(o.shape) else "non-contiguous")
    return f"{fmt.replace('_', '-')} (strides {tuple(o.stride)})"


def _finding(ctx: Context, calls: List[Call], best: str, verdict: Any) -> Finding:
    call = calls[0]
    # the message quotes the times the evidence holds: both rounded once, here (rounding the evidence after
    # formatting the raw times let them disagree in the last digit: 0.8905 in the evidence, "0.891" in the text)
    ms, alt = round(verdict.ms["captured"], 4), round(verdict.ms[best], 4)
    speedup = ms / alt if alt > 0 else math.inf
    odd = [o for o in call.operands
           if (call.op == "ConvolutionBackward0" and o.memory_format != best) or not _blas_ok(o.shape, o.stride)]
    odd = odd or call.operands
    what = {"ConvolutionBackward0": "convolution", "MmBackward0": "mm", "AddmmBackward0": "linear/addmm",
            "BmmBackward0": "bmm"}[call.op]
    ops_txt = "; ".join(f"operand `{o.name}` {fmt_shape(o.shape)} is {_layout_text(o)}" for o in odd)
    paid = [o.name for o in call.operands if o.origin == "activation"]
    msg = (f"In this {what}, {ops_txt}. Re-run here with the captured shapes, forward + backward of the op takes "
           f"{ms:.3g} ms as captured and {alt:.3g} ms with {best.replace('_', '-')} operands (x{speedup:.2f}, median "
           f"of {verdict.rounds} interleaved runs" + (", confirmed by a second measurement" if verdict.passes > 1
                                                      else "")
           + (f"; converting {', '.join(paid)} included" if paid else "") + ")."
           + (f" The same call appears {len(calls)} times on this line." if len(calls) > 1 else ""))
    o = odd[0]
    if best.startswith("channels_last"):
        fix = (f"model = model.to(memory_format=torch.{best}); x = x.to(memory_format=torch.{best})  # operands "
               f"agree on channels-last")
    elif o.origin == "input":
        position = o.slot - 1 if call.op == "AddmmBackward0" else o.slot  # linear(x, w): x is mat1
        arg = suggest.call_argument(ctx.node[call.node].get("code"), _FUNCS[call.op], position)
        x = arg or "x"
        fix = (f"{x} = {x}.contiguous()  # once, before the model; better where it is made (np.ascontiguousarray "
               f"in the data loader)")
    elif o.origin == "param":
        fix = "store the parameter contiguous: with torch.no_grad(): p.set_(p.contiguous())  (or re-create it)"
    else:
        var = ctx.var_name(o.producer) if o.producer is not None else None
        fix = f"{var} = {var}.contiguous()  # before the {what}" if var else f"call .contiguous() on {o.name} first"
    nodes = [c.node for c in calls]
    share_of, share = "op_ms", (ms - alt) / ms if ms > 0 else None
    if ctx.timed and ctx.forward_ms is not None and ctx.backward_ms is not None:
        share_of, share = "step_ms", (ms - alt) * len(calls) / (ctx.forward_ms + ctx.backward_ms)
    ev = {"ms": ms, "alt_ms": alt, "alternative": best, "speedup": round(speedup, 3),
          "rounds": verdict.rounds, "calls": len(calls), "shape": o.shape, "strides": o.stride,
          "bytes": nbytes(o.shape, o.dtype), "device": o.device}
    return ctx.finding(RULE, nodes, msg, fix, evidence=ev, share=share, share_of=share_of, waste_bytes=None,
                       severity="warning", at=call.node)

"""Timing one op in several operand layouts, fairly: the measurements behind the advisor's ``memory-layout`` rule.

:func:`measure_call` rebuilds a candidate call (:class:`~graphwidget.analysis.advisor.memory_layout.Call`) with its
captured shapes, strides, dtype and device and says which alternative layout wins, if any; the rule itself (in the
torch-free analysis stage) finds the candidates and words the finding.

Each variant is built once (tensors with the captured shapes and strides, random values from a private generator —
the caller's RNG state is untouched), warmed up, then all variants run in interleaved rounds whose order rotates,
so drift on a busy machine hits every variant alike. A round's result is the ratio variant / captured; the verdict
uses the median ratio over rounds and a bootstrap interval of it, and a would-be win is measured again before it
counts. CPU times are ``perf_counter``; on CUDA, events recorded around the call.
"""
from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

import torch

from .._util.stats import bootstrap_interval, median
from ..analysis.advisor import memory_layout as rule
from ..analysis.advisor.memory_layout import Call

Run = Callable[[], None]


@dataclass
class Verdict:
    """Medians (ms) of each variant, the median per-round ratio to the captured layout and its 95 % interval."""
    ms: Dict[str, float]
    ratio: Dict[str, float]
    interval: Dict[str, Tuple[float, float]]
    rounds: int
    passes: int = 1


def strided(shape: Sequence[int], stride: Sequence[int], dtype: torch.dtype, device: torch.device,
            gen: torch.Generator) -> torch.Tensor:
    """A tensor with exactly these sizes and strides (overlapping or padded layouts included), random values."""
    extent = 1 + sum((s - 1) * st for s, st in zip(shape, stride) if s > 0)
    if any(s == 0 for s in shape):
        extent = 1
    base = torch.randn(max(extent, 1), generator=gen, dtype=torch.float32).to(dtype=dtype, device=device)
    return base.as_strided(tuple(shape), tuple(stride))


def _timer(device: torch.device) -> Callable[[Run], float]:
    if device.type == "cuda":
        def cuda_time(run: Run) -> float:
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            start.record()
            run()
            end.record()
            torch.cuda.synchronize(device)
            return float(start.elapsed_time(end))
        return cuda_time

    def cpu_time(run: Run) -> float:
        t0 = time.perf_counter()
        run()
        return (time.perf_counter() - t0) * 1000.0
    return cpu_time


def _ratio_median(pairs: Sequence[Tuple[float, float]]) -> float:
    return median([b / a for a, b in pairs if a > 0]) or 1.0


def time_variants(variants: Dict[str, Run], device: torch.device, rounds: int = 9, warmup: int = 2,
                  budget_ms: float = 2000.0, stop_below: float = 1.0, min_rounds: int = 5) -> Verdict:
    """Time every variant (the first is the captured layout) over interleaved rounds.

    ``rounds`` is lowered (not below 5) when one round would take more than ``budget_ms / rounds``; an op that
    takes over 100 ms gets one warm-up run. After ``min_rounds`` rounds it stops early when the outcome cannot be
    in doubt: no alternative was ever faster than ``stop_below`` x the captured time (no win), or every round of
    one alternative was at least twice as fast (a clear win)."""
    names = list(variants)
    timer = _timer(device)
    first = {n: timer(variants[n]) for n in names}
    if max(first.values()) < 100.0:
        for _ in range(warmup - 1):
            first = {n: timer(variants[n]) for n in names}
    per_round = sum(first.values())
    if per_round > 0:
        rounds = max(5, min(rounds, int(budget_ms / per_round)))
    times: Dict[str, List[float]] = {n: [] for n in names}
    base = names[0]
    for r in range(rounds):
        order = names[r % len(names):] + names[:r % len(names)]
        for n in order:
            times[n].append(timer(variants[n]))
        if r + 1 >= min_rounds:
            ratios = {n: [b / a for a, b in zip(times[base], times[n]) if a > 0] for n in names[1:]}
            if all(min(v, default=1.0) > stop_below for v in ratios.values()):
                break
            if any(v and max(v) < 0.5 for v in ratios.values()):
                break
    rounds = len(times[base])
    ratio, interval = {}, {}
    for n in names[1:]:
        pairs = list(zip(times[base], times[n]))
        ratio[n] = _ratio_median(pairs)
        interval[n] = bootstrap_interval(pairs, _ratio_median, level=0.95, resamples=400)
    return Verdict(ms={n: float(median(v) or 0.0) for n, v in times.items()}, ratio=ratio, interval=interval,
                   rounds=rounds)


def merge(a: Verdict, b: Verdict) -> Verdict:
    """Two verdicts on the same variants as one (medians of the per-verdict medians, worse interval ends)."""
    ms = {n: (a.ms[n] + b.ms[n]) / 2 for n in a.ms}
    ratio = {n: max(a.ratio[n], b.ratio[n]) for n in a.ratio}
    interval = {n: (min(a.interval[n][0], b.interval[n][0]), max(a.interval[n][1], b.interval[n][1]))
                for n in a.interval}
    return Verdict(ms=ms, ratio=ratio, interval=interval, rounds=a.rounds + b.rounds, passes=a.passes + b.passes)


def grad_runner(fn: Callable[[], torch.Tensor], needs: Sequence[torch.Tensor],
                grad_out: Optional[torch.Tensor]) -> Run:
    """A closure running ``fn`` forward and, when anything requires grad, its backward into ``needs``."""
    def run() -> None:
        out = fn()
        if needs:
            torch.autograd.grad(out, list(needs), grad_out, allow_unused=True)
    return run


def dtype_of(name: Optional[str]) -> Optional[torch.dtype]:
    if not name:
        return None
    value = getattr(torch, name.replace("torch.", ""), None)
    return value if isinstance(value, torch.dtype) else None


def device_of(name: Optional[str]) -> Optional[torch.device]:
    """The device to measure on, or None when this process does not have it (a CUDA graph read on a CPU box)."""
    try:
        dev = torch.device(name or "cpu")
    except (RuntimeError, TypeError):
        return None
    if dev.type == "cpu":
        return dev
    if dev.type == "cuda" and torch.cuda.is_available() and (dev.index or 0) < torch.cuda.device_count():
        return dev
    return None


def state_guard() -> Any:
    """Grad mode on, whatever the caller's context (advise may be called under ``torch.no_grad()``)."""
    return torch.enable_grad()


#: Verdicts already measured in this process: (call signature, torch threads) -> result. advise() on the same graph
#: (or another layer with the same call) does not measure again.
_CACHE: Dict[Tuple[Any, ...], Optional[Tuple[str, Any]]] = {}


def measure_call(call: Call) -> Optional[Tuple[str, Any]]:
    """The fastest alternative layout when it beats the captured one by rule.MIN_GAIN in two separate comparisons
    (each warmed up afresh), else None."""
    key = (call.signature(), torch.get_num_threads())
    if key not in _CACHE:
        if len(_CACHE) > 256:
            _CACHE.clear()
        _CACHE[key] = _measure_now(call)
    return _CACHE[key]


def _measure_now(call: Call) -> Optional[Tuple[str, Any]]:
    try:
        with state_guard():
            variants, device = _variants(call)
            if variants is None:
                return None
            first = time_variants(variants, device, rounds=rule.ROUNDS, budget_ms=rule.ROUND_BUDGET_MS,
                                  stop_below=1 / (1 + rule.MIN_GAIN))
            best = min(first.ratio, key=lambda n: first.ratio[n]) if first.ratio else None
            if best is None or not _wins(first, best):
                return None
            # Always a second look, however clear the first: a burst of load (another process's threads spinning on
            # the same cores) can slow one layout's kernels for a whole short comparison and fake a large win.
            second = time_variants(variants, device, rounds=rule.ROUNDS, warmup=1, budget_ms=rule.ROUND_BUDGET_MS,
                                   stop_below=1 / (1 + rule.MIN_GAIN))
            verdict = merge(first, second)
            return (best, verdict) if _wins(verdict, best) else None
    except (RuntimeError, ValueError, TypeError, NotImplementedError, MemoryError):
        return None  # this op cannot be rebuilt here (dtype unsupported on this device, ...): say nothing


def _wins(verdict: Any, name: str) -> bool:
    ratio = verdict.ratio[name]
    hi = verdict.interval[name][1]
    return ratio <= 1 / (1 + rule.MIN_GAIN) and hi < 1.0


def _variants(call: Call) -> Tuple[Optional[Dict[str, Any]], Any]:
    device = device_of(call.operands[0].device)
    if device is None:
        return None, None
    gen = torch.Generator().manual_seed(0)
    bases = []
    for o in call.operands:
        dt = dtype_of(o.dtype)
        if dt is None or not dt.is_floating_point:
            return None, None
        t = strided(o.shape, o.stride, dt, device, gen)
        bases.append(t.detach().requires_grad_(o.requires_grad))
    dt0 = bases[0].dtype
    bias = None
    if call.bias_shape is not None:
        bias = strided(call.bias_shape, rule.contiguous_strides(call.bias_shape), dt0, device, gen)
        bias = bias.detach().requires_grad_(call.bias_grad)
    fmt = {"contiguous": torch.contiguous_format, "channels_last": torch.channels_last,
           "channels_last_3d": torch.channels_last_3d}

    def op(xs: Sequence[Any]) -> Any:
        a = call.attrs
        if call.op == "ConvolutionBackward0":
            return torch.ops.aten.convolution(xs[0], xs[1], bias, a["stride"], a["padding"], a["dilation"],
                                              bool(a["transposed"]), a["output_padding"], int(a["groups"]))
        if call.op == "MmBackward0":
            return torch.mm(xs[0], xs[1])
        if call.op == "BmmBackward0":
            return torch.bmm(xs[0], xs[1])
        assert bias is not None  # addmm always has one (its shape comes from the graph or mat2)
        return torch.addmm(bias, xs[0], xs[1], beta=a.get("beta", 1), alpha=a.get("alpha", 1))

    needs = [b for b in bases if b.requires_grad] + ([bias] if bias is not None and bias.requires_grad else [])
    with torch.no_grad():
        probe = op([b.detach() for b in bases])
    grad_out = torch.randn(probe.shape, generator=gen, dtype=torch.float32).to(probe.dtype).to(device)
    grad_out = grad_out.contiguous(memory_format=_format_of(probe))
    variants: Dict[str, Any] = {"captured": grad_runner(lambda: op(bases), needs, grad_out)}
    for layout in rule.layouts(call):
        mf = fmt[layout]
        if layout != "contiguous" and any(len(o.shape) != len(call.operands[0].shape) for o in call.operands):
            continue
        once: List[Any] = []
        for o, b in zip(call.operands, bases):
            if o.origin == "activation":
                once.append(None)  # converted inside the timed call: the rewrite pays it every step
            else:
                once.append(b.detach().contiguous(memory_format=mf).requires_grad_(o.requires_grad))
        alt_needs = [t for t in once if t is not None and t.requires_grad]
        alt_needs += [b for o, b in zip(call.operands, bases) if o.origin == "activation"]
        alt_needs += [bias] if bias is not None and bias.requires_grad else []

        def make(once: List[Any] = once, mf: Any = mf) -> Any:
            return op([t if t is not None else b.contiguous(memory_format=mf) for t, b in zip(once, bases)])
        variants[layout] = grad_runner(make, alt_needs, grad_out)
    if len(variants) < 2:
        return None, None
    return variants, device


def _format_of(t: Any) -> Any:
    if t.dim() == 4 and t.is_contiguous(memory_format=torch.channels_last) and not t.is_contiguous():
        return torch.channels_last
    if t.dim() == 5 and t.is_contiguous(memory_format=torch.channels_last_3d) and not t.is_contiguous():
        return torch.channels_last_3d
    return torch.contiguous_format

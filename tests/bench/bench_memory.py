"""Benchmark of gw.profile(..., memory=True): its overhead over a plain profile, and the checkpoint prediction
against the measured peak, on the real models (GPT-2 from a config, never weights; a hand-written ResNet in training
mode, tests/memory_models.py).

    .venv/bin/python tests/bench/bench_memory.py [--quick] [--trials 5] [--threads 1] [--repeat 5] [--no-compare]

Prints, per model, with the load average before and after:
1. T(profile(repeat, warmup=1)) and T(profile(repeat, warmup=1, memory=True) + g.memory()), interleaved, medians
   over trials, and their ratio (target: at most x1.3). memory=True makes the first run (a warm-up one) the memory
   run and adds the analysis (candidates included); the measured runs are the same.
2. The peak the memory run reports (CPU allocator) and the peak of one plain step measured on its own
   (``step_peak``: torch.profiler's memory events around ``loss.backward()``, no graphwidget hooks).
3. The top checkpoint candidate of g.advise(): its predicted peak and saving, and the measured peak of a plain step
   and of the step with that candidate checkpointed (gw.with_checkpoint), the share of the prediction that the
   measurement gives (target: at least 70 %), and whether the gradients are bit-identical.
4. Unless --no-compare: the memory line of gw.compare(plain, checkpointed, memory=True, profile=True)'s report
   (peak and step time, both measured).
Then one table of predicted vs measured for both models.
"""
from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path
from typing import Any, Callable, Dict, List, Tuple

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import torch  # noqa: E402
from memory_models import gpt2_small, resnet  # noqa: E402

import graphwidget as gw  # noqa: E402
from graphwidget.attribution.memory import step_peak  # noqa: E402

MiB = 2 ** 20


def load() -> str:
    return "load %.2f %.2f %.2f" % os.getloadavg()


def gpt2() -> Tuple[torch.nn.Module, Callable[[Any], Any]]:
    model, ids = gpt2_small()
    return model, lambda m: m(input_ids=ids, labels=ids).loss


def convnet() -> Tuple[torch.nn.Module, Callable[[Any], Any]]:
    model = resnet()
    x = torch.randn(16, 3, 64, 64, generator=torch.Generator().manual_seed(2))
    return model, lambda m: m(x).sum()


def timed(f: Callable[[], Any]) -> float:
    t = time.perf_counter()
    f()
    return time.perf_counter() - t


def overhead(model: torch.nn.Module, step: Callable[[Any], Any], trials: int, repeat: int) -> Tuple[float, float]:
    plain: List[float] = []
    mem: List[float] = []

    def run_plain() -> None:
        gw.profile(step, model, repeat=repeat, warmup=1, module=model)

    def run_mem() -> None:
        gw.profile(step, model, repeat=repeat, warmup=1, module=model, memory=True).memory()

    run_plain()
    run_mem()  # first use of the profiler in the process (Kineto's start-up) left out
    for k in range(trials):
        order = (run_plain, run_mem) if k % 2 == 0 else (run_mem, run_plain)
        for f in order:
            (plain if f is run_plain else mem).append(timed(f))
    return statistics.median(plain), statistics.median(mem)


def bench(name: str, model: torch.nn.Module, step: Callable[[Any], Any], trials: int, repeat: int,
          compare: bool) -> Dict[str, Any]:
    print(f"== {name}  ({load()})")
    row: Dict[str, Any] = {"model": name}
    if trials:
        p, m = overhead(model, step, trials, repeat)
        row["overhead"] = m / p
        print(f"  profile(repeat={repeat}, warmup=1): {p:.2f} s; with memory=True (+ g.memory()): {m:.2f} s; "
              f"ratio x{m / p:.2f}  (target <= x1.3; medians of {trials}, interleaved; {load()})")
    t0 = time.perf_counter()
    g = gw.profile(step, model, repeat=1, warmup=0, module=model, memory=True)
    t1 = time.perf_counter()
    rep = g.memory()
    t2 = time.perf_counter()
    print(f"  profile(repeat=1, warmup=0, memory=True) {t1 - t0:.2f} s; g.memory() {1000 * (t2 - t1):.0f} ms "
          f"({len(g)} nodes, {len(rep.candidates)} candidates listed)")
    print(f"  {rep.headline()}")
    cpu = torch.device("cpu")
    model.zero_grad(set_to_none=True)
    plain_peak = step_peak(lambda: step(model).backward(), cpu)["bytes"]
    row.update(reported=rep.peak["bytes"], plain=plain_peak)
    print(f"  peak reported by the memory run {rep.peak['bytes'] / MiB:.1f} MiB; one plain step measured alone "
          f"{plain_peak / MiB:.1f} MiB ({100 * (rep.peak['bytes'] / plain_peak - 1):+.1f} %)")
    fs = [f for f in g.advise() if f.rule == "checkpoint-candidate"]
    if not fs:
        print("  no checkpoint-candidate finding")
        return row
    ev = fs[0].evidence
    ck = gw.with_checkpoint(model, ev["modules"])
    peaks, grads = [], []
    for mdl in (model, ck):
        model.zero_grad(set_to_none=True)
        peaks.append(step_peak(lambda mdl=mdl: step(mdl).backward(), cpu)["bytes"])
        grads.append([q.grad.clone() for q in model.parameters()])
    same = all(torch.equal(a, b) for a, b in zip(*grads))
    saved = peaks[0] - peaks[1]
    row.update(label=ev["label"], pred_peak=ev["peak_bytes"], pred_new=ev["new_peak_bytes"],
               pred_saving=ev["saving_bytes"], meas_peak=peaks[0], meas_new=peaks[1], meas_saving=saved,
               same=same)
    print(f"  top candidate {ev['label']}: predicted peak {ev['peak_bytes'] / MiB:.1f} -> "
          f"{ev['new_peak_bytes'] / MiB:.1f} MiB (-{ev['saving_bytes'] / MiB:.1f}); measured "
          f"{peaks[0] / MiB:.1f} -> {peaks[1] / MiB:.1f} MiB (-{saved / MiB:.1f}): "
          f"{100 * saved / ev['saving_bytes']:.0f} % of the prediction (target >= 70 %); gradients "
          f"{'bit-identical' if same else 'DIFFER'}")
    if compare:
        d = gw.compare(lambda: step(model), lambda: step(ck), memory=True, profile=True, advise=False,
                       labels=("plain", f"checkpoint {ev['label']}"))
        line = next((ln for ln in d.report().splitlines() if ln.startswith("memory:")), "(no memory line)")
        print(f"  gw.compare: {line}  ({load()})")
    return row


def table(rows: List[Dict[str, Any]]) -> None:
    print("\n| model | peak, memory run | peak, plain step | top candidate | predicted peak -> after | "
          "measured peak -> after | predicted saving | measured saving | measured / predicted | gradients | "
          "overhead |")
    print("|---|---:|---:|---|---:|---:|---:|---:|---:|---|---:|")
    def mib(r: Dict[str, Any], k: str) -> str:
        return f"{r[k] / MiB:.1f} MiB" if k in r else "-"

    for r in rows:
        ratio = f"{100 * r['meas_saving'] / r['pred_saving']:.0f} %" if "pred_saving" in r else "-"
        same = ("bit-identical" if r["same"] else "differ") if "same" in r else "-"
        over = f"x{r['overhead']:.2f}" if "overhead" in r else "-"
        pred = f"{r['pred_peak'] / MiB:.1f} -> {r['pred_new'] / MiB:.1f} MiB" if "pred_peak" in r else "-"
        meas = f"{r['meas_peak'] / MiB:.1f} -> {r['meas_new'] / MiB:.1f} MiB" if "meas_peak" in r else "-"
        print(f"| {r['model']} | {mib(r, 'reported')} | {mib(r, 'plain')} | {r.get('label', '-')} | {pred} | "
              f"{meas} | {mib(r, 'pred_saving')} | {mib(r, 'meas_saving')} | {ratio} | {same} | {over} |")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true", help="3 trials, repeat 3, no compare")
    ap.add_argument("--trials", type=int, default=5, help="overhead trials (0: skip the overhead)")
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--no-compare", action="store_true", help="skip the gw.compare run of the top candidate")
    a = ap.parse_args()
    if a.quick:
        a.trials, a.repeat, a.no_compare = min(a.trials, 3), min(a.repeat, 3), True
    torch.set_num_threads(a.threads)
    print(f"torch {torch.__version__}, {a.threads} thread(s), {os.cpu_count()} cores, {load()}")
    rows = []
    for name, make in (("GPT-2 (4 layers, 128 wide, batch 8 x 128)", gpt2),
                       ("ResNet (6 blocks, training mode, 16x3x64x64)", convnet)):
        model, step = make()
        rows.append(bench(name, model, step, a.trials, a.repeat, not a.no_compare))
    table(rows)
    print(f"({load()})")


if __name__ == "__main__":
    main()

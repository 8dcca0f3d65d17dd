"""Benchmark of gw.profile(..., memory=True): its overhead over a plain profile, and the checkpoint prediction
against the measured peak, on the real models (GPT-2 from a config, a hand-written ResNet).

    .venv/bin/python tests/bench/bench_memory.py [--trials 5] [--threads 1] [--repeat 5]

Prints, per model, with the load average before and after:
1. T(profile(repeat, warmup=1)) and T(profile(repeat, warmup=1, memory=True)), interleaved, medians over trials, and
   their ratio (target: at most x1.3). memory=True makes the first run (a warm-up one) the memory run and adds
   ``g.memory()`` (the analysis, candidates included); the measured runs are the same.
2. The peak (allocator), the top checkpoint candidate of g.advise() (predicted saving), and the measured peak of a
   plain step and of the step with that candidate checkpointed (gw.with_checkpoint), measured by the allocator.
"""
from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
import warnings
from pathlib import Path
from typing import Any, Callable, List, Tuple

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import torch  # noqa: E402
from memory_models import resnet  # noqa: E402

import graphwidget as gw  # noqa: E402
from graphwidget.attribution.memory import step_peak  # noqa: E402

MiB = 2 ** 20


def load() -> str:
    return "load %.2f %.2f %.2f" % os.getloadavg()


def gpt2() -> Tuple[torch.nn.Module, Callable[[Any], Any]]:
    import transformers
    transformers.logging.set_verbosity_error()
    from transformers import GPT2Config, GPT2LMHeadModel
    torch.manual_seed(0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        cfg = GPT2Config(n_layer=4, n_embd=128, n_head=4, n_positions=128, vocab_size=512, attn_pdrop=0,
                         resid_pdrop=0, embd_pdrop=0, bos_token_id=0, eos_token_id=0, use_cache=False)
        model = GPT2LMHeadModel(cfg)
    model.config._attn_implementation = "eager"
    ids = torch.randint(0, 512, (8, 128), generator=torch.Generator().manual_seed(1))
    return model, lambda m: m(input_ids=ids, labels=ids).loss


def convnet() -> Tuple[torch.nn.Module, Callable[[Any], Any]]:
    model = resnet()
    x = torch.randn(16, 3, 64, 64, generator=torch.Generator().manual_seed(2))
    return model, lambda m: m(x).sum()


def timed(f: Callable[[], Any]) -> float:
    t = time.perf_counter()
    f()
    return time.perf_counter() - t


def bench(name: str, model: torch.nn.Module, step: Callable[[Any], Any], trials: int, repeat: int) -> None:
    print(f"== {name}  ({load()})")
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
    p, m = statistics.median(plain), statistics.median(mem)
    print(f"  profile(repeat={repeat}, warmup=1): {p:.2f} s; with memory=True (+ g.memory()): {m:.2f} s; "
          f"ratio x{m / p:.2f}  (target <= x1.3; medians of {trials}, interleaved; {load()})")
    g = gw.profile(step, model, repeat=1, warmup=0, module=model, memory=True)
    rep = g.memory()
    print(f"  {rep.headline()}")
    fs = [f for f in g.advise() if f.rule == "checkpoint-candidate"]
    if not fs:
        print("  no checkpoint-candidate finding")
        return
    ev = fs[0].evidence
    ck = gw.with_checkpoint(model, ev["modules"])
    cpu = torch.device("cpu")
    peaks = []
    for mdl in (model, ck):
        model.zero_grad(set_to_none=True)
        peaks.append(step_peak(lambda mdl=mdl: step(mdl).backward(), cpu)["bytes"])
    saved = peaks[0] - peaks[1]
    print(f"  top candidate {ev['label']}: predicted peak {ev['peak_bytes'] / MiB:.1f} -> "
          f"{ev['new_peak_bytes'] / MiB:.1f} MiB (-{ev['saving_bytes'] / MiB:.1f}); measured "
          f"{peaks[0] / MiB:.1f} -> {peaks[1] / MiB:.1f} MiB (-{saved / MiB:.1f}): "
          f"{100 * saved / ev['saving_bytes']:.0f} % of the prediction (target >= 70 %)")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--trials", type=int, default=5)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--repeat", type=int, default=5)
    a = ap.parse_args()
    torch.set_num_threads(a.threads)
    print(f"torch {torch.__version__}, {a.threads} thread(s), {os.cpu_count()} cores")
    for name, make in (("GPT-2 (4 layers, 128 wide, batch 8 x 128)", gpt2), ("ResNet (6 blocks, 16x3x64x64)",
                                                                               convnet)):
        model, step = make()
        bench(name, model, step, a.trials, a.repeat)


if __name__ == "__main__":
    main()

"""The secondary answers against independent truth (issue 33): where the memory peak is, what a checkpoint saves and
costs, which rank straggles and by how much, and compare's speed ratio against CPU-time truth under load.

Run: .venv/bin/python tests/bench/bench_secondary.py [--part memory,ranks,speed] [--rounds 30]

* memory: models built here (a model whose peak is a no-grad forward temporary inside a submodule; a stack of
  identical blocks). Predicted place (module, line) beside the line read from the source; the predicted peak beside
  the hand sum of torch.profiler's memory events; the top candidates' predicted saving beside the peak measured
  with ``gw.with_checkpoint`` (``step_peak``, the allocator's running sum); the predicted recompute time and its
  interval beside the module's forward timed directly (median of 30 interleaved calls, perf_counter).
* ranks: torchrun --nproc_per_node=2 and 4 on gloo (tests/dist_worker.py, scenario "sleepy"/"same"): the last rank
  sleeps DELAY ms in a module's forward; the straggler and its excess against the other ranks beside the delay.
* speed: one-hot @ E vs F.embedding (a pair more than 10x apart) with two busy processes beside it: compare's
  whole-step ratio beside a CPU-time truth (plain interleaved timing with time.process_time, no graphwidget code).
"""
from __future__ import annotations

import argparse
import inspect
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))

import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402
from memory_models import independent_peak  # noqa: E402 - the tests' hand sum of the profiler's memory events
from torch import nn  # noqa: E402

import graphwidget as gw  # noqa: E402
from graphwidget.analysis.memory_checkpoints import checkpoint_candidates  # noqa: E402
from graphwidget.attribution.memory import step_peak  # noqa: E402

MiB = 2 ** 20


class Scorer(nn.Module):
    def __init__(self, d: int) -> None:
        super().__init__()
        self.lin = nn.Linear(d, d)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        with torch.no_grad():
            s = torch.ones(8 * MiB).mul_(0.5).sum()  # TEMPORARY
        return self.lin(x) * s


class WithTemp(nn.Module):
    def __init__(self, d: int = 256) -> None:
        super().__init__()
        self.enc = nn.Linear(d, d)
        self.scorer = Scorer(d)
        self.head = nn.Linear(d, 1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.head(self.scorer(torch.relu(self.enc(x))) * 2).sum()


class Block(nn.Module):
    def __init__(self, d: int) -> None:
        super().__init__()
        self.n = nn.LayerNorm(d)
        self.f1, self.f2 = nn.Linear(d, 4 * d), nn.Linear(4 * d, d)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x + self.f2(torch.tanh(self.f1(self.n(x))))


class Stack(nn.Module):
    def __init__(self, d: int = 128, n: int = 4) -> None:
        super().__init__()
        self.layers = nn.ModuleList(Block(d) for _ in range(n))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        for layer in self.layers:
            x = layer(x)
        return x.sum()


def direct_ms(module: nn.Module, x: torch.Tensor, n: int = 30) -> float:
    xs = []
    for _ in range(n):
        t0 = time.perf_counter()
        module(x)
        xs.append(time.perf_counter() - t0)
    return 1e3 * statistics.median(xs)


def part_memory() -> None:
    print("## memory\n")
    torch.manual_seed(0)
    m, x = WithTemp(), torch.randn(64, 256)
    g = gw.profile(m, x, repeat=1, warmup=0, memory=True)
    peak = g.memory().peak
    lines, first = inspect.getsourcelines(Scorer.forward)
    truth_line = first + next(i for i, t in enumerate(lines) if "TEMPORARY" in t)
    m.zero_grad(set_to_none=True)
    hand = independent_peak(lambda: m(x).backward())
    print("| case | predicted place | true place | predicted peak | hand-summed peak | parts sum to peak |")
    print("|---|---|---|---|---|---|")
    print(f"| no-grad 32 MiB temporary in `scorer` | {peak['phase']}, `{peak['module']}`, "
          f"line {str(peak['source_line']).rsplit(':', 1)[-1]} ({peak['call']}) | forward, `scorer`, line "
          f"{truth_line} | {peak['bytes'] / MiB:.2f} MiB | {hand / MiB:.2f} MiB | "
          f"{sum(peak['by_kind'].values()) + peak['overcount_bytes'] == peak['bytes']} |")
    print()
    torch.manual_seed(0)
    s, x = Stack(), torch.randn(16, 128, 128)
    g = gw.profile(s, x, repeat=7, warmup=1, memory=True)
    cands = checkpoint_candidates(g, top=0)
    base = step_peak(lambda: s(x).backward(), torch.device("cpu"))["bytes"]
    s.zero_grad(set_to_none=True)
    print("| candidate | predicted saving | measured saving (with_checkpoint) | predicted recompute ms [interval] | "
          "direct forward ms |")
    print("|---|---|---|---|---|")
    shown = sorted(cands, key=lambda r: -r["saving_bytes"])[:3] + [r for r in cands if r["class"] == "Block"][:2]
    seen = set()
    for r in shown:
        if r["label"] in seen:
            continue
        seen.add(r["label"])
        ck = gw.with_checkpoint(s, r["modules"])
        s.zero_grad(set_to_none=True)
        got = step_peak(lambda ck=ck: ck(x).backward(), torch.device("cpu"))["bytes"]
        s.zero_grad(set_to_none=True)
        direct = 0.0
        mods = dict(s.named_modules())
        for path in r["modules"]:
            idx = int(path.split(".")[1])
            h = x
            for j in range(idx):
                h = s.layers[j](h).detach()
            direct += direct_ms(mods[path], h.requires_grad_())
        iv = r.get("recompute_interval") or [float("nan")] * 2
        print(f"| {r['label']} | {r['saving_bytes'] / MiB:.2f} MiB | {(base - got) / MiB:.2f} MiB | "
              f"{r['recompute_ms']:.2f} [{iv[0]:.2f}–{iv[1]:.2f}] | {direct:.2f} |")
    print()


def part_ranks() -> None:
    print("## ranks\n")
    print("| ranks | injected delay (ms, per forward) | straggler | measure | excess vs other ranks (ms) | "
          "identical job: straggler |")
    print("|---|---|---|---|---|---|")
    for nproc in (2, 4):
        for delay in (20.0, 50.0):
            with tempfile.TemporaryDirectory() as tmp:
                env = dict(os.environ, PYTHONPATH=str(ROOT), OMP_NUM_THREADS="1", GW_DELAY_MS=str(delay))
                cmd = [sys.executable, "-m", "torch.distributed.run", "--standalone", f"--nproc_per_node={nproc}",
                       str(ROOT / "tests" / "dist_worker.py"), "sleepy,same", tmp]
                subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True, timeout=600)
                try:
                    rec = json.loads((Path(tmp) / "sleepy" / "result0.json").read_text())["record"]
                    same = json.loads((Path(tmp) / "same" / "result0.json").read_text())["record"]
                except (OSError, KeyError) as exc:
                    print(f"| {nproc} | {delay:g} | (no result: {exc}) | | | |")
                    continue
            st = rec["straggler"] or {}
            sm = same["straggler"]
            print(f"| {nproc} | {delay:g} | {st.get('rank', 'none')} (expected {nproc - 1}) | {st.get('measure', '-')} "
                  f"| {st.get('excess_ms', float('nan')):.1f} | "
                  f"{'none' if sm is None else 'rank %s +%.2f ms' % (sm['rank'], sm['excess_ms'])} |")
    print()


def onehot(idx: torch.Tensor, E: torch.Tensor) -> torch.Tensor:
    return (F.one_hot(idx, E.shape[0]).to(E.dtype) @ E).sum()


def embed(idx: torch.Tensor, E: torch.Tensor) -> torch.Tensor:
    return F.embedding(idx, E).sum()


def cpu_truth(idx: torch.Tensor, E: torch.Tensor, rounds: int) -> float:
    """Median over rounds of process-CPU-time(onehot) / process-CPU-time(embedding), A and B alternated."""
    ratios = []
    for k in range(rounds):
        t = {}
        for f in ((onehot, embed) if k % 2 == 0 else (embed, onehot)):
            best = float("inf")
            for _ in range(3):
                E.grad = None
                c0 = time.process_time()
                f(idx, E).backward()
                best = min(best, time.process_time() - c0)
            t[f.__name__] = best
        ratios.append(t["onehot"] / t["embed"])
    return statistics.median(ratios)


def part_speed(rounds: int) -> None:
    print("## speed under load\n")
    torch.manual_seed(0)
    torch.set_num_threads(1)
    E = torch.randn(4096, 64, requires_grad=True)
    idx = torch.randint(0, 4096, (512,))
    busy = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(2)]
    try:
        time.sleep(0.5)
        print("| run | compare ratio (one-hot / embedding) [interval] | clock | wall-clock ratio | CPU-time truth | "
              "off truth |")
        print("|---|---|---|---|---|---|")
        sentence = ""
        for run in range(3):
            truth = cpu_truth(idx, E, rounds)
            d = gw.compare(embed, onehot, idx, E, labels=("embedding", "one-hot"), threads=1,
                           profile=True, advise=False)
            st = d.timing["step"]
            other = st.get("wall") or st.get("cpu") or {}
            r = st["ratio"]
            print(f"| {run} | {r:.1f} [{st['low']:.1f}–{st['high']:.1f}] | {d.timing['clock']} | "
                  f"{other.get('ratio', float('nan')):.1f} | {truth:.1f} | {100 * (r / truth - 1):+.0f} % |")
            if run == 0:
                sentence = d.sentence()
        print(f"\nrun 0's sentence: {sentence}\n")
    finally:
        for p in busy:
            p.kill()
            p.wait()
    print()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--part", default="memory,ranks,speed")
    ap.add_argument("--rounds", type=int, default=30)
    a = ap.parse_args()
    parts = a.part.split(",")
    if "memory" in parts:
        part_memory()
    if "speed" in parts:
        part_speed(a.rounds)
    if "ranks" in parts:
        part_ranks()


if __name__ == "__main__":
    main()

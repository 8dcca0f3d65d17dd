"""What the divergence search adds to gw.compare: time and peak memory on a GPT-2-sized pair.

Run: .venv/bin/python tests/bench/bench_divergence.py [--quick] [--layers 12] [--embd 768] [--seq 128] [--repeat 1]
(``--quick``: 12 blocks of width 128, seq 32.) Target (issue 31): on a GPT-2-sized pair (12 blocks, seq 128, from
transformers' GPT2Config, no download), ``gw.compare`` with the divergence search takes at most 2x the time of
today's compare without it (no profiling either way), and its peak memory is at most 2x one side's training step.

Each measurement runs in its own fresh subprocess, so the peak resident size (``ru_maxrss``) is that run's alone:
``step`` is one side's forward and backward (the training step), ``compare`` is ``gw.compare(..., divergence=False)``
(today's), ``divergence`` is ``gw.compare(..., divergence=True)``. B is A's deep copy (its own weights, the same
maths), so the search walks every node and finds nothing. ``wall s`` / ``cpu s`` are the call's own times (median of
``--repeat`` calls in the subprocess); ``peak MB`` the subprocess's peak RSS and ``+MB`` its growth over the process
with the models built. The ratios: divergence / compare time (CPU and wall), and divergence peak growth / step peak
growth, and what the search adds to compare's peak against one step's growth (the target reads the latter: the
memory the search adds). On a shared machine read the CPU times.
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

CHILD = r'''
import copy, json, resource, sys, time
import torch
from transformers import GPT2Config, GPT2LMHeadModel
import graphwidget as gw

layers, embd, seq, what, repeat = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3]), sys.argv[4], int(sys.argv[5])
torch.manual_seed(0)
cfg = GPT2Config(n_layer=layers, n_embd=embd, n_head=max(1, embd // 64), n_positions=max(seq, 128),
                 resid_pdrop=0.0, embd_pdrop=0.0, attn_pdrop=0.0)
ma = GPT2LMHeadModel(cfg)
mb = copy.deepcopy(ma)
ids = torch.randint(0, cfg.vocab_size, (1, seq))

def fa(ids):
    return ma(input_ids=ids, labels=ids).loss

def fb(ids):
    return mb(input_ids=ids, labels=ids).loss

base = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
walls, cpus = [], []
for _ in range(repeat):
    t0, c0 = time.perf_counter(), time.process_time()
    if what == "step":
        fa(ids).backward()
        ma.zero_grad(set_to_none=True)
    else:
        d = gw.compare(fa, fb, ids, advise=False, divergence=(what == "divergence"))
        assert d.equivalent, d.sentence()
        assert d.divergence is None
        del d
    walls.append(time.perf_counter() - t0)
    cpus.append(time.process_time() - c0)
peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
print(json.dumps({"wall": sorted(walls)[len(walls) // 2], "cpu": sorted(cpus)[len(cpus) // 2], "peak": peak,
                  "grow": peak - base}))
'''


def run(layers: int, embd: int, seq: int, what: str, repeat: int) -> dict:
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    p = subprocess.run([sys.executable, "-c", CHILD, str(layers), str(embd), str(seq), what, str(repeat)],
                       capture_output=True, text=True, env=env, timeout=3600)
    if p.returncode != 0:
        raise SystemExit(f"{what} failed:\n{p.stderr[-3000:]}")
    return json.loads(p.stdout.strip().splitlines()[-1])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--quick", action="store_true", help="12 blocks of width 128, seq 32")
    ap.add_argument("--layers", type=int, default=12)
    ap.add_argument("--embd", type=int, default=768)
    ap.add_argument("--seq", type=int, default=128)
    ap.add_argument("--repeat", type=int, default=1)
    a = ap.parse_args()
    if a.quick:
        a.embd, a.seq = 128, 32
    print(f"GPT-2 pair: {a.layers} blocks, width {a.embd}, seq {a.seq}; load {os.getloadavg()[0]:.1f}")
    got = {w: run(a.layers, a.embd, a.seq, w, a.repeat) for w in ("step", "compare", "divergence")}
    print(f"{'run':<12}{'wall s':>9}{'cpu s':>9}{'peak MB':>10}{'+MB':>9}")
    for w, r in got.items():
        print(f"{w:<12}{r['wall']:>9.2f}{r['cpu']:>9.2f}{r['peak']:>10.0f}{r['grow']:>9.0f}")
    c, d, s = got["compare"], got["divergence"], got["step"]
    tc, tw = d["cpu"] / c["cpu"], d["wall"] / c["wall"]
    mem = d["grow"] / s["grow"] if s["grow"] > 0 else float("inf")
    print(f"divergence / compare time: cpu x{tc:.2f}, wall x{tw:.2f} (target <= 2x): {'ok' if tc <= 2 else 'MISS'}")
    print(f"divergence peak growth / one training step's: x{mem:.2f} (target <= 2x): {'ok' if mem <= 2 else 'MISS'}")
    extra = d["grow"] - c["grow"]
    added = extra / s["grow"] if s["grow"] > 0 else float("inf")
    print(f"peak the search adds to compare's: {extra:+.0f} MB = x{added:.2f} one training step's "
          f"(target <= 2x): {'ok' if added <= 2 else 'MISS'}")


if __name__ == "__main__":
    main()

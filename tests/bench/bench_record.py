"""Recordings on a GPT-2-sized model: how big a recording is, how long ``gw.record`` and ``rec.save`` take, and how
long comparing two recording files takes against the in-process ``gw.compare`` of the same two sides.

Run: .venv/bin/python tests/bench/bench_record.py [--quick] [--layers 12] [--seq 128]
(``--quick``: 2 layers, seq 32.) The model is transformers' GPT2LMHeadModel from GPT2Config (768 wide, 12 heads,
``--layers`` blocks), in eval mode, the step its loss on ``--seq`` tokens (batch 1); B is a separate copy of the same
weights. Columns: ``record s`` (one gw.record: forward, backward, float64 run, per-node values), ``save s``, ``file
MB``, ``values MB`` (the exact per-node values it holds; digests beyond the default budget), ``load s``
(gw.load), ``compare files s`` (gw.compare of the two files: reading both, the verdict, matching, divergence),
``compare live s`` (gw.compare of the two models in this process). Wall seconds, one run each (each is seconds to
minutes); the load average is printed first. Nothing is asserted.
"""
from __future__ import annotations

import argparse
import copy
import os
import sys
import tempfile
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
import graphwidget as gw  # noqa: E402


class Step(torch.nn.Module):
    """The loss of a language model on its own tokens."""

    def __init__(self, lm: torch.nn.Module) -> None:
        super().__init__()
        self.lm = lm

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        return self.lm(input_ids=ids, labels=ids).loss


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--layers", type=int, default=12)
    ap.add_argument("--seq", type=int, default=128)
    args = ap.parse_args()
    layers, seq = (2, 32) if args.quick else (args.layers, args.seq)
    from transformers import GPT2Config, GPT2LMHeadModel
    torch.manual_seed(0)
    lm = GPT2LMHeadModel(GPT2Config(n_layer=layers, n_positions=max(seq, 128))).eval()
    a, b = Step(lm), Step(copy.deepcopy(lm))
    ids = torch.randint(0, 50257, (1, seq))
    print(f"load average {os.getloadavg()[0]:.1f}; GPT-2 {layers} layers, seq {seq}, "
          f"{sum(p.numel() for p in lm.parameters()) / 1e6:.0f}M parameters, {torch.get_num_threads()} threads")
    with tempfile.TemporaryDirectory() as tmp:
        t0 = time.perf_counter()
        ra = gw.record(a, ids, label="A")
        t_rec = time.perf_counter() - t0
        rb = gw.record(b, ids, label="B")
        t0 = time.perf_counter()
        pa = ra.save(Path(tmp) / "a.gwrec")
        t_save = time.perf_counter() - t0
        pb = rb.save(Path(tmp) / "b.gwrec")
        size = pa.stat().st_size
        values = ra.values.nbytes if ra.values is not None else 0
        del ra, rb
        t0 = time.perf_counter()
        gw.load(pa)
        t_load = time.perf_counter() - t0
        t0 = time.perf_counter()
        df = gw.compare(str(pa), str(pb), advise=False)
        t_files = time.perf_counter() - t0
        nodes = len(df.a)
        sentence = df.sentence()
        del df
    t0 = time.perf_counter()
    dl = gw.compare(a, b, ids, labels=("A", "B"), advise=False)
    t_live = time.perf_counter() - t0
    print(f"{nodes} nodes; files: {sentence}")
    print(f"live: {dl.sentence()}")
    print("| record s | save s | file MB | values MB | load s | compare files s | compare live s | files / live |")
    print("|---:|---:|---:|---:|---:|---:|---:|---:|")
    print(f"| {t_rec:.1f} | {t_save:.1f} | {size / 2 ** 20:.0f} | {values / 2 ** 20:.0f} | {t_load:.1f} | "
          f"{t_files:.1f} | {t_live:.1f} | {t_files / t_live:.2f} |")


if __name__ == "__main__":
    main()

"""Sizes and times of the exports for other tools (g.export_chrome_trace, g.export_model_explorer): a GPT-2-shaped
profile (12 blocks, from a config: no download) and a profiled 100k-node chain. Prints numbers; asserts nothing.

    PYTHONPATH=. python tests/bench/bench_interop.py [--chain N]
"""
from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
import graphwidget as gw  # noqa: E402


def gpt2() -> tuple:
    import transformers
    transformers.logging.set_verbosity_error()
    from transformers import GPT2Config, GPT2LMHeadModel
    torch.manual_seed(0)
    cfg = GPT2Config(n_layer=12, n_embd=96, n_head=4, n_positions=64, vocab_size=512, use_cache=False,
                     attn_pdrop=0, resid_pdrop=0, embd_pdrop=0)
    m = GPT2LMHeadModel(cfg).eval()
    ids = torch.randint(0, 512, (2, 64))
    return m, ids


def chain(x: torch.Tensor, n: int) -> torch.Tensor:
    for _ in range(n):
        x = x * 1.0001
    return x.sum()


def report(name: str, g: gw.GradGraph, out: Path) -> None:
    t = time.perf_counter()
    trace = g.export_chrome_trace(out / f"{name}.trace.json")
    t_trace = time.perf_counter() - t
    t = time.perf_counter()
    paths = g.export_model_explorer(out / f"{name}.me.json")
    t_me = time.perf_counter() - t
    nd = sum(os.path.getsize(p) for p in paths[1:])
    print(f"{name}: {len(g)} nodes, {len(g.steps or [])} steps | chrome trace {os.path.getsize(trace) / 2**20:.2f} MiB "
          f"in {t_trace:.2f} s | model explorer {os.path.getsize(paths[0]) / 2**20:.2f} MiB + node data "
          f"{nd / 2**20:.2f} MiB in {t_me:.2f} s")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--chain", type=int, default=100_000)
    a = ap.parse_args()
    with tempfile.TemporaryDirectory() as d:
        out = Path(d)
        m, ids = gpt2()
        g = gw.profile(lambda m, ids: m(ids, labels=ids).loss, m, ids, repeat=5, module=m)
        report("gpt2-12-blocks", g, out)
        x = torch.randn(4, requires_grad=True)
        g = gw.profile(chain, x, a.chain, repeat=1, warmup=0)
        report(f"chain-{a.chain}", g, out)


if __name__ == "__main__":
    main()

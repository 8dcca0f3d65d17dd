"""How long ``advise()`` takes on big graphs (targets: 10k nodes <= 0.5 s, 100k nodes <= 5 s).

    .venv/bin/python tests/bench/bench_advisor.py            # 10k and 100k
    .venv/bin/python tests/bench/bench_advisor.py 10000      # one size
    .venv/bin/python tests/bench/bench_advisor.py --quick    # 10k only (tests/bench/report.py)

Four traced programs per size, each advised as traced and again after ``load_json`` (torch-free path):

* ``chain``      — ``examples.tiny_chain``: one source line making every node (the loop rule's grouping worst case);
* ``loop``       — ``examples.select_loop``: one big vectorisable loop (loop-built fires on all of it);
* ``repeats``    — the seed's repeat pattern over and over (a repeat-broadcast finding per copy, each proved);
* ``transformer``— a stack of ``nn.TransformerEncoderLayer`` (a real model: every rule looks, none fires).

Printed: nodes, findings, the best of 3 ``advise()`` calls, and the slowest rule. Measurement (the memory-layout
rule) is part of advise() but has nothing to measure here (no unusual layouts); its cost on graphs that have some
is per distinct call, reported by the rule's own evidence.
"""
from __future__ import annotations

import argparse
import os
import time
from typing import Callable, Dict, List, Tuple

import torch
import torch.nn as nn

import graphwidget as gw
from graphwidget import examples as ex
from graphwidget._util.gc import gc_paused
from graphwidget.analysis import advisor
from graphwidget.analysis.advisor.context import Context


def repeats(n_nodes: int) -> Callable[[], torch.Tensor]:
    copies = max(1, n_nodes // 45)
    homo = torch.randn(copies, 2, 3, 3, requires_grad=True)
    g = torch.randn(2, 1024, 2)

    def fn() -> torch.Tensor:
        total = torch.zeros(())
        for k in range(copies):
            h = homo[k].unsqueeze(1).repeat(1, 1024, 1, 1)
            t1 = h[:, :, 0, 0] * g[:, :, 0] + h[:, :, 0, 1] * g[:, :, 1] + h[:, :, 0, 2]
            t2 = h[:, :, 2, 0] * g[:, :, 0] + h[:, :, 2, 1] * g[:, :, 1] + h[:, :, 2, 2]
            t3 = h[:, :, 1, 0] * g[:, :, 0] + h[:, :, 1, 1] * g[:, :, 1] + h[:, :, 1, 2]
            total = total + (t1 / t2 + t3).sum()
        return total
    return fn


def transformer(n_nodes: int) -> Callable[[], torch.Tensor]:
    layers = max(1, n_nodes // 73)
    torch.manual_seed(0)
    stack = nn.Sequential(*[nn.TransformerEncoderLayer(16, 2, 32, dropout=0.0, batch_first=True)
                            for _ in range(layers)])
    x = torch.randn(2, 8, 16)
    return lambda: stack(x).sum()


def programs(n: int) -> Dict[str, Callable[[], torch.Tensor]]:
    return {
        "chain": lambda: ex.tiny_chain(n)[1],
        "loop": lambda: ex.select_loop(max(1, (n - 5) // 6))[1],
        "repeats": repeats(n),
        "transformer": transformer(n),
    }


def time_advise(g: gw.GradGraph, runs: int = 3) -> Tuple[float, float, int, str]:
    best, cpu, found = float("inf"), float("inf"), 0
    for _ in range(runs):
        t0, c0 = time.perf_counter(), time.process_time()
        found = len(g.advise(min_share=0))
        best = min(best, time.perf_counter() - t0)
        cpu = min(cpu, time.process_time() - c0)
    # each rule alone on a fresh context, best of 3 (claims make later rules cheaper; this is the unshared cost)
    per_rule: List[Tuple[float, str]] = []
    with gc_paused():  # as advise() runs
        for rule in advisor.RULES:
            alone = float("inf")
            for _ in range(3):
                ctx = Context(g)
                t0 = time.perf_counter()
                advisor._rule_module(rule).find(ctx)
                alone = min(alone, time.perf_counter() - t0)
            per_rule.append((alone, rule))
    slow_t, slow_rule = max(per_rule)
    return best, cpu, found, f"{slow_rule} {slow_t:.3f} s"


def main(sizes: List[int]) -> None:
    print(f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores (wall times on a shared machine "
          f"inflate with it)")
    print(f"{'program':<12} {'nodes':>8} {'graph':<7} {'findings':>8} {'wall (best of 3)':>17} {'cpu':>8}  "
          f"slowest rule alone (wall)")
    for n in sizes:
        target = 0.5 if n <= 10_000 else 5.0
        for name, fn in programs(n).items():
            g = gw.trace(fn)
            for kind, graph in (("traced", g), ("loaded", gw.load_json(g.to_json()))):
                best, cpu, found, slow = time_advise(graph)
                flag = "ok" if best <= target * len(graph) / n else "SLOW"
                print(f"{name:<12} {len(graph):>8,} {kind:<7} {found:>8} {best:>15.3f} s {cpu:>6.3f} s  {slow}  "
                      f"[{flag}: target {target} s per {n:,} nodes]")


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("sizes", type=int, nargs="*", help="graph sizes in nodes (default 10k and 100k)")
    ap.add_argument("--quick", action="store_true", help="10k nodes only")
    a = ap.parse_args()
    main(a.sizes or ([10_000] if a.quick else [10_000, 100_000]))

"""Capture and graph files on three op mixes, not only the kindest: the bench's random DAG, a chain of ops that each
save a Python scalar, and real transformer steps.

Run: .venv/bin/python tests/bench/bench_families.py [--quick] [--sizes 100000 1000000] [--repeat 3]
         [--python-bound]
(``--quick``: 100k nodes only; ``--python-bound``: also the pure-Python engine against its lower bound,
tests/bench/bench_capture.py's ``python_bound``.)

Families (each built fresh per measurement, about ``n`` autograd nodes):

* ``dag`` — tests/bench/bench_capture.py's random DAG (adds, subtractions and products by a Python scalar; 6 % leaves);
* ``scalar chain`` — ``y = y * 1.0001`` repeated: autograd saves a fresh 0-d tensor per node, each with a storage of
  its own, so every node's saved-tensor record differs (in its storage id only);
* ``transformer`` — GPT-2 from its config (12 layers, small widths so that a step takes milliseconds; never
  downloaded), as many forward passes on fresh token batches as reach ``n`` nodes, their losses summed: the op mix of
  a real model (linear layers, attention, layer norms, GELU, embeddings, a loss), each pass saving its own
  activations, the weights saved by every pass.

Columns: ``capture`` CPU seconds of ``gw.capture`` (the compiled core when built) and its ratio to the floor, the
bare DFS over ``next_functions`` with the GC paused (bench_capture.py's ``bare_dfs``), each on a fresh graph, the
least of ``--repeat`` runs (a run is only ever slowed, never sped up); ``B/node`` the JSON text per node as written
now (version 3) and in version 2 (flat columns, what earlier releases wrote); ``load_json / json.loads``: reading the
version 3 text against parsing it alone (GC paused, as load_json runs), in ``--repeat`` pairs, one after the other in
the same memory state: the median pair's ratio (the pairs' range in brackets). Targets (issue 35): capture <= 3x the
floor from 100k nodes; <= 60 B/node on the two chains-like families and <= 100 on the transformer; load_json <= 2x
json.loads from 100k. The load average is printed before and after: compare ratios within one run.
"""
from __future__ import annotations

import argparse
import gc
import os
import sys
import time
from pathlib import Path
from typing import Any, Callable, Dict, List, Tuple

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import torch  # noqa: E402
from bench_capture import MAKERS, bare_dfs, make_dag, python_bound  # noqa: E402
from bench_files import parse_only  # noqa: E402
from machine import load_average  # noqa: E402

import graphwidget as gw  # noqa: E402
from graphwidget.capturing._deep_free import make_deep_free_safe  # noqa: E402


def make_scalar_chain(n: int) -> torch.Tensor:
    """``n - 1`` products by a Python scalar after one leaf: each saves a fresh 0-d tensor."""
    x = torch.randn(4, requires_grad=True)
    y = x
    for _ in range(n - 1):
        y = y * 1.0001
    return y


_GPT: Dict[str, Any] = {}


def make_transformer(n: int) -> torch.Tensor:
    """The summed losses of as many GPT-2 forward passes (12 layers, from a config) as give about ``n`` nodes."""
    if not _GPT:
        import logging

        from transformers import GPT2Config, GPT2LMHeadModel
        logging.getLogger("transformers").setLevel(logging.ERROR)
        torch.manual_seed(0)
        cfg = GPT2Config(n_layer=12, n_head=4, n_embd=64, n_positions=64, vocab_size=256, bos_token_id=0,
                         eos_token_id=0, attn_pdrop=0.0, resid_pdrop=0.0, embd_pdrop=0.0)
        _GPT["model"] = GPT2LMHeadModel(cfg)
        ids = torch.randint(0, 256, (2, 16))
        one = _GPT["model"](ids, labels=ids).loss
        # A first pass also holds the parameters' leaves, which later passes share: count what a pass adds.
        _GPT["per_pass"] = len(gw.capture(one + _GPT["model"](ids, labels=ids).loss)) - len(gw.capture(one))
    model, per = _GPT["model"], _GPT["per_pass"]
    loss = None
    for _ in range(max(1, round(n / per))):
        ids = torch.randint(0, 256, (2, 16))
        step = model(ids, labels=ids).loss
        loss = step if loss is None else loss + step
    assert loss is not None
    return loss


FAMILIES: Dict[str, Callable[[int], torch.Tensor]] = {
    "dag": make_dag, "scalar chain": make_scalar_chain, "transformer": make_transformer}
#: Per-node byte targets of the JSON text (issue 35).
SIZE_GOAL = {"dag": 60, "scalar chain": 60, "transformer": 100}


def least_cpu(make: Callable[[int], torch.Tensor], n: int, fn: Callable[[torch.Tensor], Any], repeat: int) -> float:
    """The least CPU seconds of ``fn(root)`` over ``repeat`` freshly built graphs."""
    best = float("inf")
    for _ in range(repeat):
        root = make(n)
        gc.collect()
        c = time.process_time()
        out = fn(root)
        best = min(best, time.process_time() - c)
        del out, root
    return best


def paired_ratio(text: str, repeat: int) -> Tuple[float, float, float, str]:
    """load_json and json.loads of ``text`` in ``repeat`` pairs: the median pair (parse s, load s, ratio) and the
    range of the ratios."""
    pairs: List[Tuple[float, float]] = []
    for _ in range(repeat):
        gc.collect()
        c = time.process_time()
        parse_only(text)
        p = time.process_time() - c
        gc.collect()
        c = time.process_time()
        back = gw.load_json(text)
        ld = time.process_time() - c
        del back
        pairs.append((p, ld))
    pairs.sort(key=lambda pr: pr[1] / pr[0])
    p, ld = pairs[len(pairs) // 2]
    spread = f"[{pairs[0][1] / pairs[0][0]:.2f}-{pairs[-1][1] / pairs[-1][0]:.2f}]" if len(pairs) > 1 else ""
    return p, ld, ld / p, spread


def verdict(value: float, goal: float) -> str:
    return "ok" if value <= goal else "MISS"


def row(family: str, n: int, repeat: int) -> str:
    make = FAMILIES[family]
    floor = least_cpu(make, n, lambda y: bare_dfs(y.grad_fn), repeat)
    cap = least_cpu(make, n, gw.capture, repeat)
    g = gw.capture(make(n))
    nodes = len(g)
    text = g.to_json()
    flat = len(g.to_json(version=2)) / nodes
    size = len(text) / nodes
    back = gw.load_json(text)
    assert back.to_json() == text  # the round trip is exact
    del back
    p, ld, ratio, spread = paired_ratio(text, repeat)
    return (f"| {family} | {nodes:,} | {cap:.3f} | {floor:.3f} | x{cap / floor:.2f} {verdict(cap / floor, 3)} | "
            f"{size:.0f} {verdict(size, SIZE_GOAL[family])} | {flat:.0f} | {p:.3f} | {ld:.3f} | "
            f"x{ratio:.2f} {spread} {verdict(ratio, 2)} |")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true", help="100k nodes only")
    ap.add_argument("--sizes", type=int, nargs="*", default=None, help="default 100k 1M (--quick: 100k)")
    ap.add_argument("--families", nargs="*", default=list(FAMILIES), choices=list(FAMILIES))
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--python-bound", action="store_true", help="the pure-Python engine against its lower bound")
    args = ap.parse_args()
    sizes = args.sizes or ([100_000] if args.quick else [100_000, 1_000_000])
    # freeing a deep graph the bare DFS has walked recurses inside torch (graphwidget/capturing/_deep_free.py): the
    # walk has no graphwidget protection, so grant the stack up front
    make_deep_free_safe(max(sizes))
    print(f"load average before: {load_average()} ({os.cpu_count()} cores)\n")
    print("| family | nodes | capture s | bare DFS s | capture / floor | B/node (v3) | B/node (v2) | json.loads s | "
          "load_json s | load / loads |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for n in sizes:
        for family in args.families:
            print(row(family, n, args.repeat), flush=True)
            gc.collect()
    if args.python_bound:
        MAKERS.update(FAMILIES)
        python_bound(args.families, sizes[0])
    print(f"\nload average after: {load_average()}")


if __name__ == "__main__":
    main()

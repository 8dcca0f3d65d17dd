"""gw.trace / gw.profile on a torch.compile'd model: graph, compiled regions, gradients, time.

    .venv/bin/python tests/bench/bench_compile.py [--layers 6] [--width 64] [--threads 1]

Prints, for a small transformer-ish MLP stack compiled with ``torch.compile`` (CPU, inductor):
the user's own first compile and one compiled forward+backward; then ``capture`` of its output (the reference: one
``CompiledFunctionBackward``), ``trace`` (first and second call), ``profile(repeat=3)``: node count, compiled
regions, new Dynamo graphs and graph breaks each caused, and whether the gradients are bit-identical to an
uninstrumented run. Runs against whatever ``graphwidget`` is importable (``PYTHONPATH=<old tree>`` for a before).
"""
from __future__ import annotations

import argparse
import time
from typing import Any, Callable, Dict, List, Tuple

import torch
from torch._dynamo.utils import counters

import graphwidget as gw


class Block(torch.nn.Module):
    def __init__(self, width: int) -> None:
        super().__init__()
        self.norm = torch.nn.LayerNorm(width)
        self.up = torch.nn.Linear(width, 4 * width)
        self.down = torch.nn.Linear(4 * width, width)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x + self.down(torch.nn.functional.gelu(self.up(self.norm(x))))


class Stack(torch.nn.Module):
    def __init__(self, layers: int, width: int) -> None:
        super().__init__()
        self.blocks = torch.nn.ModuleList([Block(width) for _ in range(layers)])
        self.head = torch.nn.Linear(width, 1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        for b in self.blocks:
            x = b(x)
        return self.head(x).pow(2).mean()


def state() -> Tuple[int, int]:
    return counters["stats"]["unique_graphs"], sum(counters["graph_break"].values())


def grads(m: torch.nn.Module) -> List[torch.Tensor]:
    out = [p.grad.clone() for p in m.parameters()]
    m.zero_grad(set_to_none=True)
    return out


def timed(f: Callable[[], Any]) -> Tuple[Any, float, Tuple[int, int]]:
    g0, b0 = state()
    t = time.perf_counter()
    try:
        out = f()
    except Exception as exc:  # the "before" tree fails here: report it
        out = exc
    dt = time.perf_counter() - t
    g1, b1 = state()
    return out, dt, (g1 - g0, b1 - b0)


def describe(name: str, g: Any, dt: float, new: Tuple[int, int], same: Any) -> None:
    if isinstance(g, Exception):
        print(f"{name:<22} {dt:8.3f} s  FAILED: {type(g).__name__}: {str(g)[:160]}")
        return
    ops = [d["op"] for _, d in g.nx.nodes(data=True)]
    print(f"{name:<22} {dt:8.3f} s  nodes {len(ops):4d}  compiled regions {ops.count('CompiledFunctionBackward')}  "
          f"new graphs {new[0]}  new graph breaks {new[1]}  gradients bit-identical: {same}")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--layers", type=int, default=6)
    ap.add_argument("--width", type=int, default=64)
    ap.add_argument("--threads", type=int, default=1, help="torch threads (1: least noise on a shared machine)")
    a = ap.parse_args()
    torch.set_num_threads(a.threads)
    torch.manual_seed(0)
    m = Stack(a.layers, a.width)
    x = torch.randn(16, a.width)
    cm = torch.compile(m)
    out, dt, new = timed(lambda: cm(x))
    print(f"{'user compile':<22} {dt:8.3f} s  new graphs {new[0]}")
    cap = gw.capture(out)
    out.backward()
    ref = grads(m)
    t = time.perf_counter()
    for _ in range(10):
        cm(x).backward()
    print(f"{'compiled fwd+bwd':<22} {(time.perf_counter() - t) / 10:8.4f} s")
    m.zero_grad(set_to_none=True)
    describe("capture", cap, 0.0, (0, 0), "-")
    results: Dict[str, Any] = {}
    for name, f in (("trace (first)", lambda: gw.trace(cm, x)), ("trace (second)", lambda: gw.trace(cm, x))):
        g, dt, new = timed(f)
        same: Any = "-"
        if not isinstance(g, Exception):
            g.output.backward()
            same = all(torch.equal(p, q) for p, q in zip(ref, grads(m)))
        describe(name, g, dt, new, same)
        results[name] = g
    g, dt, new = timed(lambda: gw.profile(cm, x, repeat=3))
    same = "-" if isinstance(g, Exception) else all(torch.equal(p, q) for p, q in zip(ref, grads(m)))
    describe("profile(repeat=3)", g, dt, new, same)

    # A compiled *function* called from inside fn: no eager entry to see, so Dynamo compiles it once more for
    # graphwidget's mode (then never again).
    cfn = torch.compile(lambda t: m(t))

    def loss(t: torch.Tensor) -> torch.Tensor:
        return cfn(t) * 1.0

    _, dt, new = timed(lambda: loss(x).backward())
    m.zero_grad(set_to_none=True)
    print(f"{'user compile (fn)':<22} {dt:8.3f} s  new graphs {new[0]}")
    for name in ("trace fn (first)", "trace fn (second)"):
        g, dt, new = timed(lambda: gw.trace(loss, x))
        same = "-"
        if not isinstance(g, Exception):
            g.output.backward()
            same = all(torch.equal(p, q) for p, q in zip(ref, grads(m)))
        describe(name, g, dt, new, same)


if __name__ == "__main__":
    main()

"""Capture cost vs. the bare DFS over next_functions, measured in the same run (ratios, not absolute targets).

Run: .venv/bin/python tests/bench/bench_capture.py [--quick] [--sizes 10000 100000 1000000] [--python-1m]
         [--fan-in 100000 200000]
(``--quick``: 10k and 100k nodes, fan-in 100k only; what tests/bench/report.py runs for docs/performance.md.)
Targets (issue 2): full annotated capture <= 3x the bare DFS at 100k nodes; a 1M-node capture under 6 s.
Fan-in (issue 10): ``torch.cat`` of k leaves, one node with k inputs; both engines must grow linearly in k (the
compiled core's edge builder was once O(k^2)).

``capture`` is gw.capture as users get it (the compiled core when built: `python -m graphwidget build-native`);
``python`` is the pure-Python path (engine="python") for comparison, skipped at 1M unless --python-1m (it takes a while).
"""
from __future__ import annotations

import argparse
import gc
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

import torch  # noqa: E402

import graphwidget as gw  # noqa: E402
from graphwidget.capturing import native  # noqa: E402
from graphwidget.capturing._deep_free import make_deep_free_safe  # noqa: E402


def make_chain(n: int) -> torch.Tensor:
    """A chain of n-1 tiny ops that save tensors (MulBackward0 saves `other`) plus the leaf."""
    x = torch.randn(4, requires_grad=True)
    y = x
    w = torch.full((4,), 1.0001)
    for i in range(n - 1):
        y = y * w if i % 2 else y + 0.5
    return y


def bare_dfs(root) -> int:
    """The cheapest possible walk: what every capture must do at least."""
    seen = set()
    stack = [root]
    while stack:
        fn = stack.pop()
        if fn in seen:
            continue
        seen.add(fn)
        for child, _ in fn.next_functions:
            if child is not None and child not in seen:
                stack.append(child)
    return len(seen)


def fresh_time(n: int, fn) -> float:
    """Time fn(root) on a freshly built chain: a user captures a graph once, so wrappers do not exist yet."""
    y = make_chain(n)
    gc.collect()
    t = time.perf_counter()
    result = fn(y)  # kept until timed: freeing it is not part of the capture
    elapsed = time.perf_counter() - t
    del result
    return elapsed


def make_fan_in(k: int) -> torch.Tensor:
    """One CatBackward0 with k inputs, each its own leaf (and so its own AccumulateGrad node)."""
    return torch.cat([torch.randn(1, requires_grad=True) for _ in range(k)]).sum()


def fan_in(sizes) -> None:
    print(f"{'fan-in k':>9} {'native':>9} {'us/input':>9} {'python':>9} {'us/input':>9}")
    for k in sizes:
        cols = []
        for engine in ("native", "python"):
            if engine == "native" and not native.available():
                cols.append(f"{'-':>9} {'-':>9}")
                continue
            y = make_fan_in(k)
            gc.collect()
            t = time.perf_counter()
            g = gw.capture(y, engine=engine)
            dt = time.perf_counter() - t
            assert len(g) == k + 2
            cols.append(f"{dt:>8.3f}s {dt / k * 1e6:>9.2f}")
            del g, y
            gc.collect()
        print(f"{k:>9} " + " ".join(cols), flush=True)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true", help="10k and 100k nodes, fan-in 100k (no 1M-node chain)")
    ap.add_argument("--sizes", type=int, nargs="+", default=None, help="default 10k 100k 1M (--quick: 10k 100k)")
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--python-1m", action="store_true", help="also time the pure-Python path at 1M nodes")
    ap.add_argument("--fan-in", type=int, nargs="*", default=None,
                    help="sizes k for the fan-in measurement (torch.cat of k leaves; default 100k 200k, --quick "
                         "100k); none to skip")
    args = ap.parse_args()
    if args.sizes is None:
        args.sizes = [10_000, 100_000] if args.quick else [10_000, 100_000, 1_000_000]
    if args.fan_in is None:
        args.fan_in = [100_000] if args.quick else [100_000, 200_000]
    # Freeing a deep graph that Python has walked recurses inside torch (see graphwidget/capturing/_deep_free.py); the bare
    # DFS below walks without graphwidget's protection, so grant the stack up front.
    make_deep_free_safe(max(args.sizes))
    core = "compiled core" if native.available() else f"NO compiled core ({native.status()['reason']})"
    print(f"torch {torch.__version__}, python {sys.version.split()[0]}, {core}; best of {args.reps} "
          f"(1M: 1), each on a fresh graph")
    print(f"{'nodes':>9} {'bare DFS':>10} {'us/node':>8} {'capture':>10} {'us/node':>8} {'ratio':>6} "
          f"{'python':>9} {'ratio':>6} {'to_json':>9} {'load_json':>9}")
    for n in args.sizes:
        reps = args.reps if n <= 100_000 else 1
        dfs = min(fresh_time(n, lambda y: bare_dfs(y.grad_fn)) for _ in range(reps))
        cap = min(fresh_time(n, lambda y: gw.capture(y)) for _ in range(reps))
        if n <= 100_000 or args.python_1m:
            py = min(fresh_time(n, lambda y: gw.capture(y, engine="python")) for _ in range(reps))
            py_cols = f"{py:>8.3f}s {py / dfs:>6.2f}"
        else:
            py_cols = f"{'-':>9} {'-':>6}"
        y = make_chain(n)
        g = gw.capture(y)
        assert len(g) == n, (len(g), n)
        t = time.perf_counter()
        text = g.to_json()
        tj = time.perf_counter() - t
        t = time.perf_counter()
        gw.load_json(text)
        tl = time.perf_counter() - t
        print(f"{n:>9} {dfs:>9.3f}s {dfs / n * 1e6:>8.2f} {cap:>9.3f}s {cap / n * 1e6:>8.2f} {cap / dfs:>6.2f} "
              f"{py_cols} {tj:>8.3f}s {tl:>8.3f}s", flush=True)
        del g, y, text
        gc.collect()
    if args.fan_in:
        fan_in(args.fan_in)


if __name__ == "__main__":
    main()

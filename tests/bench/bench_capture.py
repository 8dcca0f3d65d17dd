"""Capture cost vs. the bare DFS over next_functions, measured in the same run (ratios, not absolute targets).

Run: .venv/bin/python tests/bench/bench_capture.py [--quick] [--sizes 10000 100000 1000000] [--kinds chain dag]
         [--python-1m] [--python-bound 1000000] [--fan-in 100000 200000] [--pipeline 1000000]
(``--quick``: 10k and 100k nodes, fan-in 100k only; what tests/bench/report.py runs for docs/performance.md.)
Graphs: ``chain``, n-1 tiny element-wise ops in a row (each saves a tensor or nothing) on one leaf; ``dag``, a wide
random DAG built in torch: each op reads the op made last and up to two of the 9 values made last, 6 % of the values
are fresh leaves, the root sums the last 8 (like tests/bench/bench_diff.py's random DAG, but captured); its ops save no
tensor (adds, subtractions, scalar products: the cost of the structure); ``dag+saved``, the same DAG with ops that save
one or two tensors each (products, quotients, tanh, relu, sigmoid, addcmul).
The floor (``bare DFS``) is the cheapest possible walk over ``next_functions`` with the cyclic GC paused, as capture
runs. Targets: full annotated capture (the compiled core) <= 3x the floor at 100k nodes and beyond, on the chain
(issue 2) and on the DAG (issue 20); the pure-Python engine <= 6x the floor at 1M nodes (issue 20, --python-1m).
Fan-in (issue 10): ``torch.cat`` of k leaves, one node with k inputs; both engines must grow linearly in k (the
compiled core's edge builder was once O(k^2)).
``--pipeline N``: capture two N-node DAGs (B has a few ops changed and inserted), ``save`` A, ``export_html`` A and
``gw.diff(A, B)`` in one process; prints each step's time and the peak resident memory (target, issue 20: 8 GB at
1M nodes).

``capture`` is gw.capture as users get it (the compiled core when built: `python -m graphwidget build-native`);
``python`` is the pure-Python path (engine="python") for comparison, skipped at 1M unless --python-1m (it takes a while).
"""
from __future__ import annotations

import argparse
import gc
import operator
import os
import random
import sys
import tempfile
import time
from collections import deque
from itertools import chain, compress, repeat
from operator import attrgetter
from pathlib import Path
from typing import Tuple

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

import torch  # noqa: E402
from machine import load_average, proc_mb  # noqa: E402

import graphwidget as gw  # noqa: E402
from graphwidget._util.gc import gc_paused  # noqa: E402
from graphwidget.capturing import native  # noqa: E402
from graphwidget.capturing._deep_free import make_deep_free_safe  # noqa: E402
from graphwidget.capturing.records import TypeInfo  # noqa: E402
from graphwidget.capturing.walk import walk  # noqa: E402


def make_chain(n: int) -> torch.Tensor:
    """A chain of n-1 tiny ops that save tensors (MulBackward0 saves `other`) plus the leaf."""
    x = torch.randn(4, requires_grad=True)
    y = x
    w = torch.full((4,), 1.0001)
    for i in range(n - 1):
        y = y * w if i % 2 else y + 0.5
    return y


def make_dag(n: int, seed: int = 0, edits: int = 0, saves: bool = False) -> torch.Tensor:
    """A wide random DAG of about ``n`` autograd nodes: each op reads the op made last and up to two of the 9 values
    made last, 6 % of the values are fresh leaves; the root sums the last 8. The ops save no tensor (adds,
    subtractions, scalar multiplications: the graph's structure alone) unless ``saves`` (products, tanh, relu,
    addcmul: most nodes then save one or two tensors). ``edits``: that many ops (chosen by the seed) become a
    different op and as many get an extra op after them (the B side of a diff)."""
    rng = random.Random(seed)
    w = torch.full((4,), 1.0001)
    # the edits come from their own generator: A and B share the recipe's random stream
    changed = set(random.Random(seed + 1).sample(range(n // 10, n - 10), 2 * edits)) if edits else set()
    vals = [torch.randn(4, requires_grad=True) for _ in range(3)]
    made = 2  # the op made last (at first a leaf): every op reads it, so every value is captured
    for k in range(3, n - 9):
        if rng.random() < 0.06:
            vals.append(torch.randn(4, requires_grad=True))
            continue
        last = len(vals) - 1
        ins = sorted({made, *(rng.randrange(max(0, last - 8), last + 1) for _ in range(rng.randint(0, 2)))})
        made = last + 1
        op = rng.randrange(4)
        if k in changed and k % 2:  # re-typed
            op = (op + 1) % 4
        a = vals[ins[0]]
        if len(ins) == 1:
            y = _UNARY[saves][op](a, w)
        elif len(ins) == 2:
            y = _BINARY[saves][op % 2](a, vals[ins[1]])
        elif saves:
            y = torch.addcmul(a, vals[ins[1]], vals[ins[2]])
        else:
            y = torch.add(a, vals[ins[1]], alpha=2.0) - vals[ins[2]]  # two nodes
        if k in changed and not k % 2:  # an op inserted after it
            y = y.exp() if saves else y * 1.5
        vals.append(y)
    out = vals[-8]
    for v in vals[-7:]:
        out = out + v
    return out.sum()


_UNARY = {False: (lambda a, w: a + 0.5, lambda a, w: a * 2.0, lambda a, w: -a, lambda a, w: a - 0.25),
          True: (lambda a, w: a * w, lambda a, w: a.tanh(), lambda a, w: a.relu(), lambda a, w: a.sigmoid())}
_BINARY = {False: (lambda a, b: a + b, lambda a, b: a - b), True: (lambda a, b: a * b, lambda a, b: a / b)}


def make_dag_saved(n: int) -> torch.Tensor:
    """:func:`make_dag` with ops that save tensors."""
    return make_dag(n, saves=True)


MAKERS = {"chain": make_chain, "dag": make_dag, "dag+saved": make_dag_saved}


def bare_dfs(root) -> int:
    """The cheapest possible walk: what every capture must do at least (with the GC paused, as capture runs)."""
    with gc_paused():
        return _bare_dfs(root)


def _bare_dfs(root) -> int:
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


def fresh_time(n: int, fn, make=make_chain) -> float:
    """Wall time of fn(root) on a freshly built graph: a user captures a graph once, so wrappers do not exist yet."""
    return fresh_times(n, fn, make)[0]


def fresh_times(n: int, fn, make=make_chain) -> Tuple[float, float, float]:
    """Wall, CPU and kernel (system) seconds of fn(root) on a freshly built graph (on a shared machine the CPU time is
    what the work itself costs; the wall time follows the load; the kernel's share is mostly page faults: memory the
    process touches for the first time, which this VM zeroes and maps page by page)."""
    y = make(n)
    gc.collect()
    t, c, k = time.perf_counter(), time.process_time(), os.times().system
    result = fn(y)  # kept until timed: freeing it is not part of the capture
    elapsed, cpu, sys_s = time.perf_counter() - t, time.process_time() - c, os.times().system - k
    del result
    return elapsed, cpu, sys_s


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




_CHUNK = 1024  # nodes per bulk read: what torch makes for them is dropped while still in cache


def _reads(root) -> int:
    """Every read a capture must make, done the cheapest way Python has, nothing recorded: the walk that gives the
    nodes their pre-order ids (graphwidget's own), then C loops over chunks of nodes: each output's shape, dtype and
    device (``_input_metadata``) and the sequence number; type by type, every ``_saved_*`` value (for a tensor first its
    raw SavedVariable and that one's unpack hook: reading a hooked value would run the hook); and each input's id
    (``next_functions`` through the walk's id map)."""
    with gc_paused():
        w = walk([root])
        order = w.order
        for s in range(0, len(order), _CHUNK):
            chunk = order[s:s + _CHUNK]
            flat = list(chain.from_iterable(map(_META, chunk)))
            deque(zip(map(_SHAPE, flat), map(_DTYPE, flat), map(_DEVICE, flat)), maxlen=0)
            deque(map(_SEQ, chunk), maxlen=0)
        types = list(map(type, order))
        for t, fn in dict(zip(types, order)).items():
            info = TypeInfo(fn)
            if not (info.tensor_attrs or info.other_attrs):
                continue
            fns = list(compress(order, map(operator.is_, types, repeat(t))))
            for attr, _, raw in info.tensor_attrs:
                raws = list(map(attrgetter(raw), fns))
                if not any(map(isinstance, raws, repeat(list))):
                    any(map(_HOOK, raws))
                deque(map(attrgetter(attr), fns), maxlen=0)
            for attr, _ in info.other_attrs:
                deque(map(attrgetter(attr), fns), maxlen=0)
        children = list(map(operator.itemgetter(0), chain.from_iterable(w.nexts)))
        deque(map(w.index.__getitem__, map(id, compress(children, map(operator.is_not, children, repeat(None))))),
              maxlen=0)
    return len(order)


_META, _SHAPE, _DTYPE, _DEVICE = (attrgetter(a) for a in ("_input_metadata", "shape", "dtype", "device"))
_HOOK, _SEQ = attrgetter("unpack_hook"), operator.methodcaller("_sequence_nr")


def python_bound(kinds, n: int) -> None:
    """A lower bound for any pure-Python capture, against the floor: it must at least make every read (``reads``:
    :func:`_reads`, in C loops) and build the networkx graph, here in the cheapest way Python has (``build``:
    ``load_json``'s bulk build from prepared columns, C-level loops, no record made). The sum of the two ratios is
    what no pure-Python capture can beat on this interpreter and torch."""
    print(f"\npure-Python lower bound at {n:,} nodes (CPU seconds, ratio to the floor in the same run)")
    print(f"{'graph':<9} {'nodes':>9} {'bare DFS':>9} {'reads':>15} {'build':>15} {'sum':>7}  {'capture (python)':>17}")
    for kind in kinds:
        make = MAKERS[kind]
        # the least of several runs: a run is only ever slowed (by the machine's memory state), never sped up
        dfs = best(n, lambda y: bare_dfs(y.grad_fn), make, 3)[1]
        reads = best(n, lambda y: _reads(y.grad_fn), make, 2)[1]
        py = best(n, lambda y: gw.capture(y, engine="python"), make, 1)[1]
        text = gw.capture(make(n)).to_json()
        held = gw.load_json(text)
        del text
        gc.collect()
        c = time.process_time()
        g = held.nx
        build = time.process_time() - c
        print(f"{kind:<9} {len(g):>9} {dfs:>8.2f}s {reads:>6.2f}s {reads / dfs:>6.2f}x {build:>6.2f}s "
              f"{build / dfs:>6.2f}x {(reads + build) / dfs:>6.2f}x  {py:>6.2f}s {py / dfs:>7.2f}x", flush=True)
        del g, held
        gc.collect()


def verdict(ratio: float, target: float) -> str:
    return f"{'ok' if ratio <= target else 'MISS'} (<= {target:g}x)"


def best(n: int, fn, make, reps: int) -> Tuple[float, float]:
    """Least wall and least CPU seconds of ``reps`` runs, each on a fresh graph."""
    return best_sys(n, fn, make, reps)[:2]


def best_sys(n: int, fn, make, reps: int) -> Tuple[float, float, float]:
    """:func:`best`, plus the kernel seconds of the run with the least CPU time."""
    runs = [fresh_times(n, fn, make) for _ in range(reps)]
    least = min(runs, key=lambda r: r[1])
    return min(w for w, _, _ in runs), least[1], least[2]


def sizes_table(args: argparse.Namespace) -> None:
    print("wall / CPU seconds; ratio = CPU time / the floor's CPU time (the wall-time ratio in brackets); verdicts "
          "on the CPU ratio; kernel = the capture's CPU seconds spent in the kernel (page faults: fresh memory), "
          "and the ratio without them")
    print(f"{'graph':<9} {'nodes':>9} {'bare DFS':>15} {'capture':>15} {'ratio':>12} {'target':<14} "
          f"{'kernel':>7} {'ratio-k':>7} "
          f"{'python':>15} {'ratio':>12} {'target':<14} {'to_json':>8} {'load_json':>9} {'load':>5}")
    for kind in args.kinds:
        make = MAKERS[kind]
        for n in args.sizes:
            reps = args.reps if n <= 100_000 else 1
            dfs, dfs_c = best(n, lambda y: bare_dfs(y.grad_fn), make, reps)
            cap, cap_c, cap_k = best_sys(n, lambda y: gw.capture(y), make, reps)
            core_goal = verdict(cap_c / dfs_c, 3.0) if n >= 100_000 and native.available() else ""
            if n <= 100_000 or args.python_1m:
                py, py_c = best(n, lambda y: gw.capture(y, engine="python"), make, reps)
                goal = verdict(py_c / dfs_c, 6.0) if n >= 1_000_000 else ""
                py_cols = f"{py:>7.2f}/{py_c:>6.2f}s {py_c / dfs_c:>5.2f} ({py / dfs:>4.1f}) {goal:<14}"
            else:
                py_cols = f"{'-':>15} {'-':>12} {'':<14}"
            y = make(n)
            g = gw.capture(y)
            if kind == "chain":
                assert len(g) == n, (len(g), n)
            t = time.perf_counter()
            text = g.to_json()
            tj = time.perf_counter() - t
            t = time.perf_counter()
            gw.load_json(text)
            tl = time.perf_counter() - t
            print(f"{kind:<9} {len(g):>9} {dfs:>7.2f}/{dfs_c:>6.2f}s {cap:>7.2f}/{cap_c:>6.2f}s "
                  f"{cap_c / dfs_c:>5.2f} ({cap / dfs:>4.1f}) {core_goal:<14} {cap_k:>6.2f}s "
                  f"{(cap_c - cap_k) / dfs_c:>7.2f} {py_cols} {tj:>7.2f}s {tl:>8.2f}s "
                  f"{os.getloadavg()[0]:>5.1f}", flush=True)
            del g, y, text
            gc.collect()


def pipeline(n: int) -> None:
    """Capture two n-node DAGs, save A, export A to HTML, diff A and B: each step's time and the peak resident
    memory of the process (the torch graphs included: they are alive while a user captures them)."""
    print(f"\npipeline at {n:,} nodes (load average {load_average()}):")
    steps = []

    def step(name: str, fn):
        t, c = time.perf_counter(), time.process_time()
        out = fn()
        steps.append((name, time.perf_counter() - t, time.process_time() - c, proc_mb("VmRSS"), proc_mb("VmHWM")))
        print(f"  {name:<34} {steps[-1][1]:>8.2f} s wall {steps[-1][2]:>8.2f} s CPU   rss {steps[-1][3]:>6} MB   "
              f"peak {steps[-1][4]:>6} MB", flush=True)
        return out

    ya = step("build torch graph A", lambda: make_dag(n))
    yb = step("build torch graph B (60 edits)", lambda: make_dag(n, edits=30))
    a = step("capture A", lambda: gw.capture(ya))
    b = step("capture B", lambda: gw.capture(yb))
    with tempfile.TemporaryDirectory() as tmp:
        step("save A (.json)", lambda: a.save(os.path.join(tmp, "a.json")))
        size = os.path.getsize(os.path.join(tmp, "a.json"))
        step("export_html A", lambda: a.export_html(os.path.join(tmp, "a.html")))
        html = os.path.getsize(os.path.join(tmp, "a.html"))
    d = step("gw.diff(A, B)", lambda: gw.diff(a, b))
    peak = proc_mb("VmHWM")
    print(f"  A {len(a):,} nodes, B {len(b):,}; file {size / 1e6:.1f} MB, export {html / 1e6:.1f} MB; diff: "
          f"{len(d.matched):,} matched ({len(d.changed)} changed), -{len(d.removed)} +{len(d.added)}")
    print(f"  peak resident {peak:,} MB: {'ok' if peak <= 8000 else 'MISS'} (<= 8 GB); load average {load_average()}")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true", help="10k and 100k nodes, fan-in 100k (no 1M-node chain)")
    ap.add_argument("--sizes", type=int, nargs="*", default=None,
                    help="default 10k 100k 1M (--quick: 10k 100k); none to skip")
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--kinds", nargs="+", default=list(MAKERS), choices=list(MAKERS), help="default: chain dag")
    ap.add_argument("--pipeline", type=int, default=0, help="capture + save + export + diff of two DAGs this big")
    ap.add_argument("--python-1m", action="store_true", help="also time the pure-Python path at 1M nodes")
    ap.add_argument("--python-bound", type=int, default=0, metavar="N",
                    help="the pure-Python lower bound (reads + the cheapest networkx build) at N nodes")
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
    make_deep_free_safe(max([*args.sizes, args.pipeline, args.python_bound, 0]))
    core = "compiled core" if native.available() else f"NO compiled core ({native.status()['reason']})"
    print(f"torch {torch.__version__}, python {sys.version.split()[0]}, {core}; best of {args.reps} "
          f"(1M: 1), each on a fresh graph; load average {load_average()}")
    if args.sizes:
        sizes_table(args)
    if args.python_bound:
        python_bound(["chain", "dag"], args.python_bound)
    if args.fan_in:
        fan_in(args.fan_in)
    if args.pipeline:
        pipeline(args.pipeline)
    print(f"load average after: {load_average()}")


if __name__ == "__main__":
    main()

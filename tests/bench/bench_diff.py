"""How long gw.diff takes on big graphs: pairs of ~10k- and ~100k-node graphs, B = A with a few edits.

Run: .venv/bin/python tests/bench/bench_diff.py [--quick] [--sizes 10000 100000] [--repeat 3]
(``--quick``: the 10k pairs only.)
Targets (issue 9): two 10k-node graphs diff in <= 1 s, two 100k-node graphs in <= 10 s.

Graphs (all real autograd graphs captured with gw.capture, except the random DAG, which is built in schema form):
* ``chain``: gw.examples.tiny_chain-style element-wise chain; B has one op inserted at 1/3, one op replaced at 2/3.
* ``transformer``: a deep nn.TransformerEncoder (~55 nodes a layer); B uses GELU in one layer and doubles the output.
* ``random DAG``: nodes with 1-3 inputs among the previous 8 (shapes, leaves, names); B deletes, inserts and
  re-types a few nodes here and there.
``diff s`` is the wall time of gw.diff(a, b) (matching + changed fields), ``cpu s`` its process CPU time (on a shared
machine, what the diff itself costs); ``to_json`` of the resulting Diff for reference. Medians of ``--repeat`` runs.
The random DAG's nodes carry their recipe index in ``code``, so the last column also counts wrong pairs.
"""
from __future__ import annotations

import argparse
import random
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any, Callable, Dict, List, Tuple

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

import torch  # noqa: E402

import graphwidget as gw  # noqa: E402
from graphwidget.model.graph import GradGraph  # noqa: E402


def chain_pair(n: int) -> Tuple[GradGraph, GradGraph]:
    def build(edit: bool) -> GradGraph:
        x = torch.randn(4, requires_grad=True)
        y = x
        for i in range(n - 2):
            if edit and i == n // 3:
                y = y.exp()  # inserted
            if edit and i == 2 * n // 3:
                y = y - 0.5  # replaced: this step is a Sub instead of an Add/Mul
                continue
            y = y * 1.0001 if i % 2 else y + 0.5
        return gw.capture(y.sum(), title="chain")
    return build(False), build(True)


def transformer_pair(n: int) -> Tuple[GradGraph, GradGraph]:
    layers = max(2, n // 55)
    torch.manual_seed(0)
    layer = torch.nn.TransformerEncoderLayer(16, 2, 32, dropout=0.0, batch_first=True)
    enc = torch.nn.TransformerEncoder(layer, num_layers=layers, enable_nested_tensor=False)
    x = torch.randn(2, 5, 16)
    a = gw.capture(enc(x).sum(), module=enc, title="transformer")
    enc.layers[layers // 2].activation = torch.nn.functional.gelu
    b = gw.capture((enc(x) * 2).sum(), module=enc, title="transformer (edited)")
    return a, b


_OPS = ["MulBackward0", "AddBackward0", "MmBackward0", "ReluBackward0", "ViewBackward0", "SumBackward1",
        "TanhBackward0", "CatBackward0", "SelectBackward0", "ExpandBackward0"]


def random_pair(n: int, seed: int = 0) -> Tuple[GradGraph, GradGraph]:
    """One recipe, two graphs: B applies a few deletions, insertions and op changes to A's recipe."""
    rng = random.Random(seed)
    recipe: List[Tuple[str, List[int], List[int]]] = []  # op, inputs (creation indices), shape
    for k in range(n):
        if k < 3 or rng.random() < 0.06:
            recipe.append(("AccumulateGrad", [], [8, rng.choice([64, 128, 256])]))
        else:
            ins = sorted({rng.randrange(max(0, k - 8), k) for _ in range(rng.randint(1, 3))})
            recipe.append((rng.choice(_OPS), ins, [8, rng.choice([64, 128, 256, 4096])]))
    edits = rng.sample(range(n // 10, n - 10), 30)
    return _graph(recipe, {}, "random DAG"), _graph(recipe, {e: ("delete", "insert", "retype")[i % 3]
                                                             for i, e in enumerate(edits)}, "random DAG (edited)")


def _graph(recipe: List[Tuple[str, List[int], List[int]]], edits: Dict[int, str], title: str) -> GradGraph:
    nodes: List[Dict[str, Any]] = []
    edges: List[Tuple[int, int, Dict[str, Any]]] = []
    where: Dict[int, int] = {}  # recipe index -> node index

    def add(op: str, shape: List[int], ins: List[int], leaf: str = "", tag: str = "") -> int:
        i = len(nodes)
        nodes.append({"op": op, "kind": "leaf" if op == "AccumulateGrad" else "backward",
                      "outputs": [{"shape": shape, "dtype": "float32", "device": "cpu"}], "saved": [], "attrs": {},
                      "saved_bytes": 0, "tensor": ({"shape": shape, "dtype": "float32", "name": leaf}
                                                   if op == "AccumulateGrad" else None),
                      "source": None, "code": tag or None, "module": None, "out_stride": None, "out_contiguous": None,
                      "seq": None if op == "AccumulateGrad" else i, "fwd_ms": None, "bwd_ms": None,
                      "grad_bytes": 4 * shape[0] * shape[1]})
        for slot, j in enumerate(ins):
            edges.append((j, i, {"output": 0, "slot": slot, "shape": nodes[j]["outputs"][0]["shape"],
                                 "dtype": "float32", "also": None}))
        return i

    for k, (op, ins, shape) in enumerate(recipe):
        mapped = [where[j] for j in ins if j in where]
        e = edits.get(k)
        if e == "delete" and op != "AccumulateGrad" and mapped:
            where[k] = mapped[0]  # consumers read the first input instead
            continue
        if e == "insert" and mapped:
            mapped[0] = add("CloneBackward0", nodes[mapped[0]]["outputs"][0]["shape"], [mapped[0]], tag="inserted")
        tag = f"#{k}"
        if e == "retype" and op != "AccumulateGrad":
            op, tag = "SigmoidBackward0", "retyped"
        where[k] = add(op, shape, mapped, leaf=f"p{k}", tag=tag)
    used = {u for u, _, _ in edges}
    roots = [i for i in range(len(nodes)) if i not in used]
    return GradGraph.from_records(nodes, edges, roots=roots, title=title)


def timed(fn: Callable[[], Any], repeat: int) -> Tuple[float, float, Any]:
    """Median wall and CPU seconds (on a shared machine the CPU time is what the diff itself costs)."""
    walls, cpus = [], []
    out = None
    for _ in range(repeat):
        t, c = time.perf_counter(), time.process_time()
        out = fn()
        cpus.append(time.process_time() - c)
        walls.append(time.perf_counter() - t)
    walls.sort()
    cpus.sort()
    return walls[len(walls) // 2], cpus[len(cpus) // 2], out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true", help="the 10k-node pairs only")
    ap.add_argument("--sizes", type=int, nargs="*", default=None, help="default 10k 100k (--quick: 10k)")
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    if args.sizes is None:
        args.sizes = [10_000] if args.quick else [10_000, 100_000]
    print(f"{'graphs':<14}{'nodes A':>9}{'nodes B':>9}{'diff s':>9}{'cpu s':>8}{'target':>8}{'to_json s':>11}  "
          f"matching")
    for n in args.sizes:
        target = 1.0 if n <= 10_000 else 10.0
        for name, make in (("chain", chain_pair), ("transformer", transformer_pair), ("random DAG", random_pair)):
            a, b = make(n)
            secs, cpu, d = timed(lambda a=a, b=b: gw.diff(a, b), args.repeat)
            js, _, _ = timed(d.to_json, 1)
            how = Counter(d._phases.values())
            if name == "random DAG":
                wrong = sum(a.node(x)["code"] != b.node(y)["code"] for x, y in d.matched)
                how["WRONG PAIRS"] = wrong
            desc = (f"{len(d.matched)} matched ({len(d.changed)} changed), -{len(d.removed)} +{len(d.added)}; "
                    + ", ".join(f"{k} {v}" for k, v in sorted(how.items())))
            ok = "ok" if secs <= target else "SLOW"
            print(f"{name:<14}{len(a):>9}{len(b):>9}{secs:>9.3f}{cpu:>8.3f}{target:>6.0f} {ok:<4}{js:>8.3f}  "
                  f"{desc}", flush=True)


if __name__ == "__main__":
    main()

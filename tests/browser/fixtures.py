"""Hand-written graphs in schema form (docs/schema.md) for the viewer tests and benchmarks.

Shapes: chain, fan-in, random DAG (inputs among the previous few nodes, like real autograd graphs), an MLP-like
graph with module paths and timings, plus edge cases (no edges, one node, freed saved tensors, hostile strings).
Ids follow the schema's convention: depth-first pre-order from the roots, so the root is 0.
"""
from __future__ import annotations

import random
from typing import Any, Dict, List, Optional, Sequence

HOSTILE_OP = "<img src=x onerror=alert(1)>"
HOSTILE_MODULE = "enc.</script><script>alert(2)</script>.x"
HOSTILE_SOURCE = '"><svg onload=alert(3)>.py:1'
HOSTILE_CODE = "y = f(x)  # </script><b onmouseover=alert(4)>bold</b>"

_ELEM = {"float32": 4, "float64": 8, "float16": 2, "int64": 8}
_OPS = ["MulBackward0", "AddBackward0", "ExpBackward0", "TanhBackward0", "SigmoidBackward0", "ViewBackward0",
        "PermuteBackward0", "SumBackward1", "DivBackward0", "MmBackward0"]


def _numel(shape: Sequence[int]) -> int:
    p = 1
    for s in shape:
        p *= s
    return p


def _strides(shape: Sequence[int]) -> List[int]:
    out, acc = [], 1
    for s in reversed(shape):
        out.append(acc)
        acc *= s
    return list(reversed(out))


def saved(name: str, shape: Optional[List[int]], dtype: str = "float32", *, freed: bool = False,
          storage: int = 0) -> Dict[str, Any]:
    if freed or shape is None:
        return {"name": name, "shape": None, "stride": None, "dtype": None, "device": None, "contiguous": None,
                "memory_format": None, "bytes": None, "storage_bytes": None, "storage": None, "freed": True}
    b = _numel(shape) * _ELEM[dtype]
    return {"name": name, "shape": shape, "stride": _strides(shape), "dtype": dtype, "device": "cpu",
            "contiguous": True, "memory_format": "contiguous", "bytes": b, "storage_bytes": b, "storage": storage,
            "freed": False}


def node(i: int, op: str, *, kind: Optional[str] = None, shape: Sequence[int] = (8, 64), dtype: str = "float32",
         saved_list: Optional[List[Dict[str, Any]]] = None, module: Optional[str] = None,
         source: Optional[str] = None, code: Optional[str] = None, seq: Optional[int] = None,
         fwd_ms: Optional[float] = None, bwd_ms: Optional[float] = None, attrs: Optional[Dict[str, Any]] = None,
         leaf_name: Optional[str] = None) -> Dict[str, Any]:
    kind = kind or ("leaf" if op == "AccumulateGrad" else "backward")
    sv = saved_list or []
    shape = list(shape)
    rec: Dict[str, Any] = {
        "id": i, "op": op, "kind": kind,
        "outputs": [{"shape": shape, "dtype": dtype, "device": "cpu"}],
        "saved": sv, "attrs": attrs or {},
        "saved_bytes": sum(s["bytes"] for s in sv if not s["freed"]),
        "tensor": None, "source": source, "code": code, "module": module,
        "out_stride": [_strides(shape)] if source is not None else None,
        "out_contiguous": [True] if source is not None else None,
        "seq": None if kind == "leaf" else seq, "fwd_ms": fwd_ms, "bwd_ms": bwd_ms,
    }
    if kind == "leaf":
        rec["tensor"] = {"shape": shape, "stride": _strides(shape), "dtype": dtype, "device": "cpu",
                         "contiguous": True, "memory_format": "contiguous", "bytes": _numel(shape) * _ELEM[dtype],
                         "requires_grad": True, "name": leaf_name}
    return rec


def edge(src: int, dst: int, slot: int = 0, shape: Sequence[int] = (8, 64), dtype: str = "float32") -> Dict[str, Any]:
    return {"source": src, "target": dst, "output": 0, "slot": slot, "shape": list(shape), "dtype": dtype}


def graph(nodes: List[Dict[str, Any]], edges: List[Dict[str, Any]], *, title: Optional[str] = None,
          roots: Sequence[int] = (0,), traced: bool = False, timed: bool = False) -> Dict[str, Any]:
    return {"format": "graphwidget", "version": 1,
            "meta": {"torch": "2.13.0", "title": title, "roots": list(roots), "traced": traced, "timed": timed,
                     "timing": None},
            "nodes": nodes, "edges": edges}


def chain(n: int, *, title: Optional[str] = None) -> Dict[str, Any]:
    """root (id 0) ← op ← op ← … ← leaf (id n-1): one long run of single-input ops."""
    nodes, edges = [], []
    for i in range(n):
        if i == n - 1:
            nodes.append(node(i, "AccumulateGrad", leaf_name="x"))
        else:
            op = _OPS[i % 5]
            nodes.append(node(i, op, seq=n - i, saved_list=[saved("self", [8, 64], storage=i)] if i % 2 else []))
        if i:
            edges.append(edge(i, i - 1))
    return graph(nodes, edges, title=title or f"chain {n}")


def fanin(n: int, *, title: Optional[str] = None) -> Dict[str, Any]:
    """n-1 leaves with the same op feeding one StackBackward0 (id 0)."""
    nodes = [node(0, "StackBackward0", shape=(n - 1, 8, 64), seq=n, attrs={"dim": 0})]
    edges = []
    for i in range(1, n):
        nodes.append(node(i, "AccumulateGrad", leaf_name=f"w{i}"))
        edges.append(edge(i, 0, slot=i - 1))
    return graph(nodes, edges, title=title or f"fan-in {n}")


def random_dag(n: int, *, seed: int = 0, window: int = 8, modules: bool = True, traced: bool = True,
               timed: bool = False, title: Optional[str] = None) -> Dict[str, Any]:
    """Node k (k ≥ 1 in creation order) takes 1–3 inputs among the `window` nodes created before it; the last node
    created is the root. Module paths nest like layers.{i}.{attn,mlp}."""
    rng = random.Random(seed)
    created: List[Dict[str, Any]] = []  # creation order
    inputs: List[List[int]] = []
    shapes: List[List[int]] = []
    for k in range(n):
        layer = k // 40
        mod = f"layers.{layer}.{'attn' if (k // 20) % 2 == 0 else 'mlp'}" if modules else None
        if k < 3 or rng.random() < 0.08:
            rec = dict(op="AccumulateGrad", leaf_name=f"p{k}", module=mod)
            ins: List[int] = []
        else:
            rec = dict(op=rng.choice(_OPS), module=mod)
            ins = sorted(set(rng.randrange(max(0, k - window), k) for _ in range(rng.randint(1, 3))))
        big = rng.random() < 0.05
        shape = [8, 4096] if big else [8, 64]
        if rec["op"] != "AccumulateGrad":
            rec["saved_list"] = [saved("self", shape, storage=k)] + ([saved("other", [8, 64], storage=k + n)] if k % 3 == 0 else [])
        if traced:
            rec["source"] = f"model.py:{10 + k % 300}"
            rec["code"] = f"h{k} = op(h{k - 1})"
        if timed and rec["op"] != "AccumulateGrad":
            rec["fwd_ms"] = round(rng.lognormvariate(-3, 1) * (20 if big else 1), 4)
            rec["bwd_ms"] = round(rng.lognormvariate(-2.5, 1) * (20 if big else 1), 4)
        shapes.append(shape)
        created.append(rec)
        inputs.append(ins)
    # ids: DFS pre-order from the root (the last created), like the capture engine
    consumers_ok = set(i for ins in inputs for i in ins) | {n - 1}
    ids: Dict[int, int] = {}
    order = [n - 1] + [k for k in range(n - 2, -1, -1) if k not in consumers_ok]
    stack = list(reversed(order))
    while stack:
        k = stack.pop()
        if k in ids:
            continue
        ids[k] = len(ids)
        for j in reversed(inputs[k]):
            if j not in ids:
                stack.append(j)
    for k in range(n):
        ids.setdefault(k, len(ids))
    nodes = []
    edges = []
    for k, rec in enumerate(created):
        op = rec.pop("op")
        nodes.append(node(ids[k], op, shape=shapes[k], seq=k, **rec))
        for slot, j in enumerate(inputs[k]):
            edges.append(edge(ids[j], ids[k], slot=slot, shape=shapes[j]))
    nodes.sort(key=lambda r: r["id"])
    roots = [ids[n - 1]] + [ids[k] for k in range(n - 1) if k not in consumers_ok]
    return graph(nodes, edges, title=title or f"random DAG {n}", roots=roots, traced=traced, timed=timed)


def mlp(layers: int = 4, *, timed: bool = True) -> Dict[str, Any]:
    """x → [Linear → ReLU] × layers → sum; modules net.{i}; timings on every op; node 0 is the loss."""
    recs: List[Dict[str, Any]] = []
    edges: List[Dict[str, Any]] = []

    def add(op: str, **kw: Any) -> int:
        i = len(recs)
        recs.append(node(i, op, **kw))
        return i

    loss = add("SumBackward0", shape=(), seq=3 * layers + 1, source="train.py:30", code="loss = out.sum()", module="",
               fwd_ms=0.01 if timed else None, bwd_ms=0.02 if timed else None)
    prev = loss
    for layer in reversed(range(layers)):
        mod = f"net.{layer}"
        big = layer == 1
        width = 4096 if big else 256
        relu = add("ReluBackward0", shape=(64, width), seq=3 * layer + 2, module=mod, source="model.py:12",
                   code="x = torch.relu(x)", saved_list=[saved("result", [64, width], storage=10 * layer)],
                   fwd_ms=0.05 if timed else None, bwd_ms=(2.5 if big else 0.06) if timed else None)
        edges.append(edge(relu, prev, shape=(64, width)))
        addmm = add("AddmmBackward0", shape=(64, width), seq=3 * layer + 1, module=mod, source="model.py:11",
                    code="x = self.fc(x)", attrs={"alpha": 1, "beta": 1},
                    saved_list=[saved("mat1", [64, 256], storage=10 * layer + 1), saved("mat2", [256, width], storage=10 * layer + 2)],
                    fwd_ms=(1.5 if big else 0.1) if timed else None, bwd_ms=(3.0 if big else 0.2) if timed else None)
        edges.append(edge(addmm, relu, shape=(64, width)))
        bias = add("AccumulateGrad", shape=(width,), leaf_name=f"net.{layer}.bias", module=mod)
        t = add("TBackward0", shape=(256, width), seq=3 * layer, module=mod, source="model.py:11", code="x = self.fc(x)",
                fwd_ms=0.001 if timed else None, bwd_ms=0.002 if timed else None)
        w = add("AccumulateGrad", shape=(width, 256), leaf_name=f"net.{layer}.weight", module=mod)
        edges += [edge(bias, addmm, slot=0, shape=(width,)), edge(t, addmm, slot=2, shape=(256, width)),
                  edge(w, t, shape=(width, 256))]
        prev = addmm
    return graph(recs, edges, title="mlp", traced=True, timed=timed)


def hostile() -> Dict[str, Any]:
    """Strings that would run script if they were ever treated as HTML."""
    nodes = [
        node(0, "SumBackward0", seq=2, source=HOSTILE_SOURCE, code=HOSTILE_CODE, module=""),
        node(1, HOSTILE_OP, kind="custom", seq=1, module=HOSTILE_MODULE, source="evil.py:1", code=HOSTILE_CODE,
             saved_list=[saved("<b>x</b>", [4, 4])], attrs={"<i>k</i>": "</script><script>alert(5)</script>"}),
        node(2, "AccumulateGrad", leaf_name="<svg/onload=alert(6)>", module=HOSTILE_MODULE),
    ]
    return graph(nodes, [edge(1, 0), edge(2, 1)], title="</title><script>alert(7)</script>", traced=True)


def freed() -> Dict[str, Any]:
    """A graph after backward(): saved tensors released (freed, shape null)."""
    nodes = [
        node(0, "MulBackward0", seq=2, saved_list=[saved("self", None, freed=True), saved("other", None, freed=True)]),
        node(1, "ExpBackward0", seq=1, saved_list=[saved("result", None, freed=True)]),
        node(2, "AccumulateGrad", leaf_name="x"),
    ]
    return graph(nodes, [edge(1, 0), edge(2, 1), edge(2, 0, slot=1)], title="freed")


def single() -> Dict[str, Any]:
    return graph([node(0, "AccumulateGrad", leaf_name="only")], [], title="one node")


def no_edges(n: int = 12) -> Dict[str, Any]:
    return graph([node(i, _OPS[i % len(_OPS)], seq=i) for i in range(n)], [], title="no edges",
                 roots=list(range(n)))

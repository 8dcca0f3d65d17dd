"""What every rule reads, computed once per :func:`~graphwidget.analysis.advisor.advise` call: the graph's adjacency
(networkx's own dicts, no views), node inputs with their slots, graph-wide totals, and the one place a finding gets
its source line, evidence, share and severity. Torch-free."""
from __future__ import annotations

import re
from typing import Any, Dict, Iterable, List, NamedTuple, Optional, Sequence, Set, Tuple

from ...model._digraph import adjacency
from ...model.dtypes import nbytes
from . import ops
from .finding import Finding

#: Below this many wasted bytes a finding is "info", not "warning": writing less than this costs about as much as a
#: few autograd nodes' own overhead.
MATERIAL_BYTES = 256 * 1024
#: Byte-counting rules do not report below this much waste at all: on a few KiB nothing is measurably slow, and a
#: finding there (twelve selects of a 3x3 matrix) would only be noise.
NOISE_BYTES = 64 * 1024


class Input(NamedTuple):
    """One connection into a node: which producer output feeds which ``next_functions`` slot."""
    node: int
    output: int
    slot: int
    shape: Optional[List[int]]
    dtype: Optional[str]


_ASSIGN = re.compile(r"^\s*([A-Za-z_]\w*)\s*(?::[^=]*)?=(?!=)")
_SUBSCRIPTED = re.compile(r"(?<![\w.])([A-Za-z_]\w*)\[")


def _op_output(d: Dict[str, Any], ins: List[Input]) -> Tuple[Optional[List[int]], Optional[str]]:
    """Shape and dtype of a node's output 0 from its op, its attrs and its inputs, for the ops whose output follows
    from them alone; ``(None, None)`` for any other."""
    op = d.get("op") or ""
    attrs = d.get("attrs") or {}
    first = next((i for i in ins if i.slot == 0), None)
    in_shape = attrs.get("self_sym_sizes") if isinstance(attrs.get("self_sym_sizes"), list) else None
    if in_shape is None and first is not None:
        in_shape = first.shape
    dtype = first.dtype if first is not None else None
    if op == "SelectBackward0" and in_shape is not None:
        k = ops.norm_dim(attrs.get("dim"), len(in_shape))
        return (None, None) if k is None else (in_shape[:k] + in_shape[k + 1:], dtype)
    if op == "SliceBackward0" and in_shape is not None:
        k = ops.norm_dim(attrs.get("dim"), len(in_shape))
        n = ops.slice_len(attrs, in_shape[k]) if k is not None else None
        return (None, None) if k is None or n is None else (in_shape[:k] + [n] + in_shape[k + 1:], dtype)
    if op == "UnsqueezeBackward0" and first is not None and first.shape is not None:
        k = ops.norm_dim(attrs.get("dim"), len(first.shape) + 1)
        return (None, None) if k is None else (first.shape[:k] + [1] + first.shape[k:], dtype)
    if op == "RepeatBackward0" and in_shape is not None and isinstance(attrs.get("repeats"), list):
        reps = attrs["repeats"]
        if len(reps) < len(in_shape):
            return None, None
        padded = [1] * (len(reps) - len(in_shape)) + list(in_shape)
        return [s * r for s, r in zip(padded, reps)], dtype
    if op in ops.BINARY:
        shapes = [i.shape for i in ins]
        dtypes = {i.dtype for i in ins}
        have = {i.slot for i in ins}
        saved = {s.get("name"): s for s in d.get("saved") or ()}
        missing = [name for slot, name in enumerate(ops.BINARY[op]) if slot not in have]
        for name in missing + list(ops.EXTRA_OPERANDS.get(op, ())):
            s = saved.get(name)
            shapes.append(s.get("shape") if s is not None else None)
            if s is not None and name not in ops.EXTRA_OPERANDS.get(op, ()):
                dtypes.add(s.get("dtype"))
        shape = ops.broadcast(shapes)
        return shape, (dtypes.pop() if shape is not None and len(dtypes) == 1 else None)
    if ops.is_elementwise(op) and len(ins) == 1 and first is not None:
        return first.shape, (None if ops.stem(op) == "ToCopy" else dtype)
    return None, (dtype if op in ops.VIEW or op in ops.INDEX else None)


def _shape_preserving(d: Dict[str, Any], n_inputs: int) -> Optional[Tuple[List[int], Optional[str]]]:
    """``(shape, dtype)`` of the input of a one-input element-wise node whose output was recorded (the input
    had that shape; the dtype too unless the op casts); ``None`` for any other node."""
    op = d.get("op") or ""
    if n_inputs != 1 or op in ops.BINARY or not ops.is_elementwise(op):
        return None
    outs = d.get("outputs") or ()
    o = outs[0] if outs else None
    if not o or o.get("shape") is None:
        return None
    return list(o["shape"]), (None if ops.stem(op) == "ToCopy" else o.get("dtype"))


def assigned_name(code: Optional[str]) -> Optional[str]:
    """``"h = homo.repeat(...)"`` -> ``"h"``; ``None`` for anything but a single-name assignment."""
    if not code:
        return None
    m = _ASSIGN.match(code)
    return m.group(1) if m else None


class Context:
    """One graph, prepared for the rules."""

    def __init__(self, graph: Any) -> None:
        self.graph = graph
        self.node, self.succ, self.pred = adjacency(graph.nx)
        meta = graph.meta or {}
        timing = meta.get("timing") or {}
        bwd = timing.get("backward_ms") if meta.get("timed") else None
        self.backward_ms: Optional[float] = float(bwd) if isinstance(bwd, (int, float)) and bwd > 0 else None
        fwd = timing.get("forward_ms") if meta.get("timed") else None
        self.forward_ms: Optional[float] = float(fwd) if isinstance(fwd, (int, float)) and fwd > 0 else None
        self.roots: Set[int] = set(meta.get("roots") or ())
        #: Nodes an earlier rule already explained: later rules leave them alone (one root cause, one finding).
        self.claimed: Set[int] = set()
        self._total_grad: Optional[int] = None
        self._inputs: Dict[int, List[Input]] = {}
        self._rank: Optional[Dict[int, int]] = None
        #: What rules share within one advise() call (e.g. the materialised copies both copy rules read).
        self.memo: Dict[str, Any] = {}
        self._total_saved: Optional[int] = None
        self._inferred: Optional[Dict[int, Tuple[Optional[List[int]], Optional[str]]]] = None
        self._node_grad: Dict[int, int] = {}

    @property
    def timed(self) -> bool:
        return self.backward_ms is not None

    # -- structure ----------------------------------------------------------------------------------------------
    def inputs(self, v: int) -> List[Input]:
        """Every connection into ``v`` (a pair joined twice, ``a * a``, gives two). Computed once per node."""
        out = self._inputs.get(v)
        if out is None:
            out = self._inputs[v] = self._raw_inputs(v)
        return out

    def consumers(self, u: int, output: Optional[int] = None) -> List[int]:
        """Nodes that read ``u``'s output ``output`` (any output when ``None``)."""
        res = []
        for v, e in self.succ[u].items():
            outs = [e.get("output") or 0] + [a.get("output") or 0 for a in e.get("also") or ()]
            if output is None or output in outs:
                res.append(v)
        return res

    def out(self, n: int, k: int = 0) -> Tuple[Optional[List[int]], Optional[str]]:
        """Shape and dtype of forward output ``k`` of node ``n``: as recorded, or, where the capture could not
        record it (``outputs`` null: torch < 2.5 without ``gw.trace``), as :meth:`_infer` derives it."""
        outs = self.node[n].get("outputs")
        if outs is None:
            if k != 0:
                return None, None
            if self._inferred is None:
                self._inferred = self._infer()
            return self._inferred.get(n, (None, None))
        o = outs[k] if k < len(outs) else None
        if not o:
            return None, None
        return o.get("shape"), o.get("dtype")

    def _infer(self) -> Dict[int, Tuple[Optional[List[int]], Optional[str]]]:
        """Output 0 of every node whose outputs were not recorded, from facts the graph does hold, producers first:
        the input size its consumers saved (``self_sym_sizes``), or what the op does to its inputs' shapes
        (index, unsqueeze, repeat, element-wise with broadcasting). Nothing is guessed: unknown stays unknown."""
        import networkx as nx
        found: Dict[int, Tuple[Optional[List[int]], Optional[str]]] = {}
        self._inferred = found  # out() of a producer reads what is filled so far (producers come first)
        for n in nx.topological_sort(self.graph.nx):
            d = self.node[n]
            if d.get("outputs") is not None:
                continue
            ins = self._raw_inputs(n)
            shape, dtype = _op_output(d, ins)
            said = set()
            for v, e in self.succ[n].items():
                vd = self.node[v]
                size = (vd.get("attrs") or {}).get("self_sym_sizes")
                same = _shape_preserving(vd, len(self.pred[v]))
                for a in (e, *(e.get("also") or ())):
                    if (a.get("output") or 0) != 0 or (a.get("slot") or 0) != 0:
                        continue
                    if isinstance(size, list):
                        said.add(tuple(size))
                    elif same is not None:  # clone, exp, x * 2: the input had the output's shape
                        said.add(tuple(same[0]))
                        dtype = dtype or same[1]
            if len(said) == 1:
                shape = list(said.pop())
            if shape is not None:
                found[n] = (shape, dtype)
        return found

    def _raw_inputs(self, v: int) -> List[Input]:
        """:meth:`inputs` without the cache (:meth:`_infer` reads them while it is still filling producers in)."""
        out = []
        for u, e in self.pred[v].items():
            for a in (e, *(e.get("also") or ())):
                k, shape, dtype = a.get("output") or 0, a.get("shape"), a.get("dtype")
                if shape is None:  # torch < 2.5: the producer's output may be known only by inference
                    shape, inferred_dtype = self.out(u, k)
                    dtype = dtype or inferred_dtype
                out.append(Input(u, k, a.get("slot") or 0, shape, dtype))
        return out

    def is_full_slice(self, v: int) -> bool:
        """Whether ``v`` is a SliceBackward0 that takes the whole dim with step 1: torch < 2.5 records one for every
        ``:`` in ``h[:, :, 0]`` (``narrow(d, 0, size)`` does on any torch). It copies and indexes nothing."""
        d = self.node[v]
        if d.get("op") != "SliceBackward0":
            return False
        attrs = d.get("attrs") or {}
        in_shape = attrs.get("self_sym_sizes")
        if not isinstance(in_shape, list):
            ins = self.inputs(v)
            in_shape = ins[0].shape if len(ins) == 1 else None
        if in_shape is None:
            return False
        k = ops.norm_dim(attrs.get("dim"), len(in_shape))
        return k is not None and ops.full_slice(attrs, in_shape, self.out(v)[0], k)

    def out_bytes(self, n: int, k: int = 0) -> Optional[int]:
        return nbytes(*self.out(n, k))

    @property
    def rank(self) -> Dict[int, int]:
        """Node id -> position in creation (forward) order: by autograd sequence number, leaves first. Sort with
        ``key=ctx.rank.__getitem__``."""
        if self._rank is None:
            seqs = [(d.get("seq"), n) for n, d in self.node.items()]
            keyed = sorted((s if isinstance(s, int) else -1, n) for s, n in seqs)
            self._rank = {n: i for i, (_, n) in enumerate(keyed)}
        return self._rank

    def order(self, n: int) -> int:
        """Position of ``n`` in forward order (see :attr:`rank`)."""
        return self.rank[n]

    def is_leaf(self, n: int) -> bool:
        return self.node[n].get("kind") == "leaf"

    def past_full_slices(self, v: int) -> int:
        """The first node of ``v``'s indexing expression that indexes something: ``v`` itself unless it is a full
        slice (:meth:`is_full_slice`), else the index op that continues it from the same line (``h[:, :, 0]`` on
        torch < 2.5 is slice, slice, select: the select). ``v`` when nothing after its full slices indexes."""
        w = v
        while self.is_full_slice(w):
            nxt = list(self.succ[w])
            if len(nxt) != 1 or len(self.pred[nxt[0]]) != 1:
                return v
            x, wd = self.node[nxt[0]], self.node[w]
            if (x.get("op") not in ops.INDEX or x.get("source") != wd.get("source")
                    or x.get("code") != wd.get("code")):
                return v
            w = nxt[0]
        return w

    # -- naming -------------------------------------------------------------------------------------------------
    def tensor_name(self, u: int, output: int = 0) -> str:
        """How to call the tensor produced by ``u`` in a message: a parameter's name, the variable its line assigns,
        or its op and shape."""
        d = self.node[u]
        t = d.get("tensor") or {}
        if d.get("kind") == "leaf":
            return f"parameter `{t['name']}`" if t.get("name") else "an input that requires grad"
        name = assigned_name(d.get("code"))
        if name:
            return f"`{name}`"
        return f"the output of {d.get('op')}"

    def var_name(self, u: int, readers: Sequence[int] = ()) -> Optional[str]:
        """The variable name of ``u``'s output for code in a suggestion: the name its line assigns, a parameter's
        name, or the one name the ``readers``' lines subscript (``x`` in ``x[i, 0] * w``)."""
        d = self.node[u]
        name = assigned_name(d.get("code"))
        if name:
            return name
        subscripted = set()
        for code in {self.node[v].get("code") or "" for v in readers}:
            subscripted.update(_SUBSCRIPTED.findall(code))
        if len(subscripted) == 1:
            return subscripted.pop()
        t = d.get("tensor") or {}
        return f"self.{t['name']}" if d.get("kind") == "leaf" and t.get("name") else None

    # -- totals -------------------------------------------------------------------------------------------------
    def node_grad_bytes(self, n: int) -> int:
        """Bytes of the gradients ``n`` writes in backward: as recorded, or, where the capture did not know the
        shape of an input (torch < 2.5), with the inferred shapes counted too (one gradient per connection)."""
        got = self._node_grad.get(n)
        if got is None:
            d = self.node[n]
            got = d.get("grad_bytes") or 0
            if any(a.get("shape") is None for e in self.pred[n].values() for a in (e, *(e.get("also") or ()))):
                got = sum(nbytes(i.shape, i.dtype) or 0 for i in self.inputs(n))
            self._node_grad[n] = got
        return got

    @property
    def total_grad_bytes(self) -> int:
        if self._total_grad is None:
            self._total_grad = sum(self.node_grad_bytes(n) for n in self.node)
        return self._total_grad

    @property
    def total_saved_bytes(self) -> int:
        """Bytes of the distinct storages the saved tensors keep alive (as ``summary()["saved_bytes"]``)."""
        if self._total_saved is None:
            storages: Dict[Any, int] = {}
            for d in self.node.values():
                for s in d.get("saved") or ():
                    if s.get("freed") or s.get("packed"):
                        continue
                    key = s.get("storage")
                    storages[("anon", id(s)) if key is None else key] = s.get("storage_bytes") or 0
            self._total_saved = sum(storages.values())
        return self._total_saved

    def grad_bytes(self, nodes: Iterable[int]) -> int:
        return sum(self.node_grad_bytes(n) for n in nodes)

    def bwd_ms(self, nodes: Iterable[int]) -> Optional[float]:
        times = [self.node[n].get("bwd_ms") for n in nodes]
        times = [t for t in times if isinstance(t, (int, float))]
        return float(sum(times)) if times else None

    # -- findings -----------------------------------------------------------------------------------------------
    def finding(self, rule: str, nodes: Sequence[int], message: str, suggestion: Optional[str], *,
                evidence: Dict[str, Any], share: Optional[float], share_of: str, waste_bytes: Optional[int],
                severity: Optional[str] = None, at: Optional[int] = None, backward_time: bool = True) -> Finding:
        """Assemble a finding: source line from ``at`` (default: the first node that has one, the cause first),
        the shared evidence keys, the share used for ranking and ``min_share``, and the severity (unless given: a
        warning when ``waste_bytes`` reaches :data:`MATERIAL_BYTES`). ``backward_time=False`` leaves out the nodes'
        measured backward (``bwd_ms``, ``share_of_backward``) for a finding whose cost is not their backward."""
        nodes = list(dict.fromkeys(nodes))
        where = at if at is not None else next((n for n in nodes if self.node[n].get("source")), nodes[0])
        d = self.node[where]
        ev: Dict[str, Any] = {"op": self.node[nodes[0]].get("op")}
        ev.update(evidence)
        ev.setdefault("grad_bytes", self.grad_bytes(nodes))
        if waste_bytes is not None:
            ev["waste_bytes"] = int(waste_bytes)
        if self.timed and backward_time:
            ms = self.bwd_ms(nodes)
            if ms is not None:
                ev["bwd_ms"] = round(ms, 6)
                ev["share_of_backward"] = round(ms / self.backward_ms, 6)  # type: ignore[operator]
                if share_of in ("grad_bytes", "nodes"):  # measured time beats a proxy
                    share, share_of = ms / self.backward_ms, "backward_ms"  # type: ignore[operator]
        if share is not None:
            ev["share"] = round(max(0.0, min(1.0, share)), 6)
            ev["share_of"] = share_of
        if severity is None:
            # Bytes, not the nodes' measured time: at small sizes any node's time is mostly autograd's per-node
            # overhead, which a rewrite does not remove; what it removes is the wasted bytes.
            severity = "warning" if (waste_bytes or 0) >= MATERIAL_BYTES else "info"
        return Finding(rule=rule, severity=severity, nodes=nodes, message=message, suggestion=suggestion,
                       source=d.get("source"), code=d.get("code"), module=d.get("module"), evidence=ev)

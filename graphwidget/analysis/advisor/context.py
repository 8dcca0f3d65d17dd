"""What every rule reads, computed once per :func:`~graphwidget.analysis.advisor.advise` call: the graph's adjacency
(networkx's own dicts, no views), node inputs with their slots, graph-wide totals, and the one place a finding gets
its source line, evidence, share and severity. Torch-free."""
from __future__ import annotations

import re
from typing import Any, Dict, Iterable, List, NamedTuple, Optional, Sequence, Set, Tuple

from ...model._digraph import adjacency
from .finding import Finding
from .ops import nbytes

#: Below this many wasted bytes a finding is "info", not "warning": writing 256 KiB costs ~10-50 µs on a CPU, a
#: few autograd nodes' worth of overhead.
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

    @property
    def timed(self) -> bool:
        return self.backward_ms is not None

    # -- structure ----------------------------------------------------------------------------------------------
    def inputs(self, v: int) -> List[Input]:
        """Every connection into ``v`` (a pair joined twice, ``a * a``, gives two). Computed once per node."""
        out = self._inputs.get(v)
        if out is None:
            out = []
            for u, e in self.pred[v].items():
                out.append(Input(u, e.get("output") or 0, e.get("slot") or 0, e.get("shape"), e.get("dtype")))
                for a in e.get("also") or ():
                    out.append(Input(u, a.get("output") or 0, a.get("slot") or 0, a.get("shape"), a.get("dtype")))
            self._inputs[v] = out
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
        """Shape and dtype of forward output ``k`` of node ``n``."""
        outs = self.node[n].get("outputs") or ()
        o = outs[k] if k < len(outs) else None
        if not o:
            return None, None
        return o.get("shape"), o.get("dtype")

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
    @property
    def total_grad_bytes(self) -> int:
        if self._total_grad is None:
            self._total_grad = sum(d.get("grad_bytes") or 0 for d in self.node.values())
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
        return sum(self.node[n].get("grad_bytes") or 0 for n in nodes)

    def bwd_ms(self, nodes: Iterable[int]) -> Optional[float]:
        times = [self.node[n].get("bwd_ms") for n in nodes]
        times = [t for t in times if isinstance(t, (int, float))]
        return float(sum(times)) if times else None

    # -- findings -----------------------------------------------------------------------------------------------
    def finding(self, rule: str, nodes: Sequence[int], message: str, suggestion: Optional[str], *,
                evidence: Dict[str, Any], share: Optional[float], share_of: str, waste_bytes: Optional[int],
                severity: Optional[str] = None, at: Optional[int] = None) -> Finding:
        """Assemble a finding: source line from ``at`` (default: the first node that has one, the cause first),
        the shared evidence keys, the share used for ranking and ``min_share``, and the severity (unless given: a
        warning when ``waste_bytes`` reaches :data:`MATERIAL_BYTES`)."""
        nodes = list(dict.fromkeys(nodes))
        where = at if at is not None else next((n for n in nodes if self.node[n].get("source")), nodes[0])
        d = self.node[where]
        ev: Dict[str, Any] = {"op": self.node[nodes[0]].get("op")}
        ev.update(evidence)
        ev.setdefault("grad_bytes", self.grad_bytes(nodes))
        if waste_bytes is not None:
            ev["waste_bytes"] = int(waste_bytes)
        if self.timed:
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

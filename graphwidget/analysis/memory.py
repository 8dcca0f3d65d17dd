"""Backward memory, explained from a graph: what is alive at each step of the forward and the backward, the peak,
what holds it, and which modules are worth checkpointing.

Torch-free: it reads the graph (saved tensors by storage, edges with their shapes, ``module``, ``seq``, ``fwd_ms``)
and ``meta["memory"]``, the raw record of a ``gw.profile(..., memory=True)`` run (which node ran at each point, in
forward then backward order, and the allocator's bytes there). Everything else is computed here, so a graph read
back from JSON explains itself the same way. See docs/memory.md.

Two sources are kept apart and always named:

* **allocator** — bytes the step allocated and still holds, as torch's allocator reported them (CPU: the
  profiler's memory events; CUDA: the caching allocator). Includes temporaries and anything the graph does not see.
* **graph** — accounting from the graph itself: saved activations (distinct storages, from the forward op that
  first saved them until the last node that saved them has run in backward) and gradients (each edge's tensor, from
  the first node that writes it until the node that consumes it has run; a leaf's stays as ``.grad``). Exact for
  saved activations by construction; gradients follow the engine's rules (fan-in sums into one buffer).
"""
from __future__ import annotations

import re
from typing import Any, Dict, Iterable, List, Optional, Sequence, Set, Tuple

from .._util.text import TextTable, human_bytes
from ..model._digraph import node_dicts
from ..model.dtypes import nbytes

KINDS = ("saved activations", "gradients", "parameters", "other (allocator minus graph)")
_INF = float("inf")


def _edge_bytes(shape: Any, dtype: Any) -> int:
    return nbytes(shape, dtype) or 0


def predicted_backward_order(graph: Any) -> List[int]:
    """The order the autograd engine runs the nodes on one device: a node is ready once every node that consumes
    its output has run; among ready nodes, AccumulateGrad first, then the highest sequence number (the engine's
    priority)."""
    import heapq
    nodes = node_dicts(graph.nx)
    succ, pred = graph.nx.succ, graph.nx.pred
    waiting = {v: len(succ[v]) for v in nodes}

    def key(v: int) -> Tuple[int, int, int]:
        d = nodes[v]
        return (0 if d.get("kind") == "leaf" else 1, -(d.get("seq") or 0), v)

    heap = [key(v) for v in nodes if waiting[v] == 0]
    heapq.heapify(heap)
    out: List[int] = []
    while heap:
        v = heapq.heappop(heap)[2]
        out.append(v)
        for u in pred[v]:
            waiting[u] -= 1
            if waiting[u] == 0:
                heapq.heappush(heap, key(u))
    return out


def _padded(values: Any, n: int) -> List[Any]:
    vals = list(values or [])
    return (vals + [None] * n)[:n]


def has_memory(graph: Any) -> bool:
    """Whether the graph carries a memory record (``gw.profile(..., memory=True)``)."""
    return isinstance(graph.meta.get("memory"), dict)


def _in(module: Optional[str], path: str) -> bool:
    if module is None:
        return False
    return path == "" or module == path or module.startswith(path + ".")


class Storage:
    """One storage the graph saves: its bytes, whether it is a parameter's, the nodes that save it, and the points
    between which the graph keeps it (``start`` inclusive, ``end`` exclusive)."""

    __slots__ = ("sid", "bytes", "parameter", "savers", "start", "end")

    def __init__(self, sid: Any, nbytes: int, parameter: bool) -> None:
        self.sid, self.bytes, self.parameter = sid, nbytes, parameter
        self.savers: List[int] = []
        self.start, self.end = 0, _INF


class Accounting:
    """The graph's side of the timeline: per point, saved activation bytes and gradient bytes alive, and the
    intervals of every storage and gradient (so a peak can list its holders and a checkpoint can be simulated)."""

    def __init__(self, graph: Any) -> None:
        mem = graph.meta["memory"]
        self.graph = graph
        self.nodes = node_dicts(graph.nx)
        self.point_nodes: List[int] = list(mem.get("nodes") or [])
        self.forward_points = int(mem.get("forward_points") or 0)
        nodes = self.nodes
        #: No backward ran (gw.trace): its points follow the engine's order predicted from sequence numbers.
        self.predicted_backward = not mem.get("backward") and len(self.point_nodes) == self.forward_points
        if self.predicted_backward:
            self.point_nodes += predicted_backward_order(graph)
        self.n = len(self.point_nodes)
        # Backward position of each node: the point after which it has run.
        self.bpos: Dict[int, int] = {}
        for p in range(self.forward_points, self.n):
            self.bpos.setdefault(self.point_nodes[p], p)
        fseq = [nodes.get(v, {}).get("seq") for v in self.point_nodes[:self.forward_points]]
        self._fseq = [s if s is not None else -1 for s in fseq]
        leaf_storages: Set[Any] = set()
        self.parameter_bytes = 0
        for d in nodes.values():
            t = d.get("tensor")
            if d.get("kind") == "leaf" and t:
                if t.get("storage") is not None:
                    leaf_storages.add(t["storage"])
                if t.get("requires_grad", True):
                    self.parameter_bytes += t.get("storage_bytes") or t.get("bytes") or 0
        self.storages: Dict[Any, Storage] = {}
        for v in sorted(nodes, key=lambda v: (nodes[v].get("seq") is None, nodes[v].get("seq") or 0, v)):
            for s in nodes[v].get("saved") or ():
                if s.get("freed") or s.get("packed") or s.get("storage") is None:
                    continue
                st = self.storages.get(s["storage"])
                if st is None:
                    st = self.storages[s["storage"]] = Storage(s["storage"], s.get("storage_bytes") or 0,
                                                               s["storage"] in leaf_storages)
                if v not in st.savers:
                    st.savers.append(v)
        for st in self.storages.values():
            st.start = self._forward_point(nodes[st.savers[0]].get("seq"))
            ends = [self.bpos.get(v) for v in st.savers]
            st.end = _INF if any(e is None for e in ends) else float(max(e for e in ends if e is not None))
        # Gradients: one buffer per (node, output) that some consumer writes into.
        self.grads: Dict[Tuple[int, int], List[Any]] = {}  # key -> [bytes, start, end]
        for u, v, e in graph.nx.edges(data=True):
            for c in [e] + list(e.get("also") or ()):
                key = (u, c.get("output") or 0)
                b = _edge_bytes(c.get("shape"), c.get("dtype"))
                w = self.bpos.get(v, _INF)
                leaf = nodes[u].get("kind") == "leaf"
                end = _INF if leaf else self.bpos.get(u, _INF)
                g = self.grads.get(key)
                if g is None:
                    self.grads[key] = [b, w, end]
                else:
                    g[0] = max(g[0], b)
                    g[1] = min(g[1], w)
        # The roots' own gradient (ones): alive from the start of the backward until the root has run.
        for r in graph.meta.get("roots") or ():
            outs = nodes.get(r, {}).get("outputs") or []
            for k, o in enumerate(outs):
                if o:
                    self.grads[(r, -1 - k)] = [_edge_bytes(o.get("shape"), o.get("dtype")), self.forward_points,
                                               self.bpos.get(r, _INF)]
        self.saved = self._sweep((st.bytes, st.start, st.end) for st in self.storages.values() if not st.parameter)
        self.saved_parameters = self._sweep((st.bytes, st.start, st.end) for st in self.storages.values()
                                            if st.parameter)
        self.gradients = self._sweep((g[0], g[1], g[2]) for g in self.grads.values())

    def _forward_point(self, seq: Optional[int]) -> int:
        """The first forward point whose node was created at or after ``seq`` (the op that saved it)."""
        if seq is None:
            return 0
        import bisect
        # forward points are in creation order, so their seqs increase (-1 for an unknown node keeps its place)
        i = bisect.bisect_left(self._fseq, seq)
        return min(i, max(self.forward_points - 1, 0))

    def _sweep(self, intervals: Iterable[Tuple[int, Any, Any]]) -> List[int]:
        diff = [0] * (self.n + 1)
        for b, a, e in intervals:
            if not b or a == _INF or a >= self.n:
                continue
            a = max(int(a), 0)
            diff[a] += b
            if e != _INF and e < self.n:
                diff[int(e)] -= b
        out, run = [], 0
        for p in range(self.n):
            run += diff[p]
            out.append(run)
        return out

    def alive_storages(self, p: int) -> List[Storage]:
        return [st for st in self.storages.values() if st.start <= p < st.end]

    def alive_grads(self, p: int) -> List[Tuple[Tuple[int, int], int]]:
        return [(k, g[0]) for k, g in self.grads.items() if g[0] and g[1] <= p < g[2]]


class MemoryReport(TextTable):
    """``g.memory()``: the peak explained. Rows are the modules holding memory at the peak (saved activations and
    gradients, by module), largest first; the attributes hold the rest:

    * ``peak`` — ``{"bytes", "source", "point", "node", "phase", "op", "source_line", "by_kind", "by_module",
      "graph_bytes", "inputs_bytes"}``: ``by_kind``'s "other" is the allocator's bytes minus what the graph holds
      that the step allocated (``inputs_bytes``: saved tensors that existed before it, such as the input batch)
    * ``holders`` — the largest tensors alive at the peak, each with its kind, bytes, node, op, module and line
    * ``timeline`` — one row per point: phase, node, saved activations, gradients, allocated (and max within)
    * ``candidates`` — checkpoint candidates (:func:`checkpoint_candidates`), best first
    * ``sources`` — where each number comes from

    Prints as an aligned table; renders as HTML in notebooks; ``figure()`` is the plotly timeline.
    """

    columns = ("module", "saved", "grads", "total", "share", "top holder")

    def __init__(self, rows: Iterable[Dict[str, Any]], graph: Any = None) -> None:
        super().__init__(rows)
        self.graph = graph
        self.peak: Dict[str, Any] = {}
        self.holders: List[Dict[str, Any]] = []
        self.timeline: List[Dict[str, Any]] = []
        self.candidates: List[Dict[str, Any]] = []
        self.sources: Dict[str, Optional[str]] = {}

    def _cells(self, row: Dict[str, Any]) -> List[str]:
        share = row.get("share")
        return [row["module"] or "(top level)", human_bytes(row["saved"]), human_bytes(row["grads"]),
                human_bytes(row["total"]), "-" if share is None else f"{100 * share:.1f}%",
                self._short_source(row.get("top_source"))]

    def headline(self) -> str:
        p = self.peak
        if not p:
            return "no memory record"
        where = f"{p['phase']}, node {p['node']} {p['op']}" + (f" ({p['module']})" if p.get("module") else "")
        kinds = ", ".join(f"{k} {human_bytes(v)}" for k, v in p["by_kind"].items() if v)
        return f"peak {human_bytes(p['bytes'])} ({p['source']}) in the {where}: {kinds}"

    def __str__(self) -> str:
        lines = [self.headline(), super().__str__()]
        if self.candidates:
            lines.append("checkpoint candidates (predicted from this timeline):")
            for c in self.candidates[:5]:
                ms = "-" if c["recompute_ms"] is None else f"{c['recompute_ms']:.2f} ms"
                lines.append(f"  {c['label']}: peak -{human_bytes(c['saving_bytes'])} (frees "
                             f"{human_bytes(c['frees_bytes'])} at the peak), recompute {ms}")
        return "\n".join(lines)

    def _repr_html_(self) -> str:
        import html
        return f"<p>{html.escape(self.headline())}</p>" + super()._repr_html_()

    def figure(self, **kwargs: Any) -> Any:
        """The plotly timeline (forward | backward, stacked by module, allocator line); see
        :func:`graphwidget.views.charts.memory_timeline`."""
        return self._graph().figure("memory_timeline", report=self, **kwargs)

    def _graph(self) -> Any:
        if self.graph is None:
            raise ValueError("this report has no graph to draw; get it from g.memory().")
        return self.graph

    def _peak_colour(self) -> Optional[str]:
        """``"peak_bytes"`` when some node holds bytes at the peak (the viewer offers that colour only then)."""
        nodes = node_dicts(self._graph().nx)
        return "peak_bytes" if any(d.get("peak_bytes") for d in nodes.values()) else None

    def widget(self, height: int = 560, width: int = 460) -> Any:
        """For Jupyter: the graph, coloured by "alive at the peak", with the timeline (``width`` pixels wide) beside
        it, as an ``ipywidgets.HBox`` (``box.children[0]`` is the :class:`~graphwidget.GraphWidget`). A click on a
        point selects its node; the selected node's points are marked on the timeline."""
        g = self._graph()
        colour = self._peak_colour()
        w = g.widget(height=height, **({"colour_by": colour} if colour else {}))
        return g.figure("memory_timeline", report=self, widget=w, beside=True, height=height, width=width)

    def export_html(self, path: Any, **kwargs: Any) -> Any:
        """One offline HTML file: the graph, coloured by "alive at the peak", with the timeline and this report's
        peak, holders and candidates beside it (:func:`graphwidget.export_html`; ``charts=`` adds figures below).
        Returns the path."""
        g = self._graph()
        colour = self._peak_colour()
        return g.export_html(path, beside=[self.figure(), self.summary_html()],
                             **({"colour": colour} if colour else {}), **kwargs)

    def summary_html(self, holders: int = 5, candidates: int = 3) -> str:
        """The peak in a few lines of HTML (escaped): where it is, by kind, the largest holders with their lines and
        the best checkpoint candidates: what sits under the timeline beside the graph."""
        import html
        esc = html.escape
        p = self.peak
        if not p:
            return "<p>no memory record</p>"
        short = self._short_source
        parts = [f"<p><b>{esc(self.headline())}</b></p>",
                 "<p>" + "; ".join(f"{esc(k)}: {esc(v)}" for k, v in self.sources.items() if v) + "</p>",
                 "<table><thead><tr><th>largest at the peak</th><th>bytes</th><th>node</th><th>module</th>"
                 "<th>line</th></tr></thead><tbody>"]
        for h in self.holders[:holders]:
            parts.append(f"<tr><td>{esc(h['kind'])}</td><td>{esc(human_bytes(h['bytes']))}</td>"
                         f"<td>#{esc(str(h['node']))} {esc(_short_op(h['op']))}</td><td>{esc(h['module'] or '-')}</td>"
                         f"<td>{esc(short(h['source']))}</td></tr>")
        parts.append("</tbody></table>")
        if self.candidates:
            parts.append("<p>checkpoint candidates (predicted from this timeline):</p><ul>")
            for c in self.candidates[:candidates]:
                ms = "" if c["recompute_ms"] is None else f", recompute {c['recompute_ms']:.1f} ms"
                share = f" ({100 * c['saving_bytes'] / c['peak_bytes']:.0f} %)" if c["peak_bytes"] else ""
                parts.append(f"<li>{esc(c['label'])}: peak −{esc(human_bytes(c['saving_bytes']))}{esc(share)}"
                             f"{esc(ms)}</li>")
            parts.append("</ul>")
        return '<div class="gw-memory-summary">' + "".join(parts) + "</div>"

    @staticmethod
    def _short_source(src: Optional[str]) -> str:
        return (src or "-").replace("\\", "/").rsplit("/", 1)[-1]


def _short_op(op: Optional[str]) -> str:
    """``SoftmaxBackward0`` -> ``Softmax``, as the viewer labels nodes."""
    return re.sub(r"Backward\d*$", "", op or "") or str(op)


def _node_info(nodes: Dict[int, Dict[str, Any]], v: Optional[int]) -> Dict[str, Any]:
    d = nodes.get(v, {}) if v is not None else {}
    return {"node": v, "op": d.get("op"), "module": d.get("module"), "source": d.get("source"),
            "code": d.get("code")}


def _grad_module(nodes: Dict[int, Dict[str, Any]], u: int) -> Optional[str]:
    d = nodes.get(u, {})
    m = d.get("module")
    if m is None and d.get("kind") == "leaf":
        name = (d.get("tensor") or {}).get("name")
        if name and "." in name:
            return name.rsplit(".", 1)[0]  # a parameter's gradient belongs to its module
    return m


def peak_point(mem: Dict[str, Any], acc: Accounting) -> Tuple[int, int, str]:
    """(point, bytes, source) of the peak: the allocator's where it was measured, else the graph's."""
    amax = mem.get("allocated_max")
    if amax and len(amax) == acc.n and all(v is not None for v in amax):
        p = max(range(acc.n), key=lambda i: (amax[i], -i))
        return p, int(amax[p]), "allocator"
    tot = [a + b for a, b in zip(acc.saved, acc.gradients)]
    if not tot:
        return 0, 0, "graph"
    p = max(range(acc.n), key=lambda i: (tot[i], -i))
    return p, tot[p], "graph"


def memory_report(graph: Any, top: int = 10) -> MemoryReport:
    """The peak of a memory-profiled graph explained (see :class:`MemoryReport`). Raises ``ValueError`` with what
    to do for a graph recorded without ``memory=True``."""
    if not has_memory(graph):
        raise ValueError("this graph has no memory record: profile it with gw.profile(fn, *args, memory=True) "
                         "(or gw.trace(fn, *args, memory=True)) to record the forward and backward memory timeline.")
    mem = graph.meta["memory"]
    acc = Accounting(graph)
    nodes = acc.nodes
    rep = MemoryReport([], graph)
    rep.sources = {"saved activations": "graph (saved tensors by storage)",
                   "gradients": "graph (edges' tensors, alive until consumed)",
                   "allocated": mem.get("allocator"),
                   "parameters": "graph (leaf tensors that require grad)"}
    if acc.n == 0:
        return rep
    p, peak_bytes, source = peak_point(mem, acc)
    v = acc.point_nodes[p]
    phase = "forward" if p < acc.forward_points else "backward"
    alloc = _padded(mem.get("allocated"), acc.n)
    amax = _padded(mem.get("allocated_max"), acc.n)
    for i in range(acc.n):
        rep.timeline.append({"point": i, "phase": "forward" if i < acc.forward_points else "backward",
                             "node": acc.point_nodes[i], "saved": acc.saved[i], "grads": acc.gradients[i],
                             "allocated": alloc[i], "allocated_max": amax[i]})
    storages = [st for st in acc.alive_storages(p) if not st.parameter]
    grads = acc.alive_grads(p)
    saved_b = sum(st.bytes for st in storages)
    grad_b = sum(b for _, b in grads)
    by_module: Dict[str, Dict[str, Any]] = {}

    def add(mod: Optional[str], kind: str, b: int, src: Optional[str]) -> None:
        row = by_module.setdefault(mod or "", {"module": mod or "", "saved": 0, "grads": 0, "total": 0,
                                               "top_bytes": 0, "top_source": None})
        row[kind] += b
        row["total"] += b
        if b > row["top_bytes"]:
            row["top_bytes"], row["top_source"] = b, src

    holders: List[Dict[str, Any]] = []
    for st in storages:
        info = _node_info(nodes, st.savers[0])
        add(info["module"], "saved", st.bytes, info["source"])
        holders.append({"kind": "saved activation", "bytes": st.bytes, "storage": st.sid, "savers": st.savers,
                        **info})
    for (u, _), b in grads:
        info = _node_info(nodes, u)
        mod = _grad_module(nodes, u)
        add(mod, "grads", b, info["source"])
        holders.append({"kind": "gradient", "bytes": b, "storage": None, "savers": [], **info, "module": mod})
    holders.sort(key=lambda h: (-h["bytes"], h["node"] if h["node"] is not None else -1))
    rep.holders = holders[:top]
    # saved tensors that existed before the step (its inputs): held by the graph, not in the allocator's figure
    inputs = set(mem.get("inputs") or ())
    inputs_b = sum(st.bytes for st in storages if st.sid in inputs)
    other = None
    if source == "allocator":
        other = max(peak_bytes - (saved_b - inputs_b) - grad_b, 0)
    by_kind = {"saved activations": saved_b, "gradients": grad_b, "parameters": acc.parameter_bytes,
               "other (allocator minus graph)": other}
    rows = sorted(by_module.values(), key=lambda r: (-r["total"], r["module"]))
    denom = peak_bytes or (saved_b + grad_b) or None
    for r in rows:
        r["share"] = r["total"] / denom if denom else None
        del r["top_bytes"]
    rep.extend(rows)
    info = _node_info(nodes, v)
    rep.peak = {"bytes": peak_bytes, "source": source, "point": p, "phase": phase, "node": v, "op": info["op"],
                "module": info["module"], "source_line": info["source"], "code": info["code"], "by_kind": by_kind,
                "by_module": {r["module"]: r["total"] for r in rows},
                "graph_bytes": saved_b + grad_b, "inputs_bytes": inputs_b,
                "allocator_peak": mem.get("allocator_peak"), "allocator_peak_source": mem.get("allocator_peak_source")}
    rep.candidates = checkpoint_candidates(graph, acc=acc)
    # what "colour by alive at the peak" shows: each node's share of the graph's part of the peak
    per = _per_node(acc, p)
    for n, d in acc.nodes.items():
        d["peak_bytes"] = per.get(n, 0)
    return rep


def peak_bytes_per_node(graph: Any) -> Dict[int, int]:
    """Bytes each node holds at the peak: the saved activations it was the first to save and the gradients of its
    outputs, alive at that point (what "colour by alive at the peak" shows; they add up to the graph's part of the
    peak)."""
    acc = Accounting(graph)
    if acc.n == 0:
        return {v: 0 for v in acc.nodes}
    return _per_node(acc, peak_point(graph.meta["memory"], acc)[0])


def _per_node(acc: Accounting, p: int) -> Dict[int, int]:
    out = {v: 0 for v in acc.nodes}
    for st in acc.alive_storages(p):
        if not st.parameter:
            out[st.savers[0]] += st.bytes
    for (u, _), b in acc.alive_grads(p):
        out[u] += b
    return out


# -- checkpoint candidates -----------------------------------------------------------------------------------------

_INDEXED = re.compile(r"^(.*)\.(\d+)$")

#: A candidate must lower the peak by at least this share of it to be listed: ranked by bytes per ms recomputed, a
#: layer norm that saves a few KiB in no time would otherwise come first, and no one checkpoints for that.
MIN_LISTED_SHARE = 0.01


def _module_paths(nodes: Dict[int, Dict[str, Any]]) -> List[str]:
    paths: Set[str] = set()
    for d in nodes.values():
        m = d.get("module")
        if not m:
            continue
        parts = m.split(".")
        for i in range(1, len(parts) + 1):
            paths.add(".".join(parts[:i]))
    return sorted(paths)


def _runs(paths: Sequence[str], classes: Dict[str, str]) -> List[Tuple[str, List[str]]]:
    """Runs of repeated blocks: siblings ``P.i .. P.j`` (consecutive indices, same class), every range of at least
    two; labelled ``P.i–j``."""
    groups: Dict[str, List[int]] = {}
    for p in paths:
        m = _INDEXED.match(p)
        if m:
            groups.setdefault(m.group(1), []).append(int(m.group(2)))
    out: List[Tuple[str, List[str]]] = []
    for prefix, idx in groups.items():
        idx.sort()
        cls = {classes.get(f"{prefix}.{i}") for i in idx}
        if len(idx) < 2 or len(cls) > 1:
            continue
        for a in range(len(idx)):
            for b in range(a + 1, len(idx)):
                if idx[b] - idx[a] != b - a:
                    break
                out.append((f"{prefix}.{idx[a]}–{idx[b]}", [f"{prefix}.{i}" for i in idx[a:b + 1]]))
    return out


def _prefixes(path: str) -> List[str]:
    """``"a.b.c"`` -> ``["", "a", "a.b", "a.b.c"]``: every module path that contains it (``""``: the whole model)."""
    parts = path.split(".") if path else []
    return [""] + [".".join(parts[:i]) for i in range(1, len(parts) + 1)]


class _RangeMax:
    """Maximum of ``values[i..j]`` in constant time after an ``n log n`` build (a sparse table): a candidate changes
    the timeline by steps at a few points, so its new peak is the largest of (the step's level + the old maximum
    between two steps), not a walk over every point for every candidate."""

    def __init__(self, values: Sequence[float]) -> None:
        self.table = [list(values)]
        k = 1
        while 2 * k <= len(values):
            prev = self.table[-1]
            self.table.append([max(prev[i], prev[i + k]) for i in range(len(values) - 2 * k + 1)])
            k *= 2

    def __call__(self, i: int, j: int) -> float:
        """max(values[i:j]) for i < j."""
        level = (j - i).bit_length() - 1
        row = self.table[level]
        return max(row[i], row[j - (1 << level)])


class _Simulator:
    """Predicts the peak with some modules checkpointed (torch.utils.checkpoint, non-reentrant, each module its own
    checkpoint): the activations saved only inside a module, other than its inputs, are not kept through the
    forward; they come back when the backward reaches the module (the recompute) and go when they did before.

    Per module path, what a candidate needs is gathered once (the storages it could drop, its first point in
    backward, its forward time), so that each of the many candidates (every module, every run of blocks) costs
    the size of its own modules, not of the graph."""

    def __init__(self, graph: Any, acc: Accounting) -> None:
        mem = graph.meta["memory"]
        self.acc = acc
        amax = mem.get("allocated_max")
        if amax and len(amax) == acc.n and all(v is not None for v in amax):
            self.base = [float(v) for v in amax]
            self.source = "allocator"
        else:
            self.base = [float(a + b) for a, b in zip(acc.saved, acc.gradients)]
            self.source = "graph"
        self.peak = max(self.base) if self.base else 0.0
        self.peak_point = max(range(acc.n), key=lambda i: (self.base[i], -i)) if acc.n else 0
        self.range_max = _RangeMax(self.base)
        inputs = mem.get("module_inputs") or {}
        self.inputs = {k: set(v) for k, v in inputs.items()}
        nodes = acc.nodes
        module_of = {v: d.get("module") for v, d in nodes.items()}
        # Each activation storage's innermost module that contains all its savers: only it (and its ancestors)
        # can drop it. Filed under every path that contains that module.
        self.within: Dict[str, List[Storage]] = {}
        for st in acc.storages.values():
            if st.parameter or st.end == _INF:
                continue
            mods = [module_of.get(v) for v in st.savers]
            if any(m is None for m in mods):
                continue
            common = mods[0].split(".") if mods[0] else []  # type: ignore[union-attr]
            for m in mods[1:]:
                parts = m.split(".") if m else []  # type: ignore[union-attr]
                k = 0
                while k < min(len(common), len(parts)) and common[k] == parts[k]:
                    k += 1
                common = common[:k]
            for prefix in _prefixes(".".join(common)):
                self.within.setdefault(prefix, []).append(st)
        # The first backward point of each path's nodes (where its recompute runs), and its nodes' forward time.
        self.first: Dict[str, int] = {}
        for v, p in acc.bpos.items():
            m = module_of.get(v)
            if m is not None:
                for prefix in _prefixes(m):
                    if p < self.first.get(prefix, acc.n):
                        self.first[prefix] = p
        self.timed = any(d.get("fwd_ms") is not None for d in nodes.values())
        self.fwd_ms: Dict[str, float] = {}
        for v, d in nodes.items():
            m, ms = module_of.get(v), d.get("fwd_ms")
            if m is not None and ms:
                for prefix in _prefixes(m):
                    self.fwd_ms[prefix] = self.fwd_ms.get(prefix, 0.0) + ms

    def simulate(self, paths: Sequence[str]) -> Optional[Dict[str, Any]]:
        """``paths``: modules checkpointed together, none inside another (one module, or sibling blocks)."""
        n = self.acc.n
        steps: Dict[int, float] = {}
        frees = 0
        p0 = self.peak_point
        for path in paths:
            r = self.first.get(path)
            if r is None:
                return None
            ins = self.inputs.get(path, ())
            for st in self.within.get(path, ()):
                a = max(int(st.start), 0)
                if st.sid in ins or a >= r:
                    continue  # kept as the module's input, or saved after the recompute would start
                steps[a] = steps.get(a, 0.0) - st.bytes
                steps[r] = steps.get(r, 0.0) + st.bytes
                if a <= p0 < r:
                    frees += st.bytes
        new_peak, level, start = float("-inf"), 0.0, 0
        for pos in sorted(steps) + [n]:
            if pos > start:
                new_peak = max(new_peak, level + self.range_max(start, pos))
            if pos < n:
                level += steps[pos]
            start = pos
        if new_peak == float("-inf"):
            new_peak = 0.0
        ms = sum(self.fwd_ms.get(q, 0.0) for q in paths) if self.timed else None
        return {"frees_bytes": int(frees), "new_peak_bytes": int(new_peak),
                "saving_bytes": int(self.peak - new_peak), "recompute_ms": ms}


def checkpoint_candidates(graph: Any, acc: Optional[Accounting] = None, top: int = 10) -> List[Dict[str, Any]]:
    """Modules (and runs of repeated blocks, each block its own checkpoint) ranked by the peak bytes that
    ``torch.utils.checkpoint`` would save per ms of forward it recomputes (by bytes when the graph was not timed).

    Each row: ``label``, ``modules`` (paths to checkpoint), ``class``, ``frees_bytes`` (activations alive at the
    peak that would not be kept), ``saving_bytes`` (the predicted drop of the peak, with the recompute's own
    activations put back where the backward reaches the module), ``new_peak_bytes``, ``peak_bytes``,
    ``recompute_ms`` (the modules' measured forward time, or None), ``bytes_per_ms``, ``source`` (which peak:
    allocator or graph). Only rows that lower the peak by at least :data:`MIN_LISTED_SHARE` of it are kept. Needs
    ``module`` on the nodes (gw.trace / gw.profile) and a memory record."""
    if not has_memory(graph):
        return []
    acc = acc or Accounting(graph)
    if acc.n == 0:
        return []
    sim = _Simulator(graph, acc)
    classes = graph.meta.get("modules") or {}
    paths = _module_paths(acc.nodes)
    cands: List[Tuple[str, List[str]]] = [(p, [p]) for p in paths] + _runs(paths, classes)
    rows = []
    for label, mods in cands:
        r = sim.simulate(mods)
        if r is None or r["saving_bytes"] <= 0 or r["saving_bytes"] < MIN_LISTED_SHARE * sim.peak:
            continue
        ms = r["recompute_ms"]
        rows.append({"label": label, "modules": mods, "class": classes.get(mods[0]), **r,
                     "peak_bytes": int(sim.peak), "bytes_per_ms": (r["saving_bytes"] / ms) if ms else None,
                     "source": sim.source})
    rows.sort(key=lambda r: (-(r["bytes_per_ms"] if r["bytes_per_ms"] is not None else r["saving_bytes"]),
                             -r["saving_bytes"], r["label"]))
    return rows[:top] if top else rows


def _group_depth(modules: Iterable[Optional[str]], limit: int) -> int:
    """The deepest module-path depth at which there are at most ``limit`` groups (at least 1)."""
    mods = {m for m in modules if m}
    best = 1
    for depth in range(1, 12):
        groups = {".".join(m.split(".")[:depth]) for m in mods}
        if len(groups) > limit:
            break
        best = depth
        if all(len(m.split(".")) <= depth for m in mods):
            break
    return best


def saved_by_module(graph: Any, limit: int = 10, acc: Optional[Accounting] = None) -> Dict[str, List[int]]:
    """Saved activation bytes alive at each point, per module group (paths cut at the depth that gives at most
    ``limit`` groups; ``"(top level)"`` for nodes outside any module): the stacked bands of the timeline."""
    acc = acc or Accounting(graph)
    nodes = acc.nodes
    depth = _group_depth((nodes[st.savers[0]].get("module") for st in acc.storages.values()), limit)
    groups: Dict[str, List[Tuple[int, Any, Any]]] = {}
    for st in acc.storages.values():
        if st.parameter:
            continue
        m = nodes[st.savers[0]].get("module")
        key = ".".join(m.split(".")[:depth]) if m else "(top level)"
        groups.setdefault(key, []).append((st.bytes, st.start, st.end))
    return {k: acc._sweep(v) for k, v in sorted(groups.items())}

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
from typing import Any, Dict, Iterable, List, Optional, Tuple

from .._util.text import TextTable, human_bytes
from ..model._digraph import node_dicts
from .memory_accounting import Accounting, _padded, has_memory
from .memory_checkpoints import checkpoint_candidates

KINDS = ("saved activations", "gradients", "other (allocator minus graph)")


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
        if p.get("node") is not None:
            where = f"{p['phase']}, node {p['node']} {p['op']}"
        else:  # an op that made no graph node (a no-grad temporary): what was called
            where = f"{p['phase']}, {p.get('call') or p.get('alloc_op') or 'an op outside the graph'} (no graph node)"
        if p.get("module") is not None:
            where += f", module {p['module'] or '(top level)'}"
        if p.get("source_line"):
            where += f", {self._short_source(p['source_line'])}"
        kinds = ", ".join(f"{k} {human_bytes(v)}" for k, v in p["by_kind"].items() if v)
        text = f"peak {human_bytes(p['bytes'])} ({p['source']}) in the {where}: {kinds or 'nothing attributed'}"
        extra = ", ".join(f"{k} {human_bytes(v)}" for k, v in (p.get("resident") or {}).items() if v)
        if extra:
            text += f"; also resident, not part of the peak: {extra}"
        if p.get("overcount_bytes"):
            text += f"; the graph counts {human_bytes(p['overcount_bytes'])} more than the allocator held"
        return text

    def __str__(self) -> str:
        lines = [self.headline(), super().__str__()]
        if self.candidates:
            lines.append("checkpoint candidates (predicted from this timeline):")
            for c in self.candidates[:5]:
                ms = "-" if c["recompute_ms"] is None else f"{c['recompute_ms']:.2f} ms"
                if c.get("recompute_interval"):
                    ms += " [{:.2f}–{:.2f}]".format(*c["recompute_interval"])
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
    # The parts add up to the peak: the allocator's figure holds what the step allocated, so saved tensors that
    # existed before it (its inputs) and the parameters are listed apart, as resident beside the peak.
    other = None
    over = 0
    resident = {"parameters": acc.parameter_bytes}
    if source == "allocator":
        step_saved = saved_b - inputs_b
        other = peak_bytes - step_saved - grad_b
        if other < 0:  # the graph's accounting exceeds what the allocator held: said, not hidden in the parts
            over, other = -other, 0
        by_kind = {"saved activations": step_saved, "gradients": grad_b, "other (allocator minus graph)": other}
        resident["saved inputs (existed before the step)"] = inputs_b
    else:
        by_kind = {"saved activations": saved_b, "gradients": grad_b}
    rows = sorted(by_module.values(), key=lambda r: (-r["total"], r["module"]))
    denom = peak_bytes or (saved_b + grad_b) or None
    for r in rows:
        r["share"] = r["total"] / denom if denom else None
        del r["top_bytes"]
    rep.extend(rows)
    info = _node_info(nodes, v)
    at_node: Optional[int] = v
    call = alloc_op = None
    at = mem.get("peak_at")
    if source == "allocator" and isinstance(at, dict) and at.get("bytes") == peak_bytes:
        # the allocation itself, not the point that follows it: its op, line and module (docs/memory.md)
        alloc_op = at.get("alloc_op") or at.get("op")
        if at.get("phase") == "backward" or at.get("node") is not None:
            at_node = at.get("node") if at.get("node") is not None else v
            info = _node_info(nodes, at_node)
        elif at.get("call") or at.get("source"):
            at_node = None
            info = {"node": None, "op": None, "module": at.get("module"), "source": at.get("source"),
                    "code": at.get("code")}
            call = at.get("call")
    rep.peak = {"bytes": peak_bytes, "source": source, "point": p, "phase": phase, "node": at_node, "op": info["op"],
                "call": call, "alloc_op": alloc_op, "resident": resident, "overcount_bytes": over,
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

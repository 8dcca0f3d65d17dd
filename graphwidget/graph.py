"""The captured graph: a ``networkx.DiGraph`` plus metadata, and its versioned JSON form.

This is the single source of truth: analyses read it, views render its JSON (schema: ``docs/schema.md``).
"""
from __future__ import annotations

import json
from collections import Counter
from typing import Any, Dict, Iterable, List, Optional, Sequence, Tuple

import networkx as nx

from . import native
from ._gc import gc_paused

FORMAT = "graphwidget"
SCHEMA_VERSION = 1

#: Node record keys, in the order they are written to JSON.
NODE_KEYS = (
    "op", "kind", "outputs", "saved", "attrs", "saved_bytes", "tensor", "source", "code", "module",
    "out_stride", "out_contiguous", "seq", "fwd_ms", "bwd_ms", "grad_bytes",
)
EDGE_KEYS = ("output", "slot", "shape", "dtype", "also")


def _torch_version() -> Optional[str]:
    try:
        import torch
        return str(torch.__version__)
    except ImportError:  # pragma: no cover - load_json works without torch
        return None


def _new_meta(roots: Sequence[int], title: Optional[str], traced: bool = False, timed: bool = False,
              timing: Optional[Dict[str, Any]] = None, torch_version: Optional[str] = None) -> Dict[str, Any]:
    """A fresh graph's ``meta`` (docs/schema.md)."""
    return {
        "torch": torch_version if torch_version is not None else _torch_version(),
        "title": title,
        "roots": list(roots),
        "traced": traced,
        "timed": timed,
        "timing": timing,
    }


class GradGraph:
    """An autograd graph captured by :func:`graphwidget.capture`, :func:`graphwidget.trace` or
    :func:`graphwidget.profile`.

    ``nx`` is a ``networkx.DiGraph`` whose nodes are integer ids with the attributes documented in the README;
    edges ``(u, v)`` follow forward data flow (``u`` appears in ``v.next_functions``). ``meta`` holds graph-wide
    facts (roots, torch version, whether source/timings are present). ``output`` is what the traced function
    returned (``None`` for :func:`capture`).
    """

    def __init__(self, graph: nx.DiGraph, meta: Dict[str, Any], output: Any = None) -> None:
        self.nx = graph
        self.meta = meta
        self.output = output
        self._abs_seq: Optional[Dict[int, int]] = {}
        self._abs_seq_raw: Optional[bytes] = None  # the compiled core's form: uint64 per node id, max = none

    @property
    def abs_seq(self) -> Dict[int, int]:
        """Node id -> torch's absolute autograd sequence number, for matching ``torch.profiler`` events (not
        serialised; see ``capture.finalize_seq``). Built on first use when the compiled core captured the graph."""
        if self._abs_seq is None:
            import array
            raw = array.array("Q")
            raw.frombytes(self._abs_seq_raw or b"")
            none = 2**64 - 1
            self._abs_seq = {i: v for i, v in enumerate(raw) if v != none}
            self._abs_seq_raw = None
        return self._abs_seq

    @abs_seq.setter
    def abs_seq(self, value: Dict[int, int]) -> None:
        self._abs_seq, self._abs_seq_raw = value, None

    def _set_abs_seq_raw(self, raw: bytes) -> None:
        self._abs_seq, self._abs_seq_raw = None, raw

    # -- construction -------------------------------------------------------------------------------------------
    @classmethod
    def from_records(
        cls,
        nodes: Sequence[Dict[str, Any]],
        edges: Sequence[Tuple[int, int, Dict[str, Any]]],
        *,
        roots: Sequence[int],
        title: Optional[str] = None,
        traced: bool = False,
        timed: bool = False,
        timing: Optional[Dict[str, Any]] = None,
        torch_version: Optional[str] = None,
    ) -> "GradGraph":
        """Build from node attribute dicts (``nodes[i]`` is node ``i``; used as-is, not copied) and
        ``(u, v, attrs)`` edge triples."""
        return cls(build_digraph(enumerate(nodes), edges),
                   _new_meta(roots, title, traced, timed, timing, torch_version))

    @classmethod
    def from_adjacency(
        cls,
        node: Dict[int, Dict[str, Any]],
        succ: Dict[int, Dict[int, Dict[str, Any]]],
        pred: Dict[int, Dict[int, Dict[str, Any]]],
        *,
        roots: Sequence[int],
        title: Optional[str] = None,
    ) -> "GradGraph":
        """Build from networkx's own adjacency dicts (node attrs, successors, predecessors), used as-is; the
        compiled capture core returns these."""
        return cls(digraph_from_adjacency(node, succ, pred), _new_meta(roots, title))

    # -- queries ------------------------------------------------------------------------------------------------
    def __len__(self) -> int:
        return self.nx.number_of_nodes()

    def __repr__(self) -> str:
        s = self.summary()
        title = f" {self.meta['title']!r}" if self.meta.get("title") else ""
        return (f"<GradGraph{title}: {s['nodes']} nodes, {s['edges']} edges, "
                f"saved {_human_bytes(s['saved_bytes'])}>")

    def nodes(self, op: Optional[str] = None, **attrs: Any) -> List[int]:
        """Ids of nodes whose ``op`` (and any other given attribute) equals the given values, in id order.

        >>> g.nodes(op="SelectBackward0")      # doctest: +SKIP
        [5, 9, 13]
        """
        want = dict(attrs)
        if op is not None:
            want["op"] = op
        return [n for n, d in self.nx.nodes(data=True) if all(d.get(k) == v for k, v in want.items())]

    def node(self, node_id: int) -> Dict[str, Any]:
        """The attribute dict of one node (the live networkx dict)."""
        try:
            return self.nx.nodes[node_id]
        except KeyError:
            raise KeyError(f"no node {node_id!r} in this graph; ids run from 0 to {len(self) - 1}") from None

    def summary(self) -> Dict[str, Any]:
        """Graph-wide numbers: node/edge/leaf counts, saved bytes (distinct storages and logical), the bytes of
        gradients backward writes (``grad_bytes``), depth, a histogram of ops, and the timing totals when the
        graph was profiled."""
        with gc_paused():
            return self._summary()

    def _summary(self) -> Dict[str, Any]:
        g = self.nx
        ops: Counter = Counter()
        leaves = custom = freed = 0
        logical = grad = 0
        storages: Dict[Any, int] = {}
        for _, d in g.nodes(data=True):
            ops[d["op"]] += 1
            grad += d.get("grad_bytes") or 0
            kind = d.get("kind")
            if kind == "leaf":
                leaves += 1
            elif kind == "custom":
                custom += 1
            for s in d.get("saved") or ():
                if s.get("freed"):
                    freed += 1
                    continue
                logical += s.get("bytes") or 0
                key = s.get("storage")
                if key is None:
                    storages[("anon", id(s))] = s.get("storage_bytes") or 0
                else:
                    storages[key] = s.get("storage_bytes") or 0
        out: Dict[str, Any] = {
            "nodes": g.number_of_nodes(),
            "edges": g.number_of_edges(),
            "roots": len(self.meta.get("roots") or ()),
            "leaves": leaves,
            "custom": custom,
            "saved_tensors_freed": freed,
            "saved_bytes": sum(storages.values()),
            "saved_bytes_logical": logical,
            "grad_bytes": grad,
            "depth": dag_depth(g),
            "ops": dict(sorted(ops.items(), key=lambda kv: (-kv[1], kv[0]))),
        }
        timing = self.meta.get("timing")
        if timing:
            for k in ("forward_ms", "backward_ms", "unattributed_ms"):
                out[k] = timing.get(k)
        return out

    # -- JSON ---------------------------------------------------------------------------------------------------
    def to_dict(self) -> Dict[str, Any]:
        """The JSON form as Python objects (see ``docs/schema.md``)."""
        return {
            "format": FORMAT,
            "version": SCHEMA_VERSION,
            "meta": dict(self.meta),
            "nodes": [{"id": n, **{k: d.get(k) for k in NODE_KEYS}} for n, d in self.nx.nodes(data=True)],
            "edges": [{"source": u, "target": v, **{k: d.get(k) for k in EDGE_KEYS}}
                      for u, v, d in self.nx.edges(data=True)],
        }

    def to_json(self, indent: Optional[int] = None) -> str:
        """Serialise to the versioned JSON form; :func:`load_json` reads it back exactly."""
        if indent is None:
            fast = self._to_json_native()
            if fast is not None:
                return fast
        with gc_paused():
            return json.dumps(self.to_dict(), indent=indent, separators=None if indent else (",", ":"),
                              allow_nan=False)

    def _to_json_native(self) -> Optional[str]:
        """The same text as the json.dumps path, written by the compiled core without building :meth:`to_dict`
        first (100k nodes: ~1 s -> see the README); None when the core is absent or a value is not plain JSON."""
        mod = native.load()
        if mod is None:
            return None
        try:
            nodes, edges = mod.json_arrays(self.nx._node, self.nx._succ, NODE_KEYS, EDGE_KEYS)
        except mod.Unsupported:
            return None
        head = json.dumps({"format": FORMAT, "version": SCHEMA_VERSION, "meta": dict(self.meta)},
                          separators=(",", ":"), allow_nan=False)
        return f"{head[:-1]},\"nodes\":{nodes},\"edges\":{edges}}}"

    # -- views (imported lazily: capture must not pay for the front end) -----------------------------------------
    def widget(self, **kwargs: Any) -> Any:
        """An interactive :class:`graphwidget.GraphWidget` for this graph."""
        from .widget import GraphWidget
        return GraphWidget(self, **kwargs)

    def export_html(self, path: Any, **kwargs: Any) -> Any:
        """Write a self-contained HTML viewer; see :func:`graphwidget.export_html`."""
        from .export import export_html
        return export_html(self, path, **kwargs)

    def timing_table(self, top: Optional[int] = 20, by: str = "total", group: Optional[str] = None,
                     **kwargs: Any) -> Any:
        """Slowest nodes (or op types / modules / lines with ``group=``) of a profiled graph; see
        :func:`graphwidget.charts.timing_table`."""
        from .charts import timing_table
        return timing_table(self, top=top, by=by, group=group, **kwargs)

    def figure(self, kind: str = "time", **kwargs: Any) -> Any:
        """A plotly figure of timings (``"time"``, ``"op"``, ``"module"``, ``"pareto"``, ``"top"``) or saved memory
        (``"memory"``); see :func:`graphwidget.charts.figure`."""
        from .charts import figure
        return figure(self, kind, **kwargs)

    def _repr_mimebundle_(self, include: Any = None, exclude: Any = None) -> Any:
        # Shown as the last expression of a cell: render as the widget.
        w = self.widget()
        bundle = w._repr_mimebundle_(include=include, exclude=exclude)
        return bundle


def build_digraph(nodes: Iterable[Tuple[int, Dict[str, Any]]],
                  edges: Iterable[Tuple[int, int, Dict[str, Any]]]) -> nx.DiGraph:
    """A DiGraph from ``(id, attrs)`` and ``(u, v, attrs)``, filling networkx's adjacency dicts directly.

    ``add_nodes_from``/``add_edges_from`` copy every attribute dict and re-check every key; for 100k nodes that
    was ~4.4 s of a capture whose bare walk takes 0.1 s. The resulting object is an ordinary DiGraph.
    """
    node: Dict[int, Dict[str, Any]] = {}
    succ: Dict[int, Dict[int, Dict[str, Any]]] = {}
    pred: Dict[int, Dict[int, Dict[str, Any]]] = {}
    for n, attrs in nodes:
        node[n] = attrs
        succ[n] = {}
        pred[n] = {}
    for u, v, attrs in edges:
        if u not in node or v not in node:
            raise ValueError(f"edge ({u}, {v}) names a node that is not in the graph")
        succ[u][v] = attrs
        pred[v][u] = attrs
    return digraph_from_adjacency(node, succ, pred)


def digraph_from_adjacency(node: Dict[int, Dict[str, Any]], succ: Dict[int, Dict[int, Dict[str, Any]]],
                           pred: Dict[int, Dict[int, Dict[str, Any]]]) -> nx.DiGraph:
    """An ordinary DiGraph whose internals are these dicts (every node a key of all three; ``succ[u][v]`` is
    ``pred[v][u]``, the edge's attribute dict)."""
    g = nx.DiGraph()
    # Same invariants as DiGraph.__init__ (_adj is _succ); the views are built lazily from these dicts.
    g._node, g._adj, g._succ, g._pred = node, succ, succ, pred
    for cached in ("nodes", "adj", "succ", "pred", "edges", "in_edges", "out_edges", "degree"):
        g.__dict__.pop(cached, None)
    return g


def dag_depth(g: nx.DiGraph) -> int:
    """Number of nodes on the longest path (0 for an empty graph); linear time, no recursion."""
    if g.number_of_nodes() == 0:
        return 0
    depth: Dict[Any, int] = {}
    for n in nx.topological_sort(g):
        preds = g._pred[n]
        depth[n] = 1 + max((depth[p] for p in preds), default=0)
    return max(depth.values())


def load_json(text: str) -> GradGraph:
    """Read a graph written by :meth:`GradGraph.to_json` (any version this release understands).

    >>> g2 = gw.load_json(g.to_json())        # doctest: +SKIP
    """
    with gc_paused():
        try:
            data = json.loads(text)
        except (TypeError, json.JSONDecodeError) as exc:
            raise ValueError(
                f"graphwidget.load_json: not JSON ({exc}); pass the text GradGraph.to_json() wrote.") from None
        g = from_dict(data)
        del data
        mod = native.load()
        if mod is not None:  # plain data, no cycles: spare the collector its pass over ~10 containers a node
            for part in (g.nx._node, g.nx._succ, g.nx._pred):
                mod.untrack_tree(part)
        return g


def from_dict(data: Any) -> GradGraph:
    """Build a :class:`GradGraph` from the JSON form already parsed into Python objects."""
    if not isinstance(data, dict) or data.get("format") != FORMAT:
        raise ValueError("graphwidget.load_json: this is not a graphwidget graph (no \"format\": \"graphwidget\").")
    version = data.get("version")
    if version != SCHEMA_VERSION:
        raise ValueError(
            f"graphwidget.load_json: schema version {version!r} is not supported by this release "
            f"(it reads version {SCHEMA_VERSION}); upgrade graphwidget.")
    meta = dict(data.get("meta") or {})
    try:
        g = build_digraph(
            ((n["id"], {k: n.get(k) for k in NODE_KEYS}) for n in data["nodes"]),
            ((e["source"], e["target"], {k: e.get(k) for k in EDGE_KEYS}) for e in data["edges"]))
    except (KeyError, TypeError) as exc:
        raise ValueError(f"graphwidget.load_json: malformed node or edge record ({exc!r}).") from None
    return GradGraph(g, meta)


def _human_bytes(n: Optional[float]) -> str:
    if n is None:
        return "?"
    for unit in ("B", "KiB", "MiB", "GiB"):
        if abs(n) < 1024 or unit == "GiB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return f"{n} B"  # pragma: no cover


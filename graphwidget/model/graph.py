"""The captured graph: a ``networkx.DiGraph`` plus metadata. The single source of truth every analysis and view
reads; its JSON form is :mod:`graphwidget.model.io` (schema: ``docs/schema.md``). Torch-free."""
from __future__ import annotations

from typing import TYPE_CHECKING, Any, Dict, Iterable, List, Optional, Sequence, Tuple

import networkx as nx

from . import writer
from ._digraph import build_digraph, digraph_from_adjacency, node_dicts

if TYPE_CHECKING:  # pragma: no cover
    from .held import HeldColumns


def _torch_version() -> Optional[str]:
    import sys
    torch = sys.modules.get("torch")  # a captured graph always has torch loaded; a loaded one keeps its meta
    return str(torch.__version__) if torch is not None else None


def new_meta(roots: Sequence[int], title: Optional[str] = None, traced: bool = False, timed: bool = False,
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


def _own(value: Any) -> Any:
    """A copy of a record's JSON-like value (dicts, lists, tuples; scalars and strings are immutable), sharing
    nothing mutable with it."""
    if isinstance(value, dict):
        return {k: _own(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_own(v) for v in value]
    if isinstance(value, tuple):
        return tuple(_own(v) for v in value)
    return value


class GradGraph:
    """An autograd graph captured by :func:`graphwidget.capture`, :func:`graphwidget.trace` or
    :func:`graphwidget.profile`, or read by :func:`graphwidget.load_json`.

    ``nx`` is a ``networkx.DiGraph`` whose nodes are integer ids with the attributes documented in docs/schema.md;
    edges ``(u, v)`` follow forward data flow (``u`` appears in ``v.next_functions``). ``meta`` holds graph-wide
    facts (roots, torch version, whether source/timings are present). ``output`` is what the traced function
    returned (``None`` for :func:`capture`). ``findings`` holds the advisor's findings once computed.

    A graph read from a file (:func:`graphwidget.load_json`) holds its columns until ``nx`` is first used
    (:mod:`graphwidget.model.held`); ``len``, :meth:`summary` and the timing tables read the columns.
    """

    def __init__(self, graph: Optional[nx.DiGraph], meta: Dict[str, Any], output: Any = None,
                 held: Optional["HeldColumns"] = None) -> None:
        if graph is None and held is None:
            raise TypeError("GradGraph needs a networkx graph (or the held columns of a file).")
        self._nx = graph
        self._held = None if graph is not None else held
        self.meta = meta
        self.output = output
        self.findings: Optional[List[Dict[str, Any]]] = None
        #: gw.profile's measured runs, in the order they ran (not serialised): per run ``{"fwd", "bwd"}`` (each
        #: node's ms in that run, ``array('d')`` indexed by id, NaN where none), ``"fwd_wall"``, ``"bwd_wall"`` (ms;
        #: ``None`` without a backward) and ``"kept"`` (whether the statistic used it). ``None`` when not profiled
        #: in this process; :meth:`export_chrome_trace` draws one step per run from it.
        self.steps: Optional[List[Dict[str, Any]]] = None
        self._abs_seq: Optional[Dict[int, int]] = {}
        self._abs_seq_raw: Optional[bytes] = None  # the compiled core's form: uint64 per node id, max = none
        self._headline: Optional[Tuple[Tuple[Any, ...], str]] = None  # (shape key, text): see headline()

    @property
    def nx(self) -> nx.DiGraph:
        """The graph as a ``networkx.DiGraph`` (built from the file's columns on first use after
        :func:`graphwidget.load_json`)."""
        g = self._nx
        if g is None:
            assert self._held is not None
            g = self._nx = self._held.build()
            self._held = None
        return g

    @nx.setter
    def nx(self, graph: nx.DiGraph) -> None:
        self._nx, self._held = graph, None

    @property
    def held(self) -> Optional["HeldColumns"]:
        """The file's columns while ``nx`` has not been built yet (else ``None``): for passes that read a few
        fields of every node without building the graph."""
        return self._held

    def node_items(self, keys: Sequence[str]) -> Iterable[Tuple[int, Dict[str, Any]]]:
        """``(id, attrs)`` of every node in the graph's order: the live networkx dicts once ``nx`` is built, else
        dicts of just ``keys`` made from the columns (without building the graph). Read-only."""
        held = self._held
        if held is None:
            return node_dicts(self.nx).items()
        return zip(held.ids, held.rows(keys))

    @property
    def abs_seq(self) -> Dict[int, int]:
        """Node id -> torch's absolute autograd sequence number, for matching ``torch.profiler`` events (not
        serialised). Built on first use when the compiled core captured the graph."""
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

    def set_abs_seq_raw(self, raw: bytes) -> None:
        """Store the compiled core's packed sequence numbers (decoded on first use of :attr:`abs_seq`)."""
        self._abs_seq, self._abs_seq_raw = None, raw

    # -- construction -------------------------------------------------------------------------------------------
    @classmethod
    def from_records(cls, nodes: Sequence[Dict[str, Any]], edges: Sequence[Tuple[int, int, Dict[str, Any]]], *,
                     roots: Sequence[int], title: Optional[str] = None) -> "GradGraph":
        """Build from node attribute dicts (``nodes[i]`` is node ``i``; used as-is, not copied) and
        ``(u, v, attrs)`` edge triples."""
        return cls(build_digraph(enumerate(nodes), edges), new_meta(roots, title))

    @classmethod
    def from_adjacency(cls, node: Dict[int, Dict[str, Any]], succ: Dict[int, Dict[int, Dict[str, Any]]],
                       pred: Dict[int, Dict[int, Dict[str, Any]]], *, roots: Sequence[int],
                       title: Optional[str] = None) -> "GradGraph":
        """Build from networkx's own adjacency dicts (node attrs, successors, predecessors), used as-is; the
        compiled capture core returns these."""
        return cls(digraph_from_adjacency(node, succ, pred), new_meta(roots, title))

    # -- queries ------------------------------------------------------------------------------------------------
    def __len__(self) -> int:
        held = self._held
        return held.n if held is not None else self.nx.number_of_nodes()

    def __repr__(self) -> str:
        return f"<GradGraph{self.headline()}>"

    def headline(self) -> str:
        """One line: title, nodes, edges, saved bytes (also the ``text/plain`` of the rich display).

        Computed once per shape of the graph (node and edge counts, title), since a notebook asks for it on every
        display and ``repr``, and the saved bytes need a pass over every node; edit a node's saved tensors in place
        and the line keeps the old total until a node or an edge is added or removed."""
        held = self._held
        edges = len(held.src) if held is not None else self.nx.number_of_edges()
        key = (len(self), edges, self.meta.get("title"))
        cached = self._headline
        if cached is not None and cached[0] == key:
            return cached[1]
        from .._util.text import human_bytes
        s = self.summary()
        title = f" {self.meta['title']!r}" if self.meta.get("title") else ""
        text = f"{title}: {s['nodes']} nodes, {s['edges']} edges, saved {human_bytes(s['saved_bytes'])}"
        self._headline = (key, text)
        return text

    def nodes(self, op: Optional[str] = None, **attrs: Any) -> List[int]:
        """Ids of nodes whose ``op`` (and any other given attribute) equals the given values, in id order.

        >>> g.nodes(op="SelectBackward0")      # doctest: +SKIP
        [5, 9, 13]
        """
        want = dict(attrs)
        if op is not None:
            want["op"] = op
        return [n for n, d in node_dicts(self.nx).items() if all(d.get(k) == v for k, v in want.items())]

    def node(self, node_id: int) -> Dict[str, Any]:
        """One node's record: a copy of its attribute dict, the node's own, so that editing it changes neither the
        graph nor another node. (Capture shares equal values between nodes, such as one ``outputs`` list for
        every node with the same outputs: ``g.nx.nodes[i]`` is that live, shared record, to be read, not edited.)"""
        try:
            return _own(self.nx.nodes[node_id])
        except KeyError:
            raise KeyError(f"no node {node_id!r} in this graph; ids run from 0 to {len(self) - 1}") from None

    def summary(self) -> Dict[str, Any]:
        """Graph-wide numbers (see :func:`graphwidget.analysis.summary.summarise`): node/edge/leaf counts, saved
        bytes, the bytes of gradients backward writes, depth, a histogram of ops, timing totals when profiled."""
        from ..analysis.summary import summarise
        return summarise(self)

    # -- JSON ---------------------------------------------------------------------------------------------------
    def to_dict(self, version: int = writer.schema.VERSION) -> Dict[str, Any]:
        """The JSON form as Python objects (see ``docs/schema.md``): version 3 (columns) unless ``version=2`` (flat
        columns) or ``version=1`` (one record per node and per edge)."""
        return writer.to_dict(self, version)

    def to_json(self, indent: Optional[int] = None, version: int = writer.schema.VERSION) -> str:
        """Serialise to the versioned JSON form (version 3, columns; ``version=2``: flat columns; ``version=1``:
        records); :func:`graphwidget.load_json` reads any back exactly."""
        return writer.to_json(self, indent, version=version)

    def save(self, path: Any) -> Any:
        """Write the JSON form to a file, piece by piece (never one string); ``.json.gz`` is gzip-compressed.
        :func:`graphwidget.load` reads it back. Returns the path."""
        return writer.save(self, path)

    # -- conveniences that delegate (imported lazily: capture must not pay for analyses or the front end) --------
    def widget(self, **kwargs: Any) -> Any:
        """An interactive :class:`graphwidget.GraphWidget` for this graph."""
        from ..views.widget import GraphWidget
        return GraphWidget(self, **kwargs)

    def export_html(self, path: Any, **kwargs: Any) -> Any:
        """Write a self-contained HTML viewer; see :func:`graphwidget.export_html`."""
        from ..views.export import export_html
        return export_html(self, path, **kwargs)

    def export_chrome_trace(self, path: Any) -> Any:
        """Write the measured times as a Chrome trace (Perfetto, chrome://tracing, speedscope); see
        :func:`graphwidget.views.chrome_trace.export_chrome_trace`."""
        from ..views.chrome_trace import export_chrome_trace
        return export_chrome_trace(self, path)

    def export_model_explorer(self, path: Any, node_data: bool = True) -> Any:
        """Write the graph in Model Explorer's JSON graph format (and its node-data files); see
        :func:`graphwidget.views.model_explorer.export_model_explorer`."""
        from ..views.model_explorer import export_model_explorer
        return export_model_explorer(self, path, node_data=node_data)

    def timing_table(self, top: Optional[int] = 20, by: str = "total", group: Optional[str] = None,
                     **kwargs: Any) -> Any:
        """Slowest nodes (or op types / modules / lines with ``group=``); see
        :func:`graphwidget.analysis.tables.timing_table`."""
        from ..analysis.tables import timing_table
        return timing_table(self, top=top, by=by, group=group, **kwargs)

    def advise(self, rules: Optional[Sequence[str]] = None, min_share: Optional[float] = None) -> List[Any]:
        """Known slow patterns in this graph, each tied to its source line, with the rewrite and the evidence, most
        costly first; also stored in :attr:`findings` so they travel with the JSON. See
        :func:`graphwidget.analysis.advisor.advise`.

        >>> [str(f) for f in g.advise()]      # doctest: +SKIP
        ['warning repeat-broadcast homography.py:54: `h = homo.unsqueeze(1).repeat(1, W * H, 1, 1)` ...']
        """
        from ..analysis.advisor import advise
        return advise(self, rules=rules, min_share=min_share)

    def memory(self, top: int = 10) -> Any:
        """The memory peak explained, for a graph recorded with ``gw.profile(..., memory=True)``: when it happens,
        what is alive then by module and by kind, the largest holders with their lines, and checkpoint candidates;
        ``.figure()`` is the timeline. Also writes each node's ``peak_bytes``. See
        :func:`graphwidget.analysis.memory.memory_report` and docs/memory.md.

        >>> print(g.memory())      # doctest: +SKIP
        """
        from ..analysis.memory import memory_report
        return memory_report(self, top=top)

    def figure(self, kind: str = "time", **kwargs: Any) -> Any:
        """A plotly figure of timings (``"time"``, ``"op"``, ``"module"``, ``"pareto"``, ``"top"``) or saved memory
        (``"memory"``); see :func:`graphwidget.views.charts.figure`."""
        from ..views.charts import figure
        return figure(self, kind, **kwargs)

    def _repr_mimebundle_(self, include: Any = None, exclude: Any = None) -> Any:
        from ..views.display import mimebundle
        return mimebundle(self, include=include, exclude=exclude)

"""More than two graphs: :class:`MultiDiff`, one reference and every other side matched to it (torch-free).

An N-way comparison is N − 1 two-way diffs that share their A: the reference (the first side, or the one named by
``reference=``). Every node of a side is matched to the reference (:mod:`.match`), so the counterparts of a node in
every other side are found through the reference: side node → its reference node → that node's counterpart in each
side. A node of a side that has no counterpart in the reference (added) has none anywhere.

What :func:`graphwidget.compare` adds per side: the equivalence and speed verdicts against the reference (the same
records, on the same statistics, as a two-way compare), and for pairs without the reference, when it measured them,
their verdicts too (``d.pair("refactor", "compiled")``). A side with compiled regions also says which reference
nodes each region stands for (:mod:`.fusion`).

Its JSON form is the ``"graphwidget-nway"`` document (``docs/nway.md``); a set of per-rank graphs
(:class:`graphwidget.analysis.ranks.RankSet`) makes the same document with a ``ranks`` part.
"""
from __future__ import annotations

import json
from typing import Any, Dict, Iterator, List, Mapping, Optional, Sequence, Tuple, Union, overload

from ..._util.gc import gc_paused
from ...model import compare_schema, io, schema
from ...model.graph import GradGraph
from . import fusion
from .result import Diff, build, diff_graphs, read_divergence
from .verdicts import BAND, clean_equivalence, clean_timing, decided_text, maths_text, memory_text

Verdicts = Tuple[Optional[Dict[str, Any]], Optional[Dict[str, Any]]]  # (equivalence, timing)

#: The columns of the verdict table (:meth:`MultiDiff.table`), in order: key, heading.
COLUMNS = (("label", "side"), ("maths", "same maths?"), ("step", "whole step vs reference"),
           ("forward", "forward"), ("backward", "backward"), ("ms", "step ms"), ("nodes", "nodes"),
           ("matched", "matched"), ("changed", "changed"), ("added", "only here"),
           ("removed", "only in reference"), ("grad_bytes", "gradients written"),
           ("saved_bytes", "saved for backward"), ("fused", "compiled regions"))


def check_sides(labels: Any, who: str) -> Tuple[str, ...]:
    """At least two unique non-empty strings, or a clear error."""
    if isinstance(labels, str) or not isinstance(labels, (list, tuple)) or len(labels) < 2 \
            or not all(isinstance(x, str) and x for x in labels):
        raise ValueError(f"{who}: labels must be at least two non-empty strings, one per side; got {labels!r:.80}.")
    dup = sorted({x for x in labels if list(labels).count(x) > 1})
    if dup:
        raise ValueError(f"{who}: labels must be unique (each names a side); {dup[0]!r} is used twice.")
    return tuple(labels)


class MultiDiff:
    """N autograd graphs: a reference and every other side matched to it node to node.

    >>> d = gw.compare({"eager": f, "refactor": g, "compiled": torch.compile(f)}, x, profile=True)  # doctest: +SKIP
    >>> d.sides                      # ("eager", "refactor", "compiled"): the reference first
    >>> d.pair("eager", "compiled")  # the two-way Diff, with both verdicts
    >>> d.table()                    # a row per side, a column per verdict
    >>> d.counterparts("compiled", 0)   # {"eager": 0, "refactor": 0, "compiled": 0}
    >>> d.regions("compiled")        # what each CompiledFunctionBackward stands for in the reference

    Attributes: ``sides`` (labels, the reference first), ``reference`` (its label), ``graphs`` (label -> GradGraph),
    ``kind`` (``"sides"``, or ``"ranks"`` for a set of per-rank graphs), ``ranks`` (the per-rank record of a rank
    set, ``None`` otherwise: ``docs/nway.md``).
    """

    def __init__(self, graphs: Sequence[GradGraph], labels: Sequence[str], pairs: Sequence[Diff], *,
                 verdicts: Optional[Dict[Tuple[int, int], Verdicts]] = None, kind: str = "sides",
                 ranks: Optional[Dict[str, Any]] = None) -> None:
        self.sides: Tuple[str, ...] = tuple(str(x) for x in labels)
        if len(graphs) != len(self.sides) or len(pairs) != len(self.sides) - 1:
            raise ValueError("MultiDiff: one graph per label and one pair per side besides the reference")
        self.graphs: Dict[str, GradGraph] = dict(zip(self.sides, graphs))
        self._pairs: Dict[Tuple[int, int], Diff] = {(0, k + 1): p for k, p in enumerate(pairs)}
        self._verdicts: Dict[Tuple[int, int], Verdicts] = dict(verdicts or {})
        self.kind = kind
        self.ranks = ranks
        self._regions: Dict[int, List[Dict[str, Any]]] = {}

    # -- queries --------------------------------------------------------------------------------------------------
    @property
    def reference(self) -> str:
        return self.sides[0]

    def __len__(self) -> int:
        return len(self.sides)

    def __iter__(self) -> Iterator[str]:
        return iter(self.sides)

    def __getitem__(self, label: str) -> GradGraph:
        return self.graphs[self._label(label, "d[...]")]

    def _index(self, label: Any, who: str) -> int:
        if isinstance(label, int) and not isinstance(label, bool) and 0 <= label < len(self.sides):
            return label
        if label in self.sides:
            return self.sides.index(label)
        raise KeyError(f"MultiDiff.{who}: no side {label!r}; the sides are {', '.join(map(repr, self.sides))}.")

    def _label(self, label: Any, who: str) -> str:
        return self.sides[self._index(label, who)]

    def pair(self, a: Any, b: Any) -> Diff:
        """The two-way :class:`~graphwidget.Diff` of sides ``a`` and ``b`` (labels or indices). Against the
        reference it is the one the comparison made; between two other sides it is matched now (torch-free), with
        the verdicts :func:`graphwidget.compare` measured for that pair when it did."""
        i, j = self._index(a, "pair"), self._index(b, "pair")
        if i == j:
            raise ValueError(f"MultiDiff.pair: {self.sides[i]!r} with itself; name two different sides.")
        if (i, j) not in self._pairs:
            eq, timing = self._verdicts.get((i, j), (None, None))
            self._pairs[(i, j)] = build(self.graphs[self.sides[i]], self.graphs[self.sides[j]],
                                        (self.sides[i], self.sides[j]), equivalence=eq, timing=timing)
        return self._pairs[(i, j)]

    def against(self, side: Any) -> Diff:
        """``pair(reference, side)``."""
        return self.pair(0, side)

    def counterparts(self, side: Any, node_id: int) -> Dict[str, Optional[int]]:
        """The node matched to ``node_id`` of ``side`` in every side (itself included), through the reference;
        ``None`` where a side has none."""
        k = self._index(side, "counterparts")
        if node_id not in self.graphs[self.sides[k]].nx:
            raise KeyError(f"MultiDiff.counterparts: side {self.sides[k]!r} has no node {node_id!r}.")
        ref = node_id if k == 0 else self.pair(0, k).counterpart(node_id, "b")
        out: Dict[str, Optional[int]] = {}
        for j, label in enumerate(self.sides):
            if j == k:
                out[label] = node_id
            elif ref is None:
                out[label] = None
            else:
                out[label] = ref if j == 0 else self.pair(0, j).counterpart(ref, "a")
        return out

    def regions(self, side: Any) -> List[Dict[str, Any]]:
        """The compiled regions of ``side`` and the reference nodes each covers (:func:`.fusion.regions`)."""
        k = self._index(side, "regions")
        if k == 0:
            return []
        if k not in self._regions:
            self._regions[k] = fusion.regions(self.pair(0, k))
        return self._regions[k]

    @property
    def equivalent(self) -> Optional[bool]:
        """``True`` when every side computes the reference's maths, ``False`` when one does not, ``None`` when not
        checked."""
        got = [self.pair(0, k).equivalent for k in range(1, len(self.sides))]
        if any(v is None for v in got):
            return None
        return all(got)

    # -- words ----------------------------------------------------------------------------------------------------
    def table(self) -> List[Dict[str, Any]]:
        """A row per side (the reference first), a column per verdict (:data:`COLUMNS`): ``maths`` (the words),
        ``equivalent``, ``step``/``forward``/``backward`` (``{"verdict", "ratio", "low", "high", "text"}`` against
        the reference, or ``None``), ``ms`` (the side's step time, plain runs' median), node counts against the
        reference, byte deltas and ``fused`` (compiled regions and the reference nodes they cover)."""
        rows = []
        ref_totals = None
        for k, label in enumerate(self.sides):
            g = self.graphs[label]
            if k == 0:
                row: Dict[str, Any] = {"label": label, "reference": True, "maths": "reference", "equivalent": None,
                                       "step": None, "forward": None, "backward": None,
                                       "nodes": len(g), "matched": None, "changed": None, "added": None,
                                       "removed": None, "grad_bytes": None, "saved_bytes": None, "fused": None}
                rows.append(row)
                continue
            d = self.pair(0, k)
            s = d.summary()
            ref_totals = s["a"]
            t = clean_timing(d.timing) or {}  # the records as written; the words read them typed
            band = float(t["band"]) if isinstance(t.get("band"), (int, float)) else BAND
            regs = self.regions(k)
            row = {"label": label, "reference": False, "maths": maths_text(clean_equivalence(d.equivalence),
                                                                            d.labels),
                   "equivalent": d.equivalent, "nodes": len(g), "matched": len(d.matched),
                   "changed": len(d.changed), "added": len(d.added), "removed": len(d.removed),
                   "grad_bytes": s["delta"]["grad_bytes"], "saved_bytes": s["delta"]["saved_bytes"],
                   "fused": {"regions": len(regs), "covers": sum(len(r["covers"]) for r in regs)} if regs else None,
                   "ms": s["b"].get("step_ms") if t else None}
            for phase in ("step", "forward", "backward"):
                ph = t.get(phase)
                row[phase] = ({"verdict": ph.get("verdict"), "ratio": ph.get("ratio"), "low": ph.get("low"),
                               "high": ph.get("high"), "text": cell_text(ph, band)}
                              if isinstance(ph, dict) and ph.get("ratio") is not None else None)
            rows.append(row)
        if ref_totals is not None and rows:
            rows[0]["ms"] = ref_totals.get("step_ms") if any(r.get("step") for r in rows[1:]) else None
        else:
            rows[0]["ms"] = None
        return rows

    def sentence(self) -> str:
        """The verdicts of every side against the reference in one line: ``"vs eager: refactor same maths (float32
        rounding), whole step same speed (within ±5 %); compiled same maths (float32 rounding), whole step 1.9×
        faster [1.7–2.1]"``."""
        if self.kind == "ranks" and self.ranks:
            from ..rank_words import ranks_sentence
            return ranks_sentence(self.ranks)
        parts = []
        for k in range(1, len(self.sides)):
            d = self.pair(0, k)
            bits = []
            m = maths_text(clean_equivalence(d.equivalence), d.labels)
            if m:
                bits.append(m)
            t = clean_timing(d.timing) or {}
            band = float(t["band"]) if isinstance(t.get("band"), (int, float)) else BAND
            if isinstance(t.get("step"), dict) and t["step"].get("ratio") is not None:
                bits.append("whole step " + cell_text(t["step"], band))
            bits.extend(memory_text(d.summary()))
            regs = self.regions(k)
            if regs:
                bits.append(f"{len(regs)} compiled region{'s' if len(regs) != 1 else ''} covering "
                            f"{sum(len(r['covers']) for r in regs)} of {self.reference}'s nodes")
            if not bits:
                bits.append(f"{len(d.added)} nodes only here, {len(d.removed)} only in {self.reference}, "
                            f"{len(d.changed)} changed")
            parts.append(f"{self.sides[k]} " + ", ".join(bits))
        return f"vs {self.reference}: " + "; ".join(parts)

    def headline(self) -> str:
        return f"{len(self.sides)} sides ({', '.join(self.sides)}): {self.sentence()}"

    def report(self) -> str:
        """The table as text, then each pair's report (:meth:`Diff.report`) and the compiled regions."""
        rows = self.table()
        heads = [("label", "side"), ("maths", "same maths?"), ("step", "whole step"), ("nodes", "nodes"),
                 ("added", "only here"), ("removed", "only in ref"), ("fused", "compiled")]
        cells = [[h for _, h in heads]]
        for r in rows:
            cells.append([_plain_cell(k, r.get(k)) for k, _ in heads])
        widths = [max(len(c[i]) for c in cells) for i in range(len(heads))]
        lines = [self.sentence(), ""]
        lines += ["  ".join(c[i].ljust(widths[i]) for i in range(len(heads))).rstrip() for c in cells]
        for k in range(1, len(self.sides)):
            lines += ["", f"== {self.reference} vs {self.sides[k]} ==", self.pair(0, k).report()]
            for rec in self.regions(k):
                lines.append("  " + fusion.describe(rec, self.reference))
        if self.kind == "ranks" and self.ranks:
            from ..rank_words import ranks_report
            lines += ["", ranks_report(self.ranks)]
        return "\n".join(lines)

    def __repr__(self) -> str:
        return f"<MultiDiff {self.headline()}>"

    # -- JSON -----------------------------------------------------------------------------------------------------
    def _head(self) -> Dict[str, Any]:
        pairs = []
        for k in range(1, len(self.sides)):
            entry: Dict[str, Any] = {"side": k}
            entry.update({key: v for key, v in self.pair(0, k)._head().items()
                          if key not in ("format", "version", "labels")})
            entry["regions"] = self.regions(k)
            pairs.append(entry)
        verdicts = [{"a": i, "b": j, "equivalence": eq, "timing": t}
                    for (i, j), (eq, t) in sorted(self._verdicts.items()) if i != 0]
        return {"format": schema.NWAY_FORMAT, "version": schema.NWAY_VERSION, "kind": self.kind,
                "labels": list(self.sides), "pairs": pairs, "verdicts": verdicts,
                "table": {"columns": [list(c) for c in COLUMNS], "rows": self.table()},
                "sentence": self.sentence(), "ranks": self.ranks}

    def to_dict(self) -> Dict[str, Any]:
        """The ``"graphwidget-nway"`` document as Python objects (``docs/nway.md``)."""
        out = self._head()
        # each graph in the graph format's current version (columns), as in Diff.to_dict; either version is read
        out["graphs"] = [self.graphs[x].to_dict() for x in self.sides]
        return out

    def to_json(self, indent: Optional[int] = None) -> str:
        """Serialise to the versioned ``"graphwidget-nway"`` JSON; :func:`graphwidget.load_json` reads it back."""
        if indent is not None:
            return json.dumps(self.to_dict(), indent=indent, allow_nan=False)
        with gc_paused():
            head = json.dumps(self._head(), separators=(",", ":"), allow_nan=False)
            graphs = ",".join(self.graphs[x].to_json() for x in self.sides)
            return f'{head[:-1]},"graphs":[{graphs}]}}'

    def save(self, path: Any) -> Any:
        """Write :meth:`to_json` to a file (``.json.gz``: gzip-compressed); :func:`graphwidget.load` reads it back
        as a :class:`MultiDiff`. Returns the path."""
        from ...model.writer import save_document
        return save_document(self.to_json(), path)

    @classmethod
    def from_dict(cls, data: Any, who: str = "graphwidget.load_json") -> "MultiDiff":
        """Build from the parsed document (validated: a broken file raises :class:`~graphwidget.SchemaError`
        naming what is wrong). The matchings are read, not recomputed."""
        return _from_dict(cls, data, who)

    # -- views ----------------------------------------------------------------------------------------------------
    def widget(self, **kwargs: Any) -> Any:
        """The N panes in one widget (:class:`~graphwidget.views.nway_widget.NWayWidget`): the export's N-way view,
        one pane per side side by side, a selection in one pane followed by every other (``docs/nway.md``)."""
        from ...views.nway_widget import NWayWidget
        return NWayWidget(self, **kwargs)

    def export_html(self, path: Any, **kwargs: Any) -> Any:
        """Write one self-contained HTML file with every pane (:func:`graphwidget.export_html`)."""
        from ...views.export import export_html
        return export_html(self, path, **kwargs)

    def _repr_mimebundle_(self, include: Any = None, exclude: Any = None) -> Any:
        from ...views.display import mimebundle
        from ...views.nway_view import static_nway_html
        return mimebundle(self, make_widget=self.widget, static=static_nway_html, include=include, exclude=exclude)


def cell_text(ph: Dict[str, Any], band: float = BAND) -> str:
    """One phase's verdict against the reference, short: ``"1.9× faster [1.7–2.1]"``, ``"same speed (within
    ±5 %)"``, ``"not enough evidence (×0.98 [0.91–1.06])"``."""
    r, lo, hi = ph.get("ratio"), ph.get("low"), ph.get("high")
    if not isinstance(r, (int, float)):
        return "-"
    words = decided_text(ph, band)
    if words is not None:
        return words
    if isinstance(lo, (int, float)) and isinstance(hi, (int, float)):
        return f"not enough evidence (×{r:.2f} [{lo:.2f}–{hi:.2f}])"
    return f"×{r:.2f}"


def _plain_cell(key: str, v: Any) -> str:
    if v is None:
        return "-"
    if isinstance(v, dict):
        if key == "fused":
            return f"{v['regions']} ({v['covers']} nodes)"
        return str(v.get("text") or "-")
    return str(v)


# -- making one -------------------------------------------------------------------------------------------------------
def build_multi(graphs: Sequence[GradGraph], labels: Sequence[str],
                verdicts: Optional[Dict[Tuple[int, int], Verdicts]] = None, kind: str = "sides",
                ranks: Optional[Dict[str, Any]] = None) -> MultiDiff:
    """Match every graph to ``graphs[0]`` (the reference) and keep ``verdicts[(0, k)]`` on those pairs; the rest of
    ``verdicts`` (pairs without the reference) is kept for :meth:`MultiDiff.pair`."""
    verdicts = dict(verdicts or {})
    pairs = []
    for k in range(1, len(graphs)):
        eq, timing = verdicts.pop((0, k), (None, None))
        pairs.append(build(graphs[0], graphs[k], (labels[0], labels[k]), equivalence=eq, timing=timing))
    return MultiDiff(graphs, labels, pairs, verdicts=verdicts, kind=kind, ranks=ranks)


def multi_diff(graphs: Any, labels: Optional[Sequence[str]] = None, reference: Any = None) -> MultiDiff:
    """Match N graphs you already have to one reference (torch-free): ``graphs`` a dict label -> GradGraph or a
    list (``labels`` then name them; default: the graphs' titles when unique, else ``"A"``, ``"B"``, ...);
    ``reference`` a label or index (default: the first)."""
    from .result import _check_graph
    if isinstance(graphs, dict):
        if labels is not None:
            raise ValueError("graphwidget.diff: a dict's keys are the labels; pass labels= only with a list.")
        labels, items = list(graphs), list(graphs.values())
    else:
        items = list(graphs)
        if labels is None:
            titles = [str(g.meta.get("title") or "") if isinstance(g, GradGraph) else "" for g in items]
            labels = titles if all(titles) and len(set(titles)) == len(titles) else default_labels(len(items))
    labs = list(check_sides(labels, "graphwidget.diff"))
    if len(labs) != len(items):
        raise ValueError(f"graphwidget.diff: {len(items)} graphs but {len(labs)} labels.")
    gs = [_check_graph(g, f"graph {lab!r}") for g, lab in zip(items, labs)]
    k = 0 if reference is None else _ref_index(reference, labs, "graphwidget.diff")
    order = [k] + [i for i in range(len(gs)) if i != k]
    return build_multi([gs[i] for i in order], [labs[i] for i in order])


@overload
def diff(a: GradGraph, b: GradGraph, labels: Optional[Sequence[str]] = ...) -> Diff: ...
@overload
def diff(a: Union[Mapping[str, GradGraph], List[GradGraph], Tuple[GradGraph, ...]], b: None = ...,
         labels: Optional[Sequence[str]] = ..., reference: Any = ...) -> "MultiDiff": ...
def diff(a: Any, b: Any = None, labels: Optional[Sequence[str]] = None, reference: Any = None) -> Any:
    """``gw.diff``: two graphs (``diff(a, b, labels)``: :func:`.result.diff_graphs`, a :class:`Diff`), or N graphs
    as a dict label -> GradGraph or a list (``diff({"a": g1, "b": g2, "c": g3}, reference="b")``: :func:`multi_diff`, a
    :class:`MultiDiff`). Torch-free."""
    if b is None and isinstance(a, (dict, list, tuple)):
        return multi_diff(a, labels=labels, reference=reference)
    if reference is not None:
        raise TypeError("graphwidget.diff: reference= is for N graphs (a dict or a list); two graphs are A and B.")
    return diff_graphs(a, b, labels)


diff.__doc__ = f"{diff.__doc__}\n\nTwo graphs:\n{diff_graphs.__doc__}"


def default_labels(n: int) -> List[str]:
    return [chr(ord("A") + i) if i < 26 else f"side {i}" for i in range(n)]


def _ref_index(reference: Any, labels: Sequence[str], who: str) -> int:
    if reference in labels:
        return list(labels).index(reference)
    if isinstance(reference, int) and not isinstance(reference, bool) and 0 <= reference < len(labels):
        return reference
    raise ValueError(f"{who}: reference={reference!r} is not one of the sides ({', '.join(map(repr, labels))}).")


# -- reading --------------------------------------------------------------------------------------------------------
def _from_dict(cls: type, data: Any, who: str) -> MultiDiff:
    def fail(msg: str) -> schema.SchemaError:
        return schema.SchemaError(f"{who}: {msg}")

    try:
        schema.check_format(data, schema.NWAY_FORMAT, (schema.NWAY_VERSION,), "N-way document", "N-way")
    except schema.SchemaError as exc:
        raise fail(str(exc)) from None
    labels = data.get("labels")
    graphs_doc = data.get("graphs")
    if not isinstance(graphs_doc, list) or not graphs_doc:
        raise fail("\"graphs\" must be a list of graph documents (docs/schema.md), the reference first.")
    try:
        if len(graphs_doc) == 1 and data.get("kind") == "ranks" and isinstance(labels, list) and len(labels) == 1 \
                and isinstance(labels[0], str) and labels[0]:
            labs: Tuple[str, ...] = (labels[0],)  # one rank gathered: nothing to pair
        else:
            labs = check_sides(labels, "labels")
    except ValueError as exc:
        raise fail(str(exc)) from None
    if len(labs) != len(graphs_doc):
        raise fail(f"{len(graphs_doc)} graphs but {len(labs)} labels; one label per graph.")
    graphs = []
    for k, g in enumerate(graphs_doc):
        if not isinstance(g, dict):
            raise fail(f"graphs[{k}] must be a graph document (docs/schema.md).")
        graphs.append(io.from_dict(g, who=f"{who}: graph {labs[k]!r}"))
    try:
        compare_schema.validate_nway(data, [set(g.nx.nodes) for g in graphs])
    except schema.SchemaError as exc:
        raise fail(str(exc)) from None
    from .memory import clean_measured
    # As a two-way diff read back: the verdicts are kept as written (a newer release's keys survive a round trip);
    # the words read them through clean_equivalence / clean_timing, which never trust a field's type.
    pairs = []
    for entry in sorted(data["pairs"], key=lambda e: e["side"]):
        k = entry["side"]
        summary = entry.get("summary") or {}
        p = Diff(graphs[0], graphs[k], labels=(labs[0], labs[k]), matched=[(x, y) for x, y in entry["matched"]],
                 changed=[(x, y, f) for x, y, f in entry.get("changed") or ()], removed=entry["removed"],
                 added=entry["added"], equivalence=summary.get("equivalence"), timing=summary.get("timing"))
        p.memory = clean_measured(summary.get("memory"))
        read_divergence(p, summary)
        pairs.append(p)
    verdicts = {(v["a"], v["b"]): (v.get("equivalence"), v.get("timing")) for v in data.get("verdicts") or ()}
    kind = data.get("kind") or "sides"
    ranks = data.get("ranks") if isinstance(data.get("ranks"), dict) else None
    return cls(graphs, labs, pairs, verdicts=verdicts, kind=kind, ranks=ranks)  # type: ignore[no-any-return]


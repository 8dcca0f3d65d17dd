"""The :class:`Diff` of two graphs and :func:`diff_graphs`, which makes one from two GradGraphs you already have.

A Diff holds both graphs, the node matching (:mod:`.match`), what changed on matched pairs (:mod:`.fields`) and, when
:func:`graphwidget.compare` made it, whether the two functions compute the same thing (``equivalence``) and how their
backward times compare over interleaved runs (``timing``). Its JSON form is the ``"graphwidget-diff"`` document
(``docs/diff.md``) that the diff view renders. Torch-free.
"""
from __future__ import annotations

import json
import operator
from itertools import compress
from operator import itemgetter
from typing import Any, Dict, Iterable, List, Optional, Sequence, Tuple

from ..._util.gc import gc_paused
from ...model import compare_schema, io, schema
from ...model._digraph import node_dicts
from ...model.graph import GradGraph
from ..summary import summarise
from .fields import FIELDS, changed_fields
from .match import match

TOTAL_KEYS = ("nodes", "edges", "saved_bytes", "grad_bytes", "forward_ms", "backward_ms", "step_ms")
#: The time rows a compare's timing record overrides: its plain runs' medians and the verdict's ratio.
_PHASE_KEYS = {"forward_ms": "forward", "backward_ms": "backward", "step_ms": "step"}
STATUSES = ("unchanged", "changed", "added", "removed")


class Diff:
    """Two autograd graphs matched node to node.

    >>> d = gw.diff(gw.trace(f, x), gw.trace(g, x), labels=("before", "after"))   # doctest: +SKIP
    >>> d.removed, d.added                 # ids only in A / only in B
    >>> d.changed[0]                       # (a_id, b_id, ["outputs", "grad_bytes"])
    >>> d.summary()["delta"]["grad_bytes"]

    Attributes: ``a``, ``b`` (the GradGraphs), ``labels``, ``matched`` ([(a_id, b_id)], unchanged and changed),
    ``changed`` ([(a_id, b_id, [field, ...])]), ``removed`` / ``added`` (ids), ``equivalence`` and ``timing`` (set
    by :func:`graphwidget.compare`; ``None`` for :func:`diff_graphs`).
    """

    def __init__(self, a: GradGraph, b: GradGraph, *, labels: Sequence[str] = ("A", "B"),
                 matched: Sequence[Tuple[int, int]], changed: Sequence[Tuple[int, int, List[str]]],
                 removed: Sequence[int], added: Sequence[int], equivalence: Optional[Dict[str, Any]] = None,
                 timing: Optional[Dict[str, Any]] = None) -> None:
        self.a, self.b = a, b
        self.labels: Tuple[str, str] = (str(labels[0]), str(labels[1]))
        self.matched: List[Tuple[int, int]] = [(int(x), int(y)) for x, y in matched]
        self.changed: List[Tuple[int, int, List[str]]] = [(int(x), int(y), list(f)) for x, y, f in changed]
        self.removed: List[int] = list(removed)
        self.added: List[int] = list(added)
        self.equivalence = equivalence
        self.timing = timing
        #: ``gw.compare(..., memory=True)``: ``{"peak": [a, b], "source", "measured": True}``; else None
        self.memory: Optional[Dict[str, Any]] = None
        #: the first node pair where the sides part (``gw.compare``; ``None`` when equivalent or not searched)
        self.divergence: Optional[Dict[str, Any]] = None
        #: every divergent pair in order, inherited ones marked (``[]`` when not searched)
        self.divergences: List[Dict[str, Any]] = []
        #: what could not be compared one to one (matched pairs of other shapes, leaves without a counterpart)
        self.unpaired: Optional[Dict[str, Any]] = None
        self._ab = dict(self.matched)
        self._ba = {y: x for x, y in self.matched}
        self._changed_a = {x: f for x, _, f in self.changed}
        self._totals: Optional[Tuple[Dict[str, Any], Dict[str, Any]]] = None

    # -- queries --------------------------------------------------------------------------------------------------
    @property
    def equivalent(self) -> Optional[bool]:
        """``True`` when every output and gradient of A and B matched within tolerance, ``False`` when one did not,
        ``None`` when not checked (:func:`diff_graphs` of two graphs you already had)."""
        if not self.equivalence:
            return None
        return bool(self.equivalence.get("equivalent"))

    def counterpart(self, node_id: int, side: str = "a") -> Optional[int]:
        """The id matched to ``node_id`` of ``side`` (``"a"`` or ``"b"``) on the other side, or ``None``."""
        table = self._ab if _side(side) == "a" else self._ba
        return table.get(node_id)

    def status(self, node_id: int, side: str = "a") -> str:
        """``"unchanged"``, ``"changed"``, ``"added"`` (only in B) or ``"removed"`` (only in A)."""
        s = _side(side)
        g = self.a if s == "a" else self.b
        if node_id not in g.nx:
            raise KeyError(f"Diff.status: graph {s.upper()} ({self.labels[s == 'b']!r}) has no node {node_id!r}.")
        other = self.counterpart(node_id, s)
        if other is None:
            return "removed" if s == "a" else "added"
        return "changed" if (node_id if s == "a" else other) in self._changed_a else "unchanged"

    def fields(self, a_id: int) -> List[str]:
        """The fields that differ between A's node ``a_id`` and its counterpart ([] when unchanged)."""
        return list(self._changed_a.get(a_id, []))

    def _side_totals(self) -> Tuple[Dict[str, Any], Dict[str, Any]]:
        if self._totals is None:
            self._totals = (_totals(self.a), _totals(self.b))
        return self._totals

    def summary(self) -> Dict[str, Any]:
        """``{"a", "b", "delta", "ratio"}`` over nodes, edges, saved bytes, gradient bytes, forward/backward/step
        ms (``None`` where a side was not profiled), plus ``"timing"`` (the speed verdicts of
        :func:`graphwidget.compare` with ``profile=True``; its plain runs' medians and its ratio then fill the time
        rows, so one ratio shows everywhere, and ``"interval"`` holds each such ratio's 95 % interval),
        ``"equivalence"``, ``"counts"`` (matched, changed, added, removed) and ``"sentence"`` (the verdicts in one
        line)."""
        from .verdicts import sentence
        ta, tb = (dict(t) for t in self._side_totals())
        delta, ratio, interval = {}, {}, {}
        from .verdicts import clean_timing
        phases = clean_timing(self.timing) or {}
        for k in TOTAL_KEYS:
            ph = phases.get(_PHASE_KEYS.get(k, ""))
            if isinstance(ph, dict) and isinstance(ph.get("ms"), list) and len(ph["ms"]) == 2:
                ta[k], tb[k] = ph["ms"]
            x, y = ta[k], tb[k]
            delta[k] = None if x is None or y is None else y - x
            ratio[k] = None if x is None or y is None or x == 0 else y / x
            if isinstance(ph, dict) and isinstance(ph.get("ratio"), (int, float)):
                ratio[k] = ph["ratio"]
                interval[k] = [ph.get("low"), ph.get("high")]  # a measured ratio is shown with its interval
        out: Dict[str, Any] = {"a": ta, "b": tb, "delta": delta, "ratio": ratio, "interval": interval,
                               "timing": self.timing,
               "equivalence": self.equivalence,
               "counts": {"matched": len(self.matched), "changed": len(self.changed), "added": len(self.added),
                          "removed": len(self.removed)}}
        if self.divergences or self.divergence is not None or self.unpaired is not None:
            out["divergence"] = self.divergence
            out["divergences"] = self.divergences
            out["unpaired"] = self.unpaired
        out["sentence"] = sentence(self, out)
        from .memory import memory_summary
        mem = memory_summary(self)
        if mem is not None:
            out["memory"] = mem
        return out

    def by_op(self) -> Any:
        """Per op type: nodes added/removed/changed and each side's count, times and bytes with the delta."""
        from .tables import op_key, rows
        return rows(self, op_key)

    def by_source(self) -> Any:
        """Per forward source line (leaves as ``(leaf)``): like :meth:`by_op`."""
        from .tables import rows, source_key
        return rows(self, source_key)

    def figure(self, top: int = 12) -> Any:
        """A plotly figure: backward time (when profiled) and gradient bytes per op type, A vs B."""
        from ...views.diff_figure import figure
        return figure(self, top=top)

    def report(self) -> str:
        """The summary as text: counts, the A/B table with deltas and ratios, the equivalence and timing verdicts."""
        from .report import report
        return report(self)

    def markdown(self, title: Optional[str] = None) -> str:
        """The summary as Markdown for a CI job summary or a pull-request comment: the sentence, the first
        divergence with both source lines, the A/B table, the tensors that differ (:mod:`.markdown`)."""
        from .markdown import markdown
        return markdown(self, title)

    def headline(self) -> str:
        """One line: the verdicts' sentence (:meth:`sentence`) and the counts."""
        from .report import headline
        return headline(self)

    def sentence(self) -> str:
        """The verdicts in one line a reviewer can paste into a pull request: ``"broadcast vs repeat: same maths
        (float32 rounding); whole step 3.1× faster [2.6–3.7]; backward 3.3× faster; −78 MiB gradients written"``."""
        from .verdicts import sentence
        return sentence(self)

    def __repr__(self) -> str:
        return f"<Diff {self.headline()}>"

    # -- JSON -----------------------------------------------------------------------------------------------------
    def to_dict(self) -> Dict[str, Any]:
        """The ``"graphwidget-diff"`` document as Python objects (``docs/diff.md``)."""
        out = self._head()
        # each graph as its own document, in the graph format's current version (columns: compact, fast to read);
        # graphwidget.load_json reads either version here, as in a graph file
        out["a"], out["b"] = self.a.to_dict(), self.b.to_dict()
        return out

    def _head(self) -> Dict[str, Any]:
        return {
            "format": schema.DIFF_FORMAT, "version": schema.DIFF_VERSION, "labels": list(self.labels),
            "matched": [list(p) for p in self.matched],
            "changed": [[x, y, list(f)] for x, y, f in self.changed],
            "removed": list(self.removed), "added": list(self.added),
            "summary": self.summary(),
            "changes": {"by_op": list(self.by_op()), "by_source": list(self.by_source())},
            "findings": _findings(self.a, self.b),
        }

    def to_json(self, indent: Optional[int] = None) -> str:
        """Serialise to the versioned ``"graphwidget-diff"`` JSON; :func:`graphwidget.load_json` reads it back."""
        if indent is not None:
            return json.dumps(self.to_dict(), indent=indent, allow_nan=False)
        with gc_paused():
            head = json.dumps(self._head(), separators=(",", ":"), allow_nan=False)
            # The graphs' own to_json spliced in, not re-encoded.
            return f'{head[:-1]},"a":{self.a.to_json()},"b":{self.b.to_json()}}}'

    def save(self, path: Any) -> Any:
        """Write :meth:`to_json` to a file (``.json.gz``: gzip-compressed); :func:`graphwidget.load` reads it back
        as a :class:`Diff`. Returns the path."""
        from ...model.writer import save_document
        return save_document(self.to_json(), path)

    @classmethod
    def from_dict(cls, data: Any, who: str = "graphwidget.load_json") -> "Diff":
        """Build from the parsed ``"graphwidget-diff"`` document (validated: a broken file raises
        :class:`~graphwidget.SchemaError` naming what is wrong). The matching is read, not recomputed."""
        return _from_dict(cls, data, who)

    # -- views ----------------------------------------------------------------------------------------------------
    def widget(self, **kwargs: Any) -> Any:
        """An interactive :class:`graphwidget.DiffWidget` of this diff."""
        from ...views.diff_widget import DiffWidget
        return DiffWidget(self, **kwargs)

    def export_html(self, path: Any, **kwargs: Any) -> Any:
        """Write the self-contained HTML diff view; see :func:`graphwidget.export_html`."""
        from ...views.export import export_html
        return export_html(self, path, **kwargs)

    def export_chrome_trace(self, path: Any) -> Any:
        """Write both sides' measured times into one Chrome trace, one process per side (``gw.compare(...,
        profile=True)``); see :func:`graphwidget.views.chrome_trace.export_chrome_trace`."""
        from ...views.chrome_trace import export_chrome_trace
        return export_chrome_trace(self, path)

    def _repr_mimebundle_(self, include: Any = None, exclude: Any = None) -> Any:
        from ...views.diff_payload import static_diff_html
        from ...views.display import mimebundle
        return mimebundle(self, make_widget=self.widget, static=static_diff_html, include=include, exclude=exclude)


def _side(side: str) -> str:
    if side not in ("a", "b"):
        raise ValueError(f"side must be 'a' or 'b', not {side!r}.")
    return side


def _findings(a: GradGraph, b: GradGraph) -> Optional[Dict[str, Any]]:
    """The advisor's findings of both sides for the diff view: ``{"a", "b", "resolved"}``, or ``None`` when neither
    graph was advised. A side never advised is ``None`` (not ``[]``: "not looked" is not "nothing found"), and
    ``resolved`` (indices into ``a`` of the findings B no longer has) is only filled when both sides were advised,
    so a B that was never advised does not make every finding of A look fixed."""
    fa, fb = a.findings, b.findings
    if not fa and not fb:
        return None if fa is None and fb is None else {"a": fa, "b": fb, "resolved": []}
    from ..advisor import resolved  # torch-free; imported here so the diff does not load the rules up front
    gone: List[int] = []
    if fa and fb is not None:
        gone = [i for i, f in enumerate(fa) if resolved([f], fb)]
    return {"a": fa, "b": fb, "resolved": gone}


def _totals(g: GradGraph) -> Dict[str, Any]:
    s = summarise(g)
    t = g.meta.get("timing") or {}
    fwd, bwd = t.get("forward_ms"), t.get("backward_ms")
    return {"nodes": s["nodes"], "edges": s["edges"], "saved_bytes": s["saved_bytes"], "grad_bytes": s["grad_bytes"],
            "forward_ms": fwd, "backward_ms": bwd, "step_ms": None if fwd is None or bwd is None else fwd + bwd}


_KINDS = ("a GradGraph (from gw.capture / gw.trace / gw.profile / gw.load_json)")


def _check_graph(obj: Any, which: str) -> GradGraph:
    if isinstance(obj, GradGraph):
        return obj
    if isinstance(obj, Diff):
        raise TypeError(f"graphwidget.diff: {which} is already a Diff; diff two graphs (d.a, d.b are its graphs).")
    if isinstance(obj, (str, bytes, dict)):
        raise TypeError(f"graphwidget.diff: {which} is {type(obj).__name__}; read it first with gw.load_json(...) "
                        f"and pass the GradGraph.")
    hint = ""
    if type(obj).__module__.startswith("torch"):
        hint = " Capture it first: gw.capture(loss), or compare two functions with gw.compare(fn_a, fn_b, *args)."
    raise TypeError(f"graphwidget.diff expects two graphs, {_KINDS}; {which} is {type(obj).__name__}.{hint}")


def check_labels(labels: Any, who: str) -> Tuple[str, str]:
    """Two non-empty strings, or a clear error."""
    if isinstance(labels, str) or not isinstance(labels, (list, tuple)) or len(labels) != 2 \
            or not all(isinstance(x, str) and x for x in labels):
        raise ValueError(f"{who}: labels must be two non-empty strings, e.g. labels=('before', 'after'); "
                         f"got {labels!r:.80}.")
    return labels[0], labels[1]


def diff_graphs(a: GradGraph, b: GradGraph, labels: Optional[Sequence[str]] = None) -> Diff:
    """Match two graphs you already have (captured, traced, profiled or read with ``load_json``) node to node.

    ``labels`` name the sides (default: the graphs' titles when both have different ones, else ``"A"``/``"B"``).
    The matching is automatic and deterministic (``docs/diff.md``). Works without torch. ``equivalence`` and
    ``timing`` are ``None``: to check that two functions compute the same thing and time them fairly
    (interleaved), use :func:`graphwidget.compare`.

    >>> import torch, graphwidget as gw
    >>> x = torch.randn(4, 3, requires_grad=True)
    >>> d = gw.diff(gw.capture(x.exp().sum()), gw.capture((x.exp() * 2).sum()))
    >>> [d.b.node(i)["op"] for i in d.added]
    ['MulBackward0']
    """
    ga, gb = _check_graph(a, "a"), _check_graph(b, "b")
    if labels is None:
        ta, tb = ga.meta.get("title"), gb.meta.get("title")
        labels = (ta, tb) if ta and tb and ta != tb else ("A", "B")
    labels = check_labels(labels, "graphwidget.diff")
    return build(ga, gb, labels)


def build(ga: GradGraph, gb: GradGraph, labels: Sequence[str], equivalence: Optional[Dict[str, Any]] = None,
          timing: Optional[Dict[str, Any]] = None) -> Diff:
    """Match and compare the fields of matched pairs (what :func:`diff_graphs` and :func:`graphwidget.compare`
    share)."""
    with gc_paused():  # 100k's of small tuples and lists, no cycles: the collector's passes would cost seconds
        return _build(ga, gb, labels, equivalence, timing)


def _build(ga: GradGraph, gb: GradGraph, labels: Sequence[str], equivalence: Optional[Dict[str, Any]],
           timing: Optional[Dict[str, Any]]) -> Diff:
    m = match(ga, gb)
    na, nb = node_dicts(ga.nx), node_dicts(gb.nx)
    matched = m.pairs
    changed = []
    for x, y in _differing(matched, na, nb):
        f = changed_fields(na[x], nb[y])
        if f:
            changed.append((x, y, f))
    d = Diff(ga, gb, labels=labels, matched=matched, changed=changed, removed=m.removed, added=m.added,
             equivalence=equivalence, timing=timing)
    d._phases = m.phases()  # type: ignore[attr-defined]  # how each pair was found (docs, tests)
    return d


_COMPARED = itemgetter(*FIELDS)


def _differing(matched: List[Tuple[int, int]], na: Dict[int, Dict[str, Any]],
               nb: Dict[int, Dict[str, Any]]) -> Iterable[Tuple[int, int]]:
    """The matched pairs whose compared fields are not all equal as they are (the only ones
    :func:`~.fields.changed_fields` can find a change in), picked by the interpreter's own loops: most pairs of a
    big diff are identical, and a Python call per pair cost more than the rest of building the Diff."""
    try:
        same = map(operator.eq, map(_COMPARED, map(na.__getitem__, map(itemgetter(0), matched))),
                   map(_COMPARED, map(nb.__getitem__, map(itemgetter(1), matched))))
        return list(compress(matched, map(operator.not_, same)))
    except KeyError:  # records without every field (built by hand): look at every pair
        return matched


# -- reading --------------------------------------------------------------------------------------------------------
def _from_dict(cls: type, data: Any, who: str) -> Diff:
    def fail(msg: str) -> schema.SchemaError:
        return schema.SchemaError(f"{who}: {msg}")

    try:
        schema.check_format(data, schema.DIFF_FORMAT, (schema.DIFF_VERSION,), "diff", "diff")
        labels = check_labels(data.get("labels", ["A", "B"]), "labels")
    except ValueError as exc:  # SchemaError is one
        raise fail(str(exc)) from None
    graphs = []
    for side in ("a", "b"):
        if not isinstance(data.get(side), dict):
            raise fail(f"\"{side}\" must be a graph document (docs/schema.md).")
        graphs.append(io.from_dict(data[side], who=f"{who}: graph {side!r}"))
    ga, gb = graphs
    try:
        compare_schema.validate_diff(data, set(ga.nx.nodes), set(gb.nx.nodes))
    except schema.SchemaError as exc:
        raise fail(str(exc)) from None
    summary: Dict[str, Any] = data.get("summary") or {}
    # The verdicts are kept as written (a newer release's keys survive a round trip); the words read them through
    # verdicts.clean_equivalence / clean_timing, which never trust a field's type.
    d = cls(ga, gb, labels=labels, matched=[(x, y) for x, y in data["matched"]],
            changed=[(x, y, f) for x, y, f in data.get("changed") or ()], removed=data["removed"],
            added=data["added"], equivalence=summary.get("equivalence"), timing=summary.get("timing"))
    from .memory import clean_measured
    d.memory = clean_measured(summary.get("memory"))
    read_divergence(d, summary)
    return d


def read_divergence(d: Diff, summary: Dict[str, Any]) -> None:
    """A document's ``summary.divergence`` / ``divergences`` / ``unpaired`` back onto ``d`` (validated as plain
    JSON; absent in older documents)."""
    div, rows, unpaired = summary.get("divergence"), summary.get("divergences"), summary.get("unpaired")
    d.divergence = div if isinstance(div, dict) else None
    d.divergences = [r for r in rows if isinstance(r, dict)] if isinstance(rows, list) else []
    d.unpaired = unpaired if isinstance(unpaired, dict) else None

"""The rewrite advisor: known slow patterns in an autograd graph, each tied to the forward line that causes it, with
the rewrite and the numbers that prove it.

>>> fs = gw.advise(g)            # or g.advise(); captured, traced, profiled and load_json'd graphs alike
>>> print(fs[0])                 # doctest: +SKIP
warning repeat-broadcast homography.py:54: `h = homo.unsqueeze(1).repeat(1, W * H, 1, 1)` materialises ...

One module per rule (:data:`RULES`, in the order they run). A rule that explains nodes *claims* them, so one root
cause gives one finding: the seed's repeat is one ``repeat-broadcast`` finding with its 24 selects, not a repeat
finding plus an ``index-repeated`` one. ``memory-layout`` measures (it needs torch; without torch it is skipped);
every other rule reads only the graph, so it works on a ``load_json``'d graph without torch. The bar is no false
alarms: a rule reports only what it can prove from the graph (or measure), and stays silent when unsure.
"""
from __future__ import annotations

import importlib
import sys
from typing import Any, Dict, Iterable, List, Mapping, Optional, Sequence, Tuple, Union

from .context import Context
from .finding import Finding, short_source

__all__ = ["advise", "resolved", "format_findings", "print_findings", "Finding", "RULES", "DEFAULT_MIN_SHARE"]

#: Rule id -> module, in the order the rules run (earlier rules claim nodes first).
RULES: Dict[str, str] = {
    "repeat-broadcast": "repeat_broadcast",
    "materialised-expand": "materialised_expand",
    "loop-built": "loop_built",
    "index-repeated": "index_repeated",
    "dtype-upcast": "dtype_upcast",
    "memory-layout": "memory_layout",
    "saved-view-storage": "saved_view_storage",
    "checkpoint-candidate": "checkpoint_candidate",
}
#: Findings below this share of the graph's cost (backward time when profiled, else bytes/nodes) are hidden.
DEFAULT_MIN_SHARE = 0.01
_SEVERITY_RANK = {"warning": 0, "info": 1}


def _rule_module(rule: str) -> Any:
    return importlib.import_module(f".{RULES[rule]}", __name__)


def _check_rules(rules: Optional[Iterable[str]]) -> List[str]:
    if rules is None:
        return list(RULES)
    if isinstance(rules, str):
        rules = [rules]
    try:
        chosen = list(rules)
    except TypeError:
        raise TypeError(f"advise(rules=...) takes a list of rule ids, e.g. rules=['repeat-broadcast']; got "
                        f"{type(rules).__name__}.") from None
    unknown = [r for r in chosen if r not in RULES]
    if unknown:
        raise ValueError(f"advise: unknown rule {unknown[0]!r}; the rules are {', '.join(RULES)}.")
    return [r for r in RULES if r in chosen]  # run order is fixed: claims must not depend on how they were listed


def _sort_key(f: Finding) -> Tuple[int, float, float]:
    ev = f.evidence
    cost = ev.get("waste_bytes") or ev.get("grad_bytes") or ev.get("bytes") or 0
    return (_SEVERITY_RANK.get(f.severity, 2), -(f.share or 0.0), -float(cost))


def advise(graph: Any, rules: Optional[Sequence[str]] = None, min_share: Optional[float] = None) -> List[Finding]:
    """The findings for ``graph`` (a :class:`graphwidget.GradGraph`), most costly first, and stores them on the graph
    (``graph.findings``, as JSON-ready dicts) so they travel with its JSON, widget and HTML export.

    ``rules`` chooses rules by id (:data:`RULES`; default all). ``min_share`` hides findings that account for less
    than this fraction of the graph's cost — measured backward time when the graph was profiled, otherwise the
    gradient bytes (or nodes, or saved bytes) the rule counts — default :data:`DEFAULT_MIN_SHARE`. Order: warnings
    before infos, then by that share, then by bytes.

    >>> [f.rule for f in gw.advise(gw.trace(ex.homography_repeat, **ex.homography_inputs()))]   # doctest: +SKIP
    ['repeat-broadcast']
    """
    from ...model.graph import GradGraph
    if not isinstance(graph, GradGraph):
        raise TypeError(f"advise expects a GradGraph (from gw.capture, gw.trace, gw.profile or gw.load_json); got "
                        f"{type(graph).__name__}. For a tensor, capture it first: gw.advise(gw.trace(fn, *args)).")
    chosen = _check_rules(rules)
    if min_share is None:
        min_share = DEFAULT_MIN_SHARE
    if isinstance(min_share, bool) or not isinstance(min_share, (int, float)) or not 0 <= min_share < 1:
        raise ValueError(f"advise(min_share=...) is a fraction in [0, 1), e.g. 0.02 for 2 %; got {min_share!r}.")
    from ..._util.gc import gc_paused
    with gc_paused():
        ctx = Context(graph)
        found: List[Finding] = []
        for rule in chosen:
            found.extend(_rule_module(rule).find(ctx))
    kept = [f for f in found if f.share is None or f.share >= min_share]
    kept.sort(key=_sort_key)
    graph.findings = [f.to_dict() for f in kept]
    return kept


FindingLike = Union[Finding, Mapping[str, Any]]


def _as_finding(f: FindingLike) -> Finding:
    return f if isinstance(f, Finding) else Finding.from_dict(f)


def _file_of(source: Optional[str]) -> Optional[str]:
    return source.rpartition(":")[0] if source and ":" in source else source


def _same(a: Finding, b: Finding) -> bool:
    if a.rule != b.rule:
        return False
    if a.source is not None or b.source is not None:
        if a.source == b.source:
            return True
        # the same line moved (code above it changed): same file, same text
        code_a, code_b = (a.code or "").strip(), (b.code or "").strip()
        return bool(code_a) and code_a == code_b and _file_of(a.source) == _file_of(b.source)
    # graphs captured without source lines: the cause's op and tensor shape
    return (a.evidence.get("op"), a.evidence.get("shape")) == (b.evidence.get("op"), b.evidence.get("shape"))


def resolved(findings_a: Iterable[FindingLike], findings_b: Iterable[FindingLike]) -> List[Finding]:
    """Findings of A that B no longer has: what a rewrite fixed (the diff shows them as resolved).

    Two findings are the same when they have the same rule and the same source line, or the same rule, file and
    code text (a line that only moved). Without source lines (``gw.capture``) the rule, the cause's op and its
    tensor shape decide. Accepts :class:`Finding` objects or their dicts (``graph.findings``).

    >>> resolved(gw.advise(slow), gw.advise(fast))      # doctest: +SKIP
    [Finding(rule='repeat-broadcast', ...)]
    """
    a = [_as_finding(f) for f in findings_a]
    b = [_as_finding(f) for f in findings_b]
    return [f for f in a if not any(_same(f, g) for g in b)]


def _evidence_text(f: Finding) -> str:
    from ..._util.text import human_bytes
    ev = f.evidence
    parts = []
    if ev.get("waste_bytes"):
        parts.append(f"~{human_bytes(ev['waste_bytes'])} avoidable")
    if ev.get("grad_bytes"):
        parts.append(f"{human_bytes(ev['grad_bytes'])} of gradients")
    if ev.get("ms") is not None and ev.get("alt_ms") is not None:
        parts.append(f"{ev['ms']:.3g} ms as captured vs {ev['alt_ms']:.3g} ms {ev.get('alternative', '')}".strip())
    if ev.get("bwd_ms") is not None:
        share = ev.get("share_of_backward")
        parts.append(f"{ev['bwd_ms']:.3g} ms of backward" + (f" ({share:.0%})" if share is not None else ""))
    return ", ".join(parts)


def format_findings(findings: Iterable[FindingLike], title: Optional[str] = None) -> str:
    """Findings as text, one block each (severity, rule, line; message; fix; evidence) — what the demo and
    ``%gradgraph --advise`` print. "No findings." when there are none."""
    fs = [_as_finding(f) for f in findings]
    lines = [title] if title else []
    if not fs:
        lines.append("  No findings." if title else "No findings.")
        return "\n".join(lines)
    for i, f in enumerate(fs, 1):
        where = short_source(f.source) + (f" [{f.module}]" if f.module else "")
        lines.append(f"{i}. {f.severity} {f.rule} at {where}")
        if f.code:
            lines.append(f"     {f.code.strip()}")
        lines.append(f"   {f.message}")
        if f.suggestion:
            lines.append(f"   fix: {f.suggestion}")
        ev = _evidence_text(f)
        if ev:
            lines.append(f"   evidence: {ev}")
    return "\n".join(lines)


def print_findings(graph_or_findings: Any, file: Any = None) -> None:
    """Print :func:`format_findings` of a graph's findings (computing them with :func:`advise` when the graph has
    none yet) or of a list of findings."""
    from ...model.graph import GradGraph
    if isinstance(graph_or_findings, GradGraph):
        g = graph_or_findings
        fs: Iterable[FindingLike] = g.findings if g.findings is not None else advise(g)
        title = f"findings for {g.meta.get('title')!r}:" if g.meta.get("title") else "findings:"
    else:
        fs, title = graph_or_findings, None
    print(format_findings(fs, title), file=file if file is not None else sys.stdout)

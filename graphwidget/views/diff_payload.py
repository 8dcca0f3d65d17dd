"""What the diff view receives (the ``"graphwidget-diff"`` document as the binary payload of :mod:`.packed`: both
graphs as typed columns) and the static HTML that stands in for it where widgets do not run (GitHub, nbviewer,
nbconvert). Loads neither anywidget nor torch."""
from __future__ import annotations

import html
from dataclasses import dataclass
from typing import Any, List, Tuple

from .._util.text import human_bytes
from ..model import io, schema
from .packed import pack
from .payload import COLOUR_METRICS, available_metrics, default_colour

_WHAT = ("a Diff (from gw.diff / gw.compare / gw.load_json), its to_dict() or its JSON text")


@dataclass(frozen=True)
class DiffPayload:
    """A diff as it travels (the gzip-compressed binary payload), and what Python needs to check selections and
    colours."""

    data: bytes
    labels: Tuple[str, str]
    ids_a: frozenset
    ids_b: frozenset
    metrics: Tuple[str, ...]

    def gzipped(self) -> bytes:
        """The payload (gzip-compressed; the same diff gives the same bytes)."""
        return self.data

    @property
    def default_colour(self) -> str:
        return default_colour(self.metrics)


def as_diff(obj: Any, caller: str) -> Any:
    """A :class:`~graphwidget.Diff` from a Diff, a diff document dict or its JSON text; anything else is refused
    with what to pass instead."""
    from ..analysis.diff import Diff
    if isinstance(obj, Diff):
        return obj
    if isinstance(obj, (str, bytes, bytearray)):
        obj = io.parse(obj, who=caller)
    if isinstance(obj, dict) and obj.get("format") == schema.DIFF_FORMAT:
        return Diff.from_dict(obj, who=caller)
    if isinstance(obj, dict) and obj.get("format") == schema.FORMAT or hasattr(obj, "nx"):
        raise TypeError(f"{caller}: this is one graph, not a diff; show it with gw.GraphWidget(g), or diff two "
                        f"graphs first: gw.diff(g1, g2).")
    raise TypeError(f"{caller} expects {_WHAT}; got {type(obj).__name__}.")


def is_diff(obj: Any) -> bool:
    """True for a Diff or a diff document (dict); JSON text is looked at only for its ``format`` value."""
    from ..analysis.diff import Diff
    if isinstance(obj, Diff):
        return True
    if isinstance(obj, dict):
        return obj.get("format") == schema.DIFF_FORMAT
    if isinstance(obj, (str, bytes, bytearray)):
        head = obj[:400] if isinstance(obj, str) else bytes(obj[:400]).decode("utf-8", "replace")
        return '"format":"graphwidget-diff"' in "".join(head.split())
    return False


def diff_payload(obj: Any, caller: str = "DiffWidget") -> DiffPayload:
    d = as_diff(obj, caller)
    nodes = list(d.a.nx._node.values()) + list(d.b.nx._node.values())
    have = set(available_metrics(d.a.nx._node.values())) & set(available_metrics(d.b.nx._node.values()))
    metrics = tuple(m for m in COLOUR_METRICS if m in have) or available_metrics(nodes)
    # the document's head (matching, summary, changes, findings) as Diff.to_json writes it, the graphs packed
    data = pack(d._head(), {"a": d.a, "b": d.b})
    return DiffPayload(data, d.labels, frozenset(d.a.nx.nodes), frozenset(d.b.nx.nodes), metrics)


def _fmt(key: str, v: Any, signed: bool = False) -> str:
    if v is None:
        return "-"
    if key.endswith("bytes"):
        return ("+" if signed and v > 0 else "") + human_bytes(v)
    if isinstance(v, float):
        return f"{v:+.2f}" if signed else f"{v:.2f}"
    return f"{v:+d}" if signed else str(v)


def _ratio(v: Any) -> str:
    return "-" if v is None else f"x{v:.2f}"


def static_diff_html(d: Any, top: int = 8) -> str:
    """A self-contained HTML summary of a diff: the verdicts, the A/B table with deltas and ratios, and the op types
    that changed most. Every string from the diff (labels, op names) is escaped."""
    from ..analysis.diff.report import equivalence_text, timing_text
    s = d.summary()
    la, lb = (html.escape(x) for x in d.labels)
    rows = [("nodes", "nodes"), ("edges", "edges"), ("saved_bytes", "saved for backward"),
            ("grad_bytes", "gradients written"), ("forward_ms", "forward ms"), ("backward_ms", "backward ms"),
            ("step_ms", "step ms")]
    body = "".join(
        f"<tr><th style='text-align:left'>{name}</th><td>{_fmt(k, s['a'][k])}</td><td>{_fmt(k, s['b'][k])}</td>"
        f"<td>{_fmt(k, s['delta'][k], True)}</td><td>{_ratio(s['ratio'][k])}</td></tr>" for k, name in rows)
    verdicts: List[str] = [f"<p style='font-weight:bold'>{html.escape(s['sentence'])}</p>"]
    eq = equivalence_text(d)
    if eq:
        style = "color:#b00020;font-weight:bold" if d.equivalent is False else "color:#1b7f3b"
        verdicts.append(f"<p style='{style}'>{html.escape(eq)}</p>")
    tt = timing_text(d)
    if tt:
        verdicts.append(f"<pre>{html.escape(tt)}</pre>")
    ops = "".join(
        f"<tr><td>{html.escape(r['key'])}</td><td>{r['a']['count']}</td><td>{r['b']['count']}</td>"
        f"<td>{len(r['added'])}</td><td>{len(r['removed'])}</td><td>{len(r['changed'])}</td>"
        f"<td>{_fmt('grad_bytes', r['delta']['grad_bytes'], True)}</td></tr>" for r in list(d.by_op())[:top])
    c = s["counts"]
    return (f"<div class='graphwidget-static graphwidget-diff-static'><b>graphwidget diff: {la} vs {lb}</b>"
            f"<p>{c['matched']} nodes matched ({c['changed']} changed), {c['removed']} only in {la}, "
            f"{c['added']} only in {lb}</p>{''.join(verdicts)}"
            f"<table><thead><tr><th></th><th>{la}</th><th>{lb}</th><th>delta</th><th>ratio</th></tr></thead>"
            f"<tbody>{body}</tbody></table>"
            f"<table><thead><tr><th>op</th><th>{la}</th><th>{lb}</th><th>added</th><th>removed</th><th>changed</th>"
            f"<th>grad bytes delta</th></tr></thead><tbody>{ops}</tbody></table>"
            f"<small>Run the notebook with widgets enabled to explore both graphs side by side.</small></div>")

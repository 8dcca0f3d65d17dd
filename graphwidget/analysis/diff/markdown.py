"""A diff as Markdown, fit for a CI job summary (``$GITHUB_STEP_SUMMARY``) or a pull-request comment: the verdicts'
sentence, the first divergence with both source lines, the A/B table, the tensors that differ, and where the two
sides were recorded. ``python -m graphwidget compare ... --markdown summary.md`` writes it. Torch-free."""
from __future__ import annotations

from typing import TYPE_CHECKING, Any, List, Optional

from .report import _ROWS, _cell, recording_notes
from .verdicts import clean_equivalence, sentence

if TYPE_CHECKING:  # pragma: no cover
    from .result import Diff

#: Rows of the table of tensors that differ, at most.
MAX_TENSORS = 10


def cell(v: Any) -> str:
    """Text safe inside a Markdown table cell: no line breaks, pipes escaped."""
    return str(v).replace("\r", " ").replace("\n", " ").replace("|", "\\|")


def code(v: Any) -> str:
    """Inline code that survives backticks in the text."""
    s = cell(v)
    return f"`` {s} ``" if "`" in s else f"`{s}`"


def _num(v: Any) -> str:
    return "-" if not isinstance(v, (int, float)) or isinstance(v, bool) else f"{v:.2g}"


def divergence_lines(d: "Diff") -> List[str]:
    """The first divergence (``d.divergence``, when the comparison found one): where, and both source lines."""
    div = getattr(d, "divergence", None)
    if not isinstance(div, dict):
        return []
    la, lb = d.labels
    phase = div.get("phase")
    where = f" ({phase})" if phase else ""
    op = div.get("op")
    lines = [f"**First divergence{where}:** {code(op) if op else 'a node'}"
             f"{' in ' + code(div.get('module_a')) if div.get('module_a') else ''}", "",
             f"| | {cell(la)} | {cell(lb)} |", "|---|---|---|"]
    for key, name in (("source", "source"), ("module", "module"), ("code", "code")):
        x, y = div.get(f"{key}_a"), div.get(f"{key}_b")
        if x or y:
            lines.append(f"| {name} | {code(x) if x else '-'} | {code(y) if y else '-'} |")
    lines.append(f"| node | {cell(div.get('a'))} | {cell(div.get('b'))} |")
    lines.append("")
    lines.append(f"Relative difference {_num(div.get('rel'))}; rounding explains {_num(div.get('rounding'))}.")
    return lines


def table_lines(d: "Diff") -> List[str]:
    """The A/B table of the summary: nodes, edges, bytes, times, with the delta and the ratio."""
    la, lb = d.labels
    s = d.summary()
    lines = [f"| | {cell(la)} | {cell(lb)} | delta | ratio |", "|---|---:|---:|---:|---:|"]
    for key, name in _ROWS:
        if key.endswith("_ms") and s["a"].get(key) is None and s["b"].get(key) is None:
            continue
        ratio = s["ratio"].get(key)
        iv = (s.get("interval") or {}).get(key)
        shown = "-" if ratio is None else f"×{ratio:.2f}"
        if iv and None not in iv:
            shown += f" [{iv[0]:.2f}–{iv[1]:.2f}]"
        lines.append(f"| {name} | {_cell(key, s['a'].get(key))} | {_cell(key, s['b'].get(key))} | "
                     f"{_cell(key, s['delta'].get(key), True)} | {shown} |")
    return lines


def tensor_lines(d: "Diff") -> List[str]:
    """The outputs and gradients that differ beyond rounding (at most :data:`MAX_TENSORS`)."""
    eq = clean_equivalence(d.equivalence)
    if not eq:
        return []
    bad = [t for t in eq["tensors"] if not t.get("allclose")]
    if not bad:
        return []
    la, lb = d.labels
    lines = [f"**{len(bad)} of {len(eq['tensors'])} tensors differ beyond rounding:**", "",
             f"| tensor | {cell(la)} vs {cell(lb)} | in float64 | rounding explains | note |",
             "|---|---:|---:|---:|---|"]
    for t in bad[:MAX_TENSORS]:
        lines.append(f"| {code(t.get('name'))} | {_num(t.get('max_rel'))} | {_num(t.get('ref_diff'))} | "
                     f"{_num(t.get('tol'))} | {cell(t.get('note') or '')} |")
    if len(bad) > MAX_TENSORS:
        lines.append(f"| … {len(bad) - MAX_TENSORS} more | | | | |")
    return lines


def provenance_lines(d: "Diff") -> List[str]:
    """Where each recorded side was made (torch, graphwidget, Python, device, dtype, machine), in a fold."""
    rec = (d.equivalence or {}).get("recordings") if isinstance(d.equivalence, dict) else None
    if not isinstance(rec, dict) or not all(isinstance(rec.get(k), dict) for k in ("A", "B")):
        return []
    a, b = rec["A"], rec["B"]
    la, lb = d.labels
    lines = ["<details><summary>where the two sides were recorded</summary>", "",
             f"| | {cell(la)} | {cell(lb)} |", "|---|---|---|"]
    for key in ("file", "torch", "graphwidget", "python", "device", "device_name", "dtype", "machine", "created",
                "inputs"):
        x, y = a.get(key), b.get(key)
        if x is None and y is None:
            continue
        if key == "inputs":
            x, y = (str(v)[:16] + "…" if v else v for v in (x, y))
        lines.append(f"| {key} | {cell(x if x is not None else '-')} | {cell(y if y is not None else '-')} |")
    lines += ["", "</details>"]
    return lines


def markdown(d: "Diff", title: Optional[str] = None) -> str:
    """The whole summary (module docstring); ``title`` heads it (default: "graphwidget compare: B vs A")."""
    la, lb = d.labels
    verdict = {True: "✅ same maths", False: "❌ NOT EQUIVALENT", None: "graph diff"}[d.equivalent]
    out: List[str] = [f"### {cell(title or f'graphwidget compare: {lb} vs {la}')}", "",
                      f"**{verdict}** — {cell(sentence(d))}", ""]
    for part in (divergence_lines(d), tensor_lines(d)):
        if part:
            out += part + [""]
    out += [f"{len(d.matched)} nodes matched ({len(d.changed)} changed), {len(d.removed)} only in {cell(la)}, "
            f"{len(d.added)} only in {cell(lb)}.", ""]
    out += table_lines(d) + [""]
    notes = recording_notes(d)
    if notes:
        out += [f"- note: {cell(n)}" for n in notes] + [""]
    prov = provenance_lines(d)
    if prov:
        out += prov + [""]
    return "\n".join(out)


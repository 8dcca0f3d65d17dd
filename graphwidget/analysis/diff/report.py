"""A diff's summary as words: the one-line headline and the text report (what the CLI, the demo and ``%gradcompare``
print). The words follow the numbers: a timing whose interval contains 1 reads "no measurable difference", and a
maths-changing rewrite is said first and in capitals."""
from __future__ import annotations

from typing import TYPE_CHECKING, Any, Dict, List, Optional

from ..._util.text import human_bytes

if TYPE_CHECKING:  # pragma: no cover
    from .result import Diff

_ROWS = (("nodes", "nodes"), ("edges", "edges"), ("saved_bytes", "saved for backward"),
         ("grad_bytes", "gradients written"), ("forward_ms", "forward ms"), ("backward_ms", "backward ms"))


def equivalence_text(d: "Diff") -> Optional[str]:
    """"outputs and gradients match (...)" / "NOT EQUIVALENT: ..." / None when not checked."""
    eq = d.equivalence
    if not eq:
        return None
    tensors: List[Dict[str, Any]] = eq.get("tensors") or []
    if eq.get("equivalent"):
        worst = max((t.get("max_rel") or 0.0 for t in tensors), default=0.0)
        return (f"outputs and gradients match: {len(tensors)} tensors, largest relative error {worst:.1e} "
                f"(within tolerance)")
    bad = [t for t in tensors if not t.get("allclose")]
    parts = []
    for t in bad[:4]:
        if t.get("shape_a") != t.get("shape_b"):
            parts.append(f"{t['name']}: shape {t.get('shape_a')} vs {t.get('shape_b')}")
        elif t.get("note"):
            parts.append(f"{t['name']}: {t['note']}")
        else:
            parts.append(f"{t['name']}: max abs error {_num(t.get('max_abs'))}, max rel {_num(t.get('max_rel'))}")
    more = f" (+{len(bad) - 4} more)" if len(bad) > 4 else ""
    return "NOT EQUIVALENT, the maths changed: " + "; ".join(parts) + more


def timing_text(d: "Diff") -> Optional[str]:
    """The backward verdict with its interval, or None when not timed on interleaved runs."""
    t = d.timing
    if not t or t.get("ratio") is None:
        return None
    la, lb = d.labels
    r, lo, hi = t["ratio"], t["low"], t["high"]
    spread = f"{lb}/{la} = {r:.2f} (95% interval {lo:.2f}-{hi:.2f}, {t.get('runs')} interleaved runs)"
    verdict = t.get("verdict")
    if verdict == "B faster":
        return f"backward: {lb} is {1 / r:.1f}x faster than {la}: {spread}"
    if verdict == "B slower":
        return f"backward: {lb} is {r:.1f}x slower than {la}: {spread}"
    return f"backward: no measurable difference between {la} and {lb}: {spread}"


def headline(d: "Diff") -> str:
    la, lb = d.labels
    line = (f"{la!r} vs {lb!r}: {len(d.matched)} matched ({len(d.changed)} changed), {len(d.removed)} only in "
            f"{la}, {len(d.added)} only in {lb}")
    if d.equivalent is False:
        line += "; NOT EQUIVALENT"
    elif d.equivalent:
        line += "; outputs and gradients match"
    t = d.timing
    if t and t.get("ratio") is not None:
        line += f"; backward {lb}/{la} {t['ratio']:.2f} [{t['low']:.2f}, {t['high']:.2f}]"
    return line


def _num(v: Any) -> str:
    return "-" if v is None else f"{v:.3g}"


def _cell(key: str, v: Any, signed: bool = False) -> str:
    if v is None:
        return "-"
    if key.endswith("_bytes"):
        return ("+" if signed and v > 0 else "") + human_bytes(v)
    if key.endswith("_ms"):
        return f"{v:+.2f}" if signed else f"{v:.2f}"
    return f"{v:+d}" if signed else str(v)


def report(d: "Diff") -> str:
    la, lb = d.labels
    s = d.summary()
    lines = []
    eq = equivalence_text(d)
    if d.equivalent is False:
        lines.append(f"!! {eq}")
    lines.append(f"diff {la!r} vs {lb!r}: {len(d.matched)} nodes matched ({len(d.changed)} of them changed), "
                 f"{len(d.removed)} only in {la}, {len(d.added)} only in {lb}")
    w = max(12, len(la) + 2, len(lb) + 2)
    lines.append(f"  {'':<20}{la:>{w}}{lb:>{w}}{'delta':>{w}}{'ratio':>9}")
    for key, name in _ROWS:
        ratio = s["ratio"][key]
        lines.append(f"  {name:<20}{_cell(key, s['a'][key]):>{w}}{_cell(key, s['b'][key]):>{w}}"
                     f"{_cell(key, s['delta'][key], True):>{w}}{'-' if ratio is None else f'x{ratio:.2f}':>9}")
    if eq and d.equivalent:
        lines.append(eq)
    tt = timing_text(d)
    if tt:
        lines.append(tt)
    return "\n".join(lines)

"""A diff's summary as words: the one-line headline and the text report (what the CLI, the demo and ``%gradcompare``
print). Both lead with the verdicts' sentence (:func:`.verdicts.sentence`); the words follow the numbers, and a
maths-changing rewrite is said first and in capitals. Time rows show the plain runs' medians and the one ratio the
verdict uses (the median over interleaved rounds of B's time over A's)."""
from __future__ import annotations

from typing import TYPE_CHECKING, Any, Dict, List, Optional

from ..._util.text import human_bytes
from .verdicts import BAND, clean_equivalence, clean_timing, labelled, phase_text, sentence

if TYPE_CHECKING:  # pragma: no cover
    from .result import Diff

_ROWS = (("nodes", "nodes"), ("edges", "edges"), ("saved_bytes", "saved for backward"),
         ("grad_bytes", "gradients written"), ("forward_ms", "forward ms"), ("backward_ms", "backward ms"),
         ("step_ms", "step ms"))


def equivalence_text(d: "Diff") -> Optional[str]:
    """"same maths within float32 rounding (...)" / "NOT EQUIVALENT: ..." / None when not checked."""
    eq = clean_equivalence(d.equivalence)
    if not eq:
        return None
    tensors: List[Dict[str, Any]] = eq["tensors"]
    la, lb = d.labels
    if eq.get("equivalent"):
        zero = eq.get("near_zero") or 0
        zero_text = f"; {zero} of them zero up to rounding" if zero else ""
        if eq.get("method") == "float64":
            ab, rounding = eq.get("ab"), eq.get("rounding")
            absolute = f", {_num(eq['ab_abs'])} absolute" if eq.get("ab_abs") is not None else ""
            figures = (f"{la} vs {lb} differ by {_num(ab)} relative to each tensor's largest value{absolute}; "
                       f"each side's own float32-vs-float64 rounding up to {_num(rounding)} relative"
                       if ab is not None else
                       "every value is zero up to rounding")
            return (f"same maths within {eq.get('precision') or 'floating-point'} rounding ({figures}; "
                    f"{len(tensors)} tensors, checked against float64 runs{zero_text})")
        worst = max((t.get("max_rel") or 0.0 for t in tensors), default=0.0)
        return (f"outputs and gradients match within a fixed tolerance: {len(tensors)} tensors, largest relative "
                f"difference {worst:.1e} (no float64 reference: {eq.get('fallback_reason') or 'not run'})")
    bad = [t for t in tensors if not t.get("allclose")]
    parts = []
    for t in bad[:4]:
        if t.get("only") in ("A", "B"):
            side = la if t["only"] == "A" else lb
            parts.append(f"{t['name'].replace('grad ', '', 1)}: gradient only in {side}")
        elif t.get("shape_a") != t.get("shape_b"):
            parts.append(f"{t['name']}: shape {t.get('shape_a')} vs {t.get('shape_b')}")
        elif t.get("ref_diff") is not None:
            parts.append(f"{t['name']}: {la} vs {lb} {_num(t.get('max_rel'))}, in float64 {_num(t.get('ref_diff'))}"
                         f" (rounding explains {_num(t.get('tol'))})")
        elif t.get("note"):
            parts.append(f"{t['name']}: {t['note']}")
        else:
            parts.append(f"{t['name']}: max abs error {_num(t.get('max_abs'))}, max rel {_num(t.get('max_rel'))}")
    more = f" (+{len(bad) - 4} more)" if len(bad) > 4 else ""
    return "NOT EQUIVALENT, the maths changed: " + "; ".join(parts) + more


def mutation_text(d: "Diff") -> Optional[str]:
    """What a side changed in place while it ran (compare put it back before the other side ran)."""
    m = (clean_equivalence(d.equivalence) or {}).get("mutated") or {}
    parts = [f"{d.labels[0] if side == 'A' else d.labels[1]} changes {', '.join(names[:5])} in place"
             for side, names in sorted(m.items()) if names]
    return ("note: " + "; ".join(parts) + " (each side ran on the original values)") if parts else None


def timing_text(d: "Diff") -> Optional[str]:
    """The speed verdicts, phase by phase, with how they were measured; None when not timed."""
    t = clean_timing(d.timing)
    if not t or t.get("ratio") is None:
        return None
    la, lb = d.labels
    band = float(t["band"]) if isinstance(t.get("band"), (int, float)) else BAND
    if not isinstance(t.get("step"), dict):  # a diff written before the verdicts had phases
        return f"backward: {t.get('verdict')}: {lb}/{la} = {t['ratio']:.2f} [{t['low']:.2f}-{t['high']:.2f}]"
    how = (f"ratio of the medians of each recording's own plain runs (not interleaved: {t.get('rounds')} or more "
           f"each; wider intervals)" if t.get("order") == "not interleaved" else
           f"median of {t.get('rounds')} interleaved rounds")
    lines = [f"speed: {labelled(t['step'].get('verdict', ''), lb, band)} (whole step); "
             f"{lb}/{la} by {t.get('clock')}, {how}, 95% intervals, "
             f"same speed = within ±{band * 100:g} %; sampling stopped: {t.get('stopped')}"]
    for phase in ("step", "forward", "backward"):
        text = phase_text(phase, t.get(phase) or {}, band)
        if text:
            ph = t[phase]
            lines.append(f"  {text}  ({lb}/{la} {ph['ratio']:.3g} [{ph['low']:.3g}-{ph['high']:.3g}])")
    if t.get("per_node"):
        lines.append(f"  per-node times: {t['per_node'].get('rounds')} separate instrumented rounds (hooks on every "
                     f"node), not used for the verdicts")
    return "\n".join(lines)


def recording_notes(d: "Diff") -> List[str]:
    """What a comparison of recordings (``gw.compare(rec_a, rec_b)``) notes about where they come from: other
    torch or graphwidget versions, machines, parameters that differ, why speed was not compared."""
    rec = (d.equivalence or {}).get("recordings") if isinstance(d.equivalence, dict) else None
    notes = rec.get("notes") if isinstance(rec, dict) else None
    return [str(n) for n in notes] if isinstance(notes, list) else []


def headline(d: "Diff") -> str:
    """The sentence, then the counts."""
    la, lb = d.labels
    return (f"{sentence(d)} — {len(d.matched)} nodes matched ({len(d.changed)} changed), {len(d.removed)} only in "
            f"{la}, {len(d.added)} only in {lb}")


def _num(v: Any) -> str:
    return "-" if v is None else f"{v:.2g}"


def _cell(key: str, v: Any, signed: bool = False) -> str:
    if v is None:
        return "-"
    if key.endswith("_bytes"):
        return ("+" if signed and v > 0 else "") + human_bytes(v)
    if key.endswith("_ms"):
        return f"{v:+.3g}" if signed else f"{v:.3g}"
    return f"{v:+d}" if signed else str(v)


def report(d: "Diff") -> str:
    la, lb = d.labels
    s = d.summary()
    lines = [sentence(d)]
    eq = equivalence_text(d)
    if d.equivalent is False:
        lines.append(f"!! {eq}")
    lines.append(f"diff {la!r} vs {lb!r}: {len(d.matched)} nodes matched ({len(d.changed)} of them changed), "
                 f"{len(d.removed)} only in {la}, {len(d.added)} only in {lb}")
    w = max(12, len(la) + 2, len(lb) + 2)
    lines.append(f"  {'':<20}{la:>{w}}{lb:>{w}}{'delta':>{w}}  ratio")
    for key, name in _ROWS:
        if key == "step_ms" and s["a"].get(key) is None:
            continue
        ratio = s["ratio"][key]
        iv = s.get("interval", {}).get(key)
        shown = "-" if ratio is None else f"x{ratio:.2f}"
        if iv and None not in iv:  # a measured ratio never without its interval
            shown += f" [{iv[0]:.2f}-{iv[1]:.2f}]"
        lines.append(f"  {name:<20}{_cell(key, s['a'][key]):>{w}}{_cell(key, s['b'][key]):>{w}}"
                     f"{_cell(key, s['delta'][key], True):>{w}}  {shown}")
    if eq and d.equivalent:
        lines.append(eq)
    mut = mutation_text(d)
    if mut:
        lines.append(mut)
    lines.extend(f"note: {n}" for n in recording_notes(d))
    tt = timing_text(d)
    if tt:
        lines.append(tt)
    from .memory import memory_text
    mt = memory_text(d, s.get("memory"))
    if mt:
        lines.append(mt)
    return "\n".join(lines)

"""The two verdicts of a comparison in words: "same maths?" and "faster?" (torch-free; ``docs/diff.md``).

Speed is judged on the ratio ``B/A`` of one phase (forward, backward, or the whole step) and its 95 % interval, with
a band of practical equivalence (default ±5 %):

- ``"faster"`` / ``"slower"``: the interval lies wholly below / above 1 and the ratio itself is outside the band
  (B is measurably and meaningfully faster or slower);
- ``"same speed"``: the whole interval lies inside the band (any difference is smaller than the band);
- ``"not enough evidence"``: anything else (the interval straddles 1, or a band edge): more runs would tell.

:func:`sentence` is the one line a reviewer can paste into a pull request; every surface (the report's first line,
the diff view's strip, the command line, the plain-text display) leads with it.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any, Dict, List, Optional

from ..._util.text import human_bytes

if TYPE_CHECKING:  # pragma: no cover
    from .result import Diff

FASTER, SLOWER, SAME, UNCLEAR = "faster", "slower", "same speed", "not enough evidence"
SPEED_VERDICTS = (FASTER, SLOWER, SAME, UNCLEAR)
#: Default band of practical equivalence: within ±5 % is "the same speed".
BAND = 0.05
PHASES = ("step", "forward", "backward")
_PHASE_WORDS = {"step": "whole step", "forward": "forward", "backward": "backward"}


def speed_verdict(ratio: float, low: float, high: float, band: float = BAND) -> str:
    """One of :data:`SPEED_VERDICTS` for a ratio B/A and its interval (module docstring)."""
    lo_edge, hi_edge = 1.0 / (1.0 + band), 1.0 + band
    if lo_edge < low and high < hi_edge:
        return SAME
    # A claim of a factor (2x or more) whose interval is wider than the claim (its ends further apart than the
    # claimed factor: "30x [2-100]") does not support that factor. Below 2x the claim is a direction, which the
    # interval's side of 1 and the band decide.
    claim = max(ratio, 1 / ratio) if ratio > 0 else 0.0
    wide = low > 0 and claim >= 2.0 and high / low > claim
    if high < 1.0 and ratio <= lo_edge and not wide:
        return FASTER
    if low > 1.0 and ratio >= hi_edge and not wide:
        return SLOWER
    return UNCLEAR


def labelled(verdict: str, label_b: str, band: float = BAND) -> str:
    """``"broadcast faster"``, ``"same speed within ±5 %"``, ``"not enough evidence"``: the side named by label."""
    if verdict in (FASTER, SLOWER):
        return f"{label_b} {verdict}"
    if verdict == SAME:
        return f"same speed within ±{band * 100:g} %"
    return verdict


def factor(x: float) -> str:
    """``3.1`` / ``1.08``: two significant digits below 2, one decimal above."""
    return f"{x:.2f}" if x < 1.995 else f"{x:.1f}"


def phase_text(name: str, t: Dict[str, Any], band: float = BAND) -> Optional[str]:
    """``"whole step 3.1× faster [2.6–3.7]"``: one phase of a timing record in words (``None`` when absent)."""
    if not isinstance(t, dict) or t.get("ratio") is None:
        return None
    r, lo, hi = t["ratio"], t.get("low"), t.get("high")
    what = _PHASE_WORDS.get(name, name)
    words = decided_text(t, band)
    if words is not None:
        return f"{what} {words}{_throughput(t)}{_other_clock(t)}"
    if lo is not None and hi is not None:
        return f"{what}: not enough evidence (B/A {r:.2f} [{lo:.2f}–{hi:.2f}])"
    return None


def _throughput(t: Dict[str, Any]) -> str:
    """``" (fastest call 0.05 vs 1.5 ms: 2e+04 vs 667 calls/s)"``, A then B, when the record has them."""
    fast, rate = t.get("fastest_ms"), t.get("calls_per_s")
    if not (isinstance(fast, list) and len(fast) == 2 and isinstance(rate, list) and len(rate) == 2
            and all(isinstance(v, (int, float)) for v in fast + rate)):
        return ""
    return f" (fastest call A {fast[0]:.3g} ms, B {fast[1]:.3g} ms: {rate[0]:.3g} vs {rate[1]:.3g} calls/s)"


def _other_clock(t: Dict[str, Any]) -> str:
    """What the other clock read, when the record says the clocks disagreed."""
    o = t.get("wall") if isinstance(t.get("wall"), dict) else None
    if not t.get("clocks_disagree") or not o or not all(isinstance(o.get(k), (int, float)) and o.get(k)
                                                        for k in ("ratio", "low", "high")):
        return ""
    return (f"; CPU time, as the clocks disagree: the wall clock read B/A {o['ratio']:.3g} "
            f"[{o['low']:.3g}–{o['high']:.3g}]")


def decided_text(t: Dict[str, Any], band: float = BAND) -> Optional[str]:
    """A decided speed verdict of a timing record's phase, short: ``"3.1× faster [2.6–3.7]"``, ``"1.2× slower
    [1.1–1.3]"``, ``"same speed (within ±5 %)"``; ``None`` when it is not decided."""
    r, lo, hi, v = t.get("ratio"), t.get("low"), t.get("high"), t.get("verdict")
    if not isinstance(r, (int, float)):
        return None
    if v == FASTER and r > 0 and lo and hi:
        return f"{factor(1 / r)}× faster [{factor(1 / hi)}–{factor(1 / lo)}]"
    if v == SLOWER and lo and hi:
        return f"{factor(r)}× slower [{factor(lo)}–{factor(hi)}]"
    if v == SAME:
        return f"same speed (within ±{band * 100:g} %)"
    return None


def _short(source: Any) -> Optional[str]:
    """``model.py:88`` of a node's ``source`` (``/home/me/pkg/model.py:88``)."""
    if not isinstance(source, str) or not source:
        return None
    return source.replace("\\", "/").rsplit("/", 1)[-1]


def divergence_text(div: Any, labels: Any = ("A", "B")) -> Optional[str]:
    """Where the sides part, in words: ``"first differs at model.py:88 (SoftmaxBackward0, blocks.2.attn)"``,
    ``"parameter blocks.3.fc.weight differs"``, ``"gradient path cut at model.py:40 (AddBackward0, layers.2): B
    does not differentiate through input 0 (.detach(), .data or no_grad?)"``; ``None`` without a divergence record
    (:func:`graphwidget.experiment.divergence.find_divergence`'s form)."""
    if not isinstance(div, dict):
        return None
    if div.get("kind") == "parameter":
        na, nb = div.get("name_a"), div.get("name_b")
        name = na if not nb or nb == na else f"{na} (B: {nb})"
        return f"parameter {name} differs"
    src = _short(div.get("source_b")) or _short(div.get("source_a"))
    module = div.get("module_b") or div.get("module_a")
    what = ", ".join(str(x) for x in (div.get("op_b") or div.get("op"), module) if x)
    where = f"{src} ({what})" if src else f"node {div.get('a')}/{div.get('b')} ({what})"
    cut = div.get("cut")
    if isinstance(cut, dict):
        side = labels[1] if cut.get("side") == "B" else labels[0]
        return (f"gradient path cut at {where}: {side} does not differentiate through input {cut.get('slot')} "
                f"(.detach(), .data or no_grad?)")
    if div.get("phase") == "backward":
        return f"first gradient differs at {where}"
    return f"first differs at {where}"


def maths_text(eq: Optional[Dict[str, Any]], labels: Any = ("A", "B"), divergence: Any = None) -> Optional[str]:
    """``"same maths (float32 rounding)"`` / ``"NOT EQUIVALENT, the maths changed (fc1.weight: gradient only in
    A); first differs at model.py:88 (SoftmaxBackward0, blocks.2.attn)"`` (the last part from ``divergence``,
    when given) / ``None`` when not checked."""
    if not eq:
        return None
    base = _maths(eq, labels)
    where = divergence_text(divergence, labels) if not eq.get("equivalent") else None
    return f"{base}; {where}" if where else base


def _maths(eq: Dict[str, Any], labels: Any) -> str:
    # a side recorded without a backward (gw.record): the verdict covers the outputs only, and says so
    only = f", outputs only: no gradients ({eq['outputs_only']})" if eq.get("outputs_only") else ""
    if eq.get("equivalent"):
        lone = [str(t.get("name")).replace("grad ", "", 1) for t in eq.get("tensors") or [] if t.get("unpaired")]
        extra = (f"; {len(lone)} gradients not paired one to one: {', '.join(lone[:3])}"
                 f"{', ...' if len(lone) > 3 else ''}") if lone else ""
        if eq.get("method") == "float64":
            return f"same maths ({eq.get('precision') or 'float'} rounding{extra}{only})"
        return f"same maths (fixed tolerance: no float64 reference{extra}{only})"
    bad = [t for t in eq.get("tensors") or [] if not t.get("allclose")]
    if not bad:
        return f"NOT EQUIVALENT, the maths changed{f' ({only[2:]})' if only else ''}"
    return (f"NOT EQUIVALENT, the maths changed ({_why(bad[0], labels)}" + _others(bad[1:], labels) + f"{only})")


def _others(rest: List[Dict[str, Any]], labels: Any) -> str:
    """The other failing tensors, named: those with no gradient (or value) on one side all of them, since that is
    the key fact; the rest by name, up to six."""
    if not rest:
        return ""
    parts = []
    for side, mine, other in (("A", labels[0], labels[1]), ("B", labels[1], labels[0])):
        names = [str(t.get("name")).replace("grad ", "", 1) for t in rest if t.get("only") == side]
        if names:
            parts.append(f"also only in {mine}, none in {other}: {', '.join(names)}")
    other = [str(t.get("name")) for t in rest if t.get("only") not in ("A", "B")]
    if other:
        parts.append("also differ: " + ", ".join(other[:6]) + (f" and {len(other) - 6} more" if len(other) > 6 else ""))
    return "; " + "; ".join(parts)


def _why(t: Dict[str, Any], labels: Any) -> str:
    name = str(t.get("name"))
    note = str(t.get("note") or "")
    if t.get("only") in ("A", "B"):
        side = labels[0] if t["only"] == "A" else labels[1]
        what = "gradient" if t.get("kind") == "gradient" else "value"
        return f"{name.replace('grad ', '', 1)}: {what} only in {side}"
    if note.startswith("shapes differ"):
        return f"{name}: {note}"
    if t.get("ref_diff") is not None:
        absolute = f" ({t['ref_diff_abs']:.3g} absolute)" if t.get("ref_diff_abs") is not None else ""
        return (f"{name} differs in float64 by {t['ref_diff']:.2g} relative to its largest value{absolute}, "
                f"rounding explains {t.get('tol') or 0:.2g} relative")
    if t.get("max_rel") is not None:
        absolute = f" ({t['max_abs']:.3g} absolute)" if t.get("max_abs") is not None else ""
        return (f"{name} differs by {t['max_rel']:.2g} relative to its largest value{absolute} "
                f"(relative tolerance {t.get('tol') or 0:.2g})")
    return f"{name}: {note}" if note else name


def memory_text(s: Dict[str, Any]) -> List[str]:
    """``["−78 MiB gradients written"]``: the byte deltas of a diff's summary worth saying (at least 1 % and
    1 KiB)."""
    out = []
    for key, words in (("grad_bytes", "gradients written"), ("saved_bytes", "saved for backward")):
        a, delta = s["a"].get(key), s["delta"].get(key)
        if a is None or delta is None or abs(delta) < 1024 or (a and abs(delta) < 0.01 * a):
            continue
        sign = "−" if delta < 0 else "+"
        out.append(f"{sign}{human_bytes(abs(delta))} {words}")
    return out


def sentence(d: "Diff", summary: Optional[Dict[str, Any]] = None) -> str:
    """The one line: ``"broadcast vs repeat: same maths (float32 rounding); whole step 3.1× faster [2.6–3.7];
    backward 3.3× faster; −78 MiB gradients written"`` (``summary``: the diff's, when already computed)."""
    la, lb = d.labels
    parts: List[str] = []
    maths = maths_text(clean_equivalence(d.equivalence), d.labels, getattr(d, "divergence", None))
    if maths:
        parts.append(maths)
    t = clean_timing(d.timing) or {}
    band = t.get("band", BAND) if isinstance(t.get("band"), (int, float)) else BAND
    for phase in ("step", "backward"):
        text = phase_text(phase, t.get(phase) or {}, band)
        if text:
            parts.append(text + (" (not interleaved)" if t.get("order") == "not interleaved" else ""))
    parts.extend(memory_text(summary if summary is not None else d.summary()))
    if not parts:
        parts.append(f"{len(d.removed)} nodes only in {la}, {len(d.added)} only in {lb}, {len(d.changed)} changed")
    return f"{lb} vs {la}: " + "; ".join(parts)


# -- documents read back ---------------------------------------------------------------------------------------------
_NUM = (int, float)


def _clean(d: Dict[str, Any], spec: Dict[str, Any]) -> Dict[str, Any]:
    """``d`` keeping only the keys of ``spec`` whose value is null or has the type it gives (``True`` is not a
    number here)."""
    out = {}
    for k, v in d.items():
        want = spec.get(k)
        if want is None or (isinstance(v, bool) and want is not bool):
            continue
        if v is None or isinstance(v, want):
            out[k] = v
    return out


_ROW = {"name": str, "kind": str, "allclose": bool, "max_abs": _NUM, "max_rel": _NUM, "rounding": _NUM,
        "ref_diff": _NUM, "tol": _NUM, "near_zero": bool, "shape_a": list, "shape_b": list, "dtype_a": str,
        "dtype_b": str, "note": str, "only": str, "unpaired": bool, "ref_diff_abs": _NUM, "tol_abs": _NUM,
        "scale": _NUM}
_EQ = {"equivalent": bool, "method": str, "precision": str, "reference_precision": str, "fallback_reason": str,
       "ab": _NUM, "rounding": _NUM, "near_zero": int, "outputs_only": str, "ab_abs": _NUM}
_PHASE = {"ratio": _NUM, "low": _NUM, "high": _NUM, "verdict": str, "ms": list, "wall": dict, "cpu": dict,
          "fastest_ms": list, "calls_per_s": list, "clocks_disagree": bool}
_TIMING = {"ratio": _NUM, "low": _NUM, "high": _NUM, "runs": int, "rounds": int, "verdict": str, "clock": str,
           "clock_why": str, "threads": int, "threads_why": str, "band": _NUM, "level": _NUM, "stopped": str,
           "inner": int, "budget_s": _NUM, "seconds": _NUM, "order": str, "instrumented": bool,
           "per_node": dict, "clocks_disagree": bool}


def clean_equivalence(eq: Any) -> Optional[Dict[str, Any]]:
    """An ``equivalence`` record as the words read it: every field they use of the type they need, wrongly typed
    ones dropped (a document is validated only as plain JSON; a hostile file must not crash ``report()``). The
    record itself is left as written."""
    if not isinstance(eq, dict):
        return None
    out = _clean(eq, _EQ)
    rows = eq.get("tensors")
    out["tensors"] = [_clean(r, _ROW) for r in rows if isinstance(r, dict)] if isinstance(rows, list) else []
    for r in out["tensors"]:
        r.setdefault("name", "?")
        r.setdefault("allclose", False)
    m = eq.get("mutated")
    out["mutated"] = {k: [str(x) for x in v] for k, v in m.items() if isinstance(v, list)} if isinstance(m, dict) \
        else {}
    out.setdefault("equivalent", all(r["allclose"] for r in out["tensors"]))
    return out


def clean_timing(t: Any) -> Optional[Dict[str, Any]]:
    """A ``timing`` record read from a file, cleaned like :func:`clean_equivalence`."""
    if not isinstance(t, dict):
        return None
    out = _clean(t, _TIMING)
    for phase in PHASES:
        ph = t.get(phase)
        if isinstance(ph, dict):
            c = _clean(ph, _PHASE)
            if "ms" in c and not (len(c["ms"]) == 2 and all(isinstance(x, _NUM) for x in c["ms"])):
                del c["ms"]
            out[phase] = c
    if not all(isinstance(out.get(k), _NUM) for k in ("ratio", "low", "high")):
        for k in ("ratio", "low", "high"):
            out.pop(k, None)
    return out

"""The demo on the built-in examples: ``python -m graphwidget demo`` (what ``make demo`` runs).

It tells the seed story end to end with :func:`graphwidget.compare`: the ``repeat`` and broadcast versions of the
homography warp compute the same thing (checked: outputs and gradients), their graphs (node counts mislead: the repeat
version has fewer nodes, or about as many on torch < 2.5, which records every full slice), the sizes that tell the
truth, the backward times measured interleaved with their interval, and what the matching says changed. It writes
``out/demo.html`` (the two graphs side by side, offline) and the per-graph viewers and JSON.

Its words follow its numbers: the speed verdicts come from the intervals of plain interleaved runs (``docs/diff.md``),
so a loaded machine that blurs the difference gets "not enough evidence", never a speed-up.
"""
from __future__ import annotations

import math
from collections import Counter
from pathlib import Path
from typing import Any, Dict, List, Optional

from .._util.text import human_bytes as _human_bytes
from ..examples import homography as ex
from ..model.graph import GradGraph

LABELS = ("repeat", "broadcast")
TITLES = {"repeat": "homography (repeat)", "broadcast": "homography (broadcast)"}


def _biggest_nodes(g: GradGraph, k: int = 3) -> List[str]:
    """The k nodes with the largest forward output (elements x dtype size), one line each."""
    rows = []
    for n, d in g.nx.nodes(data=True):
        outs = [o for o in d.get("outputs") or () if o]
        if not outs:
            continue
        rows.append((math.prod(outs[0]["shape"]), n, d, outs[0]))
    rows.sort(key=lambda r: -r[0])
    lines = []
    for _, n, d, out in rows[:k]:
        where = f"  ({d['code']})" if d.get("code") else ""
        lines.append(f"    #{n:<3} {d['op']:<24} output {tuple(out['shape'])}{where}")
    return lines


def describe(name: str, g: GradGraph) -> str:
    """A short text report of one graph."""
    s = g.summary()
    lines = [f"{name}: {s['nodes']} nodes, {s['edges']} edges, depth {s['depth']}, "
             f"saved for backward {_human_bytes(s['saved_bytes'])} "
             f"({_human_bytes(s['saved_bytes_logical'])} as views), "
             f"gradients written in backward {_human_bytes(s['grad_bytes'])}"]
    top = ", ".join(f"{op} x{c}" for op, c in list(s["ops"].items())[:4])
    lines.append(f"    ops: {top}")
    if s.get("backward_ms") is not None:
        lines.append(f"    per-node timing (instrumented runs, hooks on every node): forward {s['forward_ms']:.2f} ms, "
                     f"backward {s['backward_ms']:.2f} ms")
    lines.append("    largest tensors flowing:")
    lines += _biggest_nodes(g)
    if g.meta.get("timed"):
        lines.append("    slowest in backward:")
        lines += _slowest_nodes(g)
    return "\n".join(lines)


def _slowest_nodes(g: GradGraph, k: int = 3) -> List[str]:
    """The k nodes with the largest measured backward time, one line each."""
    timed = [(d["bwd_ms"], n, d) for n, d in g.nx.nodes(data=True) if d.get("bwd_ms") is not None]
    timed.sort(key=lambda r: -r[0])
    return [f"    #{n:<3} {d['op']:<24} {ms:7.2f} ms  writes {_human_bytes(d.get('grad_bytes') or 0)}"
            for ms, n, d in timed[:k]]


def timing_sentence(d: Any) -> Optional[str]:
    """The speed lines of the story: each phase's verdict with both sides' times (None when not timed)."""
    from ..analysis.diff.verdicts import phase_text
    t = d.timing
    if not t or not isinstance(t.get("step"), dict):
        return None
    la, lb = d.labels
    lines = [f"measured ({t['rounds']} interleaved rounds of plain runs, {t['clock']} time, {t['threads']} "
             f"thread{'s' if t['threads'] != 1 else ''}):"]
    for phase in ("step", "forward", "backward"):
        ph = t[phase]
        lines.append(f"    {phase_text(phase, ph, t['band'])}: {la} {ph['ms'][0]:.2f} ms, {lb} {ph['ms'][1]:.2f} ms")
    if t["step"]["verdict"] == "faster":
        lines.append("    -> measured times tell the truth: the version with more nodes is the faster one")
    elif t["step"]["verdict"] == "not enough evidence":
        lines.append("    -> this machine is too noisy right now to tell them apart; the bytes above do not depend "
                     "on load")
    return "\n".join(lines)


def _ops(g: GradGraph, ids: List[int]) -> str:
    c = Counter(g.node(i)["op"] for i in ids)
    return ", ".join(f"{op} x{n}" if n > 1 else op for op, n in sorted(c.items(), key=lambda kv: (-kv[1], kv[0])))


def _step(text: str) -> None:
    """Say what starts now, at once (as ``make`` does): the steps take seconds each."""
    print(f"== {text}", flush=True)


def run_demo(out: Optional[Path], profile: bool = True, repeat: int = 5,
             inputs: Optional[Dict[str, Any]] = None, core_hint: bool = False) -> Dict[str, Any]:
    """Run the demo; print the report; write ``demo.html`` (the diff) and the per-graph viewers into ``out`` (if
    given). ``profile``: time both sides (plain interleaved runs for the verdicts, ``repeat`` instrumented rounds for
    per-node times). ``inputs``: the homography inputs (default :func:`~graphwidget.examples.homography_inputs`).
    ``core_hint``: end by saying how to build the compiled core when it is not built. Each step is printed as it
    starts. Returns what it made."""
    print("graphwidget demo: the slow-`repeat` backward from a user report\n", flush=True)
    _step("running both versions of the homography warp: same outputs and gradients? (checked against float64 runs)"
          + (", then timing them in interleaved rounds" if profile else ""))
    from ..analysis.diff.report import equivalence_text
    from ..experiment.compare import compare_two
    inp = inputs if inputs is not None else ex.homography_inputs()
    d = compare_two(ex.homography_repeat, ex.homography_broadcast, **inp, labels=LABELS, profile=profile,
                    repeat=repeat, advise=False)
    a, b = d.a, d.b
    graphs = {TITLES["repeat"]: a, TITLES["broadcast"]: b}
    for g, label in ((a, "repeat"), (b, "broadcast")):
        g.meta["title"] = TITLES[label]
    print()
    for title, g in graphs.items():
        print(describe(title, g))
        print()
    s = d.summary()
    sa, sb = s["a"], s["b"]
    print(d.sentence() + "\n")
    print(f"same maths? {equivalence_text(d)}")
    print(f"node counts: repeat {sa['nodes']} vs broadcast {sb['nodes']}  <- counts mislead")
    print(f"gradient bytes written in backward: repeat {_human_bytes(sa['grad_bytes'])} vs broadcast "
          f"{_human_bytes(sb['grad_bytes'])} (x{sa['grad_bytes'] / max(sb['grad_bytes'], 1):.1f})  <- sizes tell")
    sentence = timing_sentence(d)
    if sentence:
        print(sentence)
    print(f"\nmatched node to node: {len(d.matched)} pairs ({len(d.changed)} changed), only in repeat: "
          f"{_ops(a, d.removed)}; only in broadcast: {_ops(b, d.added)}")
    print("biggest changes by op type (gradient bytes written, repeat -> broadcast):")
    for r in list(d.by_op())[:3]:
        print(f"    {r['key']:<22} {_human_bytes(r['a']['grad_bytes']):>10} -> {_human_bytes(r['b']['grad_bytes']):>10}"
              f"   ({r['a']['count']} -> {r['b']['count']} nodes)")
    from ..analysis.advisor import print_findings
    print(flush=True)
    _step("running the advisor on both graphs")
    print("what the advisor says (the findings travel into the exports):")
    for g in (a, b):
        g.advise()
        print_findings(g)
    written: List[Path] = []
    if out is not None:
        print(flush=True)
        _step(f"writing the offline viewers into {out}")
        out.mkdir(parents=True, exist_ok=True)
        from ..views.export import export_html
        path = export_html(d, out / "demo.html", title="homography: repeat vs broadcast")
        written.append(Path(path))
        print(f"wrote {path}  (both graphs side by side, matched node to node; open it in any browser, offline)")
        for title, g in graphs.items():
            slug = title.split("(")[1].rstrip(")")
            path = export_html(g, out / f"homography_{slug}.html", title=title)
            written.append(Path(path))
            print(f"wrote {path}")
        if a.meta.get("timed"):
            # Charts inline plotly.js (megabytes), so only this one report carries them.
            path = export_html(a, out / "homography_repeat_report.html", title="homography (repeat): report",
                               charts=[a.figure("time"), a.figure("memory"), d.figure()])
            written.append(Path(path))
            print(f"wrote {path}  (with plotly charts, also offline)")
        for title, g in graphs.items():
            slug = title.split("(")[1].rstrip(")")
            p = out / f"homography_{slug}.json"
            p.write_text(g.to_json())
            written.append(p)
        p = out / "demo_diff.json"
        p.write_text(d.to_json())
        written.append(p)
    if core_hint:
        from ..capturing import native
        if not native.available():
            print("== the demo ran without the optional compiled core (faster capture of big graphs): "
                  "`python -m graphwidget build-native` (or make native) builds it, a few minutes once")
    return {"graphs": graphs, "diff": d, "written": written}

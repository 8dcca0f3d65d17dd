"""The demo on the built-in examples: ``python -m graphwidget demo`` (what ``make demo`` runs).

It tells the seed story end to end: the ``repeat`` and broadcast versions of the homography warp, their graphs
(node counts mislead: the repeat version has fewer nodes), the sizes that tell the truth, measured backward times,
and offline HTML viewers written to ``--out``.
"""
from __future__ import annotations

import math
from pathlib import Path
from typing import Any, Dict, List, Optional

from . import homography as ex
from .._util.text import human_bytes as _human_bytes
from ..model.graph import GradGraph


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
    for numel, n, d, out in rows[:k]:
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
    if "backward_ms" in s and s["backward_ms"] is not None:
        lines.append(f"    measured: forward {s['forward_ms']:.2f} ms, backward {s['backward_ms']:.2f} ms")
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


def _graphs(profile: bool) -> Dict[str, GradGraph]:
    from ..attribution import trace
    graphs: Dict[str, GradGraph] = {}
    for title, fn in (("homography (repeat)", ex.homography_repeat),
                      ("homography (broadcast)", ex.homography_broadcast)):
        inputs = ex.homography_inputs()
        if profile:
            try:
                from ..profile import profile as run_profile
            except ImportError:  # timing not available in this build
                run_profile = None
            if run_profile is not None:
                graphs[title] = run_profile(fn, repeat=5, warmup=1, title=title, **inputs)
                continue
        graphs[title] = trace(fn, title=title, **inputs)
    return graphs


def run_demo(out: Optional[Path], profile: bool = True) -> Dict[str, Any]:
    """Run the demo; print the report; write HTML viewers into ``out`` (if given). Returns what it made."""
    graphs = _graphs(profile)
    print("graphwidget demo: the slow-`repeat` backward from a user report\n")
    for title, g in graphs.items():
        print(describe(title, g))
        print()
    a, b = graphs["homography (repeat)"], graphs["homography (broadcast)"]
    sa, sb = a.summary(), b.summary()
    print(f"node counts: repeat {sa['nodes']} vs broadcast {sb['nodes']}  <- counts mislead")
    print(f"gradient bytes written in backward: repeat {_human_bytes(sa['grad_bytes'])} vs broadcast "
          f"{_human_bytes(sb['grad_bytes'])} (x{sa['grad_bytes'] / max(sb['grad_bytes'], 1):.1f})  <- sizes tell")
    if sa.get("backward_ms") and sb.get("backward_ms"):
        print(f"backward:    repeat {sa['backward_ms']:.2f} ms vs broadcast {sb['backward_ms']:.2f} ms "
              f"(x{sa['backward_ms'] / sb['backward_ms']:.1f})  <- measured times tell the truth")
    written: List[Path] = []
    if out is not None:
        out.mkdir(parents=True, exist_ok=True)
        try:
            from ..views.export import export_html
        except ImportError as exc:  # pragma: no cover - export is part of the package
            print(f"(HTML export unavailable: {exc})")
        else:
            for title, g in graphs.items():
                slug = title.split("(")[1].rstrip(")")
                path = export_html(g, out / f"homography_{slug}.html", title=title)
                written.append(Path(path))
                print(f"wrote {path}  (open it in any browser, offline)")
            if a.meta.get("timed"):
                # Charts inline plotly.js (~4.8 MB), so only this one report carries them.
                path = export_html(a, out / "homography_repeat_report.html", title="homography (repeat): report",
                                   charts=[a.figure("time"), a.figure("memory")])
                written.append(Path(path))
                print(f"wrote {path}  (with plotly charts, also offline)")
        for title, g in graphs.items():
            slug = title.split("(")[1].rstrip(")")
            p = out / f"homography_{slug}.json"
            p.write_text(g.to_json())
            written.append(p)
    return {"graphs": graphs, "written": written}

"""``export_chrome_trace``: a profiled graph's measured times as a Chrome Trace Event Format file, the JSON that
``torch.profiler`` writes and that Perfetto (ui.perfetto.dev), chrome://tracing and speedscope open.

One process per graph (a diff's two sides: two processes), two threads in it: ``forward ops`` and ``backward
nodes``. Every id is an integer and every thread and process is named by a metadata event: a trace with string ids
(like torch.profiler's own span events) does not open in speedscope.

What the graph holds decides what the trace can show:

* **Steps**: a graph profiled in this process keeps each measured run (``graph.steps``), so each run is a step of
  its own (``step k: forward`` / ``step k: backward`` spans holding that run's op and node times). A graph read from
  a file keeps only the per-node statistic: one step made of those numbers.
* **Order**: forward ops in creation order (their autograd sequence numbers). Backward nodes in the order they ran
  when the graph recorded it (``gw.profile(..., memory=True)``: ``meta.memory.nodes``), else in the order the
  autograd engine runs them on one device (:func:`~graphwidget.analysis.memory_accounting.predicted_backward_order`).
* **Placement**: a step's ops sit end to end from the step's start, in that order, and the span around them is the
  step's measured wall time. What the graph does not hold is where each gap between ops fell (the user's Python
  between torch calls, the engine between nodes), so the forward's gaps are the end of its span and the backward's
  are one ``(autograd engine)`` event after its nodes: the measured unattributed time.
"""
from __future__ import annotations

import json
import math
import re
from pathlib import Path
from typing import Any, Dict, List, Optional, Tuple, Union

from ..analysis.memory_accounting import predicted_backward_order

__all__ = ["chrome_trace", "export_chrome_trace"]

FORWARD_TID, BACKWARD_TID = 1, 2
ENGINE = "(autograd engine)"
_BACKWARD_SUFFIX = re.compile(r"Backward\d*$")
_NODE_KEYS = ("op", "kind", "seq", "module", "source", "code", "fwd_ms", "bwd_ms", "saved_bytes")


def safe_text(value: Any) -> Optional[str]:
    """``value`` as text every JSON reader takes: a lone surrogate (not encodable as UTF-8) becomes ``?``."""
    if value is None:
        return None
    return str(value).encode("utf-8", "replace").decode("utf-8")


def forward_name(op: str) -> str:
    """The forward op a backward node belongs to: ``AddmmBackward0`` -> ``Addmm`` (a name without the suffix is
    kept)."""
    base = _BACKWARD_SUFFIX.sub("", op)
    return base or op


def _ns(ms: Optional[float]) -> int:
    """Milliseconds as whole nanoseconds (no sum of rounded floats then ends past its parent's end)."""
    if ms is None or not math.isfinite(ms) or ms < 0:
        return 0
    return int(round(ms * 1e6))


def _us(ns: int) -> float:
    return ns / 1000.0


def _leaf_us(ns: int) -> float:
    """An op's or node's duration in the file: 1 ns short, so that the end of one (``ts + dur``, in floating-point
    microseconds) never lands after the start of the next one laid end to end (a viewer would then see them
    overlap and nest them wrongly)."""
    return max(ns - 1, 0) / 1000.0


def _sides(obj: Any) -> List[Tuple[str, Any]]:
    """(label, graph) for a GradGraph or a Diff (its two sides)."""
    if hasattr(obj, "a") and hasattr(obj, "b") and hasattr(obj, "labels"):
        return [(str(obj.labels[0]), obj.a), (str(obj.labels[1]), obj.b)]
    if hasattr(obj, "meta") and hasattr(obj, "node_items"):
        return [(str(obj.meta.get("title") or "graphwidget profile"), obj)]
    raise TypeError(f"export_chrome_trace: expected a GradGraph (gw.profile) or a Diff (gw.compare(..., "
                    f"profile=True)), got {type(obj).__name__}")


def _check_timed(label: str, g: Any, diff: bool) -> None:
    if g.meta.get("timed") and g.meta.get("timing"):
        return
    if diff:
        raise ValueError(f"export_chrome_trace: side {label!r} of this diff has no measured times; compare with "
                         "gw.compare(a, b, *args, profile=True) (or diff two gw.profile graphs) to time both sides")
    how = "gw.trace" if g.meta.get("traced") else "gw.capture"
    raise ValueError(f"export_chrome_trace: this graph has no measured times (it was made by {how}, or read from "
                     "such a file); profile it instead: g = gw.profile(fn, *args), then g.export_chrome_trace(path)")


def _orders(g: Any, nodes: Dict[int, Dict[str, Any]]) -> Tuple[List[int], List[int], str]:
    """(forward order, backward order, where the backward order comes from)."""
    fwd = sorted((v for v, d in nodes.items() if d.get("seq") is not None), key=lambda v: (nodes[v]["seq"], v))
    mem = g.meta.get("memory") or {}
    if mem.get("backward") and mem.get("nodes"):
        ran = [v for v in mem["nodes"][int(mem.get("forward_points") or 0):] if v in nodes]
        seen = set(ran)
        # a node the memory run saw no event for still ran: it goes where the engine's order puts it, at the end
        rest = [v for v in predicted_backward_order(g) if v not in seen] if len(seen) < len(nodes) else []
        return fwd, list(dict.fromkeys(ran)) + rest, "recorded (memory run)"
    return fwd, predicted_backward_order(g), "predicted (the engine's order on one device)"


def _step_values(g: Any, nodes: Dict[int, Dict[str, Any]]) -> List[Dict[str, Any]]:
    """Per step: ``fwd``/``bwd`` (id -> ms), the walls, the unattributed time and whether the statistic kept it."""
    timing = g.meta["timing"]
    steps = getattr(g, "steps", None)
    n = len(nodes)
    if steps and all(len(s["fwd"]) == n for s in steps):
        out = []
        for s in steps:
            bwd = s.get("bwd")
            inside = sum(x for x in bwd if x == x) if bwd is not None else 0.0
            out.append({"fwd": s["fwd"], "bwd": bwd, "fwd_wall": s["fwd_wall"], "bwd_wall": s.get("bwd_wall"),
                        "engine": (s["bwd_wall"] - inside) if bwd is not None and s.get("bwd_wall") is not None
                        else None, "kept": bool(s.get("kept", True)), "stat": "this run"})
        return out
    nan = float("nan")
    fwd = [nan] * n
    bwd = [nan] * n
    for v, d in nodes.items():
        if d.get("fwd_ms") is not None:
            fwd[v] = d["fwd_ms"]
        if d.get("bwd_ms") is not None:
            bwd[v] = d["bwd_ms"]
    has_bwd = timing.get("backward_ms") is not None
    return [{"fwd": fwd, "bwd": bwd if has_bwd else None, "fwd_wall": timing.get("forward_ms") or 0.0,
             "bwd_wall": timing.get("backward_ms"), "engine": timing.get("unattributed_ms"), "kept": True,
             "stat": f"{timing.get('stat', 'iqm')} over {timing.get('runs_used', '?')} runs"}]


def _args(v: int, d: Dict[str, Any], ms: float, step: int) -> Dict[str, Any]:
    a: Dict[str, Any] = {"node": v, "op": safe_text(d.get("op")), "module": safe_text(d.get("module")),
                         "source": safe_text(d.get("source")), "code": safe_text(d.get("code")), "ms": ms,
                         "step": step}
    if d.get("saved_bytes"):
        a["saved_bytes"] = d["saved_bytes"]
    return a


def _side_events(pid: int, label: str, g: Any, t0: int) -> Tuple[List[Dict[str, Any]], int]:
    """The events of one graph as process ``pid`` starting at ``t0`` ns; returns them and the end (ns)."""
    nodes = {v: d for v, d in g.node_items(_NODE_KEYS)}
    fwd_order, bwd_order, bwd_source = _orders(g, nodes)
    steps = _step_values(g, nodes)
    ev: List[Dict[str, Any]] = [
        {"ph": "M", "name": "process_name", "pid": pid, "tid": 0, "args": {"name": safe_text(label)}},
        {"ph": "M", "name": "process_sort_index", "pid": pid, "tid": 0, "args": {"sort_index": pid}},
        {"ph": "M", "name": "thread_name", "pid": pid, "tid": FORWARD_TID, "args": {"name": "forward ops"}},
        {"ph": "M", "name": "thread_sort_index", "pid": pid, "tid": FORWARD_TID, "args": {"sort_index": 1}},
    ]
    if steps[0]["bwd"] is not None:
        ev += [{"ph": "M", "name": "thread_name", "pid": pid, "tid": BACKWARD_TID, "args": {"name": "backward nodes"}},
               {"ph": "M", "name": "thread_sort_index", "pid": pid, "tid": BACKWARD_TID, "args": {"sort_index": 2}}]
    t = t0
    names = {v: safe_text(nodes[v].get("op")) or "?" for v in nodes}
    for k, s in enumerate(steps):
        # forward: ops end to end in creation order inside the step's wall time
        inner: List[Dict[str, Any]] = []
        c = t
        f = s["fwd"]
        for v in fwd_order:
            ms = f[v]
            if not ms == ms or ms <= 0:  # NaN (no call recorded) or 0.0 (another node of the same call has it)
                continue
            dur = _ns(ms)
            inner.append({"ph": "X", "name": forward_name(names[v]), "cat": "forward", "pid": pid,
                          "tid": FORWARD_TID, "ts": _us(c), "dur": _leaf_us(dur), "args": _args(v, nodes[v], ms, k)})
            c += dur
        span = max(_ns(s["fwd_wall"]), c - t)
        step_args = {"step": k, "kept": s["kept"], "times": s["stat"], "wall_ms": s["fwd_wall"]}
        ev.append({"ph": "X", "name": f"step {k}: forward", "cat": "step", "pid": pid, "tid": FORWARD_TID,
                   "ts": _us(t), "dur": _us(span), "args": step_args})
        ev += inner
        t += span
        b = s["bwd"]
        if b is None:
            continue
        inner = []
        c = t
        for v in bwd_order:
            ms = b[v]
            if not ms == ms:  # the node did not run (a part of the graph no gradient reached)
                continue
            dur = _ns(ms)
            inner.append({"ph": "X", "name": names[v], "cat": "backward", "pid": pid, "tid": BACKWARD_TID,
                          "ts": _us(c), "dur": _leaf_us(dur), "args": _args(v, nodes[v], ms, k)})
            c += dur
        engine = s["engine"]
        if engine is not None and _ns(engine) > 0:
            inner.append({"ph": "X", "name": ENGINE, "cat": "backward", "pid": pid, "tid": BACKWARD_TID,
                          "ts": _us(c), "dur": _leaf_us(_ns(engine)),
                          "args": {"ms": engine, "step": k, "what": "backward wall time minus the time inside "
                                   "nodes: the engine's scheduling, gradient sums and frees between nodes"}})
            c += _ns(engine)
        span = max(_ns(s["bwd_wall"]), c - t)
        ev.append({"ph": "X", "name": f"step {k}: backward", "cat": "step", "pid": pid, "tid": BACKWARD_TID,
                   "ts": _us(t), "dur": _us(span),
                   "args": {**step_args, "wall_ms": s["bwd_wall"], "order": bwd_source}})
        ev += inner
        t += span
    return ev, t


def chrome_trace(obj: Any) -> Dict[str, Any]:
    """The trace document of :func:`export_chrome_trace` (a dict of plain JSON values)."""
    sides = _sides(obj)
    diff = len(sides) > 1
    for label, g in sides:
        _check_timed(label, g, diff)
    events: List[Dict[str, Any]] = []
    for pid, (label, g) in enumerate(sides, start=1):
        ev, _end = _side_events(pid, label, g, 0)  # each side from 0: the sides ran interleaved, not one after
        events += ev
    meta = [{"label": safe_text(label), "pid": pid, "timing": _plain(g.meta.get("timing"))}
            for pid, (label, g) in enumerate(sides, start=1)]
    return {"traceEvents": events, "displayTimeUnit": "ms",
            "otherData": {"generator": "graphwidget", "sides": meta}}


def _plain(value: Any) -> Any:
    """JSON-safe copy (non-finite numbers become null, strings lose lone surrogates)."""
    if isinstance(value, dict):
        return {safe_text(k): _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, str):
        return safe_text(value)
    if value is None or isinstance(value, (bool, int, float)):
        return value
    return safe_text(value)


def write_json(doc: Any, path: Union[str, Path]) -> Path:
    """Write ``doc`` as compact UTF-8 JSON (as :func:`~graphwidget.views.export.export_html` writes its page: the
    folder is made, an unwritable path raises the ``OSError`` that names it)."""
    out = Path(path)
    out.parent.mkdir(parents=True, exist_ok=True)
    text = json.dumps(doc, ensure_ascii=False, allow_nan=False, separators=(",", ":"))
    out.write_text(text, encoding="utf-8")
    return out


def export_chrome_trace(obj: Any, path: Union[str, Path]) -> Path:
    """Write the measured times of ``obj`` to ``path`` as a Chrome trace and return the path.

    ``obj``: a graph from ``gw.profile`` (or a file of one), or a Diff of two timed graphs (``gw.compare(...,
    profile=True)``): one process per side. Open the file in https://ui.perfetto.dev, chrome://tracing or
    https://www.speedscope.app. Each event's ``args`` hold the node id, op, module path, source line and code. An
    untimed graph raises ``ValueError`` saying to profile it.
    """
    return write_json(chrome_trace(obj), path)


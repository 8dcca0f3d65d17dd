"""The one definition of graphwidget's JSON forms: keys, versions and :func:`validate`.

Everything that writes or reads a graph goes through these names: :mod:`graphwidget.model` (networkx <-> JSON), the
capture (its record templates), the compiled core (``capturing/native/cpp/common.h``, checked by a test), the front end
(``js/src/schema/types.ts``, checked by a test) and ``docs/schema.md``.

Two documents share the module:

* ``"format": "graphwidget"`` — one autograd graph (version :data:`VERSION`). Optional and backward
  compatible within version 1: a top-level ``"findings"`` list written by the advisor (:data:`FINDING_KEYS`).
* ``"format": "graphwidget-diff"`` — two graphs and how they match (version :data:`DIFF_VERSION`), written by
  :mod:`graphwidget.analysis.diff`; see ``docs/diff.md``.

This module is torch-free: saved graphs load, diff and advise without torch.
"""
from __future__ import annotations

import math
from typing import Any, Dict, List, Optional, Tuple

FORMAT = "graphwidget"
VERSION = 1
DIFF_FORMAT = "graphwidget-diff"
DIFF_VERSION = 1

#: Node record keys, in the order they are written to JSON.
NODE_KEYS: Tuple[str, ...] = (
    "op", "kind", "outputs", "saved", "attrs", "saved_bytes", "tensor", "source", "code", "module",
    "out_stride", "out_contiguous", "seq", "fwd_ms", "bwd_ms", "grad_bytes", "lib_source",
)
#: Edge record keys, in the order they are written to JSON (after ``source`` and ``target``).
EDGE_KEYS: Tuple[str, ...] = ("output", "slot", "shape", "dtype", "also")
#: Keys of a saved-tensor record (``node["saved"][i]``), in the order the capture writes them.
SAVED_KEYS: Tuple[str, ...] = (
    "shape", "stride", "dtype", "device", "contiguous", "memory_format", "bytes", "storage_bytes", "storage",
    "freed", "name", "packed", "stale",
)
#: Values of a saved tensor's ``packed``: behind torch.utils.checkpoint's hooks, or other saved-tensor hooks.
PACKED_KINDS = ("checkpoint", "hooks")
#: Keys of a leaf's ``tensor`` record.
LEAF_KEYS: Tuple[str, ...] = (
    "shape", "stride", "dtype", "device", "contiguous", "memory_format", "bytes", "storage_bytes", "requires_grad",
    "name", "storage",
)
KINDS = ("backward", "custom", "leaf")
#: Keys of one advisor finding (the top-level ``"findings"`` list), in the order they are written
#: (:class:`graphwidget.analysis.advisor.Finding`; docs/schema.md, "Findings").
FINDING_KEYS: Tuple[str, ...] = (
    "rule", "severity", "nodes", "source", "code", "module", "message", "suggestion", "evidence",
)
FINDING_SEVERITIES = ("warning", "info")

#: How deep nested values (attrs, timing) may go before a file is refused: deeper means hostile or broken, and
#: Python's own JSON reader would otherwise fail with a bare RecursionError.
MAX_DEPTH = 64


class SchemaError(ValueError):
    """A graph document that does not follow the schema; the message names the node and the field."""


def _where(i: Optional[int], node_id: Any) -> str:
    return f"node {node_id!r} (nodes[{i}])" if i is not None else "the document"


def _is_int(v: Any) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def _nonneg_int(v: Any) -> bool:
    return _is_int(v) and v >= 0


def _nonneg_num(v: Any) -> bool:
    return _is_num(v) and v >= 0


def _is_num(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)


def _check_finite(value: Any, path: str, depth: int = 0) -> None:
    """No NaN/Infinity (JSON cannot carry them; exports would fail later) and no absurd nesting."""
    stack: List[Tuple[Any, str, int]] = [(value, path, depth)]
    while stack:
        v, p, d = stack.pop()
        if d > MAX_DEPTH:
            where = p if len(p) <= 120 else p[:100] + "..."  # the place, not 64 levels of "[0]"
            raise SchemaError(f"{where}: nested more than {MAX_DEPTH} levels deep; this is not a graphwidget file.")
        if isinstance(v, float) and not math.isfinite(v):
            raise SchemaError(f"{p} is {v}, which JSON cannot hold; write null for an unknown number.")
        if isinstance(v, dict):
            stack.extend((x, f"{p}.{k}", d + 1) for k, x in v.items())
        elif isinstance(v, list):
            stack.extend((x, f"{p}[{j}]", d + 1) for j, x in enumerate(v))


def _check_shape(v: Any, what: str) -> None:
    if v is None:
        return
    if not isinstance(v, list) or not all(_is_int(s) and s >= 0 for s in v):
        raise SchemaError(f"{what} must be a list of non-negative integers or null; got {v!r:.80}.")


def _check_opt(v: Any, ok: bool, what: str, expected: str) -> None:
    if v is not None and not ok:
        raise SchemaError(f"{what} must be {expected} or null; got {type(v).__name__} {v!r:.60}.")


def validate_node(i: Optional[int], n: Any) -> None:
    """Check one node record (as parsed JSON); raises :class:`SchemaError` naming the node and field."""
    if not isinstance(n, dict):
        raise SchemaError(f"nodes[{i}] must be an object, got {type(n).__name__}.")
    nid = n.get("id")
    at = _where(i, nid)
    if not _nonneg_int(nid):
        raise SchemaError(f"nodes[{i}]: \"id\" must be a non-negative integer; got {nid!r:.40}.")
    op = n.get("op")
    if not isinstance(op, str) or not op:
        raise SchemaError(f"{at}: \"op\" is missing or not a string (every node names its op, e.g. "
                          f"\"MulBackward0\").")
    kind = n.get("kind")
    _check_opt(kind, isinstance(kind, str), f"{at}: \"kind\"", "a string (backward/custom/leaf)")
    outputs = n.get("outputs")
    if outputs is not None:
        if not isinstance(outputs, list):
            raise SchemaError(f"{at}: \"outputs\" must be a list or null.")
        for j, o in enumerate(outputs):
            if o is None:
                continue
            if not isinstance(o, dict):
                raise SchemaError(f"{at}: outputs[{j}] must be an object or null.")
            _check_shape(o.get("shape"), f"{at}: outputs[{j}].shape")
    saved = n.get("saved")
    if saved is not None:
        if not isinstance(saved, list):
            raise SchemaError(f"{at}: \"saved\" must be a list of saved-tensor records.")
        for j, s in enumerate(saved):
            if not isinstance(s, dict):
                raise SchemaError(f"{at}: saved[{j}] must be an object.")
            _check_shape(s.get("shape"), f"{at}: saved[{j}].shape")
            _check_shape(s.get("stride"), f"{at}: saved[{j}].stride")
            for key in ("bytes", "storage_bytes"):
                v = s.get(key)
                _check_opt(v, _nonneg_int(v), f"{at}: saved[{j}].{key}", "a non-negative integer")
            _check_opt(s.get("storage"), _is_int(s.get("storage")), f"{at}: saved[{j}].storage", "an integer")
            packed = s.get("packed")
            _check_opt(packed, packed in PACKED_KINDS, f"{at}: saved[{j}].packed", f"one of {PACKED_KINDS}")
            for key in ("freed", "stale"):
                _check_opt(s.get(key), isinstance(s.get(key), bool), f"{at}: saved[{j}].{key}", "true/false")
    attrs = n.get("attrs")
    _check_opt(attrs, isinstance(attrs, dict), f"{at}: \"attrs\"", "an object")
    tensor = n.get("tensor")
    if tensor is not None:
        if not isinstance(tensor, dict):
            raise SchemaError(f"{at}: \"tensor\" must be an object or null.")
        _check_shape(tensor.get("shape"), f"{at}: tensor.shape")
        _check_opt(tensor.get("storage"), _is_int(tensor.get("storage")), f"{at}: tensor.storage", "an integer")
    for key in ("saved_bytes", "grad_bytes"):
        v = n.get(key)
        _check_opt(v, _nonneg_int(v), f"{at}: \"{key}\"", "a non-negative integer")
    for key in ("fwd_ms", "bwd_ms"):
        v = n.get(key)
        _check_opt(v, _nonneg_num(v), f"{at}: \"{key}\"", "a finite non-negative number")
    seq = n.get("seq")
    _check_opt(seq, _is_int(seq), f"{at}: \"seq\"", "an integer")
    for key in ("source", "code", "module", "lib_source"):
        v = n.get(key)
        _check_opt(v, isinstance(v, str), f"{at}: \"{key}\"", "a string")
    for key in ("out_stride", "out_contiguous"):
        v = n.get(key)
        _check_opt(v, isinstance(v, list), f"{at}: \"{key}\"", "a list")
    _check_finite(n, at)


def validate_edge(k: int, e: Any, ids: set) -> Tuple[int, int]:
    """Check one edge record; returns ``(source, target)``."""
    if not isinstance(e, dict):
        raise SchemaError(f"edges[{k}] must be an object, got {type(e).__name__}.")
    u, v = e.get("source"), e.get("target")
    if not _is_int(u) or not _is_int(v):
        raise SchemaError(f"edges[{k}]: \"source\" and \"target\" must be node ids (integers); got {u!r}, {v!r}.")
    if u not in ids or v not in ids:
        missing = u if u not in ids else v
        raise SchemaError(f"edges[{k}] ({u} -> {v}) names node {missing}, which is not in \"nodes\".")
    if u == v:
        raise SchemaError(f"edges[{k}] is a self-loop on node {u}; an autograd graph has none.")
    _check_shape(e.get("shape"), f"edges[{k}].shape")
    also = e.get("also")
    _check_opt(also, isinstance(also, list), f"edges[{k}].also", "a list")
    _check_finite(e, f"edges[{k}]")
    return u, v  # type: ignore[return-value]  # both checked to be ints above


def validate(doc: Any) -> Dict[str, Any]:
    """Check a parsed graph document against this schema and return it.

    Raises :class:`SchemaError` (a ``ValueError``) naming the node and the field for: a wrong ``format`` or an
    unsupported ``version``, nodes without ``op``, wrongly typed fields (``saved``, ``timing``, shapes, sizes), NaN
    or infinite numbers, duplicate ids, edges to unknown nodes, self-loops, cycles and absurd nesting.
    """
    if not isinstance(doc, dict) or doc.get("format") != FORMAT:
        got = doc.get("format") if isinstance(doc, dict) else type(doc).__name__
        hint = " (a diff: use graphwidget.load_json, which reads both)" if got == DIFF_FORMAT else ""
        raise SchemaError(f"not a graphwidget graph: \"format\" is {got!r}, expected {FORMAT!r}{hint}.")
    version = doc.get("version")
    if version != VERSION:
        newer = isinstance(version, int) and version > VERSION
        raise SchemaError(
            f"graph schema version {version!r} is not supported by this release (it reads version {VERSION})"
            + ("; upgrade graphwidget." if newer else "."))
    meta = doc.get("meta")
    if meta is not None and not isinstance(meta, dict):
        raise SchemaError("\"meta\" must be an object.")
    meta = meta or {}
    roots = meta.get("roots")
    _check_opt(roots, isinstance(roots, list) and all(_is_int(r) for r in roots), "meta.roots", "a list of ids")
    timing = meta.get("timing")
    if timing is not None:
        if not isinstance(timing, dict):
            raise SchemaError(f"meta.timing must be an object or null; got {type(timing).__name__}.")
        for key in ("forward_ms", "backward_ms", "unattributed_ms", "forward_ops_ms", "backward_nodes_ms"):
            v = timing.get(key)
            _check_opt(v, _is_num(v), f"meta.timing.{key}", "a finite number")
        for key, least in (("repeat", 1), ("warmup", 0), ("runs_used", 0)):
            v = timing.get(key)
            ok = isinstance(v, int) and not isinstance(v, bool) and v >= least
            _check_opt(v, ok, f"meta.timing.{key}", f"an integer >= {least}")
        for key in ("device", "clock", "stat"):
            v = timing.get(key)
            _check_opt(v, isinstance(v, str), f"meta.timing.{key}", "a string")
        v = timing.get("cross_check")
        _check_opt(v, isinstance(v, dict), "meta.timing.cross_check", "an object")
    _check_finite(meta, "meta")
    nodes, edges = doc.get("nodes"), doc.get("edges")
    if not isinstance(nodes, list) or not isinstance(edges, list):
        raise SchemaError("a graph document needs \"nodes\" and \"edges\" lists.")
    ids: set = set()
    for i, n in enumerate(nodes):
        validate_node(i, n)
        if n["id"] in ids:
            raise SchemaError(f"node id {n['id']} appears twice (nodes[{i}]); ids must be unique.")
        ids.add(n["id"])
    succ: Dict[int, List[int]] = {i: [] for i in ids}
    indeg: Dict[int, int] = dict.fromkeys(ids, 0)
    for k, e in enumerate(edges):
        u, v = validate_edge(k, e, ids)
        succ[u].append(v)
        indeg[v] += 1
    for r in roots or ():
        if r not in ids:
            raise SchemaError(f"meta.roots names node {r}, which is not in \"nodes\".")
    # Kahn: whatever is left with in-degree > 0 sits on a cycle.
    ready = [n for n, d in indeg.items() if d == 0]
    seen = 0
    while ready:
        n = ready.pop()
        seen += 1
        for m in succ[n]:
            indeg[m] -= 1
            if indeg[m] == 0:
                ready.append(m)
    if seen != len(ids):
        on_cycle = sorted(n for n, d in indeg.items() if d > 0)[:5]
        raise SchemaError(f"the edges form a cycle (through nodes {on_cycle}); an autograd graph is acyclic.")
    if doc.get("findings") is not None:
        validate_findings(doc["findings"], ids)
    return doc


def validate_findings(findings: Any, ids: set) -> None:
    """Check the advisor's ``"findings"`` list (the views render it as text; node ids must exist)."""
    if not isinstance(findings, list):
        raise SchemaError(f"\"findings\" must be a list of finding objects or null; got {type(findings).__name__}.")
    for j, f in enumerate(findings):
        at = f"findings[{j}]"
        if not isinstance(f, dict):
            raise SchemaError(f"{at} must be an object with keys {', '.join(FINDING_KEYS)}.")
        for key in ("rule", "message"):
            if not isinstance(f.get(key), str) or not f.get(key):
                raise SchemaError(f"{at}: \"{key}\" is missing or not a string.")
        if f.get("severity") not in FINDING_SEVERITIES:
            raise SchemaError(f"{at}: \"severity\" must be one of {FINDING_SEVERITIES}; got {f.get('severity')!r:.40}.")
        nodes = f.get("nodes")
        if not isinstance(nodes, list) or not all(_is_int(n) for n in nodes):
            raise SchemaError(f"{at}: \"nodes\" must be a list of node ids.")
        missing = [n for n in nodes if n not in ids]
        if missing:
            raise SchemaError(f"{at} names node {missing[0]}, which is not in \"nodes\".")
        for key in ("source", "code", "module", "suggestion"):
            _check_opt(f.get(key), isinstance(f.get(key), str), f"{at}: \"{key}\"", "a string")
        _check_opt(f.get("evidence"), isinstance(f.get("evidence"), dict), f"{at}: \"evidence\"", "an object")
        _check_finite(f, at)


def unknown_node_keys(nodes: List[Dict[str, Any]]) -> List[str]:
    """Node keys this release does not know (they are dropped on load, with one warning naming them)."""
    known = set(NODE_KEYS) | {"id"}
    extra: set = set()
    for n in nodes:
        extra.update(k for k in n if k not in known)
    return sorted(extra)

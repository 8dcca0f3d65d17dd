"""Writing the JSON form of a graph (``docs/schema.md``); :mod:`.io` reads it back.

Writing big graphs is faster with the compiled core (it writes the node/edge arrays without building the dicts first).
The model does not know the core: the package's ``__init__`` registers the capture stage's loader here as an
*accelerator* when torch is importable; without it (and without torch) the same text is written, only slower.
This module needs no :class:`~graphwidget.model.GradGraph` import (it reads ``nx``, ``meta`` and ``findings``), so the
graph can use it and the reader can build graphs without a cycle between them.
"""
from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any, Callable, Dict, Optional

from .._util.gc import gc_paused
from . import schema
from ._digraph import adjacency

if TYPE_CHECKING:  # pragma: no cover
    from .graph import GradGraph

#: A function returning the compiled core module (or None); registered by ``graphwidget/__init__.py``.
_accelerator: Optional[Callable[[], Any]] = None


def register_accelerator(provider: Callable[[], Any]) -> None:
    """Let :func:`to_json` / :func:`load_json` use the compiled core returned by ``provider()`` when it is built."""
    global _accelerator
    _accelerator = provider


def registered_core() -> Any:
    """The registered compiled core, or ``None``."""
    return _accelerator() if _accelerator is not None else None


def to_dict(graph: "GradGraph") -> Dict[str, Any]:
    """The JSON form as Python objects."""
    node, succ, _ = adjacency(graph.nx)
    keys = schema.node_keys(graph.meta)
    out: Dict[str, Any] = {
        "format": schema.FORMAT,
        "version": schema.VERSION,
        "meta": dict(graph.meta),
        "nodes": [{"id": n, **{k: d.get(k) for k in keys}} for n, d in node.items()],
        "edges": [{"source": u, "target": v, **{k: d.get(k) for k in schema.EDGE_KEYS}}
                  for u, nbrs in succ.items() for v, d in nbrs.items()],
    }
    if graph.findings is not None:
        out["findings"] = graph.findings
    return out


def to_json(graph: "GradGraph", indent: Optional[int] = None, core: Any = None) -> str:
    """Serialise to the versioned JSON form; :func:`load_json` reads it back exactly. ``core``: a compiled core to
    write with (default: the registered accelerator's, when there is one)."""
    if indent is None and graph.findings is None:
        fast = _to_json_native(graph, core if core is not None else registered_core())
        if fast is not None:
            return fast
    with gc_paused():
        try:
            return json.dumps(to_dict(graph), indent=indent, separators=None if indent else (",", ":"),
                              allow_nan=False)
        except ValueError as exc:  # NaN / Infinity somewhere
            raise ValueError(f"GradGraph.to_json: {exc}; a node attribute holds NaN or Infinity, which JSON "
                             f"cannot carry. Set it to None.") from None


def _to_json_native(graph: "GradGraph", mod: Any) -> Optional[str]:
    """The same text as the json.dumps path, written by the compiled core ``mod`` without building :func:`to_dict`
    first; None when the core is absent or a value is not plain JSON."""
    if mod is None:
        return None
    node, succ, _ = adjacency(graph.nx)
    try:
        nodes, edges = mod.json_arrays(node, succ, schema.node_keys(graph.meta), schema.EDGE_KEYS)
    except mod.Unsupported:
        return None
    head = json.dumps({"format": schema.FORMAT, "version": schema.VERSION, "meta": dict(graph.meta)},
                      separators=(",", ":"), allow_nan=False)
    return f"{head[:-1]},\"nodes\":{nodes},\"edges\":{edges}}}"

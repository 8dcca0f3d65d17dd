"""The JSON form of a graph (``docs/schema.md``): writing, reading, validating.

Writing and reading big graphs is faster with the compiled core (it writes the node/edge arrays and untracks parsed
records from the cyclic GC). The model does not know the core: the capture stage registers it here as an
*accelerator* when it is importable, and this module works the same, only slower, without it (and without torch).
"""
from __future__ import annotations

import json
import re
import warnings
from typing import TYPE_CHECKING, Any, Callable, Dict, List, Optional, Tuple

from .._util.gc import gc_paused
from . import schema
from ._digraph import adjacency, build_digraph

if TYPE_CHECKING:  # pragma: no cover
    from .graph import GradGraph

#: A function returning the compiled core module (or None); set by :mod:`graphwidget.capture.native`.
_accelerator: Optional[Callable[[], Any]] = None


def register_accelerator(provider: Callable[[], Any]) -> None:
    """Let :func:`to_json` / :func:`load_json` use the compiled core returned by ``provider()`` when it is built."""
    global _accelerator
    _accelerator = provider


def _core() -> Any:
    return _accelerator() if _accelerator is not None else None


def to_dict(graph: "GradGraph") -> Dict[str, Any]:
    """The JSON form as Python objects."""
    node, succ, _ = adjacency(graph.nx)
    out: Dict[str, Any] = {
        "format": schema.FORMAT,
        "version": schema.VERSION,
        "meta": dict(graph.meta),
        "nodes": [{"id": n, **{k: d.get(k) for k in schema.NODE_KEYS}} for n, d in node.items()],
        "edges": [{"source": u, "target": v, **{k: d.get(k) for k in schema.EDGE_KEYS}}
                  for u, nbrs in succ.items() for v, d in nbrs.items()],
    }
    if graph.findings is not None:
        out["findings"] = graph.findings
    return out


def to_json(graph: "GradGraph", indent: Optional[int] = None) -> str:
    """Serialise to the versioned JSON form; :func:`load_json` reads it back exactly."""
    if indent is None and graph.findings is None:
        fast = _to_json_native(graph)
        if fast is not None:
            return fast
    with gc_paused():
        try:
            return json.dumps(to_dict(graph), indent=indent, separators=None if indent else (",", ":"),
                              allow_nan=False)
        except ValueError as exc:  # NaN / Infinity somewhere
            raise ValueError(f"GradGraph.to_json: {exc}; a node attribute holds NaN or Infinity, which JSON "
                             f"cannot carry. Set it to None.") from None


def _to_json_native(graph: "GradGraph") -> Optional[str]:
    """The same text as the json.dumps path, written by the compiled core without building :func:`to_dict` first;
    None when the core is absent or a value is not plain JSON."""
    mod = _core()
    if mod is None:
        return None
    node, succ, _ = adjacency(graph.nx)
    try:
        nodes, edges = mod.json_arrays(node, succ, schema.NODE_KEYS, schema.EDGE_KEYS)
    except mod.Unsupported:
        return None
    head = json.dumps({"format": schema.FORMAT, "version": schema.VERSION, "meta": dict(graph.meta)},
                      separators=(",", ":"), allow_nan=False)
    return f"{head[:-1]},\"nodes\":{nodes},\"edges\":{edges}}}"


class _Constant:
    """What ``NaN`` / ``Infinity`` / ``-Infinity`` parse to: found afterwards, so the error can say where it is."""

    __slots__ = ("name",)

    def __init__(self, name: str) -> None:
        self.name = name


def _place(doc: Any, path: List[Any]) -> str:
    """``node 7 (nodes[3]).attrs.alpha`` for the path ``["nodes", 3, "attrs", "alpha"]`` (the node named by its id,
    as :func:`graphwidget.model.schema.validate` does); ``meta.timing.forward_ms`` elsewhere."""
    text = ""
    start = 0
    if len(path) >= 2 and path[0] == "nodes" and isinstance(path[1], int):
        node = None
        if isinstance(doc, dict) and isinstance(doc.get("nodes"), list) and path[1] < len(doc["nodes"]):
            node = doc["nodes"][path[1]]
        nid = node.get("id") if isinstance(node, dict) else None
        text, start = (f"node {nid!r} (nodes[{path[1]}])" if nid is not None else f"nodes[{path[1]}]"), 2
    for p in path[start:]:
        text += f"[{p}]" if isinstance(p, int) else (f".{p}" if text else str(p))
    return text or "the document"


def _constant_error(doc: Any, who: str) -> ValueError:
    stack: List[Tuple[Any, List[Any]]] = [(doc, [])]
    while stack:
        v, path = stack.pop()
        if isinstance(v, _Constant):
            return ValueError(f"{who}: {_place(doc, path)} holds {v.name}, which is not JSON; write null for an "
                              f"unknown number.")
        if isinstance(v, dict):
            stack.extend((x, path + [k]) for k, x in reversed(list(v.items())))
        elif isinstance(v, list):
            stack.extend((x, path + [j]) for j, x in reversed(list(enumerate(v))))
    return ValueError(f"{who}: the file holds NaN or Infinity, which is not JSON; write null for an unknown number.")


_TOKEN = re.compile(r'"(?:[^"\\]|\\.)*"|[{}\[\],:]')


def _nesting_error(text: str, who: str) -> ValueError:
    """Where the text first nests deeper than :data:`~graphwidget.model.schema.MAX_DEPTH` (found by a flat scan:
    the JSON reader itself gave up with a RecursionError)."""
    stack: List[List[Any]] = []  # per open container: ["{", key, expecting_key] or ["[", index]
    for m in _TOKEN.finditer(text):
        t = m.group()
        if t in "{[":
            stack.append(["{", None, True] if t == "{" else ["[", 0])
            if len(stack) > schema.MAX_DEPTH + 1:
                path = [f[1] for f in stack[:-1]]
                head = _place({}, path[:4])
                # the node's id is not known yet (the reader stopped): name it by its place in "nodes"
                return ValueError(f"{who}: {head}{'...' if len(path) > 4 else ''} is nested more than "
                                  f"{schema.MAX_DEPTH} levels deep; this is not a graphwidget file.")
        elif t in "}]":
            if stack:
                stack.pop()
        elif t == ",":
            if stack and stack[-1][0] == "[":
                stack[-1][1] += 1
            elif stack:
                stack[-1][2] = True
        elif t == ":":
            if stack:
                stack[-1][2] = False
        elif stack and stack[-1][0] == "{" and stack[-1][2]:
            stack[-1][1] = json.loads(t)
    return ValueError(f"{who}: the JSON is nested too deeply to be a graphwidget file.")


def parse(text: Any, who: str = "graphwidget.load_json") -> Any:
    """Parse JSON text with clear errors (not JSON; NaN or Infinity, and where; nesting so deep the parser gives up,
    and where)."""
    if isinstance(text, (bytes, bytearray)):
        text = bytes(text).decode("utf-8")
    if not isinstance(text, str):
        raise TypeError(f"{who} expects the JSON text GradGraph.to_json() wrote (a str); got {type(text).__name__}.")
    found: List[_Constant] = []

    def constant(name: str) -> _Constant:
        c = _Constant(name)
        found.append(c)
        return c

    try:
        doc = json.loads(text, parse_constant=constant)
    except json.JSONDecodeError as exc:
        raise ValueError(f"{who}: not JSON ({exc}); pass the text GradGraph.to_json() wrote.") from None
    except RecursionError:
        raise _nesting_error(text, who) from None
    except ValueError as exc:
        raise ValueError(f"{who}: {exc}.") from None
    if found:
        raise _constant_error(doc, who)
    return doc


def load_json(text: Any) -> "GradGraph":
    """Read a graph written by :meth:`GradGraph.to_json`.

    The document is validated against the schema first (:func:`graphwidget.model.schema.validate`): a broken or
    hostile file is refused with a ``ValueError`` naming the node and the field, never half-loaded.
    ``graphwidget.load_json`` reads diffs too.

    >>> g2 = gw.load_json(g.to_json())        # doctest: +SKIP
    """
    with gc_paused():
        return graph_from_parsed(parse(text))


def graph_from_parsed(data: Any, who: str = "graphwidget.load_json") -> "GradGraph":
    """:func:`from_dict`, then the parsed records are untracked from the cyclic GC (plain data, no cycles)."""
    g = from_dict(data, who)
    mod = _core()
    if mod is not None:  # spare the collector its pass over ~10 containers a node
        for part in adjacency(g.nx):
            mod.untrack_tree(part)
    return g


def from_dict(data: Any, who: str = "graphwidget.load_json") -> "GradGraph":
    """Build a :class:`GradGraph` from the JSON form already parsed into Python objects (validated first)."""
    from .graph import GradGraph
    try:
        schema.validate(data)
    except schema.SchemaError as exc:
        raise schema.SchemaError(f"{who}: {exc}") from None
    nodes = data["nodes"]
    extra = schema.unknown_node_keys(nodes)
    if extra:
        warnings.warn(f"{who}: dropped node keys this release does not know: {', '.join(extra)}.",
                      UserWarning, stacklevel=3)
    meta = dict(data.get("meta") or {})
    g = build_digraph(
        ((n["id"], {k: n.get(k) for k in schema.NODE_KEYS}) for n in nodes),
        ((e["source"], e["target"], {k: e.get(k) for k in schema.EDGE_KEYS}) for e in data["edges"]))
    graph = GradGraph(g, meta)
    findings = data.get("findings")
    if isinstance(findings, list):
        graph.findings = findings
    return graph

"""``export_model_explorer``: a graph in Google Model Explorer's JSON graph format (ai-edge-model-explorer), whose
WebGL renderer lays out very large graphs, plus its node-data files (per-node times and bytes) to colour them.

The format is the one of ``model_explorer/graph_builder.py`` (its adapters' output): a graph collection
``{"label", "graphs": [graph]}`` (the top-level shape Model Explorer's JSON loader accepts; a bare
``{"graphCollections": ...}`` is refused with "Unsupported JSON format"), each node with ``id``, ``label`` (its op),
``namespace`` (its module path, ``/``-separated, so modules are Model Explorer's collapsible layers), ``attrs`` (a list
of key/value strings), ``incomingEdges`` (``sourceNodeId``, ``sourceNodeOutputId``: which forward output,
``targetNodeInputId``: the slot in ``next_functions``) and ``outputsMetadata`` (shape, dtype, device of each
forward output, with the ``tensor_shape`` key its side panel and edge labels show). Edges follow forward data flow,
as in the graph.

A node-data file is one ``GraphNodeData`` (``model_explorer/node_data_builder.py``): ``{"name", "results": {node
id: {"value"}}, "gradient"}``, one per metric the graph has values for. Load them with
``model-explorer graph.json --node_data_paths=a.json,b.json`` or from the UI's node-data panel.
"""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Dict, List, Optional, Tuple, Union

from .chrome_trace import safe_text, write_json

__all__ = ["export_model_explorer", "model_explorer_graph", "model_explorer_node_data"]

#: node key -> what its node-data file is called in Model Explorer
METRICS: Tuple[Tuple[str, str], ...] = (("bwd_ms", "backward ms"), ("fwd_ms", "forward ms"),
                                        ("saved_bytes", "saved bytes"), ("peak_bytes", "bytes at the memory peak"))
_ATTR_KEYS = ("kind", "seq", "module", "source", "code", "lib_source", "fwd_ms", "bwd_ms", "saved_bytes",
              "grad_bytes", "peak_bytes")
_NODE_KEYS = ("op", "outputs", "saved", "attrs", "tensor") + _ATTR_KEYS
#: white to red, the viewer's own heat colours' ends
GRADIENT = [{"stop": 0, "bgColor": "#ffffff"}, {"stop": 0.5, "bgColor": "#fdae6b"}, {"stop": 1, "bgColor": "#d62728"}]


def _namespace(module: Optional[str], classes: Dict[str, str], cache: Dict[str, str]) -> str:
    """``encoder.layers.3`` -> ``encoder (Encoder)/layers (ModuleList)/3 (Block)``: one Model Explorer layer per
    module, named by its attribute and, where the graph knows it (``meta.modules``), its class. A ``/`` inside a
    name would split a layer: it becomes ``|``."""
    if not module:
        return ""
    got = cache.get(module)
    if got is None:
        parts = module.split(".")
        names = []
        for i, part in enumerate(parts):
            cls = classes.get(".".join(parts[:i + 1]))
            names.append((part + (f" ({cls})" if isinstance(cls, str) and cls else "")).replace("/", "|"))
        got = cache[module] = safe_text("/".join(names)) or ""
    return got


def _text(value: Any) -> str:
    if isinstance(value, str):
        return safe_text(value) or ""
    return safe_text(json.dumps(value, ensure_ascii=False, default=str)) or ""


def _shape_text(shape: Any) -> str:
    return "?" if shape is None else "[" + ",".join(str(s) for s in shape) + "]"


def _outputs(outputs: Any) -> List[Dict[str, Any]]:
    out = []
    for i, o in enumerate(outputs or ()):
        if not o:
            continue
        attrs = [{"key": "tensor_shape", "value": _text(o.get("dtype") or "?") + _shape_text(o.get("shape"))},
                 {"key": "shape", "value": _shape_text(o.get("shape"))},
                 {"key": "dtype", "value": _text(o.get("dtype"))}, {"key": "device", "value": _text(o.get("device"))}]
        out.append({"id": str(i), "attrs": attrs})
    return out


def _attrs(d: Dict[str, Any]) -> List[Dict[str, str]]:
    a = [{"key": k, "value": _text(d[k])} for k in _ATTR_KEYS if d.get(k) is not None]
    for name, value in sorted((d.get("attrs") or {}).items()):
        a.append({"key": f"attr.{_text(name)}", "value": _text(value)})
    for s in d.get("saved") or ():
        a.append({"key": f"saved.{_text(s.get('name'))}",
                  "value": f"{_text(s.get('dtype') or '?')}{_shape_text(s.get('shape'))} {s.get('bytes', 0)} B"
                  + (" (freed)" if s.get("freed") else "")})
    t = d.get("tensor")
    if t:
        a.append({"key": "tensor", "value": f"{_text(t.get('name') or '')} {_text(t.get('dtype') or '?')}"
                  f"{_shape_text(t.get('shape'))}".strip()})
    return a


def _title(g: Any) -> str:
    return safe_text(g.meta.get("title")) or "autograd graph"


def model_explorer_graph(g: Any) -> Dict[str, Any]:
    """The graph collection :func:`export_model_explorer` writes (plain JSON values)."""
    nodes = []
    incoming: Dict[int, List[Dict[str, str]]] = {}
    for u, v, e in g.nx.edges(data=True):
        incoming.setdefault(v, []).append({"sourceNodeId": str(u), "sourceNodeOutputId": str(e.get("output") or 0),
                                           "targetNodeInputId": str(e.get("slot") or 0)})
    classes = g.meta.get("modules") or {}
    cache: Dict[str, str] = {}
    for v, d in g.node_items(_NODE_KEYS):
        nodes.append({"id": str(v), "label": safe_text(d.get("op")) or "?",
                      "namespace": _namespace(d.get("module"), classes, cache),
                      "attrs": _attrs(d), "incomingEdges": incoming.get(v, []),
                      "outputsMetadata": _outputs(d.get("outputs"))})
    title = _title(g)
    return {"label": title, "graphs": [{"id": title, "nodes": nodes}]}


def model_explorer_node_data(g: Any) -> Dict[str, Dict[str, Any]]:
    """Per metric the graph has values for (``bwd_ms``, ``fwd_ms``, ``saved_bytes``, ``peak_bytes``): its
    ``GraphNodeData`` document. Empty for a graph without any."""
    keys = [k for k, _ in METRICS]
    results: Dict[str, Dict[str, Dict[str, float]]] = {k: {} for k in keys}
    for v, d in g.node_items(keys):
        for k in keys:
            x = d.get(k)
            if x is not None:
                results[k][str(v)] = {"value": x}
    title = _title(g)
    out = {}
    for k, words in METRICS:
        if results[k] and any(r["value"] for r in results[k].values()):
            out[k] = {"name": f"{title}: {words}", "results": results[k], "gradient": GRADIENT}
    return out


def export_model_explorer(g: Any, path: Union[str, Path], *, node_data: bool = True) -> List[Path]:
    """Write ``g`` (a GradGraph, or a file of one read with ``gw.load_json``) to ``path`` in Model Explorer's JSON
    graph format and return the paths written: the graph first, then (``node_data``) one node-data file per metric
    the graph has, beside it as ``<stem>.<metric>.json`` (``g.bwd_ms.json``, ``g.saved_bytes.json``, ...).

    Open them with ``pip install ai-edge-model-explorer`` and ``model-explorer graph.json
    --node_data_paths=graph.bwd_ms.json``. An unwritable path raises the ``OSError`` that names it."""
    if not (hasattr(g, "node_items") and hasattr(g, "meta")):
        raise TypeError(f"export_model_explorer: expected a GradGraph (gw.capture / gw.trace / gw.profile / "
                        f"gw.load_json), got {type(g).__name__}")
    out = Path(path)
    written = [write_json(model_explorer_graph(g), out)]
    if node_data:
        for k, doc in model_explorer_node_data(g).items():
            written.append(write_json(doc, out.with_name(f"{out.stem}.{k}.json")))
    return written

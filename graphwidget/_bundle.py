"""The built front end (``graphwidget/static``) and the graph payload both views consume.

``js/`` builds ``static/widget.js`` (anywidget ESM) and ``static/viewer.js`` (the export's inline viewer). Neither
is committed: ``pip install -e .`` / ``make setup`` runs ``npm install && npm run build`` through
hatch-jupyter-builder.
"""
from __future__ import annotations

import gzip
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Dict, List

from .graph import GradGraph

STATIC = Path(__file__).resolve().parent / "static"
WIDGET_JS = "widget.js"
VIEWER_JS = "viewer.js"


class BundleMissingError(RuntimeError):
    """The JavaScript bundle has not been built."""


def bundle_path(name: str) -> Path:
    """Path of a built bundle file, or a clear error saying how to build it."""
    path = STATIC / name
    if not path.is_file():
        raise BundleMissingError(
            f"graphwidget's front end is not built: {path} is missing. Run `make setup` (or `pip install -e .`, "
            "which runs `npm install && npm run build` in js/) to build it."
        )
    return path


def read_bundle(name: str) -> str:
    return bundle_path(name).read_text(encoding="utf-8")


@dataclass(frozen=True)
class GraphPayload:
    """A graph in schema form: its JSON text (what travels), and the parsed pieces Python needs."""

    json_text: str
    meta: Dict[str, Any]
    node_ids: List[int]
    has_grad_bytes: bool = False

    def gzipped(self) -> bytes:
        # mtime=0: the same graph gives the same bytes (stable exports, cheap equality checks)
        return gzip.compress(self.json_text.encode("utf-8"), compresslevel=6, mtime=0)


_WHAT = ("a GradGraph (from gw.capture / gw.trace / gw.profile), an object with a .to_json() method, "
         "a dict in graphwidget schema form (docs/schema.md), or that dict's JSON string")


def graph_payload(obj: Any, *, caller: str = "GraphWidget") -> GraphPayload:
    """Accepts a GradGraph (anything with ``.to_json()``), a schema dict, or a JSON string."""
    if isinstance(obj, GradGraph):
        # Our own graph is valid by construction: take the facts from it instead of parsing its JSON back
        # (for 100k nodes that parse cost about half as much as writing the JSON).
        nodes = obj.nx._node
        return GraphPayload(obj.to_json(), dict(obj.meta), list(nodes),
                            any((d.get("grad_bytes") or 0) > 0 for d in nodes.values()))
    if isinstance(obj, (bytes, bytearray)):
        obj = bytes(obj).decode("utf-8")
    if isinstance(obj, str):
        text = obj
    elif isinstance(obj, dict):
        try:
            text = json.dumps(obj, separators=(",", ":"), allow_nan=False)
        except (TypeError, ValueError) as exc:
            raise TypeError(f"{caller}: the graph dict is not JSON-serialisable ({exc}); pass {_WHAT}") from exc
    elif callable(getattr(obj, "to_json", None)):
        text = obj.to_json()
        if not isinstance(text, str):
            raise TypeError(f"{caller}: {type(obj).__name__}.to_json() returned {type(text).__name__}, expected str")
    else:
        raise TypeError(f"{caller} expects {_WHAT}; got {type(obj).__name__}")
    try:
        data = json.loads(text)
    except ValueError as exc:
        raise TypeError(f"{caller}: the graph is not valid JSON ({exc}); pass {_WHAT}") from exc
    if not isinstance(data, dict) or not isinstance(data.get("nodes"), list) or not isinstance(data.get("edges", []), list):
        raise TypeError(f"{caller}: the graph must be a JSON object with 'nodes' and 'edges' lists; pass {_WHAT}")
    if data.get("format", "graphwidget") != "graphwidget":
        raise TypeError(f"{caller}: not a graphwidget graph (format={data.get('format')!r})")
    version = data.get("version", 1)
    if isinstance(version, int) and version > 1:
        raise ValueError(f"{caller}: graph format version {version} is newer than this graphwidget (1); upgrade it")
    meta = data.get("meta") if isinstance(data.get("meta"), dict) else {}
    nodes = [n for n in data["nodes"] if isinstance(n, dict)]
    ids = [n.get("id") for n in nodes]
    has_grad = any(isinstance(n.get("grad_bytes"), (int, float)) and n["grad_bytes"] > 0 for n in nodes)
    return GraphPayload(text, meta, [i for i in ids if isinstance(i, int)], has_grad)


def default_colour(meta: Dict[str, Any], has_grad_bytes: bool = False) -> str:
    """Timed graphs open coloured by backward time; the rest by the gradient bytes backward writes (what makes
    the slow `repeat` obvious), or by saved bytes for graphs that lack that field. Mirrors js/src/colour.ts."""
    if meta.get("timed"):
        return "bwd_ms"
    return "grad_bytes" if has_grad_bytes else "saved_bytes"


COLOUR_METRICS = ("grad_bytes", "saved_bytes", "bwd_ms", "fwd_ms", "output_bytes", "none")

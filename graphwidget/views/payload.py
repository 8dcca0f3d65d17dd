"""What the views send to the browser: a graph (or a diff) as the binary payload of :mod:`.packed` (typed columns,
gzip-compressed; read by js/src/model/packed.ts), and the facts Python needs about it (node ids, which colour
metrics it can show, the default one).

Whatever the input (a graph, a document of either version, its JSON text), it is validated and read into a
:class:`GradGraph` first, and the payload is written from that graph's version 2 columns."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Dict, List, Tuple

from ..model import io, schema
from ..model.graph import GradGraph
from .packed import pack_graph

#: Every colour metric the viewer knows (js/src/model/colour.ts), in menu order.
#: ``rank_spread_ms``: a rank's graph, each node's time spread over the ranks (max - min ms; docs/nway.md).
COLOUR_METRICS = ("grad_bytes", "saved_bytes", "peak_bytes", "bwd_ms", "fwd_ms", "output_bytes", "rank_spread_ms",
                  "none")


@dataclass(frozen=True)
class GraphPayload:
    """A graph as it travels (the gzip-compressed binary payload), and the facts Python needs about it."""

    data: bytes
    meta: Dict[str, Any]
    node_ids: List[int]
    metrics: Tuple[str, ...] = field(default=("saved_bytes", "output_bytes", "none"))

    def gzipped(self) -> bytes:
        """The payload (gzip-compressed; the same graph gives the same bytes)."""
        return self.data

    @property
    def default_colour(self) -> str:
        return default_colour(self.metrics)


def default_colour(available: Tuple[str, ...]) -> str:
    """The one default-colour rule (the viewer is told it, it does not decide): timed graphs open coloured by
    backward time; the rest by the gradient bytes backward writes (what makes the slow ``repeat`` obvious), else by
    saved bytes."""
    for m in ("bwd_ms", "grad_bytes", "saved_bytes"):
        if m in available:
            return m
    return "none"


def available_metrics(nodes: Any) -> Tuple[str, ...]:
    """The colour metrics that have a value on at least one of these node records."""
    have = {"saved_bytes", "output_bytes", "none"}
    for d in nodes:
        if (d.get("grad_bytes") or 0) > 0:
            have.add("grad_bytes")
        if d.get("bwd_ms") is not None:
            have.add("bwd_ms")
        if d.get("fwd_ms") is not None:
            have.add("fwd_ms")
        # memory-profiled graphs only (docs/memory.md); all zeros would be one flat colour, so it needs a holder
        if (d.get("peak_bytes") or 0) > 0:
            have.add("peak_bytes")
        if d.get("rank_spread_ms") is not None:
            have.add("rank_spread_ms")
        if len(have) == len(COLOUR_METRICS):
            break
    return tuple(m for m in COLOUR_METRICS if m in have)


_WHAT = ("a GradGraph (from gw.capture / gw.trace / gw.profile / gw.load_json), a dict in graphwidget schema "
         "form (docs/schema.md), or that dict's JSON string")


def graph_payload(obj: Any, *, caller: str = "GraphWidget") -> GraphPayload:
    """Accepts a GradGraph, a schema dict, or its JSON text; anything else is refused with what to pass instead, and
    a document that breaks the schema is refused naming the node and field."""
    if isinstance(obj, GradGraph):
        # Our own graph is valid by construction: take the facts from it instead of parsing its JSON back.
        nodes = obj.nx._node
        return GraphPayload(pack_graph(obj), dict(obj.meta), list(nodes), available_metrics(nodes.values()))
    if isinstance(obj, (str, bytes, bytearray)):
        data = io.parse(obj, who=caller)
    elif isinstance(obj, dict):
        data = obj
    else:
        raise TypeError(f"{caller} expects {_WHAT}; got {type(obj).__name__}.")
    if isinstance(data, dict) and data.get("format") == schema.DIFF_FORMAT:
        raise TypeError(f"{caller}: this is a diff of two graphs; show it with gw.DiffWidget(d) or "
                        f"gw.export_html(d, path).")
    try:
        g = io.from_dict(data, who=caller)  # either version: validated, then read into a graph
    except schema.SchemaError:
        raise  # it names the caller already
    except (TypeError, ValueError) as exc:
        raise ValueError(f"{caller}: {exc}") from None
    return graph_payload(g, caller=caller)

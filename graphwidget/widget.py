"""``GraphWidget``: the interactive autograd-graph view for Jupyter (anywidget).

The graph travels to the browser once, as gzip-compressed JSON in the ``_graph`` Bytes trait; the browser inflates
it with the native ``DecompressionStream``. Small traits sync both ways:

* ``selected`` — id of the selected node (or None). Clicking a node sets it; setting it from Python selects the node
  in the view (opening any group it is in) and centres it.
* ``colour_by`` — ``grad_bytes`` | ``saved_bytes`` | ``bwd_ms`` | ``fwd_ms`` | ``output_bytes`` | ``none``.
* ``height`` — pixels.
"""
from __future__ import annotations

from typing import Any, Optional

import anywidget
import traitlets

from . import _bundle
from ._bundle import COLOUR_METRICS, BundleMissingError, default_colour, graph_payload

__all__ = ["GraphWidget", "BundleMissingError"]


class GraphWidget(anywidget.AnyWidget):
    """Interactive view of an autograd graph.

    >>> w = GraphWidget(gw.capture(loss), height=500)   # doctest: +SKIP
    >>> w.selected = 12                                   # selects and centres node 12
    """

    _esm = _bundle.STATIC / _bundle.WIDGET_JS

    _graph = traitlets.Bytes(b"").tag(sync=True)
    selected = traitlets.Int(None, allow_none=True).tag(sync=True)
    colour_by = traitlets.Unicode("saved_bytes").tag(sync=True)
    height = traitlets.Int(600).tag(sync=True)

    def __init__(self, graph: Any, *, height: int = 600, selected: Optional[int] = None,
                 colour_by: Optional[str] = None, **kwargs: Any) -> None:
        path = _bundle.bundle_path(_bundle.WIDGET_JS)  # clear error before anything else
        if not isinstance(type(self).__dict__.get("_esm"), anywidget._file_contents.FileContents):
            # the bundle was built after this module was imported: send its text instead of the path
            self._esm = path.read_text(encoding="utf-8")
        payload = graph_payload(graph, caller="GraphWidget")
        self._ids = frozenset(payload.node_ids)
        super().__init__(_graph=payload.gzipped(), height=height,
                         colour_by=colour_by or default_colour(payload.meta, payload.has_grad_bytes), **kwargs)
        self.selected = selected

    def set_graph(self, graph: Any) -> None:
        """Show another graph in this widget (selection is cleared)."""
        payload = graph_payload(graph, caller="GraphWidget.set_graph")
        with self.hold_trait_notifications():
            self._ids = frozenset(payload.node_ids)
            self.selected = None
            self._graph = payload.gzipped()

    @traitlets.validate("selected")
    def _check_selected(self, proposal: Any) -> Optional[int]:
        value = proposal["value"]
        if value is not None and value not in getattr(self, "_ids", frozenset([value])):
            raise traitlets.TraitError(f"selected: the graph has no node with id {value}")
        return value

    @traitlets.validate("colour_by")
    def _check_colour(self, proposal: Any) -> str:
        value = proposal["value"]
        if value not in COLOUR_METRICS:
            raise traitlets.TraitError(f"colour_by must be one of {', '.join(COLOUR_METRICS)}; got {value!r}")
        return value

    @traitlets.validate("height")
    def _check_height(self, proposal: Any) -> int:
        value = int(proposal["value"])
        if value < 120:
            raise traitlets.TraitError(f"height must be at least 120 pixels; got {value}")
        return value

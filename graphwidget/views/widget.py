"""``GraphWidget``: the interactive autograd-graph view for Jupyter (anywidget, public API only).

The graph travels to the browser once, as the binary payload of :mod:`.packed` (typed columns, gzip-compressed) in
the ``_graph`` Bytes trait; the browser unpacks it in a worker. Small traits sync both ways:

* ``selected`` — id of the selected node (or None). Clicking a node sets it; setting it from Python selects the node
  in the view (opening any group it is in) and centres it.
* ``colour_by`` — one of the metrics the graph has (``available_metrics``): ``grad_bytes`` | ``saved_bytes`` |
  ``peak_bytes`` (memory-profiled graphs) | ``bwd_ms`` | ``fwd_ms`` | ``output_bytes`` | ``none``.
* ``height`` — pixels (at least 120).
"""
from __future__ import annotations

from typing import Any, Dict, Optional, Tuple

import anywidget
import traitlets

from .assets import WIDGET_JS, read_bundle
from .payload import COLOUR_METRICS, graph_payload

__all__ = ["GraphWidget", "BaseWidget", "PanesWidget"]

#: how to get the values of the ``peak_bytes`` colour (docs/memory.md)
_NO_PEAK = "record memory with gw.profile(..., memory=True) or gw.trace(..., memory=True)"


class BaseWidget(anywidget.AnyWidget):
    """What graphwidget's widgets share: the bundle as ESM text (read when a widget is made, so a missing build is
    a clear :class:`~graphwidget.views.assets.BundleMissingError`, never an import-time traceback), keyword
    arguments checked by name, and a rich display whose ``text/plain`` says what is shown."""

    #: Keyword arguments the constructor accepts besides its own named ones (ipywidgets layout options).
    _EXTRA_KWARGS: Tuple[str, ...] = ("layout",)
    #: The colour metrics the graphs shown have values for (set by each widget from its payload).
    _metrics: Tuple[str, ...] = COLOUR_METRICS

    height = traitlets.Int(600).tag(sync=True)

    @property
    def available_metrics(self) -> Tuple[str, ...]:
        """The colour metrics the graph (in a view of several, every graph) has values for."""
        return self._metrics

    @property
    def _esm(self) -> str:  # type: ignore[override]
        # A property, not a path: anywidget then sends the text and keeps no file watcher holding the widget alive.
        return read_bundle(WIDGET_JS)

    def _check_kwargs(self, kwargs: Dict[str, Any]) -> None:
        unknown = sorted(k for k in kwargs if k not in self._EXTRA_KWARGS)
        if unknown:
            raise TypeError(f"{type(self).__name__}() got unexpected keyword argument(s) {', '.join(unknown)}; "
                            f"it takes {', '.join(self._accepted())}.")

    def _accepted(self) -> Tuple[str, ...]:
        return ("height", "selected", "colour_by") + self._EXTRA_KWARGS

    def _plain(self) -> str:
        return object.__repr__(self)

    #: how a colour metric without values is explained: (what lacks it, how to get times)
    _NO_VALUES: Tuple[str, str] = ("this graph has", "profile the graph with gw.profile for times")

    @traitlets.validate("colour_by")
    def _check_colour(self, proposal: Any) -> str:
        value = proposal["value"]
        metrics = self._metrics
        if value not in metrics:
            what, times = self._NO_VALUES
            raise traitlets.TraitError(
                f"colour_by={value!r}: {what} no values for it; available: {', '.join(metrics)}"
                + (f" ({times})" if value in ("bwd_ms", "fwd_ms") else "")
                + (f" ({_NO_PEAK})" if value == "peak_bytes" else ""))
        return value

    @traitlets.validate("height")
    def _check_height(self, proposal: Any) -> int:
        value = int(proposal["value"])
        if value < 120:
            raise traitlets.TraitError(f"height must be at least 120 pixels; got {value}")
        return value

    def __repr__(self) -> str:
        return self._plain()


class PanesWidget(BaseWidget):
    """What the widgets of several panes share (:class:`~graphwidget.views.diff_widget.DiffWidget`,
    :class:`~graphwidget.views.nway_widget.NWayWidget`): one colour metric on one scale for every pane, pan and zoom
    in step (``sync``), and a text form from the comparison's headline (``self.diff``)."""

    colour_by = traitlets.Enum(COLOUR_METRICS, default_value="grad_bytes").tag(sync=True)
    sync = traitlets.Bool(True).tag(sync=True)
    diff: Any

    def _plain(self) -> str:
        return f"{type(self).__name__} {self.diff.headline()}"


class GraphWidget(BaseWidget):
    """Interactive view of an autograd graph.

    >>> w = GraphWidget(gw.capture(loss), height=500)   # doctest: +SKIP
    >>> w.selected = 12                                   # selects and centres node 12
    >>> w.colour_by = "grad_bytes"
    """

    _graph = traitlets.Bytes(b"").tag(sync=True)
    selected = traitlets.Int(None, allow_none=True).tag(sync=True)
    colour_by = traitlets.Enum(COLOUR_METRICS, default_value="saved_bytes").tag(sync=True)

    def __init__(self, graph: Any, *, height: int = 600, selected: Optional[int] = None,
                 colour_by: Optional[str] = None, **kwargs: Any) -> None:
        self._check_kwargs(kwargs)
        payload = graph_payload(graph, caller="GraphWidget")
        self._ids = frozenset(payload.node_ids)
        self._metrics = payload.metrics
        self._headline = _headline(graph, payload)
        super().__init__(_graph=payload.gzipped(), height=height,
                         colour_by=colour_by or payload.default_colour, **kwargs)
        self.selected = selected

    def set_graph(self, graph: Any) -> None:
        """Show another graph in this widget (selection is cleared; a colour metric the new graph lacks falls back
        to its default)."""
        payload = graph_payload(graph, caller="GraphWidget.set_graph")
        with self.hold_trait_notifications():
            self._ids = frozenset(payload.node_ids)
            self._metrics = payload.metrics
            self._headline = _headline(graph, payload)
            self.selected = None
            if self.colour_by not in payload.metrics:
                self.colour_by = payload.default_colour
            self._graph = payload.gzipped()

    def _plain(self) -> str:
        return f"GraphWidget{self._headline}"

    @traitlets.validate("selected")
    def _check_selected(self, proposal: Any) -> Optional[int]:
        value = proposal["value"]
        if value is not None and value not in getattr(self, "_ids", frozenset([value])):
            raise traitlets.TraitError(f"selected: the graph has no node with id {value}")
        return value



def _headline(graph: Any, payload: Any) -> str:
    if hasattr(graph, "headline"):
        return str(graph.headline())
    title = payload.meta.get("title")
    return f"{' ' + repr(title) if title else ''}: {len(payload.node_ids)} nodes"

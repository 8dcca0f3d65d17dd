"""``NWayWidget``: the N panes of a :class:`~graphwidget.MultiDiff` (or a RankSet's) in Jupyter (anywidget, public API
only): the export's N-way view (``js/src/nway/``), one pane per side, the reference once, side by side, on one colour
scale, a selection in one pane followed by every other.

The ``"graphwidget-nway"`` document travels once, as the binary payload of :mod:`.packed`, in the ``_nway`` Bytes
trait (the same bytes the export inlines, :func:`~graphwidget.views.nway_view.payload`; the same front-end bundle as
the other widgets: a widget with ``_nway`` bytes shows the N-way view). Small traits sync both ways:

* ``selected`` — the reference's selected node (or None). A click in any pane sets it to the clicked node's
  reference counterpart (None for a node the reference lacks); setting it from Python selects that node and centres
  it and its counterpart in every pane.
* ``selected_all`` — read-only: the node selected in every pane, in side order (None where a pane has none; where a
  side fused the node into a compiled region, that region's node, as the view marks it). :meth:`NWayWidget.select`
  selects a node of any side.
* ``colour_by`` — one colour metric for every pane (one shared scale; those every graph has values for).
* ``height`` — pixels (at least 120); ``sync`` — pan and zoom every pane together.
"""
from __future__ import annotations

from typing import Any, List, Optional, Tuple

import traitlets

from .nway_view import as_nway, metrics, payload
from .widget import PanesWidget

__all__ = ["NWayWidget"]


class NWayWidget(PanesWidget):
    """Interactive N-pane view of a :class:`graphwidget.MultiDiff`.

    >>> w = d.widget(height=500)            # doctest: +SKIP
    >>> w.selected = 3                      # reference node 3 and its counterpart in every pane
    >>> w.selected_in("compiled")           # the node selected in that side's graph
    >>> w.select(7, "refactor")             # a node of another side: every pane follows
    """

    _nway = traitlets.Bytes(b"").tag(sync=True)
    selected = traitlets.Int(None, allow_none=True).tag(sync=True)
    selected_all = traitlets.List(traitlets.Int(None, allow_none=True), read_only=True).tag(sync=True)
    _NO_VALUES = ("not every graph has", "compare with profile=True for times")

    def __init__(self, diff: Any, *, height: int = 600, selected: Optional[int] = None,
                 colour_by: Optional[str] = None, sync: bool = True, **kwargs: Any) -> None:
        self._check_kwargs(kwargs)
        d = as_nway(diff, "NWayWidget")
        self.diff = d
        self._metrics = metrics(d)
        gz, colour = payload(d)
        super().__init__(_nway=gz, height=height, sync=sync, colour_by=colour_by or colour, **kwargs)
        self.set_trait("selected_all", [None] * len(d.sides))
        if selected is not None:
            self.selected = selected

    def _accepted(self) -> Tuple[str, ...]:
        return ("height", "selected", "colour_by", "sync") + self._EXTRA_KWARGS

    # -- selection --------------------------------------------------------------------------------------------------
    def _everywhere(self, side: int, node: Optional[int]) -> List[Optional[int]]:
        """What the view selects when ``node`` of side ``side`` is: its counterpart in every pane through the
        reference, or the compiled region that covers the reference's node where a side fused it
        (``js/src/nway/model.ts``'s ``counterparts``)."""
        d = self.diff
        if node is None:
            return [None] * len(d.sides)
        got = d.counterparts(side, node)
        ref = got[d.sides[0]]
        out: List[Optional[int]] = []
        for j, label in enumerate(d.sides):
            v = got[label]
            if v is None and ref is not None:
                v = next((r["node"] for r in d.regions(j) if ref in r["covers"]), None)
            out.append(v)
        return out

    def select(self, node: Optional[int], side: Any = 0) -> None:
        """Select node ``node`` of side ``side`` (a label or an index; default the reference) and its counterpart in
        every pane; ``None`` clears every pane."""
        k = self.diff._index(side, "NWayWidget.select")
        if node is not None and node not in self.diff.graphs[self.diff.sides[k]].nx:
            raise traitlets.TraitError(f"select: side {self.diff.sides[k]!r} has no node {node}")
        every = self._everywhere(k, node)
        with self.hold_trait_notifications():
            self.set_trait("selected_all", every)
            self.selected = every[0]

    def selected_in(self, label: Any) -> Optional[int]:
        """The node selected in side ``label``'s graph."""
        return self.selected_all[self.diff._index(label, "selected_in")]

    @traitlets.validate("selected")
    def _check_selected(self, proposal: Any) -> Optional[int]:
        v = proposal["value"]
        ref = self.diff.graphs[self.diff.reference]
        if v is not None and v not in ref.nx:
            raise traitlets.TraitError(f"selected: the reference ({self.diff.reference!r}) has no node {v}")
        return v

    @traitlets.observe("selected")
    def _selected(self, change: Any) -> None:
        # A click arrives with both traits (the front end saves them together): they agree, nothing to do. Python's
        # `w.selected = n` brings every pane's selection along.
        every = self.selected_all
        if not every or every[0] != change["new"]:
            self.set_trait("selected_all", self._everywhere(0, change["new"]))

"""``NWayWidget``: the N panes of a :class:`~graphwidget.MultiDiff` in Jupyter, until the front end draws N synced
panes: the verdict table, then one :class:`~graphwidget.DiffWidget` of the reference and each side, in a column.

Selections are linked in Python: a node selected in one pane (a click, or ``selected_a`` / ``selected_b`` set from
Python) selects the same reference node in every other pane, and so its counterpart there (``DiffWidget`` selects
the counterpart of its ``selected_a``). A side's node without a reference counterpart clears the other panes.
``selected`` is that reference node, and setting it selects it everywhere.
"""
from __future__ import annotations

from typing import Any, List, Optional

import ipywidgets
import traitlets

from .diff_widget import DiffWidget
from .nway_view import as_nway, colour, static_nway_html

__all__ = ["NWayWidget"]


class NWayWidget(ipywidgets.VBox):  # type: ignore[misc]
    """``w.panes``: the diff widgets, one per side after the reference (in side order); ``w.selected``: the
    reference node selected in every pane; ``w.selected_in(label)``: the node selected in that side's graph;
    ``w.diff``: the MultiDiff.

    >>> w = d.widget(height=400)            # doctest: +SKIP
    >>> w.selected = 3                      # reference node 3 and its counterpart in every pane
    >>> w.selected_in("compiled")
    """

    selected = traitlets.Int(None, allow_none=True)

    def __init__(self, diff: Any, *, height: int = 500, colour_by: Optional[str] = None, **kwargs: Any) -> None:
        d = as_nway(diff, "NWayWidget")
        self.diff = d
        self.panes: List[DiffWidget] = [DiffWidget(d.pair(0, k), height=height, colour_by=colour_by or colour(d))
                                        for k in range(1, len(d.sides))]
        self._following = False
        super().__init__([ipywidgets.HTML(static_nway_html(d))] + self.panes, **kwargs)
        for p in self.panes:
            p.observe(self._pane_changed, names=["selected_a", "selected_b"])

    def _pane_changed(self, change: Any) -> None:
        if not self._following:
            self._follow(change["owner"].selected_a, change["owner"])

    def _follow(self, ref: Optional[int], source: Any = None) -> None:
        self._following = True
        try:
            for p in self.panes:
                if p is not source and p.selected_a != ref:
                    p.selected_a = ref
                    if ref is None:
                        p.selected_b = None
            self.selected = ref
        finally:
            self._following = False

    @traitlets.validate("selected")
    def _check_selected(self, proposal: Any) -> Optional[int]:
        v = proposal["value"]
        ref = self.diff.graphs[self.diff.reference]
        if v is not None and v not in ref.nx:
            raise traitlets.TraitError(f"selected: the reference ({self.diff.reference!r}) has no node {v}")
        return v

    @traitlets.observe("selected")
    def _selected(self, change: Any) -> None:
        if not self._following:
            self._follow(change["new"])

    def selected_in(self, label: Any) -> Optional[int]:
        """The node selected in side ``label``'s graph."""
        k = self.diff._index(label, "selected_in")
        return self.selected if k == 0 else self.panes[k - 1].selected_b

    def __repr__(self) -> str:
        return f"NWayWidget {self.diff.headline()}"

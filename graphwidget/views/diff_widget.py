"""``DiffWidget``: two autograd graphs side by side in Jupyter, matched node to node (anywidget, public API only).

The diff document travels once, as the binary payload of :mod:`.packed`, in the ``_diff`` Bytes trait (the same
front-end bundle as :class:`~graphwidget.GraphWidget`: a widget with ``_diff`` bytes shows the diff view). Small
traits sync both ways:

* ``selected_a`` / ``selected_b`` — the selected node of A / B (or None). Clicking a node selects it and its
  counterpart; setting one from Python selects that node, centres it and sets the other to its counterpart (None
  when it has none: added or removed).
* ``colour_by`` — one colour metric for both panes (one shared scale): ``grad_bytes`` | ``saved_bytes`` |
  ``peak_bytes`` | ``bwd_ms`` | ``fwd_ms`` | ``output_bytes`` | ``none`` (those both graphs have values for:
  ``available_metrics``).
* ``height`` — pixels (at least 120); ``sync`` — pan and zoom both panes together.
"""
from __future__ import annotations

from typing import Any, Optional, Tuple

import traitlets

from .diff_payload import as_diff, diff_payload
from .widget import PanesWidget

__all__ = ["DiffWidget"]


class DiffWidget(PanesWidget):
    """Interactive side-by-side view of a :class:`graphwidget.Diff`.

    >>> w = gw.DiffWidget(gw.compare(f, g, x), height=500)   # doctest: +SKIP
    >>> w.selected_a = 12          # selects A's node 12 and its counterpart in B (w.selected_b)
    >>> w.colour_by = "grad_bytes"
    """

    _diff = traitlets.Bytes(b"").tag(sync=True)
    selected_a = traitlets.Int(None, allow_none=True).tag(sync=True)
    selected_b = traitlets.Int(None, allow_none=True).tag(sync=True)
    _NO_VALUES = ("not both graphs have", "compare with profile=True for times")

    def __init__(self, diff: Any, *, height: int = 600, selected_a: Optional[int] = None,
                 selected_b: Optional[int] = None, colour_by: Optional[str] = None, sync: bool = True,
                 **kwargs: Any) -> None:
        self._check_kwargs(kwargs)
        d = as_diff(diff, caller="DiffWidget")
        payload = diff_payload(d, caller="DiffWidget")
        self.diff = d
        self._ids = (payload.ids_a, payload.ids_b)
        self._metrics = payload.metrics
        self._linking = False
        super().__init__(_diff=payload.gzipped(), height=height, sync=sync,
                         colour_by=colour_by or payload.default_colour, **kwargs)
        if selected_a is not None:
            self.selected_a = selected_a
        if selected_b is not None:
            self.selected_b = selected_b

    def _accepted(self) -> Tuple[str, ...]:
        return ("height", "selected_a", "selected_b", "colour_by", "sync") + self._EXTRA_KWARGS

    def _check_id(self, value: Optional[int], side: int) -> Optional[int]:
        ids = getattr(self, "_ids", None)
        if value is not None and ids is not None and value not in ids[side]:
            label = self.diff.labels[side]
            raise traitlets.TraitError(f"selected_{'ab'[side]}: graph {'AB'[side]} ({label!r}) has no node with id "
                                       f"{value}")
        return value

    @traitlets.validate("selected_a")
    def _check_a(self, proposal: Any) -> Optional[int]:
        return self._check_id(proposal["value"], 0)

    @traitlets.validate("selected_b")
    def _check_b(self, proposal: Any) -> Optional[int]:
        return self._check_id(proposal["value"], 1)

    @traitlets.observe("selected_a", "selected_b")
    def _link(self, change: Any) -> None:
        """Selecting a node selects its counterpart (None when it has none); clearing one side leaves the other."""
        if self._linking or change["new"] is None:
            return
        side = "a" if change["name"] == "selected_a" else "b"
        other = self.diff.counterpart(change["new"], side)
        self._linking = True
        try:
            if side == "a":
                self.selected_b = other
            else:
                self.selected_a = other
        finally:
            self._linking = False


"""Before/after: two autograd graphs matched node to node (``docs/diff.md``). Torch-free.

``match`` (which node is which: anchors, structural hashes, chain alignment, Dice extension), ``fields`` (what differs
on a matched pair), ``result`` (:class:`Diff`, :func:`diff`, the ``"graphwidget-diff"`` document), ``tables``
(by op type / source line), ``report`` (the summary in words), ``figure`` (plotly, A vs B). :func:`graphwidget.compare`
(``compare``, ``equivalence``, ``interleave``) runs two functions and needs torch; it is imported on first use.
"""
from .result import Diff, diff

__all__ = ["Diff", "diff"]

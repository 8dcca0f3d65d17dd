"""Before/after: two autograd graphs matched node to node (``docs/diff.md``). Torch-free.

``match`` (which node is which: anchors, structural hashes, chain alignment, Dice extension), ``fields`` (what differs
on a matched pair), ``result`` (:class:`Diff`, :func:`diff`, the ``"graphwidget-diff"`` document), ``tables``
(by op type / source line), ``report`` (the summary in words). :func:`graphwidget.compare`, which runs two
functions, lives in the experiment stage (``graphwidget/experiment/``); the plotly figure in ``views/diff_figure.py``.
"""
from .result import Diff, diff

__all__ = ["Diff", "diff"]

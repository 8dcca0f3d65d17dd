"""Before/after: two autograd graphs matched node to node (``docs/diff.md``). Torch-free.

``match`` (which node is which: anchors, structural hashes, chain alignment, Dice extension), ``fields`` (what
differs on a matched pair), ``result`` (:class:`Diff`; :func:`diff_graphs`, two graphs, which ``graphwidget.diff``
calls for two; the ``"graphwidget-diff"`` document), ``tables`` (by op type / source line), ``report`` (the summary
in words), ``side`` (one side's nodes as the matching reads them), ``verdicts`` (the verdicts in words), ``memory``
(the memory columns of a diff), ``multi`` (N graphs: :class:`MultiDiff`, the N-way document), ``fusion`` (what
compiled regions cover), ``markdown`` (a diff's summary as Markdown, for CI). :func:`graphwidget.compare`, which runs
two functions, lives in the experiment stage (``graphwidget/experiment/``); the plotly figure in
``views/diff_figure.py``."""
from .result import Diff, diff_graphs

__all__ = ["Diff", "diff_graphs"]

"""``trace``: run a function and capture its output's graph with every node attributed."""
from __future__ import annotations

import gc
from typing import Any, Callable, Optional

import torch

from ..model.graph import GradGraph
from .attach import attributed_capture
from .recorder import Recorder


def trace(fn: Callable[..., Any], *args: Any, module: Optional[torch.nn.Module] = None,
          title: Optional[str] = None, **kwargs: Any) -> GradGraph:
    """Run ``fn(*args, **kwargs)`` and capture the graph of its output(s), annotated with where each node was
    created: ``source`` (file:line), ``code``, ``module`` (``nn.Module`` path) and the forward output strides.

    ``fn`` returns a tensor, or a list/tuple/dict/model output containing tensors; every one that requires grad
    becomes a root. The returned graph's ``output`` is what ``fn`` returned, so you can still call ``backward`` on it.
    Parameters are named after the first ``nn.Module`` among ``module``, ``fn`` and the modules ``fn`` called.

    >>> g = gw.trace(model, x)                       # doctest: +SKIP
    >>> g.node(g.nodes(op="AddmmBackward0")[0])["module"]   # doctest: +SKIP
    'head'
    """
    if not callable(fn):
        raise TypeError(f"graphwidget.trace expects a callable (a function or nn.Module) as its first argument; "
                        f"got {type(fn).__name__}. To capture a tensor you already have, use gw.capture(tensor).")
    rec = Recorder()
    gc_was = gc.isenabled()
    try:
        try:
            with rec:
                out = rec.call(fn, *args, **kwargs)
        finally:
            rec.close()  # again (idempotent): an interrupt inside the with block's exit leaves nothing behind
        return attributed_capture(rec, out, fn=fn, module=module, title=title, who="graphwidget.trace")
    finally:
        if gc_was:  # the capture pauses the collector; an interrupt can skip the end of that pause
            gc.enable()

"""The one "attach attribution" step: capture the graph of what a recorded forward returned and write each node's
source line, code, module path and output strides (and forward time, when timed) into it.

Used by :func:`graphwidget.trace`, :func:`graphwidget.profile`, the torch.profiler cross-check and the magics. The
order matters and lives only here: the recorder matches torch's *absolute* sequence numbers, so it annotates before
:func:`~graphwidget.capturing.api.finalize` ranks them.
"""
from __future__ import annotations

from typing import Any, List, Optional

import torch

from .._util.gc import gc_paused
from ..capturing.api import capture_raw, finalize
from ..capturing.roots import grad_tensors
from ..model.graph import GradGraph
from .recorder import Recorder


def no_graph_error(out: Any, who: str) -> ValueError:
    return ValueError(
        f"{who}: the function returned {type(out).__name__} with no tensor that requires grad, so there is no graph. "
        f"Return the tensor you would call .backward() on (e.g. the loss), and make sure its inputs require grad and "
        f"no torch.no_grad()/inference_mode() is active.")


def attributed_capture(rec: Recorder, out: Any, *, fn: Any = None, module: Optional[torch.nn.Module] = None,
                       title: Optional[str] = None, roots: Optional[List[torch.Tensor]] = None,
                       who: str = "graphwidget.trace") -> GradGraph:
    """Capture the graph of ``roots`` (default: every tensor in ``out`` that requires grad) and annotate it from
    ``rec``. Parameters are named after the first ``nn.Module`` among ``module``, ``fn`` and the outermost module
    the forward called."""
    if roots is None:
        roots = grad_tensors(out)
    if not roots:
        raise no_graph_error(out, who)
    mod = module
    if mod is None and isinstance(fn, torch.nn.Module):
        mod = fn
    if mod is None and rec.top_modules:
        mod = rec.top_modules[0]
    with gc_paused():
        graph = capture_raw(roots if len(roots) > 1 else roots[0], module=mod, title=title)
        rec.annotate(graph)
        finalize(graph)
    graph.output = out
    return graph

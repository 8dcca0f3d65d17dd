"""``trace_call`` (what ``gw.trace`` calls): run a function and capture its output's graph, every node
attributed."""
from __future__ import annotations

import gc
from typing import Any, Callable, Optional

import torch

from .._util.keywords import refuse_shadowed_options
from ..model.graph import GradGraph
from .attach import attributed_capture
from .recorder import Recorder


@refuse_shadowed_options("graphwidget.trace", "fn")
def trace_call(fn: Callable[..., Any], *args: Any, module: Optional[torch.nn.Module] = None,
               title: Optional[str] = None, memory: bool = False, **kwargs: Any) -> GradGraph:
    """Run ``fn(*args, **kwargs)`` and capture the graph of its output(s), annotated with where each node was
    created: ``source`` (file:line), ``code``, ``module`` (``nn.Module`` path) and the forward output strides.

    ``fn`` returns a tensor, or a list/tuple/dict/model output containing tensors; every one that requires grad
    becomes a root. The returned graph's ``output`` is what ``fn`` returned, so you can still call ``backward`` on it.
    Parameters are named after the first ``nn.Module`` among ``module``, ``fn`` and the modules ``fn`` called.

    ``memory=True`` runs the forward under ``torch.profiler``'s memory events and records the allocator's bytes at
    every forward op and which storages each module received (docs/memory.md). No backward runs, so ``g.memory()``
    predicts the backward's order from the nodes' sequence numbers (as the engine orders them) and its peak comes
    from the graph's accounting, not the allocator; ``gw.profile(..., memory=True)`` measures both.

    >>> g = gw.trace(model, x)                       # doctest: +SKIP
    >>> g.node(g.nodes(op="AddmmBackward0")[0])["module"]   # doctest: +SKIP
    'head'
    """
    if not callable(fn):
        raise TypeError(f"graphwidget.trace expects a callable (a function or nn.Module) as its first argument; "
                        f"got {type(fn).__name__}. To capture a tensor you already have, use gw.capture(tensor).")
    probe = None
    if memory:
        from .memory import MemoryProbe, MemoryRecorder, device_of
        rec: Recorder = MemoryRecorder()
        probe = MemoryProbe(device_of(fn, args, kwargs), reach=(fn, args, kwargs))
    else:
        rec = Recorder()
    gc_was = gc.isenabled()
    try:
        try:
            if probe is not None:
                probe.__enter__()
            with rec:
                out = rec.call(fn, *args, **kwargs)
        finally:
            rec.close()  # again (idempotent): an interrupt inside the with block's exit leaves nothing behind
            if probe is not None:
                probe.close()
        graph = attributed_capture(rec, out, fn=fn, module=module, title=title, who="graphwidget.trace")
        if probe is not None:
            from ..capturing.roots import grad_tensors, root_nodes
            probe.note_inputs(graph, rec, root_nodes(grad_tensors(out)))
            probe.record(graph, False, probe.module_ids)
            graph.memory()  # each node's peak_bytes (the analysis lives behind the graph's facade)
        return graph
    finally:
        if gc_was:  # the capture pauses the collector; an interrupt can skip the end of that pause
            gc.enable()

"""The clear refusal when a measuring call runs while a CUDA graph is being captured.

``torch.cuda.graph(...)`` and ``torch.cuda.make_graphed_callables`` record the current stream's work into a graph
instead of running it. While they record, a timing event (``Event(enable_timing=True).record()``), a synchronise or a
read of the allocator's counters is refused by CUDA, or invalidates the capture (``cudaErrorStreamCaptureInvalidated``)
deep inside the measurement, an error that names neither graphwidget nor what to do. So ``profile``, ``compare`` and
the memory run check first and say why they cannot run there. ``capture`` and ``trace`` without ``memory`` only read
the autograd graph and tensor metadata, and run during a capture as anywhere else.
"""
from __future__ import annotations

import torch


def cuda_graph_capturing() -> bool:
    """Whether the current CUDA stream is being captured into a CUDA graph (never, when CUDA was not initialised:
    nothing can be capturing, and asking must not initialise it)."""
    if not torch.cuda.is_initialized():
        return False
    return bool(torch.cuda.is_current_stream_capturing())


def refuse_during_cuda_graph_capture(who: str) -> None:
    """Raise a ``RuntimeError`` naming ``who`` and the way out when the current stream is being captured."""
    if cuda_graph_capturing():
        raise RuntimeError(
            f"{who} cannot run while a CUDA graph is being captured on the current stream (inside "
            f"torch.cuda.graph(...), or make_graphed_callables while it records): it times with CUDA events, "
            f"synchronises and reads the allocator, and CUDA allows none of these during stream capture. Call it "
            f"outside the capture: on the eager step, or on a callable from torch.cuda.make_graphed_callables, "
            f"which replays its graphs as one autograd node each. gw.capture and gw.trace (without memory=True) "
            f"do run inside a capture.")

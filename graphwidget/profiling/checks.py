"""What a profiled call differentiates, which clock it needs, and the error when runs disagree: shared by
:func:`~graphwidget.profiling.runner.run_profile`, its ``torch.profiler`` cross-check and the diff's interleaved
timing."""
from __future__ import annotations

from typing import Any, List

import torch

from ..attribution.attach import no_graph_error
from ..capturing.roots import loss_or_tensors
from .hooks import Run, first_difference


def select_roots(out: Any) -> List[torch.Tensor]:
    """What to differentiate (see :func:`graphwidget.capturing.roots.loss_or_tensors`), or a clear error."""
    tensors = loss_or_tensors(out)
    if not tensors:
        raise no_graph_error(out, "graphwidget.profile")
    return tensors


def structure_error(k: Any, ref: Run, run: Run) -> ValueError:
    i = first_difference(ref, run)

    def at(r: Run) -> str:
        return f"{r.types[i].__name__} with {r.arity[i]} inputs" if i < len(r.types) else "end of graph"
    return ValueError(
        f"graphwidget.profile: run {k} built a different graph than run 0 ({len(ref.types)} vs {len(run.types)} "
        f"nodes; first difference at node {i}: {at(ref)} vs {at(run)}). Nodes are matched across runs by position, "
        f"so fn must build the same graph on every call (no data-dependent branches, no growing state); to profile "
        f"a single run use repeat=1, warmup=0.")

"""The measured memory peak of one plain step (forward + backward) of a compared side: what
``gw.compare(..., memory=True)`` reports beside the step time. One extra run per side, after the timed ones, with
no hooks; the allocator's peak above what was allocated when the step began (:func:`graphwidget.attribution.memory.
step_peak`)."""
from __future__ import annotations

from typing import Any, Callable, Dict, Mapping, Sequence

import torch

from ..attribution.memory import step_peak
from ..profiling.checks import select_roots


def measure_peak(fn: Callable[..., Any], args: Sequence[Any], kwargs: Mapping[str, Any],
                 before: Callable[[], None], leaves: Sequence[torch.Tensor], guard: Any,
                 device: torch.device) -> Dict[str, Any]:
    """Reset state (``before``), then one call of ``fn`` and the backward of its output under the allocator's
    watch; ``leaves``' ``.grad`` are cleared by ``guard`` first, as in the timed runs."""
    before()

    def step() -> None:
        out = fn(*args, **kwargs)
        roots = select_roots(out)
        guard.before_backward(list(leaves))
        torch.autograd.backward(roots, [torch.ones_like(r) for r in roots])

    return step_peak(step, device)

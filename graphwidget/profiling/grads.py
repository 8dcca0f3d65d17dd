"""Keeping the user's ``.grad`` as if one plain backward had run, however many runs profile makes."""
from __future__ import annotations

from typing import Dict, Optional, Sequence, Tuple

import torch


class Grads:
    """Keeps the user's leaves as if ``fn(*args).backward()`` had run once: each run starts from ``.grad = None``;
    at the end ``.grad`` is the original value plus one run's gradient (added in place, as autograd does)."""

    def __init__(self) -> None:
        self.saved: Dict[int, Tuple[torch.Tensor, Optional[torch.Tensor]]] = {}

    def before_backward(self, leaves: Sequence[torch.Tensor]) -> None:
        for v in leaves:
            if id(v) not in self.saved:
                self.saved[id(v)] = (v, v.grad)
            v.grad = None

    def finish(self, ok: bool) -> None:
        """Restore each leaf's ``.grad`` (plus one run's gradient when ``ok``). Each leaf is taken off the list as it
        is handled, so a second call (after an interrupt) never adds a gradient twice."""
        while self.saved:
            v, orig = self.saved.popitem()[1]
            new = v.grad
            if orig is None:
                if not ok:
                    v.grad = None
                continue
            v.grad = orig
            if ok and new is not None:
                # In place, as AccumulateGrad does, without recording it: detach() rather than a no_grad() block,
                # whose exit an interrupt could skip (leaving grad mode off for the rest of the thread).
                orig.detach().add_(new)

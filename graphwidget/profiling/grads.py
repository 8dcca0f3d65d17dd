"""Keeping the user's ``.grad`` as if one plain backward had run, however many runs profile makes."""
from __future__ import annotations

from typing import Dict, Iterable, Optional, Sequence, Tuple

import torch

from .._util.interrupts import deferred_interrupts


class Grads:
    """Keeps the user's leaves as if ``fn(*args).backward()`` had run once: each run starts from ``.grad = None``;
    at the end ``.grad`` is the original value plus one run's gradient (added in place, as autograd does).

    The leaves are the outer graph's (handed to :meth:`before_backward` at every run) and every tensor
    :meth:`watch` was given: a parameter used inside a reentrant ``torch.utils.checkpoint`` block is a leaf only of
    the graph recomputed inside the backward, never of the graph profile walks, yet its ``.grad`` is written."""

    def __init__(self) -> None:
        self.saved: Dict[int, Tuple[torch.Tensor, Optional[torch.Tensor]]] = {}
        #: set when the commit (``finish(True)``) has begun: from then on every call completes it, none undoes it
        self.committed = False

    def watch(self, tensors: Iterable[torch.Tensor]) -> None:
        """Also keep (and clear before each backward) the ``.grad`` of these tensors: the leaves among them that
        require grad (others never receive one)."""
        saved = self.saved
        for v in tensors:
            if id(v) not in saved and isinstance(v, torch.Tensor) and v.requires_grad and v.grad_fn is None:
                saved[id(v)] = (v, v.grad)

    def before_backward(self, leaves: Sequence[torch.Tensor]) -> None:
        saved = self.saved
        for v in leaves:
            if id(v) not in saved:
                saved[id(v)] = (v, v.grad)
        # Every kept tensor, not only these leaves: a watched one may receive a gradient in this backward too.
        for v, _ in saved.values():
            v.grad = None

    def finish(self, ok: bool) -> None:
        """Put every kept tensor's ``.grad`` back: the original object, plus one run's gradient when ``ok`` (the
        commit). All at once with Ctrl-C held back, so the state is never half restored: an interrupt during it is
        raised after, with the restore complete. Idempotent (callers call it again from an outer ``finally``, since
        an exception can also come before the held block begins); once a commit has begun, a later call with
        ``ok=False`` completes it rather than undoing half of it."""
        with deferred_interrupts():
            try:
                self._finish(ok)
            finally:
                self._finish(ok)

    def _finish(self, ok: bool) -> None:
        if ok:
            self.committed = True
        ok = self.committed
        saved = self.saved
        while saved:
            key = next(iter(saved))
            v, orig = saved[key]
            new = v.grad
            # Each tensor is put back and taken off the list on one line: an exception between two lines leaves it
            # either done and gone or untouched and listed, so the next pass neither skips it nor adds twice.
            # In place, as AccumulateGrad does, without recording it: detach() rather than a no_grad() block,
            # whose exit an exception could skip (leaving grad mode off for the rest of the thread).
            if ok and orig is not None and new is not None:
                v.grad = orig; orig.detach().add_(new); del saved[key]  # noqa: E702
            elif ok and orig is None:
                del saved[key]  # the last run's gradient is the one a plain backward leaves
            else:
                v.grad = orig; del saved[key]  # noqa: E702

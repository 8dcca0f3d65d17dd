"""What :func:`graphwidget.compare` may change, saved before it runs and put back before every run and at the end.

Each side must start from the same state and the caller must get back the state it had: the values of every
parameter, buffer and tensor the two functions can reach (a forward that updates a weight in place, BatchNorm's
running statistics), the random number generators, grad mode and the default dtype. A restore is idempotent and is
run again from a ``finally`` (an exception at any line of the first pass leaves nothing half done) with Ctrl-C held
back until it has finished; the collector is switched back on too, if an interrupt in a paused region left it off.
"""
from __future__ import annotations

import gc
from typing import Dict, List, Optional, Sequence, Tuple

import torch

from .._util.interrupts import deferred_interrupts


def _where(t: torch.Tensor) -> Tuple[object, ...]:
    """What identifies a tensor's data (``t.data`` is a new object at every access, so it cannot be compared)."""
    return t.dtype, tuple(t.shape), t.stride(), t.storage_offset(), t.untyped_storage().data_ptr()


class Saved:
    """One tensor as it was: its data (a forward may swap it: ``p.data = ...``), a copy of its values and its
    version counter. ``always``: copied back at every reset, whatever its version counter says — buffers (BatchNorm
    updates its running statistics inside its kernel, without moving the counter) and tensors found changed behind
    the counter's back (``p.data.mul_(...)``: ``.data`` has a counter of its own)."""

    __slots__ = ("tensor", "data", "where", "copy", "version", "always")

    def __init__(self, t: torch.Tensor, always: bool) -> None:
        self.tensor = t
        self.data = t.data  # keeps the original storage alive, to put it back
        self.where = _where(t)
        self.copy = t.detach().clone()
        self.version = t._version
        self.always = always


class State:
    """Values of ``tensors`` (leaves: parameters, buffers, reachable tensors; each once), the RNG states of the CPU
    and of the CUDA ``devices``, grad mode and the default dtype, as they were when this was made."""

    def __init__(self, tensors: Sequence[torch.Tensor], devices: Sequence[torch.device],
                 buffers: Sequence[torch.Tensor] = ()) -> None:
        self.saved: List[Saved] = []
        seen: set = set()
        always = {id(b) for b in buffers}
        for t in tensors:
            if id(t) not in seen and t.grad_fn is None and t.layout == torch.strided:
                seen.add(id(t))
                self.saved.append(Saved(t, id(t) in always))
        self.cpu_rng = torch.get_rng_state()
        self.cuda = sorted({d.index or 0 for d in devices if d.type == "cuda"})
        self.cuda_rng = [torch.cuda.get_rng_state(i) for i in self.cuda]
        self.grad_enabled = torch.is_grad_enabled()
        self.default_dtype = torch.get_default_dtype()
        self.gc_enabled = gc.isenabled()

    def changed(self) -> List[torch.Tensor]:
        """The tensors whose values (or data) differ from the saved ones: every value is compared (a change may
        not move the version counter); one found changed is copied back at every reset from now on."""
        out = []
        for s in self.saved:
            t = s.tensor
            if _where(t) != s.where or not torch.equal(t.detach(), s.copy):
                out.append(t)
                s.always = True
        return out

    def _restore(self) -> None:
        for s in self.saved:
            t = s.tensor
            if _where(t) != s.where:
                t.data = s.data
            if s.always or t._version != s.version:
                # detach(): the write is not recorded, and no no_grad() block whose exit an interrupt could skip
                t.detach().copy_(s.copy)
                s.version = t._version
        torch.set_rng_state(self.cpu_rng)
        for i, st in zip(self.cuda, self.cuda_rng):
            torch.cuda.set_rng_state(st, i)
        torch.set_grad_enabled(self.grad_enabled)
        if self.gc_enabled and not gc.isenabled():
            gc.enable()
        if torch.get_default_dtype() != self.default_dtype:
            torch.set_default_dtype(self.default_dtype)

    def reset(self) -> None:
        """Put everything back as it was (before every run, and at the end). Idempotent: callers run it again from
        an outer ``finally``, so that an exception at any line of one pass leaves the next to finish the job."""
        with deferred_interrupts():
            try:
                self._restore()
            finally:
                self._restore()  # again: an exception inside the first pass must not leave a tensor half restored


def mutations(state: State, names: Dict[int, str], inputs: Sequence[Tuple[str, torch.Tensor]],
              input_versions: Optional[Dict[int, int]] = None) -> List[str]:
    """What one side changed in place, each once: ``input <path>`` for its copies of the inputs whose values changed or
    whose version counter moved (``input_versions``: id -> version before the side ran), the names of the other
    reachable tensors whose values changed."""
    path = {id(t): p for p, t in inputs}
    found = {id(t) for t in state.changed()}
    out = [f"input {p}" for p, t in inputs
           if id(t) in found or (input_versions is not None
                                 and t._version != input_versions.get(id(t), t._version))]
    out += [names.get(id(s.tensor)) or f"a tensor of shape {list(s.tensor.shape)}" for s in state.saved
            if id(s.tensor) in found and id(s.tensor) not in path]
    return out

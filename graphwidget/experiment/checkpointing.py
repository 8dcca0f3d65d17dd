"""``with_checkpoint``: the same model with some modules recomputed in backward (``torch.utils.checkpoint``,
non-reentrant), to measure a checkpoint candidate with :func:`graphwidget.compare` before editing the model."""
from __future__ import annotations

from typing import Any, Dict, List, Sequence

import torch
from torch.utils.checkpoint import checkpoint


class Checkpointed(torch.nn.Module):
    """``model`` with each module in ``paths`` run under its own ``torch.utils.checkpoint`` while this wrapper is
    called. The parameters are the model's own (not copies), so :func:`graphwidget.compare` pairs them with the
    plain model's and both sides train the same weights. The model itself is left as it was between calls."""

    def __init__(self, model: torch.nn.Module, paths: Sequence[str], use_reentrant: bool = False,
                 preserve_rng_state: bool = True) -> None:
        super().__init__()
        named = dict(model.named_modules())
        missing = [p for p in paths if p not in named]
        if missing:
            near = sorted(n for n in named if n and n.split(".")[-1] == missing[0].split(".")[-1])[:5]
            raise ValueError(f"with_checkpoint: {missing[0]!r} is not a module path of this "
                             f"{type(model).__name__}" + (f"; modules of that name: {near}" if near else "") +
                             ". Use the paths g.memory().candidates lists (model.named_modules() names).")
        if not paths:
            raise ValueError("with_checkpoint: name at least one module path to checkpoint, e.g. "
                             "['transformer.h.3'].")
        self.model = model
        self.paths: List[str] = list(paths)
        self._targets = [named[p] for p in self.paths]
        self._kw: Dict[str, Any] = {"use_reentrant": use_reentrant, "preserve_rng_state": preserve_rng_state}

    def forward(self, *args: Any, **kwargs: Any) -> Any:
        patched = []
        try:
            for m in self._targets:
                orig = m.forward

                def run(*a: Any, _orig: Any = orig, **k: Any) -> Any:
                    return checkpoint(_orig, *a, **self._kw, **k)

                m.forward = run  # an instance attribute: nn.Module.__call__ looks up self.forward
                patched.append(m)
            return self.model(*args, **kwargs)
        finally:
            for m in patched:
                m.__dict__.pop("forward", None)


def with_checkpoint(model: torch.nn.Module, modules: Sequence[str], **options: Any) -> Checkpointed:
    """``model`` with each module path in ``modules`` checkpointed (``torch.utils.checkpoint.checkpoint(...,
    use_reentrant=False)``, each its own checkpoint), sharing the model's parameters. Measure a candidate::

        d = gw.compare(model, gw.with_checkpoint(model, ["transformer.h.3"]), x, memory=True, profile=True)
        print(d.report())     # peak A vs B (measured), step time A vs B (measured)
    """
    if isinstance(modules, str):
        modules = [modules]
    return Checkpointed(model, list(modules), **options)

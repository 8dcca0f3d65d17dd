"""Running one side again in float64: the independent truth the equivalence verdict is judged against.

The side's inputs are copied in float64 (complex128), and for the run every floating leaf tensor it can reach —
parameters, buffers, tensors in closures and globals — has its data swapped for a float64 copy (the same Python
objects, so a closure sees them), with float64 as the default dtype (``torch.ones(3)`` inside the forward is float64
too). Everything is swapped back afterwards, even on an error. A ``torch.compile``'d callable runs uncompiled here:
the same maths, without compiling it again for new dtypes.

What precision the reference really ran in is counted as it runs (the floating dtype of every op's result, through a
``TorchFunctionMode``), not read from a captured graph: a forward may force its own dtype (``t.half()``), and a plain
capture on an older torch does not know the dtypes of intermediate results.
"""
from __future__ import annotations

from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

import torch
from torch.overrides import TorchFunctionMode

from ..attribution.intercept import push_mode, remove_mode


def uncompiled(fn: Any) -> Any:
    """What a ``torch.compile``'d module or function wraps (``fn`` itself otherwise)."""
    inner = getattr(fn, "_orig_mod", None)
    if isinstance(fn, torch.nn.Module) and isinstance(inner, torch.nn.Module):
        return inner
    orig = getattr(fn, "_torchdynamo_orig_callable", None)
    return orig if callable(orig) else fn


def _wide(t: torch.Tensor) -> torch.dtype:
    return torch.complex128 if t.is_complex() else torch.float64


class Float64:
    """While widened: every floating leaf of the given tensors holds float64 (complex128) data, and float64 is the
    default dtype. :meth:`restore` puts both back and may be called any number of times, so that a caller can call
    it from two nested clean-ups: one Ctrl-C can skip one of them (see :func:`run_float64`), never both."""

    def __init__(self) -> None:
        self.swapped: List[Tuple[torch.Tensor, torch.Tensor]] = []
        self.previous: Optional[torch.dtype] = None

    def widen(self, tensors: Sequence[torch.Tensor]) -> None:
        self.previous = torch.get_default_dtype()
        torch.set_default_dtype(torch.float64)
        for t in tensors:
            if t.grad_fn is None and (t.is_floating_point() or t.is_complex()) and t.dtype != _wide(t):
                self.swapped.append((t, t.data))
                t.data = t.data.to(_wide(t))

    def restore(self) -> None:
        for t, data in reversed(self.swapped):  # every one again when repeated: an interrupted pass skips none
            t.data = data
        self.swapped.clear()
        if self.previous is not None:
            torch.set_default_dtype(self.previous)
            self.previous = None


class DtypeCounter(TorchFunctionMode):
    """Counts the floating dtypes of the tensors every torch function returns while it is active."""

    def __init__(self) -> None:
        super().__init__()
        self.counts: Dict[str, int] = {}

    def _count(self, value: Any) -> None:
        if isinstance(value, torch.Tensor):
            if value.is_floating_point() or value.is_complex():
                name = str(value.dtype).replace("torch.", "")
                self.counts[name] = self.counts.get(name, 0) + 1
        elif isinstance(value, (tuple, list)):
            for v in value:
                self._count(v)

    def __torch_function__(self, func: Any, types: Any, args: Any = (), kwargs: Any = None) -> Any:
        result = func(*args, **(kwargs or {}))
        self._count(result)
        return result


def run_float64(fn: Callable[..., Any], args: Sequence[Any], kwargs: Any, tensors: Sequence[torch.Tensor],
                collect: Any = None, draws: Optional[torch.dtype] = None, backward: bool = True
                ) -> Tuple[Any, List[Tuple[torch.Tensor, Any]], Dict[str, int]]:
    """``fn`` on ``args``/``kwargs`` (float64 copies of the inputs) with ``tensors`` upcast: its output, each leaf
    with its gradient, and how many op results of each floating dtype its forward made (``{"float64": 40,
    "float32": 1}``). ``backward=False``: the forward only (no leaves).

    ``collect``: a :class:`~.values.Collector` that keeps the run's per-node values. ``draws``: the dtype the side's
    own run drew its random numbers in (it advanced the generator): random calls then draw in that dtype and are
    widened (:func:`same_draws`), so the reference sees the same numbers as the run."""
    if draws is not None and collect is None:
        from .values import Collector
        collect = Collector(None)
        collect.nodes = None  # no values: the mode only redraws
    counter, wide = DtypeCounter(), Float64()
    # The clean-up twice, each idempotent, the second in this frame around the call: a Ctrl-C can land after the
    # run's own clean-up was due and before it ran (on the line where a block is left, or as a Python __exit__ is
    # entered). A mode left on the stack would see every later torch call, and float64 would stay the default dtype.
    try:
        out, leaves, grads = _run_wide(fn, args, kwargs, tensors, counter, wide, collect, draws, backward)
    finally:
        if collect is not None:
            collect.reference_stop()
        remove_mode(counter)
        wide.restore()
    for t in leaves:
        counter._count(t)
    return out, [(t, None if g is None else g.detach()) for t, g in zip(leaves, grads)], counter.counts


def _run_wide(fn: Callable[..., Any], args: Sequence[Any], kwargs: Any, tensors: Sequence[torch.Tensor],
              counter: DtypeCounter, wide: Float64, collect: Any = None, draws: Optional[torch.dtype] = None,
              backward: bool = True) -> Tuple[Any, List[torch.Tensor], Sequence[Any]]:
    """:func:`run_float64`'s run: the forward under ``counter`` (and ``collect``'s mode), widened by ``wide``,
    then the gradients (none with ``backward=False``)."""
    from ..capturing.roots import loss_or_tensors
    from .gradients import gradients
    from .naming import leaf_tensors
    try:
        wide.widen(tensors)
        push_mode(counter)
        try:
            if collect is not None:
                collect.reference_start(same_draws(draws) if draws is not None else None)
            out = uncompiled(fn)(*args, **kwargs)
        finally:
            if collect is not None:
                collect.reference_stop()
            remove_mode(counter)
        if not backward:
            return out, [], ()
        roots = loss_or_tensors(out)
        if not roots:
            raise ValueError("the float64 run returned no tensor that requires grad")
        handles: List[Any] = []
        if collect is not None:
            collect.reference_forward_done(roots)
            handles = collect.reference_hooks()
        try:
            # torch.autograd.grad, or .backward() for reentrant checkpoints
            leaves, grads = gradients(roots, leaf_tensors(roots), tensors)
        finally:
            if collect is not None:
                collect.reference_done(handles)
    finally:
        wide.restore()
    return out, leaves, grads


#: Random calls that create numbers of the default (or a given) floating dtype.
_CREATE = {"rand", "randn"}
#: Random calls shaped like a tensor argument.
_LIKE = {"rand_like", "randn_like"}
#: In-place random fills of a tensor.
_FILL = {"uniform_", "normal_", "bernoulli_", "exponential_", "cauchy_", "log_normal_", "geometric_"}
#: Calls that multiply a tensor by a random mask.
_MASK = {"dropout", "feature_dropout", "dropout1d", "dropout2d", "dropout3d"}


def same_draws(run_dtype: torch.dtype) -> Callable[[Any, Sequence[Any], Any], Any]:
    """A call wrapper for the float64 run of a side that drew random numbers: each random call draws in
    ``run_dtype`` (what the side's run drew in, from the same generator state) and the result is widened, so both
    runs see the same numbers; a generator draws other numbers for other dtypes, and a float64 reference that drew
    its own would differ from the run by the draws, not by rounding."""
    wide = torch.float64

    def call(func: Any, args: Sequence[Any], kwargs: Any) -> Any:
        name = getattr(func, "__name__", "")
        kwargs = dict(kwargs or {})
        if name in _CREATE and kwargs.get("dtype") in (None, wide):
            kwargs["dtype"] = run_dtype
            grad = kwargs.pop("requires_grad", False)
            return func(*args, **kwargs).to(wide).requires_grad_(grad)
        if name in _LIKE and args and isinstance(args[0], torch.Tensor) and args[0].dtype == wide \
                and kwargs.get("dtype") in (None, wide):
            with torch.no_grad():
                like = torch.empty_like(args[0], dtype=run_dtype)
            return func(like, *args[1:], **kwargs).to(wide)
        if name in _FILL and args and isinstance(args[0], torch.Tensor) and args[0].dtype == wide:
            with torch.no_grad():
                tmp = torch.empty_like(args[0], dtype=run_dtype)
                getattr(tmp, name)(*args[1:], **kwargs)
                return args[0].copy_(tmp)
        if name in _MASK and args and isinstance(args[0], torch.Tensor) and args[0].dtype == wide:
            x = args[0]
            inplace = bool(kwargs.pop("inplace", False))
            with torch.no_grad():
                mask = func(torch.ones_like(x, dtype=run_dtype), *args[1:], **kwargs).to(wide)
            return x.mul_(mask) if inplace else x * mask
        return func(*args, **kwargs)

    return call

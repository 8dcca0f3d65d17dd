""":func:`compare`: run two implementations of a forward pass on the same inputs, check that they compute the same
outputs and gradients, capture (and optionally time, interleaved) both graphs, and match them node to node.

Isolation: each side runs on its **own copy** of every tensor argument (same values, dtype, device, memory format
and ``requires_grad``), so the caller's tensors and their ``.grad`` are never touched and the two sides never
accumulate into each other. ``nn.Module``\\ s, ``nn.Parameter``\\ s and other objects are used as given; the
``.grad`` of every parameter is saved and restored (the equivalence run computes gradients with
``torch.autograd.grad``, which writes no ``.grad``; the timed runs clear and restore it), and so are the modules'
buffers (BatchNorm running statistics) and the random number generator: both sides start from the same state,
and the caller gets back the state it had.

Naming: input leaves are named after their argument, ``arg0``, ``arg1[2]`` or the keyword (``img``); parameters
after their module path (``fc1.weight``; prefixed with the argument, ``arg0.fc1.weight``, when several modules are
involved). Names anchor the matching (``docs/diff.md``) and label the gradients compared.
"""
from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Callable, Dict, Iterator, List, Optional, Sequence, Tuple

import torch

from ..analysis.diff.result import Diff, build, check_labels
from ..attribution.attach import attributed_capture
from ..attribution.recorder import Recorder
from ..capturing.roots import loss_or_tensors
from ..model.graph import GradGraph
from .equivalence import check, describe, flatten

__all__ = ["compare", "CompareError", "StructureMismatch"]


class CompareError(RuntimeError):
    """One side of :func:`compare` raised; ``side`` is ``"A"`` or ``"B"``, the original exception is the cause."""

    def __init__(self, message: str, side: str) -> None:
        super().__init__(message)
        self.side = side


class StructureMismatch(ValueError):
    """The two functions return differently structured values (a tensor vs a tuple, other keys, ...)."""


# -- inputs ---------------------------------------------------------------------------------------------------------
def _copy(obj: Any, path: str, names: List[Tuple[str, torch.Tensor]], seen: Dict[int, Any]) -> Any:
    """``obj`` with every plain tensor replaced by a detached clone (same requires_grad), recording the clones'
    names. Containers are rebuilt; modules, parameters and other objects are passed through."""
    if isinstance(obj, torch.nn.Parameter) or isinstance(obj, torch.nn.Module):
        return obj
    if isinstance(obj, torch.Tensor):
        if id(obj) in seen:  # the same tensor passed twice stays one tensor
            return seen[id(obj)]
        c = obj.detach().clone()
        if obj.requires_grad:
            c.requires_grad_(True)
        seen[id(obj)] = c
        names.append((path, c))
        return c
    if isinstance(obj, tuple) and hasattr(obj, "_fields"):  # namedtuple
        return type(obj)(*(_copy(v, f"{path}.{f}", names, seen) for f, v in zip(obj._fields, obj)))
    if isinstance(obj, (list, tuple)):
        return type(obj)(_copy(v, f"{path}[{i}]", names, seen) for i, v in enumerate(obj))
    if isinstance(obj, dict):
        return type(obj)((k, _copy(v, f"{path}[{k!r}]", names, seen)) for k, v in obj.items())
    return obj


def copy_inputs(args: Sequence[Any], kwargs: Mapping[str, Any]) -> Tuple[List[Any], Dict[str, Any],
                                                                          List[Tuple[str, torch.Tensor]]]:
    """Copies of the arguments and ``(name, tensor copy)`` for every tensor among them."""
    names: List[Tuple[str, torch.Tensor]] = []
    seen: Dict[int, Any] = {}
    a = [_copy(v, f"arg{i}", names, seen) for i, v in enumerate(args)]
    k = {key: _copy(v, key, names, seen) for key, v in kwargs.items()}
    return a, k, names


def _modules(fn: Any, args: Sequence[Any], kwargs: Mapping[str, Any]) -> List[Tuple[str, torch.nn.Module]]:
    """``(prefix, module)`` for ``fn`` (prefix "") and every module among the arguments (prefix: the argument)."""
    found: List[Tuple[str, torch.nn.Module]] = []
    if isinstance(fn, torch.nn.Module):
        found.append(("", fn))

    def visit(obj: Any, path: str) -> None:
        stack = [(obj, path)]
        while stack:
            o, p = stack.pop()
            if isinstance(o, torch.nn.Module):
                found.append((p, o))
            elif isinstance(o, (list, tuple)):
                stack.extend(reversed([(v, f"{p}[{i}]") for i, v in enumerate(o)]))
            elif isinstance(o, dict):
                stack.extend(reversed([(v, f"{p}[{k!r}]") for k, v in o.items()]))

    for i, v in enumerate(args):
        visit(v, f"arg{i}")
    for key, v in kwargs.items():
        visit(v, key)
    return found


def named_parameters(mods: Sequence[Tuple[str, torch.nn.Module]]) -> List[Tuple[str, torch.Tensor]]:
    """Every distinct parameter of the modules with its name; prefixed by the argument only when the modules are
    not all one."""
    distinct = {id(m) for _, m in mods}
    out: List[Tuple[str, torch.Tensor]] = []
    seen: set = set()
    for prefix, m in mods:
        for n, p in m.named_parameters():
            if id(p) in seen:
                continue
            seen.add(id(p))
            out.append((f"{prefix}.{n}" if prefix and len(distinct) > 1 else n, p))
    return out


class _Names(torch.nn.Module):
    """What capture's ``module=`` reads to name leaves: our (name, tensor) list as the module's "buffers"."""

    def __init__(self, pairs: Sequence[Tuple[str, torch.Tensor]]) -> None:
        super().__init__()
        self._pairs = list(pairs)

    def named_parameters(self, *args: Any, **kwargs: Any) -> Iterator[Tuple[str, Any]]:  # type: ignore[override]
        return iter(())

    def named_buffers(self, *args: Any, **kwargs: Any) -> Iterator[Tuple[str, Any]]:  # type: ignore[override]
        return iter(self._pairs)


class _State:
    """Module buffers and the RNG as they were before compare: restored before every run and at the end."""

    def __init__(self, mods: Sequence[torch.nn.Module], devices: Sequence[torch.device]) -> None:
        self.buffers: List[Tuple[torch.Tensor, torch.Tensor]] = []
        seen: set = set()
        for m in mods:
            for b in m.buffers():
                if id(b) not in seen:
                    seen.add(id(b))
                    self.buffers.append((b, b.detach().clone()))
        self.cpu_rng = torch.get_rng_state()
        self.cuda = sorted({d.index or 0 for d in devices if d.type == "cuda"})
        self.cuda_rng = [torch.cuda.get_rng_state(i) for i in self.cuda]

    def reset(self) -> None:
        with torch.no_grad():
            for b, saved in self.buffers:
                if b.shape == saved.shape:
                    b.copy_(saved)
        torch.set_rng_state(self.cpu_rng)
        for i, s in zip(self.cuda, self.cuda_rng):
            torch.cuda.set_rng_state(s, i)


def _devices(args: Sequence[Any], kwargs: Mapping[str, Any], mods: Sequence[torch.nn.Module]) -> List[torch.device]:
    devs = [t.device for _, t in flatten(list(args) + list(kwargs.values())) if isinstance(t, torch.Tensor)]
    for m in mods:
        devs.extend(p.device for p in m.parameters())
    return devs


# -- one side ---------------------------------------------------------------------------------------------------------
def _guarded(fn: Callable[..., Any], side: str, label: str) -> Callable[..., Any]:
    """``fn`` whose exceptions say which side raised (the original is chained as the cause)."""
    def call(*args: Any, **kwargs: Any) -> Any:
        try:
            return fn(*args, **kwargs)
        except CompareError:
            raise
        except Exception as exc:
            raise CompareError(f"graphwidget.compare: side {side} ({label!r}) raised {type(exc).__name__}: {exc}",
                               side) from exc
    return call


class _Result:
    def __init__(self, graph: GradGraph, out: Any, grads: Dict[str, Optional[torch.Tensor]],
                 params: List[Tuple[str, torch.Tensor]]) -> None:
        self.graph, self.out, self.grads, self.params = graph, out, grads, params


def _run(fn: Callable[..., Any], side: str, label: str, args: Sequence[Any], kwargs: Mapping[str, Any],
         inputs: List[Tuple[str, torch.Tensor]], mods: List[Tuple[str, torch.nn.Module]]) -> _Result:
    """Forward under the recorder, capture with named leaves, gradients with ``torch.autograd.grad``."""
    rec = Recorder()
    call = _guarded(fn, side, label)
    with rec:
        out = call(*args, **kwargs)
    roots = loss_or_tensors(out)
    if not roots:
        needs = [n for n, t in inputs if t.requires_grad]
        why = ("none of the tensor inputs requires grad: make the inputs you want gradients for require grad "
               "(x.requires_grad_())" if not needs else
               f"the result does not depend on the inputs that require grad ({', '.join(needs)}), or ran under "
               f"torch.no_grad()")
        raise ValueError(f"graphwidget.compare: side {side} ({label!r}) returned {describe(out)} with no tensor that "
                         f"requires grad, so there is no backward to compare: {why}.")
    all_mods = list(mods)
    for m in rec.top_modules:  # modules the function used without being given them (closures, globals)
        if not any(m is x for _, x in all_mods):
            all_mods.append(("", m))
    params = named_parameters(all_mods)
    graph = attributed_capture(rec, out, fn=fn, module=_Names(list(inputs) + params), title=label, roots=roots,
                               who="graphwidget.compare")
    wanted = [(n, t) for n, t in list(inputs) + params if t.requires_grad]
    grads: Dict[str, Optional[torch.Tensor]] = {}
    if wanted:
        try:
            got = torch.autograd.grad(roots, [t for _, t in wanted], [torch.ones_like(r) for r in roots],
                                      allow_unused=True)
        except RuntimeError as exc:
            raise CompareError(f"graphwidget.compare: the backward of side {side} ({label!r}) failed: {exc}. "
                               f"compare runs the backward itself: return the loss without calling "
                               f".backward() on it.", side) from exc
        grads = {n: (None if g is None else g.detach()) for (n, _), g in zip(wanted, got)}
    return _Result(graph, out, grads, params)


def _equivalence(ra: _Result, rb: _Result, inputs: List[str]) -> Dict[str, Any]:
    fa, fb = flatten(ra.out), flatten(rb.out)
    rows = []
    for (pa, va), (_, vb) in zip(fa, fb):
        if isinstance(va, torch.Tensor) and isinstance(vb, torch.Tensor):
            rows.append(check(pa, va.detach(), vb.detach()))
    grad_names = [n for n in inputs if n in ra.grads or n in rb.grads]
    shared = [n for n, _ in ra.params if n in {m for m, _ in rb.params}]
    for n in grad_names + [n for n in shared if n in ra.grads and n in rb.grads]:
        rows.append(check(f"grad {n}", ra.grads.get(n), rb.grads.get(n)))
    return {"equivalent": all(r["allclose"] for r in rows), "tensors": rows}


def _same_structure(ra: _Result, rb: _Result, la: str, lb: str) -> None:
    fa, fb = flatten(ra.out), flatten(rb.out)
    ka = [(p, isinstance(v, torch.Tensor)) for p, v in fa]
    kb = [(p, isinstance(v, torch.Tensor)) for p, v in fb]
    if ka != kb:
        raise StructureMismatch(f"graphwidget.compare: the two functions return different structures, so their outputs "
                         f"cannot be compared: A ({la!r}) returned {describe(ra.out)}, B ({lb!r}) returned "
                         f"{describe(rb.out)}. Make both return the same kind of value (e.g. the loss tensor).")


# -- compare ----------------------------------------------------------------------------------------------------------
def compare(fn_a: Callable[..., Any], fn_b: Callable[..., Any], *args: Any, labels: Sequence[str] = ("A", "B"),
            profile: bool = False, repeat: int = 20, **kwargs: Any) -> Diff:
    """Run ``fn_a(*args, **kwargs)`` and ``fn_b(*args, **kwargs)``, each on its own copy of the inputs, and return the
    :class:`~graphwidget.Diff` of their autograd graphs with ``equivalence`` filled in.

    Each side's forward runs under the recorder (source lines, module paths) and its backward is the gradient of
    the output (the loss, or a gradient of ones for every output tensor that requires grad) with respect to every
    input tensor that requires grad and every parameter. The outputs and those gradients are compared
    (``d.equivalence``, per tensor; tolerances in ``docs/diff.md``): ``d.equivalent is False`` means the rewrite
    changed the maths, and the summary, the view and the CLI say so first.

    ``profile=True`` also times both sides, interleaved (one warmup round, then ``repeat`` rounds of A, B / B, A),
    writes per-node median times into both graphs and the B/A backward ratio with a 95 % bootstrap interval into
    ``d.timing``; an interval containing 1 is reported as "no measurable difference".

    The caller's tensors, ``.grad``, module buffers and RNG state are left as they were (module docstring).

    >>> import graphwidget as gw
    >>> inp = gw.examples.homography_inputs(batch=2, height=16, width=16)
    >>> d = gw.compare(gw.examples.homography_repeat, gw.examples.homography_broadcast, **inp,
    ...                labels=("repeat", "broadcast"))
    >>> d.equivalent, sorted({d.a.node(i)["op"] for i in d.removed})
    (True, ['RepeatBackward0', 'UnsqueezeBackward0'])
    """
    la, lb = check_labels(labels, "graphwidget.compare")
    for fn, side, label in ((fn_a, "A", la), (fn_b, "B", lb)):
        if not callable(fn):
            raise TypeError(f"graphwidget.compare: fn_{side.lower()} ({label!r}) must be callable (a function or an "
                            f"nn.Module); got {type(fn).__name__}. Call it as gw.compare(fn_a, fn_b, *inputs).")
    if not isinstance(profile, bool):
        raise TypeError(f"graphwidget.compare: profile must be True or False; got {profile!r}.")
    if not isinstance(repeat, int) or isinstance(repeat, bool) or repeat < 3:
        raise ValueError(f"graphwidget.compare: repeat must be an integer >= 3 (the interval needs several paired "
                         f"runs); got {repeat!r}.")
    mods_a, mods_b = _modules(fn_a, args, kwargs), _modules(fn_b, args, kwargs)
    all_mods = [m for _, m in mods_a + mods_b]
    state = _State(all_mods, _devices(args, kwargs, all_mods))
    params = named_parameters(mods_a + mods_b)
    saved_grads = [(p, p.grad) for _, p in params]
    results = []
    copies = []
    input_names: List[str] = []
    try:
        for fn, side, label, mods in ((fn_a, "A", la, mods_a), (fn_b, "B", lb, mods_b)):
            a, k, inputs = copy_inputs(args, kwargs)
            input_names = [n for n, _ in inputs]
            copies.append((fn, side, label, a, k))
            state.reset()
            results.append(_run(fn, side, label, a, k, inputs, mods))
        ra, rb = results
        _same_structure(ra, rb, la, lb)
        equivalence = _equivalence(ra, rb, input_names)
        timing = None
        if profile:
            from ..profiling.checks import guess_device
            from .interleave import GradGuard, interleaved
            guard = GradGuard()
            try:
                timing = interleaved([(_guarded(fn, side, label), a, k, state.reset)
                                      for fn, side, label, a, k in copies],
                                     [ra.graph, rb.graph], repeat, guard, guess_device(fn_a, args, kwargs))
            finally:
                guard.restore()
    finally:
        state.reset()
        for p, g in saved_grads:
            p.grad = g
    for r in results:
        r.graph.output = r.out
    return build(ra.graph, rb.graph, (la, lb), equivalence=equivalence, timing=timing)

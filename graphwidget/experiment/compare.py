""":func:`compare_two` (``gw.compare`` of two functions): run two implementations of a forward pass on the same
inputs and answer two questions — same maths? faster? — then capture both graphs and match them node to node.

Isolation: each side runs on its **own copy** of every tensor argument (same values, dtype, device, memory format
and ``requires_grad``), so the caller's tensors and their ``.grad`` are never touched and the two sides never
accumulate into each other. Modules and parameters are used as given, but everything either side can reach — the
parameters, buffers and tensors of the modules among the arguments, of the compared module, and of whatever a
function reaches through closures and globals (:mod:`.naming`) — is saved first and put back before every run and
at the end (:mod:`.state`), with the random number generators, grad mode and the default dtype: each side starts
from the same state, a forward that updates a weight in place is reported (``equivalence["mutated"]``) instead of
skewing the other side, and the caller gets back the state it had, even after Ctrl-C.

Same maths: every output and the gradient of every tensor that receives one (the captured graphs' leaves, paired by
identity: :mod:`.naming`), judged against float64 runs of both sides (:mod:`.equivalence`). Faster: plain runs,
interleaved, no per-node hooks (:mod:`.speed`); per-node times come from separate instrumented runs
(:mod:`.interleave`) and are reported as such.
"""
from __future__ import annotations

import warnings
from collections.abc import Mapping
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple, TypeVar

import networkx as nx
import torch

from .._util.keywords import refuse_shadowed_options
from ..analysis.diff.result import Diff, build, check_labels
from ..analysis.diff.verdicts import BAND, labelled
from ..attribution.attach import attributed_capture
from ..attribution.cuda_capture import refuse_during_cuda_graph_capture
from ..attribution.recorder import Recorder
from ..capturing.roots import loss_or_tensors
from ..model.graph import GradGraph, new_meta
from .equivalence import (
    EPS,
    Precision,
    check,
    describe,
    dominant_dtype,
    flatten,
    lowest_dtype,
    lowest_precision,
    summarise,
)
from .gradients import gradients
from .naming import Namer, leaf_tensors, name_leaves, name_modules, pair, side_names
from .state import State, mutations
from .values import Budget, Collector

__all__ = ["compare_two", "CompareError", "StructureMismatch"]

T = TypeVar("T")


class CompareError(RuntimeError):
    """One side of :func:`compare_two` raised; ``side`` is ``"A"`` or ``"B"``, the original exception is the cause."""

    def __init__(self, message: str, side: str) -> None:
        super().__init__(message)
        self.side = side


class StructureMismatch(ValueError):
    """The two functions return differently structured values (a tensor vs a tuple, other keys, ...)."""


# -- inputs ---------------------------------------------------------------------------------------------------------
def _copy(obj: Any, path: str, names: List[Tuple[str, torch.Tensor]], seen: Dict[int, Any], wide: bool) -> Any:
    """``obj`` with every plain tensor replaced by a detached clone (same requires_grad; float64 when ``wide``),
    recording the clones' names. Containers are rebuilt; modules, parameters and other objects are passed through."""
    if isinstance(obj, (torch.nn.Parameter, torch.nn.Module)):
        return obj
    if isinstance(obj, torch.Tensor):
        if id(obj) in seen:  # the same tensor passed twice stays one tensor
            return seen[id(obj)]
        if wide and (obj.is_floating_point() or obj.is_complex()):
            c = obj.detach().to(torch.complex128 if obj.is_complex() else torch.float64, copy=True)
        else:
            c = obj.detach().clone()
        if obj.requires_grad:
            c.requires_grad_(True)
        seen[id(obj)] = c
        names.append((path, c))
        return c
    if isinstance(obj, tuple) and hasattr(obj, "_fields"):  # namedtuple
        return type(obj)(*(_copy(v, f"{path}.{f}", names, seen, wide) for f, v in zip(obj._fields, obj)))
    if isinstance(obj, (list, tuple)):
        return type(obj)(_copy(v, f"{path}[{i}]", names, seen, wide) for i, v in enumerate(obj))
    if isinstance(obj, dict):
        return type(obj)((k, _copy(v, f"{path}[{k!r}]", names, seen, wide)) for k, v in obj.items())
    return obj


class Inputs:
    """One side's copies of the arguments, and ``(argument path, copy)`` for every tensor among them."""

    def __init__(self, args: Sequence[Any], kwargs: Mapping[str, Any], wide: bool = False) -> None:
        self.names: List[Tuple[str, torch.Tensor]] = []
        seen: Dict[int, Any] = {}
        self.args = [_copy(v, f"arg{i}", self.names, seen, wide) for i, v in enumerate(args)]
        self.kwargs = {key: _copy(v, key, self.names, seen, wide) for key, v in kwargs.items()}
        self.path = {id(t): p for p, t in self.names}

    def key(self, t: torch.Tensor) -> Tuple[str, Any]:
        """What pairs a tensor across sides: its argument for a copied input, else the tensor itself."""
        p = self.path.get(id(t))
        return ("input", p) if p is not None else ("tensor", id(t))


def _modules(args: Sequence[Any], kwargs: Mapping[str, Any]) -> List[Tuple[str, torch.nn.Module]]:
    """``(argument path, module)`` for every module among the arguments."""
    found: List[Tuple[str, torch.nn.Module]] = []
    stack: List[Tuple[Any, str]] = [(v, f"arg{i}") for i, v in enumerate(args)][::-1]
    stack += [(v, k) for k, v in kwargs.items()][::-1]
    while stack:
        o, p = stack.pop()
        if isinstance(o, torch.nn.Module):
            found.append((p, o))
        elif isinstance(o, (list, tuple)):
            stack.extend(reversed([(v, f"{p}[{i}]") for i, v in enumerate(o)]))
        elif isinstance(o, dict):
            stack.extend(reversed([(v, f"{p}[{k!r}]") for k, v in o.items()]))
    return found


def _devices(args: Sequence[Any], kwargs: Mapping[str, Any], tensors: Sequence[torch.Tensor]) -> List[torch.device]:
    devs = [t.device for _, t in flatten(list(args) + list(kwargs.values())) if isinstance(t, torch.Tensor)]
    devs.extend(t.device for t in tensors)
    return devs


class _Names(torch.nn.Module):
    """What capture's ``module=`` reads to name leaves: our (name, tensor) list as the module's "buffers"."""

    def __init__(self, pairs: Sequence[Tuple[str, torch.Tensor]]) -> None:
        super().__init__()
        self._pairs = list(pairs)

    def named_parameters(self, *args: Any, **kwargs: Any) -> Any:  # type: ignore[override]
        return iter(())

    def named_buffers(self, *args: Any, **kwargs: Any) -> Any:  # type: ignore[override]
        return iter(self._pairs)


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


class Side:
    """One implementation: its function, label, inputs, names, and what its run gave."""

    def __init__(self, fn: Callable[..., Any], side: str, label: str, inputs: Inputs, namer: Namer) -> None:
        self.fn, self.side, self.label, self.inputs, self.namer = fn, side, label, inputs, namer
        self.call = _guarded(fn, side, label)
        self.graph: Optional[GradGraph] = None
        self.out: Any = None
        self.leaves: List[torch.Tensor] = []
        self.grads: List[Tuple[str, Tuple[str, Any], Optional[torch.Tensor], str]] = []  # naming.Entry
        self.ref: Optional[Tuple[Any, Dict[Any, Optional[torch.Tensor]], Dict[str, int]]] = None
        self.ref_error: Optional[str] = None
        self.mutated: List[str] = []
        #: Whether the gradients were computed (``gw.record(..., backward=False)``, or a forward with no tensor that
        #: requires grad, records the outputs only), and if not, why.
        self.backward = True
        self.no_backward_why: Optional[str] = None
        #: per-node values for the divergence search (:mod:`.values`), when collected
        self.collect: Optional[Collector] = None
        #: the run advanced a random generator: the dtype it drew in (the float64 run then draws the same numbers)
        self.draws: Optional[torch.dtype] = None

    # What the verdict reads of a side (:func:`_equivalence`); a recorded side (:mod:`.recording`) has the same.
    def outputs(self) -> List[Tuple[str, Any]]:
        """``(path, tensor or type name)`` for every value the forward returned (:func:`~.equivalence.flatten`)."""
        return flatten(self.out)

    def ref_outputs(self) -> Optional[List[Tuple[str, Any]]]:
        """The same from the float64 run (``None`` without one)."""
        return flatten(self.ref[0]) if self.ref is not None else None

    def described(self) -> str:
        """The output's structure in words, for error messages."""
        return describe(self.out)

    def run(self, like: Optional[Namer] = None, backward: bool = True, outputs_only_ok: bool = False) -> None:
        """Forward under the recorder (source lines, module paths), capture with named leaves (a tensor ``like``
        names too — the reference side's — with that name), and the gradient of every leaf with
        ``torch.autograd.grad`` (no ``.grad`` is written; :mod:`.gradients` for reentrant checkpointing).
        ``backward=False``: no gradients; ``outputs_only_ok``: a result with no tensor that requires grad is kept as
        outputs only (an empty graph) instead of refused."""
        rec = Recorder()
        collect = self.collect
        rec.tap = collect.tap if collect is not None else None
        rng = rng_states()
        default = torch.get_default_dtype()
        try:
            with rec:
                out = self.call(*self.inputs.args, **self.inputs.kwargs)
        finally:
            rec.close()  # again (idempotent): an interrupt inside the with block's exit leaves nothing behind
            rec.tap = None
        if not _same_states(rng, rng_states()):
            self.draws = default
        roots = loss_or_tensors(out)
        if not roots and outputs_only_ok:
            self.graph = GradGraph(nx.DiGraph(), new_meta([], title=self.label))
            self.out, self.backward = out, False
            self.no_backward_why = f"the forward returned {describe(out)} with no tensor that requires grad"
            return
        if not roots:
            needs = [n for n, t in self.inputs.names if t.requires_grad]
            why = ("none of the tensor inputs requires grad: make the inputs you want gradients for require grad "
                   "(x.requires_grad_())" if not needs else
                   f"the result does not depend on the inputs that require grad ({', '.join(needs)}), or ran under "
                   f"torch.no_grad()")
            raise ValueError(f"graphwidget.compare: side {self.side} ({self.label!r}) returned {describe(out)} with "
                             f"no tensor that requires grad, so there is no backward to compare: {why}.")
        name_modules(self.namer, rec.top_modules)
        if like is not None:
            self.namer.align(like)
        self.graph = attributed_capture(rec, out, fn=self.fn, module=_Names(self.namer.items), title=self.label,
                                        roots=roots, who="graphwidget.compare")
        if not backward:
            self.leaves = leaf_tensors(roots)
            self.out, self.backward, self.no_backward_why = out, False, "recorded without a backward"
            return
        handles: List[Any] = []
        if collect is not None:
            collect.forward_done(roots, self.graph.nx.number_of_nodes())
            handles = collect.hooks()
        try:
            # torch.autograd.grad, or .backward() for reentrant checkpointing (its blocks' parameters added)
            self.leaves, got = gradients(roots, leaf_tensors(roots), [t for _, t in self.namer.items], self.graph)
        except RuntimeError as exc:
            raise CompareError(f"graphwidget.compare: the backward of side {self.side} ({self.label!r}) failed: "
                               f"{exc}. compare runs the backward itself: return the loss without calling "
                               f".backward() on it.", self.side) from exc
        finally:
            if collect is not None:
                collect.backward_done(handles)
        names = name_leaves(self.namer, self.leaves)
        unused = [(n, t) for n, t in self.inputs.names if t.requires_grad and all(t is not x for x in self.leaves)]
        local = self.namer.local
        self.grads = [(n, self.inputs.key(t), None if g is None else g.detach(), local.get(id(t), n))
                      for n, t, g in zip(names, self.leaves, got)]
        self.grads += [(n, self.inputs.key(t), None, n) for n, t in unused]
        # Rows in a reader's order: inputs by argument, then the modules' tensors in the order the forward called
        # the modules (each in its own order), then the rest as they were named.
        order: Dict[str, int] = {}
        for name, t in self.namer.items:
            if self.inputs.key(t)[0] == "input":
                order.setdefault(name, len(order))
        for m in rec.top_modules:
            for t in list(m.parameters()) + list(m.buffers()):
                n = self.namer.name(t)
                if n is not None:
                    order.setdefault(n, len(order))
        for name, _ in self.namer.items:
            order.setdefault(name, len(order))
        self.grads.sort(key=lambda e: order.get(e[0], len(order)))
        self.out = out

    def reference(self, args: Sequence[Any], kwargs: Mapping[str, Any], tensors: Sequence[torch.Tensor]) -> None:
        """The float64 run (:mod:`.reference`); on failure, why (the verdict then falls back, and says so)."""
        from .reference import run_float64
        wide = Inputs(args, kwargs, wide=True)
        try:
            out, leaves, dtypes = run_float64(self.fn, wide.args, wide.kwargs, list(tensors) + self.leaves,
                                              collect=self.collect, draws=self.draws, backward=self.backward)
        except Exception as exc:  # noqa: BLE001 - any failure only means there is no reference
            self.ref_error = f"{type(exc).__name__}: {str(exc)[:200]}"
            if self.collect is not None:
                self.collect.finish()
            return
        self.ref = (out, {wide.key(t): g for t, g in leaves}, dtypes)


def rng_states() -> List[torch.Tensor]:
    """The CPU generator's state and every initialised CUDA generator's (to see whether a run drew numbers)."""
    states = [torch.random.get_rng_state()]
    if torch.cuda.is_available() and torch.cuda.is_initialized():
        states.extend(torch.cuda.get_rng_state_all())
    return states


def _same_states(a: Sequence[torch.Tensor], b: Sequence[torch.Tensor]) -> bool:
    return len(a) == len(b) and all(torch.equal(x, y) for x, y in zip(a, b))


def _same_structure(a: Side, b: Side) -> None:
    fa, fb = a.outputs(), b.outputs()
    ka = [(p, isinstance(v, torch.Tensor)) for p, v in fa]
    kb = [(p, isinstance(v, torch.Tensor)) for p, v in fb]
    if ka != kb:
        raise StructureMismatch(
            f"graphwidget.compare: the two functions return different structures, so their outputs cannot be "
            f"compared: {a.side} ({a.label!r}) returned {a.described()}, {b.side} ({b.label!r}) returned "
            f"{b.described()}. "
            f"Make both return the same kind of value (e.g. the loss tensor).")


def _precision(a: Side, b: Side) -> Precision:
    run = lowest_precision([g for g in (a.graph, b.graph) if g is not None])
    if a.ref is None or b.ref is None:
        why = a.ref_error if a.ref is None else b.ref_error
        side = "A" if a.ref is None else "B"
        return Precision("fixed", run_dtype=run, why=f"side {side} cannot run in float64 ({why})")
    ref, last = dominant_dtype([a.ref[2], b.ref[2]]), lowest_dtype([a.ref[2], b.ref[2]])
    if run is None or ref is None or last is None:
        return Precision("fixed", run_dtype=run, why="no floating-point tensor in the graphs")
    if EPS[ref] >= EPS[run]:
        why = (f"the sides already compute in {run}" if run in ("float64", "complex128") else
               f"the forward keeps {ref} even when its inputs and parameters are float64")
        return Precision("fixed", run_dtype=run, ref_dtype=ref, why=why)
    return Precision("float64", EPS[run], EPS[ref], run, ref, eps_last=EPS[last])


def _equivalence(a: Side, b: Side, by_graph: Optional[Dict[str, str]] = None) -> Dict[str, Any]:
    precision = _precision(a, b)
    rows = []
    outs64 = [s.ref_outputs() for s in (a, b)]
    for k, ((p, va), (_, vb)) in enumerate(zip(a.outputs(), b.outputs())):
        if isinstance(va, torch.Tensor) and isinstance(vb, torch.Tensor):
            r64 = [o[k][1] if o is not None and k < len(o) and isinstance(o[k][1], torch.Tensor) else None
                   for o in outs64]
            rows.append(check(p, va.detach(), vb.detach(), precision, r64[0], r64[1], kind="output",
                              missing="no value"))
    without = [s for s in (a, b) if not s.backward]
    for i, j in pair(a.grads, b.grads, by_graph) if not without else ():
        ga = a.grads[i] if i is not None else None
        gb = b.grads[j] if j is not None else None
        name = (ga or gb)[0]  # type: ignore[index]
        if ga is not None and gb is not None and ga[0] != gb[0]:
            name = f"{ga[0]} (B: {gb[0]})"
        refs = [s.ref[1].get(g[1]) if s.ref is not None and g is not None else None for s, g in ((a, ga), (b, gb))]
        rows.append(check(f"grad {name}", ga[2] if ga else None, gb[2] if gb else None, precision, refs[0], refs[1],
                          kind="gradient", missing="no gradient"))
        rows[-1]["_param"] = (ga or gb)[1][0] != "input"  # type: ignore[index]
    if by_graph is not None:
        _unpaired(rows)
    for r in rows:
        r.pop("_param", None)
    out = summarise(rows, precision, {"A": a.mutated, "B": b.mutated})
    if without:  # the verdict covers the outputs only, and says why
        out["outputs_only"] = "; ".join(f"{s.side} ({s.label}): {s.no_backward_why or 'no backward'}"
                                        for s in without)
    return out


def _unpaired(rows: List[Dict[str, Any]]) -> None:
    """Parameters with a gradient on one side only, on both sides at once (a fused ``qkv`` against separate
    ``q``/``k``/``v``): no one-to-one pairing exists, so they are not a difference of maths; the outputs and the
    matched forward values judge (the divergence search), and the rows say so (``unpaired``)."""
    only = {s: [r for r in rows if r.get("only") == s and r.get("_param")] for s in ("A", "B")}
    if not only["A"] or not only["B"]:
        return
    for side, other in (("A", "B"), ("B", "A")):
        for r in only[side]:
            r.update(allclose=True, unpaired=True,
                     note=f"no one-to-one counterpart in {other} (the structure differs there): judged through the "
                          f"outputs and the matched forward values")


# -- compare ----------------------------------------------------------------------------------------------------------
@refuse_shadowed_options("graphwidget.compare", "fn_a", "fn_b")
def compare_two(fn_a: Callable[..., Any], fn_b: Callable[..., Any], *args: Any, labels: Sequence[str] = ("A", "B"),
                profile: bool = False, repeat: int = 5, band: float = BAND, budget: float = 3.0,
                threads: Optional[int] = None, advise: bool = True, memory: bool = False, divergence: Any = True,
                **kwargs: Any) -> Diff:
    """Run ``fn_a(*args, **kwargs)`` and ``fn_b(*args, **kwargs)``, each on its own copy of the inputs, and return the
    :class:`~graphwidget.Diff` of their autograd graphs with both verdicts.

    **Same maths?** (``d.equivalence``, ``d.equivalent``): every output and the gradient of every tensor that
    receives one — arguments, parameters of the modules given or reached through closures and globals, found from
    the captured graphs' leaves — compared between A and B and judged against a float64 run of each side: a
    difference counts only when rounding cannot explain it (``docs/diff.md``). ``d.equivalent is False`` means the
    rewrite changed the maths, and every surface says so first.

    **Faster?** (``profile=True``; ``d.timing``): plain runs of both, interleaved (A, B, B, A, ...), with no per-node
    instrumentation, timed by CPU time and wall clock (CUDA: events) until the whole step's verdict is decided or
    ``budget`` seconds are spent; verdicts for the forward, the backward and the whole step (``d.timing["step"]``
    …), each ``"faster"``, ``"slower"``, ``"same speed"`` (within ``±band``) or ``"not enough evidence"``. They
    run with torch's threads as configured, or single-threaded on a machine whose cores are already busy (``threads``
    forces a number; ``d.timing["threads_why"]`` says which and why). Per-node times come from ``repeat`` separate
    instrumented rounds.

    **Smaller?** (``memory=True``; ``d.memory``): one more plain step of each side, its allocator peak measured
    (CUDA: ``max_memory_allocated``; CPU: ``torch.profiler``'s memory events), reported beside the step time.

    **Where do they part?** (``divergence=True``; ``d.divergence``, ``d.divergences``): each side's per-node
    forward values and incoming gradients are kept during the same runs (:mod:`.values`), and
    :func:`.divergence.find_divergence` names the first matched node pair whose values differ beyond rounding while
    what flows into it agrees (``None`` when the sides are equivalent). ``divergence`` may also be a number of bytes:
    the budget of exact values (default a share of the free memory; beyond it values are compared by digests).
    ``False`` skips it.

    ``advise=True`` runs the advisor on both graphs (``d.a.findings``; the view shows what B resolved).

    The caller's tensors, ``.grad``, parameters, buffers, RNG state, grad mode and default dtype are left as they
    were (module docstring).

    >>> import graphwidget as gw
    >>> inp = gw.examples.homography_inputs(batch=2, height=16, width=16)
    >>> d = gw.compare(gw.examples.homography_repeat, gw.examples.homography_broadcast, **inp,
    ...                labels=("repeat", "broadcast"))
    >>> d.equivalent, sorted({d.a.node(i)["op"] for i in d.removed})
    (True, ['RepeatBackward0', 'UnsqueezeBackward0'])
    """
    refuse_during_cuda_graph_capture("graphwidget.compare")
    la, lb = check_labels(labels, "graphwidget.compare")
    for fn, side, label in ((fn_a, "A", la), (fn_b, "B", lb)):
        if not callable(fn):
            raise TypeError(f"graphwidget.compare: fn_{side.lower()} ({label!r}) must be callable (a function or an "
                            f"nn.Module); got {type(fn).__name__}. Call it as gw.compare(fn_a, fn_b, *inputs).")
    check_options(profile, repeat, band, budget, threads)
    values_budget = check_divergence(divergence)
    sides, state, saved_grads = prepare(((fn_a, "A", la), (fn_b, "B", lb)), args, kwargs)
    a, b = sides
    if divergence is not False:
        from ..attribution.memory import device_of
        shared = Budget.default(device_of(fn_a, args, kwargs)) if values_budget is None else Budget(values_budget)
        for s in sides:
            s.collect = Collector(shared)
    timing = None
    try:
        try:
            built: List[Diff] = []

            def match() -> None:
                # The matching before the float64 runs, so B's float64 values are measured against A's as they
                # appear instead of kept (the divergence search's memory: values.Collector.stream_against).
                assert a.graph is not None and b.graph is not None
                a.graph.output, b.graph.output = a.out, b.out
                built.append(build(a.graph, b.graph, (la, lb)))
                if a.collect is not None and b.collect is not None:
                    b.collect.stream_against(a.collect.values, {y: x for x, y in built[0].matched})

            run_sides(sides, state, args, kwargs, match)
            d = built[0]
            equivalence = _equivalence(a, b, leaf_pairs(d))
            d.equivalence = equivalence
            if divergence is not False:
                attach_divergence(d, a, b)
            if profile:
                timing = _time(a, b, state, repeat, band, budget, threads, fn_a, args, kwargs)
            d.timing = timing
            peaks = peaks_of(sides, state, fn_a, args, kwargs) if memory else None
            d.memory = peaks
        finally:
            _restore(state, saved_grads)
    finally:
        _restore(state, saved_grads)  # again: an interrupt at any line of the first leaves this one to finish
    if advise:
        advise_graphs([d.a, d.b])
    return d


def check_divergence(divergence: Any) -> Optional[int]:
    """``divergence=``: ``True``/``False``, or a budget in bytes (returned; ``None`` for the default)."""
    if isinstance(divergence, bool):
        return None
    if isinstance(divergence, int) and divergence > 0:
        return divergence
    raise ValueError(f"graphwidget.compare: divergence must be True (find where the sides part), False (skip it) or "
                     f"a budget of bytes > 0 for the exact per-node values; got {divergence!r}.")


def leaf_pairs(d: Diff) -> Dict[str, str]:
    """A's leaf name -> B's, for every matched pair of named leaves (``AccumulateGrad``): parameters and inputs
    paired through the matched graph, whatever they are called."""
    out: Dict[str, str] = {}
    for x, y in d.matched:
        na, nb = d.a.nx.nodes[x], d.b.nx.nodes[y]
        if na.get("op") == "AccumulateGrad" and nb.get("op") == "AccumulateGrad":
            ta, tb = na.get("tensor"), nb.get("tensor")
            if isinstance(ta, dict) and isinstance(tb, dict) and ta.get("name") and tb.get("name") \
                    and ta.get("shape") == tb.get("shape"):  # a fused qkv matched to to_q is no one-to-one pair
                out.setdefault(ta["name"], tb["name"])
    return out


def attach_divergence(d: Diff, a: Side, b: Side) -> None:
    """``d.divergence`` / ``d.divergences`` / ``d.unpaired`` from the two sides' collected values."""
    if a.collect is None or b.collect is None:
        return
    a.collect.finish()
    b.collect.finish()
    divergence_of(d, a, b)
    a.collect = b.collect = None


def divergence_of(d: Diff, a: Side, b: Side) -> None:
    """:func:`attach_divergence` for one pair of sides whose values were collected (N-way: every side against the
    reference), leaving the collectors as they are."""
    from .divergence import find_divergence, structure_notes
    if a.collect is None or b.collect is None:
        return
    va, vb = a.collect.values, b.collect.values
    first, found = find_divergence(d.a, va, d.b, vb, d.matched, _precision(a, b))
    d.divergences = found
    d.divergence = None if d.equivalent else first
    notes = list(dict.fromkeys(va.notes + [f"B: {n}" for n in vb.notes]))
    budget = a.collect.budget
    if budget is not None:
        from .values import budget_note
        words = budget_note(budget)
        if words:
            notes.append(words)
    d.unpaired = structure_notes(d.a, d.b, d.matched)
    d.unpaired["notes"] = notes


def check_options(profile: Any, repeat: Any, band: Any, budget: Any, threads: Any) -> None:
    """compare's options (two sides or N), each checked with what to write instead."""
    if not isinstance(profile, bool):
        raise TypeError(f"graphwidget.compare: profile must be True or False; got {profile!r}.")
    if not isinstance(repeat, int) or isinstance(repeat, bool) or repeat < 1:
        raise ValueError(f"graphwidget.compare: repeat (instrumented rounds for per-node times) must be an integer "
                         f">= 1; got {repeat!r}.")
    if not isinstance(band, (int, float)) or isinstance(band, bool) or not 0 <= band < 1:
        raise ValueError(f"graphwidget.compare: band must be a fraction in [0, 1), e.g. 0.05 for ±5 %; got {band!r}.")
    if not isinstance(budget, (int, float)) or isinstance(budget, bool) or not budget > 0:
        raise ValueError(f"graphwidget.compare: budget must be a number of seconds > 0; got {budget!r}.")
    if threads is not None and (not isinstance(threads, int) or isinstance(threads, bool) or threads < 1):
        raise ValueError(f"graphwidget.compare: threads must be None (as configured; 1 on a busy machine) or an "
                         f"integer >= 1; got {threads!r}.")


def prepare(items: Sequence[Tuple[Callable[..., Any], str, str]], args: Sequence[Any], kwargs: Mapping[str, Any]
            ) -> Tuple[List[Side], State, List[Tuple[torch.Tensor, Any]]]:
    """One :class:`Side` per ``(function, letter, label)``, each on its own copy of the inputs; the saved
    :class:`~.state.State` of everything any side reaches, and the ``.grad`` of its leaves (for :func:`_restore`)."""
    arg_modules = _modules(args, kwargs)
    sides = []
    for fn, side, label in items:
        inputs = Inputs(args, kwargs)
        sides.append(Side(fn, side, label, inputs, side_names(fn, inputs.names, arg_modules)))
    reachable = [t for s in sides for _, t in s.namer.items]
    state = State(reachable, _devices(args, kwargs, reachable), [b for s in sides for b in s.namer.buffers])
    saved_grads = [(t, t.grad) for t in reachable if t.grad_fn is None]
    return sides, state, saved_grads


def run_sides(sides: Sequence[Side], state: State, args: Sequence[Any], kwargs: Mapping[str, Any],
              before_reference: Optional[Callable[[], None]] = None) -> None:
    """Run and capture every side from the same state (what each mutated noted), check that each returns the
    first one's structure, then run each in float64 (the reference of "same maths?"); ``before_reference`` is
    called between the two."""
    for s in sides:
        state.reset()
        versions = {id(t): t._version for _, t in s.inputs.names}
        s.run(like=sides[0].namer if s is not sides[0] else None)
        s.mutated = mutations(state, s.namer.by_id, s.inputs.names, versions)
    for s in sides[1:]:
        _same_structure(sides[0], s)
    if before_reference is not None:
        before_reference()
    tensors = [x.tensor for x in state.saved]
    for s in sides:
        state.reset()
        s.reference(args, kwargs, tensors)


def _restore(state: State, saved_grads: Sequence[Tuple[torch.Tensor, Any]]) -> None:
    """The caller's state and ``.grad`` objects back (idempotent)."""
    state.reset()
    for t, g in saved_grads:
        t.grad = g
    state.reset()


def _time(a: Side, b: Side, state: State, repeat: int, band: float, budget: float, threads: Optional[int],
          fn_a: Any, args: Sequence[Any], kwargs: Mapping[str, Any]) -> Dict[str, Any]:
    """The speed verdict from plain runs, then per-node times from instrumented ones."""
    from . import speed
    from .interleave import interleaved

    def measure(plain: List[Any]) -> Tuple[Dict[str, Any], int]:
        t = speed.measure(plain, band=band, budget_s=budget, threads=threads)
        return t, t["threads"]

    timing, per_node = timed([a, b], state, repeat, fn_a, args, kwargs, measure, interleaved)
    return with_per_node(timing, per_node, b.label, band)


def timed(sides: Sequence[Side], state: State, repeat: int, fn_a: Any, args: Sequence[Any],
          kwargs: Mapping[str, Any], measure: Callable[[List[Any]], Tuple[T, int]],
          per_node: Callable[..., Dict[str, Any]]) -> Tuple[T, Dict[str, Any]]:
    """Time the sides: ``measure`` gets them as plain :class:`.speed.Side` runs and returns its timing and the
    threads it timed with; then ``per_node`` (:func:`.interleave.interleaved`'s signature) writes per-node times
    from ``repeat`` instrumented rounds into the graphs, with those threads, so the two read alike."""
    from ..attribution.memory import device_of
    from . import speed
    from .interleave import GradGuard
    device = device_of(fn_a, args, kwargs)
    guard = GradGuard()
    try:
        plain = [speed.Side(s.call, s.inputs.args, s.inputs.kwargs, state.reset, s.leaves, guard, device)
                 for s in sides]
        timing, threads = measure(plain)
        graphs = [s.graph for s in sides]
        assert all(g is not None for g in graphs)
        configured = torch.get_num_threads()
        try:
            torch.set_num_threads(threads)
            got = per_node([(s.call, s.inputs.args, s.inputs.kwargs, state.reset) for s in sides], graphs, repeat,
                           guard, device)
        finally:
            torch.set_num_threads(configured)
    finally:
        guard.restore()
    return timing, got


def with_per_node(timing: Dict[str, Any], per_node: Dict[str, Any], label_b: str, band: float) -> Dict[str, Any]:
    """A pair's timing record with how its per-node times were taken, and the whole step's verdict on top (the
    diff document's form)."""
    timing["per_node"] = {"rounds": per_node["runs"], "instrumented": True, "order": per_node["order"]}
    step = timing["step"]
    timing.update(ratio=step["ratio"], low=step["low"], high=step["high"], runs=timing["rounds"],
                  verdict=labelled(step["verdict"], label_b, band))
    return timing


def peaks_of(sides: Sequence[Side], state: State, fn_a: Any, args: Sequence[Any],
             kwargs: Mapping[str, Any]) -> Dict[str, Any]:
    """One plain step of each side with its allocator peak measured (:mod:`.peak`)."""
    from ..attribution.memory import device_of
    from .interleave import GradGuard
    from .peak import measure_peak
    device = device_of(fn_a, args, kwargs)
    guard = GradGuard()
    try:
        got = [measure_peak(s.call, s.inputs.args, s.inputs.kwargs, state.reset, s.leaves, guard, device)
               for s in sides]
    finally:
        guard.restore()
    return {"peak": [x["bytes"] for x in got], "source": got[0]["source"], "measured": True, "device": str(device)}


def advise_graphs(graphs: Sequence[GradGraph]) -> None:
    """Every side's findings, so the Findings tab and "resolved in B" need no extra call. A failing rule must not
    cost the user the comparison: it becomes a warning."""
    from ..analysis.advisor import advise
    for g in graphs:
        try:
            advise(g)
        except Exception as exc:  # noqa: BLE001
            warnings.warn(f"graphwidget.compare: the advisor failed on {g.meta.get('title')!r} "
                          f"({type(exc).__name__}: {exc}); the comparison is complete without its findings.",
                          RuntimeWarning, stacklevel=3)

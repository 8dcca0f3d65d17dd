"""``gw.compare`` with more than two sides: ``gw.compare({"eager": f, "refactor": g, "compiled": torch.compile(f)},
*inputs, profile=True)`` (or a list of functions) returns a :class:`~graphwidget.analysis.diff.multi.MultiDiff`.

The pieces are two-way compare's (:mod:`.compare`): each side runs on its own copy of the inputs
(:class:`~.compare.Inputs`), everything any side can reach is saved and put back before every run and at the end
(:class:`~.state.State`), each side is captured with named leaves and differentiated (:class:`~.compare.Side`), runs
once more in float64, and every pair of sides is judged for "same maths?" by the same rule
(:func:`~.compare._equivalence`). "Faster?" times every side in every round (:mod:`.nway_speed`), so each pair gets
the record a two-way compare would give it. The reference — the first side, or ``reference=`` — is what every other
side is matched to and judged against in the table; ``d.pair(x, y)`` gives any two.
"""
from __future__ import annotations

import os
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Callable, Dict, List, Optional, Sequence, Tuple, Union, overload

from .._util.keywords import refuse_shadowed_options
from ..analysis.diff.multi import MultiDiff, _ref_index, build_multi, check_sides, default_labels
from ..analysis.diff.verdicts import BAND
from ..attribution.cuda_capture import refuse_during_cuda_graph_capture
from .compare import (
    Side,
    _equivalence,
    _restore,
    advise_graphs,
    check_options,
    compare_two,
    divergence_of,
    peaks_of,
    prepare,
    run_sides,
    timed,
    with_per_node,
)
from .state import State

if TYPE_CHECKING:
    from ..analysis.diff import Diff
    from .recording import Recording

__all__ = ["compare", "compare_sides"]


_Sides = Union[Mapping[str, Callable[..., Any]], List[Callable[..., Any]], Tuple[Callable[..., Any], ...]]
_Recorded = Union[str, "os.PathLike[str]", "Recording"]


@overload
def compare(fn_a: _Recorded, fn_b: _Recorded, /, *, labels: Sequence[str] = ..., band: float = ...,
            budget: float = ..., divergence: Any = ...) -> Diff: ...
@overload
def compare(fn_a: Callable[..., Any], fn_b: Callable[..., Any], /, *args: Any, labels: Sequence[str] = ...,
            profile: bool = ..., repeat: int = ..., band: float = ..., budget: float = ...,
            threads: Optional[int] = ..., advise: bool = ..., memory: bool = ..., divergence: Any = ...,
            **kwargs: Any) -> Diff: ...
@overload
def compare(fn_a: _Sides, /, *args: Any, labels: Optional[Sequence[str]] = ..., reference: Any = ...,
            profile: bool = ..., repeat: int = ..., band: float = ..., budget: float = ...,
            threads: Optional[int] = ..., advise: bool = ..., memory: bool = ..., **kwargs: Any) -> MultiDiff: ...
def compare(fn_a: Any, /, *args: Any, **kwargs: Any) -> Any:
    """``gw.compare``: two functions (``compare(fn_a, fn_b, *inputs)``:
    :func:`graphwidget.experiment.compare.compare_two`, a :class:`~graphwidget.Diff`), or N sides as a dict
    label -> function or a list (``compare({"eager": f,
    "compiled": torch.compile(f)}, *inputs, reference="eager")``: :func:`compare_sides`, a
    :class:`~graphwidget.MultiDiff`).

    The dispatch lives here rather than in ``compare.py``: this module builds on compare's pieces, so compare
    importing it back would be an import cycle (``tests/test_layers.py``). A side that is a recording (or its
    file) goes to :func:`.recording.compare_recorded`."""
    from .recording import Recording, compare_recorded, is_recorded
    if isinstance(fn_a, (str, os.PathLike, Recording)) or (
            args and isinstance(args[0], (str, os.PathLike, Recording)) and is_recorded(args[0])):
        return compare_recorded(fn_a, *args, **kwargs)
    if isinstance(fn_a, (Mapping, list, tuple)):
        return compare_sides(fn_a, *args, **kwargs)
    return compare_two(fn_a, *args, **kwargs)


compare.__doc__ = f"{compare.__doc__}\n\nTwo sides:\n{compare_two.__doc__}"


def _labels(fns: Any, labels: Any) -> Tuple[List[Callable[..., Any]], List[str]]:
    if isinstance(fns, Mapping):
        if labels is not None:
            raise ValueError("graphwidget.compare: a dict's keys are the labels; pass labels= only with a list of "
                             "functions.")
        if not all(isinstance(k, str) and k for k in fns):
            raise ValueError("graphwidget.compare: the dict's keys name the sides: use non-empty strings, e.g. "
                             "{'eager': f, 'compiled': torch.compile(f)}.")
        return list(fns.values()), list(fns)
    items = list(fns)
    if labels is not None:
        return items, list(labels) if isinstance(labels, (list, tuple)) else labels
    names = [getattr(f, "__name__", None) or type(f).__name__ for f in items]
    ok = all(isinstance(x, str) and x and x != "<lambda>" for x in names) and len(set(names)) == len(names)
    return items, names if ok else default_labels(len(items))


@refuse_shadowed_options("graphwidget.compare", "fns")
def compare_sides(fns: Any, *args: Any, labels: Optional[Sequence[str]] = None, reference: Any = None,
                  profile: bool = False, repeat: int = 5, band: float = BAND, budget: float = 3.0,
                  threads: Optional[int] = None, advise: bool = True, memory: bool = False,
                  **kwargs: Any) -> MultiDiff:
    """Run every function of ``fns`` (a dict label -> function, or a list; labels then from ``labels`` or the
    functions' names) on its own copy of ``*args, **kwargs`` and return the :class:`MultiDiff` of their graphs:
    every side matched to the reference (``reference=``, a label or index; default the first), with the
    equivalence verdict of every pair of sides and, with ``profile=True``, the speed verdict of every pair from
    interleaved plain runs of all sides (``budget`` seconds per side compared to the reference), and per-node
    times from ``repeat`` instrumented rounds; with ``memory=True``, one more plain step of each side with its
    allocator peak measured (each pair's ``memory``). The options mean what they mean for two sides
    (:func:`graphwidget.compare`). The caller's tensors, ``.grad``, parameters, buffers, RNG state, grad mode and
    default dtype are left as they were."""
    items, labs = _labels(fns, labels)
    labs = list(check_sides(labs, "graphwidget.compare"))
    if len(labs) != len(items):
        raise ValueError(f"graphwidget.compare: {len(items)} functions but {len(labs)} labels; one label per "
                         f"function.")
    for fn, label in zip(items, labs):
        if not callable(fn):
            raise TypeError(f"graphwidget.compare: side {label!r} must be callable (a function or an nn.Module); got "
                            f"{type(fn).__name__}.")
    check_options(profile, repeat, band, budget, threads)
    refuse_during_cuda_graph_capture("graphwidget.compare")
    if not isinstance(memory, bool):
        raise TypeError(f"graphwidget.compare: memory must be True or False; got {memory!r}.")
    k = 0 if reference is None else _ref_index(reference, labs, "graphwidget.compare")
    perm = [k] + [i for i in range(len(items)) if i != k]
    items, labs = [items[i] for i in perm], [labs[i] for i in perm]
    letters = [chr(ord("A") + i) if i < 26 else f"#{i}" for i in range(len(items))]
    sides, state, saved_grads = prepare(list(zip(items, letters, labs)), args, kwargs)
    from ..attribution.memory import device_of
    from .values import Budget, Collector
    shared = Budget.default(device_of(items[0], args, kwargs))
    for s in sides:
        s.collect = Collector(shared)
    try:
        try:
            run_sides(sides, state, args, kwargs)
            n = len(sides)
            equivalence = {(i, j): _equivalence(sides[i], sides[j]) for i in range(n) for j in range(n) if i != j}
            timing: Dict[Tuple[int, int], Dict[str, Any]] = {}
            if profile:
                timing = _time(sides, state, repeat, band, budget, threads, items[0], args, kwargs)
            peaks = peaks_of(sides, state, items[0], args, kwargs) if memory else None
            graphs = []
            for s in sides:
                assert s.graph is not None
                s.graph.output = s.out
                graphs.append(s.graph)
            verdicts: Dict[Tuple[int, int], Tuple[Optional[Dict[str, Any]], Optional[Dict[str, Any]]]] = \
                {p: (eq, timing.get(p)) for p, eq in equivalence.items()}
            d = build_multi(graphs, labs, verdicts=verdicts)
            for k in range(1, n):  # where each side parts from the reference (docs/diff.md)
                divergence_of(d.pair(0, k), sides[0], sides[k])
            for s in sides:
                s.collect = None
            if peaks is not None:
                for k in range(1, n):
                    d.pair(0, k).memory = dict(peaks, peak=[peaks["peak"][0], peaks["peak"][k]])
        finally:
            _restore(state, saved_grads)
    finally:
        _restore(state, saved_grads)  # again: an interrupt at any line of the first leaves this one to finish
    if advise:
        advise_graphs(list(d.graphs.values()))
    return d


def _time(sides: Sequence[Side], state: State, repeat: int, band: float, budget: float, threads: Optional[int],
          fn0: Any, args: Sequence[Any], kwargs: Mapping[str, Any]) -> Dict[Tuple[int, int], Dict[str, Any]]:
    """Every pair's speed record from plain runs of all sides, then per-node times from instrumented ones."""
    from . import nway_speed

    def measure(plain: List[Any]) -> Tuple[Dict[Tuple[int, int], Dict[str, Any]], int]:
        t = nway_speed.measure(plain, band=band, budget_s=budget * (len(sides) - 1), threads=threads)
        return t, next(iter(t.values()))["threads"]

    timing, per_node = timed(sides, state, repeat, fn0, args, kwargs, measure, nway_speed.per_node)
    for (_, j), t in timing.items():
        with_per_node(t, per_node, sides[j].label, band)
    return timing

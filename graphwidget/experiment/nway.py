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

from collections.abc import Mapping
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

from ..analysis.diff.multi import MultiDiff, _ref_index, build_multi, check_sides, default_labels
from ..analysis.diff.verdicts import BAND, labelled
from .compare import Inputs, Side, _devices, _equivalence, _modules, _restore, _same_structure
from .compare import compare as two_way
from .naming import side_names
from .state import State, mutations

__all__ = ["compare", "compare_sides"]


def compare(fn_a: Any, *args: Any, **kwargs: Any) -> Any:
    """``gw.compare``: two functions (``compare(fn_a, fn_b, *inputs)``: :func:`graphwidget.experiment.compare.compare`,
    a :class:`~graphwidget.Diff`), or N sides as a dict label -> function or a list (``compare({"eager": f,
    "compiled": torch.compile(f)}, *inputs, reference="eager")``: :func:`compare_sides`, a
    :class:`~graphwidget.MultiDiff`).

    The dispatch lives here rather than in ``compare.py``: this module builds on compare's pieces, so compare
    importing it back would be an import cycle (``tests/test_layers.py``)."""
    if isinstance(fn_a, (Mapping, list, tuple)):
        return compare_sides(fn_a, *args, **kwargs)
    return two_way(fn_a, *args, **kwargs)


compare.__doc__ = f"{compare.__doc__}\n\nTwo sides:\n{two_way.__doc__}"


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
    _check_options(profile, repeat, band, budget, threads)
    if not isinstance(memory, bool):
        raise TypeError(f"graphwidget.compare: memory must be True or False; got {memory!r}.")
    k = 0 if reference is None else _ref_index(reference, labs, "graphwidget.compare")
    perm = [k] + [i for i in range(len(items)) if i != k]
    items, labs = [items[i] for i in perm], [labs[i] for i in perm]
    letters = [chr(ord("A") + i) if i < 26 else f"#{i}" for i in range(len(items))]
    arg_modules = _modules(args, kwargs)
    sides: List[Side] = []
    for fn, letter, label in zip(items, letters, labs):
        inputs = Inputs(args, kwargs)
        sides.append(Side(fn, letter, label, inputs, side_names(fn, inputs.names, arg_modules)))
    reachable = [t for s in sides for _, t in s.namer.items]
    state = State(reachable, _devices(args, kwargs, reachable), [b for s in sides for b in s.namer.buffers])
    saved_grads = [(t, t.grad) for t in reachable if t.grad_fn is None]
    try:
        try:
            for s in sides:
                state.reset()
                versions = {id(t): t._version for _, t in s.inputs.names}
                s.run()
                s.mutated = mutations(state, s.namer.by_id, s.inputs.names, versions)
            for s in sides[1:]:
                _same_structure(sides[0], s)
            tensors = [x.tensor for x in state.saved]
            for s in sides:
                state.reset()
                s.reference(args, kwargs, tensors)
            n = len(sides)
            equivalence = {(i, j): _equivalence(sides[i], sides[j]) for i in range(n) for j in range(n) if i != j}
            timing: Dict[Tuple[int, int], Dict[str, Any]] = {}
            if profile:
                timing = _time(sides, state, repeat, band, budget, threads, items[0], args, kwargs)
            peaks = _peaks(sides, state, items[0], args, kwargs) if memory else None
            graphs = []
            for s in sides:
                assert s.graph is not None
                s.graph.output = s.out
                graphs.append(s.graph)
            verdicts: Dict[Tuple[int, int], Tuple[Optional[Dict[str, Any]], Optional[Dict[str, Any]]]] = \
                {p: (eq, timing.get(p)) for p, eq in equivalence.items()}
            d = build_multi(graphs, labs, verdicts=verdicts)
            if peaks is not None:
                for k in range(1, n):
                    d.pair(0, k).memory = dict(peaks, peak=[peaks["peak"][0], peaks["peak"][k]])
        finally:
            _restore(state, saved_grads)
    finally:
        _restore(state, saved_grads)  # again: an interrupt at any line of the first leaves this one to finish
    if advise:
        for g in d.graphs.values():
            _advise_graph(g)
    return d


def _check_options(profile: Any, repeat: Any, band: Any, budget: Any, threads: Any) -> None:
    """The same checks, and words, as the two-way compare's."""
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


def _time(sides: Sequence[Side], state: State, repeat: int, band: float, budget: float, threads: Optional[int],
          fn0: Any, args: Sequence[Any], kwargs: Mapping[str, Any]) -> Dict[Tuple[int, int], Dict[str, Any]]:
    """Every pair's speed record from plain runs of all sides, then per-node times from instrumented ones."""
    import torch

    from ..profiling.checks import guess_device
    from . import nway_speed, speed
    from .interleave import GradGuard
    device = guess_device(fn0, args, kwargs)
    guard = GradGuard()
    try:
        plain = [speed.Side(s.call, s.inputs.args, s.inputs.kwargs, state.reset, s.leaves, guard, device)
                 for s in sides]
        timing = nway_speed.measure(plain, band=band, budget_s=budget * (len(sides) - 1), threads=threads)
        graphs = [s.graph for s in sides]
        assert all(g is not None for g in graphs)
        configured = torch.get_num_threads()
        try:  # per-node times with the threads the verdicts used, so the two read alike (as two-way compare)
            torch.set_num_threads(next(iter(timing.values()))["threads"])
            per_node = nway_speed.per_node([(s.call, s.inputs.args, s.inputs.kwargs, state.reset) for s in sides],
                                           graphs, repeat, guard, device)  # type: ignore[arg-type]
        finally:
            torch.set_num_threads(configured)
    finally:
        guard.restore()
    for (_, j), t in timing.items():
        t["per_node"] = {"rounds": per_node["runs"], "instrumented": True, "order": per_node["order"]}
        step = t["step"]
        t.update(ratio=step["ratio"], low=step["low"], high=step["high"], runs=t["rounds"],
                 verdict=labelled(step["verdict"], sides[j].label, band))
    return timing


def _peaks(sides: Sequence[Side], state: State, fn0: Any, args: Sequence[Any],
           kwargs: Mapping[str, Any]) -> Dict[str, Any]:
    """One plain step of every side with its allocator peak measured (two-way compare's ``_peaks``, N sides)."""
    from ..profiling.checks import guess_device
    from .interleave import GradGuard
    from .peak import measure_peak
    device = guess_device(fn0, args, kwargs)
    guard = GradGuard()
    try:
        got = [measure_peak(s.call, s.inputs.args, s.inputs.kwargs, state.reset, s.leaves, guard, device)
               for s in sides]
    finally:
        guard.restore()
    return {"peak": [x["bytes"] for x in got], "source": got[0]["source"], "measured": True, "device": str(device)}


def _advise_graph(g: Any) -> None:
    """A graph's findings (as two-way compare's ``_advise``): a failing rule becomes a warning, never a lost
    comparison."""
    import warnings

    from ..analysis.advisor import advise
    try:
        advise(g)
    except Exception as exc:  # noqa: BLE001
        warnings.warn(f"graphwidget.compare: the advisor failed on {g.meta.get('title')!r} "
                      f"({type(exc).__name__}: {exc}); the comparison is complete without its findings.",
                      RuntimeWarning, stacklevel=3)

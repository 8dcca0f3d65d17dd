"""The per-node values a divergence search reads (:mod:`.divergence`): for one side's captured graph, what each node
computed in the forward and what flowed into it in the backward, in the run's dtype and in the float64 reference run.

:class:`SideValues` holds them as plain tensors keyed by ``(node id, output_nr)``, so a recording can write them
without pickle (:meth:`SideValues.to_tensors` gives a flat ``str -> Tensor`` dict for safetensors or ``.npy``;
:meth:`SideValues.from_tensors` reads it back). Four kinds, each a ``Dict[Tuple[int, int], Tensor]``:

- ``fwd``: the forward output ``output_nr`` of node ``id`` (the tensor whose ``grad_fn`` is that node, detached, as
  computed in the run dtype). A leaf (``AccumulateGrad``) holds the value of its tensor (a parameter, an input).
- ``fwd64``: the same tensor from the float64 reference run (:mod:`.reference`).
- ``grad``: the gradient flowing into node ``id`` in the backward (its ``grad_outputs[output_nr]``, read with a
  ``Node.register_prehook``), in the run dtype; ``grad64`` the same from the float64 run.

A node without a value (an inner node such as ``linear``'s ``TBackward0``, whose output no call returned; a value
overwritten in place later in the forward; a node the float64 run did not make the same way) simply has no key.

**Bounded memory.** Values are kept as references to the tensors the runs made (no copy; a tensor that an in-place
op is about to overwrite is copied first), counted against a :class:`Budget` shared by every side and run of one
comparison: by default :data:`FRACTION` of the memory free when the comparison starts (``/proc/meminfo``'s
``MemAvailable`` on CPU, ``torch.cuda.mem_get_info`` on CUDA). Beyond it, a value is kept as a *digest*
(:func:`digest`: its size, largest magnitude and :data:`SAMPLES` elements at fixed positions) in ``digests`` under
``(kind, id, output_nr)``, which the search compares by those samples, and :attr:`SideValues.notes` says how many
values that concerned and how to raise the budget. In a two-sided compare only A's values are kept whole: B's
float64 values are measured against A's as B's float64 run makes them (:meth:`Collector.stream_against`) and only
the figures are kept (:attr:`SideValues.measured`).

Collection: :class:`Tap` sees every torch call of a forward (through the attribution recorder of compare's run, or
its own :class:`~graphwidget.attribution.intercept.Interception` in the float64 run) and keeps each output by its
``grad_fn``; :func:`grad_hooks` puts a pre-hook on every node before the backward; :func:`node_ids` maps the nodes
to the capture's ids (the same pre-order walk), and :func:`side_values` builds the :class:`SideValues`.
"""
from __future__ import annotations

from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

import torch

from .equivalence import measure

#: Share of the free memory the values of one comparison may hold by default.
FRACTION = 0.25
#: Elements a digest keeps, at evenly spaced flat positions (the same positions for equal sizes on both sides).
SAMPLES = 256
#: The kinds of values a :class:`SideValues` holds.
KINDS = ("fwd", "fwd64", "grad", "grad64")

Key = Tuple[int, int]  # (node id, output_nr)


def free_bytes(device: Optional[torch.device] = None) -> Optional[int]:
    """Memory free now on ``device`` (CUDA: ``torch.cuda.mem_get_info``; CPU: ``MemAvailable`` from
    ``/proc/meminfo``), or ``None`` when it cannot be read."""
    if device is not None and device.type == "cuda" and torch.cuda.is_available():
        try:
            return int(torch.cuda.mem_get_info(device)[0])
        except Exception:  # noqa: BLE001 - an unreadable device only means "no figure"
            return None
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        return None
    return None


class Budget:
    """How many bytes of exact values one comparison may still keep (shared by its sides and runs)."""

    def __init__(self, total: Optional[int]) -> None:
        #: the budget in bytes (``None``: unlimited)
        self.total = total
        self.used = 0
        #: values kept as digests because the budget was spent
        self.digested = 0

    @classmethod
    def default(cls, device: Optional[torch.device] = None) -> "Budget":
        free = free_bytes(device)
        return cls(None if free is None else int(free * FRACTION))

    def take(self, nbytes: int) -> bool:
        """Reserve ``nbytes``; ``False`` (nothing reserved) when that would exceed the budget."""
        if self.total is not None and self.used + nbytes > self.total:
            self.digested += 1
            return False
        self.used += nbytes
        return True


def digest(t: torch.Tensor) -> torch.Tensor:
    """A small float64 summary of ``t``: ``[numel, largest magnitude, then up to SAMPLES elements at evenly spaced
    flat positions]`` (a complex tensor: its real part). Two tensors of one size are sampled at the same places."""
    x = t.detach()
    if x.is_complex():
        x = x.real
    flat = x.reshape(-1)
    n = flat.numel()
    if n == 0:
        return torch.zeros(2, dtype=torch.float64)
    k = min(n, SAMPLES)
    # float64 on the CPU: float32 positions round past the last element once numel passes 2**24
    idx = torch.linspace(0, n - 1, k, dtype=torch.float64).round().long().to(flat.device)
    head = torch.tensor([float(n), float(flat.abs().max())], dtype=torch.float64)
    return torch.cat([head, flat[idx].to(device="cpu", dtype=torch.float64)])


class SideValues:
    """One side's per-node values (module docstring): ``fwd``, ``fwd64``, ``grad``, ``grad64`` (each ``(node id,
    output_nr) -> Tensor``), ``digests`` (``(kind, id, output_nr) -> digest`` for values beyond the budget),
    ``nbytes`` (bytes of the exact values held) and ``notes`` (what could not be kept, in words)."""

    def __init__(self) -> None:
        self.fwd: Dict[Key, torch.Tensor] = {}
        self.fwd64: Dict[Key, torch.Tensor] = {}
        self.grad: Dict[Key, torch.Tensor] = {}
        self.grad64: Dict[Key, torch.Tensor] = {}
        self.digests: Dict[Tuple[str, int, int], torch.Tensor] = {}
        #: ``(kind, id) -> {output_nr: (partner id, row)}``: outputs measured against a partner side's values the
        #: moment this side's float64 value existed (:meth:`Collector.stream_against`); neither that value nor,
        #: from then on, this side's run value is kept. The row is :func:`~.equivalence.measure`'s, judged when the
        #: search runs
        self.measured: Dict[Tuple[str, int], Dict[int, Tuple[int, Dict[str, Any]]]] = {}
        self.nbytes = 0
        self.notes: List[str] = []

    def kind(self, name: str) -> Dict[Key, torch.Tensor]:
        if name not in KINDS:
            raise ValueError(f"SideValues: kind must be one of {KINDS}; got {name!r}.")
        return getattr(self, name)  # type: ignore[no-any-return]

    def get(self, name: str, node: int, out: int = 0) -> Tuple[Optional[torch.Tensor], bool]:
        """``(value, exact)``: the exact value, else its digest (``exact`` False), else ``(None, True)``."""
        v = self.kind(name).get((node, out))
        if v is not None:
            return v, True
        d = self.digests.get((name, node, out))
        return (d, False) if d is not None else (None, True)

    def outputs(self, name: str, node: int) -> List[int]:
        """The output numbers of ``node`` that have a value (exact or digest) of kind ``name``."""
        got = {o for (n, o) in self.kind(name) if n == node}
        got.update(o for (k, n, o) in self.digests if k == name and n == node)
        return sorted(got)

    def put(self, name: str, node: int, out: int, t: torch.Tensor, budget: Optional[Budget] = None,
            size: Optional[int] = None) -> None:
        """Keep ``t`` (detached) as ``(node, out)`` of kind ``name``: exact within ``budget``, else its digest.
        ``size``: the bytes it costs (default its own; 0 when another kept value already holds its storage)."""
        t = t.detach()
        nbytes = t.numel() * t.element_size() if size is None else size
        if budget is None or budget.take(nbytes):
            self.kind(name)[(node, out)] = t
            self.nbytes += nbytes
        else:
            self.digests[(name, node, out)] = digest(t)

    # -- without pickle -----------------------------------------------------------------------------------------
    def to_tensors(self, cpu: bool = True) -> Dict[str, torch.Tensor]:
        """Every value as ``"fwd/12/0"`` (kind/node/output_nr) and every digest as ``"digest/fwd/12/0"`` ->
        contiguous tensor (on the CPU unless ``cpu=False``): what safetensors or ``.npy`` files hold."""
        out: Dict[str, torch.Tensor] = {}
        for name in KINDS:
            for (n, o), t in self.kind(name).items():
                out[f"{name}/{n}/{o}"] = (t.cpu() if cpu else t).contiguous()
        for (name, n, o), t in self.digests.items():
            out[f"digest/{name}/{n}/{o}"] = t.contiguous()
        return out

    @classmethod
    def from_tensors(cls, tensors: Dict[str, torch.Tensor], notes: Sequence[str] = ()) -> "SideValues":
        """The inverse of :meth:`to_tensors`; a key of another form raises a ``ValueError`` naming it."""
        v = cls()
        for key, t in tensors.items():
            parts = key.split("/")
            try:
                if parts[0] == "digest" and len(parts) == 4 and parts[1] in KINDS:
                    v.digests[(parts[1], int(parts[2]), int(parts[3]))] = t
                    continue
                if len(parts) == 3 and parts[0] in KINDS:
                    v.kind(parts[0])[(int(parts[1]), int(parts[2]))] = t
                    v.nbytes += t.numel() * t.element_size()
                    continue
            except ValueError:
                pass
            raise ValueError(f"SideValues.from_tensors: {key!r} is not a value key: expected 'fwd/<node>/<output>', "
                             f"'fwd64/..', 'grad/..', 'grad64/..' or 'digest/<kind>/<node>/<output>'.")
        v.notes = list(notes)
        return v

    def __repr__(self) -> str:
        counts = ", ".join(f"{k} {len(self.kind(k))}" for k in KINDS)
        return f"<SideValues {counts}, {len(self.digests)} digests, {self.nbytes} bytes>"


# -- collecting -------------------------------------------------------------------------------------------------------
def _inplace(func: Any, kwargs: Any) -> bool:
    """Does this call (probably) write into one of its arguments? ``add_``, ``__iadd__``, ``inplace=True``, ``out=``."""
    name = getattr(func, "__name__", "") or ""
    if name.endswith("_") and not name.endswith("__"):
        return True
    if name.startswith("__i") and name.endswith("__"):
        return True
    return bool(kwargs) and (kwargs.get("inplace") is True or kwargs.get("out") is not None)


class Tap:
    """What one forward's torch calls returned: every output that has a ``grad_fn``, first seen, by node; and the
    calls in order (their names and nodes), to line up the float64 run's calls with the run's when their graphs
    differ. Hand :meth:`before` and :meth:`after` to whatever sees the calls (the recorder's ``tap``)."""

    def __init__(self) -> None:
        self.by_fn: Dict[int, Tuple[Any, Dict[int, Tuple[torch.Tensor, int]]]] = {}
        self.calls: List[Tuple[str, List[Tuple[int, int]]]] = []
        self._copied: set = set()

    def before(self, func: Any, args: Sequence[Any], kwargs: Any) -> None:
        """Before an in-place call: copy the kept values it is about to overwrite."""
        if not _inplace(func, kwargs):
            return
        from ..capturing.roots import flat_tensors
        for t in flat_tensors((args, kwargs)):
            fn = t.grad_fn
            entry = self.by_fn.get(id(fn)) if fn is not None else None
            if entry is None or t.output_nr not in entry[1]:
                continue
            kept, version = entry[1][t.output_nr]
            if (id(fn), t.output_nr) not in self._copied and kept._version == version:
                entry[1][t.output_nr] = (kept.clone(), kept._version)
                self._copied.add((id(fn), t.output_nr))

    def after(self, func: Any, out: Any) -> None:
        from ..capturing.roots import flat_tensors
        nodes: List[Tuple[int, int]] = []
        for t in flat_tensors(out):
            fn = t.grad_fn
            if fn is None:
                continue
            nodes.append((id(fn), t.output_nr))
            entry = self.by_fn.get(id(fn))
            if entry is None:
                entry = self.by_fn[id(fn)] = (fn, {})
            if t.output_nr not in entry[1]:
                d = t.detach()
                entry[1][t.output_nr] = (d, d._version)
        self.calls.append((getattr(func, "__name__", type(func).__name__), nodes))

    def value(self, fn: Any, out: int) -> Optional[torch.Tensor]:
        """The kept output ``out`` of node ``fn``, or ``None`` (never returned, or overwritten in place since)."""
        entry = self.by_fn.get(id(fn))
        if entry is None or out not in entry[1]:
            return None
        t, version = entry[1][out]
        return t if t._version == version else None


class TapMode:
    """A :class:`Tap` fed by its own interception of every torch call (the float64 run, where no recorder runs):
    the same calls the recorder sees (torch functions and ``Function.apply``), in the same order."""

    def __init__(self, tap: Optional[Tap], wrap: Optional[Callable[[Any, Sequence[Any], Any], Any]] = None) -> None:
        from ..attribution.intercept import Interception, InterceptMode
        self.tap, self.wrap = tap, wrap
        self._intercept = Interception(InterceptMode(handle=self._run), self._around)

    def _around(self, apply: Callable[..., Any], args: Sequence[Any], kwargs: Any) -> Any:
        return self._run(apply, args, kwargs)

    def _run(self, func: Callable[..., Any], args: Sequence[Any], kwargs: Any) -> Any:
        kwargs = kwargs or {}
        tap = self.tap
        if tap is not None:
            tap.before(func, args, kwargs)
        out = self.wrap(func, args, kwargs) if self.wrap is not None else func(*args, **kwargs)
        if tap is not None:
            tap.after(func, out)
        return out

    def start(self) -> None:
        self._intercept.start()

    def stop(self) -> None:
        """Idempotent, like the recorder's close."""
        self._intercept.stop()


def grad_hooks(nodes: Sequence[Any], keys: Sequence[int],
               sink: Optional[Callable[[Key, torch.Tensor], bool]] = None
               ) -> Tuple[Dict[Key, torch.Tensor], List[Any]]:
    """A pre-hook on each of ``nodes`` that keeps what flows into it in the backward under ``(keys[i],
    output_nr)``; returns the dict it fills and the hook handles (remove them after the backward). ``sink``: offered
    each gradient first; one it takes (returns ``True`` for) is not kept. The hooks return nothing: no gradient is
    changed."""
    got: Dict[Key, torch.Tensor] = {}
    handles: List[Any] = []
    for fn, k in zip(nodes, keys):
        def keep(grad_outputs: Any, k: int = k) -> None:
            for i, g in enumerate(grad_outputs):
                if isinstance(g, torch.Tensor):
                    if sink is not None and sink((k, i), g.detach()):
                        continue
                    got[(k, i)] = g.detach()
        try:
            handles.append(fn.register_prehook(keep))
        except (AttributeError, RuntimeError):  # a node type that takes no hooks: its gradient is not read
            continue
    return got, handles


def remove_hooks(handles: Sequence[Any]) -> None:
    for h in handles:
        h.remove()


def node_ids(roots: Sequence[Any]) -> List[Any]:
    """The nodes of the graph of ``roots`` (tensors or nodes) in capture's id order: ``node_ids(roots)[i]`` is node
    ``i`` of the captured graph (the same pre-order walk)."""
    from ..capturing.roots import root_nodes
    from ..capturing.walk import walk
    return walk(root_nodes(list(roots))).order


def op_names(nodes: Sequence[Any]) -> List[str]:
    return [type(fn).__name__ for fn in nodes]


def line_up(run: Tap, run_nodes: Sequence[Any], ref: Tap, ref_nodes: Sequence[Any]) -> Dict[int, int]:
    """Which node of the float64 run (by its position in ``ref_nodes``) is node ``i`` of the run: the same position
    when the two graphs have the same ops in the same order; else through the calls that made them, in order, as
    far as both runs made the same calls."""
    if op_names(run_nodes) == op_names(ref_nodes):
        return {i: i for i in range(len(run_nodes))}
    where_run = {id(fn): i for i, fn in enumerate(run_nodes)}
    where_ref = {id(fn): i for i, fn in enumerate(ref_nodes)}
    out: Dict[int, int] = {}
    for (name_a, nodes_a), (name_b, nodes_b) in zip(run.calls, ref.calls):
        if name_a != name_b or len(nodes_a) != len(nodes_b):
            break
        for (fa, _), (fb, _) in zip(nodes_a, nodes_b):
            i, j = where_run.get(fa), where_ref.get(fb)
            if i is not None and j is not None:
                out.setdefault(i, j)
    return out


def storage_key(t: torch.Tensor) -> Any:
    try:
        return (t.device, t.untyped_storage().data_ptr())
    except (RuntimeError, NotImplementedError):  # a tensor without a storage (a subclass): count it alone
        return id(t)


def measure_against(values: SideValues, name: str, node: int, out: int, t64: torch.Tensor,
                    partner: SideValues, to_partner: Dict[int, int]) -> bool:
    """Measure this side's float64 value ``t64`` (kind ``name``: ``"fwd64"`` or ``"grad64"``) of ``(node, out)``
    against the matched partner node's values now, as the search would (:func:`~.equivalence.measure`), and keep the
    row instead of the value (and of this side's run value, which only that row needed). ``False`` (nothing done:
    the value is kept as usual) unless the partner's run and float64 values and this side's run value are all there
    exactly."""
    kind = name[:-2]
    a = to_partner.get(node)
    if a is None or not (t64.is_floating_point() or t64.is_complex()) or t64.layout is not torch.strided:
        return False
    xa, xa64 = partner.kind(kind).get((a, out)), partner.kind(name).get((a, out))
    xb = values.kind(kind).get((node, out))
    if xa is None or xa64 is None or xb is None or xa.shape != xb.shape:  # other shapes: the search skips the pair
        return False
    row = measure(f"{kind} {a}/{node}:{out}", xa, xb, xa64, t64, kind="output" if kind == "fwd" else "gradient")
    values.measured.setdefault((kind, node), {})[out] = (a, row)
    del values.kind(kind)[(node, out)]  # measured: the run value is not needed any more either
    return True


def add_forward(values: SideValues, name: str, tap: Tap, nodes: Sequence[Any], ids: Dict[int, int],
                budget: Optional[Budget], sink: Optional[Callable[[int, int, torch.Tensor], bool]] = None) -> None:
    """Fill kind ``name`` (``"fwd"`` or ``"fwd64"``) from ``tap``: node ``nodes[j]`` goes to id ``ids[j]``; a leaf
    holds its tensor's value. A storage shared by several kept values is counted once. ``sink``: offered each value
    first (``(id, output_nr, value)``); one it takes is not kept."""
    counted: set = set()
    for j, fn in enumerate(nodes):
        i = ids.get(j)
        if i is None:
            continue
        if type(fn).__name__ == "AccumulateGrad":
            found: List[Tuple[int, torch.Tensor]] = [(0, fn.variable)]
        else:
            entry = tap.by_fn.get(id(fn))
            found = []
            if entry is not None:
                for o in sorted(entry[1]):
                    t = tap.value(fn, o)
                    if t is not None:
                        found.append((o, t))
        for o, t in found:
            if not (t.is_floating_point() or t.is_complex()) or t.layout is not torch.strided:
                continue
            if sink is not None and sink(i, o, t):
                continue
            key = storage_key(t)
            size = 0 if key in counted else t.numel() * t.element_size()
            counted.add(key)
            values.put(name, i, o, t, budget, size)


def add_grads(values: SideValues, name: str, got: Dict[Key, torch.Tensor], ids: Dict[int, int],
              budget: Optional[Budget]) -> None:
    """Fill kind ``name`` (``"grad"`` or ``"grad64"``) from :func:`grad_hooks`' dict keyed by positions, mapped
    through ``ids`` (position -> node id)."""
    for (j, o), g in got.items():
        i = ids.get(j)
        if i is not None and (g.is_floating_point() or g.is_complex()) and g.layout is torch.strided:
            values.put(name, i, o, g, budget)


def budget_note(budget: Budget) -> Optional[str]:
    """What the budget cost, in words (``None`` when every value was kept exactly)."""
    if not budget.digested:
        return None
    total = budget.total or 0
    return (f"{budget.digested} values beyond the value budget ({total / 2 ** 20:.0f} MiB) were compared by "
            f"{SAMPLES} sampled elements only; pass divergence=<bytes> to gw.compare to compare them exactly")


class Collector:
    """One side's values, collected in compare's own two runs of it (the run, then the float64 reference): call
    :meth:`forward_done` after the run's forward and capture, wrap its backward in :meth:`hooks` /
    :meth:`backward_done`, and do the same in the float64 run (:meth:`reference_start` ... :meth:`reference_done`,
    which :func:`.reference.run_float64` calls). :attr:`values` is the result; everything else is dropped at the
    end."""

    def __init__(self, budget: Optional[Budget]) -> None:
        self.budget = budget
        self.values = SideValues()
        self.tap: Optional[Tap] = Tap()
        self.nodes: Optional[List[Any]] = None
        self._got: Optional[Dict[Key, torch.Tensor]] = None
        self._ref_tap: Optional[Tap] = None
        self._ref_nodes: Optional[List[Any]] = None
        self._ref_ids: Dict[int, int] = {}
        self._mode: Optional[TapMode] = None
        self._partner: Optional[Tuple[SideValues, Dict[int, int]]] = None

    def stream_against(self, partner: SideValues, to_partner: Dict[int, int]) -> None:
        """Before this side's float64 run, with ``partner`` (the other side's values, its float64 run done) and the
        matching (this side's id -> the partner's): each float64 value of a matched node is measured against the
        partner's the moment it exists and is not kept (:func:`measure_against`), so one side's float64 values are
        never held whole. The search reads the same rows it would have computed."""
        self._partner = (partner, to_partner)

    def _sink(self, name: str) -> Optional[Callable[[int, int, torch.Tensor], bool]]:
        if self._partner is None:
            return None
        partner, to_partner = self._partner
        return lambda i, o, t: measure_against(self.values, name, i, o, t, partner, to_partner)

    # -- the run ----------------------------------------------------------------------------------------------------
    def forward_done(self, roots: Sequence[Any], n_graph: int) -> None:
        """After the run's forward and its capture (``n_graph`` nodes): keep every node's forward value."""
        assert self.tap is not None
        nodes = node_ids(roots)
        if len(nodes) != n_graph:  # pragma: no cover - the capture walks the same graph
            self.values.notes.append("the graph changed between the capture and the value walk; no values kept")
            self.tap = None
            return
        self.nodes = nodes
        add_forward(self.values, "fwd", self.tap, nodes, {j: j for j in range(len(nodes))}, self.budget)

    def hooks(self) -> List[Any]:
        if self.nodes is None:
            return []
        self._got, handles = grad_hooks(self.nodes, list(range(len(self.nodes))))
        return handles

    def backward_done(self, handles: Sequence[Any]) -> None:
        remove_hooks(handles)
        if self._got is not None:
            add_grads(self.values, "grad", self._got, {j: j for j in range(len(self.nodes or ()))}, self.budget)
        self._got = None

    # -- the float64 run --------------------------------------------------------------------------------------------
    def reference_start(self, wrap: Optional[Callable[[Any, Sequence[Any], Any], Any]] = None) -> None:
        self._ref_tap = Tap() if self.nodes is not None else None
        self._mode = TapMode(self._ref_tap, wrap)
        self._mode.start()

    def reference_stop(self) -> None:
        """Idempotent (the float64 run calls it from two clean-ups)."""
        if self._mode is not None:
            self._mode.stop()

    def reference_forward_done(self, roots: Sequence[Any]) -> None:
        """After the float64 forward, while its tensors are still widened: keep its values under the run's ids."""
        if self._ref_tap is None or self.nodes is None or self.tap is None:
            return
        ref_nodes = node_ids(roots)
        to_ref = line_up(self.tap, self.nodes, self._ref_tap, ref_nodes)
        if len(to_ref) < len(self.nodes):
            self.values.notes.append(f"the float64 run made {len(ref_nodes)} nodes where the run made "
                                     f"{len(self.nodes)}: {len(self.nodes) - len(to_ref)} nodes have no float64 "
                                     f"value (judged by the fixed tolerance)")
        self._ref_ids = {j: i for i, j in to_ref.items()}
        self._ref_nodes = ref_nodes
        add_forward(self.values, "fwd64", self._ref_tap, ref_nodes, self._ref_ids, self.budget,
                    self._sink("fwd64"))
        # the taps are no longer needed: what they held that was not kept may go as the backward frees it
        self.tap = self._ref_tap = None
        if self._mode is not None:
            self._mode.tap = None

    def reference_hooks(self) -> List[Any]:
        if self._ref_nodes is None:
            return []
        sink = self._sink("grad64")
        ids = self._ref_ids

        def take(key: Key, g: torch.Tensor) -> bool:
            i = ids.get(key[0])
            return sink is not None and i is not None and sink(i, key[1], g)

        self._got, handles = grad_hooks(self._ref_nodes, list(range(len(self._ref_nodes))),
                                        take if sink is not None else None)
        return handles

    def reference_done(self, handles: Sequence[Any]) -> None:
        remove_hooks(handles)
        if self._got is not None:
            add_grads(self.values, "grad64", self._got, self._ref_ids, self.budget)
        self.finish()

    def finish(self) -> None:
        """Drop everything but :attr:`values` (the nodes, the taps)."""
        self._got = None
        self.tap = self._ref_tap = None
        self.nodes = self._ref_nodes = None
        self._mode = None
        self._partner = None

"""Recordings: one side of :func:`graphwidget.compare`, run once and kept, so that two implementations that cannot be
imported together — two commits, two library versions, a port in another process — are compared anyway.

``rec = gw.record(fn, *inputs)`` runs one forward and backward exactly as compare runs one side (its own copy of the
inputs, everything it reaches saved and put back, the float64 reference run: :class:`~.compare.Side`), and keeps
what compare reads of that side: the captured graph, the outputs, the gradients under compare's names
(:mod:`.naming`), the float64 outputs and gradients, the dtypes the reference ran in, what the forward changed in
place. Beside them: a digest of the inputs (and, when they are plain tensors and values, the inputs themselves), a
digest of every parameter and buffer, the environment (torch, graphwidget, Python, device, dtype, a fingerprint of
the machine), and with ``profile=True`` the plain timings of the step.

``gw.compare(rec_a, rec_b)`` then judges the two recorded sides by the very code that judges two live ones
(:func:`~.compare._equivalence` on :class:`RecordedSide`, which answers what a live :class:`~.compare.Side` answers)
and matches the two recorded graphs: the same verdict and matching as one process would give. Tensors that are not
inputs are keyed by their name (an ``id`` means nothing in another process), so parameters pair by name.

``rec.save(path)`` writes one file (:mod:`graphwidget.model.recfile`: the safetensors layout, written by hand);
:func:`load_recording` reads it back without running any code.

Speed across recordings: each recording's plain runs are its own; two of them are compared only when both were
timed on the same machine (fingerprint) and device, and the verdict says "not interleaved": the interval of the
ratio of medians comes from each side's own range for its median (its median interval at a joint 95 % level,
widened to the middle half of its runs), so it is wider than an interleaved comparison's, which cancels the drift
between rounds that two recordings made at different times cannot.
"""
from __future__ import annotations

import datetime
import hashlib
import json
import math
import os
import platform
from pathlib import Path
from typing import Any, Callable, Dict, List, Mapping, Optional, Sequence, Tuple

import torch

from .._util.keywords import refuse_shadowed_options
from ..analysis.diff.result import Diff, build, check_labels
from ..analysis.diff.verdicts import BAND, labelled, speed_verdict
from ..model import io, recfile
from ..model.graph import GradGraph
from .compare import (
    Side,
    _equivalence,
    _restore,
    _same_structure,
    advise_graphs,
    attach_divergence,
    leaf_pairs,
    prepare,
)
from .equivalence import lowest_precision
from .state import mutations
from .values import Budget, Collector, SideValues, budget_note

__all__ = ["Recording", "RecordedSide", "record", "load_recording", "compare_recorded", "is_recorded",
           "NOT_INTERLEAVED"]

#: The ``order`` of a speed verdict between two recordings: each side's runs were its own.
NOT_INTERLEAVED = "not interleaved"
#: Inputs up to this many bytes are kept in a recording (so ``gw.compare(rec, fn)`` can run ``fn`` on them).
INPUT_BUDGET = 256 * 1024 * 1024
#: Bytes of exact per-node values (forward values and incoming gradients, run dtype and float64) a recording keeps
#: by default for the divergence search; beyond them, values are kept as digests (:mod:`.values`).
VALUES_BUDGET = 256 * 1024 * 1024

_DTYPES: Dict[torch.dtype, str] = {
    torch.bool: "BOOL", torch.uint8: "U8", torch.int8: "I8", torch.int16: "I16", torch.float16: "F16",
    torch.bfloat16: "BF16", torch.int32: "I32", torch.float32: "F32", torch.float64: "F64", torch.int64: "I64",
    torch.complex64: "C64", torch.complex128: "C128",
}
for _name, _code in (("uint16", "U16"), ("uint32", "U32"), ("uint64", "U64"), ("float8_e4m3fn", "F8_E4M3"),
                     ("float8_e5m2", "F8_E5M2")):
    if hasattr(torch, _name):
        _DTYPES[getattr(torch, _name)] = _code
_FROM_CODE = {v: k for k, v in _DTYPES.items()}

Key = Tuple[str, Any]


# -- tensors <-> bytes --------------------------------------------------------------------------------------------
def _plain(t: torch.Tensor) -> torch.Tensor:
    t = t.detach()
    if t.layout != torch.strided:
        t = t.to_dense()
    if t.is_conj():
        t = t.resolve_conj()
    if t.is_neg():
        t = t.resolve_neg()
    return t.cpu().contiguous()


def _blob(t: torch.Tensor) -> recfile.Blob:
    t = _plain(t)
    code = _DTYPES.get(t.dtype)
    if code is None:
        raise ValueError(f"graphwidget.record: a tensor of dtype {t.dtype} cannot be saved; the recording format "
                         f"holds {', '.join(str(d).replace('torch.', '') for d in _DTYPES)}.")
    raw = t.reshape(-1).view(torch.uint8).numpy().tobytes() if t.numel() else b""
    return code, list(t.shape), raw


def _tensor(c: recfile.Contents, name: str, path: Any) -> torch.Tensor:
    if name not in c.tensors:
        raise recfile._fail(path, f"the record names a tensor {name!r} the file does not hold (edited?).")
    code, shape, b, e = c.tensors[name]
    dtype = _FROM_CODE.get(code)
    if dtype is None:
        raise recfile._fail(path, f"tensor {name!r} has dtype {code}, which this torch ({torch.__version__}) "
                                  f"lacks.")
    numel = math.prod(shape)
    if numel == 0:
        return torch.empty(shape, dtype=dtype)
    # A copy per tensor: its own, aligned memory (offsets in the file are not aligned to the element size).
    return torch.frombuffer(bytearray(c.data[b:e]), dtype=dtype, count=numel).reshape(shape)


def _sha(t: torch.Tensor) -> str:
    t = _plain(t)
    h = hashlib.sha256(f"{str(t.dtype)}{list(t.shape)}".encode())
    if t.numel():
        h.update(t.reshape(-1).view(torch.uint8).numpy().data)
    return h.hexdigest()


# -- the inputs ----------------------------------------------------------------------------------------------------
def _walk_inputs(args: Sequence[Any], kwargs: Mapping[str, Any]) -> List[Tuple[str, Any]]:
    """``(path, leaf)`` of the arguments, with the paths compare names inputs by (``arg0``, ``x``, ``arg1[2]``)."""
    out: List[Tuple[str, Any]] = []

    def walk(o: Any, p: str) -> None:
        if isinstance(o, tuple) and hasattr(o, "_fields"):
            for f, v in zip(o._fields, o):
                walk(v, f"{p}.{f}")
        elif isinstance(o, (list, tuple)):
            for i, v in enumerate(o):
                walk(v, f"{p}[{i}]")
        elif isinstance(o, dict):
            for k, v in o.items():
                walk(v, f"{p}[{k!r}]")
        else:
            out.append((p, o))

    for i, v in enumerate(args):
        walk(v, f"arg{i}")
    for k, v in kwargs.items():
        walk(v, k)
    return out


def _describe_leaf(v: Any) -> Dict[str, Any]:
    if isinstance(v, torch.nn.Module):
        return {"kind": "module", "type": type(v).__name__}
    if isinstance(v, torch.Tensor):
        return {"kind": "tensor", "dtype": str(v.dtype).replace("torch.", ""), "shape": list(v.shape),
                "requires_grad": bool(v.requires_grad), "sha256": _sha(v)}
    if v is None or isinstance(v, (bool, int, str)) or (isinstance(v, float) and math.isfinite(v)):
        return {"kind": "value", "value": v}
    return {"kind": "object", "type": type(v).__name__, "repr": repr(v)[:200]}


def input_digest(args: Sequence[Any], kwargs: Mapping[str, Any]) -> Dict[str, Any]:
    """``{"digest", "items"}``: every argument leaf (path, kind; a tensor's dtype, shape, requires_grad and the sha256
    of its values; a plain value itself; a module's type) and one sha256 over all of them."""
    items = [{"path": p, **_describe_leaf(v)} for p, v in _walk_inputs(args, kwargs)]
    digest = hashlib.sha256(json.dumps(items, sort_keys=True).encode()).hexdigest()
    return {"digest": digest, "items": items}


def _skeleton(o: Any, tensors: List[torch.Tensor]) -> Any:
    """The arguments as JSON with their tensors numbered into ``tensors``; raises TypeError for what cannot be
    kept (modules, other objects)."""
    if isinstance(o, torch.nn.Module) or isinstance(o, torch.nn.Parameter):
        raise TypeError(f"a module or parameter ({type(o).__name__})")
    if isinstance(o, torch.Tensor):
        tensors.append(o)
        return {"tensor": len(tensors) - 1, "requires_grad": bool(o.requires_grad), "device": str(o.device)}
    if o is None or isinstance(o, (bool, int, str)) or (isinstance(o, float) and math.isfinite(o)):
        return {"value": o}
    if isinstance(o, (list, tuple)) and not hasattr(o, "_fields") and type(o) in (list, tuple):
        return {type(o).__name__: [_skeleton(v, tensors) for v in o]}
    if type(o) is dict and all(isinstance(k, str) for k in o):
        return {"dict": [[k, _skeleton(v, tensors)] for k, v in o.items()]}
    raise TypeError(f"a {type(o).__name__}")


def _unskeleton(s: Any, tensors: Sequence[torch.Tensor], path: Any) -> Any:
    if not isinstance(s, dict) or len(s) < 1:
        raise recfile._fail(path, "the recorded inputs are malformed (edited?).")
    if "tensor" in s:
        k = s["tensor"]
        if not isinstance(k, int) or not 0 <= k < len(tensors):
            raise recfile._fail(path, "the recorded inputs name a tensor that is not there (edited?).")
        t = tensors[k].clone()
        dev = s.get("device")
        if isinstance(dev, str) and dev != "cpu":
            try:
                t = t.to(dev)
            except (RuntimeError, AssertionError):  # recorded on a device this machine lacks: run on the CPU
                pass
        return t.requires_grad_(bool(s.get("requires_grad"))) if t.is_floating_point() or t.is_complex() else t
    if "value" in s:
        return s["value"]
    if "list" in s or "tuple" in s:
        items = s.get("list", s.get("tuple"))
        if not isinstance(items, list):
            raise recfile._fail(path, "the recorded inputs are malformed (edited?).")
        vals = [_unskeleton(v, tensors, path) for v in items]
        return vals if "list" in s else tuple(vals)
    if "dict" in s and isinstance(s["dict"], list):
        return {str(k): _unskeleton(v, tensors, path) for k, v in s["dict"]}
    raise recfile._fail(path, "the recorded inputs are malformed (edited?).")


# -- the environment -----------------------------------------------------------------------------------------------
def _cpu_model() -> str:
    try:
        with open("/proc/cpuinfo", encoding="utf-8", errors="replace") as f:
            for line in f:
                if line.lower().startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def _memory_total() -> Optional[int]:
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError, AttributeError):
        return None


def environment(device: torch.device) -> Dict[str, Any]:
    """Where a recording was made: versions, device, and a fingerprint of the machine (host name, CPU model,
    cores, memory, the device's name, hashed: the host name itself is not kept)."""
    dev_name = _cpu_model()
    if device.type == "cuda":
        try:
            dev_name = torch.cuda.get_device_name(device)
        except (RuntimeError, AssertionError):
            pass
    cores = os.cpu_count()
    parts = [platform.node(), platform.machine(), _cpu_model(), cores, _memory_total(), str(device), dev_name]
    return {
        "graphwidget": recfile.package_version(), "torch": str(torch.__version__),
        "cuda": torch.version.cuda,
        "python": platform.python_version(), "platform": platform.platform(), "device": str(device),
        "device_name": dev_name, "cpu": _cpu_model(), "cores": cores, "threads": torch.get_num_threads(),
        "default_dtype": str(torch.get_default_dtype()).replace("torch.", ""),
        "machine": hashlib.sha256(json.dumps(parts).encode()).hexdigest()[:16],
        "created": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
    }


# -- the recording -------------------------------------------------------------------------------------------------
class Recording:
    """One side of a comparison, run once and kept (module docstring). Made by :func:`graphwidget.record`, read by
    :func:`graphwidget.load`; compared with :func:`graphwidget.compare` (``compare(rec_a, rec_b)``,
    ``compare("a.gwrec", "b.gwrec")``, ``compare(rec_a, fn_b, *inputs)``).

    Attributes: ``label``, ``graph`` (the captured :class:`~graphwidget.GradGraph`), ``outputs`` (``[(path,
    tensor or type name)]``), ``grads`` (``[(name, key, gradient or None, name in its module)]``), ``backward``
    (whether gradients were computed), ``ref_outputs`` / ``ref_grads`` / ``ref_dtypes`` (the float64 run; ``None``
    with ``ref_error`` saying why when it could not run), ``mutated``, ``inputs`` (``{"digest", "items"}``),
    ``params`` (name -> sha256 of every parameter and buffer), ``env``, ``timing`` (``profile=True``), ``path``
    (the file it was read from)."""

    def __init__(self, label: str, graph: GradGraph) -> None:
        self.label, self.graph = label, graph
        self.outputs: List[Tuple[str, Any]] = []
        self.described = ""
        self.grads: List[Tuple[str, Key, Optional[torch.Tensor], str]] = []
        self.backward = True
        self.no_backward_why: Optional[str] = None
        self.ref_outputs: Optional[List[Optional[torch.Tensor]]] = None
        self.ref_grads: Dict[Key, Optional[torch.Tensor]] = {}
        self.ref_dtypes: Dict[str, int] = {}
        self.ref_error: Optional[str] = None
        self.mutated: List[str] = []
        self.inputs: Dict[str, Any] = {"digest": None, "items": []}
        self._stored_inputs: Optional[Tuple[Any, List[torch.Tensor]]] = None
        self.inputs_not_kept: Optional[str] = None
        self.params: Dict[str, str] = {}
        self.env: Dict[str, Any] = {}
        self.timing: Optional[Dict[str, Any]] = None
        #: per-node values for the divergence search (``None``: recorded with ``values=False``)
        self.values: Optional[SideValues] = None
        self.path: Optional[Path] = None

    # -- what compare reads ---------------------------------------------------------------------------------------
    @property
    def args(self) -> Optional[List[Any]]:
        """The recorded positional inputs (fresh copies), or ``None`` when they were not kept
        (:attr:`inputs_not_kept` says why)."""
        got = self._restored()
        return None if got is None else got[0]

    @property
    def kwargs(self) -> Optional[Dict[str, Any]]:
        """The recorded keyword inputs (fresh copies), or ``None`` when they were not kept."""
        got = self._restored()
        return None if got is None else got[1]

    def _restored(self) -> Optional[Tuple[List[Any], Dict[str, Any]]]:
        if self._stored_inputs is None:
            return None
        skel, tensors = self._stored_inputs
        where = self.path or "the recording"
        args = _unskeleton(skel["args"], tensors, where)
        kwargs = _unskeleton(skel["kwargs"], tensors, where)
        return list(args), dict(kwargs)

    def summary(self) -> str:
        """One line: label, nodes, outputs, gradients, precision, environment."""
        grads = (f"{sum(1 for g in self.grads if g[2] is not None)} gradients" if self.backward
                 else f"no gradients ({self.no_backward_why})")
        ref = "float64 reference" if self.ref_error is None else f"no float64 reference ({self.ref_error})"
        timed = f", timed ({self.timing['rounds']} plain runs)" if self.timing else ""
        e = self.env
        return (f"recording {self.label!r}: {len(self.graph)} nodes, {len(self.outputs)} outputs, {grads}, {ref}"
                f"{timed}; torch {e.get('torch')}, graphwidget {e.get('graphwidget')}, {e.get('device')}, "
                f"Python {e.get('python')}, machine {e.get('machine')}")

    def __repr__(self) -> str:
        return f"<Recording {self.summary()}>"

    # -- saving ---------------------------------------------------------------------------------------------------
    def save(self, path: Any) -> Path:
        """Write the recording to one file (``a.gwrec``; any name: files are recognised by content) in a format
        whose loading runs no code: the safetensors layout (:mod:`graphwidget.model.recfile`). Returns the path."""
        tensors: Dict[str, recfile.Blob] = {}

        def put(name: str, t: Optional[torch.Tensor]) -> Optional[str]:
            if t is None:
                return None
            tensors[name] = _blob(t)
            return name

        outputs = [{"path": where, "tensor": put(f"out/{k}", v)} if isinstance(v, torch.Tensor) else
                   {"path": where, "value": str(v)} for k, (where, v) in enumerate(self.outputs)]
        grads = [{"name": n, "key": list(key), "local": local, "tensor": put(f"grad/{k}", g)}
                 for k, (n, key, g, local) in enumerate(self.grads)]
        ref = None
        if self.ref_outputs is not None:
            ref = {"outputs": [put(f"ref/out/{k}", v) for k, v in enumerate(self.ref_outputs)],
                   "grads": [[list(key), put(f"ref/grad/{k}", g)] for k, (key, g) in enumerate(self.ref_grads.items())],
                   "dtypes": dict(self.ref_dtypes)}
        values = None
        if self.values is not None:
            values = {"notes": list(self.values.notes),
                      "tensors": [put(f"values/{k}", t) for k, t in self.values.to_tensors().items()]}
        stored = None
        if self._stored_inputs is not None:
            skel, ts = self._stored_inputs
            stored = {"skeleton": skel, "tensors": [put(f"input/{k}", t) for k, t in enumerate(ts)]}
        doc = {
            "format": recfile.FORMAT, "version": recfile.VERSION, "label": self.label, "env": self.env,
            "outputs": outputs, "described": self.described, "grads": grads, "backward": self.backward,
            "no_backward_why": self.no_backward_why, "ref": ref, "ref_error": self.ref_error,
            "mutated": list(self.mutated), "inputs": self.inputs, "stored_inputs": stored,
            "inputs_not_kept": self.inputs_not_kept, "params": self.params, "timing": self.timing,
            "values": values,
        }
        blobs: Dict[str, recfile.Blob] = {
            "_record": ("U8", [0], json.dumps(doc, separators=(",", ":"), allow_nan=False).encode()),
            "_graph": ("U8", [0], self.graph.to_json().encode()),
        }
        for name in ("_record", "_graph"):
            dt, _, raw = blobs[name]
            blobs[name] = (dt, [len(raw)], raw)
        blobs.update(tensors)
        return recfile.write(path, blobs, recfile.package_version())


class RecordedSide:
    """A recording as one side of a comparison: what :func:`~.compare._equivalence` reads of a live
    :class:`~.compare.Side` (``side``, ``label``, ``graph``, ``grads``, ``ref``, ``ref_error``, ``mutated``,
    ``backward``, :meth:`outputs`, :meth:`ref_outputs`, :meth:`described`)."""

    def __init__(self, rec: Recording, side: str, label: str) -> None:
        self.rec, self.side, self.label = rec, side, label
        self.graph = rec.graph
        # A tensor key names a tensor of this process only: two recordings never share a tensor, so their
        # parameters pair as two separate copies do in one process (through the matched graph, then by name).
        def own(key: Key) -> Key:
            return ("tensor", (side, key[1])) if key[0] == "tensor" else key

        self.grads = [(n, own(k), g, local) for n, k, g, local in rec.grads]
        self.mutated = rec.mutated
        self.backward, self.no_backward_why = rec.backward, rec.no_backward_why
        self.ref_error = rec.ref_error
        self.ref: Optional[Tuple[Any, Dict[Key, Optional[torch.Tensor]], Dict[str, int]]] = \
            None if rec.ref_outputs is None else (None, {own(k): g for k, g in rec.ref_grads.items()},
                                                  rec.ref_dtypes)
        #: the values the recording kept, where a live side has its collector (:func:`~.compare.attach_divergence`)
        self.collect = _Kept(rec.values) if rec.values is not None else None

    def outputs(self) -> List[Tuple[str, Any]]:
        return list(self.rec.outputs)

    def ref_outputs(self) -> Optional[List[Tuple[str, Any]]]:
        r = self.rec.ref_outputs
        if r is None:
            return None
        return [(p, r[k] if k < len(r) and r[k] is not None else "missing")
                for k, (p, _) in enumerate(self.rec.outputs)]

    def described(self) -> str:
        return self.rec.described


class _Kept:
    """Values collected when the recording was made, read as a finished :class:`~.values.Collector` is."""

    budget: Optional[Budget] = None  # what the budget left out is already in the values' notes

    def __init__(self, values: SideValues) -> None:
        self.values = values

    def finish(self) -> None:
        """Nothing to drop: the runs ended when the recording was made."""


def from_side(s: Side, label: str, args: Sequence[Any], kwargs: Mapping[str, Any], device: torch.device,
              keep_inputs: bool = True) -> Recording:
    """A live side, run, as a :class:`Recording` (tensors detached onto the CPU, tensor keys made portable)."""
    assert s.graph is not None
    rec = Recording(label, s.graph)
    rec.outputs = [(p, _plain(v) if isinstance(v, torch.Tensor) else v) for p, v in s.outputs()]
    rec.described = s.described()
    names = {key[1]: n for n, key, _, _ in s.grads if key[0] == "tensor"}

    def portable(key: Key) -> Optional[Key]:
        if key[0] != "tensor":
            return key
        n = names.get(key[1]) or s.namer.by_id.get(key[1])
        return None if n is None else ("tensor", n)

    rec.grads = []
    for n, key, g, local in s.grads:
        pk = portable(key)
        assert pk is not None
        rec.grads.append((n, pk, None if g is None else _plain(g), local))
    rec.backward, rec.no_backward_why = s.backward, s.no_backward_why
    rec.ref_error = s.ref_error
    if s.ref is not None:
        ref_out = s.ref_outputs() or []
        rec.ref_outputs = [_plain(v) if isinstance(v, torch.Tensor) else None for _, v in ref_out]
        for key, g in s.ref[1].items():
            pk = portable(key)
            if pk is not None:
                rec.ref_grads[pk] = None if g is None else _plain(g)
        rec.ref_dtypes = dict(s.ref[2])
    rec.mutated = list(s.mutated)
    inputs = {id(t) for _, t in s.inputs.names}
    rec.params = {n: _sha(t) for n, t in s.namer.items if id(t) not in inputs and t.layout == torch.strided}
    rec.env = environment(device)
    rec.env["dtype"] = lowest_precision([s.graph]) if len(s.graph) else None
    if keep_inputs:
        tensors: List[torch.Tensor] = []
        try:
            skel = {"args": _skeleton(tuple(args), tensors), "kwargs": _skeleton(dict(kwargs), tensors)}
        except TypeError as exc:
            rec.inputs_not_kept = f"the inputs hold {exc}, which a recording cannot keep"
        else:
            size = sum(t.numel() * t.element_size() for t in tensors)
            if size > INPUT_BUDGET:
                rec.inputs_not_kept = f"the inputs take {size} bytes, more than the {INPUT_BUDGET} a recording keeps"
            else:
                rec._stored_inputs = (skel, [_plain(t) for t in tensors])
    else:
        rec.inputs_not_kept = "not asked to keep them"
    return rec


# -- record --------------------------------------------------------------------------------------------------------
@refuse_shadowed_options("graphwidget.record", "fn")
def record(fn: Callable[..., Any], *args: Any, label: Optional[str] = None, backward: bool = True,
           profile: bool = False, budget: float = 3.0, threads: Optional[int] = None, keep_inputs: bool = True,
           values: Any = True, **kwargs: Any) -> Recording:
    """Run ``fn(*args, **kwargs)`` once, forward and backward, as :func:`graphwidget.compare` runs one side, and keep
    what a later comparison needs (:class:`Recording`; module docstring): ``rec.save("a.gwrec")``, then in another
    process, commit or environment ``gw.compare("a.gwrec", "b.gwrec")``.

    ``backward=False`` (or a forward with no tensor that requires grad) records the outputs only: a comparison
    then judges the outputs and says so. ``profile=True`` adds plain timings of the step (``budget`` seconds;
    ``threads`` as for compare), for a speed verdict against a recording timed on the same machine.
    ``values``: keep the per-node values for the divergence search (``True``: up to :data:`VALUES_BUDGET` bytes of
    exact values, digests beyond; a number: that budget in bytes; ``False``: none, the comparison then has no
    divergence). ``keep_inputs=False`` keeps only the inputs' digest (else plain tensor inputs up to
    :data:`INPUT_BUDGET` bytes are kept, so ``gw.compare(rec, fn_b)`` can run ``fn_b`` on them). The caller's
    tensors, ``.grad``, parameters, RNG state, grad mode and default dtype are left as they were.

    >>> rec = gw.record(model, x)                       # doctest: +SKIP
    >>> rec.save("main.gwrec")                          # doctest: +SKIP
    """
    from ..attribution.memory import device_of
    from .compare import check_options
    if not callable(fn):
        raise TypeError(f"graphwidget.record: fn must be callable (a function or an nn.Module); got "
                        f"{type(fn).__name__}. Call it as gw.record(fn, *inputs).")
    if not isinstance(backward, bool):
        raise TypeError(f"graphwidget.record: backward must be True or False; got {backward!r}.")
    check_options(profile, 1, BAND, budget, threads)
    if not (isinstance(values, bool) or (isinstance(values, int) and values > 0)):
        raise ValueError(f"graphwidget.record: values must be True, False or a budget of bytes > 0; got {values!r}.")
    lab = label if label is not None else (getattr(fn, "__name__", None) or type(fn).__name__)
    if not isinstance(lab, str) or not lab:
        raise ValueError(f"graphwidget.record: label must be a non-empty string; got {label!r}.")
    device = device_of(fn, args, kwargs)
    digest_before = input_digest(args, kwargs)  # of the caller's values, before anything runs
    sides, state, saved_grads = prepare([(fn, "A", lab)], args, kwargs)
    s = sides[0]
    shared = None
    if values is not False:
        shared = Budget(VALUES_BUDGET if values is True else int(values))
        s.collect = Collector(shared)
    timing = None
    try:
        try:
            state.reset()
            versions = {id(t): t._version for _, t in s.inputs.names}
            s.run(backward=backward, outputs_only_ok=True)
            s.mutated = mutations(state, s.namer.by_id, s.inputs.names, versions)
            state.reset()
            s.reference(args, kwargs, [x.tensor for x in state.saved])
            if profile and s.backward:
                timing = _time_one(s, state, budget, threads, device)
            state.reset()
            rec = from_side(s, lab, args, kwargs, device, keep_inputs)
            if s.collect is not None:
                kept = s.collect.values
                s.collect.finish()
                words = budget_note(shared) if shared is not None else None
                if words:
                    kept.notes.append(words.replace("pass divergence=<bytes> to gw.compare",
                                                    "pass values=<bytes> to gw.record"))
                rec.values = _cpu_values(kept)
                s.collect = None
        finally:
            _restore(state, saved_grads)
    finally:
        _restore(state, saved_grads)
    rec.inputs = digest_before
    rec.timing = timing
    return rec


def _cpu_values(v: SideValues) -> SideValues:
    """The values on the CPU, detached (what a file holds, and what a comparison of recordings reads)."""
    return SideValues.from_tensors({k: _plain(t) for k, t in v.to_tensors().items()}, v.notes)


def _time_one(s: Side, state: Any, budget: float, threads: Optional[int], device: torch.device) -> Dict[str, Any]:
    """Plain runs of one side (:mod:`.speed`'s measurement, no hooks), each round's fastest forward, backward and
    step by both clocks, for :func:`cross_timing`."""
    from . import speed
    from .interleave import GradGuard
    guard = GradGuard()
    try:
        plain = speed.Side(s.call, s.inputs.args, s.inputs.kwargs, state.reset, s.leaves, guard, device)
        cuda = device.type == "cuda"
        sampled, n, why = speed.with_threads(
            threads, cuda, lambda: speed.sample([plain], lambda r, k: [0], lambda: False, budget, speed.MIN_ROUNDS,
                                                speed.MAX_ROUNDS))
    finally:
        guard.restore()
    return {**sampled, "samples": [list(x) for x in plain.samples], "threads": n, "threads_why": why,
            "device": str(device), "clock": "cuda events" if cuda else "wall and cpu", "budget_s": budget,
            "machine": environment(device)["machine"]}


# -- reading -------------------------------------------------------------------------------------------------------
def _need(cond: bool, path: Any, what: str) -> None:
    if not cond:
        raise recfile._fail(path, f"the recording's {what} is malformed (the file was edited or written by a broken "
                                  f"release).")


def _key(k: Any, path: Any) -> Key:
    _need(isinstance(k, list) and len(k) == 2 and k[0] in ("input", "tensor") and isinstance(k[1], str), path,
          "gradient key")
    return (k[0], k[1])


def load_recording(path: Any) -> Recording:
    """Read a file :meth:`Recording.save` wrote. Nothing in it is run: the bytes are checked (length, header,
    digest: :func:`graphwidget.model.recfile.read`), the documents parsed as JSON and validated (the graph as any
    graph file), the tensors built from raw bytes. A truncated, edited or foreign file raises ``ValueError`` naming
    what is wrong. A recording made with another torch or graphwidget version loads; comparisons say so."""
    c = recfile.read(path)
    doc = c.document("_record", path)
    _need(isinstance(doc, dict) and doc.get("format") == recfile.FORMAT, path, "record")
    try:
        graph = io.from_dict(c.document("_graph", path), who=f"graphwidget.load: {path}: its graph")
    except ValueError as exc:
        raise recfile._fail(path, str(exc)) from None
    label = doc.get("label")
    _need(isinstance(label, str) and bool(label), path, "label")
    rec = Recording(label, graph)
    rec.path = Path(path)
    env = doc.get("env")
    _need(isinstance(env, dict), path, "environment")
    rec.env = env
    outs = doc.get("outputs")
    _need(isinstance(outs, list), path, "outputs")
    for o in outs:
        _need(isinstance(o, dict) and isinstance(o.get("path"), str), path, "outputs")
        if o.get("tensor") is not None:
            rec.outputs.append((o["path"], _tensor(c, str(o["tensor"]), path)))
        else:
            rec.outputs.append((o["path"], str(o.get("value"))))
    rec.described = str(doc.get("described") or "")
    grads = doc.get("grads")
    _need(isinstance(grads, list), path, "gradients")
    for g in grads:
        _need(isinstance(g, dict) and isinstance(g.get("name"), str) and isinstance(g.get("local"), str), path,
              "gradients")
        t = None if g.get("tensor") is None else _tensor(c, str(g["tensor"]), path)
        rec.grads.append((g["name"], _key(g.get("key"), path), t, g["local"]))
    rec.backward = bool(doc.get("backward", True))
    rec.no_backward_why = doc.get("no_backward_why") if isinstance(doc.get("no_backward_why"), str) else None
    ref = doc.get("ref")
    if ref is not None:
        _need(isinstance(ref, dict) and isinstance(ref.get("outputs"), list) and isinstance(ref.get("grads"), list)
              and isinstance(ref.get("dtypes"), dict), path, "float64 reference")
        rec.ref_outputs = [None if n is None else _tensor(c, str(n), path) for n in ref["outputs"]]
        for item in ref["grads"]:
            _need(isinstance(item, list) and len(item) == 2, path, "float64 reference")
            rec.ref_grads[_key(item[0], path)] = None if item[1] is None else _tensor(c, str(item[1]), path)
        _need(all(isinstance(k, str) and isinstance(v, int) for k, v in ref["dtypes"].items()), path,
              "float64 reference")
        rec.ref_dtypes = dict(ref["dtypes"])
    rec.ref_error = doc.get("ref_error") if isinstance(doc.get("ref_error"), str) else None
    if ref is None and rec.ref_error is None:
        rec.ref_error = "the recording holds no float64 reference"
    mutated = doc.get("mutated") or []
    _need(isinstance(mutated, list), path, "mutations")
    rec.mutated = [str(m) for m in mutated]
    inputs = doc.get("inputs")
    _need(isinstance(inputs, dict) and isinstance(inputs.get("digest"), str) and isinstance(inputs.get("items"), list),
          path, "input digest")
    rec.inputs = inputs
    stored = doc.get("stored_inputs")
    if stored is not None:
        _need(isinstance(stored, dict) and isinstance(stored.get("skeleton"), dict)
              and isinstance(stored.get("tensors"), list), path, "recorded inputs")
        rec._stored_inputs = (stored["skeleton"], [_tensor(c, str(n), path) for n in stored["tensors"]])
    rec.inputs_not_kept = doc.get("inputs_not_kept") if isinstance(doc.get("inputs_not_kept"), str) else None
    params = doc.get("params") or {}
    _need(isinstance(params, dict), path, "parameter digests")
    rec.params = {str(k): str(v) for k, v in params.items()}
    timing = doc.get("timing")
    _need(timing is None or (isinstance(timing, dict) and isinstance(timing.get("samples"), list)), path, "timing")
    rec.timing = timing
    vals = doc.get("values")
    if vals is not None:
        _need(isinstance(vals, dict) and isinstance(vals.get("tensors"), list)
              and isinstance(vals.get("notes"), list), path, "per-node values")
        got = {}
        for n in vals["tensors"]:
            _need(isinstance(n, str) and n.startswith("values/"), path, "per-node values")
            got[n[len("values/"):]] = _tensor(c, n, path)
        try:
            rec.values = SideValues.from_tensors(got, [str(x) for x in vals["notes"]])
        except ValueError as exc:
            raise recfile._fail(path, str(exc)) from None
    return rec


# -- comparing -----------------------------------------------------------------------------------------------------
def is_recorded(obj: Any) -> bool:
    """A :class:`Recording`, or the path of a file that holds one (``str`` or ``os.PathLike``)."""
    if isinstance(obj, Recording):
        return True
    if isinstance(obj, (str, os.PathLike)):
        return recfile.is_recording(obj)
    return False


def _as_recording(obj: Any, which: str) -> Recording:
    if isinstance(obj, Recording):
        return obj
    return load_recording(obj)


def _input_problem(a: Recording, b_digest: Dict[str, Any], la: str, lb: str, hint: str) -> Optional[str]:
    if a.inputs.get("digest") == b_digest.get("digest"):
        return None
    ia = {x.get("path"): x for x in a.inputs.get("items") or [] if isinstance(x, dict)}
    ib = {x.get("path"): x for x in b_digest.get("items") or [] if isinstance(x, dict)}
    diffs = []
    for p in list(ia) + [p for p in ib if p not in ia]:
        x, y = ia.get(p), ib.get(p)
        if x == y:
            continue
        if x is None or y is None:
            diffs.append(f"{p} only in {la if y is None else lb}")
        elif x.get("kind") == y.get("kind") == "tensor":
            what = [k for k in ("dtype", "shape", "requires_grad") if x.get(k) != y.get(k)]
            diffs.append(f"{p}: " + (", ".join(f"{k} {x.get(k)} vs {y.get(k)}" for k in what) if what else
                                     f"values differ (sha256 {str(x.get('sha256'))[:12]}… vs "
                                     f"{str(y.get('sha256'))[:12]}…)"))
        else:
            diffs.append(f"{p}: {x.get('value', x.get('type'))!r} vs {y.get('value', y.get('type'))!r}")
    more = f" (+{len(diffs) - 4} more)" if len(diffs) > 4 else ""
    return (f"graphwidget.compare: the inputs differ between {la} and {lb} (digest {str(a.inputs.get('digest'))[:12]}… "
            f"vs {str(b_digest.get('digest'))[:12]}…: {'; '.join(diffs[:4])}{more}), so their outputs and gradients "
            f"cannot be compared. {hint}")


def _notes(a: Recording, b: Recording, la: str, lb: str) -> List[str]:
    """What a reader must know about where the two recordings come from."""
    notes = []
    for key, what in (("torch", "torch"), ("graphwidget", "graphwidget"), ("python", "Python"),
                      ("device", "device")):
        x, y = a.env.get(key), b.env.get(key)
        if x != y:
            notes.append(f"{la} was recorded with {what} {x}, {lb} with {what} {y}")
    for r, lab in ((a, la), (b, lb)):
        wrote = r.env.get("graphwidget")
        if r.path is not None and wrote != recfile.package_version():
            notes.append(f"{lab} ({r.path.name}) was written by graphwidget {wrote}; this is "
                         f"{recfile.package_version()}")
    if a.env.get("machine") != b.env.get("machine"):
        notes.append(f"recorded on different machines ({a.env.get('machine')} vs {b.env.get('machine')})")
    common = set(a.params) & set(b.params)
    differ = sorted(n for n in common if a.params[n] != b.params[n])
    if differ:
        notes.append(f"{len(differ)} of the {len(common)} parameters and buffers named alike hold different values "
                     f"({', '.join(differ[:3])}{', ...' if len(differ) > 3 else ''}): seed or load the weights alike "
                     f"on both sides")
    return notes


def _provenance(r: Recording) -> Dict[str, Any]:
    keys = ("torch", "graphwidget", "python", "device", "device_name", "dtype", "machine", "created", "cuda")
    out = {k: r.env.get(k) for k in keys}
    out["file"] = None if r.path is None else str(r.path)
    out["inputs"] = r.inputs.get("digest")
    return out


def cross_timing(a: Recording, b: Recording, labels: Sequence[str], band: float = BAND
                 ) -> Tuple[Optional[Dict[str, Any]], Optional[str]]:
    """The speed verdict of two recordings' own plain runs (module docstring), or ``(None, why not)``."""
    from .speed import LEVEL, median_interval
    ta, tb = a.timing, b.timing
    label_b = labels[1]
    if not ta or not tb:
        return None, ("speed not compared: " + ("neither recording was timed" if not ta and not tb else
                                                f"only {labels[1] if not ta else labels[0]} was timed") +
                      " (gw.record(..., profile=True))")
    if ta.get("machine") != tb.get("machine") or ta.get("device") != tb.get("device"):
        return None, (f"speed not compared: the recordings were timed on different machines or devices "
                      f"({ta.get('machine')} {ta.get('device')} vs {tb.get('machine')} {tb.get('device')}); time "
                      f"both on one machine")
    sa, sb = ta.get("samples") or [], tb.get("samples") or []
    ok = all(isinstance(x, list) and len(x) == 6 and all(isinstance(v, (int, float)) for v in x) for x in sa + sb)
    if not ok or len(sa) < 2 or len(sb) < 2:
        return None, "speed not compared: a recording holds too few or malformed timings"
    cuda = str(ta.get("device", "")).startswith("cuda")
    level = math.sqrt(LEVEL)  # each side's median interval at this level: both hold together at LEVEL or more

    def judge(phase: str, cpu: bool) -> Dict[str, Any]:
        k = ("forward", "backward", "step").index(phase) + (3 if cpu else 0)
        xa, xb = [s[k] for s in sa], [s[k] for s in sb]
        ma, mb = _median(xa), _median(xb)
        la_, ha = _spread(xa, level, median_interval)
        lb_, hb = _spread(xb, level, median_interval)
        ratio = mb / ma if ma > 0 else 0.0
        low = lb_ / ha if ha > 0 else 0.0
        high = hb / la_ if la_ > 0 else math.inf
        return {"ratio": ratio, "low": low, "high": high, "verdict": speed_verdict(ratio, low, high, band),
                "ms": [ma, mb]}

    def width(t: Dict[str, Any]) -> float:
        return math.log(t["high"] / t["low"]) if t["low"] > 0 and math.isfinite(t["high"]) else math.inf

    use_cpu = False
    if not cuda:
        use_cpu = width(judge("step", True)) < width(judge("step", False))
    out: Dict[str, Any] = {
        "clock": "cuda events" if cuda else ("cpu" if use_cpu else "wall"),
        "clock_why": ("CUDA events around the forward and the backward" if cuda else
                      ("process CPU time" if use_cpu else "wall clock") + ": its interval was the narrower"),
        "band": band, "level": LEVEL, "rounds": min(len(sa), len(sb)), "rounds_ab": [len(sa), len(sb)],
        "order": NOT_INTERLEAVED, "instrumented": False, "stopped": "recorded",
        "threads": ta.get("threads"), "threads_why": str(ta.get("threads_why")),
    }
    if ta.get("threads") != tb.get("threads"):
        out["threads_why"] = (f"{labels[0]} timed with {ta.get('threads')} threads, {labels[1]} with "
                              f"{tb.get('threads')}")
    for phase in ("step", "forward", "backward"):
        out[phase] = judge(phase, use_cpu)
    step = out["step"]
    out.update(ratio=step["ratio"], low=step["low"], high=step["high"],
               verdict=labelled(step["verdict"], label_b, band))
    if not math.isfinite(out["high"]):
        return None, "speed not compared: a recording's timings are zero"
    return out, None


def _spread(xs: Sequence[float], level: float, median_interval: Callable[..., Tuple[float, float]]
            ) -> Tuple[float, float]:
    """One recording's range for its median: its median interval, widened to the middle half of its runs. Runs
    recorded at other times are not paired, so the drift of the machine's load between the two recordings is in
    neither interval; the spread of one recording's runs is the least of what that drift may be."""
    lo, hi = median_interval(xs, level)
    v = sorted(xs)
    q1, q3 = v[(len(v) - 1) // 4], v[-1 - (len(v) - 1) // 4]
    return min(lo, q1), max(hi, q3)


def _median(xs: Sequence[float]) -> float:
    v = sorted(xs)
    n = len(v)
    return v[n // 2] if n % 2 else (v[n // 2 - 1] + v[n // 2]) / 2


def compare_recorded(a: Any, b: Any, *args: Any, labels: Optional[Sequence[str]] = None, profile: bool = False,
                     band: float = BAND, budget: float = 3.0, threads: Optional[int] = None, advise: bool = True,
                     repeat: int = 5, memory: bool = False, **kwargs: Any) -> Diff:
    """``gw.compare`` where a side is a recording (a :class:`Recording` or its file): both recorded
    (``compare(rec_a, rec_b)``, ``compare("a.gwrec", "b.gwrec")``), or one recorded and one function
    (``compare(rec_a, fn_b, *inputs)``: ``fn_b`` runs here, on ``inputs`` — whose digest must be the recording's —
    or, with no inputs given, on the inputs the recording kept). Same verdict and matching as one process would give
    (module docstring). Inputs that differ between the sides raise ``ValueError`` naming them."""
    from .compare import check_options
    check_options(profile, repeat, band, budget, threads)
    if memory:
        raise ValueError("graphwidget.compare: memory=True measures a step of each side, and a recording's step "
                         "cannot be run again; compare the two functions in one process for the memory verdict.")
    ra = _as_recording(a, "A") if is_recorded(a) or isinstance(a, Recording) else None
    rb = _as_recording(b, "B") if is_recorded(b) or isinstance(b, Recording) else None
    for obj, r, which in ((a, ra, "A"), (b, rb, "B")):
        if r is None and not callable(obj):
            if isinstance(obj, (str, os.PathLike)):
                raise ValueError(f"graphwidget.compare: side {which} {str(obj)!r} is neither a recording file nor a "
                                 f"function" + ("" if Path(obj).exists() else " (no such file)") + ".")
            raise TypeError(f"graphwidget.compare: side {which} must be a function, a recording or a recording's "
                            f"file; got {type(obj).__name__}.")
    if ra is None and rb is None:
        raise TypeError("graphwidget.compare: compare_recorded needs at least one recording.")
    if ra is not None and rb is not None:
        if args or kwargs:
            raise TypeError("graphwidget.compare: two recordings hold their own inputs; pass no inputs (got "
                            f"{len(args)} positional, {len(kwargs)} keyword).")
    else:
        known = ra if ra is not None else rb
        assert known is not None
        fn = b if ra is not None else a
        if not args and not kwargs:
            got = known._restored()
            if got is None:
                raise ValueError(f"graphwidget.compare: the recording {known.label!r} did not keep its inputs "
                                 f"({known.inputs_not_kept}); pass them: gw.compare(rec, fn, *inputs).")
            args, kwargs = tuple(got[0]), got[1]
        else:
            problem = _input_problem(known, input_digest(args, kwargs), "the recording", "the inputs given",
                                     "Pass the recorded inputs on (gw.compare(rec, fn, *rec.args, **rec.kwargs)), "
                                     "or none at all to run on them.")
            if problem:
                raise ValueError(problem)
        live = record(fn, *args, label=getattr(fn, "__name__", None) or type(fn).__name__,
                      backward=known.backward, profile=profile and known.timing is not None, budget=budget,
                      threads=threads, keep_inputs=False, values=known.values is not None, **kwargs)
        ra, rb = (ra, live) if ra is not None else (live, rb)
    assert ra is not None and rb is not None
    if labels is None:
        labels = (ra.label, rb.label) if ra.label != rb.label else ("A", "B")
    la, lb = check_labels(labels, "graphwidget.compare")
    problem = _input_problem(ra, rb.inputs, la, lb, "Record both sides on the same inputs (the same make_inputs and "
                                                    "seed).")
    if problem:
        raise ValueError(problem)
    sa, sb = RecordedSide(ra, "A", la), RecordedSide(rb, "B", lb)
    _same_structure(sa, sb)  # type: ignore[arg-type]  # a StructureMismatch, as between two live sides
    d = build(ra.graph, rb.graph, (la, lb))
    equivalence = _equivalence(sa, sb, leaf_pairs(d))  # type: ignore[arg-type]
    d.equivalence = equivalence
    attach_divergence(d, sa, sb)  # type: ignore[arg-type]  # nothing when a side kept no values
    notes = _notes(ra, rb, la, lb)
    timing = None
    if profile or ra.timing or rb.timing:
        timing, why = cross_timing(ra, rb, (la, lb), band)
        if why:
            notes.append(why)
    if (ra.values is None) != (rb.values is None):
        notes.append(f"no divergence search: {la if ra.values is None else lb} was recorded without its per-node "
                     f"values (gw.record(..., values=False))")
    equivalence["recordings"] = {"A": _provenance(ra), "B": _provenance(rb), "notes": notes}
    d.timing = timing
    if advise:
        advise_graphs([d.a, d.b])
    return d


"""The one definition of graphwidget's JSON forms: keys, versions and :func:`validate`.

Everything that writes or reads a graph goes through these names: :mod:`graphwidget.model` (networkx <-> JSON), the
capture (its record templates), the compiled core (``capturing/native/cpp/common.h``, checked by a test), the front end
(``js/src/schema/types.ts``, checked by a test) and ``docs/schema.md``.

Two documents share the module:

* ``"format": "graphwidget"`` — one autograd graph (version :data:`VERSION`). Optional and backward
  compatible within version 1: a top-level ``"findings"`` list written by the advisor (:data:`FINDING_KEYS`).
* ``"format": "graphwidget-diff"`` — two graphs and how they match (version :data:`DIFF_VERSION`), written by
  :mod:`graphwidget.analysis.diff`; see ``docs/diff.md``.
* ``"format": "graphwidget-nway"`` — N graphs, each matched to the first (version :data:`NWAY_VERSION`), written by
  :mod:`graphwidget.analysis.diff.multi` and :mod:`graphwidget.analysis.ranks`; see ``docs/nway.md``.

The checks of the graph document live here; those of the diff and N-way documents, which embed graphs and add the
matching, the verdicts and the ranks, in :mod:`graphwidget.model.compare_schema`.

This module is torch-free: saved graphs load, diff and advise without torch.
"""
from __future__ import annotations

import math
import reprlib
import sys
from typing import Any, Callable, Dict, Iterable, List, Optional, Sequence, Tuple

FORMAT = "graphwidget"
#: The version :meth:`GradGraph.to_json` writes: nodes and edges as columns (:mod:`.columns`, docs/schema.md), with
#: columns of lists and records split into columns of their parts where that is smaller.
VERSION = 3
#: The versions this release reads: 1 (one record per node and per edge), 2 (columns: the four flat forms) and 3.
READ_VERSIONS = (1, 2, 3)
DIFF_FORMAT = "graphwidget-diff"
DIFF_VERSION = 1
NWAY_FORMAT = "graphwidget-nway"
NWAY_VERSION = 1
#: What an N-way document compares: implementations (``gw.compare`` with N sides) or the ranks of one job.
NWAY_KINDS = ("sides", "ranks")

#: Node record keys, in the order they are written to JSON.
NODE_KEYS: Tuple[str, ...] = (
    "op", "kind", "outputs", "saved", "attrs", "saved_bytes", "tensor", "source", "code", "module",
    "out_stride", "out_contiguous", "seq", "fwd_ms", "bwd_ms", "grad_bytes", "lib_source",
)
#: Optional node keys, written after :data:`NODE_KEYS` only by graphs that have them: ``peak_bytes`` by a
#: memory-profiled graph (``gw.profile(..., memory=True)``, docs/memory.md), ``rank_spread_ms`` by a rank's graph
#: (``meta.rank``: the node's time spread over the ranks, docs/nway.md). Not in the capture's records nor in the
#: front end's ``NODE_KEYS``: readers that do not know them ignore them.
OPTIONAL_NODE_KEYS: Tuple[str, ...] = ("peak_bytes", "rank_spread_ms")


def node_keys(meta: Optional[Dict[str, Any]]) -> Tuple[str, ...]:
    """The node keys a graph with this ``meta`` writes: :data:`NODE_KEYS`, plus ``peak_bytes`` when it carries a
    memory record and ``rank_spread_ms`` when it is a rank's graph."""
    if meta is None:
        return NODE_KEYS
    extra = (("peak_bytes",) if isinstance(meta.get("memory"), dict) else ()) + \
        (("rank_spread_ms",) if isinstance(meta.get("rank"), dict) else ())
    return NODE_KEYS + extra


#: Edge record keys, in the order they are written to JSON (after ``source`` and ``target``).
EDGE_KEYS: Tuple[str, ...] = ("output", "slot", "shape", "dtype", "also")
#: Keys of a saved-tensor record (``node["saved"][i]``), in the order the capture writes them.
SAVED_KEYS: Tuple[str, ...] = (
    "shape", "stride", "dtype", "device", "contiguous", "memory_format", "bytes", "storage_bytes", "storage",
    "freed", "name", "packed", "stale",
)
#: Values of a saved tensor's ``packed``: behind torch.utils.checkpoint's hooks, or other saved-tensor hooks.
PACKED_KINDS = ("checkpoint", "hooks")
#: Keys of a leaf's ``tensor`` record.
LEAF_KEYS: Tuple[str, ...] = (
    "shape", "stride", "dtype", "device", "contiguous", "memory_format", "bytes", "storage_bytes", "requires_grad",
    "name", "storage",
)
KINDS = ("backward", "custom", "leaf")
#: Keys of one advisor finding (the top-level ``"findings"`` list), in the order they are written
#: (:class:`graphwidget.analysis.advisor.Finding`; docs/schema.md, "Findings").
FINDING_KEYS: Tuple[str, ...] = (
    "rule", "severity", "nodes", "source", "code", "module", "message", "suggestion", "evidence",
)
FINDING_SEVERITIES = ("warning", "info")

#: How deep nested values (attrs, timing) may go before a file is refused: deeper means hostile or broken, and
#: Python's own JSON reader would otherwise fail with a bare RecursionError.
MAX_DEPTH = 64


class SchemaError(ValueError):
    """A graph document that does not follow the schema; the message names the node and the field."""


# -- the checks -------------------------------------------------------------------------------------------------------
# Validation runs on every load (100k-node graphs included), so the checks below build no string while nothing is
# wrong: each field has a predicate (a fast bool), and only a field found wrong is looked at again to say where and
# what to write instead.

#: The largest integer the viewer (JavaScript) holds exactly (Number.MAX_SAFE_INTEGER): ids, sizes and counts above
#: it would be rounded there (two ids could become one).
MAX_SAFE_INT = 2**53 - 1
_MAX_FLOAT = sys.float_info.max

_JSON_TYPE = {str: "string", int: "number", float: "number", bool: "boolean", list: "list", tuple: "list",
              dict: "object", type(None): "null"}


def _show(v: Any) -> str:
    """A short, safe description of a wrong value for a message: its JSON type and the start of its text (never
    the whole of a big value; an integer too long to print is described by its length)."""
    kind = _JSON_TYPE.get(type(v), type(v).__name__)
    if isinstance(v, int) and not isinstance(v, bool) and v.bit_length() > 64:
        return f"{kind} of about {int(v.bit_length() * 0.30103) + 1} digits"
    if isinstance(v, str):
        return f"{kind} {v[:60]!r}" + ("..." if len(v) > 60 else "")
    r = reprlib.Repr()
    r.maxlevel, r.maxstring, r.maxother, r.maxlist, r.maxdict = 2, 40, 40, 6, 4
    try:
        text = r.repr(v)
    except (ValueError, RecursionError):  # an int past Python's printing limit somewhere inside
        text = "..."
    return f"{kind} {text[:80]}"


def _where(i: Optional[int], node_id: Any) -> str:
    return f"node {node_id!r} (nodes[{i}])" if i is not None else "the document"


def _is_int(v: Any) -> bool:
    return type(v) is int and -MAX_SAFE_INT <= v <= MAX_SAFE_INT


def _nonneg_int(v: Any) -> bool:
    return type(v) is int and 0 <= v <= MAX_SAFE_INT


def _id_list(v: Any) -> bool:
    """A list of node ids (non-negative integers), checked in bulk: a graph may have 100k's of roots."""
    return isinstance(v, list) and set(map(type, v)) <= {int} and (not v or (min(v) >= 0 and max(v) <= MAX_SAFE_INT))


def _is_num(v: Any) -> bool:
    """A number JSON (and the viewer) holds as a finite double: no NaN or infinity, no integer past ~1.8e308."""
    if isinstance(v, float):
        return math.isfinite(v)
    return type(v) is int and -_MAX_FLOAT <= v <= _MAX_FLOAT


def _nonneg_num(v: Any) -> bool:
    return _is_num(v) and v >= 0


def _is_str(v: Any) -> bool:
    return isinstance(v, str)


def _is_bool(v: Any) -> bool:
    return v is True or v is False


def _dims(v: Any) -> bool:
    """A shape or a stride: a list of non-negative integers."""
    if not isinstance(v, list):
        return False
    for s in v:
        if type(s) is not int or s < 0 or s > MAX_SAFE_INT:
            return False
    return True


def _bad_scalar(v: Any) -> bool:
    """Not a JSON scalar the viewer reads as written: NaN or infinity, an integer past a double's range (~1.8e308,
    Infinity there), or no JSON value at all (bytes, a set, an object of some class)."""
    if isinstance(v, float):
        return not math.isfinite(v)
    if isinstance(v, int):
        return not isinstance(v, bool) and not -_MAX_FLOAT <= v <= _MAX_FLOAT
    return not (v is None or isinstance(v, str))


def _plain(v: Any, depth: int) -> bool:
    """Free-form JSON (attrs, evidence, unknown keys) with finite numbers, nested at most :data:`MAX_DEPTH` levels
    (``depth``: the level ``v`` sits at)."""
    if type(v) is str or v is None or v is True or v is False:
        return True
    if not isinstance(v, (dict, list, tuple)):
        return not _bad_scalar(v)
    stack: List[Tuple[Any, int]] = [(v, depth)]
    while stack:
        x, d = stack.pop()
        if d > MAX_DEPTH:
            return False
        for y in (x.values() if isinstance(x, dict) else x):
            if isinstance(y, (dict, list, tuple)):
                stack.append((y, d + 1))
            elif _bad_scalar(y):
                return False
    return True


def _plain_text(v: Any, path: str, depth: int) -> str:
    """What :func:`_plain` found wrong in ``v`` (at ``path``), and where."""
    stack: List[Tuple[Any, str, int]] = [(v, path, depth)]
    while stack:
        x, p, d = stack.pop()
        if isinstance(x, (dict, list, tuple)):
            if d > MAX_DEPTH:
                where = p if len(p) <= 120 else p[:100] + "..."  # the place, not 64 levels of "[0]"
                return f"{where}: nested more than {MAX_DEPTH} levels deep; this is not a graphwidget file."
            items = x.items() if isinstance(x, dict) else enumerate(x)
            stack.extend((y, f"{p}.{k}" if isinstance(x, dict) else f"{p}[{k}]", d + 1)
                         for k, y in reversed(list(items)))
        elif isinstance(x, float) and not math.isfinite(x):
            return f"{p} is {x}, which JSON cannot hold; write null for an unknown number."
        elif isinstance(x, int) and _bad_scalar(x):
            return (f"{p} is a {_show(x)}, past what a JSON number holds (the viewer would read Infinity); "
                    f"write null for an unknown number.")
        elif _bad_scalar(x):
            return (f"{p} is a {type(x).__name__}, which is not JSON; write a string, a number, true/false, null, "
                    f"a list or an object.")
    return f"{path} is not plain JSON."


# Per record type: key -> (predicate, what to write). null (or an absent key) is always allowed; keys not listed are
# free-form JSON (_plain).
_Spec = Dict[str, Tuple[Callable[[Any], bool], str]]

_STR = (_is_str, "a string")
_DIMS = (_dims, "a list of non-negative integers such as [8, 3]")
_BYTES = (_nonneg_int, "a non-negative integer (bytes)")
_BOOL = (_is_bool, "true or false")
_DTYPE = (_is_str, "a string such as \"float32\"")
_DEVICE = (_is_str, "a string such as \"cpu\"")

_OUTPUT: _Spec = {"shape": _DIMS, "dtype": _DTYPE, "device": _DEVICE}
_SAVED: _Spec = {
    "shape": _DIMS, "stride": _DIMS, "dtype": _DTYPE, "device": _DEVICE, "contiguous": _BOOL,
    "memory_format": (_is_str, "a string such as \"contiguous\""), "bytes": _BYTES, "storage_bytes": _BYTES,
    "storage": (_is_int, "an integer (the graph-local storage id)"), "freed": _BOOL,
    "name": (_is_str, "a string (the saved tensor's name, e.g. \"self\")"),
    "packed": (lambda v: v in PACKED_KINDS, " or ".join(f'"{k}"' for k in PACKED_KINDS)), "stale": _BOOL,
}
_LEAF: _Spec = {
    "shape": _DIMS, "stride": _DIMS, "dtype": _DTYPE, "device": _DEVICE, "contiguous": _BOOL,
    "memory_format": (_is_str, "a string such as \"contiguous\""), "bytes": _BYTES, "storage_bytes": _BYTES,
    "requires_grad": _BOOL, "name": (_is_str, "a string (the parameter's name, e.g. \"fc1.weight\")"),
    "storage": (_is_int, "an integer (the graph-local storage id)"),
}
_CONNECTION: _Spec = {"output": (_nonneg_int, "a non-negative integer (which forward output flows)"),
                      "slot": (_nonneg_int, "a non-negative integer (the position in next_functions)"),
                      "shape": _DIMS, "dtype": _DTYPE}


def _fault(rec: Dict[str, Any], spec: _Spec, depth: int) -> Any:
    """The first key of ``rec`` whose value breaks ``spec`` (a key ``spec`` does not list: not plain JSON), or
    ``None``. Builds no string."""
    for key, v in rec.items():
        if v is None:
            continue
        s = spec.get(key)
        if s is None:
            if not _plain(v, depth + 1):
                return key
        elif not s[0](v):
            return key
    if "stride" in spec and not _strides_match(rec):
        return "stride"
    return None


def _strides_match(rec: Dict[str, Any]) -> bool:
    """A record's ``stride`` has one entry per dimension of its ``shape`` (either may be null)."""
    shape, stride = rec.get("shape"), rec.get("stride")
    return not (isinstance(shape, list) and isinstance(stride, list)) or len(shape) == len(stride)


def _fault_text(rec: Dict[str, Any], spec: _Spec, key: Any, path: str, depth: int) -> str:
    """The message for ``rec[key]`` (``path``: where ``rec`` is), which :func:`_fault` found wrong."""
    s = spec.get(key)
    if s is None:
        return _plain_text(rec[key], f"{path}.{key}", depth + 1)
    if key == "stride" and s[0](rec[key]):
        return (f"{path}.stride must have one entry per dimension of {path}.shape ({len(rec['shape'])}); got "
                f"{_show(rec[key])} for shape {_show(rec['shape'])}.")
    return f"{path}.{key} must be {s[1]} or null; got {_show(rec[key])}."


def _records_ok(v: Any, spec: _Spec, nullable: bool) -> bool:
    """A list of records (objects) following ``spec`` (``nullable``: entries may be null)."""
    if not isinstance(v, list):
        return False
    for r in v:
        if isinstance(r, dict):
            if _fault(r, spec, 2) is not None:
                return False
        elif r is not None or not nullable:
            return False
    return True


def _records_text(v: Any, spec: _Spec, nullable: bool, name: str, one: str) -> str:
    """What :func:`_records_ok` found wrong in the list ``name`` (``one``: what one entry is)."""
    if not isinstance(v, list):
        return f"\"{name}\" must be a list of {one}s or null; got {_show(v)}."
    for j, r in enumerate(v):
        if not isinstance(r, dict):
            if r is None and nullable:
                continue
            return f"{name}[{j}] must be {one} (an object){' or null' if nullable else ''}; got {_show(r)}."
        key = _fault(r, spec, 2)
        if key is not None:
            return _fault_text(r, spec, key, f"{name}[{j}]", 2)
    return f"\"{name}\" is not a list of {one}s."


def _simple(ok: Callable[[Any], bool], expected: str) -> Tuple[Callable[[Any], bool], Callable[[str, Any], str]]:
    return ok, lambda key, v: f"\"{key}\" must be {expected} or null; got {_show(v)}."


def _list_of(ok: Callable[[Any], bool]) -> Callable[[Any], bool]:
    return lambda v: isinstance(v, list) and all(x is None or ok(x) for x in v)


def _list_text(expected: str, ok: Callable[[Any], bool]) -> Callable[[str, Any], str]:
    def text(key: str, v: Any) -> str:
        if isinstance(v, list):
            j = next(j for j, x in enumerate(v) if not (x is None or ok(x)))
            return f"{key}[{j}] must be {expected} or null; got {_show(v[j])}."
        return f"\"{key}\" must be a list (one entry per forward output) or null; got {_show(v)}."
    return text


#: Node key -> (predicate, message maker). The message maker runs only for a value the predicate refused.
_NODE: Dict[str, Tuple[Callable[[Any], bool], Callable[[str, Any], str]]] = {
    "kind": _simple(_is_str, "a string (\"backward\", \"custom\" or \"leaf\")"),
    "outputs": (lambda v: _records_ok(v, _OUTPUT, True),
                lambda k, v: _records_text(v, _OUTPUT, True, k, "an output record {\"shape\", \"dtype\", \"device\"}")),
    "saved": (lambda v: _records_ok(v, _SAVED, False),
              lambda k, v: _records_text(v, _SAVED, False, k, "a saved-tensor record")),
    "attrs": (lambda v: isinstance(v, dict) and _plain(v, 1),
              lambda k, v: (_plain_text(v, k, 1) if isinstance(v, dict)
                            else f"\"{k}\" must be an object or null; got {_show(v)}.")),
    "saved_bytes": _simple(_nonneg_int, "a non-negative integer (bytes)"),
    "tensor": (lambda v: isinstance(v, dict) and _fault(v, _LEAF, 1) is None,
               lambda k, v: (_fault_text(v, _LEAF, _fault(v, _LEAF, 1), k, 1) if isinstance(v, dict)
                             else f"\"{k}\" must be an object (the leaf tensor's record) or null; got {_show(v)}.")),
    "source": _simple(_is_str, "a string such as \"model.py:42\""),
    "code": _simple(_is_str, "a string (the source line's text)"),
    "module": _simple(_is_str, "a string such as \"encoder.layers.3\" (\"\" = top level)"),
    "out_stride": (_list_of(_dims), _list_text("a list of non-negative integers such as [3, 1]", _dims)),
    "out_contiguous": (_list_of(_is_bool), _list_text("true or false", _is_bool)),
    "seq": _simple(_is_int, "an integer"),
    "fwd_ms": _simple(_nonneg_num, "a finite non-negative number (milliseconds)"),
    "bwd_ms": _simple(_nonneg_num, "a finite non-negative number (milliseconds)"),
    "grad_bytes": _simple(_nonneg_int, "a non-negative integer (bytes)"),
    "peak_bytes": _simple(_nonneg_int, "a non-negative integer (bytes held at the memory peak)"),
    "rank_spread_ms": _simple(_nonneg_num, "a finite non-negative number (ms: max - min of the node's time over "
                                           "the ranks)"),
    "lib_source": _simple(_is_str, "a string such as \"torch/nn/functional.py:6229\""),
}
_EDGE: Dict[str, Tuple[Callable[[Any], bool], Callable[[str, Any], str]]] = {
    "output": _simple(_nonneg_int, "a non-negative integer (which forward output of the source flows)"),
    "slot": _simple(_nonneg_int, "a non-negative integer (the position in the target's next_functions)"),
    "shape": _simple(_dims, "a list of non-negative integers such as [8, 3]"),
    "dtype": _simple(_is_str, "a string such as \"float32\""),
    "also": (lambda v: _records_ok(v, _CONNECTION, False),
             lambda k, v: _records_text(v, _CONNECTION, False, k, "a connection record {\"output\", \"slot\", "
                                                                  "\"shape\", \"dtype\"}")),
}
_NODE_REQUIRED = ("id", "op")
_EDGE_REQUIRED = ("source", "target")


def validate_node(i: Optional[int], n: Any) -> None:
    """Check one node record (as parsed JSON): every field has the type docs/schema.md gives it (or is null);
    raises :class:`SchemaError` naming the node, the field and what to write instead."""
    if not isinstance(n, dict):
        raise SchemaError(f"nodes[{i}] must be an object, got {_show(n)}.")
    nid = n.get("id")
    if not _nonneg_int(nid):
        raise SchemaError(f"nodes[{i}]: \"id\" must be a non-negative integer (at most 2**53 - 1, the largest the "
                          f"viewer holds exactly); got {_show(nid)}.")
    op = n.get("op")
    if not isinstance(op, str) or not op:
        raise SchemaError(f"{_where(i, nid)}: \"op\" is missing or not a string (every node names its op, e.g. "
                          f"\"MulBackward0\"); got {_show(op)}.")
    for key, v in n.items():
        if v is None:
            continue
        check = _NODE.get(key)
        if check is None:
            if key not in _NODE_REQUIRED and not _plain(v, 1):  # dropped on load, but no NaN or deep nesting
                raise SchemaError(f"{_where(i, nid)}: {_plain_text(v, str(key), 1)}")
        elif not check[0](v):
            raise SchemaError(f"{_where(i, nid)}: {check[1](key, v)}")


def validate_edge(k: int, e: Any, ids: set) -> Tuple[int, int]:
    """Check one edge record (every field typed as docs/schema.md says, or null); returns ``(source, target)``."""
    if not isinstance(e, dict):
        raise SchemaError(f"edges[{k}] must be an object, got {_show(e)}.")
    u, v = e.get("source"), e.get("target")
    if not _nonneg_int(u) or not _nonneg_int(v):
        raise SchemaError(f"edges[{k}]: \"source\" and \"target\" must be node ids (non-negative integers); got "
                          f"{_show(u)}, {_show(v)}.")
    if u not in ids or v not in ids:
        missing = u if u not in ids else v
        raise SchemaError(f"edges[{k}] ({u} -> {v}) names node {missing}, which is not in \"nodes\".")
    if u == v:
        raise SchemaError(f"edges[{k}] is a self-loop on node {u}; an autograd graph has none.")
    for key, x in e.items():
        if x is None:
            continue
        check = _EDGE.get(key)
        if check is None:
            if key not in _EDGE_REQUIRED and not _plain(x, 1):
                raise SchemaError(f"edges[{k}] ({u} -> {v}): {_plain_text(x, str(key), 1)}")
        elif not check[0](x):
            raise SchemaError(f"edges[{k}] ({u} -> {v}): {check[1](key, x)}")
    return u, v  # type: ignore[return-value]  # both checked to be ints above


_TIMING: _Spec = {
    **{key: (_is_num, "a finite number (milliseconds)") for key in
       ("forward_ms", "backward_ms", "unattributed_ms", "forward_ops_ms", "backward_nodes_ms")},
    "repeat": (lambda v: _is_int(v) and v >= 1, "an integer >= 1"),
    "warmup": (lambda v: _is_int(v) and v >= 0, "an integer >= 0"),
    "runs_used": (lambda v: _is_int(v) and v >= 0, "an integer >= 0"),
    "device": (_is_str, "a string such as \"cpu\""), "clock": _STR, "stat": (_is_str, "a string such as \"median\""),
    "cross_check": (lambda v: isinstance(v, dict) and _plain(v, 2), "an object"),
}
def _int_list(v: Any) -> bool:
    return isinstance(v, list) and all(x is None or _is_int(x) for x in v)


_MEMORY: _Spec = {
    "device": _STR, "allocator": _STR, "allocator_peak_source": _STR,
    "forward_points": (lambda v: _is_int(v) and v >= 0, "an integer >= 0"),
    "nodes": (_id_list, "a list of node ids"),
    "allocated": (_int_list, "a list of integers (bytes) or null"),
    "allocated_max": (_int_list, "a list of integers (bytes) or null"),
    "allocator_peak": (_is_int, "an integer (bytes)"), "baseline": (_is_int, "an integer (bytes)"),
    "module_inputs": (lambda v: isinstance(v, dict) and all(_int_list(x) for x in v.values()),
                      "an object mapping module paths to lists of storage ids"),
    "inputs": (_int_list, "a list of storage ids (saved tensors that existed before the step)"),
    "backward": _BOOL,
}
_META: _Spec = {
    "torch": (_is_str, "a string such as \"2.13.0\""), "title": _STR,
    "roots": (_id_list, "a list of node ids"),
    "traced": _BOOL, "timed": _BOOL,
    "timing": (lambda v: isinstance(v, dict) and _fault(v, _TIMING, 1) is None, "an object (docs/timing.md)"),
    "modules": (lambda v: isinstance(v, dict) and all(isinstance(k, str) and isinstance(c, str) for k, c in v.items()),
                "an object mapping module paths to class names"),
    "modules_inferred": _BOOL,
    "rank": (lambda v: isinstance(v, dict) and _plain(v, 1), "an object (the rank that captured the graph: "
                                                              "docs/nway.md)"),
    "memory": (lambda v: isinstance(v, dict) and _fault(v, _MEMORY, 1) is None,
               "an object (the memory record of gw.profile(..., memory=True): docs/memory.md)"),
}


def _check_meta(meta: Dict[str, Any]) -> None:
    key = _fault(meta, _META, 0)
    if key is None:
        return
    timing = meta[key]
    if key == "memory" and isinstance(timing, dict):
        sub = _fault(timing, _MEMORY, 1)
        if sub is not None:
            raise SchemaError(_fault_text(timing, _MEMORY, sub, "meta.memory", 1))
    if key == "timing" and isinstance(timing, dict):
        sub = _fault(timing, _TIMING, 1)
        if sub == "cross_check" and isinstance(timing[sub], dict):
            raise SchemaError(_plain_text(timing[sub], "meta.timing.cross_check", 2))
        raise SchemaError(_fault_text(timing, _TIMING, sub, "meta.timing", 1))
    raise SchemaError(_fault_text(meta, _META, key, "meta", 0))


def validate(doc: Any) -> Dict[str, Any]:
    """Check a parsed version 1 graph document (records) against this schema and return it; version 2 (columns) is
    checked by :func:`graphwidget.model.io.validate` (:mod:`.columns`), which reads both.

    Raises :class:`SchemaError` (a ``ValueError``) naming the node and the field, and what to write instead, for: a
    wrong ``format`` or an unsupported ``version``, nodes without ``op``, any field whose type is not the one
    docs/schema.md gives it (strings, lists of non-negative integers, true/false, numbers: in nodes, saved tensors,
    leaf tensors, outputs, edges and ``meta``), integers past 2**53 - 1 where the viewer needs them exact, NaN or
    infinite numbers, duplicate ids, edges to unknown nodes, self-loops, cycles and absurd nesting.
    """
    if check_envelope(doc) != 1:
        raise SchemaError("a version 2 or 3 graph document (columns) is checked by graphwidget.model.io.validate, "
                          "which reads every version.")
    _validate_records(doc)
    return doc


def check_format(doc: Any, fmt: str, versions: Sequence[int], what: str, noun: str, hint: str = "") -> int:
    """Check a document's ``format`` (``fmt``, a ``what``: "graph", "diff", ...) and that its ``version`` is one of
    ``versions`` (said as the ``noun`` version); return the version."""
    if not isinstance(doc, dict) or doc.get("format") != fmt:
        got = doc.get("format") if isinstance(doc, dict) else type(doc).__name__
        raise SchemaError(f"not a graphwidget {what}: \"format\" is {got!r:.60}, expected {fmt!r}{hint}.")
    version = doc.get("version")
    if version not in versions or type(version) is not int:
        newer = type(version) is int and version > max(versions)
        raise SchemaError(
            f"{noun} version {version!r:.20} is not supported by this release (it reads version"
            f"{'s' if len(versions) > 1 else ''} {', '.join(map(str, versions))})"
            + ("; upgrade graphwidget." if newer else "."))
    return int(version)


def check_envelope(doc: Any) -> int:
    """Check a graph document's ``format``, ``version`` and ``meta`` (what every version shares); return the
    version."""
    hint = " (a diff: use graphwidget.load_json, which reads both)" \
        if isinstance(doc, dict) and doc.get("format") == DIFF_FORMAT else ""
    version = check_format(doc, FORMAT, READ_VERSIONS, "graph", "graph schema", hint)
    meta = doc.get("meta")
    if meta is not None and not isinstance(meta, dict):
        raise SchemaError(f"\"meta\" must be an object; got {_show(meta)}.")
    meta = meta or {}
    _check_meta(meta)
    return version


def cycle_nodes(succ: Any, indeg: Any, keys: Iterable[Any]) -> List[Any]:
    """Up to five of ``keys`` that sit on (or behind) a cycle, smallest first; empty when the edges are acyclic.
    Kahn's algorithm: ``succ[k]`` lists k's successors, ``indeg[k]`` counts its incoming edges (consumed here; dicts
    or lists indexed by the keys)."""
    keys = list(keys)
    ready = [k for k in keys if indeg[k] == 0]
    seen = 0
    while ready:
        u = ready.pop()
        seen += 1
        for v in succ[u]:
            indeg[v] -= 1
            if indeg[v] == 0:
                ready.append(v)
    return [] if seen == len(keys) else sorted(k for k in keys if indeg[k] > 0)[:5]


def _validate_records(doc: Dict[str, Any]) -> None:
    """Version 1: one record per node and per edge."""
    meta = doc.get("meta") or {}
    roots = meta.get("roots")
    nodes, edges = doc.get("nodes"), doc.get("edges")
    if not isinstance(nodes, list) or not isinstance(edges, list):
        raise SchemaError("a graph document needs \"nodes\" and \"edges\" lists.")
    ids: set = set()
    for i, n in enumerate(nodes):
        validate_node(i, n)
        if n["id"] in ids:
            raise SchemaError(f"node id {n['id']} appears twice (nodes[{i}]); ids must be unique.")
        ids.add(n["id"])
    succ: Dict[int, List[int]] = {i: [] for i in ids}
    indeg: Dict[int, int] = dict.fromkeys(ids, 0)
    for k, e in enumerate(edges):
        u, v = validate_edge(k, e, ids)
        succ[u].append(v)
        indeg[v] += 1
    for r in roots or ():
        if r not in ids:
            raise SchemaError(f"meta.roots names node {r}, which is not in \"nodes\".")
    on_cycle = cycle_nodes(succ, indeg, ids)
    if on_cycle:
        raise SchemaError(f"the edges form a cycle (through nodes {on_cycle}); an autograd graph is acyclic.")
    if doc.get("findings") is not None:
        validate_findings(doc["findings"], ids)


_FINDING: _Spec = {
    "rule": (lambda v: isinstance(v, str) and bool(v), "a non-empty string"),
    "severity": (lambda v: v in FINDING_SEVERITIES, " or ".join(f'"{s}"' for s in FINDING_SEVERITIES)),
    "nodes": (lambda v: isinstance(v, list) and all(_nonneg_int(n) for n in v), "a list of node ids"),
    "message": (lambda v: isinstance(v, str) and bool(v), "a non-empty string"),
    "source": _STR, "code": _STR, "module": _STR, "suggestion": _STR,
    "evidence": (lambda v: isinstance(v, dict) and _plain(v, 2), "an object"),
}


def validate_findings(findings: Any, ids: set) -> None:
    """Check the advisor's ``"findings"`` list (the views render it as text; node ids must exist)."""
    if not isinstance(findings, list):
        raise SchemaError(f"\"findings\" must be a list of finding objects or null; got {_show(findings)}.")
    for j, f in enumerate(findings):
        if not isinstance(f, dict):
            raise SchemaError(f"findings[{j}] must be an object with keys {', '.join(FINDING_KEYS)}; "
                              f"got {_show(f)}.")
        for key in ("rule", "message"):
            if not isinstance(f.get(key), str) or not f.get(key):
                raise SchemaError(f"findings[{j}]: \"{key}\" is missing or not a string; got {_show(f.get(key))}.")
        if f.get("severity") not in FINDING_SEVERITIES:
            raise SchemaError(f"findings[{j}]: \"severity\" must be one of {FINDING_SEVERITIES}; "
                              f"got {_show(f.get('severity'))}.")
        nodes = f.get("nodes")
        if not isinstance(nodes, list) or not all(_nonneg_int(n) for n in nodes):
            raise SchemaError(f"findings[{j}]: \"nodes\" must be a list of node ids; got {_show(nodes)}.")
        missing = [n for n in nodes if n not in ids]
        if missing:
            raise SchemaError(f"findings[{j}] names node {missing[0]}, which is not in \"nodes\".")
        key = _fault(f, _FINDING, 1)
        if key is not None:
            if key == "evidence" and isinstance(f[key], dict):
                raise SchemaError(_plain_text(f[key], f"findings[{j}].evidence", 2))
            raise SchemaError(_fault_text(f, _FINDING, key, f"findings[{j}]", 1))


def unknown_node_keys(nodes: List[Dict[str, Any]]) -> List[str]:
    """Node keys this release does not know (they are dropped on load, with one warning naming them)."""
    known = set(NODE_KEYS) | set(OPTIONAL_NODE_KEYS) | {"id"}
    extra: set = set()
    for n in nodes:
        extra.update(k for k in n if k not in known)
    return sorted(extra)

"""The binary payload the viewer reads: a document whose graphs travel as typed columns, never as one JSON text.

Why not JSON: a million-node graph as version 1 JSON inflates to more characters than a JavaScript string may hold
(V8's limit is 2**29 - 24), and Chromium's ``TextDecoder`` then returns an empty string without an error. Here no
part of a graph is ever one big string: ids, edge ends and numbers are little-endian typed arrays, repeated values
are tables referenced by index (the version 2 columns of docs/schema.md, :mod:`graphwidget.model.columns`), and any
other value is one small JSON text per row, read only when the view needs that row.

The layout (before gzip; every section starts at a multiple of 8 bytes, so the front end views it in place):

====================  ===========================================================================================
bytes 0-3             the magic ``GWPK``
bytes 4-7             this layout's version (uint32 LE, :data:`PACK_VERSION`)
bytes 8-11            the header's length H in bytes (uint32 LE)
bytes 12-19           the whole payload's length in bytes (float64 LE: lets the reader refuse or size it up front)
bytes 20-(20+H)       the header: UTF-8 JSON ``{"sections": [[offset, length], ...], "doc": document}``
sections              at the offsets the header gives
====================  ===========================================================================================

``doc`` is the document shown (a graph, a diff or an N-way comparison), with each graph replaced by
``{"$packed": "graph", "format", "version", "meta", "findings", "nodes": {"count", "id", key: column, ...},
"edges": {"count", "source", "target", key: column, ...}}`` (the keys of docs/schema.md, one column per key, rows in
the order version 2 writes them), where a column is one of:

* ``{"const": value}`` — every row holds ``value``;
* ``{"table": rows, "index": {"type": "u8"|"u16"|"u32", "section": k}}`` — row i holds ``table[index[i]]``;
* ``{"ints": k, "nulls": k2 or null, "delta": bool}`` — int32 per row (``delta``: row i holds the sum of the first
  i + 1); ``nulls``: one byte per row, 1 where the row is null;
* ``{"nums": k}`` — float64 per row, NaN where the row is null (a graph document never holds NaN);
* ``rows``: ``{"rows": k, "offsets": k2}`` — row i is the JSON text ``bytes[offsets[i]:offsets[i + 1]]`` of section
  ``k`` (ASCII: non-ASCII characters are escaped), ``offsets`` uint32 (count + 1 of them).

These are version 2's forms (const, table, delta, plain; :mod:`graphwidget.model.columns`) with numbers as typed
arrays. The choice is made from each value's JSON text, which the payload needs anyway, rather than from
``GradGraph.to_dict()``, whose interning would encode every value a second time. :func:`unpack` reads a payload back
(the tests check it against ``to_dict(version=1)``); the front end's reader is ``js/src/model/packed.ts``.
"""
from __future__ import annotations

import gzip
import json
import math
import operator
import struct
import sys
from array import array
from itertools import accumulate, chain, repeat
from operator import itemgetter
from typing import Any, Dict, List, Optional, Tuple

from ..model import schema
from ..model._digraph import adjacency
from ..model.graph import GradGraph

__all__ = ["MAGIC", "PACK_VERSION", "Packer", "pack", "unpack", "is_packed"]

MAGIC = b"GWPK"
#: Bumped on any change of the layout above (the front end refuses a newer one by name).
PACK_VERSION = 1
_FIXED = struct.Struct("<4sIId")
#: A section's offsets are uint32, and the front end holds the payload in one ArrayBuffer: refuse what it cannot.
MAX_SECTION = 2**32 - 1
_INT32 = (-(2**31), 2**31 - 1)
_NONE = type(None)

_dumps = json.JSONEncoder(separators=(",", ":"), allow_nan=False).encode  # ensure_ascii: one byte per character
_escape = json.encoder.encode_basestring_ascii  # type: ignore[attr-defined]


def _le(a: array) -> bytes:
    if sys.byteorder != "little":  # pragma: no cover - every platform torch ships for is little-endian
        a = array(a.typecode, a)
        a.byteswap()
    return a.tobytes()


_I32 = "i" if array("i").itemsize == 4 else "l"
_U32 = "I" if array("I").itemsize == 4 else "L"


def _int32(values: Any) -> array:
    return array(_I32, values)


def _fits_int32(nums: List[int]) -> bool:
    return not nums or (min(nums) >= _INT32[0] and max(nums) <= _INT32[1])


class Packer:
    """Collects sections and builds the payload: :meth:`graph` for each graph of the document, then :meth:`finish`
    with the document that holds their descriptors."""

    def __init__(self) -> None:
        self.sections: List[bytes] = []

    def add(self, data: bytes) -> int:
        if len(data) > MAX_SECTION:
            raise ValueError(f"a column of this graph takes {len(data):,} bytes, more than the viewer can hold "
                             f"({MAX_SECTION:,}); show a part of the graph instead.")
        self.sections.append(data)
        return len(self.sections) - 1

    # -- columns --------------------------------------------------------------------------------------------------
    def _index(self, index: List[int], size: int) -> Dict[str, Any]:
        kind, code = ("u8", "B") if size <= 0x100 else ("u16", "H") if size <= 0x10000 else ("u32", _U32)
        return {"type": kind, "section": self.add(_le(array(code, index)))}

    def _rows(self, texts: List[str]) -> Dict[str, Any]:
        """A ``rows`` column (or table) from the rows' JSON texts."""
        offsets = array(_U32, chain((0,), accumulate(map(len, texts))))
        if offsets[-1] > MAX_SECTION:
            raise ValueError(f"a column of this graph is {offsets[-1]:,} bytes of JSON, more than the viewer can hold "
                             f"({MAX_SECTION:,}); show a part of the graph instead.")
        return {"rows": self.add("".join(texts).encode("ascii")), "offsets": self.add(_le(offsets))}

    def _numbers(self, values: List[Any], types: set) -> Optional[Dict[str, Any]]:
        """Ints (int32, with a null mask) or floats (float64, NaN for null); None when they do not fit (an integer
        past 2**53 would not come back exact)."""
        nums = [v for v in values if v is not None] if _NONE in types else values
        if types <= {int, _NONE} and _fits_int32(nums):
            nulls = None
            if _NONE in types:
                nulls = self.add(bytes(v is None for v in values))
                values = [0 if v is None else v for v in values]
            return {"ints": self.add(_le(_int32(values))), "nulls": nulls, "delta": False}
        if any(isinstance(v, int) and abs(v) > schema.MAX_SAFE_INT for v in nums):
            return None
        if float in types and not all(map(math.isfinite, nums)):  # NaN would come back as null: refuse it
            raise ValueError("Out of range float values are not JSON compliant")
        return {"nums": self.add(_le(array("d", (float("nan") if v is None else v for v in values))))}

    def column(self, values: List[Any]) -> Dict[str, Any]:
        """One field of every row, in the most compact form: ``const``; numbers as ``ints``/``nums``; otherwise the
        forms of version 2 chosen from the values' JSON texts (the text is what must come back, so equal texts may
        share a table entry): a ``table`` when at most half the rows are distinct, else ``rows``."""
        if not values:
            return {"rows": self.add(b""), "offsets": self.add(_le(array(_U32, [0])))}
        types = set(map(type, values))
        if types <= {int, float, _NONE}:  # bool is not among them: true must come back as true
            if len(set(values)) == 1 and len(types) == 1:
                return {"const": values[0]}
            typed = self._numbers(values, types)
            if typed is not None:
                return typed
        keys, text = _texts(values, types)
        distinct = dict.fromkeys(keys)
        if len(distinct) == 1:
            return {"const": values[0]}
        if len(distinct) * 2 <= len(keys):
            pos = {k: i for i, k in enumerate(distinct)}
            return {"table": self._rows(list(map(text.__getitem__, distinct))),
                    "index": self._index(list(map(pos.__getitem__, keys)), len(distinct))}
        return self._rows(list(map(text.__getitem__, keys)))

    def _checked(self, values: List[Any], at: str) -> Dict[str, Any]:
        try:
            return self.column(values)
        except ValueError as exc:
            if "JSON compliant" not in str(exc):
                raise
            raise ValueError(f"the {at} hold NaN or Infinity, which JSON cannot carry; set it to None.") from None

    def ids(self, values: List[int]) -> Dict[str, Any]:
        """Ids and edge ends: int32 deltas when they fit (ids count up by one: the deltas compress to nothing)."""
        deltas = [values[0], *map(operator.sub, values[1:], values[:-1])] if values else []
        if set(map(type, values)) <= {int} and _fits_int32(values) and _fits_int32(deltas):
            return {"ints": self.add(_le(_int32(deltas))), "nulls": None, "delta": True}
        return self.column(values)

    def graph(self, g: GradGraph) -> Dict[str, Any]:
        """The descriptor of graph ``g`` (its sections added). Rows are in the graph's order, edges by source then
        target, as version 2 and version 1 write them."""
        node, succ, _ = adjacency(g.nx)
        attrs = list(node.values())
        nodes: Dict[str, Any] = {"count": len(attrs), "id": self.ids(list(node))}
        for key in schema.node_keys(g.meta):
            nodes[key] = self._checked(_field(attrs, key), f"nodes' \"{key}\"")
        src = list(chain.from_iterable(map(repeat, succ, map(len, succ.values()))))
        tgt = list(chain.from_iterable(succ.values()))
        eattrs = list(chain.from_iterable(map(dict.values, succ.values())))
        edges: Dict[str, Any] = {"count": len(src), "source": self.ids(src), "target": self.ids(tgt)}
        for key in schema.EDGE_KEYS:
            edges[key] = self._checked(_field(eattrs, key), f"edges' \"{key}\"")
        return {"$packed": "graph", "format": schema.FORMAT, "version": schema.VERSION, "meta": dict(g.meta),
                "findings": g.findings, "nodes": nodes, "edges": edges}

    def finish(self, doc: Any) -> bytes:
        """The payload (not compressed) for ``doc``, which holds the descriptors :meth:`graph` returned."""
        spans: List[List[int]] = []
        # the offsets depend on the header's length and the header holds the offsets: lay out with a placeholder
        # length, then again until the header's length is stable (it is after one or two passes)
        start = 0
        for _ in range(4):
            spans = []
            pos = _align(_FIXED.size + start)
            for s in self.sections:
                spans.append([pos, len(s)])
                pos = _align(pos + len(s))
            header = _dumps({"sections": spans, "doc": doc}).encode("ascii")
            if len(header) == start:
                break
            start = len(header)
        total = spans[-1][0] + spans[-1][1] if spans else _FIXED.size + len(header)
        out = bytearray(max(total, _FIXED.size + len(header)))
        _FIXED.pack_into(out, 0, MAGIC, PACK_VERSION, len(header), float(len(out)))
        out[_FIXED.size:_FIXED.size + len(header)] = header
        for (at, length), s in zip(spans, self.sections):
            out[at:at + length] = s
        return bytes(out)


def _field(records: List[Dict[str, Any]], key: str) -> List[Any]:
    """``record.get(key)`` of every record (an absent key is null)."""
    try:
        return list(map(itemgetter(key), records))
    except KeyError:
        return [d.get(key) for d in records]


def _texts(values: List[Any], types: set) -> Tuple[List[Any], Dict[Any, str]]:
    """A key per value (equal keys: the same JSON text) and the JSON text of each key. Strings are their own keys,
    encoded once each; any other value is encoded, and its text is its key."""
    if types <= {str, _NONE}:  # json's own C string escaper, without an encoder call per value
        return values, {k: "null" if k is None else _escape(k) for k in dict.fromkeys(values)}
    ids = list(map(id, values))
    objs = dict(zip(ids, values))  # ``values`` keeps every object alive: one id, one object
    if len(objs) * 2 <= len(ids):  # a capture shares one output record among the nodes with the same outputs
        by_id = {i: _encode(v) for i, v in objs.items()}
        texts = list(map(by_id.__getitem__, ids))
    else:
        texts = list(map(_encode, values))
    return texts, dict(zip(texts, texts))


def _c_encoder() -> Any:
    """``json``'s C encoder made once (``JSONEncoder.encode`` makes one per call, which costs more than encoding a
    small value), or None where the C accelerator is missing."""
    from json import encoder
    make = getattr(encoder, "c_make_encoder", None)
    if make is None:  # pragma: no cover - CPython always has it
        return None

    def default(o: Any) -> Any:
        raise TypeError(f"Object of type {type(o).__name__} is not JSON serializable")
    try:
        return make(_MARKERS, default, encoder.encode_basestring_ascii, None, ":", ",", False, False, False)
    except TypeError:  # pragma: no cover - a signature this release does not know: the plain encoder
        return None


#: The containers being encoded (the C encoder's check against cycles; empty between calls)
_MARKERS: Dict[int, Any] = {}
_C = _c_encoder()


def _encode(v: Any) -> str:
    """``v`` as compact ASCII JSON (NaN refused), as ``_dumps`` writes it."""
    if _C is None:  # pragma: no cover
        return _dumps(v)
    try:
        return "".join(_C(v, 0))
    except BaseException:
        _MARKERS.clear()  # an encoding stopped half-way leaves its containers marked
        raise


def _align(n: int) -> int:
    return (n + 7) & ~7


def pack(doc: Any, graphs: Dict[str, Any], level: int = 6) -> bytes:
    """The gzip-compressed payload of ``doc`` (a dict) with ``graphs`` put in: ``{key: GradGraph}`` sets
    ``doc[key]``, ``{key: [GradGraph, ...]}`` a list of graphs there. The same input gives the same bytes."""
    p = Packer()
    out = dict(doc)
    for key, g in graphs.items():
        out[key] = [p.graph(x) for x in g] if isinstance(g, list) else p.graph(g)
    # mtime=0: the same graph gives the same bytes (stable exports, cheap equality checks)
    return gzip.compress(p.finish(out), compresslevel=level, mtime=0)


def pack_graph(g: GradGraph) -> bytes:
    """The payload of one graph."""
    p = Packer()
    return gzip.compress(p.finish(p.graph(g)), compresslevel=6, mtime=0)


def is_packed(data: bytes) -> bool:
    """True for a payload of this module (gzip-compressed or not)."""
    if data[:2] == b"\x1f\x8b":
        data = gzip.decompress(data)[:4]
    return data[:4] == MAGIC


# -- reading (the tests' check of the format; the front end has its own reader) -------------------------------------
def unpack(data: bytes) -> Any:
    """The document of a payload, each graph as a version 1 document (records), as the viewer sees it."""
    if data[:2] == b"\x1f\x8b":
        data = gzip.decompress(data)
    magic, version, hlen, total = _FIXED.unpack_from(data, 0)
    if magic != MAGIC or version != PACK_VERSION or total != len(data):
        raise ValueError(f"not a graphwidget payload of version {PACK_VERSION} (magic {magic!r}, version {version}, "
                         f"{len(data)} bytes for {total:.0f})")
    head = json.loads(data[_FIXED.size:_FIXED.size + hlen])
    spans = head["sections"]

    def section(k: int) -> memoryview:
        at, length = spans[k]
        return memoryview(data)[at:at + length]

    def typed(code: str, k: int) -> List[Any]:
        a = array(code)
        a.frombytes(section(k))
        if sys.byteorder != "little":  # pragma: no cover
            a.byteswap()
        return a.tolist()

    def rows(d: Dict[str, Any]) -> List[Any]:
        text, offs = bytes(section(d["rows"])), typed(_U32, d["offsets"])
        return [json.loads(text[a:b]) for a, b in zip(offs, offs[1:])]

    def column(c: Dict[str, Any], n: int) -> List[Any]:
        if "const" in c:
            return [c["const"]] * n
        if "table" in c:
            table = rows(c["table"])
            code = {"u8": "B", "u16": "H", "u32": _U32}[c["index"]["type"]]
            return [table[i] for i in typed(code, c["index"]["section"])]
        if "ints" in c:
            vals = typed(_I32, c["ints"])
            if c.get("delta"):
                vals = list(accumulate(vals))
            if c.get("nulls") is not None:
                vals = [None if z else v for v, z in zip(vals, bytes(section(c["nulls"])))]
            return vals
        if "nums" in c:
            return [None if v != v else v for v in typed("d", c["nums"])]
        return rows(c)

    def graph(gd: Dict[str, Any]) -> Dict[str, Any]:
        n, m = gd["nodes"]["count"], gd["edges"]["count"]
        ncols = {k: column(c, n) for k, c in gd["nodes"].items() if k != "count"}
        ecols = {k: column(c, m) for k, c in gd["edges"].items() if k != "count"}
        nkeys = [k for k in ncols if k != "id"]
        ekeys = [k for k in ecols if k not in ("source", "target")]
        out = {"format": gd["format"], "version": 1, "meta": gd["meta"],
               "nodes": [{"id": ncols["id"][i], **{k: ncols[k][i] for k in nkeys}} for i in range(n)],
               "edges": [{"source": ecols["source"][j], "target": ecols["target"][j], **{k: ecols[k][j] for k in ekeys}}
                         for j in range(m)]}
        if gd.get("findings") is not None:
            out["findings"] = gd["findings"]
        return out

    def walk(v: Any) -> Any:
        if isinstance(v, dict) and v.get("$packed") == "graph":
            return graph(v)
        if isinstance(v, list):
            return [walk(x) for x in v]
        if isinstance(v, dict):
            return {k: walk(x) for k, x in v.items()}
        return v

    return walk(head["doc"])

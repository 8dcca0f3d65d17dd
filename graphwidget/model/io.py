"""Reading the JSON form of a graph (``docs/schema.md``): parsing, validating, building the :class:`GradGraph`.

Writing lives in :mod:`.writer` (re-exported here). A version 2 document is validated and kept as its columns; the
networkx graph is built on first use (:mod:`.held`). With the compiled core registered in :mod:`.writer`, building big
graphs also untracks their records from the cyclic GC; without it, the same graph is read, only slower.
"""
from __future__ import annotations

import json
import os
import re
import warnings
import zlib
from pathlib import Path
from typing import Any, Dict, List, Tuple

from .._util.gc import gc_paused
from . import columns, schema
from ._digraph import adjacency, build_digraph
from .graph import GradGraph
from .held import HeldColumns
from .writer import register_accelerator, to_dict, to_json
from .writer import registered_core as _core

__all__ = ["graph_from_json", "read_file", "parse", "validate", "from_dict", "graph_from_parsed", "to_dict", "to_json",
           "register_accelerator"]

#: The most bytes a gzip-compressed document may decompress to (``GRAPHWIDGET_MAX_JSON_BYTES`` overrides it): far
#: above any graph's JSON, so only a file built to exhaust memory (a gzip bomb) meets it.
MAX_DECOMPRESSED = 2 << 30
_LIMIT_ENV = "GRAPHWIDGET_MAX_JSON_BYTES"
_CHUNK = 1 << 24


def decompress_limit() -> int:
    """:data:`MAX_DECOMPRESSED`, or the ``GRAPHWIDGET_MAX_JSON_BYTES`` environment variable when set."""
    raw = os.environ.get(_LIMIT_ENV)
    if raw is None or not raw.strip():
        return MAX_DECOMPRESSED
    try:
        limit = int(raw)
    except ValueError:
        limit = -1
    if limit <= 0:
        raise schema.SchemaError(f"{_LIMIT_ENV}={raw!r}: a number of bytes > 0, e.g. {MAX_DECOMPRESSED}.")
    return limit


def gunzip(data: bytes, who: str) -> bytes:
    """Decompress gzip data (one member or several, as ``gzip.decompress``), refusing with a
    :class:`~graphwidget.SchemaError` once the output would pass :func:`decompress_limit`: the limit is checked as
    the output grows, so a gzip bomb is refused before it fills memory."""
    limit = decompress_limit()
    out = bytearray()
    rest = bytes(data)
    while rest:
        d = zlib.decompressobj(wbits=31)  # 31: a gzip header and trailer
        buf = rest
        try:
            while not d.eof:
                chunk = d.decompress(buf, min(limit + 1 - len(out), _CHUNK))  # pieces: no second copy of it all
                out += chunk
                if len(out) > limit:
                    raise schema.SchemaError(
                        f"{who}: the gzip data decompresses to more than {limit} bytes ({len(data)} compressed), "
                        f"more than any graph's JSON; if the file is genuine, raise the limit by setting "
                        f"{_LIMIT_ENV} to a number of bytes.")
                buf = d.unconsumed_tail
                if not chunk and not buf:
                    break  # input used up before the end of the stream
        except zlib.error as exc:
            raise schema.SchemaError(f"{who}: not a complete gzip file ({exc}).") from None
        if not d.eof:
            raise schema.SchemaError(f"{who}: not a complete gzip file (it ends before its end-of-stream marker).")
        rest = d.unused_data
        if rest and not rest.lstrip(b"\0"):
            break  # zero padding after the last member, which gzip tolerates too
    return bytes(out)


class _Constant:
    """What ``NaN`` / ``Infinity`` / ``-Infinity`` parse to: found afterwards, so the error can say where it is."""

    __slots__ = ("name",)

    def __init__(self, name: str) -> None:
        self.name = name


def _place(doc: Any, path: List[Any]) -> str:
    """``node 7 (nodes[3]).attrs.alpha`` for the path ``["nodes", 3, "attrs", "alpha"]`` (the node named by its id,
    as :func:`graphwidget.model.schema.validate` does); ``meta.timing.forward_ms`` elsewhere."""
    text = ""
    start = 0
    if len(path) >= 2 and path[0] == "nodes" and isinstance(path[1], int):
        node = None
        if isinstance(doc, dict) and isinstance(doc.get("nodes"), list) and path[1] < len(doc["nodes"]):
            node = doc["nodes"][path[1]]
        nid = node.get("id") if isinstance(node, dict) else None
        text, start = (f"node {nid!r} (nodes[{path[1]}])" if nid is not None else f"nodes[{path[1]}]"), 2
    for p in path[start:]:
        text += f"[{p}]" if isinstance(p, int) else (f".{p}" if text else str(p))
    return text or "the document"


def _constant_error(doc: Any, who: str) -> schema.SchemaError:
    stack: List[Tuple[Any, List[Any]]] = [(doc, [])]
    while stack:
        v, path = stack.pop()
        if isinstance(v, _Constant):
            return schema.SchemaError(f"{who}: {_place(doc, path)} holds {v.name}, which is not JSON; write null "
                                      f"for an unknown number.")
        if isinstance(v, dict):
            stack.extend((x, path + [k]) for k, x in reversed(list(v.items())))
        elif isinstance(v, list):
            stack.extend((x, path + [j]) for j, x in reversed(list(enumerate(v))))
    return schema.SchemaError(f"{who}: the file holds NaN or Infinity, which is not JSON; write null for an "
                              f"unknown number.")


_TOKEN = re.compile(r'"(?:[^"\\]|\\.)*"|[{}\[\],:]')


def _nesting_error(text: str, who: str) -> schema.SchemaError:
    """Where the text first nests deeper than :data:`~graphwidget.model.schema.MAX_DEPTH` (found by a flat scan:
    the JSON reader itself gave up with a RecursionError)."""
    stack: List[List[Any]] = []  # per open container: ["{", key, expecting_key] or ["[", index]
    for m in _TOKEN.finditer(text):
        t = m.group()
        if t in "{[":
            stack.append(["{", None, True] if t == "{" else ["[", 0])
            if len(stack) > schema.MAX_DEPTH + 1:
                path = [f[1] for f in stack[:-1]]
                head = _place({}, path[:4])
                # the node's id is not known yet (the reader stopped): name it by its place in "nodes"
                return schema.SchemaError(f"{who}: {head}{'...' if len(path) > 4 else ''} is nested more than "
                                          f"{schema.MAX_DEPTH} levels deep; this is not a graphwidget file.")
        elif t in "}]":
            if stack:
                stack.pop()
        elif t == ",":
            if stack and stack[-1][0] == "[":
                stack[-1][1] += 1
            elif stack:
                stack[-1][2] = True
        elif t == ":":
            if stack:
                stack[-1][2] = False
        elif stack and stack[-1][0] == "{" and stack[-1][2]:
            stack[-1][1] = json.loads(t)
    return schema.SchemaError(f"{who}: the JSON is nested too deeply to be a graphwidget file.")


def _decode(data: bytes, who: str) -> str:
    """UTF-8 bytes (a leading byte-order mark allowed) as text; anything else is refused saying where it breaks."""
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        bad = data[exc.start:exc.start + 4].hex(" ")
        utf16 = data[:2] in (b"\xff\xfe", b"\xfe\xff")
        raise schema.SchemaError(
            f"{who}: the bytes are not UTF-8 text (byte {exc.start} starts {bad!r}"
            + (", and they begin with a UTF-16 byte-order mark" if utf16 else "")
            + "); graphwidget files are UTF-8 JSON: pass the text GradGraph.to_json() wrote, or the file's bytes "
              "unchanged (re-save it as UTF-8 if an editor converted it).") from None


def parse(text: Any, who: str = "graphwidget.load_json") -> Any:
    """Parse JSON text (a str, or UTF-8 bytes, gzip-compressed or not) with clear errors, all
    :class:`~graphwidget.SchemaError` (a ``ValueError``): not UTF-8; not JSON; NaN or Infinity, and where; a number
    too long to read; nesting so deep the parser gives up, and where."""
    decoded = isinstance(text, (bytes, bytearray))  # then it holds no surrogate code point: UTF-8 has none
    if decoded:
        if text[:2] == b"\x1f\x8b":  # gzip (a .json.gz file's bytes)
            text = gunzip(bytes(text), who)
        text = _decode(bytes(text), who)
    if not isinstance(text, str):
        raise TypeError(f"{who} expects the JSON text GradGraph.to_json() wrote (a str); got {type(text).__name__}.")
    found: List[_Constant] = []

    def constant(name: str) -> _Constant:
        c = _Constant(name)
        found.append(c)
        return c

    try:
        doc = json.loads(text, parse_constant=constant)
    except json.JSONDecodeError as exc:
        raise schema.SchemaError(f"{who}: not JSON ({exc}); pass the text GradGraph.to_json() wrote.") from None
    except RecursionError:
        raise _nesting_error(text, who) from None
    except ValueError as exc:  # an integer literal past Python's limit on digits (sys.get_int_max_str_digits())
        if "digits" in str(exc):
            raise schema.SchemaError(f"{who}: the file holds a number thousands of digits long, which no graph "
                                     f"holds; write null for an unknown number.") from None
        raise schema.SchemaError(f"{who}: {exc}.") from None
    if found:
        raise _constant_error(doc, who)
    if _maybe_surrogate(text, decoded):  # rare: only then walk the document for the string
        where = _lone_surrogate(doc, "")
        if where is not None:
            raise schema.SchemaError(
                f"{who}: {where or 'the document'} holds a lone surrogate (a half of a UTF-16 pair, such as "
                f"\\ud800), which is not text: no UTF-8 file or page can hold it; write the character it stood "
                f"for, or remove it.")
    return doc


def _maybe_surrogate(text: str, decoded: bool) -> bool:
    """Whether the text may hold a surrogate: a JSON escape starting like one (``\\ud800``; a pair of them is one
    character, which the parse joins), or, in a str not decoded from UTF-8, a surrogate code point itself. Substring
    searches and ``isascii`` only: a regular expression over the whole text would cost a fraction of the parse."""
    if "\\ud" in text or "\\uD" in text:
        return True
    return not decoded and not text.isascii() and _SURROGATE.search(text) is not None


def _lone_surrogate(v: Any, path: str) -> Any:
    """The path (``nodes[3].source``) of the first string (or key) holding a surrogate code point, or None."""
    stack = [(v, path)]
    while stack:
        v, path = stack.pop()
        if isinstance(v, str):
            if _SURROGATE.search(v) is not None:
                return path
        elif isinstance(v, dict):
            for k, x in v.items():
                at = f"{path}.{k}" if path else str(k)
                if isinstance(k, str) and _SURROGATE.search(k) is not None:
                    return f"{at} (a key)"
                stack.append((x, at))
        elif isinstance(v, list):
            stack.extend((x, f"{path}[{j}]") for j, x in enumerate(v))
    return None


_SURROGATE = re.compile("[\ud800-\udfff]")


def read_file(path: Any) -> bytes:
    """A file's bytes, gunzipped when they are gzip (whatever the name) or the name ends in ``.gz``, within
    :func:`decompress_limit`."""
    p = Path(path)
    data = p.read_bytes()
    if data[:2] == b"\x1f\x8b" or p.suffix == ".gz":
        data = gunzip(data, f"graphwidget.load: {p}")
    return data


def graph_from_json(text: Any) -> GradGraph:
    """Read a graph written by :meth:`GradGraph.to_json` (graphs only: ``graphwidget.load_json`` reads every result).

    The document (version 2 or 1) is validated against the schema first (:func:`validate`): a broken or
    hostile file is refused with a ``ValueError`` naming the node and the field, never half-loaded.

    >>> g2 = graph_from_json(g.to_json())        # doctest: +SKIP
    """
    with gc_paused():
        return graph_from_parsed(parse(text))


def graph_from_parsed(data: Any, who: str = "graphwidget.load_json") -> GradGraph:
    """:func:`from_dict`, then the parsed records of a version 1 document are untracked from the cyclic GC (plain
    data, no cycles; a version 2 graph does this when it builds its networkx graph)."""
    g = from_dict(data, who)
    mod = _core() if g.held is None else None
    if mod is not None:  # spare the collector its pass over every node's many small containers
        for part in adjacency(g.nx):
            mod.untrack_tree(part)
    return g


def validate(data: Any) -> Any:
    """Check a parsed graph document of either version (2: columns, :mod:`.columns`; 1: records,
    :func:`.schema.validate`) and return it; a broken one raises :class:`~graphwidget.SchemaError` naming the node
    and the field."""
    if schema.check_envelope(data) >= 2:
        columns.decode(data)
        return data
    return schema.validate(data)


def from_dict(data: Any, who: str = "graphwidget.load_json") -> GradGraph:
    """Build a :class:`GradGraph` from the JSON form already parsed into Python objects (validated first), of
    either version: 2 (columns) or 1 (records)."""
    try:
        version = schema.check_envelope(data)
        if version >= 2:
            return _from_columns(data, who)
        schema.validate(data)
    except schema.SchemaError as exc:
        raise schema.SchemaError(f"{who}: {exc}") from None
    nodes = data["nodes"]
    extra = schema.unknown_node_keys(nodes)
    if extra:
        _dropped(who, extra)
    meta = dict(data.get("meta") or {})
    keys = schema.node_keys(meta)
    g = build_digraph(
        ((n["id"], {k: n.get(k) for k in keys}) for n in nodes),
        ((e["source"], e["target"], {k: e.get(k) for k in schema.EDGE_KEYS}) for e in data["edges"]))
    return _graph(g, meta, data)


def _dropped(who: str, keys: List[str]) -> None:
    warnings.warn(f"{who}: dropped node keys this release does not know: {', '.join(keys)}.",
                  UserWarning, stacklevel=4)


def _graph(g: Any, meta: Dict[str, Any], data: Dict[str, Any], held: Any = None) -> GradGraph:
    graph = GradGraph(g, meta, held=held)
    findings = data.get("findings")
    if isinstance(findings, list):
        graph.findings = findings
    return graph


def _from_columns(data: Dict[str, Any], who: str) -> GradGraph:
    """Version 2: validate and decode the columns and hold them (:class:`~.held.HeldColumns`); the networkx graph
    is built from them in bulk on first use of ``GradGraph.nx``."""
    ids, cols, src, tgt, ecols, extra = columns.decode(data)
    if extra:
        _dropped(who, extra)
    meta = dict(data.get("meta") or {})
    return _graph(None, meta, data, HeldColumns(ids, cols, src, tgt, ecols, schema.node_keys(meta)))

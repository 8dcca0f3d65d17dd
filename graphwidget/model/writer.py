"""Writing the JSON form of a graph (``docs/schema.md``); :mod:`.io` reads it back.

Version 2 (the default) writes nodes and edges as columns (:mod:`.columns`): what files, diff and N-way documents
hold; version 1 (one record per node and per edge) is still written on request and read.
The model does not know the compiled core: the package's ``__init__`` registers the capture stage's loader here as an
*accelerator* when torch is importable, and reading uses it (:mod:`.io`, :mod:`.held`) to untrack parsed JSON from
the cycle collector; without it (and without torch) the same graphs are read, only slower.
This module needs no :class:`~graphwidget.model.GradGraph` import (it reads ``nx``, ``meta`` and ``findings``), so the
graph can use it and the reader can build graphs without a cycle between them.
"""
from __future__ import annotations

import gzip
import json
from itertools import chain, repeat
from operator import itemgetter
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Dict, Iterator, List, Optional, Sequence, Tuple

from .._util.gc import gc_paused
from . import schema
from ._digraph import adjacency
from .columns import encode_column

if TYPE_CHECKING:  # pragma: no cover
    from .graph import GradGraph

#: A function returning the compiled core module (or None); registered by ``graphwidget/__init__.py``.
_accelerator: Optional[Callable[[], Any]] = None


def register_accelerator(provider: Callable[[], Any]) -> None:
    """Let :func:`~graphwidget.model.io.graph_from_json` and a loaded graph's first ``.nx`` use the compiled core
    returned by ``provider()`` when it is built (to untrack parsed JSON and built dicts from the cycle collector)."""
    global _accelerator
    _accelerator = provider


def registered_core() -> Any:
    """The registered compiled core, or ``None``."""
    return _accelerator() if _accelerator is not None else None


def to_dict(graph: "GradGraph", version: int = schema.VERSION) -> Dict[str, Any]:
    """The JSON form as Python objects: version 3 (columns) by default; ``version=2`` gives columns in the four flat
    forms only (what releases before version 3 read), ``version=1`` one record per node and per edge."""
    if version == 1:
        return _records(graph)
    if version not in schema.READ_VERSIONS:
        raise ValueError(f"to_dict writes version {', '.join(map(str, schema.READ_VERSIONS))}; got {version!r}.")
    out = dict(_head(graph, version))
    out["nodes"], out["edges"] = _columns(graph, nested=version >= 3)
    if graph.findings is not None:
        out["findings"] = graph.findings
    return out


def _head(graph: "GradGraph", version: int = schema.VERSION) -> Dict[str, Any]:
    return {"format": schema.FORMAT, "version": version, "meta": dict(graph.meta)}


def _records(graph: "GradGraph") -> Dict[str, Any]:
    node, succ, _ = adjacency(graph.nx)
    keys = schema.node_keys(graph.meta)
    out: Dict[str, Any] = {
        **_head(graph, 1),
        "nodes": [{"id": n, **{k: d.get(k) for k in keys}} for n, d in node.items()],
        "edges": [{"source": u, "target": v, **{k: d.get(k) for k in schema.EDGE_KEYS}}
                  for u, nbrs in succ.items() for v, d in nbrs.items()],
    }
    if graph.findings is not None:
        out["findings"] = graph.findings
    return out


def _columns(graph: "GradGraph", nested: bool = True) -> Tuple[Dict[str, Any], Dict[str, Any]]:
    """Version 2's and 3's ``nodes`` and ``edges``: ``{"count": n, "id": column, key: column, ...}``
    (:mod:`.columns`; ``nested``: version 3, which may split a column of lists or records into columns)."""
    node, succ, _ = adjacency(graph.nx)
    attrs = list(node.values())
    nodes: Dict[str, Any] = {"count": len(attrs), "id": encode_column(list(node))}
    keys = schema.node_keys(graph.meta)
    for k, values in zip(keys, _fields(attrs, keys)):
        nodes[k] = encode_column(values, nested)
    # in the order networkx iterates them (by source, then target): the order the reader rebuilds
    src = list(chain.from_iterable(map(repeat, succ, map(len, succ.values()))))
    tgt = list(chain.from_iterable(succ.values()))
    eattrs = list(chain.from_iterable(map(dict.values, succ.values())))
    edges: Dict[str, Any] = {"count": len(src), "source": encode_column(src), "target": encode_column(tgt)}
    for k, values in zip(schema.EDGE_KEYS, _fields(eattrs, schema.EDGE_KEYS)):
        edges[k] = encode_column(values, nested)
    return nodes, edges


def _fields(records: List[Dict[str, Any]], keys: Sequence[str]) -> List[List[Any]]:
    """:func:`_field` of each key. The keys the first record has are read in one pass over the records (a tuple per
    record, then transposed): one visit per record rather than one per key and record, which on big graphs costs
    more than the encoding."""
    have = [k for k in keys if records and k in records[0]]
    got: Dict[str, List[Any]] = {}
    if len(have) > 1:
        try:
            got = dict(zip(have, map(list, zip(*map(itemgetter(*have), records)))))
        except KeyError:  # a record without one of them: key by key
            pass
    return [got[k] if k in got else _field(records, k) for k in keys]


def _field(records: List[Dict[str, Any]], key: str) -> List[Any]:
    """``record.get(key)`` of every record (an absent key is null)."""
    try:
        return list(map(itemgetter(key), records))
    except KeyError:
        return [d.get(key) for d in records]


def iter_json(graph: "GradGraph", version: int = schema.VERSION) -> Iterator[str]:
    """The version 3 (or 2) JSON text in pieces (one per column), for writing a file without building one string."""
    dumps = json.JSONEncoder(separators=(",", ":"), allow_nan=False).encode
    nodes, edges = _columns(graph, nested=version >= 3)
    head = dumps(_head(graph, version))
    yield head[:-1]
    for name, block in (("nodes", nodes), ("edges", edges)):
        sep = "{"
        yield f',"{name}":'
        for key, col in block.items():
            yield f'{sep}"{key}":'
            yield _column_text(col, dumps)
            sep = ","
        yield "}"
    if graph.findings is not None:
        yield ',"findings":'
        yield dumps(graph.findings)
    yield "}"


def _column_text(col: Any, dumps: Callable[[Any], str]) -> str:
    """``dumps(col)``, with a table's index (a row count of small integers) written from the text of each of its
    values, made once per table entry rather than once per row."""
    if isinstance(col, dict) and "index" in col:
        digits = list(map(str, range(len(col["table"]))))
        return f'{{"table":{dumps(col["table"])},"index":[{",".join(map(digits.__getitem__, col["index"]))}]}}'
    return dumps(col)


def to_json(graph: "GradGraph", indent: Optional[int] = None, version: int = schema.VERSION) -> str:
    """Serialise to the versioned JSON form (version 3, columns, unless ``version=2``: the flat column forms older
    releases read, or ``version=1``: records); :func:`graphwidget.load_json` reads it back exactly."""
    if version in (2, 3) and indent is None:
        try:
            with gc_paused():
                return "".join(iter_json(graph, version))
        except ValueError as exc:  # NaN / Infinity somewhere
            raise _nan_error(exc) from None
    with gc_paused():
        try:
            return json.dumps(to_dict(graph, version), indent=indent, separators=None if indent else (",", ":"),
                              allow_nan=False)
        except ValueError as exc:  # NaN / Infinity somewhere
            raise _nan_error(exc) from None


def _nan_error(exc: ValueError) -> ValueError:
    return ValueError(f"GradGraph.to_json: {exc}; a node attribute holds NaN or Infinity, which JSON cannot carry. "
                      f"Set it to None.")


def save(graph: "GradGraph", path: Any) -> Path:
    """Write the graph's JSON (version 3) to ``path`` piece by piece; a name ending in ``.gz`` (``g.json.gz``) is
    gzip-compressed. Returns the path; :func:`graphwidget.load` reads it back."""
    p = Path(path)
    try:
        with gc_paused(), (gzip.open(p, "wt", encoding="utf-8", compresslevel=6) if p.suffix == ".gz"
                           else open(p, "w", encoding="utf-8")) as f:
            f.writelines(iter_json(graph))
    except ValueError as exc:  # NaN / Infinity somewhere: no half-written file left behind
        p.unlink(missing_ok=True)
        raise _nan_error(exc) from None
    return p


def save_document(text: str, path: Any) -> Path:
    """Write a document's JSON text (a diff's, an N-way comparison's) to ``path``; a name ending in ``.gz`` is
    gzip-compressed, as :func:`save` does for graphs. A write that fails leaves no half-written file behind."""
    p = Path(path)
    try:
        with (gzip.open(p, "wt", encoding="utf-8", compresslevel=6) if p.suffix == ".gz"
              else open(p, "w", encoding="utf-8")) as f:
            f.write(text)
    except BaseException:
        p.unlink(missing_ok=True)
        raise
    return p

"""A whole version 2 or 3 document's ``nodes`` and ``edges`` decoded and validated (:func:`decode`): the ids, every
node column, the edges (ends that name nodes, no self-loop, no cycle), the edge columns and the roots."""
from __future__ import annotations

import itertools
import operator
from typing import Any, Callable, Dict, List, Optional, Tuple

from .. import schema
from ..schema import SchemaError, _show, _where
from ._base import Column
from .checks import _check_column, _node_check, _row_of, _split_ok
from .read import Split, _ints, _least_step, _span, column_rows, decode_column


def _block(doc: Dict[str, Any], name: str) -> Tuple[Dict[str, Any], Any]:
    block = doc.get(name)
    if not isinstance(block, dict):
        raise SchemaError(f"a version {schema.VERSION} graph document needs \"{name}\" as an object of columns "
                          f"(\"count\" and one column per field: docs/schema.md); got {_show(block)}.")
    n = block.get("count")
    if not schema._nonneg_int(n):
        raise SchemaError(f"{name}.count must be the number of {name} (a non-negative integer); got {_show(n)}.")
    return block, n


Decoded = Tuple[List[int], Dict[str, Column], List[int], List[int], Dict[str, Column], List[str]]


def decode(doc: Dict[str, Any]) -> Decoded:
    """Validate a version 2 document's ``nodes`` and ``edges`` (its envelope and ``meta`` are checked by
    :func:`graphwidget.model.schema.check_envelope`) and return ``(ids, node columns, sources, targets, edge columns,
    unknown node keys)``: every column decoded to one value per row. Raises :class:`SchemaError` naming the node (its
    id and row) or the edge and the field, with the words version 1 uses."""
    nodes, n = _block(doc, "nodes")
    edges, m = _block(doc, "edges")
    nested = doc.get("version", schema.VERSION) >= 3  # the lists and fields forms
    ids, dense = _node_ids(nodes, n)
    cols, unknown = _node_columns(nodes, n, ids, nested)
    src, tgt, high, one_way = _edge_ends(edges, m, n, dense)
    idset: Any = range(n) if dense else set(ids)
    _edges_within(src, tgt, m, n, high, dense, idset, one_way)
    ecols = _edge_columns(edges, m, src, tgt, nested)
    meta = doc.get("meta") or {}
    roots = meta.get("roots") or []  # ids (check_envelope checked their types)
    if roots and (not (max(roots) < n) if dense else not idset.issuperset(roots)):
        r = next(r for r in roots if r not in idset)
        raise SchemaError(f"meta.roots names node {r}, which is not in \"nodes\".")
    if not one_way:
        _acyclic(ids, src, tgt, dense, cols.get("seq"))
    if doc.get("findings") is not None:
        schema.validate_findings(doc["findings"], idset)
    return ids, cols, src, tgt, ecols, sorted(unknown)


def _node_ids(nodes: Dict[str, Any], n: int) -> Tuple[List[int], bool]:
    """The ``id`` column, checked (non-negative, exact in the viewer, unique), and whether it is ``0 .. n - 1``."""
    if "id" not in nodes:
        raise SchemaError("nodes.id is missing: every node has an id (a column of non-negative integers).")
    ids, ints = _ints(nodes["id"], n, "nodes.id")
    # increasing first (the writer's case), so that the bounds are the ends; a delta column says so in its steps
    step = _least_step(nodes["id"]) if ints else None
    increasing = ints and (step > 0 if step is not None else all(map(operator.lt, ids, itertools.islice(ids, 1, None))))
    if n and (not ints or (ids[0] if increasing else min(ids)) < 0
              or (ids[-1] if increasing else max(ids)) > schema.MAX_SAFE_INT):
        k = next(k for k, x in enumerate(ids) if not schema._nonneg_int(x))
        raise SchemaError(f"nodes[{k}]: \"id\" must be a non-negative integer (at most 2**53 - 1, the largest the "
                          f"viewer holds exactly); got {_show(ids[k])}.")
    dense = increasing and (n == 0 or (ids[0] == 0 and ids[-1] == n - 1))
    if not increasing:
        seen: Dict[int, int] = {}
        for k, x in enumerate(ids):
            if seen.setdefault(x, k) != k:
                raise SchemaError(f"node id {x} appears twice (nodes[{k}]); ids must be unique.")
    return ids, dense


def _node_columns(nodes: Dict[str, Any], n: int, ids: List[int], nested: bool
                  ) -> Tuple[Dict[str, Column], List[str]]:
    """Every node column but ``id``, decoded and checked, and the keys no version defines."""
    cols: Dict[str, Column] = {}
    unknown: List[str] = []
    for key, col in nodes.items():
        if key in ("count", "id"):
            continue
        at = f"nodes.{key}"
        values, table, index = decode_column(col, n, at, nested)
        if key not in schema._NODE and key not in schema.NODE_KEYS:
            unknown.append(key)
        ok, make = _node_check(key)

        def text(k: int, v: Any, make: Callable[[Any], str] = make, at: str = at) -> str:
            return f"{_where(k, ids[k]) if k >= 0 else at}: {make(v)}"
        _check_decoded(values, table, index, n, ok, text, at)
        cols[key] = (values, table, index)
    op_values, op_table, op_index = cols.get("op", (None, None, None))
    held = op_table if op_table is not None else op_values
    if held is not None and None in held:  # the one field that may not be null
        j = held.index(None)
        row = j if op_table is None else _row_of(j, op_index, n)
        if row is not None:
            raise SchemaError(f"{_where(row, ids[row])}: {_node_check('op')[1](None)}")
    if "op" not in cols:
        raise SchemaError("nodes.op is missing: every node names its op (a column of strings such as "
                          "\"MulBackward0\").")
    return cols, unknown


def _check_decoded(values: Any, table: Optional[List[Any]], index: Optional[List[int]], n: int,
                   ok: Callable[[Any], bool], text: Callable[[int, Any], str], at: str) -> None:
    """One decoded column's values checked: a split column by its parts first, row by row only when they fail."""
    if not isinstance(values, Split):
        _check_column(values, table, index, n, ok, text, at)
    elif not _split_ok(values, ok):
        _check_column(values.rows(), None, None, n, ok, text, at)


def _edge_ends(edges: Dict[str, Any], m: int, n: int, dense: bool) -> Tuple[List[int], List[int], int, bool]:
    """The ``source`` and ``target`` columns, checked as node ids; a bound at or above the largest end (found from
    the columns' forms where they tell it); and whether every edge points the same way along the ids (then no
    self-loop and no cycle need looking for)."""
    for key in ("source", "target"):
        if key not in edges:
            raise SchemaError(f"edges.{key} is missing: every edge has a source and a target (columns of node ids).")
    src, src_ints = _ints(edges["source"], m, "edges.source")
    tgt, tgt_ints = _ints(edges["target"], m, "edges.target")
    low = high = 0
    one_way = True
    if m and src_ints and tgt_ints:
        forward = all(map(operator.lt, src, tgt))
        backward = not forward and all(map(operator.gt, src, tgt))
        one_way = forward or backward
        a, b = _span(edges["source"], src)
        if forward:  # every target lies above its source, so above the sources' least
            low, high = a, max(tgt)
        elif backward:  # every target lies below its source (the writer's case: ids grow from the root)
            low, high = min(tgt), b
        else:
            c, d = _span(edges["target"], tgt)
            low, high = min(a, c), max(b, d)
        if low < 0 or high > schema.MAX_SAFE_INT or (dense and high >= n):  # a table's span may exceed the rows'
            low, high = min(min(src), min(tgt)), max(max(src), max(tgt))
    if m and (not (src_ints and tgt_ints) or low < 0 or high > schema.MAX_SAFE_INT):
        k = next(k for k in range(m) if not (schema._nonneg_int(src[k]) and schema._nonneg_int(tgt[k])))
        raise SchemaError(f"edges[{k}]: \"source\" and \"target\" must be node ids (non-negative integers); got "
                          f"{_show(src[k])}, {_show(tgt[k])}.")
    return src, tgt, high, one_way


def _edges_within(src: List[int], tgt: List[int], m: int, n: int, high: int, dense: bool, idset: Any,
                  one_way: bool) -> None:
    """Every edge's ends name nodes (``high``: :func:`_edge_ends`' bound), and no edge is a self-loop."""
    if m and (not (high < n) if dense else not (idset.issuperset(src) and idset.issuperset(tgt))):
        k = next(k for k in range(m) if src[k] not in idset or tgt[k] not in idset)
        missing = src[k] if src[k] not in idset else tgt[k]
        raise SchemaError(f"edges[{k}] ({src[k]} -> {tgt[k]}) names node {missing}, which is not in \"nodes\".")
    if not one_way and any(map(operator.eq, src, tgt)):
        k = next(k for k in range(m) if src[k] == tgt[k])
        raise SchemaError(f"edges[{k}] is a self-loop on node {src[k]}; an autograd graph has none.")


def _edge_columns(edges: Dict[str, Any], m: int, src: List[int], tgt: List[int], nested: bool
                  ) -> Dict[str, Column]:
    """Every edge column but the ends, decoded and checked."""
    ecols: Dict[str, Column] = {}
    for key, col in edges.items():
        if key in ("count", "source", "target"):
            continue
        at = f"edges.{key}"
        values, table, index = decode_column(col, m, at, nested)
        check = schema._EDGE.get(key)
        ok: Callable[[Any], bool] = check[0] if check is not None else (lambda v: schema._plain(v, 1))

        def text(k: int, v: Any, key: str = key, check: Any = check, at: str = at) -> str:
            what = check[1](key, v) if check is not None else schema._plain_text(v, key, 1)
            return f"edges[{k}] ({src[k]} -> {tgt[k]}): {what}" if k >= 0 else f"{at}: {what}"
        _check_decoded(values, table, index, m, ok, text, at)
        ecols[key] = (values, table, index)
    return ecols


#: Below every integer: a node without a sequence number only starts edges in the bulk proof of :func:`_acyclic`.
_BELOW = float("-inf")


def _acyclic(ids: List[int], src: List[int], tgt: List[int], dense: bool, seq: Optional[Column] = None) -> None:
    """Refuse a cycle, naming nodes on it: Kahn's algorithm over row positions (the caller has seen that the edges do
    not all point the same way along the ids, which would prove there is none: the writer's common case). First, in
    bulk: a node column that rises along every edge proves there is none as well, and autograd's sequence numbers
    usually do (``seq``: an edge runs from an input's node to its consumer's, made later; a leaf has none)."""
    n = len(ids)
    if dense:
        su, tv = src, tgt
    else:
        row = {x: k for k, x in enumerate(ids)}
        su, tv = list(map(row.__getitem__, src)), list(map(row.__getitem__, tgt))
    if seq is not None and not isinstance(seq[0], Split):
        pot = column_rows(seq, n)
        if None in pot:
            pot = [_BELOW if v is None else v for v in pot]
        if all(map(operator.lt, map(pot.__getitem__, su), map(pot.__getitem__, tv))):
            return
    indeg = [0] * n
    succ: List[List[int]] = [[] for _ in range(n)]
    for u, v in zip(su, tv):
        succ[u].append(v)
        indeg[v] += 1
    on_cycle = sorted(ids[k] for k in schema.cycle_nodes(succ, indeg, range(n)))
    if on_cycle:
        raise SchemaError(f"the edges form a cycle (through nodes {on_cycle}); an autograd graph is acyclic.")

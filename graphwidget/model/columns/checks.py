"""A decoded column's values against its field's check (:mod:`graphwidget.model.schema`), in bulk: a table's distinct
values once, an index by bounds, a raw column by type sets; only a failing column is looked at row by row, for the
message version 1 gives."""
from __future__ import annotations

import itertools
import operator
from typing import Any, Callable, Dict, Iterable, List, Optional, Sequence, Tuple

from .. import schema
from ..schema import SchemaError, _show
from ._base import _NONE, Column
from .read import Split, _ints_within


def _split_ok(split: Split, ok: Callable[[Any], bool]) -> bool:
    """Whether every row of ``split`` passes ``ok``, decided on its parts where ``ok`` is a records check
    (:data:`_RECORDS`: a list of records per row, or a record) and the records are a ``fields`` column: each field
    checked once per distinct value, the stride against the shape once per distinct pair. False only sends the caller
    to the row-by-row check, which finds the culprit (or, for a table entry no row uses, accepts)."""
    records = _RECORDS.get(ok)
    if records is None:
        return False
    spec, many, nullable, depth = records
    inner = split
    if many:
        if split.lengths is None:
            return False
        values = split.parts[""][0]
        if not isinstance(values, Split):
            return False
        inner = values
        if inner.nulls and not nullable:
            return False
    if inner.lengths is not None:
        return False
    for key, part in inner.parts.items():
        check = spec.get(key)
        values, table, index = part
        given = table if table is not None else (values.rows() if isinstance(values, Split) else values)
        assert given is not None
        if check is None:
            if not all(schema._plain(v, depth + 1) for v in given if v is not None):
                return False
        elif not _all_ok(given, check[0]):
            return False
    if "stride" in spec and "shape" in inner.parts and "stride" in inner.parts:
        pairs = set(zip(_codes(inner.parts["shape"], inner.count), _codes(inner.parts["stride"], inner.count)))
        shapes, strides = _code_values(inner.parts["shape"]), _code_values(inner.parts["stride"])
        return all(schema._strides_match({"shape": shapes[a], "stride": strides[b]}) for a, b in pairs)
    return True


def _codes(column: "Column", n: int) -> Iterable[int]:
    """A code per row whose value is ``_code_values(column)[code]``."""
    values, table, index = column
    if table is not None:
        return itertools.repeat(0, n) if index is None else index
    return range(n)


def _code_values(column: "Column") -> Sequence[Any]:
    values, table, _ = column
    if table is not None:
        return table
    return values.rows() if isinstance(values, Split) else values  # type: ignore[return-value]


def _all_ok(values: Sequence[Any], ok: Callable[[Any], bool]) -> bool:
    """Every value null or accepted by ``ok``, decided in bulk (type sets and bounds over the whole column, records
    field by field) where ``ok`` is one of the schema's known checks, value by value otherwise. Never true where one
    value alone would be refused: a quick "no" only sends the caller to the value-by-value search for the culprit."""
    types = set(map(type, values))
    nulls = _NONE in types
    types.discard(_NONE)
    if not types:
        return True
    if ok is schema._is_str:
        return types == {str}
    if ok is schema._is_bool:
        return types == {bool}
    if ok is schema._nonneg_int or ok is schema._is_int:
        # the bounds over the non-zero values (filter(None, ...) drops the nulls, and 0 is within bounds)
        return types == {int} and _ints_within(filter(None, values) if nulls else values,
                                               0 if ok is schema._nonneg_int else -schema.MAX_SAFE_INT)
    given = [v for v in values if v is not None] if nulls else values
    if ok is schema._dims:
        return types == {list} and _ints_within(itertools.chain.from_iterable(given), 0)
    records = _RECORDS.get(ok)
    if records is not None:
        spec, many, nullable, depth = records
        if many:  # a list of records per value
            if types != {list}:
                return False
            given = list(itertools.chain.from_iterable(given))
            kinds = set(map(type, given))
            if _NONE in kinds:
                if not nullable:
                    return False
                kinds.discard(_NONE)
                given = [r for r in given if r is not None]
            if not kinds:
                return True
            types = kinds
        return types == {dict} and _records_ok(given, spec, depth)
    return all(map(ok, given))


def _records_ok(records: Sequence[Any], spec: schema._Spec, depth: int) -> bool:
    """Every record (a dict) follows ``spec`` (:func:`graphwidget.model.schema._fault` finds nothing), checked key by
    key over all the records at once."""
    keys = dict.fromkeys(itertools.chain.from_iterable(records))
    for key in keys:
        values = list(map(operator.methodcaller("get", key), records))
        check = spec.get(key)
        if check is None:
            if not all(schema._plain(v, depth + 1) for v in values if v is not None):
                return False
        elif not _all_ok(values, check[0]):
            return False
    return "stride" not in spec or "stride" not in keys or all(map(schema._strides_match, records))


#: Node and edge checks whose values are records: the record spec, whether a value is a list of them, whether that
#: list may hold nulls, and the depth the records sit at (what schema._fault is given).
_RECORDS: Dict[Callable[[Any], bool], Tuple[schema._Spec, bool, bool, int]] = {
    schema._NODE["tensor"][0]: (schema._LEAF, False, False, 1),
    schema._NODE["outputs"][0]: (schema._OUTPUT, True, True, 2),
    schema._NODE["saved"][0]: (schema._SAVED, True, False, 2),
    schema._EDGE["also"][0]: (schema._CONNECTION, True, False, 2),
}


def _first_bad(values: Sequence[Any], ok: Callable[[Any], bool]) -> Optional[int]:
    """The first position whose value is neither null nor accepted by ``ok``, or None (checked in bulk first:
    :func:`_all_ok`)."""
    if _all_ok(values, ok):
        return None
    return next((k for k, v in enumerate(values) if v is not None and not ok(v)), None)


def _row_of(j: int, index: Optional[List[int]], n: int) -> Optional[int]:
    """The first row holding table entry ``j`` (a constant column: row 0 when there are rows), or None."""
    if index is None:
        return 0 if n else None
    return index.index(j) if j in index else None


def _check_column(values: Optional[List[Any]], table: Optional[List[Any]], index: Optional[List[int]], n: int,
                  ok: Callable[[Any], bool], message: Callable[[int, Any], str], at: str) -> None:
    """Raise the message for the first row whose value ``ok`` refuses (a table: each distinct value checked once)."""
    if table is not None:
        j = _first_bad(table, ok)
        if j is None:
            return
        k = _row_of(j, index, n)
        if k is not None:
            raise SchemaError(message(k, table[j]))
        raise SchemaError(f"{at}.table[{j}] (no row uses it): {message(-1, table[j]).split(': ', 1)[-1]}")
    assert values is not None
    k = _first_bad(values, ok)
    if k is not None:
        raise SchemaError(message(k, values[k]))


def _nonempty_str(v: Any) -> bool:
    return isinstance(v, str) and bool(v)


def _node_check(key: str) -> Tuple[Callable[[Any], bool], Callable[[Any], str]]:
    """The check of one node field, and the words for a value it refuses (version 1's, :mod:`.schema`)."""
    if key == "op":
        return _nonempty_str, lambda v: (f"\"op\" is missing or not a string (every node names its op, e.g. "
                                         f"\"MulBackward0\"); got {_show(v)}.")
    check = schema._NODE.get(key)
    if check is None:  # a key this release does not know: plain JSON (it is dropped)
        return (lambda v: schema._plain(v, 1)), (lambda v: schema._plain_text(v, key, 1))
    return check[0], (lambda v: check[1](key, v))

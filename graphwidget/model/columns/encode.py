"""Writing a column: the form (values, constant, table, delta; from version 3 lists and fields) that keeps each field
small and fast to read (:func:`encode_column`)."""
from __future__ import annotations

import itertools
import json
import marshal
import operator
from typing import Any, Dict, List, Optional

from .. import schema
from ._base import _NONE, _SCALARS


def _scalar_keys(values: List[Any], types: set) -> List[Any]:
    """Keys of scalar values (strings, numbers, booleans, nulls) that are equal exactly when the values serialise to
    the same JSON (``1``, ``1.0`` and ``true`` differ)."""
    if types <= {str, _NONE} or types <= {int, _NONE}:
        return values
    if float in types:  # 0.0 == -0.0, yet they write different JSON: a float is keyed by its text
        return [(float, repr(v)) if type(v) is float else (type(v), v) for v in values]
    return list(zip(map(type, values), values))


def _shared_objects_column(values: List[Any]) -> Optional[Any]:
    """:func:`encode_column` of lists or objects that rows share, or None when a sample of the first rows shows an
    object per row (a graph built record by record: keying every row, as the caller then does, is cheaper than the
    ids' own dictionaries).

    A captured or loaded graph shares its records between rows (one ``outputs`` list per distinct sequence): each
    distinct *object* is keyed once (every value is alive here, so an id names one object) by :func:`_marshal_keys`,
    and only three passes go over the rows."""
    head = values[:_SAMPLE]
    if len(set(map(id, head))) * 2 > len(head):
        return None
    n = len(values)
    ids = list(map(id, values))
    objects = dict(zip(ids, values))  # each object once, in the order of its first row
    key_of = dict(zip(objects, _marshal_keys(list(objects.values()))))
    distinct = dict.fromkeys(key_of.values())  # in the order of each key's first row
    if len(distinct) == 1:
        return {"const": values[0]}
    if len(distinct) * 2 > n:
        return values
    pos = {k: j for j, k in enumerate(distinct)}
    first = dict(zip(reversed(key_of.values()), reversed(objects.values())))  # a key's object in its first row
    row_pos = dict(zip(key_of, map(pos.__getitem__, key_of.values())))
    return {"table": list(map(first.__getitem__, distinct)), "index": list(map(row_pos.__getitem__, ids))}


def _marshal_keys(values: List[Any]) -> List[Any]:
    """Keys of lists and objects: their bytes in marshal's format, which keep types, key order and nesting like repr
    and are written faster (version 2 has no back-references, so equal values give equal bytes); a value marshal does
    not know (a str subclass, say) falls back to repr."""
    try:
        return list(map(marshal.dumps, values, itertools.repeat(2)))
    except ValueError:
        return list(map(repr, values))


def encode_column(values: List[Any], nested: bool = True, depth: int = 1) -> Any:
    """The most compact form for one column's values (all plain JSON): one of the four flat forms, or (``nested``,
    version 3) a column of lists or records split into columns of their items or fields, where the flat forms would
    keep a mostly distinct value per row."""
    flat = _encode_flat(values)
    if not nested or depth >= schema.MAX_DEPTH or not values or flat is not values and (
            not isinstance(flat, dict) or len(flat.get("table", ())) < _TABLE_WORTH_SPLITTING):
        return flat
    split = _split(values, depth)
    table: Optional[List[Any]] = flat["table"] if isinstance(flat, dict) else None
    if split is None or table is not None and len(_dumps(split)) >= len(_dumps(table)) + 2 * len(values):
        return flat  # a table whose entries are small: kept (the comparison is of the texts, the index ~2 B a row)
    return split


def _split(values: List[Any], depth: int) -> Optional[Dict[str, Any]]:
    """The ``lists`` form of a column whose every row is a list (its items one column, the lengths another) or the
    ``fields`` form of one whose every row is an object with the same keys in the same order (a column per key),
    each inner column encoded in turn; None when neither applies or splitting gains nothing (items with nothing in
    common). Records that differ in one field only (a fresh scalar saved per node: only its storage id changes) then
    cost that field's few bytes per row instead of the whole record."""
    types = set(map(type, values))
    if not types & {list, dict}:
        return None
    if types == {list}:
        items = list(itertools.chain.from_iterable(values))
        if not items:
            return None
        inner = encode_column(items, True, depth + 1)
        if inner is items:
            return None
        return {"lists": inner, "lengths": encode_column(list(map(len, values)), False)}
    if types <= {dict, _NONE}:
        nulls = [k for k, v in enumerate(values) if v is None] if _NONE in types else []
        if nulls:
            values = [v for v in values if v is not None]
        keys = tuple(values[0])
        if not keys or not all(map(keys.__eq__, map(tuple, values))):
            return None
        if len(keys) == 1:
            fields = [list(map(operator.itemgetter(keys[0]), values))]
        else:
            fields = list(map(list, zip(*map(operator.itemgetter(*keys), values))))
        out: Dict[str, Any] = {"fields": {k: encode_column(f, True, depth + 1) for k, f in zip(keys, fields)}}
        if nulls:
            # increasing row numbers: their steps (a plain list or a delta column, the two forms readers take)
            out["nulls"] = {"delta": [nulls[0], *map(operator.sub, nulls[1:], nulls[:-1])]} if len(nulls) > 1 else nulls
        return out
    return None


def _encode_flat(values: List[Any]) -> Any:
    """The most compact of the four flat forms for one column's values (all plain JSON)."""
    n = len(values)
    if n == 0:
        return []
    v0 = values[0]
    if (v0 is None or type(v0) is str) and values.count(v0) == n:
        return {"const": v0}  # only null equals null and only a string a string: no type pass needed
    types = set(map(type, values))
    if len(types) == 1 and (types <= _SCALARS and values.count(values[0]) == n
                            or types <= {list, dict} and not any(values)):
        # every row holds one value (a scalar of one type: equal is the same JSON; or every row an empty list or
        # object): found without building a key per row, as most columns of a big graph are constant
        return {"const": values[0]}
    if types == {int} and all(map(operator.le, values, itertools.islice(values, 1, None))):
        # sorted integers (ids, the edges' sources): their steps are small and read back in two cheap passes, where a
        # table of them costs an index as long as the rows plus a bounds check of it
        return {"delta": [values[0], *map(operator.sub, values[1:], values[:-1])]}
    if types <= _SCALARS | {float}:
        keys = _scalar_keys(values, types)
    else:
        shared = _shared_objects_column(values)
        if shared is not None:
            return shared
        keys = _marshal_keys(values)
    # mostly distinct (a unique code line per node, sequence numbers): a set says so more cheaply than the ordered
    # dict a table needs; a sample of the first rows decides which to try first, the whole column decides the form
    head = keys[:_SAMPLE]
    if len(set(head)) * 2 > len(head) and len(set(keys)) * 2 > n:
        distinct: Dict[Any, None] = {}
    else:
        distinct = dict.fromkeys(keys)  # first appearance order
    if len(distinct) == 1:
        return {"const": values[0]}
    if distinct and len(distinct) * 2 <= n:
        pos = {k: i for i, k in enumerate(distinct)}
        if keys is values:
            table = list(distinct)
        else:
            one = dict(zip(keys, values))  # a value per key (values with one key write the same JSON)
            table = [one[k] for k in distinct]
        return {"table": table, "index": list(map(pos.__getitem__, keys))}
    if types == {int} and n > 1:
        return {"delta": [values[0], *map(operator.sub, values[1:], values[:-1])]}
    return values


#: Entries from which a table of lists or records is worth trying to split (below, its text is small anyway).
_TABLE_WORTH_SPLITTING = 16
_dumps = json.JSONEncoder(separators=(",", ":"), allow_nan=False).encode


#: Rows :func:`encode_column` looks at first to guess whether a column is mostly distinct.
_SAMPLE = 4096

"""Versions 2 and 3 of the graph document: nodes and edges as columns (docs/schema.md, "Version 2: columns").

A column holds one field of every node (or edge), in one of four flat forms the writer picks per column:

* ``[v0, v1, ...]`` — the values themselves, one per row (fields that rarely repeat: ``seq``, unique code lines);
* ``{"const": v}`` — every row holds ``v`` (``saved: []`` on a graph without saved tensors, ``source: null`` ...);
* ``{"table": [t0, t1, ...], "index": [i0, i1, ...]}`` — the distinct values once, each row an index into them
  (op names, shapes and dtypes of the outputs, sources, code lines, module paths: what repeats);
* ``{"delta": [d0, d1, ...]}`` — integers as their differences (row ``k`` holds ``d0 + ... + dk``): ids, an
  edge's source and target;

or, from version 3, one of two forms that split a column of structured values into columns of their parts, where
the flat forms would keep a mostly distinct value per row (records that differ in one field):

* ``{"lists": column, "lengths": column}`` — every row a list: the items of all rows, in order, as one column,
  and each row's length;
* ``{"fields": {key: column, ...}}`` — every row an object with the same keys in the same order: a column per key.

Reading validates per column, not per record: a table's distinct values are checked once with the field's own check
(:mod:`.schema`), an index is checked in bulk (all integers, in range), a raw column by type sets and bounds. Only
when something is wrong is the offending row looked up, and the message is the one version 1 gives for that record
(the node's id and row, the field, what to write instead). Torch-free.
"""
from __future__ import annotations

import collections
import itertools
import json
import marshal
import operator
from typing import Any, Callable, Dict, Iterable, List, Optional, Sequence, Tuple

from . import schema
from .schema import SchemaError, _show, _where

#: The forms a column may take (docs/schema.md), besides a plain list.
COLUMN_FORMS = ("const", "table", "delta")

_NONE = type(None)


# -- writing ----------------------------------------------------------------------------------------------------------
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

#: Types whose values are equal exactly when they write the same JSON (within one type).
_SCALARS = {str, int, bool, _NONE}


# -- reading ----------------------------------------------------------------------------------------------------------
def _form_text(at: str, n: int, got: Any) -> str:
    return (f"{at} must be a column: a list of {n} values, {{\"const\": value}}, {{\"table\": [...], \"index\": "
            f"[...]}} or {{\"delta\": [integers]}} (docs/schema.md); got {_show(got)}.")


def _int_list(v: Any) -> bool:
    """A list of plain integers (no true/false, no floats), checked in bulk."""
    return isinstance(v, list) and (_marshalled_ints(v) is not None or set(map(type, v)) <= {int})


def _marshalled_ints(v: List[Any]) -> Optional[bytes]:
    """``v`` in marshal's format when every entry is a plain integer that fits 32 bits, else None. Each such entry is
    written as the byte ``i`` and four bytes (true and false, floats, other integers and anything else in other
    ways), so a text of exactly that length whose every fifth byte is ``i`` proves it, entry by entry from the first:
    a C pass and two byte counts, cheaper than a type per entry."""
    d = marshal.dumps(v, 2)
    n = len(v)
    return d if len(d) == 5 + 5 * n and d[5::5].count(b"i") == n else None


def _indices_within(index: List[Any], size: int) -> bool:
    """Every entry a plain integer (no true/false) from 0 to ``size - 1``, checked in bulk: the types in one pass and,
    for a table of at most 256 entries (most of a big graph's), the bounds by converting to bytes and deleting the
    allowed ones, which is several times cheaper than ``min`` and ``max``."""
    if not index:
        return True
    if size <= 256:
        d = _marshalled_ints(index)
        if d is not None:  # entry k's value is bytes 6 + 5k to 9 + 5k, little-endian: below 256 when the top 3 are 0
            n = len(index)
            return (d[7::5].count(0) == n and d[8::5].count(0) == n and d[9::5].count(0) == n
                    and not d[6::5].translate(None, _BYTE_VALUES[:size]))
    if not _int_list(index):
        return False
    if size <= 256:
        try:
            return not bytes(index).translate(None, _BYTE_VALUES[:size])
        except ValueError:  # below 0 or above 255
            return False
    return min(index) >= 0 and max(index) < size


_BYTE_VALUES = bytes(range(256))


def decode_column(col: Any, n: int, at: str, nested: bool = True) -> "Column":
    """``(values, table, index)`` for the column ``col`` of ``n`` rows (``at``: where it sits, for messages): a plain
    or delta column has its values per row (no table); a table column its table and index (row ``k`` holds
    ``table[index[k]]``; no values list is built); a constant one the table ``[value]`` alone; a ``lists`` or
    ``fields`` column (version 3: ``nested``) a :class:`Split` in place of the values, whose rows are built when
    first asked for. The values are not checked here, only the column's shape and its index."""
    if isinstance(col, list):
        if len(col) != n:
            raise SchemaError(f"{at} has {len(col)} values but there are {n} rows; one value per row.")
        return col, None, None
    if not isinstance(col, dict) or len(col) == 0:
        raise SchemaError(_form_text(at, n, col))
    if "const" in col and len(col) == 1:
        return None, [col["const"]], None  # no index: every row holds the one value
    if "delta" in col and len(col) == 1:
        d = col["delta"]
        if not _int_list(d) or len(d) != n:
            raise SchemaError(f"{at}.delta must be a list of {n} integers (row k holds the sum of the first k + 1); "
                              f"got {_show(d)}.")
        return list(itertools.accumulate(d)), None, None
    if set(col) == {"table", "index"}:
        table, index = col["table"], col["index"]
        if not isinstance(table, list):
            raise SchemaError(f"{at}.table must be a list of values; got {_show(table)}.")
        if not isinstance(index, list) or len(index) != n:
            raise SchemaError(f"{at}.index must be a list of {n} indices into {at}.table, one per row; got "
                              f"{_show(index)}.")
        if not _indices_within(index, len(table)):
            k = next(k for k, x in enumerate(index) if type(x) is not int or not 0 <= x < len(table))
            raise SchemaError(f"{at}.index[{k}] must be an index into {at}.table (0 to {len(table) - 1}); got "
                              f"{_show(index[k])}.")
        return None, table, index
    if nested and set(col) == {"lists", "lengths"}:
        lengths, _ = _ints(col["lengths"], n, f"{at}.lengths")
        if not _ints_within(lengths, 0):
            k = next(k for k, x in enumerate(lengths) if not schema._nonneg_int(x))
            raise SchemaError(f"{at}.lengths[{k}] must be the length of row {k}'s list (a non-negative integer); got "
                              f"{_show(lengths[k])}.")
        total = sum(lengths)
        return Split(lengths, {"": decode_column(col["lists"], total, f"{at}.lists")}, total), None, None
    if nested and (set(col) == {"fields"} or set(col) == {"fields", "nulls"}):
        fields = col["fields"]
        if not isinstance(fields, dict) or not fields:
            raise SchemaError(f"{at}.fields must be an object with a column per key of the rows' objects; got "
                              f"{_show(fields)}.")
        nulls: Optional[List[int]] = None
        if "nulls" in col:
            rows = _count_of(col["nulls"])
            nulls, ints = _ints(col["nulls"], rows, f"{at}.nulls") if rows >= 0 else ([], False)
            if not ints or not all(map(operator.lt, nulls, itertools.islice(nulls, 1, None))) or (
                    nulls and (nulls[0] < 0 or nulls[-1] >= n)):
                raise SchemaError(f"{at}.nulls must list the null rows, increasing row numbers from 0 to {n - 1}; got "
                                  f"{_show(col['nulls'])}.")
        count = n - len(nulls or ())
        parts = {k: decode_column(c, count, f"{at}.fields.{k}") for k, c in fields.items()}
        return Split(None, parts, count, nulls), None, None
    raise SchemaError(_form_text(at, n, col) if nested or not ({"lists", "fields"} & set(col))
                      else f"{at}: the lists and fields forms of a column are version 3's (docs/schema.md); this "
                           f"document says version 2. Write it again with this release, or set its version to 3.")


class Split:
    """A ``lists`` or ``fields`` column as read (:func:`decode_column`): its inner columns, kept as decoded until a
    row is needed, so that reading a file does not build a record per saved tensor. ``lengths``: each row's list
    length (``lists``; ``parts[""]`` is then the items' column) or None (``fields``: ``parts`` by key, in the rows'
    key order); ``count``: the rows of the parts."""

    __slots__ = ("lengths", "parts", "count", "nulls", "_rows")

    def __init__(self, lengths: Optional[List[int]], parts: Dict[str, "Column"], count: int,
                 nulls: Optional[List[int]] = None) -> None:
        self.lengths, self.parts, self.count, self.nulls = lengths, parts, count, nulls
        self._rows: Optional[List[Any]] = None

    def rows(self) -> List[Any]:
        """The value of every row (built once)."""
        if self._rows is None:
            if self.lengths is not None:
                items = column_rows(self.parts[""], self.count)
                ends = list(itertools.accumulate(self.lengths))
                self._rows = list(map(items.__getitem__, map(slice, [0, *ends[:-1]], ends)))
            else:
                self._rows = _records(self.parts, self.count)
                if self.nulls:
                    self._rows = _with_nulls(self._rows, self.nulls)
        return self._rows

    def __len__(self) -> int:
        return len(self.lengths) if self.lengths is not None else self.count + len(self.nulls or ())


def _with_nulls(records: List[Any], nulls: List[int]) -> List[Any]:
    """``records`` with a null at each of the rows ``nulls`` (increasing), in order."""
    rows: List[Any] = [None] * (len(records) + len(nulls))
    null = bytearray(len(rows))
    for k in nulls:
        null[k] = 1
    present = [k for k, x in enumerate(null) if not x]
    collections.deque(map(rows.__setitem__, present, records), maxlen=0)
    return rows


def _count_of(col: Any) -> int:
    """The entries of a plain or delta column (the forms a list of null rows may take), else -1."""
    if isinstance(col, list):
        return len(col)
    d = col.get("delta") if isinstance(col, dict) and len(col) == 1 else None
    return len(d) if isinstance(d, list) else -1


def _records(parts: Dict[str, "Column"], n: int) -> List[Dict[str, Any]]:
    """``n`` dicts, field ``k`` of row ``r`` from ``parts[k]``: a template holding the constant fields copied per row,
    then each varying field stored into every row by the interpreter's own loops (no Python frame per row)."""
    template: Dict[str, Any] = {}
    varying: List[Tuple[str, Iterable[Any]]] = []
    for k, (values, table, index) in parts.items():
        if values is None and index is None:
            assert table is not None
            template[k] = table[0]
        else:
            template[k] = None
            varying.append((k, column_rows((values, table, index), n)))
    rows = list(map(dict.copy, itertools.repeat(template, n)))
    for k, it in varying:
        collections.deque(map(operator.setitem, rows, itertools.repeat(k), it), maxlen=0)
    return rows


def column_rows(column: "Column", n: int) -> List[Any]:
    """Every row's value of a decoded column (:func:`decode_column`) of ``n`` rows, as a list."""
    values, table, index = column
    if isinstance(values, Split):
        return values.rows()
    if values is not None:
        return values
    assert table is not None
    return [table[0]] * n if index is None else list(map(table.__getitem__, index))


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


def _ints(col: Any, n: int, at: str) -> Tuple[List[Any], bool]:
    """The values of an id column (ids, an edge's ends) per row, whatever its form, and whether they are all plain
    integers (decided on the deltas or the table, not row by row; the bounds are the caller's to check)."""
    values, table, index = decode_column(col, n, at, nested=False)
    if values is not None:  # a delta column's deltas were checked to be integers
        return values, isinstance(col, dict) or set(map(type, values)) <= {int}
    assert table is not None
    ints = set(map(type, table)) <= {int}
    return ([table[0]] * n if index is None else list(map(table.__getitem__, index))), ints


def _span(col: Any, values: List[int]) -> Tuple[int, int]:
    """Bounds that hold every value of the integer column ``col`` (``values``: its rows, at least one): a table's
    smallest and largest entry (fewer than the rows, maybe wider than the rows use); a sorted delta column's ends
    (found on its steps: one pass, not two); else the rows' own."""
    if isinstance(col, dict):
        table = col.get("table")
        if table:
            return min(table), max(table)
        step = _least_step(col)
        if step is not None and step >= 0:
            return values[0], values[-1]
    return min(values), max(values)


def _least_step(col: Any) -> Optional[int]:
    """The smallest step between consecutive rows of a delta column (of integers, at least two rows), else None."""
    d = col.get("delta") if isinstance(col, dict) else None
    return min(itertools.islice(d, 1, None)) if d is not None and len(d) > 1 else None


def _ints_within(values: Iterable[Any], low: int) -> bool:
    """All plain integers (no true/false) from ``low`` to 2**53 - 1 (an empty list: true)."""
    nums = values if isinstance(values, list) else list(values)
    return set(map(type, nums)) <= {int} and (not nums or (min(nums) >= low and max(nums) <= schema.MAX_SAFE_INT))


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


def _block(doc: Dict[str, Any], name: str) -> Tuple[Dict[str, Any], Any]:
    block = doc.get(name)
    if not isinstance(block, dict):
        raise SchemaError(f"a version {schema.VERSION} graph document needs \"{name}\" as an object of columns "
                          f"(\"count\" and one column per field: docs/schema.md); got {_show(block)}.")
    n = block.get("count")
    if not schema._nonneg_int(n):
        raise SchemaError(f"{name}.count must be the number of {name} (a non-negative integer); got {_show(n)}.")
    return block, n


#: A decoded column: ``(values per row, None, None)``, ``(None, table, index per row)``, ``(None, [value], None)`` or
#: ``(Split, None, None)`` (a lists or fields column, its rows built on first use: :func:`column_rows`).
Column = Tuple[Any, Optional[List[Any]], Optional[List[int]]]
Decoded = Tuple[List[int], Dict[str, Column], List[int], List[int], Dict[str, Column], List[str]]


def decode(doc: Dict[str, Any]) -> Decoded:
    """Validate a version 2 document's ``nodes`` and ``edges`` (its envelope and ``meta`` are checked by
    :func:`graphwidget.model.schema.check_envelope`) and return ``(ids, node columns, sources, targets, edge columns,
    unknown node keys)``: every column decoded to one value per row. Raises :class:`SchemaError` naming the node (its
    id and row) or the edge and the field, with the words version 1 uses."""
    nodes, n = _block(doc, "nodes")
    edges, m = _block(doc, "edges")
    nested = doc.get("version", schema.VERSION) >= 3  # the lists and fields forms
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
    # -- node columns
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
        if not isinstance(values, Split):
            _check_column(values, table, index, n, ok, text, at)
        elif not _split_ok(values, ok):
            _check_column(values.rows(), None, None, n, ok, text, at)
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
    # -- edges
    for key in ("source", "target"):
        if key not in edges:
            raise SchemaError(f"edges.{key} is missing: every edge has a source and a target (columns of node ids).")
    src, src_ints = _ints(edges["source"], m, "edges.source")
    tgt, tgt_ints = _ints(edges["target"], m, "edges.target")
    low = high = 0
    one_way = True  # every edge points the same way along the ids: no self-loop, no cycle
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
    idset: Any = range(n) if dense else set(ids)
    if m and (not (high < n) if dense else not (idset.issuperset(src) and idset.issuperset(tgt))):
        k = next(k for k in range(m) if src[k] not in idset or tgt[k] not in idset)
        missing = src[k] if src[k] not in idset else tgt[k]
        raise SchemaError(f"edges[{k}] ({src[k]} -> {tgt[k]}) names node {missing}, which is not in \"nodes\".")
    if not one_way and any(map(operator.eq, src, tgt)):
        k = next(k for k in range(m) if src[k] == tgt[k])
        raise SchemaError(f"edges[{k}] is a self-loop on node {src[k]}; an autograd graph has none.")
    ecols: Dict[str, Column] = {}
    for key, col in edges.items():
        if key in ("count", "source", "target"):
            continue
        at = f"edges.{key}"
        values, table, index = decode_column(col, m, at, nested)
        check = schema._EDGE.get(key)
        ok2: Callable[[Any], bool] = check[0] if check is not None else (lambda v: schema._plain(v, 1))

        def etext(k: int, v: Any, key: str = key, check: Any = check, at: str = at) -> str:
            what = check[1](key, v) if check is not None else schema._plain_text(v, key, 1)
            return f"edges[{k}] ({src[k]} -> {tgt[k]}): {what}" if k >= 0 else f"{at}: {what}"
        if not isinstance(values, Split):
            _check_column(values, table, index, m, ok2, etext, at)
        elif not _split_ok(values, ok2):
            _check_column(values.rows(), None, None, m, ok2, etext, at)
        ecols[key] = (values, table, index)
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

"""Reading one column back to its rows: the forms, the lazy :class:`Split` of a lists or fields column, and the
integer columns (ids, edge ends) read in bulk."""
from __future__ import annotations

import collections
import itertools
import marshal
import operator
from typing import Any, Dict, Iterable, List, Optional, Tuple

from .. import schema
from ..schema import SchemaError, _show
from ._base import Column


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

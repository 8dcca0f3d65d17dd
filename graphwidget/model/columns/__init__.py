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

The modules, in the order a file's columns meet them: :mod:`.encode` (the writer's choice of form per column),
:mod:`.read` (one column back to its rows: forms, splits, integer columns), :mod:`.checks` (a column's values against
its field's check, in bulk) and :mod:`.document` (a whole document's nodes and edges: ids, columns, edges, roots, no
cycle).
"""
from __future__ import annotations

from ._base import COLUMN_FORMS, Column
from .document import Decoded, decode
from .encode import encode_column
from .read import Split, column_rows, decode_column

__all__ = ["COLUMN_FORMS", "Column", "Decoded", "Split", "column_rows", "decode", "decode_column", "encode_column"]

"""What the column modules share: the forms' names, the scalar types, the decoded column's shape."""
from __future__ import annotations

from typing import Any, List, Optional, Tuple

#: The forms a column may take (docs/schema.md), besides a plain list.
COLUMN_FORMS = ("const", "table", "delta")
_NONE = type(None)
#: Types whose values are equal exactly when they write the same JSON (within one type).
_SCALARS = {str, int, bool, _NONE}


#: A decoded column: ``(values per row, None, None)``, ``(None, table, index per row)``, ``(None, [value], None)`` or
#: ``(Split, None, None)`` (a lists or fields column, its rows built on first use: :func:`column_rows`).
Column = Tuple[Any, Optional[List[Any]], Optional[List[int]]]

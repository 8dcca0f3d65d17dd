"""Plain-text formatting shared by reports, tables and error messages."""
from __future__ import annotations

import html
from typing import Any, Dict, List, Optional, Tuple


def human_bytes(n: Optional[float]) -> str:
    """``4718592`` -> ``"4.5 MiB"``; ``None`` -> ``"?"``."""
    if n is None:
        return "?"
    sign = "-" if n < 0 else ""
    n = abs(n)
    for unit in ("B", "KiB", "MiB", "GiB"):
        if n < 1024 or unit == "GiB":
            return f"{sign}{n:.0f} {unit}" if unit == "B" else f"{sign}{n:.1f} {unit}"
        n /= 1024
    return f"{sign}{n} B"  # pragma: no cover


class TextTable(list):
    """Rows (dicts) that print as an aligned text table and render as an HTML table in notebooks; subclasses name
    their ``columns`` and say how a row becomes cells (``_cells``). Every cell is escaped in HTML."""

    columns: Tuple[str, ...] = ()

    def _cells(self, row: Dict[str, Any]) -> List[str]:
        return [str(row.get(c)) for c in self.columns]

    def __str__(self) -> str:
        cells = [self._cells(r) for r in self]
        widths = [max([len(c)] + [len(row[i]) for row in cells]) for i, c in enumerate(self.columns)]
        lines = ["  ".join(c.ljust(w) for c, w in zip(self.columns, widths))]
        lines += ["  ".join(v.ljust(w) for v, w in zip(row, widths)) for row in cells]
        return "\n".join(lines)

    def __repr__(self) -> str:
        return str(self)

    def _repr_html_(self) -> str:
        head = "".join(f"<th>{html.escape(c)}</th>" for c in self.columns)
        body = "".join("<tr>" + "".join(f"<td>{html.escape(v)}</td>" for v in self._cells(r)) + "</tr>"
                       for r in self)
        return f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"

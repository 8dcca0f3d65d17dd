"""Plain-text formatting shared by reports, tables and error messages."""
from __future__ import annotations

from typing import Optional


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

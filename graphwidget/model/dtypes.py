"""Sizes from a graph's dtype names and shapes, without torch: the analyses (memory accounting, the advisor's
estimates) count bytes from the names the schema writes (``"float32"``), so a graph read back from JSON gives the
same figures as the live capture."""
from __future__ import annotations

from typing import Optional, Sequence

#: Bytes per element of the dtypes an edge or a saved tensor can carry (names as the schema writes them).
ITEMSIZE = {
    "float64": 8, "float32": 4, "float16": 2, "bfloat16": 2, "complex128": 16, "complex64": 8, "complex32": 4,
    "int64": 8, "int32": 4, "int16": 2, "int8": 1, "uint8": 1, "uint16": 2, "uint32": 4, "uint64": 8, "bool": 1,
    "float8_e4m3fn": 1, "float8_e5m2": 1, "float8_e4m3fnuz": 1, "float8_e5m2fnuz": 1,
}


def itemsize(dtype: Optional[str]) -> Optional[int]:
    """Bytes per element of a dtype name (``"float32"`` or ``"torch.float32"`` -> 4); ``None`` when unknown."""
    if not dtype:
        return None
    name = dtype[6:] if dtype.startswith("torch.") else dtype
    return ITEMSIZE.get(name)


def numel(shape: Optional[Sequence[int]]) -> Optional[int]:
    """Elements in a tensor of ``shape``; ``None`` when the shape is unknown."""
    if shape is None:
        return None
    n = 1
    for s in shape:
        n *= s
    return n


def nbytes(shape: Optional[Sequence[int]], dtype: Optional[str]) -> Optional[int]:
    """numel x element size, or ``None`` when either is unknown."""
    n, size = numel(shape), itemsize(dtype)
    return None if n is None or size is None else n * size

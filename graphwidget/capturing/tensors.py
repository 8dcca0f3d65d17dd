"""Facts about a tensor, as plain JSON-able values.

Every captured node describes the tensors around it with the same small record, so the rules that look for slow
patterns (non-contiguous inputs, huge repeated tensors, ...) and the viewers read one format.
"""
from __future__ import annotations

from typing import Any, Dict, Optional, Tuple

import torch

# dtype -> "float32" etc.; str(torch.float32) is "torch.float32", and str() per call costs more than a dict lookup.
_DTYPE_NAMES: Dict[torch.dtype, str] = {}


def dtype_name(dtype: torch.dtype) -> str:
    """``torch.float32`` -> ``"float32"``."""
    name = _DTYPE_NAMES.get(dtype)
    if name is None:
        name = str(dtype).replace("torch.", "")
        _DTYPE_NAMES[dtype] = name
    return name


_DEVICE_NAMES: Dict[Any, str] = {}


def device_name(device: torch.device) -> str:
    """``device(type='cpu')`` -> ``"cpu"``, ``cuda:0`` stays ``"cuda:0"``."""
    name = _DEVICE_NAMES.get(device)
    if name is None:
        name = str(device)
        _DEVICE_NAMES[device] = name
    return name


def memory_format(t: torch.Tensor) -> str:
    """Name the layout: contiguous, channels_last(_3d), non_contiguous or sparse/unknown."""
    layout = t.layout
    if layout is not torch.strided:
        return "sparse" if layout in _SPARSE_LAYOUTS else "unknown"
    if t.is_contiguous():
        return "contiguous"
    dim = t.dim()
    if dim == 4 and t.is_contiguous(memory_format=torch.channels_last):
        return "channels_last"
    if dim == 5 and t.is_contiguous(memory_format=torch.channels_last_3d):
        return "channels_last_3d"
    return "non_contiguous"


_SPARSE_LAYOUTS = {
    getattr(torch, name)
    for name in ("sparse_coo", "sparse_csr", "sparse_csc", "sparse_bsr", "sparse_bsc")
    if hasattr(torch, name)
}


def _storage(t: torch.Tensor) -> Tuple[Optional[Tuple[str, int]], Optional[int]]:
    """(identity key, bytes) of the tensor's storage, or (None, None) where it has none (sparse, meta...)."""
    try:
        st = t.untyped_storage()
        return (device_name(t.device), st.data_ptr()), st.nbytes()
    except (RuntimeError, NotImplementedError, TypeError):
        return None, None


def tensor_record(t: torch.Tensor) -> Dict[str, Any]:
    """Shape, stride, dtype, device, layout and sizes of ``t``.

    ``bytes`` is the size of the view (numel x element size); ``storage_bytes`` the size of the memory behind it, which
    is what a saved tensor really keeps alive (a slice of a huge tensor keeps the whole storage).
    The private key ``_storage_key`` identifies the storage inside one capture; it is replaced by a small
    graph-local integer before the record leaves the capture.
    """
    layout = t.layout
    if t.is_nested:  # ragged: no single shape or strides; its components' shapes are in the forward outputs
        return _nested_record(t)
    strided = layout is torch.strided
    numel = t.numel()
    nbytes = numel * t.element_size()
    fmt = memory_format(t)
    rec: Dict[str, Any] = {
        "shape": list(t.shape),
        "stride": list(t.stride()) if strided else None,
        "dtype": dtype_name(t.dtype),
        "device": device_name(t.device),
        "contiguous": fmt == "contiguous",  # memory_format already asked; non-strided layouts are never contiguous
        "memory_format": fmt,
        "bytes": nbytes,
    }
    if strided:
        key, sbytes = _storage(t)
    else:
        # Sparse tensors have no single storage: count values + indices as what they keep alive.
        key, sbytes = ("sparse", id(t)), _sparse_bytes(t)
        rec["bytes"] = sbytes
    rec["storage_bytes"] = sbytes
    rec["_storage_key"] = key
    return rec


def _nested_record(t: torch.Tensor) -> Dict[str, Any]:
    """A nested (ragged) tensor: no shape/stride (``None``), memory format ``"nested"``, sizes from its buffer."""
    nbytes = t.numel() * t.element_size()
    key, sbytes = _storage(t)
    return {
        "shape": None, "stride": None, "dtype": dtype_name(t.dtype), "device": device_name(t.device),
        "contiguous": False, "memory_format": "nested", "bytes": nbytes,
        "storage_bytes": sbytes if sbytes is not None else nbytes, "_storage_key": key,
    }


def _sparse_bytes(t: torch.Tensor) -> int:
    try:
        if t.layout is torch.sparse_coo:
            v, i = t._values(), t._indices()
            return v.numel() * v.element_size() + i.numel() * i.element_size()
        total = 0
        for getter in ("values", "crow_indices", "col_indices", "ccol_indices", "row_indices"):
            fn = getattr(t, getter, None)
            if fn is None:
                continue
            try:
                part = fn()
            except RuntimeError:
                continue
            total += part.numel() * part.element_size()
        return total
    except RuntimeError:
        return 0


def freed_record(name: str) -> Dict[str, Any]:
    """A saved tensor that backward() already released: its name survives, nothing else does."""
    return {
        "name": name, "shape": None, "stride": None, "dtype": None, "device": None, "contiguous": None,
        "memory_format": None, "bytes": 0, "storage_bytes": 0, "storage": None, "freed": True, "packed": None,
        "stale": False,
    }


#: What torch says when a saved tensor was modified in place after it was saved (its version moved on).
_STALE_WORDS = "modified by an inplace operation"


def is_stale_error(exc: BaseException) -> bool:
    """Whether unpacking a saved tensor failed because it was modified in place after the forward (backward would
    fail the same way), as opposed to having been released by backward()."""
    return _STALE_WORDS in str(exc)


def packed_kind(unpack_hook: Any, data: Any) -> str:
    """``"checkpoint"`` for torch.utils.checkpoint's (non-reentrant) hooks, ``"hooks"`` for any other
    ``saved_tensors_hooks`` (``save_on_cpu``, user hooks)."""
    module = getattr(unpack_hook, "__module__", None) or ""
    if module.startswith("torch.utils.checkpoint") or type(data).__module__.startswith("torch.utils.checkpoint"):
        return "checkpoint"
    return "hooks"


def stale_record(name: str) -> Dict[str, Any]:
    """A saved tensor modified in place after it was saved, on a torch that cannot show its data without unpacking
    it (torch < 2.5 has no ``SavedTensor.data``): it is there and stale (backward will fail), its shape unknown."""
    rec = freed_record(name)
    rec["freed"] = False
    rec["stale"] = True
    return rec


def packed_record(name: str, raw: Any) -> Dict[str, Any]:
    """A saved tensor behind saved-tensor hooks (``raw`` is its ``torch._C._autograd.SavedTensor``).

    What it holds is whatever the pack hook returned; the tensor exists again only when the unpack hook runs —
    for a checkpoint that *re-runs the forward* (BatchNorm statistics move, time and memory are spent), for
    ``save_on_cpu`` a copy back to the device. So it is never unpacked here: it is described as packed, with no
    shape and no bytes held in the graph's own memory (that is what checkpointing is for).
    """
    rec = freed_record(name)
    rec["freed"] = False
    rec["packed"] = packed_kind(raw.unpack_hook, raw.data)
    return rec


def jsonable(value: Any) -> Any:
    """Turn a non-tensor saved value (int, tuple of SymInts, dtype, None, ...) into JSON."""
    if value is None or isinstance(value, (bool, int, float, str)):
        if isinstance(value, float) and (value != value or value in (float("inf"), float("-inf"))):
            return repr(value)  # NaN / inf are not valid JSON
        return value
    if isinstance(value, (tuple, list, torch.Size)):
        return [jsonable(v) for v in value]
    if isinstance(value, torch.dtype):
        return dtype_name(value)
    if isinstance(value, torch.device):
        return device_name(value)
    try:
        return int(value)  # SymInt and friends
    except (TypeError, ValueError):
        return repr(value)


def numel(shape: Tuple[int, ...]) -> int:
    """Elements of a tensor of this shape."""
    n = 1
    for s in shape:
        n *= s
    return n


_ITEMSIZE: Dict[Any, int] = {}


def itemsize(dtype: torch.dtype) -> int:
    """Bytes of one element of ``dtype`` (cached: asked once per node)."""
    size = _ITEMSIZE.get(dtype)
    if size is None:
        size = _ITEMSIZE[dtype] = torch.empty((), dtype=dtype).element_size()
    return size

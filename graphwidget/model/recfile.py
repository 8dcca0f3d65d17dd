"""The file a recording is saved in (``rec.save("a.gwrec")``): one file in the safetensors layout, written and read
here by hand, so that loading it can never run code (no pickle, no ``torch.load``). Torch-free: tensors are raw
little-endian bytes; :mod:`graphwidget.experiment.recording` turns them into tensors.

The layout (the same as the ``safetensors`` package's, which can open the file too)::

    8 bytes     N, the header's length, an unsigned little-endian integer
    N bytes     the header: UTF-8 JSON, padded with spaces to a multiple of 8 bytes
                {"__metadata__": {"format": "graphwidget-recording", "version": "1", "graphwidget": "0.1.0",
                                  "sha256": "<hex>"},
                 "<name>": {"dtype": "F32", "shape": [2, 3], "data_offsets": [begin, end]}, ...}
    the data    every tensor's bytes, C order, one after the other from offset 0 (offsets count from here)

Two byte blobs hold the documents: ``_record`` (the recording's JSON: names, rows, environment, digests) and
``_graph`` (the captured graph's own JSON, :meth:`GradGraph.to_json`), both as ``U8`` tensors. ``sha256`` is the
digest of the tensor table (canonical JSON) followed by the data: a truncated file, a header that no longer matches
its data, or any edited byte is refused with a ``ValueError`` saying which, before anything is decoded.
"""
from __future__ import annotations

import hashlib
import json
import os
import struct
import sys
import tempfile
from pathlib import Path
from typing import Any, Dict, Iterable, List, Optional, Tuple

FORMAT = "graphwidget-recording"
#: The version this release writes, and the versions it reads.
VERSION = 1
READ_VERSIONS = (1,)
#: The file name ending :meth:`Recording.save` suggests (any name works: files are recognised by their content).
SUFFIX = ".gwrec"

#: Bytes per element of each safetensors dtype (``C128``, complex128, is not in the safetensors standard).
ITEMSIZE: Dict[str, int] = {
    "BOOL": 1, "U8": 1, "I8": 1, "I16": 2, "U16": 2, "F16": 2, "BF16": 2, "I32": 4, "U32": 4, "F32": 4, "F64": 8,
    "I64": 8, "U64": 8, "F8_E4M3": 1, "F8_E5M2": 1, "C64": 8, "C128": 16,
}
#: Larger headers are refused unread (the safetensors package's own limit): the documents live in the data.
MAX_HEADER = 100 * 1024 * 1024
_PREFIX = b'{"__metadata__":{"format":"' + FORMAT.encode() + b'"'

Blob = Tuple[str, List[int], bytes]  # (dtype, shape, raw bytes)


class RecordingFileError(ValueError):
    """A file that is not a readable recording: truncated, edited, foreign or from a newer release."""


def _fail(path: Any, msg: str) -> RecordingFileError:
    return RecordingFileError(f"graphwidget.load: {path}: {msg}")


def _little_endian() -> None:
    if sys.byteorder != "little":  # pragma: no cover - no big-endian machine runs torch's wheels
        raise RuntimeError("graphwidget recordings are little-endian; this machine is big-endian.")


def sniff(head: bytes) -> Optional[str]:
    """What the first bytes of a file are: ``"recording"`` (this format), ``"safetensors"`` (another safetensors
    file: weights, not a recording) or ``None`` (anything else: JSON, gzip, ...)."""
    if len(head) < 9 or head[8:9] != b"{":
        return None
    n = struct.unpack("<Q", head[:8])[0]
    if n < 2 or n > MAX_HEADER:
        return None
    return "recording" if head[8:8 + len(_PREFIX)] == _PREFIX else "safetensors"


def kind(path: Any) -> Optional[str]:
    """:func:`sniff` of a file's first bytes (``None`` for a file that cannot be read)."""
    try:
        with open(path, "rb") as f:
            return sniff(f.read(64))
    except (OSError, TypeError, ValueError):
        return None


def is_recording(path: Any) -> bool:
    """Whether ``path`` is a file whose content starts like a recording (a truncated or edited one too: reading it
    then says what is wrong)."""
    return kind(path) == "recording"


def _digest(table: Dict[str, Any], data: Iterable[Any]) -> str:
    h = hashlib.sha256(json.dumps(table, sort_keys=True, separators=(",", ":")).encode())
    for chunk in data:
        h.update(chunk)
    return h.hexdigest()


def write(path: Any, tensors: Dict[str, Blob], version_of_package: str) -> Path:
    """Write ``tensors`` (name -> (dtype, shape, bytes)) to ``path`` atomically (a temporary file in the same folder,
    renamed into place): a crash never leaves half a recording under the name."""
    _little_endian()
    table: Dict[str, Any] = {}
    offset = 0
    for name, (dtype, shape, raw) in tensors.items():
        _check_entry(name, dtype, shape, len(raw), "graphwidget.save")
        table[name] = {"dtype": dtype, "shape": list(shape), "data_offsets": [offset, offset + len(raw)]}
        offset += len(raw)
    meta = {"format": FORMAT, "version": str(VERSION), "graphwidget": version_of_package,
            "sha256": _digest(table, (raw for _, _, raw in tensors.values()))}
    header = json.dumps({"__metadata__": meta, **table}, separators=(",", ":")).encode()
    header += b" " * (-len(header) % 8)
    p = Path(path)
    folder = p.parent if str(p.parent) else Path(".")
    fd, tmp = tempfile.mkstemp(dir=folder, prefix=f".{p.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(struct.pack("<Q", len(header)))
            f.write(header)
            for _, _, raw in tensors.values():
                f.write(raw)
        os.replace(tmp, p)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise
    return p


def _check_entry(name: str, dtype: Any, shape: Any, nbytes: int, who: str) -> None:
    if dtype not in ITEMSIZE:
        raise ValueError(f"{who}: tensor {name!r} has dtype {dtype!r}, not one of {', '.join(ITEMSIZE)}.")
    if not isinstance(shape, list) or not all(isinstance(s, int) and not isinstance(s, bool) and s >= 0
                                              for s in shape):
        raise ValueError(f"{who}: tensor {name!r} has shape {shape!r}; a shape is a list of integers >= 0.")
    numel = 1
    for s in shape:
        numel *= s
    if numel * ITEMSIZE[dtype] != nbytes:
        raise ValueError(f"{who}: tensor {name!r} ({dtype} {shape}) needs {numel * ITEMSIZE[dtype]} bytes, but "
                         f"{nbytes} are given.")


class Contents:
    """A recording file read and checked: ``meta`` (the header's ``__metadata__``), ``tensors`` (name -> (dtype,
    shape, begin, end) into ``data``) and ``data`` (the bytes after the header, a bytearray the tensors may share)."""

    def __init__(self, meta: Dict[str, str], tensors: Dict[str, Tuple[str, List[int], int, int]],
                 data: bytearray) -> None:
        self.meta, self.tensors, self.data = meta, tensors, data

    def blob(self, name: str) -> bytes:
        _, _, b, e = self.tensors[name]
        return bytes(self.data[b:e])

    def document(self, name: str, path: Any) -> Any:
        """The JSON document stored as the ``U8`` tensor ``name`` (``_record``, ``_graph``), parsed."""
        if name not in self.tensors:
            raise _fail(path, f"the file has no {name!r} entry, which every recording holds: it was edited or not "
                              f"written by graphwidget.")
        try:
            return json.loads(self.blob(name).decode("utf-8"), parse_constant=_no_constant)
        except (UnicodeDecodeError, ValueError) as exc:
            raise _fail(path, f"its {name!r} entry is not UTF-8 JSON ({exc}).") from None


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not valid JSON")


def read(path: Any) -> Contents:
    """Read and check a recording file (module docstring); every problem is a :class:`RecordingFileError` (a
    ``ValueError``) naming it: not a recording, truncated, a broken header, a table that does not fit the data, a
    digest that does not match (edited), a newer format version."""
    _little_endian()
    p = Path(path)
    try:
        raw = bytearray(p.read_bytes())
    except OSError as exc:
        raise _fail(p, f"cannot read it ({exc.strerror or exc}).") from None
    kind = sniff(bytes(raw[:64]))
    if kind is None:
        if len(raw) < 9:
            raise _fail(p, f"{len(raw)} bytes: too short to be a recording (truncated?).")
        raise _fail(p, "not a graphwidget recording (it does not start with a recording's header). Write one with "
                       "gw.record(fn, *inputs).save(path); gw.load reads graph, diff and recording files.")
    n = struct.unpack("<Q", bytes(raw[:8]))[0]
    if 8 + n > len(raw):
        raise _fail(p, f"truncated: the header says {n} bytes, but only {len(raw) - 8} follow the length field.")
    try:
        header = json.loads(bytes(raw[8:8 + n]).decode("utf-8"), parse_constant=_no_constant)
    except (UnicodeDecodeError, ValueError) as exc:
        raise _fail(p, f"the header is not UTF-8 JSON ({exc}): the file was edited or damaged.") from None
    if not isinstance(header, dict) or not isinstance(header.get("__metadata__"), dict):
        raise _fail(p, "the header has no __metadata__ object: not a graphwidget recording.")
    meta = header.pop("__metadata__")
    if kind != "recording" or meta.get("format") != FORMAT:
        raise _fail(p, f"a safetensors file, but not a graphwidget recording (its metadata format is "
                       f"{meta.get('format')!r}, not {FORMAT!r}): model weights are not a recording.")
    version = meta.get("version")
    if not isinstance(version, str) or not version.isdigit():
        raise _fail(p, f"the metadata version is {version!r}, not a number: the file was edited.")
    if int(version) not in READ_VERSIONS:
        wrote = meta.get("graphwidget")
        raise _fail(p, f"recording format version {version} (written by graphwidget {wrote}); this release "
                       f"({package_version()}) reads version {', '.join(map(str, READ_VERSIONS))}: upgrade "
                       f"graphwidget to read it.")
    if not all(isinstance(v, str) for v in meta.values()):
        raise _fail(p, "the metadata holds a value that is not a string (safetensors metadata are strings).")
    data = raw[8 + n:]
    tensors: Dict[str, Tuple[str, List[int], int, int]] = {}
    spans = []
    for name, entry in header.items():
        if not isinstance(entry, dict) or set(entry) != {"dtype", "shape", "data_offsets"}:
            raise _fail(p, f"header entry {name!r} is not a tensor entry (dtype, shape, data_offsets).")
        offs = entry["data_offsets"]
        if not (isinstance(offs, list) and len(offs) == 2 and all(isinstance(o, int) and not isinstance(o, bool)
                                                                   and o >= 0 for o in offs) and offs[0] <= offs[1]):
            raise _fail(p, f"header entry {name!r} has data_offsets {offs!r}; two integers begin <= end.")
        try:
            _check_entry(name, entry["dtype"], entry["shape"], offs[1] - offs[0], "the header")
        except ValueError as exc:
            raise _fail(p, str(exc)) from None
        tensors[name] = (entry["dtype"], entry["shape"], offs[0], offs[1])
        spans.append((offs[0], offs[1], name))
    spans.sort()
    end = 0
    for b, e, name in spans:
        if b != end:
            raise _fail(p, f"tensor {name!r} starts at byte {b} of the data, where {end} was expected: the entries "
                           f"overlap or leave a gap (the header was edited).")
        end = e
    if end > len(data):
        raise _fail(p, f"truncated: the tensors need {end} bytes of data, the file holds {len(data)}.")
    if end < len(data):
        raise _fail(p, f"{len(data) - end} bytes follow the last tensor: the file was appended to or edited.")
    table = {name: header[name] for name in header}
    mv = memoryview(data)
    want = meta.get("sha256")
    got = _digest(table, (mv[b:e] for b, e, _ in sorted((t[2], t[3], k) for k, t in tensors.items())))
    if got != want:
        raise _fail(p, f"its content digest does not match (sha256 {got[:16]}… instead of the recorded "
                       f"{str(want)[:16]}…): the file was edited or damaged after it was written. Record it again.")
    return Contents(meta, tensors, data)


def package_version() -> str:
    """The graphwidget version (what a recording notes it was written by)."""
    from .._version import __version__
    return __version__

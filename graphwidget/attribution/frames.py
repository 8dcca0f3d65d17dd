"""Which stack frame is the user's: the first outside torch and graphwidget (the built-in examples count as user
code: their lines are what the demo shows); and which is the library's: the innermost torch frame, for calls made
inside ``torch.nn`` (``lib_source``)."""
from __future__ import annotations

import os
import sys
from types import FrameType
from typing import Any, Callable, Dict, List, Mapping, Optional, Sequence, Tuple

import torch

from ..capturing.seq import next_seq

_TORCH_DIR = os.path.dirname(torch.__file__) + os.sep
_OWN_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep
# The built-in examples are "user code" as far as attribution goes: their lines are what the demo shows.
_USER_FILES_IN_PACKAGE = (os.path.join(_OWN_DIR, "examples", "homography.py"),)


def _is_user_file(fname: str) -> bool:
    if fname.startswith(_OWN_DIR):
        return fname in _USER_FILES_IN_PACKAGE
    return not fname.startswith((_TORCH_DIR, "<frozen "))


def user_frame(start: int = 2) -> Optional[Any]:
    """The innermost frame that belongs to the user's code (not torch, not graphwidget's internals)."""
    f: Optional[FrameType] = sys._getframe(start)
    while f is not None:
        if _is_user_file(f.f_code.co_filename):
            return f
        f = f.f_back
    return None


# torch's own dispatch plumbing: never the "library line" a node is attributed to. ``overrides.py`` hands a Python-level
# API (``F.relu``, ``F.multi_head_attention_forward``) to the active torch-function mode, and the frame that called it
# is that API re-dispatching itself; ``_jit_internal.py`` (``boolean_dispatch``) and ``_contextlib.py`` (decorators)
# only forward calls.
_OVERRIDES = os.path.join(_TORCH_DIR, "overrides.py")
_PLUMBING = (_OVERRIDES, os.path.join(_TORCH_DIR, "_jit_internal.py"),
             os.path.join(_TORCH_DIR, "utils", "_contextlib.py"))


def _is_own_file(fname: str) -> bool:
    return fname.startswith(_OWN_DIR) and fname not in _USER_FILES_IN_PACKAGE


def library_frame(start: int = 2) -> Optional[Any]:
    """The innermost frame of library code (torch) that made the current torch call, or ``None`` when that is
    the user's own code: a call made inside ``nn.MultiheadAttention`` names the line in ``torch/nn/...``, a call
    the user made directly names nothing (its ``source`` says it all)."""
    f: Optional[FrameType] = sys._getframe(start)
    while f is not None and _is_own_file(f.f_code.co_filename):
        f = f.f_back
    dispatched = False
    while f is not None and f.f_code.co_filename in _PLUMBING:
        dispatched = dispatched or f.f_code.co_filename == _OVERRIDES
        f = f.f_back
    if dispatched and f is not None:  # the API that dispatched itself to the mode (its first lines)
        f = f.f_back
        while f is not None and f.f_code.co_filename in _PLUMBING:
            f = f.f_back
    if f is None or _is_user_file(f.f_code.co_filename):
        return None
    return f


_SHORT: Dict[str, str] = {}


def short_path(fname: str) -> str:
    """``/.../site-packages/torch/nn/functional.py`` -> ``torch/nn/functional.py``: relative to the ``sys.path``
    entry it was imported from (the deepest one), so the same library line reads the same on every machine."""
    short = _SHORT.get(fname)
    if short is None:
        best = ""
        for entry in sys.path:
            root = os.path.abspath(entry or os.curdir) + os.sep
            if fname.startswith(root) and len(root) > len(best):
                best = root
        short = _SHORT[fname] = fname[len(best):] if best else fname
    return short


_CELLS: Dict[str, Optional[str]] = {}


def cell_label(fname: str) -> Optional[str]:
    """``"In[3]"`` for code an IPython/Jupyter cell compiled (its file is an opaque cache name such as
    ``/tmp/ipykernel_123/1437797225.py``), as IPython's own tracebacks name it; ``None`` for a real file or outside
    IPython. A cell's file is registered before the cell runs and never changes, so answers are kept."""
    label = _CELLS.get(fname, "")
    if label != "":
        return label
    ipython = sys.modules.get("IPython")
    shell = ipython.get_ipython() if ipython is not None else None
    name = getattr(getattr(shell, "compile", None), "format_code_name", None)  # IPython >= 8
    try:
        found = name(fname) if name is not None else None
    except Exception:  # another IPython's compiler: say the file name
        found = None
    label = _CELLS[fname] = str(found[1]) if found else None
    return label


def user_source(fname: str, line: int) -> str:
    """Where user code made a node: ``"path/to/file.py:12"``, or ``"In[3]:12"`` for a notebook cell."""
    return f"{cell_label(fname) or fname}:{line}"


def library_line(fname: str, line: int) -> Optional[str]:
    """``"torch/nn/functional.py:6093"`` for a line of library code, ``None`` for user code, graphwidget's own
    and torch's dispatch plumbing."""
    if _is_user_file(fname) or _is_own_file(fname) or fname in _PLUMBING:
        return None
    return f"{short_path(fname)}:{line}"


def traced_lines(func: Callable[..., Any], args: Sequence[Any], kwargs: Mapping[str, Any]
                 ) -> Tuple[Any, List[Tuple[int, int, str, int]]]:
    """Call ``func`` and say which line made which autograd nodes: ``(result, [(lo, hi, file, line), ...])``, the
    nodes numbered ``lo <= seq < hi`` made while that line ran.

    For Python-level torch APIs that reach the torch-function mode as *one* call (``F.multi_head_attention_forward``
    dispatches itself through ``handle_torch_function``; torch turns the mode off while it handles a call, so the
    ops inside are not seen one by one): a line tracer reads autograd's sequence counter (a plain counter read,
    cheap enough for every line) at every line event of that call, so each of its nodes gets the line inside the
    library that made it. Only the trace pass uses it (never a timed run), and only when no other tracer (a
    debugger, coverage) is installed on this thread.
    """
    if next_seq is None or sys.gettrace() is not None:
        return func(*args, **kwargs), []
    spans: List[Tuple[int, int, str, int]] = []
    state: List[Any] = [next_seq(), None, 0]  # counter at the last event, file and line that ran since

    def tracer(frame: Any, event: str, arg: Any) -> Any:
        now = next_seq()
        if now != state[0]:
            if state[1] is not None:
                spans.append((state[0], now, state[1], state[2]))
            state[0] = now
        if event == "return":  # back in the caller, still on the line that made the call
            frame = frame.f_back
        if frame is None:
            state[1] = None
        else:
            state[1], state[2] = frame.f_code.co_filename, frame.f_lineno
        return tracer

    sys.settrace(tracer)
    try:
        out = func(*args, **kwargs)
    finally:
        sys.settrace(None)
    return out, spans

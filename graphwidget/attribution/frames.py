"""Which stack frame is the user's: the first outside torch and graphwidget (the built-in examples count as user
code: their lines are what the demo shows)."""
from __future__ import annotations

import os
import sys
from typing import Any, Optional

import torch

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
    f = sys._getframe(start)
    while f is not None:
        if _is_user_file(f.f_code.co_filename):
            return f
        f = f.f_back
    return None

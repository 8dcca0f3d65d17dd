"""Rule ``materialised-expand``: ``expand`` followed by a copy (``.contiguous()``, ``.clone()``, a ``reshape`` that
has to copy) where every use would broadcast the un-copied view.

``expand`` is free (a view with stride 0); the copy after it writes the full tensor, and everything downstream then
reads and writes gradients of the full size. ``repeat_interleave`` of a size-1 dim is built the same way inside
torch; when the line says ``repeat_interleave`` the finding is reported as ``repeat-broadcast``. The proof that
broadcasting serves every use is :func:`.replicated.spread`, the same as for ``repeat-broadcast``.
"""
from __future__ import annotations

from typing import List

from .context import Context
from .finding import Finding
from .repeat_broadcast import _is_repeat, materialisation_findings

RULE = "materialised-expand"
SEVERITY = "warning"
SUMMARY = "expand(...) followed by contiguous/clone/reshape where broadcasting the view would serve"


def find(ctx: Context) -> List[Finding]:
    return materialisation_findings(ctx, RULE, lambda c: not _is_repeat(c, ctx))

"""The command line's exit statuses: one table, shown by ``python -m graphwidget --help``, ``compare --help`` and
docs/diff.md. CI reads 1 as "the result changed", so nothing else exits 1."""
from __future__ import annotations

import sys
import traceback
from typing import Dict, Tuple

#: name -> (status, meaning)
STATUS: Dict[str, Tuple[int, str]] = {
    "ok": (0, "success: the same maths (compare), the report written"),
    "not equivalent": (1, "the result changed: outputs or gradients differ beyond rounding, or are structured "
                          "differently (compare); a rank's graph differs (ranks --fail-on-divergence)"),
    "usage": (2, "a usage error, found before anything runs: bad options, a name that does not resolve, an "
                 "unwritable --out folder"),
    "slower": (3, "slower than --fail-if-slower R beyond noise (compare)"),
    "error": (4, "your code failed: a compared function or its backward raised, or the --inputs function raised"),
    "write failed": (5, "a file could not be written or read once the run started (--out, --json, the demo's "
                        "folder): disk full, permissions"),
    "build failed": (6, "build-native could not build the compiled core (compiler missing, old torch, unwritable "
                        "folder)"),
    "internal": (7, "an unexpected error inside graphwidget (a bug: rerun with --traceback and report it)"),
    "interrupted": (130, "interrupted (Ctrl-C)"),
}

#: name -> status
EXIT: Dict[str, int] = {k: v[0] for k, v in STATUS.items()}


def table_text(indent: str = "  ") -> str:
    """The table as plain text lines, for ``--help``."""
    import textwrap
    pad = indent + " " * 5
    return "\n".join(textwrap.fill(f"{code:>3}  {meaning}", width=100, initial_indent=indent, subsequent_indent=pad)
                     for code, meaning in STATUS.values())


def run_failed(command: str, exc: BaseException, show_traceback: bool) -> int:
    """Report a :class:`~graphwidget.experiment.compare.CompareError` (the user's code raised; its message already
    says which side and what): one line, the cause's traceback too with ``--traceback``; return "error"."""
    if show_traceback and exc.__cause__ is not None:
        cause = exc.__cause__
        traceback.print_exception(type(cause), cause, cause.__traceback__, file=sys.stderr)
    print(f"graphwidget {command}: ERROR: {' '.join(str(exc).split())}", file=sys.stderr)
    return EXIT["error"]


def fail(command: str, what: str, exc: BaseException, status: str, show_traceback: bool) -> int:
    """Say ``what`` went wrong in one line on stderr (the traceback too with ``--traceback``); return the status."""
    if show_traceback:
        traceback.print_exception(type(exc), exc, exc.__traceback__, file=sys.stderr)
    text = " ".join(str(exc).split())  # one line, whatever the exception's message holds
    detail = f"{type(exc).__name__}: {text}" if text else type(exc).__name__
    hint = "" if show_traceback else " (--traceback shows where)"
    print(f"graphwidget {command}: {what}: {detail}{hint}", file=sys.stderr)
    return EXIT[status]

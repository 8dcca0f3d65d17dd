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
    "output closed": (141, "the reader of the standard output left before all was written (| head): stopped "
                           "without a message, as a command a shell stops with SIGPIPE"),
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


def reader_left(exc: BaseException) -> bool:
    """Whether ``exc`` is the standard output's reader having gone (``| head`` that read enough): a broken pipe while
    the standard output is a pipe or socket. A broken pipe elsewhere (an ``--out`` FIFO) stays a failed write."""
    import errno
    import os
    import stat
    if not isinstance(exc, BrokenPipeError) and getattr(exc, "errno", None) != errno.EPIPE:
        return False
    try:
        mode = os.fstat(sys.stdout.fileno()).st_mode
    except (OSError, ValueError, AttributeError):
        return False
    return stat.S_ISFIFO(mode) or stat.S_ISSOCK(mode)


def silence_stdout() -> None:
    """Point the standard output at the null device, so that the interpreter's last flush of what is still buffered
    for the reader that left does not print a second error at exit."""
    import os
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
    except (OSError, ValueError, AttributeError):
        pass

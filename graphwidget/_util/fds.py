"""Keeping a library's own C-level chatter out of the user's output.

torch's profiler (Kineto) writes a log line to file descriptor 2 at every start and stop (``USDT: ...
profiler_start``), below Python's ``sys.stderr``, so a notebook cell shows it and ``contextlib.redirect_stderr``
cannot catch it. :func:`without_chatter` points descriptors 1 and 2 at a temporary file around such a call only,
then writes everything back to ``sys.stdout``/``sys.stderr`` except the lines it was told to drop: nothing else is
lost, not even what another thread printed meanwhile.
"""
from __future__ import annotations

import os
import re
import sys
import tempfile
from contextlib import contextmanager
from typing import Any, Dict, Iterator, Pattern

#: Kineto's own log lines: ``USDT:2026-12-01 23:01:52 11281:11281 <handler source>:52] profiler_start``
#: (older versions: ``STAGE:... <controller source>:312] Completed Stage: Warm Up``).
PROFILER_CHATTER = re.compile(r"^(USDT|STAGE):\d{4}-\d\d-\d\d \d\d:\d\d:\d\d \d+:\d+ \S+\.cpp:\d+\] ")


def _put_back(saved: Dict[int, int]) -> None:
    """Descriptors back as they were (idempotent: each is restored and taken off the list on one line)."""
    while saved:
        fd = next(iter(saved))
        os.dup2(saved[fd], fd); os.close(saved.pop(fd))  # noqa: E702


@contextmanager
def without_chatter(drop: Pattern[str] = PROFILER_CHATTER) -> Iterator[None]:
    """Inside the block, what C code writes to descriptors 1 and 2 is held back; after it, every line that ``drop``
    does not match is written to ``sys.stdout``/``sys.stderr``. Where the descriptors cannot be redirected (closed,
    or not a process of our own), the block simply runs."""
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()  # Python's buffered text goes out first, in order
        except (AttributeError, OSError, ValueError):
            pass
    try:
        files = {fd: tempfile.TemporaryFile() for fd in (1, 2)}
    except OSError:
        yield
        return
    saved: Dict[int, int] = {}
    try:
        try:
            try:
                for fd, f in files.items():
                    saved[fd] = os.dup(fd); os.dup2(f.fileno(), fd)  # noqa: E702 - one line: restorable at once
            except OSError:  # a descriptor that cannot be redirected: run as is
                _put_back(saved)
            yield
        finally:
            _put_back(saved)
    finally:
        _put_back(saved)  # again: an exception inside the first leaves this one to finish
        for fd, f in files.items():
            _echo(f, sys.stdout if fd == 1 else sys.stderr, drop)


def _echo(f: Any, stream: object, drop: Pattern[str]) -> None:
    """Write the lines held in ``f`` (but the dropped ones) to ``stream``, and close ``f``."""
    try:
        f.seek(0)
        text = f.read().decode("utf-8", "replace")
    finally:
        f.close()
    keep = "".join(line for line in text.splitlines(keepends=True) if not drop.match(line))
    if keep:
        try:
            stream.write(keep)  # type: ignore[attr-defined]
            stream.flush()  # type: ignore[attr-defined]
        except (AttributeError, OSError, ValueError):
            pass

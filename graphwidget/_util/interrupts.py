"""Cleanup that a Ctrl-C must not cut in half."""
from __future__ import annotations

import signal
import threading
from contextlib import contextmanager
from typing import Any, Iterator, List


@contextmanager
def deferred_interrupts() -> Iterator[None]:
    """Inside the block a Ctrl-C (SIGINT) is held back; after it, the held interrupt is raised as
    ``KeyboardInterrupt``. For restoring state: an interrupt half-way would leave it half restored. Only the main
    thread receives signals, so elsewhere (and where the handler cannot be set) the block simply runs."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    held: List[int] = []

    def hold(signum: int, frame: Any) -> None:
        held.append(signum)

    try:
        previous = signal.getsignal(signal.SIGINT)
        signal.signal(signal.SIGINT, previous)  # may we set it at all? (an embedded interpreter may refuse)
    except (ValueError, OSError, TypeError):
        yield
        return
    # Set inside the try, restored from two nested finally blocks: an exception at any line leaves no handler of ours.
    try:
        try:
            signal.signal(signal.SIGINT, hold)
            yield
        finally:
            signal.signal(signal.SIGINT, previous)
    finally:
        signal.signal(signal.SIGINT, previous)
    if held:
        raise KeyboardInterrupt("interrupted while graphwidget restored your tensors and settings (it finished first)")

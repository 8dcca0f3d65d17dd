"""Pause Python's cyclic garbage collector around bulk work."""
from __future__ import annotations

import contextlib
import gc
from typing import Iterator


@contextlib.contextmanager
def gc_paused() -> Iterator[None]:
    """Capture and (de)serialisation allocate millions of small containers that cannot form cycles; the cyclic GC
    would rescan the growing graph again and again, at a cost that grows faster than the graph. Pausing it is safe:
    nothing is freed later than it would be by reference counting. The disable sits inside the ``try`` so that an
    interrupt arriving right after it still switches the collector back on, and the switch back sits in two nested
    ``finally`` blocks, so that an interrupt at any line of the first still leaves the second to run."""
    was_enabled = gc.isenabled()
    try:
        try:
            gc.disable()
            yield
        finally:
            if was_enabled:
                gc.enable()
    finally:
        if was_enabled:
            gc.enable()

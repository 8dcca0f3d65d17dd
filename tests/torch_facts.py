"""What the installed torch records and exposes, for tests whose expectations are facts of a torch version.

graphwidget supports torch >= 2.4 (``.ci/matrix`` runs this suite on the oldest and the newest). Three things differ
on torch 2.4, and a test whose expectation is one of them says so here, not in a list kept elsewhere:

- ``FULL_SLICES``: torch 2.4 records a ``SliceBackward0`` for every full slice (``h[:, :, 0, 0]`` makes two slices and
  two selects; torch >= 2.5 makes two selects), so exact node counts of the seed graphs differ (73/71, not 49/59);
- ``HAS_INPUT_METADATA``: torch 2.4 has no ``grad_fn._input_metadata``: a plain capture knows a non-leaf node's
  outputs only where a consumer saved their size (``gw.trace``/``gw.profile`` record them in the forward);
- ``HAS_SAVED_HOOK_FACTS``: torch 2.4's ``SavedTensor`` has no ``unpack_hook``/``data``: capture cannot tell a saved
  tensor behind hooks (checkpoint, save_on_cpu) without unpacking it, so it unpacks it and says so;
- ``STORE_MAY_GO_FIRST``: under torch 2.4's ``torchrun`` the job's store can be gone before a rank reads another
  rank's error from it (it goes down with the process hosting it): that rank stops with "lost the job's store"
  instead of naming the other rank's error. Still a clear error, and no hang.
"""
from __future__ import annotations

import pytest
import torch

from graphwidget.capturing.compat import missing_facts

_MISSING = missing_facts()
HAS_INPUT_METADATA = "_input_metadata" not in _MISSING
HAS_SAVED_HOOK_FACTS = "SavedTensor.unpack_hook" not in _MISSING


def _records_full_slices() -> bool:
    x = torch.zeros(2, 2, requires_grad=True)
    fn = x[:, 0].grad_fn
    assert fn is not None
    nxt = fn.next_functions[0][0]
    return nxt is not None and type(nxt).__name__ == "SliceBackward0"


FULL_SLICES = _records_full_slices()

STORE_MAY_GO_FIRST = tuple(int(p) for p in torch.__version__.split("+")[0].split(".")[:2]) < (2, 5)

#: Node counts of the seed graphs (homography repeat, broadcast) on this torch.
SEED_NODES = (73, 71) if FULL_SLICES else (49, 59)

needs_input_metadata = pytest.mark.skipif(
    not HAS_INPUT_METADATA,
    reason="reads non-leaf outputs from a plain capture: torch < 2.5 has no grad_fn._input_metadata "
           "(test_native_build.py checks what it gives instead)")
needs_saved_hook_facts = pytest.mark.skipif(
    not HAS_SAVED_HOOK_FACTS,
    reason="torch < 2.5's SavedTensor has no unpack_hook/data: capture must unpack hooked saved tensors (and says so)")

from typing import Set  # noqa: E402  (appended with the helper below)

from graphwidget.model.graph import GradGraph  # noqa: E402


def full_slices(graph: GradGraph) -> Set[int]:
    """Ids of the ``SliceBackward0`` nodes that take a whole dim with step 1: torch < 2.5 records one for every ``:``
    in ``h[:, :, 0]`` (torch >= 2.5 none; ``narrow(d, 0, size)`` one on any torch), so tests that compare node counts
    or sets with newer torch's set these aside."""
    out: Set[int] = set()
    for i in graph.nodes(op="SliceBackward0"):
        a = graph.node(i).get("attrs") or {}
        sizes, dim = a.get("self_sym_sizes"), a.get("dim")
        if not isinstance(sizes, list) or not isinstance(dim, int) or a.get("step", 1) != 1:
            continue
        end = a.get("end")
        if a.get("start") in (0, None) and (end is None or end >= sizes[dim]):
            out.add(i)
    return out


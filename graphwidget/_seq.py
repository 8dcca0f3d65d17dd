"""Autograd sequence numbers: the thread-local counter autograd numbers nodes with as it creates them.

``next_seq()`` reads the number the next node will get (~0.04 µs); bracketing a call with it gives exactly the nodes
that call created. It is private torch API, so it may be ``None`` on a torch without it.
"""
from __future__ import annotations

try:
    from torch._C._autograd import _get_sequence_nr as next_seq
except ImportError:  # pragma: no cover - older torch
    next_seq = None  # type: ignore[assignment]

#: AccumulateGrad (and some graph-root nodes) report UINT64_MAX: anything at or above this is "no number".
NO_SEQ = 2**63

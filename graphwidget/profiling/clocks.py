"""Clocks for profile: CPU stamps are ``perf_counter_ns``; CUDA stamps are events on the current stream, read after
one synchronise per run (CUDA work is asynchronous: a bare wall clock would time the launch, not the work)."""
from __future__ import annotations

import time
from typing import Any

import torch


class CpuClock:
    """Stamps are ``perf_counter_ns`` integers."""

    name = "perf_counter_ns"
    stamp = staticmethod(time.perf_counter_ns)

    def sync(self) -> None:  # nothing is asynchronous on CPU
        pass

    @staticmethod
    def ms(a: Any, b: Any) -> float:
        return (b - a) / 1e6


class CudaClock(CpuClock):
    """Stamps are CUDA events recorded on the current stream; read only after :meth:`sync` (one per run)."""

    name = "cuda_event"

    def __init__(self, device: torch.device) -> None:
        self.device = device

    def stamp(self) -> Any:  # type: ignore[override]
        e = torch.cuda.Event(enable_timing=True)
        e.record()  # on the current stream: in backward, the stream the engine runs the node on
        return e

    def sync(self) -> None:
        torch.cuda.synchronize(self.device)

    @staticmethod
    def ms(a: Any, b: Any) -> float:
        return float(a.elapsed_time(b))

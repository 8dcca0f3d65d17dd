"""The profiling stage: per-node forward and backward times over repeated runs (named so that the function
``graphwidget.profile`` never shadows it; its function is :func:`run_profile`, a name of its own, which
``graphwidget.profile`` calls).

``runner`` (``run_profile()``: runs, repeats, statistics), ``clocks`` (CPU and CUDA-event stamps), ``op_timer``
(forward calls), ``hooks`` (backward node hooks), ``grads`` (the user's ``.grad`` kept as after one backward),
``cross_check`` (the same table from ``torch.profiler``), ``checks`` (what a profiled call differentiates, which
device it runs on, the error when runs disagree).
"""
from .cross_check import profile_torch
from .runner import run_profile

__all__ = ["run_profile", "profile_torch"]

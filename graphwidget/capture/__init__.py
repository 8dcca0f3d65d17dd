"""The capture stage: torch objects -> :class:`~graphwidget.model.GradGraph`.

``walk`` (the one pre-order walk), ``roots`` (what users pass -> root nodes), ``records`` (nodes -> plain records),
``tensors`` (tensor metadata), ``seq`` (autograd sequence numbers), ``native`` (the optional compiled core and its
loader; sources in ``_native/``), ``_deep_free`` (freeing deep graphs safely).
"""
from .api import ENGINES, capture, capture_raw, parameter_names

__all__ = ["capture", "capture_raw", "parameter_names", "ENGINES"]

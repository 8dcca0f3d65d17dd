"""The capture stage: torch objects -> :class:`~graphwidget.model.GradGraph`.

``api`` (:func:`capture`), ``roots`` (what users pass -> root nodes and leaf names), ``walk`` (the one pre-order
walk), ``records`` (nodes -> plain records: the pure-Python engine), ``engines`` (both engines behind one
signature), ``tensors`` (tensor metadata), ``modules`` (plain captures placed in ``nn.Module`` paths), ``seq``
(autograd sequence numbers), ``compat`` (what torch 2.4 lacks), ``native`` (the optional compiled core: where builds
live, which engine runs, building), ``_deep_free`` (freeing deep graphs safely). The package is named ``capturing``
so that the function ``graphwidget.capture`` never shadows it."""
from .api import ENGINES, capture, capture_raw, finalize
from .roots import parameter_names

__all__ = ["capture", "capture_raw", "finalize", "parameter_names", "ENGINES"]

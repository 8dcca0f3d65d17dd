"""The attribution stage: where each node came from (source line, code, ``nn.Module`` path, output strides).

``recorder`` (the forward recorder), ``frames`` (which frame is the user's), ``function_apply`` (seeing custom
``autograd.Function`` calls), ``attach`` (the one step that captures and annotates), ``intercept`` (the one
torch-function mode), ``module_hooks`` (the active ``nn.Module`` stack), ``shared_patch`` (process-wide patches,
reference-counted), ``trace`` (:func:`trace_call`, behind ``graphwidget.trace``), ``memory`` (``memory=True``:
allocator events per node), ``cuda_capture`` (the refusal inside a CUDA graph capture)."""
from .trace import trace_call

__all__ = ["trace_call"]

"""The attribution stage: where each node came from (source line, code, ``nn.Module`` path, output strides).

``recorder`` (the forward recorder), ``frames`` (which frame is the user's), ``function_apply`` (seeing custom
``autograd.Function`` calls), ``attach`` (the one step that captures and annotates).
"""
from .trace import trace

__all__ = ["trace"]

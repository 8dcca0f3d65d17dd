"""graphwidget: see, measure and compare PyTorch autograd graphs inside Jupyter.

>>> import torch, graphwidget as gw
>>> x = torch.randn(4, requires_grad=True)
>>> g = gw.capture((x * 2).sum())
"""
from __future__ import annotations

from typing import Any

from . import examples
from ._version import __version__
from .capture import capture
from .graph import GradGraph, load_json
from .trace import trace

__all__ = [
    "__version__", "capture", "trace", "profile", "GradGraph", "load_json", "examples",
    "GraphWidget", "export_html", "load_ipython_extension",
]

# The views pull in anywidget/ipywidgets/plotly; capture should not pay for them, so they load on first use.
_LAZY = {
    "GraphWidget": ("widget", "GraphWidget"),
    "export_html": ("export", "export_html"),
    "profile": ("timing", "profile"),
}


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        import importlib
        mod, attr = _LAZY[name]
        value = getattr(importlib.import_module(f".{mod}", __name__), attr)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'graphwidget' has no attribute {name!r}")


def load_ipython_extension(ipython: Any) -> None:
    """``%load_ext graphwidget``: registers the ``%gradgraph`` / ``%%gradgraph`` magics."""
    from .magics import register
    register(ipython)

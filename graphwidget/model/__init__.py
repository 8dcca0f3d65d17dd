"""The model stage: :class:`GradGraph` (networkx + meta), its schema and its JSON form. Torch-free."""
from .graph import GradGraph
from .io import load_json
from .schema import SchemaError

__all__ = ["GradGraph", "load_json", "SchemaError"]

"""The model stage: :class:`GradGraph` (networkx + meta), its schema and its JSON form. Torch-free."""
from .graph import GradGraph
from .io import graph_from_json
from .schema import SchemaError

__all__ = ["GradGraph", "graph_from_json", "SchemaError"]

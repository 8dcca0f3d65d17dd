"""Dicts that cost less memory when there are a million of them."""
from __future__ import annotations

from typing import Any, Dict, Sequence


def shared_key_dict(keys: Sequence[str]) -> Dict[str, Any]:
    """A dict of ``keys`` (all ``None``) whose copies share one key table (a CPython "split table" dict).

    Every node record is a copy of one template; a plain dict copy carries its own key table, a copy of an instance
    ``__dict__`` shares it and holds only the values: at a million nodes, far less memory to fault in. The copies
    are ordinary dicts in every other way (order, equality, new keys). On a Python that does not split instance
    dicts this is simply a plain dict.
    """
    cls = type("_SharedKeys", (), {})
    obj = cls()
    for k in keys:
        setattr(obj, k, None)
    return obj.__dict__

"""The one pre-order walk of an autograd graph, shared by the capture and profile's hooks.

Iterative (no recursion limit: a 1,000,000-node chain is fine), keyed by the identity of the nodes' Python wrappers
only while it runs. Ids are assigned in depth-first pre-order from the roots, following ``next_functions`` in order,
so the same program always gets the same ids — in the capture and in every profiled run.
"""
from __future__ import annotations

from typing import Any, Dict, List, Sequence, Tuple

Node = Any  # torch.autograd.graph.Node


class Walk:
    """Result of :func:`walk`: nodes in pre-order, their ``next_functions`` and an id(wrapper) -> index map.

    The wrappers in ``order`` keep every ``id()`` valid until the walk is dropped.
    """

    __slots__ = ("order", "nexts", "index")

    def __init__(self, order: List[Node], nexts: List[Tuple[Tuple[Any, int], ...]], index: Dict[int, int]) -> None:
        self.order, self.nexts, self.index = order, nexts, index


def walk(roots: Sequence[Node]) -> Walk:
    """All nodes reachable from ``roots``, each once, in depth-first pre-order (next_functions in order).

    Iterative, so depth is limited only by memory; each node's ``next_functions`` is read once and kept, since
    building the edges needs it again and reading it costs about as much as the walk itself.
    """
    order: List[Node] = []
    nexts: List[Tuple[Tuple[Any, int], ...]] = []
    index: Dict[int, int] = {}
    stack: List[Node] = list(reversed(roots))
    while stack:
        fn = stack.pop()
        key = id(fn)
        if key in index:
            continue
        index[key] = len(order)
        order.append(fn)
        nxt = fn.next_functions
        nexts.append(nxt)
        for i in range(len(nxt) - 1, -1, -1):
            child = nxt[i][0]
            if child is not None and id(child) not in index:
                stack.append(child)
    return Walk(order, nexts, index)

"""A graph read from a version 2 document, held as its decoded columns until something needs networkx.

Reading a big file is mostly building things: a dict per node and per edge and networkx's adjacency dicts cost several
times the parse itself. :func:`graphwidget.load_json` validates the columns and stops there; the networkx graph is
built on the first use of ``GradGraph.nx`` (:meth:`HeldColumns.build`), and what only needs a few fields (``len``,
``summary()``, the timing tables) reads the columns directly. Torch-free.
"""
from __future__ import annotations

import collections
import itertools
import operator
from typing import Any, Dict, Iterable, List, Sequence, Tuple

import networkx as nx

from .._util.dicts import shared_key_dict
from .._util.gc import gc_paused
from . import schema
from ._digraph import adjacency, digraph_from_columns
from .columns import Column, Split
from .writer import registered_core


class HeldColumns:
    """A validated version 2 document's columns (:func:`graphwidget.model.columns.decode`): node ``ids``, node
    columns by key, edge ``src``/``tgt`` and edge columns. Read-only: every query leaves them as they are."""

    __slots__ = ("ids", "cols", "src", "tgt", "ecols", "node_keys")

    def __init__(self, ids: List[int], cols: Dict[str, Column], src: List[int], tgt: List[int],
                 ecols: Dict[str, Column], node_keys: Tuple[str, ...]) -> None:
        self.ids, self.cols, self.src, self.tgt, self.ecols = ids, cols, src, tgt, ecols
        self.node_keys = node_keys  # the keys every node dict gets, in order (schema.node_keys of the meta)

    @property
    def n(self) -> int:
        return len(self.ids)

    @property
    def m(self) -> int:
        return len(self.src)

    def coded(self, key: str) -> Tuple[Iterable[int], Sequence[Any]]:
        """Each node's code for field ``key`` and the values the codes stand for (``values[code]``): a table column's
        index and table, a constant's zeros and its one value, a plain column's row numbers and its values; an
        absent field is null everywhere."""
        values, table, index = self._column(self.cols, key)
        if values is not None:
            return range(len(values)), values
        assert table is not None
        if index is None:
            return itertools.repeat(0, self.n), table
        return index, table

    @staticmethod
    def _column(cols: Dict[str, Column], key: str) -> Column:
        """Column ``key`` (absent: null in every row), a lists or fields column's rows built now, once."""
        col = cols.get(key, (None, [None], None))
        if isinstance(col[0], Split):
            col = cols[key] = (col[0].rows(), None, None)
        return col

    def rows(self, keys: Sequence[str], edges: bool = False) -> List[Dict[str, Any]]:
        """One dict per node (or edge), ``{key: value}`` in ``keys`` order, built in bulk: a template holding the
        constant columns (an absent column is null) copied per row, then each varying column stored into every row,
        all by the interpreter's own loops (no Python frame per row). A node's template shares its key table with
        its copies (:func:`~graphwidget._util.dicts.shared_key_dict`), as the capture's records do: less memory to
        fill."""
        cols, n = (self.ecols, self.m) if edges else (self.cols, self.n)
        # a shared key table pays from 11 keys up (a copy always holds 30 value slots)
        template: Dict[str, Any] = shared_key_dict(keys) if len(keys) > 10 else {}
        varying: List[Tuple[str, Iterable[Any]]] = []
        for k in keys:
            values, table, index = self._column(cols, k)
            template[k] = table[0] if values is None and index is None and table else None
            if values is not None:
                varying.append((k, values))
            elif index is not None and table is not None:
                varying.append((k, map(table.__getitem__, index)))
        rows = list(map(dict.copy, itertools.repeat(template, n)))
        for k, it in varying:
            collections.deque(map(operator.setitem, rows, itertools.repeat(k), it), maxlen=0)
        return rows

    def build(self) -> nx.DiGraph:
        """The networkx graph (node dicts in ``node_keys`` order, edge dicts in :data:`schema.EDGE_KEYS` order), its
        containers untracked from the cyclic GC when the compiled core is there (plain data, no cycles)."""
        with gc_paused():
            g = digraph_from_columns(self.ids, self.rows(self.node_keys), self.src, self.tgt,
                                     self.rows(schema.EDGE_KEYS, edges=True))
            mod = registered_core()
            if mod is not None:  # spare the collector its pass over every node's many small containers
                for part in adjacency(g):
                    mod.untrack_tree(part)
        return g

    def depth(self) -> int:
        """Nodes on the longest path (0 for an empty graph), as :func:`graphwidget.model._digraph.dag_depth`."""
        n = self.n
        if n == 0:
            return 0
        ids = self.ids
        if ids[0] == 0 and ids[-1] == n - 1:  # increasing ids 0..n-1 (the reader checked they are unique)
            su, tv = self.src, self.tgt
        else:
            row = {x: k for k, x in enumerate(ids)}
            su, tv = list(map(row.__getitem__, self.src)), list(map(row.__getitem__, self.tgt))
        depth = [1] * n
        if all(map(operator.lt, su, tv)) or all(map(operator.gt, su, tv)):
            # every edge points the same way along the rows: taking the edges by source in that direction, a
            # source's depth is final when its edges are taken (all edges into it come from earlier sources)
            backwards = bool(su) and su[0] > tv[0]
            for k in sorted(range(len(su)), key=su.__getitem__, reverse=backwards):
                d = depth[su[k]] + 1
                if d > depth[tv[k]]:
                    depth[tv[k]] = d
            return max(depth)
        succ: List[List[int]] = [[] for _ in range(n)]
        indeg = [0] * n
        for u, v in zip(su, tv):
            succ[u].append(v)
            indeg[v] += 1
        ready = [k for k in range(n) if not indeg[k]]
        while ready:
            u = ready.pop()
            du = depth[u] + 1
            for v in succ[u]:
                if du > depth[v]:
                    depth[v] = du
                indeg[v] -= 1
                if not indeg[v]:
                    ready.append(v)
        return max(depth)


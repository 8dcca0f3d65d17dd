"""Module paths for a plain capture: which ``nn.Module`` each node belongs to, from the parameters it consumes.

``gw.trace`` records the module that was running when each node was made. A plain ``gw.capture(loss, module=model)``
has no forward to watch, but every parameter leaf is named (``layer3.2.conv1.weight``), and that is enough:

1. a node that consumes a parameter (directly, or through ops that only transform parameters, such as the ``t()``
   of a linear layer's weight) belongs to the parameter's module (``layer3.2.conv1``);
2. any other node lies between such nodes: it belongs to the deepest module shared by one of the nearest owned nodes
   before it and one of the nearest after it (a ReLU between ``layer1.0.bn1`` and ``layer1.0.conv2`` is in
   ``layer1.0``), or to a module around the owned node made last before it (by ``seq``) when that module has a child
   without parameters that could have made it (``stem.2``, a ``ReLU``, after ``stem.1``: in ``stem``; a residual
   add after ``layer2.0.downsample``: in ``layer2.0``); with owned nodes on one side only (the loss after the last
   layer), to the parent of theirs. Which of several modules running the same op made it is not recorded without a
   trace: these paths place nodes for reading, ``gw.trace`` records them.
   "Nearest" is counted in edges, and ties between equally deep modules go to the nearer one, never to the one whose
   name sorts first: so identical blocks get identical nodes (the residual add and the ReLU after it in every block
   of ``layer3``; ``layer3.1`` no longer takes ``layer3.10``'s), and a view can fold them.

A parameter shared by several modules (GPT-2's embedding and output layer hold one tensor) carries one name in the
graph; an op consuming it goes to the sharing module whose class its op names (``EmbeddingBackward0``: the
``Embedding``), else to the module of the leaf's own name.

Nodes with no parameter anywhere near stay without a module, and the graph says the paths were inferred
(``meta["modules_inferred"]``). ``meta["modules"]`` maps every module path to its class, for traces and captures
alike, so that a view can say what a module is.
"""
from __future__ import annotations

from typing import Any, Dict, Iterable, List, Optional, Tuple

import torch

from ..model._digraph import adjacency, producers_first

#: How many of the nearest owned modules are kept on each side of a node (fan-ins would grow the sets).
_KEEP = 4


def module_classes(module: torch.nn.Module) -> Dict[str, str]:
    """Every module path of ``module`` (``""``: itself) and its class name."""
    return {path: type(m).__name__ for path, m in module.named_modules(remove_duplicate=False)}


def parameter_aliases(module: torch.nn.Module) -> Dict[str, List[str]]:
    """For each parameter name of a tensor held under several names (tied weights): all of its names."""
    names: Dict[int, List[str]] = {}
    for name, p in module.named_parameters(remove_duplicate=False):
        names.setdefault(id(p), []).append(name)
    return {n: group for group in names.values() if len(group) > 1 for n in group}


def _parent(path: str) -> str:
    return path.rpartition(".")[0]


def _common(a: str, b: str) -> str:
    """The deepest module containing both paths (``""``: the top module)."""
    pa, pb = a.split(".") if a else [], b.split(".") if b else []
    out = []
    for x, y in zip(pa, pb):
        if x != y:
            break
        out.append(x)
    return ".".join(out)


def _common_all(paths: Iterable[str]) -> str:
    it = iter(paths)
    out = next(it)
    for p in it:
        out = _common(out, p)
    return out


def _depth(path: str) -> int:
    return path.count(".") + 1 if path else 0


#: A module seen from a node: (distance in edges to its nearest owned node, seq of its owned node made last (seen
#: from after it) or first (seen from before it)).
_Seen = Tuple[int, float]


def _nearest(found: Iterable[Tuple[str, _Seen]], last: bool) -> Dict[str, _Seen]:
    """The ``_KEEP`` nearest modules among ``found`` (nearest first, then deepest), each with its smallest distance
    and its latest (``last``) or earliest seq."""
    best: Dict[str, _Seen] = {}
    for p, (d, q) in found:
        old = best.get(p)
        best[p] = (d, q) if old is None else (min(old[0], d), max(old[1], q) if last else min(old[1], q))
    if len(best) <= _KEEP:
        return best
    return dict(sorted(best.items(), key=lambda pd: (pd[1][0], -_depth(pd[0]), pd[0]))[:_KEEP])


def _pick(candidates: Iterable[Tuple[str, int]]) -> str:
    """The deepest candidate module; among equally deep ones the nearest (names only break exact ties)."""
    return max(candidates, key=lambda pd: (_depth(pd[0]), -pd[1], pd[0]))[0]


def _by_class(op: str, paths: Iterable[str], classes: Dict[str, str]) -> Optional[str]:
    """The one module among ``paths`` whose class the op's name contains (``EmbeddingBackward0``, ``Embedding``)."""
    lowered = op.lower()
    hits = [p for p in paths if classes.get(p) and classes[p].lower() in lowered]
    return hits[0] if len(hits) == 1 else None


def infer_modules(graph: Any, classes: Dict[str, str], aliases: Optional[Dict[str, List[str]]] = None) -> int:
    """Fill each node's ``module`` (where it is null) from the named parameter leaves (module docstring); returns
    how many nodes got one. ``classes``: the module paths of the model (``module_classes``); ``aliases``: the
    names of tied parameters (``parameter_aliases``)."""
    node, succ, pred = adjacency(graph.nx)
    order: List[Any] = list(producers_first(graph.nx))
    owner: Dict[Any, str] = {}
    for v, d in node.items():  # parameter leaves: the module their name says
        name = (d.get("tensor") or {}).get("name") if d.get("kind") == "leaf" else None
        if isinstance(name, str):
            mod = _parent(name)
            if mod in classes:
                owner[v] = mod
    # ops that only transform one parameter (a weight's t(), view, expand), then the ops that consume parameters:
    # the module of the parameters they read themselves, else of the transformed ones they read
    leaves = dict(owner)
    shared: Dict[Any, List[str]] = {}  # tied parameter leaves: the modules of all their names
    for v in leaves:
        group = (aliases or {}).get(node[v]["tensor"]["name"], ())
        mods = [m for m in (_parent(n) for n in group) if m in classes]
        if len(set(mods)) > 1:
            shared[v] = mods

    def leaf_module(u: Any, op: str) -> str:
        return (_by_class(op, shared[u], classes) or leaves[u]) if u in shared else leaves[u]

    transforms: Dict[Any, str] = {}
    for v in order:
        ins = list(pred[v])
        if v not in leaves and len(ins) == 1 and (ins[0] in leaves or ins[0] in transforms):
            op = str(node[v].get("op") or "")
            transforms[v] = leaf_module(ins[0], op) if ins[0] in leaves else transforms[ins[0]]
    owner.update(transforms)
    for v in order:
        if v in owner or node[v].get("kind") == "leaf":
            continue
        op = str(node[v].get("op") or "")
        mods = ([leaf_module(u, op) for u in pred[v] if u in leaves]
                or [transforms[u] for u in pred[v] if u in transforms])
        if mods:
            owner[v] = _common_all(mods)
    def seen(u: Any, near: Dict[Any, Dict[str, _Seen]], unknown: float) -> Iterable[Tuple[str, _Seen]]:
        if u in owner:
            q = node[u].get("seq")
            return ((owner[u], (1, unknown if q is None else float(q))),)
        return ((p, (d + 1, q)) for p, (d, q) in near.get(u, {}).items())

    before: Dict[Any, Dict[str, _Seen]] = {}
    for v in order:
        if v not in owner:
            before[v] = _nearest((pd for u in pred[v] for pd in seen(u, before, float("-inf"))), last=True)
    after: Dict[Any, Dict[str, _Seen]] = {}
    for v in reversed(order):
        if v not in owner:
            after[v] = _nearest((pd for w in succ[v] for pd in seen(w, after, float("inf"))), last=False)
    # modules that may hold a parameterless op made just after one of their children: a child without parameters
    owning = set(leaves.values())
    holds_free_ops = {_parent(path) for path in classes if path and path not in owning}
    filled = 0
    for v in order:
        d = node[v]
        if d.get("module") is not None or d.get("kind") == "leaf":
            continue
        found: Optional[str] = owner.get(v)
        if found is None:
            up, down = before.get(v, {}), after.get(v, {})
            if up and down:
                candidates = [(_common(p, c), du + dc) for p, (du, _) in up.items() for c, (dc, _) in down.items()]
                # the deepest module around the owned node made last before this one with a parameterless child
                last = max(up, key=lambda p: (up[p][1], -up[p][0], _depth(p), p))
                around: Optional[str] = _parent(last) if last else None
                while around is not None and around not in holds_free_ops:
                    around = _parent(around) if around else None
                if around is not None:
                    candidates.append((around, up[last][0]))
                found = _pick(candidates)
            elif up or down:
                found = _parent(_pick((p, d) for p, (d, _) in (up or down).items()))
        if found is not None:
            d["module"] = found
            filled += 1
    graph.meta["modules_inferred"] = True
    return filled

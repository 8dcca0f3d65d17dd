"""Names for the tensors :func:`graphwidget.compare` differentiates, and which tensor of A goes with which of B.

Every tensor that receives a gradient is compared — found from each side's graph (its ``AccumulateGrad`` leaves),
not only among the arguments. Each gets one name, unique on its side:

- an input: its argument (``arg0``, ``x``, ``arg1[2]``: inputs are copied per side, and the copies share the name);
- a parameter or buffer: its module path and name, prefixed by where the module was found — nothing for the
  compared module itself (``fc1.weight``), the argument (``arg0.fc1.weight``), or the variable a function reaches it
  through, in a closure or a global (``fc1.weight`` for ``fc2(relu(fc1(x)))`` with ``fc1`` a global);
- any other tensor a function reaches through a closure or a global: that variable's name;
- what is left (a module only the recorder saw, a tensor made elsewhere): its class and the order in which it
  was met (``<Linear#2>.weight``, ``leaf#3``).

A tensor the reference side (A) names too — a parameter both sides use, reached as ``fc1.weight`` by one and as
``block.fc1.weight`` through a closure by the other — takes A's name on the other side as well (:meth:`Namer.align`):
it is one tensor, and the diff matches the graphs' leaves by name.

Pairing never trusts a name that can repeat: a tensor both sides use is paired with itself (parameters are shared,
not copied); inputs by argument; only then tensors named alike on both sides (two model instances with the same
structure, ``fc1.weight`` of each), then tensors with the same name within their module (``model.fc.bias`` and
``model_cl.fc.bias``: two copies of one model reached through two variables) — a name only when it is unique on both
sides.
"""
from __future__ import annotations

import functools
import types
from collections.abc import Mapping
from typing import Any, Callable, Dict, Iterator, List, Optional, Sequence, Tuple

import torch

#: How deep :func:`Namer.scan_function` follows functions reached from a function (helpers calling helpers).
_DEPTH = 3


class Namer:
    """One side's names: id(tensor) -> unique name (the tensor is kept alive, so its id is not reused)."""

    def __init__(self) -> None:
        self.by_id: Dict[int, str] = {}
        self.local: Dict[int, str] = {}  # the name within the module (or the variable) it was found in
        self.buffers: List[torch.Tensor] = []  # module buffers (a module may update them in place, unrecorded)
        self.items: List[Tuple[str, torch.Tensor]] = []  # (name, tensor) in the order they were named
        self._taken: Dict[str, int] = {}
        self._keep: List[Any] = []
        self._modules: set = set()
        self._seen_code: set = set()

    def add(self, name: str, t: torch.Tensor, local: Optional[str] = None) -> None:
        if id(t) in self.by_id:
            return
        self.local[id(t)] = local or name
        if name in self._taken:
            self._taken[name] += 1
            name = f"{name}#{self._taken[name]}"
        self._taken.setdefault(name, 1)
        self.by_id[id(t)] = name
        self.items.append((name, t))

    def align(self, other: "Namer") -> None:
        """Each tensor ``other`` names too takes ``other``'s name here, where no other tensor here has it."""
        names = {n for n, _ in self.items}
        for k, (name, t) in enumerate(self.items):
            want = other.by_id.get(id(t))
            if want is None or want == name or want in names:
                continue
            names.discard(name)
            names.add(want)
            self.items[k] = (want, t)
            self.by_id[id(t)] = want
            self._taken.setdefault(want, 1)

    def module(self, prefix: str, m: torch.nn.Module) -> None:
        """Every parameter and buffer of ``m`` (and plain tensor attributes of its submodules) under ``prefix``."""
        if id(m) in self._modules:
            return
        self._modules.add(id(m))
        self._keep.append(m)
        for n, p in m.named_parameters(remove_duplicate=False):
            self.add(_join(prefix, n), p, n)
        for n, b in m.named_buffers(remove_duplicate=False):
            self.add(_join(prefix, n), b, n)
            self.buffers.append(b)
        for path, sub in m.named_modules():
            for attr, v in vars(sub).items():
                if isinstance(v, torch.Tensor) and not attr.startswith("__"):
                    self.add(_join(_join(prefix, path), attr), v, _join(path, attr))

    def value(self, name: str, v: Any, depth: int = 0) -> None:
        """A value reached under ``name``: a module, a tensor, a function (scanned), or a container of those."""
        if isinstance(v, torch.nn.Module):
            self.module(name, v)
        elif isinstance(v, torch.Tensor):
            self.add(name, v)
        elif isinstance(v, (list, tuple)) and len(v) <= 256:
            for i, x in enumerate(v):
                if isinstance(x, (torch.nn.Module, torch.Tensor)):
                    self.value(f"{name}[{i}]", x, depth)
        elif isinstance(v, Mapping) and len(v) <= 256:
            for k, x in v.items():
                if isinstance(x, (torch.nn.Module, torch.Tensor)):
                    self.value(f"{name}[{k!r}]", x, depth)
        elif callable(v) and depth < _DEPTH:
            self.scan_function(v, depth + 1)

    def scan_function(self, fn: Any, depth: int = 0) -> None:
        """The modules and tensors ``fn`` reaches without being given them: ``self`` of a bound method, the
        arguments bound by ``functools.partial``, closure cells and the globals its code (and nested code) names."""
        if isinstance(fn, torch.nn.Module):
            inner = getattr(fn, "_orig_mod", None)  # torch.compile'd module: name the module it wraps
            self.module("", inner if isinstance(inner, torch.nn.Module) else fn)
            return
        if isinstance(fn, functools.partial):
            for i, a in enumerate(fn.args):
                self.value(f"partial[{i}]", a, depth)
            for k, a in fn.keywords.items():
                self.value(k, a, depth)
            self.scan_function(fn.func, depth)
            return
        if isinstance(fn, types.MethodType):
            owner = fn.__self__
            if isinstance(owner, torch.nn.Module):
                self.module("", owner)
            fn = fn.__func__
        orig = getattr(fn, "_torchdynamo_orig_callable", None)  # torch.compile(function)
        if orig is not None and orig is not fn:
            self.scan_function(orig, depth)
            return
        code = getattr(fn, "__code__", None)
        if code is None or id(code) in self._seen_code:
            return
        self._seen_code.add(id(code))
        for name, cell in zip(code.co_freevars, getattr(fn, "__closure__", None) or ()):
            try:
                v = cell.cell_contents
            except ValueError:  # an empty cell
                continue
            self.value(name, v, depth)
        glob = getattr(fn, "__globals__", {})
        for name in _names(code):
            if name in glob:
                self.value(name, glob[name], depth)

    def name(self, t: torch.Tensor) -> Optional[str]:
        return self.by_id.get(id(t))


def _names(code: types.CodeType) -> Iterator[str]:
    """Global names a function's code uses, nested functions and comprehensions included."""
    stack = [code]
    while stack:
        c = stack.pop()
        yield from c.co_names
        stack.extend(k for k in c.co_consts if isinstance(k, types.CodeType))


def _join(prefix: str, name: str) -> str:
    return f"{prefix}.{name}" if prefix and name else (prefix or name)


def side_names(fn: Callable[..., Any], inputs: Sequence[Tuple[str, torch.Tensor]],
               arg_modules: Sequence[Tuple[str, torch.nn.Module]]) -> Namer:
    """The names one side knows before it runs: its inputs (argument paths), the modules among its arguments,
    the compared module itself, and what the function reaches through closures and globals."""
    n = Namer()
    for path, t in inputs:
        n.add(path, t)
    n.scan_function(fn)
    for path, m in arg_modules:
        n.module(path, m)
    return n


def leaf_tensors(roots: Sequence[Any]) -> List[torch.Tensor]:
    """The tensors that receive a gradient from ``roots``' backward: every ``AccumulateGrad``'s variable, in the
    order of the graph's pre-order walk (the capture's ids), each once."""
    from ..capturing.roots import root_nodes
    from ..capturing.walk import walk
    out: List[torch.Tensor] = []
    seen: set = set()
    for fn in walk(root_nodes(list(roots))).order:
        if type(fn).__name__ == "AccumulateGrad":
            v = fn.variable
            if id(v) not in seen:
                seen.add(id(v))
                out.append(v)
    return out


def name_modules(namer: Namer, top_modules: Sequence[torch.nn.Module]) -> None:
    """Name what the modules the recorder saw hold, when nothing named them before (``<Linear#2>.weight``)."""
    for k, m in enumerate(top_modules):
        namer.module(f"<{type(m).__name__}#{k + 1}>", m)


def name_leaves(namer: Namer, leaves: Sequence[torch.Tensor]) -> List[str]:
    """A name for each leaf: the namer's, else ``leaf#k`` (added to the namer, so names stay unique)."""
    out = []
    for i, t in enumerate(leaves):
        name = namer.name(t)
        if name is None:
            namer.add(f"leaf#{i}", t)
            name = namer.name(t)
        assert name is not None
        out.append(name)
    return out


Entry = Tuple[str, Any, Any, str]  # (name, identity key, gradient, name within its module)


def pair(a: Sequence[Entry], b: Sequence[Entry], by_graph: Optional[Mapping[str, str]] = None
         ) -> List[Tuple[Optional[int], Optional[int]]]:
    """Pairs of indices into ``a`` and ``b`` (``None``: no partner): by identity key (the same tensor, or the same
    input argument), then through the matched graph (``by_graph``: A's leaf name -> the name of the B leaf matched
    to it: a port's own copy of the weights under other names), then by full name, then by name within the module
    — a name only where it is unique among the entries still unpaired on both sides. In ``a``'s order, then
    ``b``'s leftovers."""
    partner: Dict[int, int] = {}
    b_by_key = {e[1]: j for j, e in enumerate(b)}
    for i, e in enumerate(a):
        j = b_by_key.get(e[1])
        if j is not None and j not in partner.values():
            partner[i] = j
    if by_graph:
        b_by_name = {e[0]: j for j, e in enumerate(b)}
        used = set(partner.values())
        for i, e in enumerate(a):
            if i in partner:
                continue
            j = b_by_name.get(by_graph.get(e[0], ""))
            if j is not None and j not in used:
                partner[i] = j
                used.add(j)
    for field_ in (0, 3):
        left_a = [i for i in range(len(a)) if i not in partner]
        used = set(partner.values())
        left_b = [j for j in range(len(b)) if j not in used]
        count_a: Dict[str, int] = {}
        count_b: Dict[str, int] = {}
        for i in left_a:
            count_a[a[i][field_]] = count_a.get(a[i][field_], 0) + 1
        for j in left_b:
            count_b[b[j][field_]] = count_b.get(b[j][field_], 0) + 1
        b_by_name = {b[j][field_]: j for j in left_b if count_b[b[j][field_]] == 1}
        for i in left_a:
            n = a[i][field_]
            if count_a[n] == 1 and n in b_by_name:
                partner[i] = b_by_name[n]
    out: List[Tuple[Optional[int], Optional[int]]] = [(i, partner.get(i)) for i in range(len(a))]
    used = set(partner.values())
    out.extend((None, j) for j in range(len(b)) if j not in used)
    return out

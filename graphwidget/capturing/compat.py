"""What torch 2.4 does not expose, and what graphwidget does instead (the one place for version shims).

torch < 2.5 has no ``grad_fn._input_metadata`` (the shapes of the forward outputs) and no
``SavedTensor.unpack_hook``/``.data`` (whether a saved tensor is behind saved-tensor hooks). The pure-Python engine
asks here; a capture that meets a missing fact warns once (:class:`MissingFactWarning`), and :func:`fill_outputs`
recovers what the forward record or the consumers' saved sizes tell.
"""
from __future__ import annotations

from typing import Any, Dict, List, Mapping, Optional, Sequence, Set, Tuple

import torch

from .tensors import device_name, dtype_name, itemsize, numel
from .walk import Node

_EMPTY: Tuple[()] = ()


class MissingFactWarning(UserWarning):
    """This torch does not expose a fact graphwidget records; the fields built from it are null (``outputs``) or
    count only what is known (edge ``shape``, ``grad_bytes``). The warning names the fact, once per process."""


#: Facts this torch lacks that a capture met: name -> what it costs (also shown by ``python -m graphwidget doctor``).
_MISSING_SEEN: Dict[str, str] = {}
_NO_INPUT_METADATA = (
    "grad_fn._input_metadata (torch >= 2.5 has it; this is torch {v}): the shapes of the forward outputs. Without "
    "it, a non-leaf node's \"outputs\" are known only where the nodes reading them saved their size (slices, "
    "views, sums...); elsewhere they are null, edges out of them have no shape/dtype and \"grad_bytes\" misses "
    "those gradients. gw.trace(...) and gw.profile(...) record these facts in the forward instead; or upgrade torch")


_NO_UNPACK_HOOK = (
    "SavedTensor.unpack_hook and .data (this is torch {v}): whether a saved tensor sits behind saved-tensor hooks "
    "(checkpoint, save_on_cpu). Without them such tensors are described by unpacking them, which runs their unpack "
    "hook (a checkpoint recomputes its forward), and they are not marked \"packed\"; upgrade torch to avoid it")


def _note_missing(fact: str, message: str) -> None:
    """Warn once per process that this torch lacks ``fact`` (:class:`MissingFactWarning`)."""
    if fact not in _MISSING_SEEN:
        _MISSING_SEEN[fact] = message
        import warnings
        warnings.warn(f"graphwidget: this torch does not expose {message}.", MissingFactWarning, stacklevel=6)


def hook_of(raw: Any) -> Any:
    """A SavedVariable's unpack hook (``None``: not hooked). A torch whose SavedTensor has no ``unpack_hook`` cannot
    say, so its tensors are unpacked as before, and that is said once."""
    try:
        return raw.unpack_hook
    except AttributeError:
        _note_missing("SavedTensor.unpack_hook", _NO_UNPACK_HOOK.format(v=torch.__version__))
        return None


def data_of(raw: Any) -> Any:
    """A SavedVariable's tensor without unpacking it; ``None`` on a torch without ``SavedTensor.data``."""
    return getattr(raw, "data", None)


def missing_facts() -> Dict[str, str]:
    """Facts this torch does not expose to the pure-Python engine, each with what it costs; ``{}`` on torch >= 2.5.

    >>> from graphwidget.capturing.compat import missing_facts
    >>> missing_facts()        # doctest: +SKIP
    {}
    """
    probe = torch.zeros(1, requires_grad=True).exp().grad_fn  # no RNG use: asking must not change user results
    assert probe is not None
    missing = {}
    if not hasattr(probe, "_input_metadata"):
        missing["_input_metadata"] = _NO_INPUT_METADATA.format(v=torch.__version__)
    if not hasattr(probe._raw_saved_result, "unpack_hook"):  # type: ignore[attr-defined]
        missing["SavedTensor.unpack_hook"] = _NO_UNPACK_HOOK.format(v=torch.__version__)
    return missing


class _TensorMeta:
    """A leaf's input metadata rebuilt from its variable: what ``AccumulateGrad._input_metadata`` holds."""

    __slots__ = ("shape", "dtype", "device", "is_nested_tensor")

    def __init__(self, t: torch.Tensor) -> None:
        self.shape, self.dtype, self.device, self.is_nested_tensor = t.shape, t.dtype, t.device, t.is_nested


def metadata_without_binding(fn: Node) -> Optional[Sequence[Any]]:
    """torch < 2.5 has no ``grad_fn._input_metadata``: a leaf's comes from its variable; any other node's outputs
    are unknown (``None``), and the first such node warns (:class:`MissingFactWarning`)."""
    if type(fn).__name__ == "AccumulateGrad":
        try:
            return (_TensorMeta(fn.variable),)
        except (AttributeError, RuntimeError):
            return _EMPTY
    if "_input_metadata" not in _MISSING_SEEN:
        _MISSING_SEEN["_input_metadata"] = msg = _NO_INPUT_METADATA.format(v=torch.__version__)
        import warnings
        warnings.warn(f"graphwidget: this torch does not expose {msg}.", MissingFactWarning, stacklevel=5)
    return None


#: The size a consumer saved of its input in a slot other than the first (op -> slot -> saved attribute); slot 0 is
#: ``self_sym_sizes`` for every op. The slots follow the forward's arguments: ``addmm(self, mat1, mat2)``, ``mm(self,
#: mat2)``.
_SLOT_SIZES: Dict[str, Dict[int, str]] = {"AddmmBackward0": {1: "mat1_sym_sizes", 2: "mat2_sym_sizes"},
                                          "MmBackward0": {1: "mat2_sym_sizes"}}


def _saved_size(d: Mapping[str, Any], slot: Any) -> Optional[List[int]]:
    """The size node ``d`` saved of the input it reads in ``slot``, or None."""
    name = _SLOT_SIZES.get(d.get("op") or "", {}).get(slot) or ("self_sym_sizes" if slot == 0 else None)
    size = (d.get("attrs") or {}).get(name) if name else None
    return size if isinstance(size, list) else None


def _outputs_from_consumers(g: Any, touched: Set[Any]) -> int:
    """Outputs still unknown after the forward's record (torch < 2.5), read off the nodes that consume them.

    ``gw.trace`` sees only the tensors an op call returns: ``h[:, :, 0, 0]`` is one call that makes four nodes
    (two slices, two selects), and only the last one's output is seen; a plain capture sees none. But a node that
    saved its input's size (``self_sym_sizes``: every slice, select, expand, sum, view...; ``mat1_sym_sizes`` and
    ``mat2_sym_sizes`` of a matmul, which is how ``nn.Linear``'s transposed weight is known) says what shape its
    producer's output had. So each unknown node whose only output goes to consumers that all saved the same size
    gets that shape, with the dtype/device of a consumer's own output or else of the node's own inputs (nodes are
    visited producers first, so an input filled here counts). Nothing is guessed where consumers disagree or none
    saved a size: those stay null. Edges out of a filled node get its shape/dtype (their consumers go in
    ``touched``). Returns how many nodes were filled."""
    from ..model._digraph import adjacency, producers_first

    node, succ, pred = adjacency(g)

    def sized(u: Any) -> bool:
        return any(_saved_size(node[v], item.get("slot")) is not None
                   for v, e in succ[u].items() for item in [e, *(e.get("also") or ())])

    # Only nodes some consumer saved the size of can be filled: none (the usual case), no ordering pass at all.
    todo = {u for u, d in node.items() if d.get("outputs") is None and d.get("op") != "AccumulateGrad" and sized(u)}
    if not todo:
        return 0
    count = 0
    for u in producers_first(g):
        if u not in todo:
            continue
        shapes: Set[Optional[Tuple[int, ...]]] = set()
        meta: Optional[Dict[str, Any]] = None
        for v, e in succ[u].items():
            for item in [e, *(e.get("also") or ())]:
                size = _saved_size(node[v], item.get("slot"))
                if item.get("output") != 0 or size is None:
                    shapes.add(None)
                    continue
                shapes.add(tuple(size))
                outs = node[v].get("outputs") or ()
                if meta is None and outs and outs[0] is not None:
                    meta = outs[0]
        if len(shapes) != 1 or None in shapes:
            continue
        if meta is None:
            meta = next(({"dtype": e["dtype"]} for e in pred[u].values() if e.get("dtype")), None)
        if meta is None:
            continue
        only = shapes.pop()
        assert only is not None  # excluded above
        shape = list(only)
        node[u]["outputs"] = [{"shape": shape, "dtype": meta["dtype"], "device": meta.get("device") or "cpu"}]
        for v, e in succ[u].items():
            for item in [e, *(e.get("also") or ())]:
                if item.get("shape") is None:
                    item["shape"], item["dtype"] = shape, meta["dtype"]
                    touched.add(v)
        count += 1
    return count


def fill_outputs(graph: Any, found: Mapping[int, Sequence[Optional[Tuple[Sequence[int], torch.dtype, Any]]]]) -> int:
    """Where a node's ``outputs`` are unknown (null: torch < 2.5), set them from what the forward recorded
    (``found``: node -> per output ``(shape, dtype, device)`` or ``None``; ``gw.trace``/``gw.profile`` see every
    output tensor) and, for nodes made inside one call, from the sizes their consumers saved
    (:func:`_outputs_from_consumers`); then the shape/dtype of the edges leaving those nodes and the ``grad_bytes``
    of the nodes they enter. Returns how many nodes were filled."""
    g = graph.nx
    filled = []
    for n, outs in found.items():
        d = g.nodes[n]
        if d.get("outputs") is not None:
            continue
        d["outputs"] = [None if o is None else {"shape": list(o[0]), "dtype": dtype_name(o[1]),
                                                "device": device_name(o[2])} for o in outs]
        filled.append(n)
    touched: Set[Any] = set()
    for u in filled:
        outs = g.nodes[u]["outputs"]
        for _, v, e in g.out_edges(u, data=True):
            for item in [e, *(e.get("also") or ())]:
                meta = outs[item["output"]] if item["output"] < len(outs) else None
                if meta is not None and item.get("shape") is None:
                    item["shape"], item["dtype"] = meta["shape"], meta["dtype"]
                    touched.add(v)
    n_filled = len(filled) + _outputs_from_consumers(g, touched)
    for v in touched:  # grad_bytes as build_records computes it: one gradient per connection, its tensor's size
        total = 0
        for _, _, e in g.in_edges(v, data=True):
            for item in [e, *(e.get("also") or ())]:
                dtype = getattr(torch, str(item.get("dtype")), None)
                if item.get("shape") is not None and isinstance(dtype, torch.dtype):
                    total += numel(tuple(item["shape"])) * itemsize(dtype)
        g.nodes[v]["grad_bytes"] = total
    return n_filled


def missing_seen() -> Dict[str, str]:
    """Facts a capture in this process found missing (name -> what it costs); empty on torch >= 2.5."""
    return _MISSING_SEEN

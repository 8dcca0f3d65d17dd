"""Where each node came from: source line, code, ``nn.Module`` path, and forward output strides.

How (public torch machinery, nothing left behind):

* A ``TorchFunctionMode`` sees every torch call the traced function makes. Autograd numbers nodes with a
  thread-local *sequence number* as it creates them; reading the next number before and after each call
  (``torch._C._autograd._get_sequence_nr``, a counter read, ~0.04 µs) gives the exact range of node numbers that
  call created — including nodes that never surface as an output's ``grad_fn`` (``linear`` makes ``AddmmBackward0``
  *and* ``TBackward0``). Each node is later matched to its call by binary search on that range.
* ``torch.autograd.Function.apply`` does not go through torch-function modes, so while tracing it is wrapped (and
  restored in ``finally``) to record its range the same way: custom nodes get their own line.
* Global module forward pre/post hooks keep a stack of the active ``nn.Module``s; names come from
  ``named_modules()`` of the outermost module, so paths read like ``encoder.layers.3.attn``.
* The user frame is the first frame outside torch and graphwidget; its line text comes from ``linecache``.
"""
from __future__ import annotations

import bisect
import linecache
from typing import Any, Callable, Dict, List, Mapping, Optional, Sequence, Tuple

import torch
from torch.overrides import TorchFunctionMode

from ..capture.roots import flat_tensors
from ..capture.seq import next_seq
from ..model.graph import GradGraph
from .frames import user_frame
from .function_apply import patch_function_apply

class Call:
    """One intercepted torch call: the node sequence numbers it created and where it happened."""

    __slots__ = ("lo", "hi", "source", "code", "module", "outputs", "ms")

    def __init__(self, lo: int, hi: int, source: Optional[str], code: Optional[str], module: Optional[str],
                 outputs: Dict[int, Dict[int, Tuple[List[int], bool]]], ms: Any) -> None:
        self.lo, self.hi = lo, hi  # node sequence numbers in [lo, hi)
        self.source, self.code, self.module = source, code, module
        self.outputs = outputs     # seq -> output_nr -> (stride, contiguous)
        self.ms = ms               # forward time of the call (or the timer's stamps), when timed


class Recorder:
    """Context manager that records a :class:`Call` for every torch call that creates autograd nodes.

    ``timer`` (optional) is a pair ``(start, stop)``: ``start()`` returns a token, ``stop(token)`` what is stored as
    the call's ``ms`` — elapsed milliseconds, or (as the timing module does, since CUDA events can only be read after
    a synchronise) a pair of stamps it resolves later. Without it no time is measured.
    """

    def __init__(self, timer: Optional[Tuple[Callable[[], Any], Callable[[Any], Any]]] = None) -> None:
        self.calls: List[Call] = []
        self._timer = timer
        self._module_stack: List[str] = []
        self._module_names: Dict[int, str] = {}
        self.top_modules: List[torch.nn.Module] = []
        self._handles: List[Any] = []
        self._mode: Optional[_Mode] = None
        self._restore_apply: Optional[Callable[[], None]] = None
        self._first_seq: Optional[int] = None

    # -- bookkeeping used by the mode and the apply wrapper ---------------------------------------------------------
    def run(self, func: Callable[..., Any], args: Sequence[Any], kwargs: Mapping[str, Any]) -> Any:
        if next_seq is None:
            lo = None
        else:
            lo = next_seq()
        timer = self._timer
        token = timer[0]() if timer else None
        out = func(*args, **kwargs)
        ms = timer[1](token) if timer else None
        if lo is not None:
            hi = next_seq()
            if hi == lo:
                return out  # created no node: nothing to attribute
        outputs: Dict[int, Dict[int, Tuple[List[int], bool]]] = {}
        seqs = []
        for t in flat_tensors(out):
            fn = t.grad_fn
            if fn is None:
                continue
            seq = fn._sequence_nr()
            seqs.append(seq)
            if t.layout is torch.strided:  # shape/dtype/device: what torch < 2.5 hides from capture (fill_outputs)
                outputs.setdefault(seq, {})[t.output_nr] = (list(t.stride()), t.is_contiguous(), t.shape, t.dtype,
                                                            t.device)
        if lo is None:  # old torch: only the outputs' own nodes can be attributed
            if not seqs:
                return out
            lo, hi = min(seqs), max(seqs) + 1
        frame = user_frame(3)
        if frame is not None:
            fname, line = frame.f_code.co_filename, frame.f_lineno
            source = f"{fname}:{line}"
            code = linecache.getline(fname, line).strip() or None
        else:
            source = code = None
        module = self._module_stack[-1] if self._module_stack else None
        self.calls.append(Call(lo, hi, source, code, module, outputs, ms))
        return out

    def call_for(self, seq: Optional[int]) -> Optional[Call]:
        """The call that created the node numbered ``seq``, if it was recorded."""
        if seq is None or not self.calls:
            return None
        i = bisect.bisect_right(self._los, seq) - 1
        if i >= 0:
            c = self.calls[i]
            if c.lo <= seq < c.hi:
                return c
        return None

    # -- module stack ---------------------------------------------------------------------------------------------
    def _pre_hook(self, module: torch.nn.Module, args: Any) -> None:
        name = self._module_names.get(id(module))
        if name is None:
            if not self._module_stack:
                # An outermost module: name its whole tree relative to it ("" is the module itself).
                self.top_modules.append(module)
                for n, m in module.named_modules():
                    self._module_names.setdefault(id(m), n)
                name = self._module_names[id(module)]
            else:
                name = f"{self._module_stack[-1]}.<{type(module).__name__}>".lstrip(".")
        self._module_stack.append(name)

    def _post_hook(self, module: torch.nn.Module, args: Any, output: Any) -> None:
        if self._module_stack:
            self._module_stack.pop()

    # -- enter / exit ---------------------------------------------------------------------------------------------
    def __enter__(self) -> "Recorder":
        from torch.nn.modules import module as nn_module
        self._handles.append(nn_module.register_module_forward_pre_hook(self._pre_hook))
        try:
            self._handles.append(nn_module.register_module_forward_hook(self._post_hook, always_call=True))
        except TypeError:  # pragma: no cover - torch < 2.0 has no always_call
            self._handles.append(nn_module.register_module_forward_hook(self._post_hook))
        self._restore_apply = patch_function_apply(self.run)
        self._mode = _Mode(self)
        self._mode.__enter__()
        return self

    def __exit__(self, *exc: Any) -> None:
        try:
            if self._mode is not None:
                self._mode.__exit__(*exc)
        finally:
            if self._restore_apply is not None:
                self._restore_apply()
                self._restore_apply = None
            for h in self._handles:
                h.remove()
            self._handles.clear()
            self._module_stack.clear()
            self._mode = None
        self._los = [c.lo for c in self.calls]

    # -- annotate a captured graph ---------------------------------------------------------------------------------
    def annotate(self, graph: GradGraph) -> int:
        """Write source/code/module/out_stride (and ``fwd_ms`` when timed) into the graph; returns how many nodes
        were attributed. For a call that made several nodes the forward time goes to the last one (the output's
        node), the others get 0.0 — the op ran once."""
        attributed = 0
        last_of: Dict[int, Tuple[Call, int]] = {}  # id(call) -> (call, its newest node)
        found: Dict[int, List[Any]] = {}  # node -> forward outputs, for nodes whose capture could not see them
        for n, d in graph.nx.nodes(data=True):
            call = self.call_for(d.get("seq"))
            if call is None:
                continue
            attributed += 1
            d["source"], d["code"], d["module"] = call.source, call.code, call.module
            outs = call.outputs.get(d["seq"])
            if outs:
                k = max(len(d.get("outputs") or ()), max(outs) + 1)
                d["out_stride"] = [outs[i][0] if i in outs else None for i in range(k)]
                d["out_contiguous"] = [outs[i][1] if i in outs else None for i in range(k)]
                if d.get("outputs") is None:
                    found[n] = [outs[i][2:] if i in outs else None for i in range(k)]
            if call.ms is not None:
                d["fwd_ms"] = 0.0
                prev = last_of.get(id(call))
                if prev is None or graph.nx.nodes[prev[1]]["seq"] < d["seq"]:
                    last_of[id(call)] = (call, n)
        for call, n in last_of.values():
            graph.nx.nodes[n]["fwd_ms"] = call.ms
        if found:
            from ..capture.records import fill_outputs
            fill_outputs(graph, found)
        graph.meta["traced"] = True
        return attributed


class _Mode(TorchFunctionMode):
    def __init__(self, recorder: Recorder) -> None:
        super().__init__()
        self.recorder = recorder

    def __torch_function__(self, func: Any, types: Any, args: Sequence[Any] = (), kwargs: Any = None) -> Any:
        return self.recorder.run(func, args, kwargs or {})



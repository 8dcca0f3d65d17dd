"""Where each node came from: source line, code, ``nn.Module`` path, and forward output strides.

How (public torch machinery, nothing left behind):

* A ``TorchFunctionMode`` sees every torch call the traced function makes. Autograd numbers nodes with a
  thread-local *sequence number* as it creates them; reading the next number before and after each call
  (``torch._C._autograd._get_sequence_nr``, a plain counter read) gives the exact range of node numbers that
  call created — including nodes that never surface as an output's ``grad_fn`` (``linear`` makes ``AddmmBackward0``
  *and* ``TBackward0``). Each node is later matched to its call by binary search on that range.
* ``torch.autograd.Function.apply`` does not go through torch-function modes, so while tracing it is wrapped to
  record its range the same way: custom nodes get their own line.
* Global module forward pre/post hooks keep a stack of the active ``nn.Module``s; names come from
  ``named_modules()`` of the outermost module, so paths read like ``encoder.layers.3.attn``.
* The user frame is the first frame outside torch and graphwidget; its line text comes from ``linecache``.

The mode, the ``apply`` wrapper and the module hooks are one :class:`~graphwidget.attribution.intercept.Interception`:
per thread (another thread's ops are not recorded), shared process-wide patches reference-counted, invisible to
torch.compile (a compiled region is one call, attributed to the line that called it), and :meth:`Recorder.close`
is idempotent so that callers can close again in a ``finally`` — a KeyboardInterrupt at any point leaves nothing.
"""
from __future__ import annotations

import bisect
import linecache
from types import FunctionType
from typing import Any, Callable, Dict, List, Mapping, Optional, Sequence, Tuple

import torch

from ..capturing.roots import flat_tensors
from ..capturing.seq import next_seq
from ..model.graph import GradGraph
from .frames import library_frame, library_line, traced_lines, user_frame, user_source
from .intercept import Interception, InterceptMode
from .shared_patch import dynamo_skip


class Call:
    """One intercepted torch call: the node sequence numbers it created and where it happened."""

    __slots__ = ("lo", "hi", "source", "code", "module", "outputs", "ms", "lib", "lines")

    def __init__(self, lo: int, hi: int, source: Optional[str], code: Optional[str], module: Optional[str],
                 outputs: Dict[int, Dict[int, Tuple[Any, ...]]], ms: Any) -> None:
        self.lo, self.hi = lo, hi  # node sequence numbers in [lo, hi)
        self.source, self.code, self.module = source, code, module
        self.outputs = outputs     # seq -> output_nr -> (stride, contiguous)
        self.ms = ms               # forward time of the call (or the timer's stamps), when timed
        self.lib: Optional[str] = None  # the library line that made the call ("torch/nn/functional.py:5432")
        self.lines: Sequence[Tuple[int, int, str, int]] = ()  # (lo, hi, file, line) inside a Python-level API

    def lib_source(self, seq: int) -> Optional[str]:
        """The innermost library line that made node ``seq``: the line inside a Python-level API that made it
        (``traced_lines``), else the library line that made this call, else ``None`` (user code made it)."""
        lines = self.lines
        if lines:
            i = bisect.bisect_right(lines, (seq, float("inf"))) - 1
            if i >= 0 and lines[i][0] <= seq < lines[i][1]:
                where = library_line(lines[i][2], lines[i][3])
                if where is not None:
                    return where
        return self.lib


class _Returns:
    """A callable (not a Python function: no line tracing) that returns what a call already returned."""

    __slots__ = ("value",)

    def __init__(self, value: Any) -> None:
        self.value = value

    def __call__(self) -> Any:
        return self.value


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
        #: module path -> class name, for every module named (what the viewer's frames say a module is)
        self.module_classes: Dict[str, str] = {}
        self.top_modules: List[torch.nn.Module] = []
        self._los: List[int] = []
        self._outer: List[Call] = []
        #: optional ``before(func, args, kwargs)`` / ``after(func, out)`` observer of every call (compare's
        #: per-node values: :class:`graphwidget.experiment.values.Tap`)
        self.tap: Any = None
        self._intercept = Interception(InterceptMode(handle=self.run), self._around,
                                       (self._pre_hook, self._post_hook), (self._region_start, self._region_end))

    # -- bookkeeping used by the mode and the apply wrapper ---------------------------------------------------------
    @dynamo_skip
    def _around(self, apply: Callable[..., Any], args: Sequence[Any], kwargs: Mapping[str, Any]) -> Any:
        return self.run(apply, args, kwargs)

    @dynamo_skip
    def _region_start(self) -> Tuple[Optional[int], Any]:
        # A torch.compile'd module's whole call (see Interception): one call, attributed to the line that made it.
        return (next_seq() if next_seq is not None else None), (self._timer[0]() if self._timer else None)

    @dynamo_skip
    def _region_end(self, start: Tuple[Optional[int], Any], output: Any) -> None:
        n = len(self.calls)
        self.run(_Returns(output), (), {}, start=start)
        if len(self.calls) > n:
            self.calls[-1].lib = None  # made by the compiled code, not by a library line

    @dynamo_skip
    def run(self, func: Callable[..., Any], args: Sequence[Any], kwargs: Optional[Mapping[str, Any]],
            start: Optional[Tuple[Optional[int], Any]] = None) -> Any:
        """Call ``func`` and record the nodes it made (``start``: the counter and timer token read earlier, for a
        call that already ran)."""
        if kwargs is None:
            kwargs = {}
        timer = self._timer
        if start is not None:
            lo, token = start
        else:
            lo = next_seq() if next_seq is not None else None
            token = timer[0]() if timer else None
        lines: Sequence[Tuple[int, int, str, int]] = ()
        tap = self.tap
        if tap is not None and start is None:
            tap.before(func, args, kwargs)
        if timer is None and type(func) is FunctionType:
            # A Python-level API (F.multi_head_attention_forward) that reached the mode as one call: which of its
            # lines made which node. Never in a timed run (the line tracer would be in the time).
            out, lines = traced_lines(func, args, kwargs)
        else:
            out = func(*args, **kwargs)
        ms = timer[1](token) if timer else None
        if tap is not None and start is None:
            tap.after(func, out)
        if lo is not None:
            hi = next_seq()
            if hi == lo:
                return out  # created no node: nothing to attribute
        outputs: Dict[int, Dict[int, Tuple[Any, ...]]] = {}
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
        source: Optional[str]
        code: Optional[str]
        if frame is not None:
            fname, line = frame.f_code.co_filename, frame.f_lineno
            source = user_source(fname, line)
            code = linecache.getline(fname, line).strip() or None
        else:
            source = code = None
        module = self._module_stack[-1] if self._module_stack else None
        call = Call(lo, hi, source, code, module, outputs, ms)
        lib = library_frame(3)  # inside torch.nn (say): where in it; the user's own call: None
        if lib is not None:
            call.lib = library_line(lib.f_code.co_filename, lib.f_lineno)
        call.lines = lines
        self.calls.append(call)
        return out

    def call_for(self, seq: Optional[int]) -> Optional[Call]:
        """The call that created the node numbered ``seq``, if it was recorded."""
        if seq is None or not self.calls:
            return None
        i = bisect.bisect_right(self._los, seq) - 1
        if i >= 0:
            c = self._outer[i]
            if c.lo <= seq < c.hi:
                return c
        return None

    # -- module stack ---------------------------------------------------------------------------------------------
    @dynamo_skip
    def _pre_hook(self, module: torch.nn.Module, args: Any) -> None:
        name = self._module_names.get(id(module))
        if name is None:
            if not self._module_stack:
                # An outermost module: name its whole tree relative to it ("" is the module itself).
                self.top_modules.append(module)
                for n, m in module.named_modules():
                    if id(m) not in self._module_names:
                        self._module_names[id(m)] = n
                        self.module_classes.setdefault(n, type(m).__name__)
                name = self._module_names[id(module)]
            else:
                name = f"{self._module_stack[-1]}.<{type(module).__name__}>".lstrip(".")
                self.module_classes.setdefault(name, type(module).__name__)
        self._module_stack.append(name)

    @dynamo_skip
    def _post_hook(self, module: torch.nn.Module, args: Any, output: Any) -> None:
        if self._module_stack:
            self._module_stack.pop()

    # -- enter / exit ---------------------------------------------------------------------------------------------
    def call(self, fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        """``fn(*args, **kwargs)`` inside the ``with`` block; a compiled ``fn`` (``torch.compile(function)``,
        ``module.compile()``) runs as compiled, as one call (see :meth:`Interception.call`)."""
        return self._intercept.call(fn, *args, **kwargs)

    def __enter__(self) -> "Recorder":
        self._intercept.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def close(self) -> None:
        """Stop recording: our mode off this thread's stack, shared patches released. Idempotent: call it again
        in a ``finally`` around the ``with`` block, so that an interrupt inside ``__exit__`` leaves nothing behind."""
        self._intercept.stop()
        self._module_stack.clear()
        # Outermost calls only, sorted: a call made inside another (a Function.apply inside a torch call, a compiled
        # region's apply inside the compiled module's call) belongs to the outer one, as in the profile's call_map.
        outer: List[Call] = []
        for c in sorted(self.calls, key=lambda c: (c.lo, -c.hi)):
            if not outer or c.lo >= outer[-1].hi:
                outer.append(c)
        self._outer = outer
        self._los = [c.lo for c in outer]

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
            d["lib_source"] = call.lib_source(d["seq"])
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
            from ..capturing.compat import fill_outputs
            fill_outputs(graph, found)
        graph.meta["traced"] = True
        if self.module_classes:
            graph.meta["modules"] = dict(self.module_classes)
        return attributed

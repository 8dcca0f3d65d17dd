"""Seeing every torch call of a forward: the one torch-function mode, plus ``Function.apply`` and module hooks,
started and stopped as one :class:`Interception`.

Used by the attribution :class:`~graphwidget.attribution.recorder.Recorder` and the profile's
:class:`~graphwidget.profiling.op_timer.OpTimer`. Three rules, each from a bug:

* **One mode class for everything** (:class:`InterceptMode`). torch.compile guards a compiled frame on the *types*
  on the torch-function mode stack, so a frame first run under our mode is compiled once more (from its caches:
  the same FX graph, the same kernels). One class means once per frame and process, not once per kind of
  instrumentation (trace, then profile's first run, then its other runs).
* **Invisible to Dynamo**: the mode's ``__torch_function__`` starts with
  :func:`~graphwidget.attribution.shared_patch.dynamo_compiling` and then just calls the op, so Dynamo traces it to
  nothing — no graph break, the user's compiled region stays one region (one ``CompiledFunctionBackward`` node).
* **Leaving is idempotent and exact**: :meth:`Interception.stop` takes *our* mode off the stack wherever it is
  (other modes stay), and releases the shared patches; calling it again does nothing. Callers call it from the
  ``with`` block's exit and again from a ``finally`` around it, so a KeyboardInterrupt at any line leaves nothing.
"""
from __future__ import annotations

import sys
from typing import Any, Callable, List, Optional, Sequence, Tuple

import torch
from torch.overrides import TorchFunctionMode

from ..capturing.seq import next_seq
from .function_apply import Around, add_around, remove_around
from .module_hooks import Post, Pre, add_listener, remove_listener, resume, suspend
from .shared_patch import dynamo_compiling, dynamo_skip, hide_from_dynamo

Handle = Callable[[Callable[..., Any], Sequence[Any], Any], Any]


class InterceptMode(TorchFunctionMode):
    """graphwidget's torch-function mode. Either times each call itself (``stamp`` and ``extend`` given: the lean
    op timer, inlined here because it runs on every op of every measured forward) or hands it to
    ``handle(func, args, kwargs)`` (the recorder). Keeps ``TorchFunctionMode``'s own ``__enter__``/``__exit__``
    (Dynamo supports graph breaks only under such modes)."""

    def __init__(self, handle: Optional[Handle] = None, stamp: Optional[Callable[[], Any]] = None,
                 extend: Optional[Callable[[Tuple[Any, ...]], None]] = None) -> None:
        super().__init__()
        self.handle, self.stamp, self.extend = handle, stamp, extend

    @dynamo_skip
    def __torch_function__(self, func: Any, types: Any, args: Sequence[Any] = (), kwargs: Any = None) -> Any:
        if dynamo_compiling():  # traced by Dynamo: trace the op only
            return func(*args, **kwargs) if kwargs else func(*args)
        stamp = self.stamp
        if stamp is None:
            return self.handle(func, args, kwargs)  # type: ignore[misc]
        lo = next_seq()
        t0 = stamp()
        out = func(*args, **kwargs) if kwargs else func(*args)
        t1 = stamp()
        hi = next_seq()
        if hi != lo:
            self.extend((lo, hi, t0, t1))  # type: ignore[misc]
        return out


def push_mode(mode: TorchFunctionMode) -> None:
    torch._C._push_on_torch_function_stack(mode)


def remove_mode(mode: TorchFunctionMode) -> None:
    """Take ``mode`` off this thread's torch-function mode stack wherever it is; modes above it (pushed by ``fn`` and
    left there by an exception) are put back in order. Nothing happens when it is not on the stack."""
    C = torch._C
    n = C._len_torch_function_stack()
    if not any(C._get_function_stack_at(i) is mode for i in range(n)):
        return
    above: List[Any] = []
    while True:
        top = C._pop_torch_function_stack()
        if top is mode:
            break
        above.append(top)
    for m in reversed(above):
        C._push_on_torch_function_stack(m)


def mode_active(mode: TorchFunctionMode) -> bool:
    """Is ``mode`` on this thread's torch-function mode stack?"""
    C = torch._C
    return any(C._get_function_stack_at(i) is mode for i in range(C._len_torch_function_stack()))


def compiled_module(module: Any) -> bool:
    """Is ``module`` a ``torch.compile(module)`` wrapper (``OptimizedModule``)? Without importing Dynamo: if it was
    never imported, no such wrapper exists."""
    ef = sys.modules.get("torch._dynamo.eval_frame")
    opt = getattr(ef, "OptimizedModule", None)
    if opt is not None and isinstance(module, opt):
        hide_from_dynamo()
        return True
    return False


def compiled_callable(fn: Any) -> bool:
    """Is ``fn`` itself compiled code with no eager entry of its own: ``torch.compile(function)`` or a module after
    ``module.compile()``? (``torch.compile(module)`` wrappers are seen by the module hooks instead.)"""
    if compiled_module(fn):
        return False
    if getattr(fn, "_torchdynamo_orig_callable", None) is not None:
        compiled = not getattr(fn, "_torchdynamo_disable", False)
    else:
        compiled = isinstance(fn, torch.nn.Module) and getattr(fn, "_compiled_call_impl", None) is not None
    if compiled:
        hide_from_dynamo()
    return compiled


RegionStart = Callable[[], Any]
RegionEnd = Callable[[Any, Any], None]


class Interception:
    """The mode, a ``Function.apply`` ``around`` and (optionally) module listeners, for the calling thread.

    **Compiled modules run as the user compiled them.** While a ``torch.compile(module)`` wrapper runs, our mode is
    off the stack (taken off in the wrapper's pre hook, put back in its post hook, which also runs when forward
    raises): Dynamo's guards then see the mode stack the user compiled with and run the user's compiled code —
    nothing is compiled again, nothing of ours runs inside. The wrapper's whole call is reported as one call,
    ``regions[0]()`` before and ``regions[1](token, output)`` after (its nodes' sequence numbers, its time): a
    compiled region is one ``CompiledFunctionBackward`` node with its time. (``torch.compile(fn)`` and
    ``module.compile()`` have no such eager entry: there Dynamo compiles the frame once more for our mode, tracing
    our ``__torch_function__`` to nothing, and the region is seen as its ``CompiledFunction.apply``.)
    """

    def __init__(self, mode: InterceptMode, around: Around, modules: Optional[Tuple[Pre, Post]] = None,
                 regions: Optional[Tuple[RegionStart, RegionEnd]] = None) -> None:
        self.mode, self.around, self.modules, self.regions = mode, around, modules, regions
        self._open: List[Tuple[bool, Any]] = []  # per open compiled-module call: (mode taken off?, region token)
        self._listeners = (self._pre, self._post)

    @dynamo_skip(recursive=True)
    def _pre(self, module: Any, args: Any) -> None:
        region = compiled_module(module) or compiled_callable(module)
        if self.modules is not None and isinstance(module, torch.nn.Module):
            self.modules[0](module, args)
        if region:
            on = mode_active(self.mode)
            if on:
                remove_mode(self.mode)
            self._open.append((on, self.regions[0]() if self.regions is not None else None))

    @dynamo_skip(recursive=True)
    def _post(self, module: Any, args: Any, output: Any) -> None:
        if (compiled_module(module) or compiled_callable(module)) and self._open:
            on, token = self._open.pop()
            if self.regions is not None:
                self.regions[1](token, output)
            if on and not mode_active(self.mode):
                push_mode(self.mode)
        if self.modules is not None and isinstance(module, torch.nn.Module):
            self.modules[1](module, args, output)

    def call(self, fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        """``fn(*args, **kwargs)``; when ``fn`` is itself compiled (:func:`compiled_callable`), it runs as a
        compiled module does: our mode off, one region."""
        if not compiled_callable(fn):
            return fn(*args, **kwargs)
        self._pre(fn, args)
        out = None
        suspended = False
        try:
            suspended = suspend()  # the global module hooks out of the dicts the compiled frame is guarded on
            out = fn(*args, **kwargs)
        finally:
            if suspended:
                resume()
            self._post(fn, args, out)
        return out

    def start(self) -> None:
        try:
            add_around(self.around)
            add_listener(self._listeners, self)
            push_mode(self.mode)
        except BaseException:  # interrupted half-way: undo what was done
            self.stop()
            raise

    def stop(self) -> None:
        """Undo :meth:`start`; idempotent, so it can be called again after an interrupt (callers do)."""
        remove_mode(self.mode)
        resume()  # an interrupt between suspend and resume in call(): other users get their hooks back
        remove_listener(self._listeners, self)
        remove_around(self.around)
        self._open.clear()

"""The forward op timer: stamps every torch call (and ``Function.apply``) that creates autograd nodes."""
from __future__ import annotations

from typing import Any, Callable, Dict, List, Tuple

from ..attribution.intercept import Interception, InterceptMode
from ..attribution.shared_patch import dynamo_skip
from ..capturing.seq import next_seq


class OpTimer:
    """Records ``(seq_lo, seq_hi, start, end)`` for every torch call (and ``Function.apply``) that creates nodes.

    Kept minimal on purpose: it runs on every op of every measured forward (the timing itself is inlined in
    :class:`~graphwidget.attribution.intercept.InterceptMode`). The four numbers go into one flat list of ints: a
    surviving tuple per call would be GC-tracked, and thousands of them trigger extra collections inside the user's
    forward; ints are not tracked, and the temporary tuple dies at once.

    Per thread, invisible to torch.compile, and :meth:`close` is idempotent (see
    :class:`~graphwidget.attribution.intercept.Interception`).
    """

    def __init__(self, stamp: Callable[[], Any]) -> None:
        self.flat: List[Any] = []
        self._stamp = stamp
        self._extend = self.flat.extend
        self._intercept = Interception(InterceptMode(stamp=stamp, extend=self._extend), self._around,
                                       regions=(self._region_start, self._region_end))

    @property
    def calls(self) -> List[Tuple[int, int, Any, Any]]:
        f = self.flat
        return list(zip(f[0::4], f[1::4], f[2::4], f[3::4]))

    @dynamo_skip
    def _around(self, apply: Callable[..., Any], args: Tuple[Any, ...], kwargs: Dict[str, Any]) -> Any:
        # Function.apply bypasses torch-function modes: custom autograd.Functions are timed here.
        stamp = self._stamp
        lo, t0 = next_seq(), stamp()
        out = apply(*args, **kwargs)
        t1, hi = stamp(), next_seq()
        if hi != lo:
            self._extend((lo, hi, t0, t1))
        return out

    @dynamo_skip
    def _region_start(self) -> Tuple[int, Any]:
        return next_seq(), self._stamp()  # a torch.compile'd module's call: timed as one call

    @dynamo_skip
    def _region_end(self, token: Tuple[int, Any], output: Any) -> None:
        t1, hi = self._stamp(), next_seq()
        if hi != token[0]:
            self._extend((token[0], hi, token[1], t1))

    def call(self, fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        """``fn(*args, **kwargs)`` inside the ``with`` block; a compiled ``fn`` (``torch.compile(function)``,
        ``module.compile()``) runs as compiled, as one call (see :meth:`Interception.call`)."""
        return self._intercept.call(fn, *args, **kwargs)

    def __enter__(self) -> "OpTimer":
        self._intercept.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def close(self) -> None:
        """Stop timing (idempotent: callers call it again in a ``finally``)."""
        self._intercept.stop()

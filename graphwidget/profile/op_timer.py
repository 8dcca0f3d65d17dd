"""The forward op timer: stamps every torch call (and ``Function.apply``) that creates autograd nodes."""
from __future__ import annotations

from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

from torch.overrides import TorchFunctionMode

from ..attribution.function_apply import patch_function_apply
from ..capture.seq import next_seq


class OpTimer(TorchFunctionMode):
    """Records ``(seq_lo, seq_hi, start, end)`` for every torch call (and ``Function.apply``) that creates nodes.

    Kept minimal on purpose: it runs on every op of every measured forward. The four numbers go into one flat list of
    ints: 10k surviving tuples would be GC-tracked and trigger extra collections inside the user's forward (measured:
    +18 ms on the 10k-op chain); ints are not tracked, and the temporary tuple dies at once."""

    def __init__(self, stamp: Callable[[], Any]) -> None:
        super().__init__()
        self.flat: List[Any] = []
        self._stamp = stamp
        self._extend = self.flat.extend
        self._restore_apply: Optional[Callable[[], None]] = None

    @property
    def calls(self) -> List[Tuple[int, int, Any, Any]]:
        f = self.flat
        return list(zip(f[0::4], f[1::4], f[2::4], f[3::4]))

    def __torch_function__(self, func: Any, types: Any, args: Sequence[Any] = (), kwargs: Any = None) -> Any:
        stamp = self._stamp
        lo = next_seq()
        t0 = stamp()
        out = func(*args, **kwargs) if kwargs else func(*args)
        t1 = stamp()
        hi = next_seq()
        if hi != lo:
            self._extend((lo, hi, t0, t1))
        return out

    def __enter__(self) -> "OpTimer":
        super().__enter__()
        # Function.apply bypasses torch-function modes; wrap it so custom autograd.Functions are timed too.
        extend, stamp = self._extend, self._stamp

        def around(apply: Callable[..., Any], args: Tuple[Any, ...], kwargs: Dict[str, Any]) -> Any:
            lo, t0 = next_seq(), stamp()
            out = apply(*args, **kwargs)
            t1, hi = stamp(), next_seq()
            if hi != lo:
                extend((lo, hi, t0, t1))
            return out

        self._restore_apply = patch_function_apply(around)
        return self

    def __exit__(self, *exc: Any) -> None:
        try:
            if self._restore_apply is not None:
                self._restore_apply()
                self._restore_apply = None
        finally:
            super().__exit__(*exc)

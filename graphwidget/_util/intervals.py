"""A distribution-free interval for a median: order statistics, no resampling, so it is the same every time for the
same samples (the checkpoint advice and the rank report must not move with a seed)."""
from __future__ import annotations

from math import comb
from typing import Optional, Sequence, Tuple


def median_interval(xs: Sequence[Optional[float]], level: float = 0.9
                    ) -> Optional[Tuple[float, float, float]]:
    """``(median, lo, hi)`` of the values that are not ``None``: ``lo``/``hi`` are the ``k``-th smallest and largest
    values, ``k`` the largest for which the true median lies between them with probability >= ``level`` under
    independent draws (binomial with p = 1/2). Too few values for ``level``: the smallest and the largest (their
    coverage is lower, and says so by being only as wide as the data). ``None`` for no values."""
    v = sorted(x for x in xs if x is not None)
    n = len(v)
    if not n:
        return None
    med = v[n // 2] if n % 2 else (v[n // 2 - 1] + v[n // 2]) / 2
    k = 1
    # P(median outside [x_(k), x_(n-k+1)]) = 2 * P(Binom(n, 1/2) <= k - 1)
    while k + 1 <= n // 2 and 2 * sum(comb(n, i) for i in range(k + 1)) / 2 ** n <= 1 - level:
        k += 1
    return med, v[k - 1], v[n - k]

"""The statistics every stage uses: one median, one mean, one bootstrap interval."""
from __future__ import annotations

import random
from typing import Callable, List, Optional, Sequence, Tuple


def median(xs: Sequence[Optional[float]]) -> Optional[float]:
    """Median of the values that are not ``None`` (the mean of the middle two for an even count); ``None`` if none."""
    v = sorted(x for x in xs if x is not None)
    n = len(v)
    if not n:
        return None
    return v[n // 2] if n % 2 else (v[n // 2 - 1] + v[n // 2]) / 2


def mean(xs: Sequence[Optional[float]]) -> Optional[float]:
    """Mean of the values that are not ``None``; ``None`` if none."""
    v = [x for x in xs if x is not None]
    return sum(v) / len(v) if v else None


def bootstrap_interval(pairs: Sequence[Tuple[float, float]], stat: Callable[[Sequence[Tuple[float, float]]], float],
                       level: float = 0.95, resamples: int = 2000, seed: int = 0) -> Tuple[float, float]:
    """Percentile bootstrap interval of ``stat`` over paired samples (resampling whole pairs, so the drift that hits
    both members of a pair stays out of the spread). Deterministic for a given ``seed``."""
    if not pairs:
        raise ValueError("bootstrap_interval needs at least one pair")
    rng = random.Random(seed)
    n = len(pairs)
    values: List[float] = []
    for _ in range(resamples):
        values.append(stat([pairs[rng.randrange(n)] for _ in range(n)]))
    values.sort()
    lo = values[int((1 - level) / 2 * (resamples - 1))]
    hi = values[int((1 + level) / 2 * (resamples - 1))]
    return lo, hi

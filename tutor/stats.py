"""Statistics over the harness's raw timing samples (pure Python: no numpy in the tutor's hot path).

Speedups are per-round paired ratios (rounds are interleaved, so each pair
shares the same machine state), summarised by their median and a
distribution-free confidence interval from order statistics: no normality is
assumed, and the same samples always give the same bound.
"""

from __future__ import annotations

import math
import statistics
from dataclasses import dataclass


@dataclass(frozen=True)
class Estimate:
    median: float
    low: float   # lower end of the confidence interval
    high: float
    n: int

    def spread(self) -> float:
        """Half-width of the interval relative to the median."""
        return (self.high - self.low) / 2 / self.median if self.median else math.inf


def _binom_cdf(k: int, n: int) -> float:
    return sum(math.comb(n, i) for i in range(k + 1)) / 2**n


def median_interval(values: list[float], confidence: float = 0.95) -> Estimate:
    """Median with an order-statistic interval: P(x_(j) <= median <= x_(n-j+1)) >= confidence."""
    xs = sorted(values)
    n = len(xs)
    if n == 0:
        raise ValueError("no samples")
    alpha = (1 - confidence) / 2
    j = 0
    while j + 1 <= n // 2 and _binom_cdf(j, n) <= alpha:
        j += 1
    # j is the count of points cut from each end (0 when n is too small for the confidence).
    low, high = (xs[j - 1], xs[n - j]) if j > 0 else (xs[0], xs[-1])
    return Estimate(statistics.median(xs), low, high, n)


def speedup(reference_ms: list[float], candidate_ms: list[float]) -> Estimate:
    """How many times faster the candidate is than the reference, round by round."""
    ratios = [r / c for r, c in zip(reference_ms, candidate_ms, strict=True) if c > 0]
    return median_interval(ratios)


def coefficient_of_variation(values: list[float]) -> float:
    return statistics.stdev(values) / statistics.mean(values) if len(values) > 1 else 0.0

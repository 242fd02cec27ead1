"""The ratio of two sides measured in alternating rounds, with how far it can be trusted.

On a shared 2-core VM one run of either side varies by a third and the machine's speed drifts
within minutes, so a ratio of two medians says little about how sure it is. Each round runs both
sides back to back, on the same machine state; the figure here is the median of the rounds' own
ratios (Ergon's run over the baseline's run of the same round) with a bootstrap interval of that
median (the rounds resampled with replacement; a fixed seed, so a printed figure can be
reproduced from the printed runs).

An aim is shown *met* when the whole interval is at or under it, *not met* when the whole
interval is above it, and *not shown* otherwise (and always below :data:`MIN_ROUNDS` rounds):
more rounds narrow the interval.
"""

from __future__ import annotations

import random
import statistics
from collections.abc import Sequence
from dataclasses import dataclass

#: resamples of the bootstrap; the interval's ends move by under 0.01 between seeds at this count
RESAMPLES = 4000
#: the interval's coverage
COVERAGE = 0.90
#: fewer rounds than this decide nothing: the bootstrap of one or two ratios is only those ratios
MIN_ROUNDS = 3


@dataclass(frozen=True)
class PairedRatio:
    """Median of per-round ratios and its bootstrap interval."""

    median: float
    low: float
    high: float
    rounds: int

    def verdict(self, aim: float) -> str:
        if self.rounds < MIN_ROUNDS:
            return "not shown"
        if self.high <= aim:
            return "met"
        if self.low > aim:
            return "not met"
        return "not shown"

    def describe(self, aim: float) -> str:
        return (f"paired ratio {self.median:.2f} ({COVERAGE:.0%} interval {self.low:.2f}-{self.high:.2f}, "
                f"{self.rounds} rounds): aim <= {aim} {self.verdict(aim)}")


def paired_ratio(side: Sequence[float], baseline: Sequence[float], *, seed: int = 0) -> PairedRatio:
    """``side[i] / baseline[i]`` per round; their median and its bootstrap interval."""
    if len(side) != len(baseline) or not side:
        raise ValueError("paired_ratio needs one baseline run per run of the side, at least one")
    ratios = [s / b for s, b in zip(side, baseline, strict=True)]
    rng = random.Random(seed)
    medians = sorted(statistics.median(rng.choices(ratios, k=len(ratios))) for _ in range(RESAMPLES))
    tail = (1 - COVERAGE) / 2
    low = medians[int(tail * RESAMPLES)]
    high = medians[min(RESAMPLES - 1, int((1 - tail) * RESAMPLES))]
    return PairedRatio(statistics.median(ratios), low, high, len(ratios))

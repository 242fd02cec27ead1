"""Retry jitter draws from a generator of its own: code that seeds :mod:`random` in the same
process (a tool wanting a reproducible draw) gets the same numbers whether or not a retry's
delay was drawn in between."""

from __future__ import annotations

import random
from collections.abc import Callable

import pytest

from compiler.ir import RetryPolicy
from flows.llm import gateway
from flows.runtime import attempts
from flows.triggers import retries

POLICY = RetryPolicy(retries=3, delay_seconds=2.0, backoff=2.0, jitter=0.5)

DRAWS: dict[str, Callable[[], object]] = {
    "a node's retry delay": lambda: attempts._jittered(2.0, 0.5),
    "a schedule's retry delays": lambda: retries.backoff_delays(POLICY),
    "a model call's backoff": lambda: gateway.backoff_seconds(1),
}


@pytest.mark.parametrize("draw", DRAWS.values(), ids=DRAWS.keys())
def test_a_jittered_delay_leaves_the_seeded_global_random_alone(draw: Callable[[], object]) -> None:
    random.seed(7)
    expected = [random.random() for _ in range(3)]
    random.seed(7)
    first = random.random()
    draw()
    assert [first, random.random(), random.random()] == expected


def test_the_jitter_still_varies_within_its_bounds() -> None:
    delays = {attempts._jittered(2.0, 0.5) for _ in range(50)}
    assert len(delays) > 1 and all(2.0 <= d <= 3.0 for d in delays)
    bases = attempts.retry_delays(POLICY)
    for delays_of_a_schedule in (retries.backoff_delays(POLICY) for _ in range(20)):
        assert all(base * 0.5 <= d <= base * 1.5 for base, d in zip(bases, delays_of_a_schedule, strict=True))
    backoffs = {gateway.backoff_seconds(1) for _ in range(50)}
    assert len(backoffs) > 1 and all(0.75 <= b <= 1.25 for b in backoffs)

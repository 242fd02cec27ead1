"""A visit's attempts run in this process: the node's retry policy without a Prefect task run.

Where Prefect runs a visit as a task run, Prefect's retries carry out the node's ``retry``
(:mod:`flows.prefect.executor`). Two places run attempts themselves, with the same decision of
what is retried (:mod:`flows.runtime.retries`) and the same ``timeout_seconds`` per attempt:

* the items of a ``foreach`` with ``task_runs: node`` (:mod:`flows.runtime.engine`): they run
  inside the node's one task run, each retried by its body's policy, with its delays —
  exponential backoff capped at ``max_delay_seconds``, each delay lengthened by up to ``jitter``
  of itself, at random (so items that failed together do not all come back at once);
* ``ergon test``'s in-process executor (:mod:`flows.testing.backend`), without the delays: a test
  checks what a retry does, not how long it waits.
"""

from __future__ import annotations

import asyncio
import random
from collections.abc import Awaitable, Callable
from typing import TypeVar

from compiler.ir import RetryPolicy
from flows.runtime.retries import retried_names, retries

T = TypeVar("T")

#: The jitter's own generator: the module-level functions of :mod:`random` share one state with
#: the user's code in this process (a tool that seeds ``random`` for a reproducible draw), which a
#: retry's jitter would otherwise move.
_RANDOM = random.Random()


def retry_delays(policy: RetryPolicy) -> list[float]:
    """The wait before each retry: delay, delay·backoff, delay·backoff², … each capped."""
    return [min(policy.delay_seconds * policy.backoff**i, policy.max_delay_seconds) for i in range(policy.retries)]


def _jittered(delay: float, jitter: float) -> float:
    """The delay plus up to ``jitter`` of it, drawn at random."""
    return delay + _RANDOM.uniform(0, delay * jitter) if jitter else delay


async def run_attempts(policy: RetryPolicy, attempt_fn: Callable[[int], Awaitable[T]], *, wait: bool = True) -> T:
    """``attempt_fn(1)``, then again with the next attempt number while the policy retries the
    error; the last error is raised. ``wait=False`` skips the delays between attempts."""
    attempt = 1
    while True:
        try:
            if policy.timeout_seconds:
                return await asyncio.wait_for(attempt_fn(attempt), policy.timeout_seconds)
            return await attempt_fn(attempt)
        except Exception as exc:
            # worked out only on a failure: most attempts succeed, and a large fan-out makes many
            if attempt > policy.retries or not retries(exc, retried_names(policy.retry_on)):
                raise
            delay = retry_delays(policy)[attempt - 1]
            if wait and delay > 0:
                await asyncio.sleep(_jittered(delay, policy.jitter))
            attempt += 1

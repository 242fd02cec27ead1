"""Which errors a node's retry policy tries again: one decision for every executor.

A node's ``retry`` names error kinds in ``retry_on`` (``timeout``, ``rate_limit``,
``server_error``, ``connection``, or an exception class name); none named means every error is
retried. Some errors are never retried, whatever the policy says, because running the visit
again cannot change them (:data:`NEVER_RETRIED`): a write the context refuses, no transition
matching, a cancelled run, an input refused, a spent budget.

Prefect's executor (:mod:`flows.prefect.executor`) asks it from the task run's retry condition;
the in-process executor of ``ergon test`` (:mod:`flows.testing.backend`) from its attempt loop.
"""

from __future__ import annotations

from flows.runtime.errors import BudgetExhausted, InputRejected, NoTransition, RunCancelled, WriteRejected

#: Errors that retrying cannot fix.
NEVER_RETRIED = (WriteRejected, NoTransition, RunCancelled, InputRejected, BudgetExhausted)

#: Error kinds a retry policy may name, beyond exception class names.
ERROR_KINDS: dict[str, tuple[str, ...]] = {
    "timeout": ("TimeoutError", "TimedOut", "ReadTimeout", "ConnectTimeout"),
    "rate_limit": ("RateLimitError", "TooManyRequests"),
    "server_error": ("InternalServerError", "ServiceUnavailableError", "APIError", "BadGatewayError"),
    "connection": ("ConnectionError", "APIConnectionError", "ConnectError"),
}


def retried_names(retry_on: tuple[str, ...] | list[str]) -> frozenset[str]:
    """The exception class names (and state names) a policy's ``retry_on`` kinds stand for."""
    return frozenset(n for kind in retry_on for n in ERROR_KINDS.get(kind, (kind,)))


def retries(exc: BaseException | None, names: frozenset[str], state_name: str = "") -> bool:
    """Whether a visit that failed with ``exc`` is tried again under a policy retrying ``names``
    (:func:`retried_names`; empty: every error). Without the exception, ``state_name`` (a
    Prefect state's, such as ``TimedOut``) stands for it."""
    if isinstance(exc, NEVER_RETRIED):
        return False
    if not names:
        return True
    seen = {cls.__name__ for cls in type(exc).__mro__} if exc is not None else {state_name}
    return bool(seen & names)

"""Runtime errors: one class per way a run can stop, each with a message for the run record (all :class:`~flows.errors.RunError`)."""

from __future__ import annotations

from flows.errors import RunError


class NodeFailed(RunError):
    """A node visit failed; the run fails unless a policy (foreach collect_errors) absorbs it."""


class WriteRejected(NodeFailed):
    """A node tried to write outside its `writes`, against `context.schema`, or over the size cap.

    Never retried: the same input gives the same rejection.
    """


class NoTransition(NodeFailed):
    """No transition guard matched after a node."""


class RunCancelled(RunError):
    """The run was cancelled (checked between nodes)."""


class InputRejected(NodeFailed):
    """The node's call is wrong as written (unknown tool, arguments refused). Never retried."""


class BudgetExhausted(NodeFailed):
    """The node or the run reached its token/cost budget. Never retried."""


def with_visit_input(exc: BaseException, received: object) -> BaseException:
    """Mark ``exc`` with what the failing body received (its rendered arguments): the engine
    records it as the failed visit's input, so a failure can be read next to its input. Returns
    ``exc`` (raise it again); an exception that takes no attributes is left as it is."""
    try:
        exc.visit_input = received  # type: ignore[attr-defined]
    except AttributeError:
        pass
    return exc

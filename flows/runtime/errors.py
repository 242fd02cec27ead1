"""Runtime errors: one class per way a run can stop, each with a message for the run record (all :class:`~flows.errors.RunError`).

Every failure is also recorded with its **kind** (``node_visits.error_kind``, ``runs.error_kind``),
which says whose fault it is — the one thing a message's wording must not be parsed for:

============== ===========================================================================
kind           what it means
============== ===========================================================================
``definition`` the definition cannot run as written: a template reads a missing field, a
               write is outside ``writes`` or refused by ``context.schema``, no transition
               matches, an unknown tool, interaction or process, arguments or an
               interaction input that do not fit their schema. ``ergon check`` promises that
               none of these happen to a definition it passes (tests/runtime/test_soundness.py).
``world``      the outside world failed or refused: a tool raised, an HTTP request or a
               document store refused, the model could not be reached, a budget ran out,
               nobody answered a task in time, the data was over a limit.
``model``      the model answered outside its contract (output that stays invalid after
               repair, a ``_next_node`` it was not offered, an agent that never finishes, a
               supervisor that steers a run past the bounds of its policy).
``internal``   none of the above: a bug in Ergon.
============== ===========================================================================

:func:`error_kind` gives the kind of any exception: a :class:`NodeFailed` that says its kind
(the class's, or one given where it is raised), else the kind of the error it was raised from
(``__cause__``, then the exception being handled when it was raised, ``__context__``), else
the kind of the known error classes of the tools, the model layer, the templates and the
definitions, else ``internal``.
"""

from __future__ import annotations

from typing import Literal, get_args

from flows.errors import RunError

ErrorKind = Literal["definition", "world", "model", "internal"]
ERROR_KINDS: tuple[ErrorKind, ...] = get_args(ErrorKind)


class NodeFailed(RunError):
    """A node visit failed; the run fails unless a policy (foreach collect_errors) absorbs it.

    ``kind`` is the :data:`ErrorKind` (None: that of the error it was raised from)."""

    kind: ErrorKind | None = None

    def __init__(self, message: str = "", *, kind: ErrorKind | None = None) -> None:
        super().__init__(message)
        if kind is not None:
            self.kind = kind


class WriteRejected(NodeFailed):
    """A node tried to write outside its `writes` or against `context.schema`.

    Never retried: the same input gives the same rejection.
    """

    kind: ErrorKind | None = "definition"


class ContextTooLarge(WriteRejected):
    """A write would grow the context over its size cap: the data was too big, not the definition wrong."""

    kind: ErrorKind | None = "world"


class NoTransition(NodeFailed):
    """No transition guard matched after a node."""

    kind: ErrorKind | None = "definition"


class Advanced(RunError):
    """An admin advanced a run while it waited for a person (:func:`flows.runs.controls.advance`):
    the task was withdrawn and the visit goes to ``target`` instead of taking an answer."""

    def __init__(self, target: str, note: str) -> None:
        super().__init__(note)
        self.target = target


class RunCancelled(RunError):
    """The run was cancelled (checked between nodes)."""


class InputRejected(NodeFailed):
    """The node's call is wrong as written (unknown tool, arguments refused). Never retried."""

    kind: ErrorKind | None = "definition"


class BudgetExhausted(NodeFailed):
    """The node or the run reached its token/cost budget. Never retried."""

    kind: ErrorKind | None = "world"


class LimitReached(NodeFailed):
    """The run went past one of its bounds: its node visits (``metadata.max_visits``: kind
    ``world``, like a budget) or what its supervisor may ask (``metadata.supervisor.max_*``: kind
    ``model``, given where it is raised). The message names the bound and the key that raises it."""

    kind: ErrorKind | None = "world"


def error_kind(exc: BaseException | None) -> ErrorKind:
    """The :data:`ErrorKind` of ``exc`` (see the module docstring)."""
    seen: set[int] = set()
    while exc is not None and id(exc) not in seen:
        seen.add(id(exc))
        kind = _own_kind(exc)
        if kind is not None:
            return kind
        exc = exc.__cause__ or exc.__context__
    return "internal"


def _own_kind(exc: BaseException) -> ErrorKind | None:
    # Imported here: the model layer and the tools import this package's neighbours.
    from jinja2 import TemplateError

    from compiler.errors import CompileError
    from flows.errors import DefinitionError
    from flows.humans import TaskExpired
    from flows.llm.interactions import InvalidInput, PromptError
    from flows.llm.types import AgentStuck, BudgetExceeded, InvalidOutput, LlmError
    from flows.tools.errors import ToolArgumentError, ToolError, UnknownTool

    if isinstance(exc, NodeFailed):
        return exc.kind
    if isinstance(exc, (TemplateError, CompileError, DefinitionError, UnknownTool, ToolArgumentError,
                        InvalidInput, PromptError)):
        return "definition"
    if isinstance(exc, (InvalidOutput, AgentStuck)):
        return "model"
    if isinstance(exc, (BudgetExceeded, LlmError, ToolError, TaskExpired, TimeoutError, ConnectionError)):
        return "world"
    return None


def with_visit_input(exc: BaseException, received: object) -> BaseException:
    """Mark ``exc`` with what the failing body received (its rendered arguments): the engine
    records it as the failed visit's input, so a failure can be read next to its input. Returns
    ``exc`` (raise it again); an exception that takes no attributes is left as it is."""
    try:
        exc.visit_input = received  # type: ignore[attr-defined]
    except AttributeError:
        pass
    return exc

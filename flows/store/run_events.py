"""A run's audit trail beside its visits (:class:`~flows.store.models.RunEvent`).

Three kinds of rows, all appended, never changed except a message's delivery mark:

* ``command`` — what a supervisor or an operator asked of the run (``set_context``,
  ``transition_to``...), with its arguments, ``accepted`` or ``refused`` and the reason;
* ``message`` — text a person posted to a supervised run's supervisor; ``delivered_at`` is set
  when the supervisor was shown it (its next turn), so a message is delivered once;
* ``event`` — a process event the supervisor was told of (run started, node failed...).
"""

from __future__ import annotations

from typing import Any

from sqlmodel import col, select

from flows.store._common import add_row, check
from flows.store.db import session
from flows.store.models import RunEvent, utcnow

RUN_EVENT_KINDS = ("command", "message", "event")
COMMAND_OUTCOMES = ("accepted", "refused")


def add_event(run_id: str, kind: str, name: str, *, actor: str | None = None, node_id: str | None = None,
              args: Any = None, outcome: str | None = None, reason: str | None = None) -> RunEvent:
    """Append one row to the run's trail."""
    check(kind, RUN_EVENT_KINDS, "run event kind")
    check(outcome, COMMAND_OUTCOMES, "command outcome")
    return add_row(RunEvent(run_id=run_id, kind=kind, name=name, actor=actor, node_id=node_id, args=args,
                            outcome=outcome, reason=reason))


def events_for_run(run_id: str, *, kind: str | None = None) -> list[RunEvent]:
    """The run's trail, oldest first (one kind, or all)."""
    with session() as s:
        q = select(RunEvent).where(RunEvent.run_id == run_id)
        if kind is not None:
            q = q.where(RunEvent.kind == kind)
        return list(s.exec(q.order_by(col(RunEvent.at), col(RunEvent.id))).all())


def take_messages(run_id: str) -> list[RunEvent]:
    """The messages posted to the run's supervisor and not shown to it yet, marked delivered now
    (in the same transaction: a message is delivered once)."""
    with session(write=True) as s:
        q = (select(RunEvent).where(RunEvent.run_id == run_id, RunEvent.kind == "message",
                                    col(RunEvent.delivered_at).is_(None))
             .order_by(col(RunEvent.at), col(RunEvent.id)))
        rows = list(s.exec(q).all())
        now = utcnow()
        for row in rows:
            row.delivered_at = now
            s.add(row)
        return rows

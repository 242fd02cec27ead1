"""What people do to a supervised run from outside it: post a message to its supervisor.

A message is a ``message`` row of the run's trail (:mod:`flows.store.run_events`); the run's
supervisor is shown every message not shown yet with its next process event (each exactly once,
:func:`flows.store.run_events.take_messages`). A message to a run that is not supervised, or that
is over (completed, cancelled), is refused: nobody would ever read it. A failed or crashed run's
supervisor reads it when the run resumes.
"""

from __future__ import annotations

from flows.errors import RunError
from flows.store import run_events
from flows.store.models import Run

#: the longest message accepted (it goes into a model's prompt)
MAX_MESSAGE_CHARS = 4000
#: runs that never execute again (a failed or crashed run may resume: its supervisor reads it then)
OVER = ("completed", "cancelled")


class MessageRefused(RunError):
    """The message cannot reach a supervisor (the reason says why)."""


def post_message(run: Run, text: str, *, actor: str | None) -> None:
    """Post ``text`` to ``run``'s supervisor, as ``actor``."""
    text = text.strip()
    if not text:
        raise MessageRefused("the message is empty")
    if len(text) > MAX_MESSAGE_CHARS:
        raise MessageRefused(f"the message has {len(text):,} characters, over the {MAX_MESSAGE_CHARS:,} allowed")
    if run.run_type != "supervised":
        raise MessageRefused(f"run {run.id} is not supervised: it has no supervisor to read a message (a run started "
                             "with `ergon run NAME --supervised` has one)")
    if run.status in OVER:
        raise MessageRefused(f"run {run.id} is {run.status}: its supervisor reads no more messages")
    run_events.add_event(run.id, "message", "message", actor=actor, args={"text": text})

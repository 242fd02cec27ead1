"""Which triggers exist, and what they are called.

A trigger has no name of its own in YAML; it is the ``index``-th entry of its definition's
``triggers:`` list. Ergon names it ``<definition>:<index>`` on the command line and in the
dashboard, and ``trigger-<index>`` as the slug of its Prefect schedule (Prefect records that slug
as the creator of every flow run the schedule makes, which is how a run finds its trigger).
The store's ``TriggerState`` rows use the same ``(definition, index)`` key.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from pydantic import TypeAdapter

from compiler.ir import Trigger
from flows.errors import DefinitionError

#: Who a trigger acts for when its ``as_user`` is not set.
DEFAULT_USER = "ergon"
SCHEDULE_KINDS = ("cron", "interval")
_SLUG = re.compile(r"^trigger-(\d+)$")
_ADAPTER: TypeAdapter = TypeAdapter(Trigger)


@dataclass(frozen=True)
class TriggerRef:
    """One trigger of one definition."""

    definition: str
    index: int
    trigger: Any  # a compiler.ir trigger model

    @property
    def name(self) -> str:
        return trigger_name(self.definition, self.index)

    @property
    def kind(self) -> str:
        return self.trigger.type

    @property
    def acting_user(self) -> str:
        return self.trigger.as_user or DEFAULT_USER


def trigger_name(definition: str, index: int) -> str:
    return f"{definition}:{index}"


def schedule_slug(index: int) -> str:
    """The slug of the Prefect schedule of trigger ``index``."""
    return f"trigger-{index}"


def index_from_slug(slug: str | None) -> int | None:
    match = _SLUG.match(slug or "")
    return int(match.group(1)) if match else None


def trigger_models(source: Any) -> list[Any]:
    """The triggers of an IR definition, a Plan (whose triggers are plain dicts), or a list."""
    items = source if isinstance(source, list) else getattr(source, "triggers", None) or []
    return [t if hasattr(t, "type") else _ADAPTER.validate_python(t) for t in items]


def refs_of(definition: str, source: Any) -> list[TriggerRef]:
    return [TriggerRef(definition, i, t) for i, t in enumerate(trigger_models(source))]


def all_refs(catalog: Any) -> list[TriggerRef]:
    """Every trigger of every runnable definition of the catalog's folder that parsed."""
    from compiler.plan import RUNNABLE_KINDS

    refs: list[TriggerRef] = []
    for name, unit in sorted(catalog.ws.named(*RUNNABLE_KINDS).items()):
        if unit.defn is not None:
            refs.extend(refs_of(name, unit.defn))
    return refs


class UnknownTrigger(DefinitionError, KeyError):
    """A trigger name that matches nothing; the message says what exists."""

    def __str__(self) -> str:
        return str(self.args[0])


def find(refs: list[TriggerRef], name: str, *, kinds: tuple[str, ...] | None = None) -> list[TriggerRef]:
    """The triggers ``name`` designates: ``DEF:INDEX`` one trigger, ``DEF`` all of its triggers
    (of ``kinds``). Raises :class:`UnknownTrigger` when nothing matches."""
    pool = [r for r in refs if kinds is None or r.kind in kinds]
    found = [r for r in pool if r.name == name or r.definition == name]
    if not found:
        from compiler.errors import choices_hint

        names = [r.name for r in pool]
        raise UnknownTrigger(f"no trigger is named `{name}`; " + choices_hint(name, names, what="triggers")
                             + " (names are DEFINITION:INDEX, as `ergon schedules` lists them)")
    return found

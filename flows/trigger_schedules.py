"""Cron and interval triggers → Prefect schedules: the names and rules (no Prefect import).

Decision: **one deployment per definition, one Prefect schedule per trigger**. Prefect 3.9
schedules carry their own ``parameters`` (merged over the deployment's) and a ``slug``, so each
trigger's ``input`` rides on its schedule and the slug ``trigger-<index>`` identifies the trigger:
Prefect records it as the ``created_by`` of every flow run the schedule makes, which the flow
body reads (:mod:`flows.triggers.origin`) to act for the trigger's ``as_user`` and to apply its
retry policy. One deployment also keeps Prefect's UI tidy (a definition = a flow = a deployment)
and lets a schedule be paused alone (``active``) without touching the others.

:func:`flows.prefect.schedules.prefect_schedules` makes the Prefect objects; this module has the
names and the parts of it that need no Prefect. It is shared by ``ergon serve`` and ``ergon
deploy`` (``prefect.yaml``).
Triggers with ``enabled: false`` — and triggers paused with ``ergon schedules pause`` when a
``paused`` set is given — become inactive schedules rather than disappearing, so resuming them is
a flag change in Prefect, not a redeploy.
"""

from __future__ import annotations

import datetime as dt
from typing import Any


#: Interval schedules count from a fixed anchor so that a restarted `serve` keeps the same ticks.
INTERVAL_ANCHOR = dt.datetime(2020, 1, 1, tzinfo=dt.timezone.utc)


def deployment_name(definition_name: str) -> str:
    """The Prefect deployment that carries a definition's schedules (``<flow>/<deployment>``
    is then ``<definition>/<definition>``, as ``ergon deploy`` names it too)."""
    return definition_name


def full_deployment_name(definition_name: str) -> str:
    """``flow/deployment``, what ``read_deployment_by_name`` and ``run_deployment`` take."""
    return f"{definition_name}/{deployment_name(definition_name)}"


def flow_parameters(trigger: Any, accepted: set[str] | None) -> dict[str, Any]:
    """The part of a trigger's ``input`` that are flow parameters (the Plan's input schema).

    The rest — fields ``context.initial`` sets, which are not parameters of the flow and which
    Prefect would refuse — is applied by the flow body itself (:mod:`flows.triggers.retries`).
    """
    return {k: v for k, v in trigger.input.items() if accepted is None or k in accepted}


def describe(trigger: Any) -> str:
    """A short human form of a trigger's schedule (``cron 0 9 * * 1-5 Europe/Paris``, ``every 30s``,
    ``after source (ok)``, ``contract_input submission updated (filtered)``)."""
    if trigger.type == "cron":
        return f"cron {trigger.cron}" + (f" ({trigger.timezone})" if trigger.timezone and trigger.timezone != "UTC" else "")
    if trigger.type == "interval":
        return f"every {trigger.every:g}s" if isinstance(trigger.every, (int, float)) else f"every {trigger.every}"
    if trigger.type == "webhook":
        return f"POST {trigger.path}"
    if trigger.type == "on_complete":
        return f"after {trigger.definition}" + (f" ({', '.join(trigger.outcomes)})" if trigger.outcomes else "")
    if trigger.type in ("on_submission_created", "on_submission_updated"):
        verb = "created" if trigger.type == "on_submission_created" else "updated"
        return f"{trigger.form} submission {verb}" + (" (filtered)" if trigger.filter is not None else "")
    return trigger.type

"""The `triggers` pass: a definition's `triggers:` can actually fire and start a valid run.

The parser already knows the shape of each trigger; this pass checks what only makes sense
against the rest of the folder, so that `ergon serve` / `ergon deploy` never meet a schedule
Prefect refuses or a chain to nowhere:

* ``bad-value`` — a cron expression that is not 5 valid fields, an unknown IANA time zone, an
  interval that is not a positive duration, a webhook path that does not start with ``/`` or is
  used by two triggers of the folder, an on-complete ``outcomes`` entry that names no node of the
  definition it waits for;
* ``unknown-process`` — an on-complete trigger waiting for a definition that does not exist;
* ``unknown-field`` — a key of ``input`` or ``map`` that is not a field of the definition's
  ``context.schema`` (when the schema lists its fields), which every start would refuse;
* ``bad-value`` — a literal ``input`` value that the field's schema refuses (same reason).
"""

from __future__ import annotations

from collections.abc import Iterator

from compiler.context_schema import literal_value_error
from compiler.errors import Finding, choices_hint, did_you_mean
from compiler.ir import CronTrigger, IntervalTrigger, OnCompleteTrigger, PipelineDef, ProcessDef, WebhookTrigger
from compiler.passes.references import RUNNABLE_KINDS
from compiler.schedule_syntax import cron_error, interval_seconds, timezone_error


def check(unit, ws) -> Iterator[Finding]:
    triggers = getattr(unit.defn, "triggers", None)
    if not triggers:
        return
    fields = _context_fields(unit.defn)
    runnable = ws.named(*RUNNABLE_KINDS)
    for i, trigger in enumerate(triggers):
        path = ("triggers", i)
        if isinstance(trigger, CronTrigger):
            problem = cron_error(trigger.cron)
            if problem:
                yield Finding("bad-value", (*path, "cron"), f"cron `{trigger.cron}`: {problem}",
                              hint="e.g. `0 9 * * 1-5` (09:00 on weekdays), `*/15 * * * *` (every 15 minutes)")
            problem = timezone_error(trigger.timezone)
            if problem:
                yield Finding("bad-value", (*path, "timezone"), problem,
                              hint=did_you_mean(trigger.timezone, _zone_names()) or "see the IANA tz database names")
        elif isinstance(trigger, IntervalTrigger):
            try:
                interval_seconds(trigger.every)
            except ValueError as exc:
                yield Finding("bad-value", (*path, "every"), str(exc), hint="e.g. `every: 30s`, `every: 5m`, `every: 3600`")
        elif isinstance(trigger, WebhookTrigger):
            yield from _webhook(trigger, path, unit, ws)
        elif isinstance(trigger, OnCompleteTrigger):
            yield from _on_complete(trigger, path, runnable)
            yield from _keys(trigger.map, (*path, "map"), fields, unit.defn)
        yield from _keys(trigger.input, (*path, "input"), fields, unit.defn)
        yield from _input_values(trigger.input, (*path, "input"), unit.defn)


def _input_values(mapping: dict, path, defn) -> Iterator[Finding]:
    """A literal input the field's schema refuses: every run the trigger starts would be refused."""
    if not isinstance(defn, (ProcessDef, PipelineDef)):
        return
    for key, value in mapping.items():
        problem = literal_value_error(defn.context, key, value)
        if problem is not None:
            message, inner = problem
            yield Finding("bad-value", (*path, key, *inner), message,
                          hint=f"give `{key}` a value of the declared type; every run this trigger starts would be refused")


def _context_fields(defn) -> set[str] | None:
    """The fields a run of ``defn`` accepts, or None when they are not listed (no check)."""
    if isinstance(defn, (ProcessDef, PipelineDef)):
        props = (defn.context.schema_ or {}).get("properties")
        return set(props) if isinstance(props, dict) and props else None
    return None  # templates and workflows take their inputs through forms and vars


def _keys(mapping: dict, path, fields: set[str] | None, defn) -> Iterator[Finding]:
    if fields is None:
        return
    for key in mapping:
        if key not in fields:
            yield Finding("unknown-field", (*path, key), f"`{key}` is not a field of this definition's context",
                          hint=choices_hint(key, fields, what="fields"), at_key=True)


def _webhook(trigger: WebhookTrigger, path, unit, ws) -> Iterator[Finding]:
    if not trigger.path.startswith("/") or "?" in trigger.path or "#" in trigger.path:
        yield Finding("bad-value", (*path, "path"), f"webhook path `{trigger.path}` must start with `/` and hold no `?` or `#`",
                      hint="e.g. `/hooks/invoice`")
        return
    for other in ws.units:
        if other is unit:
            break  # the first definition using a path keeps it; later ones are reported
        for t in getattr(other.defn, "triggers", None) or ():
            if isinstance(t, WebhookTrigger) and t.path.rstrip("/") == trigger.path.rstrip("/"):
                yield Finding("bad-value", (*path, "path"), f"webhook path `{trigger.path}` is already used by `{other.name}`",
                              hint="give each webhook trigger its own path")
                return
    earlier = unit.defn.triggers[: path[-1]]
    if any(isinstance(t, WebhookTrigger) and t.path.rstrip("/") == trigger.path.rstrip("/") for t in earlier):
        yield Finding("bad-value", (*path, "path"), f"webhook path `{trigger.path}` is used twice in this definition",
                      hint="give each webhook trigger its own path")


def _on_complete(trigger: OnCompleteTrigger, path, runnable) -> Iterator[Finding]:
    source = runnable.get(trigger.definition)
    if source is None:
        yield Finding("unknown-process", (*path, "definition"), f"on_complete waits for `{trigger.definition}`, which is not defined",
                      hint=choices_hint(trigger.definition, runnable, what="runnable definitions"))
        return
    nodes = getattr(source.defn, "nodes", None)
    if not trigger.outcomes or not isinstance(nodes, dict):
        return
    for j, outcome in enumerate(trigger.outcomes):
        if outcome not in nodes:
            yield Finding("bad-value", (*path, "outcomes", j),
                          f"`{outcome}` is not a node of `{trigger.definition}` (an outcome is the id of the final node a run ends on)",
                          hint=choices_hint(outcome, nodes, what="its nodes"))


def _zone_names() -> list[str]:
    from compiler.schedule_syntax import _zones

    return sorted(_zones())

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
* ``bad-value`` — a literal ``input`` value that the field's schema refuses (same reason);
* ``maybe-unset`` — an on-complete ``map`` template reading a field the finished run may not
  have set (:func:`compiler.passes.definite_assignment.set_at_completion`): the chained start
  would fail to render it.

Submission triggers (``on_submission_created`` / ``on_submission_updated``):

* ``unknown-form`` — ``form`` names no form of the folder (with a did-you-mean);
* ``guard-invalid`` — ``filter`` is not a valid JSON Logic rule; ``unknown-field`` — it reads a
  group the form does not have, or a field its group does not have (``{"var": "group.field"}``,
  ``group.N.field`` in a repeating group);
* ``bad-value`` — a template's trigger names a form other than its own ``input_form`` (the run
  starts with the submission as its input), or gives ``input`` / ``map`` (it has no other inputs);
* ``missing-field`` — a process's or pipeline's trigger leaves a required input (one that
  ``context.initial`` and a ``default`` do not set) out of ``input`` and ``map``, so every start
  would be refused (on-complete triggers too); ``unknown-field`` — a ``map`` template reads a name other than
  ``submission``, ``submission_id`` and ``form``.
"""

from __future__ import annotations

from collections.abc import Iterator

from compiler.context_schema import literal_value_error
from compiler.errors import Finding, choices_hint, did_you_mean
from compiler import guards as jl
from compiler.ir import (
    CronTrigger,
    FormDef,
    IntervalTrigger,
    OnCompleteTrigger,
    OnSubmissionCreatedTrigger,
    OnSubmissionUpdatedTrigger,
    PipelineDef,
    ProcessDef,
    TemplateDef,
    WebhookTrigger,
)
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
            yield from _chained_inputs(trigger, path, runnable, unit.defn)
        elif isinstance(trigger, (OnSubmissionCreatedTrigger, OnSubmissionUpdatedTrigger)):
            yield from _on_submission(trigger, path, unit.defn, ws)
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


def _chained_inputs(trigger: OnCompleteTrigger, path, runnable, defn) -> Iterator[Finding]:
    """A chained start renders its ``map`` over the finished run's context and is refused when a
    template reads a field that run may not have set, or when a required input is given nothing."""
    from compiler.passes.definite_assignment import set_at_completion
    from compiler.templates import template_reads

    source = runnable.get(trigger.definition)
    upstream = source.defn if source is not None else None
    if isinstance(upstream, (ProcessDef, PipelineDef)):
        sure = set_at_completion(upstream, trigger.outcomes)
        declared = set((upstream.context.schema_ or {}).get("properties") or {})
        own = (defn.context.schema_ or {}).get("properties") if isinstance(defn, (ProcessDef, PipelineDef)) else None
        for key, template in trigger.map.items():
            if isinstance(own, dict) and own and key not in own:
                continue  # not a field here: unknown-field already says so
            try:
                reads = template_reads(template) if isinstance(template, str) else set()
            except Exception:  # noqa: BLE001 - a template that does not parse is the templates pass's finding
                continue
            for name in sorted(reads - declared) if declared else []:
                yield Finding("unknown-field", (*path, "map", key),
                              f"`{name}` is not a field of `{trigger.definition}`: the chained start would fail to render this map",
                              hint=choices_hint(name, declared, what=f"fields of `{trigger.definition}`"))
            for name in sorted((reads & declared) - sure):
                yield Finding("maybe-unset", (*path, "map", key),
                              f"`{name}` may be unset when a run of `{trigger.definition}` completes: the chained start "
                              "would fail to render this map",
                              hint=f"read a field `{trigger.definition}` sets on every path to its end, or set `{name}` "
                              "in its context.initial")
    if isinstance(defn, (ProcessDef, PipelineDef)):
        for name in _required_inputs(defn):
            if name not in trigger.input and name not in trigger.map:
                yield Finding("missing-field", (*path, "map") if trigger.map else path,
                              f"`{name}` is a required input of `{defn.name}` and this trigger gives it no value, "
                              "so every run it starts would be refused",
                              hint=f'map it from the finished run, e.g. `{name}: "{{{{ FIELD }}}}"`', at_key=bool(trigger.map))


#: The names a submission trigger's ``map`` templates see.
SUBMISSION_SCOPE = frozenset({"submission", "submission_id", "form"})


def _on_submission(trigger: OnSubmissionCreatedTrigger | OnSubmissionUpdatedTrigger, path, defn, ws) -> Iterator[Finding]:
    forms = ws.named("form")
    unit = forms.get(trigger.form)
    form = unit.defn if unit is not None and isinstance(unit.defn, FormDef) else None
    if form is None:
        yield Finding("unknown-form", (*path, "form"), f"{trigger.type} names `{trigger.form}`, which is not a form",
                      hint=choices_hint(trigger.form, forms, what="defined forms"))
    if trigger.filter is not None:
        yield from _filter(trigger.filter, (*path, "filter"), form)
    if isinstance(defn, TemplateDef):
        if trigger.form != defn.input_form and form is not None:
            yield Finding("bad-value", (*path, "form"),
                          f"template `{defn.name}` reads `{defn.input_form}` submissions: a trigger on `{trigger.form}` "
                          "would start it with a submission of another form as its input",
                          hint=f"write `form: {defn.input_form}`, or start a process that maps the values it needs")
        for key in ("input", "map"):
            if getattr(trigger, key):
                yield Finding("bad-value", (*path, key),
                              f"a template's {trigger.type} trigger starts it with the submission as its input; "
                              f"`{key}` would give it nothing", hint=f"remove `{key}`", at_key=True)
        return
    for key, template in trigger.map.items():
        from compiler.templates import template_reads

        try:
            reads = template_reads(template) if isinstance(template, str) else set()
        except Exception:  # noqa: BLE001 - a template that does not parse is the templates pass's finding
            reads = set()
        for name in sorted(reads - SUBMISSION_SCOPE):
            yield Finding("unknown-field", (*path, "map", key),
                          f"`{name}` is not known here: the map of {trigger.type} sees `submission` (the submission's data), "
                          "`submission_id` and `form`",
                          hint=did_you_mean(name, SUBMISSION_SCOPE) or f"e.g. `{{{{ submission.{name} }}}}`")
    if isinstance(defn, (ProcessDef, PipelineDef)):
        for name in _required_inputs(defn):
            if name not in trigger.input and name not in trigger.map:
                yield Finding("missing-field", (*path, "map"),
                              f"`{name}` is a required input of `{defn.name}` and this trigger gives it no value, "
                              "so every run it starts would be refused",
                              hint=f'map it from the submission, e.g. `{name}: "{{{{ submission.GROUP.FIELD }}}}"`', at_key=bool(trigger.map))


def _required_inputs(defn) -> list[str]:
    schema = defn.context.schema_ or {}
    required = schema.get("required")
    if not isinstance(required, list):
        return []
    props = schema.get("properties")
    props = props if isinstance(props, dict) else {}
    return [name for name in required if isinstance(name, str) and name not in defn.context.initial
            and not (isinstance(props.get(name), dict) and "default" in props[name])]


def _filter(rule, path, form: FormDef | None) -> Iterator[Finding]:
    if isinstance(rule, bool):
        return
    if not isinstance(rule, dict):
        yield Finding("guard-invalid", path, "a filter must be a JSON Logic rule (a mapping with one operator)",
                      hint='e.g. `{"==": [{"var": "preferences.audience"}, "legal"]}`')
        return
    info = jl.analyse(rule)
    errors = [p for p in info.problems if p[3] == "error"]
    for pointer, _code, message, _severity in errors:
        yield Finding("guard-invalid", (*path, *jl.pointer_to_path(pointer, rule)), message,
                      hint='e.g. `{"==": [{"var": "preferences.audience"}, "legal"]}`')
    if errors or form is None:
        return
    groups = {g.name: g for g in form.groups}
    for at, _first, _needed in info.sites:
        var = _at(rule, at)
        if not isinstance(var, str):
            continue
        parts = var.split(".")
        group = groups.get(parts[0])
        if group is None:
            yield Finding("unknown-field", (*path, *at), f"form `{form.name}` has no group `{parts[0]}`",
                          hint=choices_hint(parts[0], groups, what="its groups"))
            continue
        rest = parts[1:]
        if group.repeat and rest and rest[0].isdigit():
            rest = rest[1:]
        fields = {f.name for f in group.fields}
        if rest and rest[0] not in fields:
            yield Finding("unknown-field", (*path, *at), f"group `{group.name}` of form `{form.name}` has no field `{rest[0]}`",
                          hint=choices_hint(rest[0], fields, what="its fields"))


def _at(rule, pointer):
    """The value at ``pointer`` (a path of keys and indexes) inside ``rule``, or None."""
    node = rule
    for part in pointer:
        try:
            node = node[part]
        except (KeyError, IndexError, TypeError):
            return None
    return node


def _zone_names() -> list[str]:
    from compiler.schedule_syntax import _zones

    return sorted(_zones())

"""The checks, one module per concern, run in this order by ``compiler.check``.

Each module exposes ``check(unit, ws) -> Iterable[Finding]``. A pass must never raise on user
input: whatever it cannot make sense of, an earlier pass (or the parser) has already reported.
"""

from compiler.passes import (
    authoring,
    call_cycles,
    definite_assignment,
    email_tools,
    environments,
    fallbacks,
    graph_shape,
    guards,
    javascript_steps,
    lowered_kinds,
    prompts,
    references,
    skills,
    templates,
    template_values,
    tool_calls,
    triggers,
    write_races,
    write_types,
)

PASSES = (
    graph_shape.check,
    authoring.check,
    references.check,
    skills.check,  # the skills agents name (`learn_<skill>`) and the tools they unlock
    call_cycles.check,
    templates.check,
    guards.check,
    fallbacks.check,  # a way out of every process node when its guards all fail
    definite_assignment.check,
    write_races.check,
    write_types.check,
    tool_calls.check,  # a Python tool's arguments and result against its type hints
    template_values.check,  # a filter or a member read on a value of a type that has it
    lowered_kinds.check,
    prompts.check,  # interaction prompt segments in their formats
    javascript_steps.check,  # the code of runJavascriptCode workflow steps
    triggers.check,  # schedules, webhook paths, on-complete chains
    environments.check,  # model keys and limits
    email_tools.check,  # send_email only where tools/email.yaml configures it
)

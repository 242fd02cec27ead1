"""A run's inputs, checked against its definition once, before the run starts.

:func:`validate_inputs` is what the run owner checks a start with (the CLI, the dashboard's
form, webhooks, chained runs): unknown fields, missing required ones, types, as diagnostics that
name where the value came from. :func:`context_problems` is the check of a run nobody validated
before its flow body started (a deployment run, a sub-process): the same schema, as plain text
for the run's error.
"""

from __future__ import annotations

import json
from typing import Any

from compiler import Diagnostic
from compiler.errors import did_you_mean
from compiler.plan import Plan
from flows.runtime.context import MAX_CONTEXT_BYTES
from flows.schema import schema_errors, validator_for

#: A problem message quotes at most this much of a value (a refused input is never echoed whole).
MAX_QUOTED = 300


def _size_problem(inputs: dict[str, Any], source: str) -> Diagnostic | None:
    """Inputs that cannot fit the run's context (capped at 64 KB) are refused before anything else."""
    try:
        size = len(json.dumps(inputs, default=str).encode("utf-8"))
    except (TypeError, ValueError) as exc:  # e.g. a number too long to write out
        return Diagnostic("invalid-input", f"the inputs cannot be stored: {str(exc)[:MAX_QUOTED]}", source, 1, 1)
    if size <= MAX_CONTEXT_BYTES:
        return None
    return Diagnostic("invalid-input", f"the inputs are {size:,} bytes; a run's context is capped at 64 KB "
                      f"({MAX_CONTEXT_BYTES:,} bytes)", source, 1, 1, "",
                      "add large data as a document (`ergon documents add FILE`) and pass its id")


def validate_inputs(plan: Plan, inputs: dict[str, Any], source: str = "--input") -> list[Diagnostic]:
    """Check inputs against the context schema: size, unknown fields, missing required ones, types."""
    too_large = _size_problem(inputs, source)
    if too_large is not None:
        return [too_large]
    props = plan.context_schema.get("properties", {})
    problems: list[Diagnostic] = []
    if props:  # a schema that lists its fields: anything else is a typo
        for key in inputs:
            if key not in props:
                problems.append(Diagnostic("invalid-input", f"`{key}` is not a field of {plan.name}'s context", source, 1, 1, key,
                                           did_you_mean(key, props) or f"fields are: {', '.join(props)}"))
    merged = {**plan.context_initial, **inputs}
    for name in plan.input_schema.get("required", []):
        if name not in merged:
            desc = (props.get(name) or {}).get("description")
            problems.append(Diagnostic("invalid-input", f"missing required input `{name}`", source, 1, 1, name,
                                       f"pass --input {name}=..." + (f" ({desc})" if desc else "")))
    for err in validator_for(plan.context_schema).iter_errors(merged):
        if err.validator == "required":
            continue  # reported above, with a hint
        path = ".".join(str(p) for p in err.absolute_path)
        message = err.message if len(err.message) <= MAX_QUOTED else err.message[:MAX_QUOTED] + "…"
        problems.append(Diagnostic("invalid-input", message, source, 1, 1, path))
    return problems


def context_problems(plan: Plan, context: dict[str, Any]) -> list[str]:
    """What is wrong with a fresh run's initial context (empty when it may start)."""
    problems = schema_errors(plan.context_schema, context)
    missing = [k for k in plan.input_schema.get("required", []) if k not in context]
    if missing:
        problems.insert(0, f"missing required input(s): {', '.join(missing)}")
    return problems

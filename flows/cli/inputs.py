"""Run inputs from the command line: ``--input KEY=VALUE`` and ``--input-file FILE``.

Values are read as JSON when they parse as JSON (``amount=5`` is a number, ``tags=["a"]`` a
list) and as plain strings otherwise, then checked against the definition's ``context.schema``.
Problems are reported in the compiler's diagnostic style, naming where the bad value came from.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import yaml

from compiler import Diagnostic
from compiler.errors import did_you_mean
from compiler.plan import Plan
from flows.runtime.context import validator_for


def parse_pairs(pairs: list[str]) -> tuple[dict[str, Any], list[Diagnostic]]:
    values: dict[str, Any] = {}
    problems: list[Diagnostic] = []
    for i, pair in enumerate(pairs, start=1):
        if "=" not in pair:
            problems.append(Diagnostic("invalid-input", f"`{pair}` is not KEY=VALUE", "--input", i, 1, "",
                                       "write --input name=value (values are JSON when they parse as JSON)"))
            continue
        key, raw = pair.split("=", 1)
        try:
            values[key.strip()] = json.loads(raw)
        except json.JSONDecodeError:
            values[key.strip()] = raw
    return values, problems


def read_input_file(path: str) -> tuple[dict[str, Any], list[Diagnostic]]:
    try:
        data = yaml.safe_load(Path(path).read_text(encoding="utf-8"))
    except (OSError, yaml.YAMLError) as exc:
        return {}, [Diagnostic("invalid-input", f"cannot read input file: {exc}", path, 1, 1)]
    if not isinstance(data, dict):
        return {}, [Diagnostic("invalid-input", "the input file must hold a mapping of field: value", path, 1, 1)]
    return data, []


def validate_inputs(plan: Plan, inputs: dict[str, Any], source: str = "--input") -> list[Diagnostic]:
    """Check inputs against the context schema: unknown fields, missing required ones, types."""
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
        problems.append(Diagnostic("invalid-input", err.message, source, 1, 1, path))
    return problems

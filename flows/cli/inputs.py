"""Run inputs from the command line: ``--input KEY=VALUE`` and ``--input-file FILE``.

Values are read as JSON when they parse as JSON (``amount=5`` is a number, ``tags=["a"]`` a
list) and as plain strings otherwise. Checking them against the definition is the run owner's
(:func:`flows.runs.inputs.validate_inputs`); problems are reported in the compiler's diagnostic
style, naming where the bad value came from.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import yaml

from compiler import Diagnostic


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

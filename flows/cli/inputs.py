"""Run inputs from the command line: ``--input KEY=VALUE`` and ``--input-file FILE``.

Values are read as JSON when they parse as JSON (``amount=5`` is a number, ``tags=["a"]`` a
list) and as plain strings otherwise. An input file is read by the definitions' own bounded
loader (:mod:`compiler.source`: size, nesting, alias expansion and number-length limits, binary
files refused), so a hostile file is a diagnostic with its place, never a hang or a traceback.
Checking the values against the definition (and the size cap) is the run owner's
(:func:`flows.execution.inputs.validate_inputs`); problems are reported in the compiler's diagnostic
style, naming where the bad value came from.
"""

from __future__ import annotations

import json
from typing import Any

from compiler import Diagnostic
from compiler.source import load_file


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
        except ValueError as exc:  # a number longer than Python converts (4,300 digits)
            problems.append(Diagnostic("invalid-input", f"`{key.strip()}`: {str(exc).split('; use')[0]}", "--input", i, 1,
                                       key.strip(), "quote it to pass it as text: --input 'name=\"…\"'"))
    return values, problems


def read_input_file(path: str) -> tuple[dict[str, Any], list[Diagnostic]]:
    doc = load_file(path)
    if doc.findings:
        problems = []
        for finding in doc.findings:
            line, col = doc.source.locate(finding.path) if doc.source else (1, 1)
            message = ("the input file must hold a mapping of field: value" if finding.code == "not-a-mapping"
                       else finding.message)
            problems.append(Diagnostic("invalid-input", message, path, line, col, "", finding.hint))
        return {}, problems
    return dict(doc.data), []

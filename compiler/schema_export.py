"""JSON Schema of the definition kinds, generated from the IR (`ergon schema`).

Editors with a YAML language server use it for completion and checking; see docs/cli.md (Editor support) for
the `# yaml-language-server: $schema=...` line and the VS Code setting.
"""

from __future__ import annotations

from typing import Any

from pydantic import TypeAdapter

from compiler.ir import KINDS, Definition

SCHEMA_URI = "https://json-schema.org/draft/2020-12/schema"


def definition_schema(kind: str | None = None) -> dict[str, Any]:
    """The JSON Schema of one kind, or of any definition when ``kind`` is None."""
    if kind is None:
        schema = TypeAdapter(Definition).json_schema(by_alias=True)
        schema["title"] = "Ergon definition"
    else:
        if kind not in KINDS:
            raise KeyError(f"unknown kind `{kind}`; kinds are: {', '.join(KINDS)}")
        schema = KINDS[kind].model_json_schema(by_alias=True)
        ref = schema.pop("$ref", None)
        if ref:  # recursive kinds (a process holds inline processes) come as a bare $ref: inline it
            schema = {**schema["$defs"][ref.rsplit("/", 1)[-1]], **schema}
    return {"$schema": SCHEMA_URI, **schema}

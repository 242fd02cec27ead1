"""`ergon schema`: the JSON Schema editors use, generated from the IR — and the IR documented."""

from __future__ import annotations

import json

import jsonschema
import pytest
from pydantic import BaseModel

import compiler.ir as ir
from compiler.schema_export import definition_schema
from compiler.source import load_file
from compiler.workspace import definition_files
from flows.cli import run as cli


def test_every_ir_field_is_documented():
    undocumented = [
        f"{name}.{field}"
        for name, model in vars(ir).items()
        if isinstance(model, type) and issubclass(model, BaseModel) and model.__module__ == "compiler.ir"
        for field, info in model.model_fields.items()
        if not info.description
    ]
    assert undocumented == []


@pytest.mark.parametrize("kind", list(ir.KINDS))
def test_each_kind_schema_is_valid_and_documented(kind):
    schema = definition_schema(kind)
    jsonschema.Draft202012Validator.check_schema(schema)
    assert schema["additionalProperties"] is False
    assert all("description" in prop for prop in schema["properties"].values())


def test_examples_validate_against_the_published_schema():
    """What an editor's YAML language server says about definitions/ agrees with `ergon check`."""
    validator = jsonschema.Draft202012Validator(definition_schema())
    from pathlib import Path

    files = definition_files(Path("definitions"))
    assert files
    for path in files:
        errors = list(validator.iter_errors(load_file(path).data))
        assert errors == [], f"{path}: {errors[0].message if errors else ''}"


def test_schema_command_prints_json(capsys):
    assert cli(["schema", "--kind", "process"]) == 0
    schema = json.loads(capsys.readouterr().out)
    assert "nodes" in schema["properties"] and "$defs" in schema
    assert cli(["schema", "--kind", "nope"]) == 2

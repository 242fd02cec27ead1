"""Forms compile to JSON Schema: groups, repeats, field types, required."""

from __future__ import annotations

import jsonschema

from compiler.forms import form_schema
from compiler.ir import FormDef

FORM = FormDef.model_validate({
    "kind": "form",
    "name": "deal",
    "description": "A deal to review.",
    "groups": [
        {"name": "company", "required": True, "label": "Company", "fields": [
            {"name": "name", "type": "string", "required": True, "label": "Name"},
            {"name": "notes", "type": "text"},
            {"name": "revenue", "type": "number"},
            {"name": "employees", "type": "integer"},
            {"name": "listed", "type": "boolean"},
            {"name": "founded", "type": "date"},
            {"name": "sector", "type": "select", "options": ["tech", "retail"], "description": "Main sector."},
            {"name": "deck", "type": "document"},
        ]},
        {"name": "contacts", "repeat": True, "required": True, "fields": [
            {"name": "email", "type": "string", "required": True},
        ]},
        {"name": "extras", "repeat": True, "fields": [{"name": "x", "type": "string"}]},
    ],
})


def test_field_types():
    props = form_schema(FORM)["properties"]["company"]["properties"]
    assert props["name"] == {"type": "string", "title": "Name"}
    assert props["notes"] == {"type": "string", "format": "text"}
    assert props["revenue"] == {"type": "number"}
    assert props["employees"] == {"type": "integer"}
    assert props["listed"] == {"type": "boolean"}
    assert props["founded"] == {"type": "string", "format": "date"}
    assert props["sector"] == {"type": "string", "enum": ["tech", "retail"], "description": "Main sector."}
    assert props["deck"] == {"type": "string", "format": "document", "editor": "document"}


def test_groups_repeats_and_required():
    schema = form_schema(FORM)
    assert schema["type"] == "object"
    assert schema["required"] == ["company", "contacts"]
    assert schema["additionalProperties"] is False
    company = schema["properties"]["company"]
    assert company["type"] == "object" and company["required"] == ["name"] and company["title"] == "Company"
    contacts = schema["properties"]["contacts"]
    assert contacts["type"] == "array" and contacts["minItems"] == 1
    assert contacts["items"]["required"] == ["email"]
    assert "minItems" not in schema["properties"]["extras"]
    assert "required" not in schema["properties"]["extras"]["items"]


def test_schema_is_valid_and_validates_submissions():
    schema = form_schema(FORM)
    jsonschema.Draft202012Validator.check_schema(schema)
    good = {"company": {"name": "ACME", "sector": "tech"}, "contacts": [{"email": "a@b.c"}]}
    jsonschema.validate(good, schema)
    v = jsonschema.Draft202012Validator(schema)
    assert list(v.iter_errors({"company": {"name": "ACME", "sector": "farming"}, "contacts": [{"email": "x"}]}))
    assert list(v.iter_errors({"company": {"name": "ACME"}, "contacts": []}))  # required repeat: at least one
    assert list(v.iter_errors({"company": {}, "contacts": [{"email": "x"}]}))  # required field

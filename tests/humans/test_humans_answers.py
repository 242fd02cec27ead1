"""Answer validation, the Prefect RunInput model generated from fields, pause keys, rendering."""

from __future__ import annotations

import re

import pytest
from jinja2 import UndefinedError

from compiler.ir import TaskField, TaskSpec
from flows import humans
from human_fields import FIELDS


def check(answer, fields=FIELDS):
    return humans.validate_answer(fields, answer)


def test_valid_answer_gets_types_and_defaults():
    clean, errors = check({"decision": "approve"})
    assert errors == []
    # an optional integer without a default is left out, not written as null
    assert clean == {"decision": "approve", "notes": "", "urgent": False, "amount": 10.0}
    clean, errors = check({"decision": "reject", "notes": "too risky", "urgent": True, "amount": 2.5, "copies": 3})
    assert errors == [] and clean["amount"] == 2.5 and clean["copies"] == 3 and clean["urgent"] is True


def test_cli_strings_are_parsed_per_type():
    clean, errors = check({"decision": " approve ", "notes": " as typed ", "urgent": "No", "amount": "1e3",
                           "copies": "-4"})
    assert errors == []
    assert clean == {"decision": "approve", "notes": " as typed ", "urgent": False, "amount": 1000.0, "copies": -4}
    assert check({"decision": "approve", "urgent": "TRUE"})[0]["urgent"] is True
    # blank values of optional non-text fields are "not given"; a blank text stays blank
    clean, errors = check({"decision": "approve", "amount": "", "copies": " ", "notes": ""})
    assert errors == [] and clean["amount"] == 10.0 and "copies" not in clean and clean["notes"] == ""


def test_required_missing_or_blank():
    assert check({})[1] == ["decision: required"]
    assert check({"decision": "  "})[1] == ["decision: required"]
    assert check({"decision": None})[1] == ["decision: required"]
    text = [{"name": "why", "type": "text", "required": True}]
    assert check({"why": ""}, text)[1] == ["why: required"]


def test_bad_option_and_wrong_types_all_reported():
    _, errors = check({"decision": "Approve", "notes": 5, "urgent": "maybe", "amount": "ten", "copies": 1.5})
    assert errors == [
        "decision: 'Approve' is not one of: approve, reject",
        "notes: expected text, got int 5",
        "urgent: expected true or false (or yes/no), got 'maybe'",
        "amount: expected a number, got 'ten'",
        "copies: expected a whole number, got 1.5",
    ]
    # bool is not a number, nan is not an answer
    assert check({"decision": "approve", "amount": True})[1] == ["amount: expected a number, got True"]
    assert check({"decision": "approve", "amount": "nan"})[1] == ["amount: expected a number, got 'nan'"]
    assert check({"decision": "approve", "copies": False})[1] == ["copies: expected a whole number, got False"]


def test_a_whole_number_beyond_64_bits_is_refused_on_every_channel():
    """Prefect's API refuses (500) a resume carrying an integer beyond 64 bits: the answer is
    refused where it is given, and Prefect's own form bounds the field the same way."""
    import pydantic

    from flows.prefect.pause import run_input_model

    largest = 2**63 - 1
    assert check({"decision": "approve", "copies": -largest}) == ({**check({"decision": "approve"})[0], "copies": -largest}, [])
    errors = check({"decision": "approve", "copies": str(-(largest + 1))})[1]
    assert len(errors) == 1 and errors[0].startswith("copies: -9223372036854775808 is too large"), errors
    model = run_input_model(FIELDS, "review")
    with pytest.raises(pydantic.ValidationError, match="copies"):
        model.model_validate({"decision": "approve", "copies": largest + 1})
    assert model.model_validate({"decision": "approve", "copies": largest}).copies == largest


def test_unknown_keys_and_non_objects():
    _, errors = check({"decision": "approve", "decison": "x"})
    assert errors == ["decison: unknown field (fields: decision, notes, urgent, amount, copies)"]
    assert check(["approve"])[1] == ["the answer must be an object of field values, not list"]


def test_select_with_non_string_options():
    fields = [{"name": "level", "type": "select", "options": [1, 2, 3], "required": True},
              {"name": "flag", "type": "select", "options": [True, False]}]
    assert check({"level": "2", "flag": "false"}, fields) == ({"level": 2, "flag": False}, [])
    assert check({"level": 2.0}, fields)[0]["level"] == 2
    assert check({"level": True}, fields)[1] == ["level: True is not one of: 1, 2, 3"]  # True == 1 in Python


def test_ir_fields_and_bad_defaults():
    fields = [TaskField(name="ok", type="boolean", required=True, label="OK?"),
              TaskField(name="n", type="integer", default="7")]
    assert humans.validate_answer(fields, {"ok": "yes"}) == ({"ok": True, "n": 7}, [])
    bad = [{"name": "n", "type": "integer", "default": "seven"}]
    assert humans.validate_answer(bad, {})[1] == ["n: expected a whole number, got 'seven' (the field's default)"]


def test_pause_key_unique_per_visit_and_prefect_safe():
    assert humans.pause_key("review", 3) == "review-3"
    keys = {humans.pause_key(n, s) for n in ("legal_review", "legal-review", "Legal_Review") for s in (1, 2)}
    assert len(keys) == 6
    assert all(re.fullmatch(r"[a-z0-9-]+", k) for k in keys)
    assert humans.pause_key("review", 1, run_id="AB12cd") == "ab12cd-review-1"


def test_render_task():
    spec = TaskSpec(title="Legal Review Required: {{parties}}", description="Value {{ total_value }}",
                    assignee="group:legal")
    assert humans.render_task(spec, {"parties": "ACME", "total_value": 60000}) == (
        "Legal Review Required: ACME", "Value 60000")
    assert humans.render_task({"title": "Plain"}, {}) == ("Plain", None)
    with pytest.raises(UndefinedError):
        humans.render_task(spec, {})

"""The form Prefect shows for a human task (``flows.prefect.pause.run_input_model``) matches the
rules every other channel applies (``flows.humans.validate_answer``)."""

from __future__ import annotations

import pydantic
import pytest

from flows import humans
from flows.prefect.pause import input_to_answer, run_input_model
from humans.human_fields import FIELDS  # the answer form the human-task tests use


def test_run_input_model_schema():
    from prefect.input import RunInput

    model = run_input_model(FIELDS, "legal_review")
    assert issubclass(model, RunInput)
    schema = model.model_json_schema(by_alias=True)
    props = schema["properties"]
    assert schema["required"] == ["decision"]
    assert schema["additionalProperties"] is False
    assert props["decision"]["enum"] == ["approve", "reject"]
    assert props["decision"]["title"] == "Decision (required)" and "description" not in props["decision"], \
        "the label is the title (marked required), not repeated as the help text"
    assert props["notes"]["title"] == "Notes" and props["notes"]["description"] == "Shown to the requester"
    assert props["notes"]["type"] == "string" and props["urgent"]["title"] == "urgent", "no label: the field name"
    assert props["urgent"]["type"] == "boolean" and props["urgent"]["default"] is False
    assert props["amount"]["type"] == "number" and props["amount"]["default"] == 10.0
    whole = {"type": "integer", "minimum": -(2**63 - 1), "maximum": 2**63 - 1}  # what Prefect's API carries
    assert whole in props["copies"]["anyOf"] and props["copies"]["default"] is None
    # what Prefect's form produces equals what validate_answer produces
    instance = model.model_validate({"decision": "approve"})
    assert input_to_answer(instance) == humans.validate_answer(FIELDS, {"decision": "approve"})[0]
    with pytest.raises(pydantic.ValidationError, match="decision"):
        model.model_validate({"decision": "maybe"})
    with pytest.raises(pydantic.ValidationError, match="extra"):
        model.model_validate({"decision": "approve", "extra": 1})


def test_run_input_model_odd_names_and_description():
    fields = [{"name": "my-field", "type": "string", "required": True}, {"name": "json", "type": "boolean"},
              {"name": "_x", "type": "number"}]
    model = run_input_model(fields, "3 odd node", description="**Approve?**")
    schema = model.model_json_schema(by_alias=True)
    assert set(schema["properties"]) == {"my-field", "json", "_x"} and schema["required"] == ["my-field"]
    assert model._description == "**Approve?**"
    instance = model.model_validate({"my-field": "v", "json": True, "_x": 1})
    assert input_to_answer(instance) == {"my-field": "v", "json": True, "_x": 1.0}
    with pytest.raises(ValueError, match="no options"):
        run_input_model([{"name": "s", "type": "select"}], "x")


def test_option_labels_are_listed_with_their_values():
    field = {"name": "_next_node", "type": "select", "required": True, "options": ["publish", "archive"],
             "label": "Next step", "option_labels": {"publish": "Publish it", "archive": "archive"}}
    props = run_input_model([field], "route").model_json_schema(by_alias=True)["properties"]["_next_node"]
    assert props["enum"] == ["publish", "archive"], "the values stay a select Prefect's UI can draw"
    assert props["title"] == "Next step (required)"
    assert props["description"] == "Options: **publish** (Publish it) · **archive**"

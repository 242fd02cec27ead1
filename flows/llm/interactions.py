"""Interactions: prompt segments rendered into messages, input checked, one (structured) model call.

An interaction (``kind: interaction``) is an ordered list of prompt segments. Rendering follows
the Vertesia rules: **safety** segments come first whatever their position (they become
``system`` messages), then the others in the order written. Each segment is rendered in its
``content_type`` by :func:`compiler.prompts.render`, the code the checker uses too: Jinja2
(sandboxed, ``StrictUndefined``), Handlebars or JST (in the V8 sandbox). In each a missing field
is an error, never an empty string in a prompt, and ``_model`` is the model the call goes to, so
the seeds' ``{{var}}`` / ``{{_model}}`` / `` `${var}` `` work as written.

The input is validated against ``input_schema`` before anything is rendered or called. The
result schema is the interaction's own, or the one the caller passes (inside a process: the
schema derived from the node's ``writes`` ∩ ``context.schema``). Without a result schema the
answer is the model's text.

Which model: the ``model`` argument (a node's model/environment), else the interaction's
``environment``, else its ``model``, else the gateway's default (``ERGON_MODEL``, else offline).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from compiler.ir import EnvironmentDef, InteractionDef
from compiler.prompts import render, render_errors
from flows.llm.gateway import complete, resolve_target
from flows.llm.structured import structured, validation_errors
from flows.llm.types import InvalidOutput, LlmError, LlmRequest
from flows.schema import schema_errors
from flows.stand_ins import STAND_INS

__all__ = ["InvalidInput", "PromptError", "interaction_model", "render_messages", "run_interaction", "validate_input"]


class PromptError(LlmError):
    """A prompt segment cannot be rendered as written (a missing field, a format Ergon does not render)."""


class InvalidInput(LlmError):
    """The data given to an interaction does not match its input schema (nothing was called)."""

    def __init__(self, interaction: str, errors: list[str]):
        self.errors = errors
        super().__init__(f"input of interaction `{interaction}` is invalid: " + "; ".join(errors))


def validate_input(interaction: InteractionDef, data: Mapping[str, Any]) -> None:
    """Raise :class:`InvalidInput` when ``data`` does not match the interaction's input schema."""
    if interaction.input_schema is None:
        return
    errors = schema_errors(interaction.input_schema, dict(data))
    if errors:
        raise InvalidInput(interaction.name, errors)


def render_messages(interaction: InteractionDef, data: Mapping[str, Any], *, model: str | None = None) -> list[dict[str, Any]]:
    """The chat messages of ``interaction`` for ``data`` (safety first, then as written)."""
    ordered = [s for s in interaction.prompts if s.role == "safety"] + [s for s in interaction.prompts if s.role != "safety"]
    messages = []
    for segment in ordered:
        try:
            text = render(segment, data, model=model, input_schema=interaction.input_schema)
        except render_errors() as exc:
            where = f"interaction `{interaction.name}`, {segment.role} segment" + (f" `{segment.name}`" if segment.name else "")
            raise PromptError(f"{where}: {exc}") from None
        messages.append({"role": "system" if segment.role == "safety" else segment.role, "content": text})
    return messages


def interaction_model(interaction: InteractionDef, model: str | None = None) -> str | None:
    """The model or environment name a call of ``interaction`` names (None: the default)."""
    return model or interaction.environment or interaction.model


async def run_interaction(
    interaction: InteractionDef,
    data: Mapping[str, Any],
    *,
    result_schema: dict[str, Any] | None = None,
    model: str | None = None,
    run_id: str | None = None,
    visit_id: str | None = None,
    attempt: int = 1,
    environments: Mapping[str, EnvironmentDef] | None = None,
) -> dict[str, Any] | str:
    """Run ``interaction`` on ``data``: the schema-valid result, or the text when there is no schema.

    Raises :class:`InvalidInput` before any call, :class:`~flows.llm.types.InvalidOutput` when
    the answer stays invalid after the interaction's ``repair_turns``, and
    :class:`~flows.llm.types.LlmError` when the model cannot be reached.
    """
    validate_input(interaction, data)
    named = interaction_model(interaction, model)
    target = resolve_target(named, environments)
    messages = render_messages(interaction, data, model=target.name)
    parameters = interaction.parameters.model_dump(exclude_none=True) if interaction.parameters else {}
    req = LlmRequest(messages=messages, model=named, parameters=parameters, run_id=run_id, visit_id=visit_id,
                     attempt=attempt)
    schema = result_schema if result_schema is not None else interaction.result_schema
    stand_ins = STAND_INS.get()
    replaced, answer = stand_ins.interaction(interaction.name) if stand_ins is not None else (False, None)
    if replaced:  # a test case gives the answer (ergon test): checked as the model's would be
        return _stand_in_answer(answer, schema)
    if schema is None:
        resp = await complete(req, environments=environments)
        return resp.content or ""
    value, _ = await structured(req, schema, repair_turns=interaction.repair_turns, environments=environments)
    return value


def _stand_in_answer(answer: Any, schema: dict[str, Any] | None) -> dict[str, Any] | str:
    """A test case's answer for the model: held to the result schema exactly as a model's answer
    is (:func:`~flows.llm.structured.validation_errors`), without a repair turn — a written
    answer cannot be asked again."""
    if schema is None:
        return answer if isinstance(answer, str) else json.dumps(answer)
    value, errors = validation_errors(schema, json.dumps(answer))
    if errors:
        raise InvalidOutput("the stand-in answer does not match the result schema: " + "; ".join(errors[:5]))
    return value

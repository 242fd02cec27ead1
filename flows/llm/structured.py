"""Structured output: ask for JSON, check it with jsonschema, give the model one chance to repair.

The gateway sends the schema the best way the model allows (JSON-schema mode or an
instruction); whatever comes back is parsed here — plain JSON, or JSON inside a ```json fence,
or the outermost ``{...}`` of a chatty answer — and validated against the schema with
``jsonschema`` (so ``additionalProperties: false`` refuses extra fields even when the provider
did not enforce it). On failure the model sees its answer and the validation errors in a repair
turn (``req.repair=True`` on that call, recorded as such); ``repair_turns`` bounds how many.
When the answer is still wrong, :class:`~flows.llm.types.InvalidOutput` carries the errors and
the caller (a node) fails without writing anything.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import replace
from typing import Any

from compiler.ir import EnvironmentDef
from flows.llm.gateway import complete
from flows.llm.types import InvalidOutput, LlmRequest, LlmResponse
from flows.schema import schema_errors

__all__ = ["parse_json", "structured", "validation_errors"]

_FENCE = re.compile(r"```(?:json|JSON)?\s*\n?(.*?)```", re.S)


def parse_json(text: str | None) -> Any:
    """The JSON value in a model's answer; raises ``ValueError`` when there is none."""
    if text is None or not text.strip():
        raise ValueError("the answer is empty")
    stripped = text.strip()
    candidates = [stripped]
    candidates += [m.group(1).strip() for m in _FENCE.finditer(stripped)]
    start, end = stripped.find("{"), stripped.rfind("}")
    if 0 <= start < end:
        candidates.append(stripped[start:end + 1])
    for candidate in candidates:
        try:
            return json.loads(candidate)
        except json.JSONDecodeError:
            continue
    raise ValueError("the answer is not JSON")


def validation_errors(schema: dict[str, Any], content: str | None) -> tuple[Any, list[str]]:
    """``(value, errors)``: the parsed answer and what is wrong with it (empty when valid)."""
    try:
        value = parse_json(content)
    except ValueError as exc:
        return None, [str(exc)]
    return value, schema_errors(schema, value)


def _repair_message(errors: list[str]) -> dict[str, Any]:
    listed = "\n".join(f"- {e}" for e in errors[:20])
    return {"role": "user", "content": (
        "Your previous answer does not match the required JSON schema:\n"
        f"{listed}\n"
        "Answer again with only the corrected JSON value: no prose, no code fences, no fields the schema does not list."
    )}


async def structured(req: LlmRequest, schema: dict[str, Any], *, repair_turns: int = 1,
                     environments: Mapping[str, EnvironmentDef] | None = None) -> tuple[Any, list[LlmResponse]]:
    """The schema-valid value the model answers ``req`` with, and every response it took.

    Raises :class:`InvalidOutput` (with ``.errors`` and ``.responses``) when the answer is still
    invalid after ``repair_turns`` repair turns; gateway errors propagate as they are.
    """
    request = replace(req, response_schema=schema, messages=list(req.messages))
    responses: list[LlmResponse] = []
    for turn in range(repair_turns + 1):
        resp = await complete(request, environments=environments)
        responses.append(resp)
        value, errors = validation_errors(schema, resp.content)
        if not errors:
            return value, responses
        if turn == repair_turns:
            break
        request = replace(request, repair=True, messages=[
            *request.messages, {"role": "assistant", "content": resp.content or ""}, _repair_message(errors)])
    exc = InvalidOutput(
        f"the model's answer does not match the result schema after {repair_turns} repair turn(s): " + "; ".join(errors[:5])
    )
    exc.errors = errors  # type: ignore[attr-defined]
    exc.responses = responses  # type: ignore[attr-defined]
    raise exc

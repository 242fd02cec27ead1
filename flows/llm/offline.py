"""The built-in offline model ``ergon/offline``: deterministic, free, and always schema-valid.

With no model configured, every call lands here, so the demo and the tests run with no key and
no network. The answer depends only on the messages (a SHA-256 of them seeds every choice), so a
run gives the same output every time. With a ``response_schema`` it returns one JSON value valid
against it, built from the schema: realistic-looking where the schema allows (``"<field>
(offline)"`` strings, dates for ``format: date``, numbers inside their bounds, the first enum
values chosen by the seed). Without a schema it returns a short text that says what it is.

``ERGON_OFFLINE_SEED``, when set, is mixed into that hash: the same messages then give another
answer — still deterministic for one value of the seed, still valid against the schema — so
that a test can walk every route of a definition by varying the seed alone (the property test
tests/runtime/test_soundness.py draws it). Besides picking other enum values (an agent's
``_next_node``, a select), a seeded answer spreads numbers a schema leaves unbounded over several
magnitudes (0 to about a million instead of 1 to 100), so that guards such as ``total > 10000``
are taken both ways. Unset (the default), answers are exactly what they have always been.

A template step's answer cites its input (:mod:`flows.submissions.citations`): every field is
``{value, refId}`` and the step's input values are listed with their refIds in the prompt. The
offline model cites them too, deterministically: for each field it takes an input value of the
same field name, else one whose value fits the field, else any one, copies that value where it
fits and cites its refId — so a demo without a key shows provenance end to end.

It never asks for a tool call, even when tools are offered: an agent loop driven by it always
ends after one turn, and the offline model cannot cause side effects (a fetch, a write) with
invented arguments — an agent given the workstream tools completes in that one turn and launches
no sub-agent. Responses are labelled ``offline=True``, cost nothing, and their token counts
are estimates (characters / 4).
"""

from __future__ import annotations

import hashlib
import json
import os
import re
from datetime import date, timedelta
from typing import Any

from flows.llm.types import LlmRequest, LlmResponse

MODEL = "ergon/offline"
#: The environment variable whose value is mixed into every answer's seed (see the module docstring).
SEED_ENV = "ERGON_OFFLINE_SEED"

__all__ = ["MODEL", "SEED_ENV", "complete_offline", "example_for_schema", "estimate_tokens"]


def estimate_tokens(value: Any) -> int:
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, default=str)
    return max(1, len(text) // 4)


def _seed_of(messages: list[dict[str, Any]], extra: str = "") -> str:
    text = json.dumps(messages, sort_keys=True, default=str)
    return hashlib.sha256(f"{extra}\0{text}".encode() if extra else text.encode()).hexdigest()


def complete_offline(req: LlmRequest) -> LlmResponse:
    """Answer ``req`` without a model."""
    extra = os.environ.get(SEED_ENV, "")
    seed = _seed_of(req.messages, extra)
    if req.response_schema is not None:
        content = json.dumps(example_for_schema(req.response_schema, seed=seed, spread=bool(extra),
                                                refs=_input_values(req.messages)), ensure_ascii=False)
    else:
        last_user = next((m for m in reversed(req.messages) if m.get("role") == "user"), None)
        gist = " ".join(str((last_user or {}).get("content") or "").split())[:80]
        content = f"Offline answer ({seed[:8]}): no model is configured, so this text stands in for one."
        if gist:
            content += f" The request began: “{gist}”."
    return LlmResponse(
        content=content, model=MODEL, tokens_in=estimate_tokens(req.messages), tokens_out=estimate_tokens(content),
        cost_usd=0.0, offline=True, raw={"finish_reason": "stop"},
    )


def _input_values(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The ``{refId, path, value}`` rows of a template step's input block, if a message has one."""
    from flows.llm.agent import INPUT_BEGIN, INPUT_END

    for m in messages:
        text = m.get("content")
        if isinstance(text, str) and INPUT_BEGIN in text and INPUT_END in text:
            block = text.split(INPUT_BEGIN, 1)[1].split(INPUT_END, 1)[0]
            try:
                rows = json.loads(block)
            except ValueError:
                return []
            return [r for r in rows if isinstance(r, dict) and isinstance(r.get("refId"), str)] \
                if isinstance(rows, list) else []
    return []


# --------------------------------------------------------------------------------------------
# Values from a JSON Schema


class _Gen:
    def __init__(self, root: dict[str, Any], seed: str, spread: bool = False,
                 refs: list[dict[str, Any]] | None = None):
        self.root = root
        self.seed = seed
        #: a template step's input values, which cited fields copy and cite
        self.refs = refs or []
        #: unbounded numbers over several magnitudes rather than 1..100 (a seeded answer)
        self.spread = spread

    def pick(self, path: str, n: int) -> int:
        """A deterministic index in ``range(n)`` for the value at ``path``."""
        if n <= 1:
            return 0
        digest = hashlib.sha256(f"{self.seed}:{path}".encode()).digest()
        return int.from_bytes(digest[:4], "big") % n

    def resolve(self, schema: Any) -> Any:
        seen = 0
        while isinstance(schema, dict) and isinstance(schema.get("$ref"), str) and seen < 32:
            ref = schema["$ref"]
            if not ref.startswith("#"):
                break
            target: Any = self.root
            for part in [p for p in ref[1:].split("/") if p]:
                part = part.replace("~1", "/").replace("~0", "~")
                target = target.get(part) if isinstance(target, dict) else None
            rest = {k: v for k, v in schema.items() if k != "$ref"}
            schema = {**(target or {}), **rest}
            seen += 1
        return schema

    def value(self, schema: Any, name: str, path: str) -> Any:
        schema = self.resolve(schema)
        if schema is True or not isinstance(schema, dict) or not schema:
            return f"{name or 'value'} (offline)"
        if "const" in schema:
            return schema["const"]
        if "enum" in schema and schema["enum"]:
            options = schema["enum"]
            return options[self.pick(path, len(options))]
        if "allOf" in schema:
            merged: dict[str, Any] = {k: v for k, v in schema.items() if k != "allOf"}
            for part in schema["allOf"]:
                part = self.resolve(part)
                if isinstance(part, dict):
                    for key, val in part.items():
                        if key == "properties":
                            merged["properties"] = {**merged.get("properties", {}), **val}
                        elif key == "required":
                            merged["required"] = sorted({*merged.get("required", []), *val})
                        else:
                            merged.setdefault(key, val)
            return self.value(merged, name, path)
        for key in ("oneOf", "anyOf"):
            if key in schema and schema[key]:
                # The first branch that is not null: oneOf branches are usually disjoint by type,
                # and the first is what the author reads as the main shape.
                branches = schema[key]
                chosen = next((b for b in branches if self.resolve(b).get("type") != "null"), branches[0]) \
                    if all(isinstance(self.resolve(b), dict) for b in branches) else branches[0]
                base = {k: v for k, v in schema.items() if k not in ("oneOf", "anyOf")}
                return self.value({**base, **self.resolve(chosen)} if isinstance(chosen, dict) else chosen, name, path)
        kind = schema.get("type")
        if isinstance(kind, list):
            kind = next((k for k in kind if k != "null"), kind[0] if kind else None)
        if kind is None:
            kind = "object" if "properties" in schema else "array" if "items" in schema else "string"
        return getattr(self, f"_{kind}", self._string)(schema, name, path)

    def _null(self, schema: dict, name: str, path: str) -> None:
        return None

    def _boolean(self, schema: dict, name: str, path: str) -> bool:
        return self.pick(path, 2) == 0

    def _number(self, schema: dict, name: str, path: str, integer: bool = False) -> float | int:
        low = schema.get("minimum")
        high = schema.get("maximum")
        ex_low, ex_high = schema.get("exclusiveMinimum"), schema.get("exclusiveMaximum")
        # draft 4 booleans
        if ex_low is True:
            ex_low, low = low, None
        if ex_high is True:
            ex_high, high = high, None
        ex_low = None if isinstance(ex_low, bool) else ex_low
        ex_high = None if isinstance(ex_high, bool) else ex_high
        step = schema.get("multipleOf")
        lowest: float | None = max([v for v in (low, ex_low) if v is not None], default=None)
        highest: float | None = min([v for v in (high, ex_high) if v is not None], default=None)
        width = 100.0
        if self.spread:  # 0..1, 0..100, 0..10^4 or 0..10^6 wide, chosen per value
            width = 10.0 ** (2 * self.pick(f"{path}#magnitude", 4))
            if step:  # wide enough for several multiples of the step
                width = max(width, abs(float(step)) * 100)
        if lowest is None and highest is None:
            lo, hi = (0.0, width) if self.spread else (1.0, 100.0)
        elif lowest is None:
            assert highest is not None
            lo, hi = highest - width, highest
        elif highest is None:
            lo, hi = lowest, lowest + width
        else:
            lo, hi = lowest, highest
        span = 64
        for i in range(span + 1):
            frac = ((self.pick(path, 1000) + i * 37) % 1000) / 1000
            candidate: float = lo + (hi - lo) * frac
            if integer or (step is not None and float(step).is_integer() and step != 0):
                candidate = round(candidate)
            if step:
                candidate = round(candidate / step) * step
                if integer:
                    candidate = int(candidate)
            elif not integer:
                candidate = round(candidate, 2)
            if self._fits(candidate, low, high, ex_low, ex_high):
                return int(candidate) if integer else candidate
        # Bounds too tight for the rounding above: the midpoint, then an endpoint.
        for candidate in ((lo + hi) / 2, lo, hi):
            if integer:
                candidate = int(candidate) if float(candidate).is_integer() else int(candidate) + 1
            if self._fits(candidate, low, high, ex_low, ex_high):
                return candidate
        return lo

    @staticmethod
    def _fits(v: float, low: Any, high: Any, ex_low: Any, ex_high: Any) -> bool:
        return ((low is None or v >= low) and (high is None or v <= high)
                and (ex_low is None or v > ex_low) and (ex_high is None or v < ex_high))

    def _integer(self, schema: dict, name: str, path: str) -> int:
        return self._number(schema, name, path, integer=True)  # type: ignore[return-value]

    def _string(self, schema: dict, name: str, path: str) -> str:
        fmt = schema.get("format")
        day = date(2026, 1, 1) + timedelta(days=self.pick(path, 365))
        label = re.sub(r"[^A-Za-z0-9]+", "_", name or "value").strip("_").lower() or "value"
        if fmt == "date":
            text = day.isoformat()
        elif fmt == "date-time":
            text = f"{day.isoformat()}T09:00:00Z"
        elif fmt == "time":
            text = "09:00:00Z"
        elif fmt == "email":
            text = f"{label}@example.com"
        elif fmt in ("uri", "url", "iri"):
            text = f"https://example.com/{label}"
        elif fmt == "uuid":
            digest = hashlib.sha256(f"{self.seed}:{path}".encode()).hexdigest()
            text = f"{digest[:8]}-{digest[8:12]}-4{digest[13:16]}-8{digest[17:20]}-{digest[20:32]}"
        elif fmt in ("hostname", "idn-hostname"):
            text = "example.com"
        elif fmt == "ipv4":
            text = "192.0.2.1"
        elif fmt == "ipv6":
            text = "2001:db8::1"
        else:
            text = f"{name or 'value'} (offline)"
        low, high = schema.get("minLength"), schema.get("maxLength")
        if low is not None and len(text) < low:
            text = text + "." * (low - len(text))
        if high is not None and len(text) > high:
            text = text[:high]
        return text

    def _array(self, schema: dict, name: str, path: str) -> list:
        low = schema.get("minItems", 0) or 0
        high = schema.get("maxItems")
        count = max(low, 1)
        if high is not None:
            count = min(count, high)
        items = schema.get("items", {})
        prefix = schema.get("prefixItems") or (items if isinstance(items, list) else [])
        out = []
        singular = name[:-1] if name.endswith("s") and len(name) > 1 else name
        for i in range(count):
            sub = prefix[i] if i < len(prefix) else (items if isinstance(items, dict) else {})
            item = self.value(sub, singular, f"{path}[{i}]")
            if schema.get("uniqueItems") and item in out:
                # Vary the choice (other seeds, then a numbered string); give up on the item when
                # the schema allows too few distinct values.
                variants = (self.value(sub, singular, f"{path}[{i}]#{k}") for k in range(1, 24))
                item = next((v for v in variants if v not in out), item)
                if item in out and isinstance(item, str) and not (isinstance(sub, dict) and ("enum" in sub or "const" in sub)):
                    item = f"{item} {i + 1}"
                if item in out:
                    break
            out.append(item)
        return out

    def _cited(self, schema: dict, name: str, path: str) -> dict:
        """``{value, refId}``: an input value of the same field (else one that fits, else any)."""
        from flows.schema import schema_errors

        value_schema = schema["properties"]["value"]
        same_name = [r for r in self.refs if str(r.get("path", "")).rsplit(".", 1)[-1] == name]
        # a formatted string (a date) is copied only from a field of its own name: formats are
        # annotations to the validator, so any text would "fit"
        fits = [r for r in (same_name if value_schema.get("format") not in (None, "text") else self.refs)
                if not schema_errors(value_schema, r.get("value"))]
        same = [r for r in fits if r in same_name]
        pool = same or fits or self.refs
        chosen = pool[self.pick(path + "#ref", len(pool))]
        value = chosen.get("value") if chosen in fits else self.value(value_schema, name, path + ".value")
        return {"value": value, "refId": chosen["refId"]}

    def _object(self, schema: dict, name: str, path: str) -> dict:
        props = schema.get("properties", {}) or {}
        if self.refs and set(props) == {"value", "refId"}:
            return self._cited(schema, name, path)
        out = {}
        for key, sub in props.items():
            out[key] = self.value(sub, key, f"{path}.{key}")
        for key in schema.get("required", []) or []:
            if key not in out:
                extra = schema.get("additionalProperties")
                out[key] = self.value(extra if isinstance(extra, dict) else {}, key, f"{path}.{key}")
        need = schema.get("minProperties", 0) or 0
        extra = schema.get("additionalProperties", True)
        i = 0
        while len(out) < need and extra is not False:
            key = f"extra_{i}"
            out[key] = self.value(extra if isinstance(extra, dict) else {}, key, f"{path}.{key}")
            i += 1
        return out


def example_for_schema(schema: dict[str, Any], *, seed: str = "", spread: bool = False,
                       refs: list[dict[str, Any]] | None = None) -> Any:
    """A deterministic value valid against ``schema`` (for the schemas Ergon definitions use);
    ``spread`` draws unbounded numbers over several magnitudes; ``refs`` are input values that
    ``{value, refId}`` fields cite (see the module docstring)."""
    gen = _Gen(schema if isinstance(schema, dict) else {}, seed, spread, refs)
    return gen.value(schema, "", "$")

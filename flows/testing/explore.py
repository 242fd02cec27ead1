"""``ergon test --explore N``: generated inputs through each definition under test, looking for its own faults.

A test case checks the routes its author thought of; exploring runs the definition on inputs
nobody wrote. For each definition the test files test, N runs, each:

* with inputs drawn from the definition's input schema (:class:`Drawer`: a seeded
  :class:`random.Random` over the JSON Schema — types, ``enum``/``const``, bounds, lengths,
  ``required``, ``items``, ``$ref`` to ``$defs``, ``anyOf``/``oneOf``, common formats; a draw is
  validated against the schema before it is used, and a schema it cannot satisfy is reported as
  not explored rather than run with inputs it refuses);
* on the offline model with ``ERGON_OFFLINE_SEED`` drawn for the run, so its answers take other
  enum values and number magnitudes than the unseeded model's, and guards go both ways;
* every human task answered with a drawn valid answer (:func:`answer_schema`, the answers
  :func:`flows.humans.answer` accepts), as the task's assignee;
* in this process, through the same flow body, in-process backend and temporary store as the
  cases (:mod:`flows.testing.runner`), with the project's real tools (nothing is mocked).

A run that ends failed with a ``definition`` or ``internal`` error (:mod:`flows.runtime.errors`)
is a finding: the definition, or Ergon, has a fault no input should reach; a ``world`` or
``model`` failure (a tool that cannot reach its service) is not. Each run's seed is derived from
the session's seed, the definition's name and the run's number, so ``--seed S`` replays every run
exactly (the same inputs, answers and model choices), given the same definitions and tools.
"""

from __future__ import annotations

import asyncio
import random
import re
import string
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import date, datetime, timedelta, timezone
from typing import Any

from compiler.plan import Plan
from flows.catalog import Catalog
from flows.testing.backend import AnsweringPauses, CasePaused, InProcessBackend
from flows.testing.runner import STARTED_BY, temporary_store
from flows.testing.spec import TaskAnswer

#: The error kinds that are findings: a fault of the definition or of Ergon, not of the world.
FINDINGS = ("definition", "internal")
#: Longest one explored run may take before it is reported as not ending.
RUN_SECONDS = 60.0
#: Words a drawn free string is made of: readable in a report, and what names and texts look like.
WORDS = ("alpha", "invoice", "Berlin", "ACME", "42", "review", "ok", "north", "data", "Zoë", "x")


class CannotDraw(Exception):  # noqa: N818 - a reason, raised inside the drawer only
    """The drawer cannot produce a value the schema accepts (a pattern it cannot match...)."""


class Drawer:
    """Values valid against a JSON Schema, from a seeded :class:`random.Random` (see the module docstring)."""

    def __init__(self, rng: random.Random, defs: dict[str, Any] | None = None) -> None:
        self.rng = rng
        self.defs = defs or {}

    def value(self, schema: Any, depth: int = 0) -> Any:
        if schema is True or schema == {} or not isinstance(schema, dict):
            return self.rng.choice(WORDS)
        if "$ref" in schema:
            name = str(schema["$ref"]).rsplit("/", 1)[-1]
            if name not in self.defs:
                raise CannotDraw(f"unresolved $ref {schema['$ref']}")
            return self.value(self.defs[name], depth + 1)
        if "const" in schema:
            return schema["const"]
        if "enum" in schema:
            return self.rng.choice(list(schema["enum"]))
        for key in ("anyOf", "oneOf"):
            if schema.get(key):
                return self.value(self.rng.choice(schema[key]), depth + 1)
        if schema.get("allOf"):
            merged: dict[str, Any] = {}
            for part in schema["allOf"]:
                merged.update(part if isinstance(part, dict) else {})
            return self.value({**merged, **{k: v for k, v in schema.items() if k != "allOf"}}, depth)
        kind = schema.get("type")
        if isinstance(kind, list):
            # null only now and then: a value says more about the definition than its absence
            present = [k for k in kind if k != "null"] or ["null"]
            kind = "null" if "null" in kind and self.rng.random() < 0.1 else self.rng.choice(present)
        if kind is None:
            kind = "object" if "properties" in schema else "array" if "items" in schema else "string"
        return getattr(self, f"_{kind}", self._string)(schema, depth)

    def _null(self, schema: dict[str, Any], depth: int) -> None:
        return None

    def _boolean(self, schema: dict[str, Any], depth: int) -> bool:
        return self.rng.random() < 0.5

    def _bounds(self, schema: dict[str, Any]) -> tuple[float, float]:
        low = schema.get("minimum", schema.get("exclusiveMinimum"))
        high = schema.get("maximum", schema.get("exclusiveMaximum"))
        # unbounded: spread over magnitudes, so that a guard like `amount > 10000` goes both ways
        magnitude = 10 ** self.rng.randint(0, 6)
        low = float(low) if low is not None else (0.0 if high is None or high > 0 else float(high) - magnitude)
        high = float(high) if high is not None else low + magnitude
        return low, high

    def _integer(self, schema: dict[str, Any], depth: int) -> int:
        low, high = self._bounds(schema)
        first = int(low) + (1 if "exclusiveMinimum" in schema and "minimum" not in schema else 0)
        last = int(high) - (1 if "exclusiveMaximum" in schema and "maximum" not in schema else 0)
        return self.rng.randint(min(first, last), max(first, last))

    def _number(self, schema: dict[str, Any], depth: int) -> float | int:
        if self.rng.random() < 0.3:
            return self._integer(schema, depth)
        low, high = self._bounds(schema)
        return round(self.rng.uniform(low, high), 2)

    def _string(self, schema: dict[str, Any], depth: int) -> str:
        fmt = schema.get("format")
        if fmt == "date":
            return (date(2024, 1, 1) + timedelta(days=self.rng.randint(0, 900))).isoformat()
        if fmt == "date-time":
            moment = datetime(2024, 1, 1, tzinfo=timezone.utc) + timedelta(minutes=self.rng.randint(0, 10**6))
            return moment.isoformat()
        if fmt == "email":
            return f"{self.rng.choice(['ana', 'li', 'sam'])}@example.com"
        if fmt in ("uri", "url"):
            return f"https://example.com/{self.rng.choice(WORDS).lower()}"
        if fmt == "document":
            return "doc-" + "".join(self.rng.choices(string.ascii_lowercase + string.digits, k=6))
        low = int(schema.get("minLength", 0))
        high = int(schema.get("maxLength", max(low, 40)))
        pattern = schema.get("pattern")
        for _ in range(20):
            text = " ".join(self.rng.choice(WORDS) for _ in range(self.rng.randint(1, 3)))
            if len(text) < low:
                text += "".join(self.rng.choices(string.ascii_lowercase, k=low - len(text)))
            text = text[:high]
            if pattern is None or re.search(pattern, text):
                return text
        raise CannotDraw(f"no drawn string matches the pattern {pattern!r}")

    def _array(self, schema: dict[str, Any], depth: int) -> list[Any]:
        low = int(schema.get("minItems", 0))
        # a few items, whatever maxItems allows: a run over a thousand lines finds nothing three do not
        high = min(int(schema.get("maxItems", low + 4)), low + (4 if depth < 4 else 0))
        items = schema.get("items", {})
        return [self.value(items, depth + 1) for _ in range(self.rng.randint(low, max(low, high)))]

    def _object(self, schema: dict[str, Any], depth: int) -> dict[str, Any]:
        required = set(schema.get("required") or [])
        out = {}
        for name, prop in (schema.get("properties") or {}).items():
            # an optional field half the time, and not at all deep down: nested data stays small
            if name in required or (depth < 4 and self.rng.random() < 0.5):
                out[name] = self.value(prop, depth + 1)
        return out


def draw_valid(rng: random.Random, schema: dict[str, Any], defs: dict[str, Any] | None = None, *,
               tries: int = 20) -> Any:
    """A value ``schema`` accepts, drawn with ``rng``; :class:`CannotDraw` after ``tries`` draws it refused."""
    from jsonschema import Draft202012Validator

    drawer = Drawer(rng, defs)
    validator = Draft202012Validator(schema)
    reason = "every draw was refused by the schema"
    for _ in range(tries):
        try:
            value = drawer.value(schema)
        except CannotDraw as exc:
            reason = str(exc)
            continue
        errors = list(validator.iter_errors(value))
        if not errors:
            return value
        reason = f"drawn values do not fit: {errors[0].message}"
    raise CannotDraw(reason)


def input_schema(plan: Plan) -> dict[str, Any]:
    """The run's inputs as one schema: the Plan's input schema with the context's ``$defs``, and
    no field it does not declare."""
    schema = dict(plan.input_schema)
    for key in ("$defs", "definitions"):
        if key in plan.context_schema:
            schema[key] = plan.context_schema[key]
    schema["additionalProperties"] = False
    return schema


def answer_schema(fields: list[dict[str, Any]]) -> dict[str, Any]:
    """The JSON Schema of a valid answer to a task with ``fields`` (what humans.validate_answer accepts)."""
    from flows.humans import MAX_WHOLE_ANSWER, normalize_fields

    props: dict[str, Any] = {}
    required = []
    for f in normalize_fields(fields):
        kind = f["type"]
        if kind == "select":
            prop: dict[str, Any] = {"enum": list(f["options"] or [])}
        elif kind in ("text", "string"):
            # what a person can type on a command line: no NUL; a required field is not blank
            prop = {"type": "string", "maxLength": 40, "pattern": r"^[^\x00]*\S[^\x00]*$" if f["required"] else r"^[^\x00]*$"}
        else:
            prop = {"type": {"boolean": "boolean", "number": "number", "integer": "integer"}[kind]}
            if kind == "integer":  # what an answer can carry through Prefect
                prop.update(minimum=-MAX_WHOLE_ANSWER, maximum=MAX_WHOLE_ANSWER)
        props[f["name"]] = prop
        if f["required"]:
            required.append(f["name"])
    return {"type": "object", "properties": props, "required": required, "additionalProperties": False}


class DrawnAnswers(AnsweringPauses):
    """The ``Pauses`` port of an explored run: every task answered with a drawn valid answer."""

    def __init__(self, rng: random.Random) -> None:
        super().__init__({})
        self._rng = rng

    def answer_for(self, task: Any) -> TaskAnswer | None:
        return TaskAnswer(answer=draw_valid(self._rng, answer_schema(task.fields)))


@dataclass
class Explored:
    """One explored run: where it came from (enough to replay it) and how it ended."""

    definition: str
    number: int
    seed: str
    inputs: dict[str, Any] | None
    status: str
    error: str | None = None
    error_kind: str | None = None
    #: the node whose visit failed with the finding's kind, when one did
    node: str | None = None
    #: why the run was not made (inputs the drawer could not produce), else None
    skipped: str | None = None

    @property
    def finding(self) -> bool:
        return self.skipped is None and self.status != "completed" and self.error_kind in (*FINDINGS, "timeout")

    def as_dict(self) -> dict[str, Any]:
        return {"definition": self.definition, "run": self.number, "seed": self.seed, "inputs": self.inputs,
                "status": self.status, "error": self.error, "error_kind": self.error_kind, "node": self.node,
                "skipped": self.skipped, "finding": self.finding}


@dataclass
class Exploration:
    """Everything one ``--explore`` did."""

    seed: int
    runs: list[Explored] = field(default_factory=list)

    @property
    def findings(self) -> list[Explored]:
        return [r for r in self.runs if r.finding]


def explore(plans: dict[str, Plan], catalog: Catalog, count: int, seed: int, *,
            on_run: Callable[[Explored], None] = lambda r: None) -> Exploration:
    """``count`` generated runs of each Plan (see the module docstring), on a temporary store."""
    found = Exploration(seed)
    if count <= 0 or not plans:
        return found
    with temporary_store():
        asyncio.run(_explore_all(plans, catalog, count, found, on_run))
    return found


async def _explore_all(plans: dict[str, Plan], catalog: Catalog, count: int, found: Exploration,
                       on_run: Callable[[Explored], None]) -> None:
    for name in sorted(plans):
        for number in range(1, count + 1):
            run_seed = f"{found.seed}:{name}:{number}"
            # its own task: the offline seed and the context's stand-ins are this run's alone
            result = await asyncio.create_task(explore_one(plans[name], catalog, number, run_seed))
            found.runs.append(result)
            on_run(result)


async def explore_one(plan: Plan, catalog: Catalog, number: int, run_seed: str) -> Explored:
    """One generated run of ``plan``, every choice taken from ``run_seed``."""
    import os

    from flows.execution.body import execute_alone
    from flows.execution.request import RunRequest
    from flows.llm.offline import SEED_ENV
    from flows.stand_ins import STAND_INS
    from flows.store import definitions as definition_store
    from flows.store.ids import new_id

    rng = random.Random(run_seed)
    schema = input_schema(plan)
    try:
        inputs = draw_valid(rng, schema, schema.get("$defs") or schema.get("definitions"))
    except CannotDraw as exc:
        return Explored(plan.name, number, run_seed, None, "not run", skipped=str(exc))
    STAND_INS.set(None)  # nothing stands in: the definition's real tools and the offline model
    run_id = new_id()
    request = RunRequest(run_id=run_id, trigger="manual", started_by=STARTED_BY, catalog=catalog,
                         content_hash=definition_store.snapshot_definition({"plan": plan.to_json()}))
    backend = InProcessBackend(DrawnAnswers(rng))
    before = os.environ.get(SEED_ENV)
    os.environ[SEED_ENV] = str(rng.getrandbits(32))
    try:
        result = await asyncio.wait_for(execute_alone(plan, dict(inputs), request, backend), RUN_SECONDS)
        done = Explored(plan.name, number, run_seed, inputs, result.status, result.error, result.error_kind)
    except asyncio.TimeoutError:
        done = Explored(plan.name, number, run_seed, inputs, "failed", f"the run did not end within {RUN_SECONDS:.0f} s",
                        "timeout")
    except CasePaused as paused:  # every task is answered: only a task the answers cannot reach waits
        done = Explored(plan.name, number, run_seed, inputs, "paused", str(paused))
    except Exception as exc:  # a fault of Ergon's own, recorded on the run by the body
        done = Explored(plan.name, number, run_seed, inputs, "failed", f"{type(exc).__name__}: {exc}", "internal")
    finally:
        if before is None:
            os.environ.pop(SEED_ENV, None)
        else:
            os.environ[SEED_ENV] = before
    if done.finding:
        done.node = _failed_node(run_id)
    return done


def _failed_node(run_id: str) -> str | None:
    """The first node whose visit failed with a finding's kind (item key included)."""
    from flows.store import visits as visit_store

    for visit in visit_store.visits_for_run(run_id):
        if visit.status == "failed" and visit.error_kind in FINDINGS:
            return f"{visit.node_id}[{visit.item_key}]" if visit.item_key else visit.node_id
    return None

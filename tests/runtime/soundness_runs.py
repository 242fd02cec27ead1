"""Running a definition the way the soundness properties do, and telling how its runs ended.

Shared by the property over the shipped definitions (``test_soundness.py``), the property over
generated ones (``test_generated_definitions.py``) and ``benchmarks/soundness.py``:

* :func:`execute` starts a run in a thread and, until it ends, answers every human task it (or
  a child run) opens with a value drawn from the task's own fields, through ``ergon tasks
  answer`` — the CLI command's own function, so the answer is parsed, validated, recorded and
  resumes the run exactly as it does for a person;
* :func:`classify` tells, from what the store recorded (never from message text), how one run
  ended and which soundness problems it shows: a run must end ``completed`` (a process at one of
  its ``final`` nodes, with a context valid against its schema) or ``failed`` with a ``world``
  error; a visit or run that failed with another kind is a problem.
"""

from __future__ import annotations

import json
import threading
import time
from typing import Any

from hypothesis import strategies as st
from hypothesis_jsonschema import from_schema

from compiler.plan import Plan
from flows.testing.explore import answer_schema  # valid answers to a task: one definition with --explore

#: longest a run may take, people's answers included, before the example fails
RUN_SECONDS = 120.0


def document_ids() -> st.SearchStrategy[str]:
    return st.from_regex(r"[A-Za-z0-9][A-Za-z0-9_-]{0,15}", fullmatch=True)


def draw_inputs(data: st.DataObject, plan: Plan, words: list[str]) -> dict[str, Any]:
    """Run inputs from the Plan's input schema (its `$defs` kept, no field it does not declare),
    free string fields maybe replaced by a dictionary word their schema accepts."""
    from jsonschema import Draft202012Validator

    schema = dict(plan.input_schema)
    for key in ("$defs", "definitions"):
        if key in plan.context_schema:
            schema[key] = plan.context_schema[key]
    schema["additionalProperties"] = False
    inputs = data.draw(from_schema(schema, custom_formats={"document": document_ids()}), label="inputs")
    for name, value in sorted(inputs.items()):
        prop = schema["properties"].get(name)
        if not isinstance(value, str) or not isinstance(prop, dict) or {"enum", "const", "format", "pattern"} & set(prop):
            continue
        fitting = [w for w in words if Draft202012Validator(prop).is_valid(w)]
        # three times in four: a word reaches past the tool that knows it, a random string rarely does
        if fitting and data.draw(st.integers(0, 3), label=f"{name} from the dictionary") > 0:
            inputs[name] = data.draw(st.sampled_from(fitting), label=name)
    return inputs


def cli_value(value: Any) -> str:
    """A value as ``--set FIELD=VALUE`` spells it (the CLI parses it back per the field's type)."""
    if isinstance(value, str):
        return value
    if isinstance(value, bool):
        return "true" if value else "false"
    return json.dumps(value)



def run_tree(root_id: str) -> list[Any]:
    from flows.store import runs as run_store

    tree, frontier = [], [root_id]
    while frontier:
        run = run_store.require_run(frontier.pop())
        tree.append(run)
        frontier.extend(child.id for child in run_store.child_runs(run.id))
    return tree


def answer_open_tasks(data: st.DataObject, root_id: str, answered: set[str], problems: list[str]) -> None:
    from flows.cli.tasks import tasks_answer
    from flows.store import tasks as task_store

    for run in run_tree(root_id):
        for task in task_store.tasks_for_run(run.id):
            if task.id in answered or task.status not in ("pending", "in_progress"):
                continue
            answered.add(task.id)
            answer = data.draw(from_schema(answer_schema(task.fields)), label=f"answer to {task.node_id}")
            pairs = [f"{name}={cli_value(value)}" for name, value in answer.items()]
            code = tasks_answer(task.id, set_=pairs)  # as whoever ERGON_TOKEN names (an admin: every task is theirs)
            if code != 0:
                problems.append(f"{run.definition_name}: the valid answer {answer} to task `{task.node_id}` was refused "
                                f"(exit {code})")


def execute(data: st.DataObject, compiled: Any, catalog: Any, inputs: dict[str, Any], *,
            trigger: str = "manual") -> tuple[str, list[str]]:
    """Run to the end, answering every task; the root run's id and what went wrong on the way.
    :class:`flows.runs.StartRefused` when the inputs do not fit (nothing is recorded)."""
    from flows import runs

    run = runs.create(compiled, inputs, catalog=catalog, trigger=trigger)  # type: ignore[arg-type]
    outcome: dict[str, Any] = {}

    def body() -> None:
        try:
            outcome["result"] = runs.start(compiled, inputs, catalog=catalog, run_id=run.id)
        except BaseException as exc:  # noqa: BLE001 - reported by the test thread
            outcome["raised"] = exc

    thread = threading.Thread(target=body, name=f"soundness-{compiled.plan.name}", daemon=True)
    thread.start()
    answered: set[str] = set()
    problems: list[str] = []
    deadline = time.monotonic() + RUN_SECONDS
    try:
        while thread.is_alive() and time.monotonic() < deadline:
            answer_open_tasks(data, run.id, answered, problems)
            thread.join(0.1)
        if thread.is_alive():
            problems.append(f"{compiled.plan.name}: the run did not end within {RUN_SECONDS:.0f} s")
    finally:
        # Also when hypothesis abandons the example mid-way (a draw over its data budget raises
        # out of here): no run may outlive its example, still waiting for an answer.
        if thread.is_alive():
            from flows.runs import cancel

            cancel(run.id)
            thread.join(30)
    if "raised" in outcome:
        problems.append(f"{compiled.plan.name}: starting the run raised {outcome['raised']!r}")
    return run.id, problems



def classify(run: Any, plan: Plan | None, visits: list[Any]) -> tuple[str, list[str]]:
    """How one run ended (for the table), and the soundness problems it shows."""
    from flows.schema import schema_errors

    name = run.definition_name
    problems = []
    for v in visits:
        if v.status != "failed":
            continue
        # A failed visit without a kind is the marker of a pipeline node not run after another
        # failed: allowed only where that other failure is the world's.
        if v.error_kind not in ("world", None) or (v.error_kind is None and run.error_kind != "world"):
            where = f"{v.node_id}[{v.item_key}]" if v.item_key else v.node_id
            problems.append(f"{name}: node `{where}` failed with a {v.error_kind} error: {v.error}")
    if run.status == "completed":
        if plan is not None and plan.control == "state_machine" and run.outcome not in plan.finals:
            problems.append(f"{name}: completed with outcome {run.outcome!r}, not one of its final nodes")
        if plan is not None:
            for problem in schema_errors(plan.context_schema, run.context or {}):
                problems.append(f"{name}: its final context does not fit context.schema: {problem}")
        return f"completed:{run.outcome}", problems
    if run.status == "failed" and run.error_kind == "world":
        at = next((v.node_id for v in visits if v.status == "failed" and v.error_kind == "world"), None)
        return f"failed (world) at {at}" if at else "failed (world)", problems
    problems.append(f"{name}: ended {run.status} with a {run.error_kind} error: {run.error}")
    return f"{run.status} ({run.error_kind})", problems

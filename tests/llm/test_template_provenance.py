"""Template runs over submissions, end to end: real Prefect runs of a two-step template whose
model is the local OpenAI-compatible test server, answering each field as {value, refId} with the
refIds it reads from the prompt; then the provenance of every value, back to the input."""

from __future__ import annotations

import json

import pytest

pytestmark = pytest.mark.prefect

ENV = """
kind: environment
name: tplenv
retries: 0
models:
  - {{model: openai/tpl, api_base: "{url}", api_key: "env:FAKE_OPENAI_KEY"}}
"""
FORMS = {
    "order.yaml": """
kind: form
name: order
groups:
  - name: customer
    required: true
    fields: [{name: name, type: string, required: true}]
  - name: lines
    repeat: true
    required: true
    fields:
      - {name: item, type: string, required: true}
      - {name: amount, type: number, required: true}
""",
    "order_total.yaml": """
kind: form
name: order_total
groups:
  - name: summary
    required: true
    fields:
      - {name: customer, type: string, required: true}
      - {name: total, type: number, required: true}
""",
}
TEMPLATE = """
kind: template
name: totals
input_form: order
output_type: {output_type}
steps:
  - key: clean
    prompt: "Normalise the order of {{{{ input.customer.name }}}}."
    output_key: cleaned
    output_form: order
    environment: tplenv
  - key: add_up
    parent: clean
    prompt: "Add up the order of {{{{ cleaned.customer.name }}}}."
    output_key: total
    output_form: order_total
    environment: tplenv
"""
#: the first step alone: its output form is the input's own (what submission_update writes back)
ONE_STEP = TEMPLATE.split("  - key: add_up")[0]
ORDER = {"customer": {"name": "  acme  "}, "lines": [{"item": "bolts", "amount": 2.5}, {"item": "nuts", "amount": 4}]}


def input_values(body: dict) -> list[dict]:
    """The step's input rows ({refId, path, value}) from the prompt the engine sent."""
    from flows.llm.agent import INPUT_BEGIN, INPUT_END

    text = next(m["content"] for m in body["messages"] if m["role"] == "user" and INPUT_BEGIN in m["content"])
    return json.loads(text.split(INPUT_BEGIN, 1)[1].split(INPUT_END, 1)[0])


def by_path(rows: list[dict]) -> dict[str, dict]:
    return {r["path"]: r for r in rows}


def answer(body: dict, *, bad_ref: bool = False) -> dict:
    """What a careful model answers: step `clean` trims and copies, `add_up` sums, citing inputs."""
    rows = by_path(input_values(body))
    prompt = next(m["content"] for m in body["messages"] if m["role"] == "user")
    key = "cleaned" if prompt.startswith("Normalise") else "total"
    if key == "cleaned":
        lines = [{"item": {"value": rows[f"lines[{i}].item"]["value"].upper(), "refId": rows[f"lines[{i}].item"]["refId"]},
                  "amount": {"value": rows[f"lines[{i}].amount"]["value"], "refId": rows[f"lines[{i}].amount"]["refId"]}}
                 for i in range(2)]
        name = rows["customer.name"]
        out = {"customer": {"name": {"value": name["value"].strip(), "refId": "v-made-up" if bad_ref else name["refId"]}},
               "lines": lines}
    else:
        amounts = [rows[f"lines[{i}].amount"] for i in range(2)]
        out = {"summary": {"customer": {"value": rows["customer.name"]["value"], "refId": rows["customer.name"]["refId"]},
                           "total": {"value": sum(a["value"] for a in amounts), "refId": [a["refId"] for a in amounts]}}}
    return {"json": {key: out}}


@pytest.fixture
def template_run(run_def, fake):
    """template_run(output_type=..., submission_id=...) → the run's result dict (inputs: ORDER)."""

    def run(output_type: str = "artifact", *, steps: str = TEMPLATE, **kw) -> dict:
        files = {**FORMS, "tplenv.yaml": ENV.format(url=fake.url), "totals.yaml": steps.format(output_type=output_type)}
        inputs = {} if "submission_id" in kw else {"input": ORDER}
        return run_def(files, "totals", inputs, **kw)

    return run


def test_every_value_of_the_second_step_traces_back_through_the_first_to_the_input(template_run, fake):
    from flows.store import artifacts as artifact_store
    from flows.store import runs as run_store
    from flows.store import submissions as submission_store
    from flows.store import visits as visit_store
    from flows.submissions import provenance

    fake.respond("tpl", answer)
    result = template_run()
    assert result["status"] == "completed", result["error"]
    # the context holds plain form data, as before
    assert result["context"]["cleaned"]["customer"] == {"name": "acme"}
    assert result["context"]["total"] == {"summary": {"customer": "acme", "total": 6.5}}
    run = run_store.require_run(result["run_id"])
    visits = {v.node_id: v for v in visit_store.visits_for_run(run.id)}
    assert run.input_submission_id and visits["clean"].output_submission_id and visits["add_up"].output_submission_id
    final = {v.cell.field: v for v in submission_store.selected_values(visits["add_up"].output_submission_id)}

    total = provenance.chain(final["total"].version_id)
    assert total is not None and total.info.transformation["kind"] == "llm_extract"
    assert total.info.transformation["visit_id"] == visits["add_up"].id
    call = next(c for c in visit_store.llm_calls_for_run(run.id) if c.id == total.info.transformation["llm_call_id"])
    assert call.visit_id == visits["add_up"].id and "Add up the order" in json.dumps(call.messages)
    # total ← the two amounts of step `clean` ← the two amounts of the input submission
    hops = [(i.info.submission_id, i.info.value.cell.field, i.info.value.value) for i in total.inputs]
    assert sorted(hops, key=str) == sorted([(visits["clean"].output_submission_id, "amount", 2.5),
                                            (visits["clean"].output_submission_id, "amount", 4)], key=str)
    leaves = provenance.leaves(total)
    assert sorted(leaf.info.value.value for leaf in leaves) == [2.5, 4]
    assert {leaf.info.submission_id for leaf in leaves} == {run.input_submission_id}
    assert {leaf.info.value.source_type for leaf in leaves} == {"import"}
    # customer ← clean's trimmed name ← the input's untrimmed one
    customer = provenance.chain(final["customer"].version_id)
    assert [leaf.info.value.value for leaf in provenance.leaves(customer)] == ["  acme  "]
    assert customer.inputs[0].info.value.value == "acme"
    # output_type artifact: the final output is also a versioned artifact
    art = artifact_store.artifacts_for_run(run.id, key="total")
    assert [(a.type, a.version, a.content) for a in art] == [("json", 1, result["context"]["total"])]


def test_a_run_over_an_existing_submission_reads_its_selected_values(template_run, fake, definitions):
    from flows.submissions import records
    from flows.store import runs as run_store

    for name, text in FORMS.items():
        (definitions / name).write_text(text)
    form, digest = records.form_named("order")
    sid = records.create(form, digest, ORDER, created_by="lea")
    from flows.submissions.shape import parse_assignment

    records.set_values(sid, [parse_assignment(form, "lines[1].amount=10")], by="lea")  # the selected value counts
    fake.respond("tpl", answer)
    result = template_run(submission_id=sid)
    assert result["status"] == "completed", result["error"]
    assert result["context"]["total"]["summary"]["total"] == 12.5
    assert run_store.require_run(result["run_id"]).input_submission_id == sid


def test_an_unknown_ref_id_is_repaired_once_then_fails_the_node_with_nothing_written(template_run, fake):
    from flows.store import submissions as submission_store
    from flows.store import visits as visit_store

    # a first bad answer, then a good one: the repair turn names the unknown refId
    fake.script("tpl")
    turns: list[dict] = []

    def bad_then_good(body: dict) -> dict:
        turns.append(body)
        return answer(body, bad_ref=len(turns) == 1)

    fake.respond("tpl", bad_then_good)
    result = template_run()
    assert result["status"] == "completed", result["error"]
    repair = turns[1]["messages"][-1]["content"]
    assert "cleaned.customer.name.refId: `v-made-up` is not a refId of this step's input" in repair

    # bad twice: the node fails, the context and the store have nothing of the step
    fake.reset()
    fake.respond("tpl", lambda body: answer(body, bad_ref=True))
    failed = template_run()
    assert failed["status"] == "failed" and "v-made-up" in failed["error"]
    assert "cleaned" not in failed["context"]
    visits = visit_store.visits_for_run(failed["run_id"])
    assert [(v.node_id, v.status, v.output_submission_id) for v in visits if v.node_id == "clean"] == [
        ("clean", "failed", None)]
    assert all(v.status != "completed" and v.output_submission_id is None for v in visits)
    assert submission_store.list_submissions(run_id=failed["run_id"]) == []


def test_submission_update_writes_new_selected_versions_of_the_input_and_keeps_the_old(template_run, fake):
    from flows.store import runs as run_store
    from flows.store import submissions as submission_store
    from flows.store import visits as visit_store
    from flows.store.submissions import Cell

    # one step: its output form is the input's own, so its values write back
    fake.respond("tpl", answer)
    result = template_run(output_type="submission_update", steps=ONE_STEP)
    assert result["status"] == "completed", result["error"]
    run = run_store.require_run(result["run_id"])
    history = submission_store.history(run.input_submission_id)
    name = history[Cell("customer", 0, "name")]
    assert [(v.value, v.source_type) for v in name] == [("  acme  ", "import"), ("acme", "transformation")]
    selected = {v.cell: v for v in submission_store.selected_values(run.input_submission_id)}
    assert selected[Cell("customer", 0, "name")].version_id == name[-1].version_id
    assert selected[Cell("lines", 1, "item")].value == "NUTS"
    # the new version is a copy of the final step's value: the chain runs on through it
    info = submission_store.versions([name[-1].version_id])[name[-1].version_id]
    assert info.transformation["kind"] == "copy"
    clean = next(v for v in visit_store.visits_for_run(run.id) if v.node_id == "clean")
    cited = submission_store.versions(info.inputs)
    assert [(c.submission_id, c.value.value) for c in cited.values()] == [(clean.output_submission_id, "acme")]


def test_report_renders_the_final_submission_as_markdown(template_run, fake):
    from flows.store import artifacts as artifact_store

    fake.respond("tpl", answer)
    result = template_run(output_type="report")
    assert result["status"] == "completed", result["error"]
    [report] = artifact_store.artifacts_for_run(result["run_id"], key="report")
    assert report.type == "markdown"
    assert "| total | 6.5 | llm_extract |" in report.content and "| customer | acme | llm_extract |" in report.content


MAPPED = """
kind: template
name: totals
input_form: order
steps:
  - key: clean
    mapping:
      customer.name: "{{ input.customer.name | trim }}"
      lines: "{{ input.lines }}"
    output_key: cleaned
    output_form: order
  - key: add_up
    parent: clean
    mapping:
      summary.customer: "{{ cleaned.customer.name }}"
      summary.total: "{{ cleaned.lines | sum(attribute='amount') }}"
    output_key: total
    output_form: order_total
"""


def test_mapping_steps_record_copy_map_and_aggregate_with_their_expressions(run_def, fake):
    from flows.store import runs as run_store
    from flows.store import submissions as submission_store
    from flows.store import visits as visit_store
    from flows.submissions import provenance

    result = run_def({**FORMS, "totals.yaml": MAPPED}, "totals", {"input": ORDER})
    assert result["status"] == "completed", result["error"]
    assert result["context"]["total"] == {"summary": {"customer": "acme", "total": 6.5}}
    assert fake.requests == []  # no model was asked
    run = run_store.require_run(result["run_id"])
    visits = {v.node_id: v for v in visit_store.visits_for_run(run.id)}
    final = {v.cell.field: v for v in submission_store.selected_values(visits["add_up"].output_submission_id)}
    total = provenance.chain(final["total"].version_id)
    assert (total.info.transformation["kind"], total.info.transformation["expression"]) == (
        "aggregate", "{{ cleaned.lines | sum(attribute='amount') }}")
    assert sorted(i.info.value.value for i in total.inputs) == [2.5, 4]
    assert {i.info.transformation["kind"] for i in total.inputs} == {"copy"}
    assert sorted(leaf.info.value.value for leaf in provenance.leaves(total)) == [2.5, 4]
    assert {leaf.info.submission_id for leaf in provenance.leaves(total)} == {run.input_submission_id}
    customer = provenance.chain(final["customer"].version_id)
    assert customer.info.transformation["kind"] == "copy"
    assert (customer.inputs[0].info.transformation["kind"], customer.inputs[0].info.value.value) == ("map", "acme")
    assert [leaf.info.value.value for leaf in provenance.leaves(customer)] == ["  acme  "]

"""`ergon run TEMPLATE --submission A --submission B`: the run reads a new submission merged from
its sources, every value a `merged` copy citing its original (real store, real `ergon` processes,
real Prefect runs)."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

FORMS = {
    "forms/order.yaml": """
kind: form
name: order
groups:
  - name: customer
    required: true
    fields:
      - {name: name, type: string}
      - {name: reference, type: string}
  - name: lines
    repeat: true
    required: true
    fields:
      - {name: item, type: string, required: true}
      - {name: amount, type: number, required: true}
""",
    "forms/order_total.yaml": """
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
steps:
  - key: add_up
    mapping:
      summary.customer: "{{ input.customer.name | default('?') }} {{ input.customer.reference | default('') }}"
      summary.total: "{{ input.lines | sum(attribute='amount') }}"
    output_key: total
    output_form: order_total
"""
ACME = {"customer": {"name": "acme"}, "lines": [{"item": "bolts", "amount": 2.5}]}
PO = {"customer": {"reference": "PO-7"}, "lines": [{"item": "nuts", "amount": 4}, {"item": "washers", "amount": 1}]}


@pytest.fixture
def folder(store, definitions):
    for name, text in {**FORMS, "totals.yaml": TEMPLATE}.items():
        (definitions / name).parent.mkdir(exist_ok=True)
        (definitions / name).write_text(text)
    return definitions


@pytest.fixture
def ergon(folder, tokens):
    """``ergon(*args)`` → CompletedProcess, acting as lea on the test's store and folder."""
    env = {k: v for k, v in os.environ.items() if k not in ("ERGON_USER", "ERGON_TOKEN")}
    env.update(ERGON_TOKEN=tokens["lea"], COLUMNS="200")

    def run(*args: str) -> subprocess.CompletedProcess:
        return subprocess.run([sys.executable, "-m", "flows.cli", *args], env=env, capture_output=True, text=True,
                              timeout=180)

    return run


def submission(data: dict, form: str = "order") -> str:
    from flows.submissions import records

    found, digest = records.form_named(form)
    return records.create(found, digest, data, created_by="lea", tell=False)


def result_of(done: subprocess.CompletedProcess) -> dict:
    return json.loads(done.stdout.strip().splitlines()[-1])


def runs_of(name: str) -> list:
    from flows.store import runs as run_store

    return run_store.list_runs(definition=name, limit=100)[0]


def submission_ids() -> set[str]:
    from flows.store import submissions as submission_store

    return {s.id for s in submission_store.list_submissions(limit=1000)}


@pytest.mark.prefect
def test_two_submissions_are_merged_into_the_input_of_one_run(prefect_api, ergon):
    from flows.store import runs as run_store
    from flows.store import submissions as submission_store
    from flows.store import visits as visit_store
    from flows.submissions import provenance, records

    acme, po = submission(ACME), submission(PO)
    originals = {v.version_id: (acme, v.cell, v.value) for v in submission_store.selected_values(acme)}
    originals |= {v.version_id: (po, v.cell, v.value) for v in submission_store.selected_values(po)}

    done = ergon("run", "totals", "--submission", acme, "--submission", po, "--json")
    assert done.returncode == 0, done.stderr
    result = result_of(done)
    assert result["status"] == "completed", result["error"]
    assert result["context"]["total"] == {"summary": {"customer": "acme PO-7", "total": 7.5}}

    run = run_store.require_run(result["run_id"])
    merged = run.input_submission_id
    assert merged not in (None, acme, po)
    view = records.view(merged)
    assert (view.submission.form_name, view.submission.origin, view.submission.created_by) == ("order", "merged", "lea")
    # every group and value of both, in the order given: the repeating group's entries one after the other
    assert view.data() == {"customer": {"name": "acme", "reference": "PO-7"},
                           "lines": [{"item": "bolts", "amount": 2.5}, {"item": "nuts", "amount": 4},
                                     {"item": "washers", "amount": 1}]}
    assert run.context["input"] == view.data()
    assert {v.source_type for v in view.values} == {"merged"}
    copied = {v.cell: originals[v.source_id] for v in view.values}  # each copy cites the version it copied
    assert copied[("customer", 0, "name")] == (acme, ("customer", 0, "name"), "acme")
    assert copied[("customer", 0, "reference")] == (po, ("customer", 0, "reference"), "PO-7")
    assert copied[("lines", 0, "item")] == (acme, ("lines", 0, "item"), "bolts")
    assert copied[("lines", 2, "amount")] == (po, ("lines", 1, "amount"), 1)
    assert len(copied) == len(originals)
    assert submission_store.merged_from(merged) == [acme, po]
    # the sources are left as they were
    assert all(len(versions) == 1 for versions in submission_store.history(acme).values())
    assert records.view(po).data() == PO

    # the step's total leads back through the merged copies to the values of both sources
    (visit,) = [v for v in visit_store.visits_for_run(run.id) if v.node_id == "add_up"]
    final = {v.cell.field: v for v in submission_store.selected_values(visit.output_submission_id)}
    total = provenance.chain(final["total"].version_id)
    assert {i.info.value.source_type for i in total.inputs} == {"merged"}
    leaves = provenance.leaves(total)
    assert sorted((leaf.info.submission_id, leaf.info.value.value) for leaf in leaves) == sorted(
        [(acme, 2.5), (po, 4), (po, 1)])
    assert {leaf.info.value.source_type for leaf in leaves} == {"import"}

    shown = ergon("submissions", "show", merged)
    assert shown.returncode == 0, shown.stderr
    assert f"merged from {acme}, {po}" in shown.stdout and " · merged" in shown.stdout
    name_version = next(v for v in view.values if v.cell == ("customer", 0, "name"))
    assert f"customer.name = acme  [merged {name_version.source_id} · lea · " in shown.stdout
    assert json.loads(ergon("submissions", "export", merged).stdout)["merged_from"] == [acme, po]


@pytest.mark.prefect
def test_one_submission_is_read_as_it_is(prefect_api, ergon):
    from flows.store import runs as run_store

    acme = submission(ACME)
    done = ergon("run", "totals", "--submission", acme, "--json")
    assert done.returncode == 0, done.stderr
    result = result_of(done)
    assert result["status"] == "completed", result["error"]
    assert result["context"]["total"] == {"summary": {"customer": "acme ", "total": 2.5}}
    assert run_store.require_run(result["run_id"]).input_submission_id == acme
    from flows.store import submissions as submission_store

    # no merged submission: the input and the step's output only
    assert {s.origin for s in submission_store.list_submissions()} == {"import", "transformation"}


def refused(ergon, *args: str) -> str:
    """Run `ergon run totals ARGS…`, which must be refused before anything is written; its stderr."""
    before = submission_ids()
    done = ergon("run", "totals", *args)
    assert done.returncode == 2, (done.stdout, done.stderr)
    assert "Traceback" not in done.stderr and done.stdout == ""
    assert runs_of("totals") == [] and submission_ids() == before
    return done.stderr


def test_a_field_held_by_two_submissions_is_refused_naming_it_and_both(ergon):
    acme, other = submission(ACME), submission({"customer": {"name": "Acme Ltd"}, "lines": [{"item": "pins", "amount": 0.5}]})
    stderr = refused(ergon, "--submission", acme, "--submission", other)
    assert (f"error[invalid-input] `customer.name` is held by submission {acme} and by submission {other}: "
            "a field of a group that does not repeat is taken from one submission only") in stderr
    assert "lines" not in stderr  # repeating entries never conflict


def test_an_unknown_submission_is_refused_naming_it(ergon):
    acme = submission(ACME)
    stderr = refused(ergon, "--submission", acme, "--submission", "nope", "--submission", "gone")
    assert "error[invalid-input] no submission 'nope'" in stderr and "error[invalid-input] no submission 'gone'" in stderr


def test_a_submission_of_another_form_is_refused_naming_it(ergon):
    acme = submission(ACME)
    total = submission({"summary": {"customer": "acme", "total": 1}}, form="order_total")
    stderr = refused(ergon, "--submission", acme, "--submission", total)
    assert (f"error[invalid-input] submission {total} is a `order_total` submission; template `totals` reads "
            "`order` submissions") in stderr
    assert acme not in stderr


def test_the_same_submission_twice_is_refused(ergon):
    acme = submission(ACME)
    stderr = refused(ergon, "--submission", acme, "--submission", acme)
    assert f"error[invalid-input] submission {acme} is given 2 times" in stderr


def test_a_merge_follows_the_order_given_and_writes_nothing_until_asked(folder):
    from flows.store import submissions as submission_store
    from flows.submissions import merging, records

    acme, po = submission(ACME), submission(PO)
    form, digest = records.form_named("order")
    before = submission_ids()
    merge = merging.plan([po, acme], form, digest)
    assert submission_ids() == before
    assert merge.data()["lines"] == [*PO["lines"], *ACME["lines"]]
    merged = merge.write(created_by="lea")
    assert records.view(merged).data() == merge.data()
    assert submission_store.merged_from(merged) == [acme, po]  # the sources, oldest first


def test_a_group_entry_holding_no_value_conflicts_with_nothing(folder):
    from flows.store import submissions as submission_store
    from flows.submissions import merging, records

    form, digest = records.form_named("order")
    pins = submission({"customer": {}, "lines": [{"item": "pins", "amount": 0.5}]})
    acme = submission(ACME)
    merged = merging.plan([pins, acme], form, digest).write(created_by="lea")
    assert records.view(merged).data() == {"customer": {"name": "acme"},
                                           "lines": [{"item": "pins", "amount": 0.5}, *ACME["lines"]]}
    assert [v.source_type for v in submission_store.selected_values(merged)] == ["merged"] * 5

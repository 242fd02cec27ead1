"""The shipped examples run end to end on the embedded default (offline model) — the demo among
them. (The contract review pauses for a person: tests/humans/test_contract_review.py.)"""

from __future__ import annotations

from pathlib import Path

import pytest

pytestmark = pytest.mark.prefect

DEFINITIONS = Path(__file__).parents[2] / "definitions"

CASES = {
    "vendor_onboarding": ({"vendor_name": "Acme Tools", "country": "FR", "category": "hardware"}, "onboarded"),
    "document_intake": ({"documentId": "doc-1"}, "completed"),
    "kyc_check": ({"vendor_name": "Acme", "country": "FR"}, "done"),
    "report_pipeline": ({"title": "Prefect", "report_text": "Prefect runs flows.  Ergon compiles YAML."}, "completed"),
    "invoice_processing": ({"vendor_name": "Acme", "currency": "EUR", "invoice_lines": [
        {"id": "l1", "description": "Laptop", "amount": 1200.0},
        {"id": "l2", "description": "Support contract", "amount": 300.0}]}, None),
    "document_summary": (None, None),
}


@pytest.mark.parametrize("name", list(CASES))
def test_example_runs_on_the_offline_model(name, prefect_api, store, monkeypatch):
    from flows.catalog import Catalog
    from flows import runs
    from flows.execution.inputs import validate_inputs
    from flows.llm.offline import example_for_schema

    monkeypatch.setenv("ERGON_DEFINITIONS", str(DEFINITIONS))
    monkeypatch.delenv("ERGON_MODEL", raising=False)
    if name == "document_intake":  # its extractText reads the document store
        from flows import documents

        documents.add(DEFINITIONS / "documents" / "doc-1.txt", id="doc-1", replace=True)
    catalog = Catalog.load()
    compiled = catalog.compile(name)
    inputs, outcome = CASES[name]
    if inputs is None:  # inputs generated from the definition's own input schema
        schema = compiled.plan.input_schema
        inputs = {k: v for k, v in example_for_schema(schema, seed=name).items() if k in schema.get("required", [])}
    assert validate_inputs(compiled.plan, inputs) == []
    result = runs.start(compiled, inputs, catalog=catalog).to_dict()
    assert result["status"] == "completed", result
    if outcome:
        assert result["outcome"] == outcome

"""A workflow that indexes documents by meaning and searches them (the embedding activities),
run on Prefect with the default (offline) embedder."""

from __future__ import annotations

import uuid

import pytest

pytestmark = pytest.mark.prefect


def test_a_workflow_creates_and_indexes_documents_then_finds_the_nearest_first(run_def, monkeypatch):
    from flows import document_vectors
    from flows.llm.offline_embedding import MODEL
    from flows.store import visits as visit_store

    monkeypatch.delenv("ERGON_EMBEDDING_MODEL", raising=False)
    kind = f"Policy-{uuid.uuid4().hex[:8]}"  # the documents folder is shared by the session's tests
    text = f"""
kind: workflow
name: wf_embeddings
input_schema: {{type: object, properties: {{question: {{type: string}}}}, required: [question]}}
steps:
  - name: createDocument
    params: {{type: {kind}, properties: {{name: travel}}, content: "Travel: book economy flights; hotel nights are refunded up to 150 euros."}}
    output: travel
  - name: createDocument
    params: {{type: {kind}, properties: {{name: security}}, content: "Security: laptops are locked and passwords rotate every 90 days."}}
    output: security
  - name: createDocument
    params: {{type: {kind}, properties: {{name: leave}}, content: "Leave: employees take 25 days of paid holiday a year."}}
    output: leave
  - name: generateEmbeddings
    params: {{document: ["${{travel.document}}", "${{security.document}}", "${{leave.document}}"]}}
    output: index
  - {{name: generateEmbeddings, params: {{text: "${{question}}"}}, output: query}}
  - name: searchEmbeddings
    params: {{embeddings: "${{query.embeddings}}", limit: 3, filter: {{type: {kind}}}}}
    projection: {{$include: [results]}}
    output: found
"""
    result = run_def({"wf.yaml": text}, "wf_embeddings", {"question": "How many days of paid holiday do employees get?"})
    assert result["status"] == "completed", result
    ctx = result["context"]
    created = [ctx[k]["document"]["id"] for k in ("travel", "security", "leave")]
    assert ctx["index"] == {"indexed": [{"id": i, "status": "embedded"} for i in created], "model": MODEL, "dimensions": 512}
    results = ctx["found"]["results"]
    assert results[0]["id"] == ctx["leave"]["document"]["id"] and results[0]["score"] > 0.3
    assert sorted(r["id"] for r in results) == sorted(created) and set(ctx["found"]) == {"results"}
    assert all(document_vectors.current_vector(i, MODEL) is not None for i in created)
    # the two embedding calls (three documents in one batch, the question) are the run's records
    rows = visit_store.llm_calls_for_run(result["run_id"])
    assert [(row.model, row.response["count"]) for row in rows] == [(MODEL, 3), (MODEL, 1)]

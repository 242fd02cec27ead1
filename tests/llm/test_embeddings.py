"""Embeddings through litellm over real HTTP (the fake server's ``/v1/embeddings``): model
resolution, environments, batches, retries, records, secrets, cassettes, and a workflow run."""

from __future__ import annotations

import asyncio
import json

import pytest
from fake_openai import EMBEDDING_DIMENSIONS

from flows.llm import embeddings
from flows.llm.embeddings import OFFLINE_MODEL, embed
from flows.llm.offline_embedding import DIMENSIONS, embed_offline
from flows.llm.types import LlmError

TEXTS = ["The supplier delivers the goods within 30 days.", "Invoices are paid within 60 days."]


def run(coro):
    return asyncio.run(coro)


def served_vector(text: str) -> list[float]:
    """What the fake server answers for ``text`` (the offline embedder at the server's size)."""
    return embed_offline(text, EMBEDDING_DIMENSIONS)


def test_no_embedding_model_means_the_offline_embedder_and_never_the_chat_model(fake, monkeypatch):
    monkeypatch.setenv("ERGON_MODEL", "openai/some-chat-model")
    monkeypatch.delenv("ERGON_EMBEDDING_MODEL", raising=False)
    got = run(embed(TEXTS))
    assert got.model == got.answered_by == OFFLINE_MODEL and got.offline
    assert got.dimensions == DIMENSIONS and got.vectors == [embed_offline(t) for t in TEXTS]
    assert fake.requests == []
    with pytest.raises(LlmError, match="offline chat model"):
        run(embed(TEXTS, model="ergon/offline"))


def test_a_model_string_embeds_over_http_and_the_call_is_recorded(fake, direct, run_id, visit):
    vid = visit("index")
    got = run(embed(TEXTS, model="openai/emb-plain", parameters=direct, run_id=run_id, visit_id=vid))
    [request] = fake.for_model("emb-plain")
    assert request.body["input"] == TEXTS and request.headers["authorization"] == "Bearer sk-fake-test-key"
    assert got.vectors == [served_vector(t) for t in TEXTS] and got.dimensions == EMBEDDING_DIMENSIONS
    assert not got.offline and got.model == got.answered_by == "openai/emb-plain" and got.tokens_in > 0

    from flows.store import runs as run_store
    from flows.store import visits as visit_store

    [row] = visit_store.llm_calls_for_run(run_id, visit_id=vid)
    assert row.model == "openai/emb-plain" and row.error is None and not row.offline
    assert [m["content"] for m in row.messages] == TEXTS and [m["chars"] for m in row.messages] == [len(t) for t in TEXTS]
    assert row.response["kind"] == "embeddings" and row.response["count"] == 2
    assert row.response["dimensions"] == EMBEDDING_DIMENSIONS and row.tokens_in == got.tokens_in
    assert "vectors" not in row.response  # the vectors go to the caller (and the index), not the record
    assert run_store.get_run(run_id).tokens == got.tokens_in


def test_the_embedding_model_setting_names_an_environment(fake, make_env, monkeypatch):
    env = make_env("embedder", ["emb-env"])
    monkeypatch.setenv("ERGON_EMBEDDING_MODEL", "embedder")
    got = run(embed(TEXTS[:1], environments={env.name: env}))
    assert got.model == "embedder" and got.answered_by == "openai/emb-env"
    assert got.vectors == [served_vector(TEXTS[0])]
    assert [r.model for r in fake.requests] == ["emb-env"]


def test_an_environment_fails_over_to_its_next_embedding_model(fake, make_env, run_id, sleeps):
    env = make_env("emb_failover", ["emb-down", "emb-up"], retries=1)
    fake.script("emb-down", {"status": 500}, {"status": 503})
    got = run(embed(TEXTS, model="emb_failover", environments={env.name: env}, run_id=run_id))
    assert [(r.model, r.status) for r in fake.requests] == [("emb-down", 500), ("emb-down", 503), ("emb-up", 200)]
    assert got.answered_by == "openai/emb-up"
    from flows.store import visits as visit_store

    [row] = visit_store.llm_calls_for_run(run_id)
    assert row.model == "openai/emb-up" and row.response["environment"] == "emb_failover"
    assert row.response["deployment"] == "emb-up"


def test_texts_go_in_batches_and_come_back_in_order(fake, direct, run_id, monkeypatch):
    monkeypatch.setattr(embeddings, "BATCH_SIZE", 2)
    texts = [f"text number {n} about topic {n % 3}" for n in range(5)]
    got = run(embed(texts, model="openai/emb-batch", parameters=direct, run_id=run_id))
    assert [r.body["input"] for r in fake.for_model("emb-batch")] == [texts[0:2], texts[2:4], texts[4:5]]
    assert got.vectors == [served_vector(t) for t in texts]
    from flows.store import visits as visit_store

    assert [row.response["count"] for row in visit_store.llm_calls_for_run(run_id)] == [2, 2, 1]


def test_rate_limits_are_retried_with_backoff_and_a_400_is_not(fake, direct, sleeps, run_id):
    fake.script("emb-429", {"status": 429}, {"status": 429})
    run(embed(TEXTS, model="openai/emb-429", parameters=direct))
    assert [r.status for r in fake.for_model("emb-429")] == [429, 429, 200] and len(sleeps) == 2

    fake.script("emb-400", {"status": 400})
    with pytest.raises(LlmError, match="emb-400"):
        run(embed(TEXTS, model="openai/emb-400", parameters=direct, run_id=run_id))
    assert len(fake.for_model("emb-400")) == 1
    from flows.store import visits as visit_store

    [row] = visit_store.llm_calls_for_run(run_id)
    assert row.error and row.response is None


def test_keys_stay_out_of_requests_records_and_errors(fake, make_env, run_id, monkeypatch):
    from flows import secrets
    from flows.secrets.keys import generate_key

    secret = "sk-embedding-secret-456"
    monkeypatch.setenv("ERGON_SECRET_KEYS", f"k1:{generate_key()}")
    secrets.set_secret("emb_key", secret)
    env = make_env("emb_secret", [{"model": "openai/emb-sec", "api_key": "secret:emb_key"}])
    run(embed(TEXTS, model="emb_secret", environments={env.name: env}, run_id=run_id))
    fake.script("emb-sec", {"status": 401})  # the server echoes the key in its error, as OpenAI does
    with pytest.raises(LlmError) as failure:
        run(embed(TEXTS, model="emb_secret", environments={env.name: env}, run_id=run_id))
    assert fake.requests[0].headers["authorization"] == f"Bearer {secret}"
    assert all(secret not in r.text for r in fake.requests)
    from flows.store import visits as visit_store

    rows = visit_store.llm_calls_for_run(run_id)
    assert len(rows) == 2 and rows[1].error
    stored = json.dumps([row.model_dump(mode="json") for row in rows])
    assert secret not in stored and secret not in str(failure.value)


def test_a_cassette_replays_the_vectors_without_the_server(fake, direct, tmp_path):
    from flows.llm.cassettes import use_cassette

    path = tmp_path / "emb.json"
    with use_cassette(record=path):
        recorded = run(embed(TEXTS, model="openai/emb-tape", parameters=direct))
    assert len(fake.requests) == 1
    with use_cassette(replay=path):
        replayed = run(embed(TEXTS, model="openai/emb-tape", parameters=direct))
        with pytest.raises(LlmError, match="cassette miss"):
            run(embed(["a text that was never recorded"], model="openai/emb-tape", parameters=direct))
    assert replayed.vectors == recorded.vectors and len(fake.requests) == 1


def test_what_cannot_be_embedded_is_refused_before_any_call(fake, direct):
    with pytest.raises(LlmError, match="nothing to embed"):
        run(embed([], model="openai/emb-x", parameters=direct))
    with pytest.raises(LlmError, match="input 1 is empty"):
        run(embed(["words", "  "], model="openai/emb-x", parameters=direct))
    assert fake.requests == []
    fake.script("emb-short", {"embeddings": [[1.0, 0.0]]})
    with pytest.raises(LlmError, match="1 embeddings for 2 inputs"):
        run(embed(TEXTS, model="openai/emb-short", parameters=direct))


@pytest.mark.prefect
def test_a_workflow_indexes_documents_and_finds_one_by_meaning_through_an_environment(fake, run_def, monkeypatch):
    import uuid

    from fake_openai import ENVIRONMENT

    from flows import documents
    from flows.store import visits as visit_store

    monkeypatch.setenv("ERGON_EMBEDDING_MODEL", "fake")
    kind = f"Clause-{uuid.uuid4().hex[:8]}"  # the documents folder is shared by the session's tests
    docs = [documents.create(f"{kind}-{name}.md", text, type=kind) for name, text in [
        ("delivery", "Delivery: the supplier ships the goods within 30 days of each purchase order."),
        ("payment", "Payment: invoices are paid within 60 days; late payment carries interest."),
        ("lunch", "The cafeteria serves a vegetarian lunch every Friday."),
    ]]
    files = {
        "env.yaml": ENVIRONMENT.format(model="emb-wf", url=fake.url),
        "wf.yaml": f"""
kind: workflow
name: wf_embeddings_env
steps:
  - name: generateEmbeddings
    fetch: {{type: document, query: {{type: {kind}}}, select: [id]}}
    params: {{document: "${{fetched}}"}}
    output: index
  - {{name: generateEmbeddings, params: {{text: "When are late invoices paid, and with what interest?"}}, output: question}}
  - name: searchEmbeddings
    params: {{embeddings: "${{question.embeddings}}", limit: 2, filter: {{type: {kind}}}}}
    output: found
""",
    }
    result = run_def(files, "wf_embeddings_env")
    assert result["status"] == "completed", result
    ctx = result["context"]
    by_id = sorted(docs, key=lambda d: d["id"])  # the order fetch lists them in
    assert ctx["index"] == {"indexed": [{"id": d["id"], "status": "embedded"} for d in by_id], "model": "fake",
                            "dimensions": EMBEDDING_DIMENSIONS}
    assert len(ctx["question"]["embeddings"]) == EMBEDDING_DIMENSIONS
    assert [hit["id"] for hit in ctx["found"]["results"]] == [docs[1]["id"], docs[0]["id"]]
    # every embedding went to the server through the environment, and was recorded in the run:
    # the three documents, then the question; the search found the index current (no call)
    assert [r.body["input"] for r in fake.requests] == [[documents.get(d["id"])["content"] for d in by_id],
                                                       ["When are late invoices paid, and with what interest?"]]
    rows = visit_store.llm_calls_for_run(result["run_id"])
    assert [row.response["count"] for row in rows] == [3, 1]
    assert all(row.model == "openai/emb-wf" and row.response["kind"] == "embeddings" for row in rows)


@pytest.mark.prefect
def test_an_agent_searches_the_documents_by_meaning_with_the_runs_environment(fake, run_def, monkeypatch):
    import uuid

    from fake_openai import ENVIRONMENT

    from flows import documents
    from flows.store import visits as visit_store

    monkeypatch.setenv("ERGON_EMBEDDING_MODEL", "embedder")  # an environment of embedding models
    embedder = ENVIRONMENT.format(model="agent-emb", url=fake.url).replace("name: fake", "name: embedder")
    tag = uuid.uuid4().hex[:8]
    payment = documents.create(f"{tag}-payment.md", f"Payment {tag}: late invoices carry interest of 2% a month.")
    documents.create(f"{tag}-lunch.md", "The cafeteria serves a vegetarian lunch every Friday.")
    process = """
format_version: 1
process: agent_semantic_search
initial: ask
context:
  schema:
    type: object
    properties: {answer: {type: string}}
nodes:
  ask:
    type: agent
    environment: fake
    prompt: "Which document says what late invoices cost? Search the documents."
    tools: [semantic_search_documents]
    writes: [answer]
    transitions: [{to: done}]
  done: {type: final}
"""
    fake.script("agent-sem", {"tool_calls": [{"name": "semantic_search_documents",
                                              "arguments": {"query": f"interest on late invoices {tag}", "limit": 1}}]},
                {"json": {"answer": payment["id"]}})
    result = run_def({"env.yaml": ENVIRONMENT.format(model="agent-sem", url=fake.url), "embedder.yaml": embedder,
                      "p.yaml": process}, "agent_semantic_search")
    assert result["status"] == "completed", result.get("error")
    [tool_call] = visit_store.tool_calls_for_run(result["run_id"])
    assert tool_call.tool == "semantic_search_documents" and tool_call.result[0]["id"] == payment["id"]
    # the query and the store's documents were embedded by the embedding environment, over HTTP
    embedded = fake.for_model("agent-emb")
    assert embedded and all("input" in r.body for r in embedded)
    assert [f"interest on late invoices {tag}"] in [r.body["input"] for r in embedded]
    second_turn = json.dumps(fake.for_model("agent-sem")[-1].body["messages"])
    assert payment["id"] in second_turn  # the search's hits went back to the model

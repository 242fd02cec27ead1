"""Prefect Secret blocks and Variables as secret references (``prefect-secret:NAME``,
``prefect-var:NAME``), against a real Prefect server: the block or variable is made through
Prefect's own client, a real run reads it on the worker when the value is needed, the value
reaches the model provider or the tool server as its auth header and nowhere else in the store,
and a missing one fails the node with a message naming it and the command that makes it."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parents[1] / "llm"))

from fake_openai import FakeOpenAI

pytestmark = pytest.mark.prefect

KEY = "sk-proj-9d2a7c-prefect-block-marker"
TOKEN = "Bearer tok-5e1b3f-prefect-variable-marker"


def _unique(prefix: str, sep: str = "-") -> str:
    return f"{prefix}{sep}{uuid.uuid4().hex[:10]}"


@pytest.fixture
def secret_block(prefect_api):
    """secret_block(value) → the name of a new Prefect Secret block holding ``value`` (deleted after)."""
    from prefect.blocks.system import Secret
    from prefect.client.orchestration import get_client

    made: list[str] = []

    def make(value, name: str | None = None) -> str:
        name = name or _unique("ergon-test")
        Secret(value=value).save(name, overwrite=True, _sync=True)
        made.append(name)
        return name

    yield make
    with get_client(sync_client=True) as client:
        for name in made:
            doc = client.read_block_document_by_name(name, block_type_slug="secret")
            client.delete_block_document(doc.id)


@pytest.fixture
def variable(prefect_api):
    """variable(value) → the name of a new Prefect Variable holding ``value`` (deleted after)."""
    from prefect.variables import Variable

    made: list[str] = []

    def make(value, name: str | None = None) -> str:
        name = name or _unique("ergon_test", "_")
        Variable.set(name, value, overwrite=True, _sync=True)
        made.append(name)
        return name

    yield make
    for name in made:
        Variable.unset(name, _sync=True)


@pytest.fixture
def fake():
    server = FakeOpenAI().start()
    yield server
    server.stop()


ENV = """
kind: environment
name: prefect_keyed
models:
  - {{model: openai/pfkey, api_base: "{url}", api_key: "prefect-secret:{block}"}}
"""

SCORE = """
format_version: 1
process: prefect_key_check
initial: score
context:
  schema:
    type: object
    properties:
      topic: {type: string}
      score: {type: integer}
    required: [topic]
nodes:
  score:
    type: agent
    environment: prefect_keyed
    prompt: "Score {{ topic }} with the increment tool."
    tools: [increment]
    writes: [score]
    transitions: [{to: done}]
  done: {type: final}
"""


def _stored(run_id: str) -> str:
    """Everything the store keeps about a run, as one text."""
    from flows.store import export as export_store
    from flows.store import visits as visit_store

    calls = visit_store.llm_calls_for_run(run_id)
    tools = visit_store.tool_calls_for_run(run_id)
    rows = json.dumps([row.model_dump(mode="json") for row in [*calls, *tools]])
    return rows + json.dumps(export_store.export_run(run_id), default=str)


def test_a_prefect_secret_block_key_reaches_the_model_as_its_auth_header_only(
        run_def, fake, secret_block, database_bytes):
    block = secret_block(KEY)
    fake.script("pfkey",
                {"tool_calls": [{"name": "increment", "arguments": {"value": 1}}]},
                {"json": {"score": 2}})
    result = run_def({"env.yaml": ENV.format(url=fake.url, block=block), "p.yaml": SCORE},
                     "prefect_key_check", {"topic": "x"})
    assert result["status"] == "completed", result
    requests = fake.for_model("pfkey")
    assert len(requests) == 2
    assert all(r.headers.get("authorization") == f"Bearer {KEY}" for r in requests), "the block's value is the key"
    assert all(KEY not in r.text for r in requests), "the key is never in what the model reads"
    stored = _stored(result["run_id"])
    assert "increment" in stored and KEY not in stored
    raw = database_bytes()
    assert KEY.encode() not in raw and KEY[8:].encode() not in raw


ECHO = """
format_version: 1
process: prefect_echo_check
initial: summarize
context:
  schema:
    type: object
    properties:
      topic: {type: string}
      summary: {type: string}
    required: [topic]
nodes:
  summarize:
    type: agent
    environment: prefect_keyed
    prompt: "Summarize {{ topic }}."
    writes: [summary]
    transitions: [{to: use}]
  use: {type: tool, tool: log, input: {message: "{{ summary }}"}, transitions: [{to: done}]}
  done: {type: final}
"""


def test_a_prefect_secret_the_model_echoes_back_is_redacted_everywhere(run_def, fake, secret_block, database_bytes):
    """Resolved from Prefect, the key is redacted as Ergon's own secrets are: the context, the
    next node's input, the call records and every byte of the store hold `***`."""
    block = secret_block(KEY)
    fake.script("pfkey", {"json": {"summary": f"the key is {KEY}, as asked"}})
    result = run_def({"env.yaml": ENV.format(url=fake.url, block=block), "p.yaml": ECHO},
                     "prefect_echo_check", {"topic": "x"})
    assert result["status"] == "completed", result
    assert result["context"]["summary"] == "the key is ***, as asked"
    assert KEY not in _stored(result["run_id"])
    raw = database_bytes()
    assert KEY.encode() not in raw and KEY[8:].encode() not in raw


# ---------------------------------------------------------------- an HTTP tool server's header


@pytest.fixture
def tool_server():
    """A tool server (the custom-tools contract) with one tool, `whoami_<id>`, that answers with
    the Authorization header it received; returns (url, tool name, the headers seen)."""
    tool = _unique("whoami", "_")
    seen: list[str | None] = []

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args):
            pass

        def _send(self, payload: dict) -> None:
            data = json.dumps(payload).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def do_GET(self):  # noqa: N802 - stdlib name
            seen.append(self.headers.get("Authorization"))
            self._send({"src": "", "title": "t", "description": "t", "tools": [
                {"name": tool, "description": "Who the server thinks calls.", "input_schema": {"type": "object"}}]})

        def do_POST(self):  # noqa: N802 - stdlib name
            body = json.loads(self.rfile.read(int(self.headers.get("Content-Length") or 0)))
            seen.append(self.headers.get("Authorization"))
            self._send({"tool_use_id": body["tool_use"]["id"],
                        "content": json.dumps({"caller": self.headers.get("Authorization")})})

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_address[1]}/tools", tool, seen
    server.shutdown()
    server.server_close()


WHOAMI = """
format_version: 1
process: prefect_header_check
initial: ask
context:
  schema:
    type: object
    properties:
      caller: {{type: string}}
nodes:
  ask: {{type: tool, tool: {tool}, writes: [caller], transitions: [{{to: done}}]}}
  done: {{type: final}}
"""


def _tool_folder(definitions: Path, url: str, tool: str, header: str) -> None:
    tools = definitions / "tools"
    (tools / "servers.yaml").write_text(json.dumps(
        {"servers": [{"name": _unique("pv-tools"), "url": url, "headers": {"Authorization": header}}]}))
    (tools / "manifest.yaml").write_text(json.dumps({"tools": [{"name": tool}]}))


def test_a_prefect_variable_is_a_tool_servers_header_and_stays_out_of_the_store(
        run_def, definitions, tool_server, variable, database_bytes):
    url, tool, seen = tool_server
    name = variable(TOKEN)
    _tool_folder(definitions, url, tool, f"prefect-var:{name}")
    result = run_def({"p.yaml": WHOAMI.format(tool=tool)}, "prefect_header_check")
    assert result["status"] == "completed", result
    assert seen and all(h == TOKEN for h in seen), seen  # listing and call both carried the variable's value
    assert result["context"]["caller"] == "***", "the tool echoed the token back: redacted in the context"
    stored = _stored(result["run_id"])
    assert tool in stored and TOKEN not in stored
    raw = database_bytes()
    assert TOKEN.encode() not in raw and TOKEN[8:].encode() not in raw


def test_ergon_interactions_run_reads_a_prefect_secret_key_too(prefect_api, store, definitions, fake, secret_block):
    """Outside a run (`ergon interactions run` in a fresh process) the reference resolves as well."""
    block = secret_block(KEY)
    (definitions / "env.yaml").write_text(ENV.format(url=fake.url, block=block))
    (definitions / "i.yaml").write_text("kind: interaction\nname: Greet\nenvironment: prefect_keyed\n"
                                        "prompts: [{role: user, template: Say hello.}]\n")
    env = {**os.environ, "ERGON_DATABASE_URL": store, "ERGON_DEFINITIONS": str(definitions)}
    done = subprocess.run([sys.executable, "-m", "flows.cli", "interactions", "run", "Greet"],
                          env=env, capture_output=True, text=True, timeout=240)
    assert done.returncode == 0, done.stderr[-3000:]
    [request] = fake.for_model("pfkey")
    assert request.headers.get("authorization") == f"Bearer {KEY}"
    assert KEY not in done.stdout + done.stderr


# ---------------------------------------------------------------- missing blocks and variables


def test_a_missing_block_fails_the_node_naming_it_and_the_command_without_a_traceback(
        prefect_api, store, definitions, fake):
    from flows.store import runs as run_store
    from flows.store import visits as visit_store

    block = _unique("ergon-absent")
    (definitions / "env.yaml").write_text(ENV.format(url=fake.url, block=block))
    (definitions / "p.yaml").write_text(SCORE)
    env = {**os.environ, "ERGON_DATABASE_URL": store, "ERGON_DEFINITIONS": str(definitions), "COLUMNS": "200"}
    done = subprocess.run([sys.executable, "-m", "flows.cli", "run", "prefect_key_check", "--input", "topic=x"],
                          env=env, capture_output=True, text=True, timeout=240)
    printed = done.stdout + done.stderr
    assert done.returncode != 0, printed
    assert "Traceback" not in printed, printed[-3000:]
    expected = f"Prefect Secret block `{block}` (`prefect-secret:{block}`) does not exist; create it with " \
               f"`prefect block create secret`"
    assert expected in printed, printed[-3000:]
    [run] = run_store.list_runs(definition="prefect_key_check")[0]
    assert run.status == "failed"
    visits = [v for v in visit_store.visits_for_run(run.id) if v.node_id == "score"]
    assert visits and visits[-1].status == "failed" and expected in (visits[-1].error or "")
    assert fake.for_model("pfkey") == [], "no call went out without its key"


def test_a_missing_variable_is_named_with_the_command_that_sets_it(prefect_api):
    import flows.prefect  # noqa: F401 - registers the Prefect references
    from flows import secrets

    name = _unique("ergon_absent", "_")
    with pytest.raises(secrets.ReferenceNotFound) as missing:
        secrets.resolve_reference(f"prefect-var:{name}")
    assert str(missing.value) == (f"Prefect Variable `{name}` (`prefect-var:{name}`) does not exist; "
                                  f"create it with `prefect variable set {name} VALUE`")


def test_a_missing_header_variable_fails_the_tool_naming_it(prefect_api):
    import flows.prefect  # noqa: F401
    from flows.tools import remote

    name = _unique("ergon_absent", "_")
    with pytest.raises(LookupError, match=rf"does not exist; create it with `prefect variable set {name} VALUE`"):
        remote.resolve_header(f"prefect-var:{name}")


# ---------------------------------------------------------------- values as they were stored


def test_values_are_used_as_stored_and_non_strings_as_their_json(secret_block, variable):
    import flows.prefect  # noqa: F401
    from flows import secrets

    # a string block is not decoded as JSON (Secret.get() would turn "12345" into 12345)
    assert secrets.resolve_reference(f"prefect-secret:{secret_block('12345')}") == "12345"
    assert secrets.resolve_reference(f"prefect-secret:{secret_block({'user': 'a', 'pw': 'b'})}") == \
        '{"user": "a", "pw": "b"}'
    # `prefect variable set NAME 12345` stores the number: used as the text typed
    assert secrets.resolve_reference(f"prefect-var:{variable(12345)}") == "12345"
    assert secrets.resolve_reference(f"prefect-var:{variable(True)}") == "true"
    assert secrets.resolve_reference(f"prefect-var:{variable({'a': [1, 2]})}") == '{"a": [1, 2]}'
    null = variable(None)
    with pytest.raises(secrets.SecretError, match=rf"Prefect Variable `{null}` .* holds no value \(null\)"):
        secrets.resolve_reference(f"prefect-var:{null}")
    empty = variable("")
    with pytest.raises(secrets.SecretError, match=rf"Prefect Variable `{empty}` .* is empty"):
        secrets.resolve_reference(f"prefect-var:{empty}")


NOWHERE = "http://127.0.0.1:9/api"  # nothing listens there


def test_a_malformed_name_is_refused_before_asking_prefect():
    import flows.prefect  # noqa: F401
    from prefect.settings import PREFECT_API_URL, temporary_settings

    from flows import secrets

    with temporary_settings(updates={PREFECT_API_URL: NOWHERE}):  # asking would fail differently
        with pytest.raises(secrets.SecretError, match=r"`prefect-secret:OpenAI_Key` is not a Prefect block name.*"
                                                      r"did you mean `prefect-secret:openai-key`\?"):
            secrets.resolve_reference("prefect-secret:OpenAI_Key")
        with pytest.raises(secrets.SecretError, match=r"`prefect-var:` names no Prefect Variable"):
            secrets.resolve_reference("prefect-var:")


def test_an_unreachable_prefect_api_is_named_with_its_address():
    import flows.prefect  # noqa: F401
    from prefect.settings import PREFECT_API_URL, temporary_settings

    from flows import secrets

    with temporary_settings(updates={PREFECT_API_URL: NOWHERE}):
        with pytest.raises(secrets.SecretError, match=rf"Prefect Secret block `k` \(`prefect-secret:k`\) could not be "
                                                      rf"read from the Prefect API at {NOWHERE} \(ConnectError"):
            secrets.resolve_reference("prefect-secret:k")


def test_without_the_prefect_integration_loaded_the_reference_says_so(monkeypatch):
    from flows import secret_resolvers, secrets

    monkeypatch.setattr(secret_resolvers, "_resolvers", {})
    with pytest.raises(secrets.SecretError, match=r"`prefect-secret:k` names a Prefect Secret block, and this "
                                                  r"process has not loaded Ergon's Prefect integration"):
        secrets.resolve_reference("prefect-secret:k")

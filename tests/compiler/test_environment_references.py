"""Secret references where `ergon check` meets them — an environment's `api_key` (the
`environments` pass) and a tool server's header values (`tools/servers.yaml`): `secret:`, `env:`,
`prefect-secret:` (a Prefect Secret block, named as Prefect names blocks) and `prefect-var:` (a
Prefect Variable, named as Prefect names variables). Every malformed one is a `bad-value` at the
value, with a hint."""

from __future__ import annotations

import pytest
from checking import brief, diagnostics

from compiler import check_workspace, load_workspace
from compiler.secret_references import Reference, parse, problem


def keys(*api_keys: str) -> list:
    models = "\n".join(f"  - {{model: openai/m{i}, api_key: \"{key}\"}}" for i, key in enumerate(api_keys))
    return diagnostics(f"kind: environment\nname: e\nmodels:\n{models}\n", {"bad-value"})


def test_well_formed_references_check_clean():
    assert keys("secret:OPENAI_KEY", "env:OPENAI_API_KEY", "prefect-secret:openai-key", "prefect-secret:k2",
                "prefect-var:crm_token", "prefect-var:crm-token-2", "prefect-var:" + "v" * 255) == []


def test_a_block_name_outside_prefects_rule_is_located_with_the_name_it_should_be():
    (diag,) = keys("prefect-secret:OpenAI_Key")
    assert brief([diag]) == [("bad-value", 4, 33)]
    assert diag.path == "models[0].api_key"
    assert diag.message == ("`prefect-secret:OpenAI_Key` is not a Prefect block name: block names hold lowercase "
                            "letters, digits and dashes only")
    assert diag.hint is not None and diag.hint.startswith("did you mean `prefect-secret:openai-key`?")
    assert "`prefect block create secret`" in diag.hint


def test_a_variable_name_outside_prefects_rule_is_located_with_the_name_it_should_be():
    (diag,) = keys("prefect-var:CRM.Token")
    assert brief([diag]) == [("bad-value", 4, 33)]
    assert diag.message == ("`prefect-var:CRM.Token` is not a Prefect variable name: variable names hold lowercase "
                            "letters, digits, underscores and dashes only")
    assert diag.hint is not None and diag.hint.startswith("did you mean `prefect-var:crm_token`?")
    assert "`prefect variable set NAME VALUE`" in diag.hint


@pytest.mark.parametrize(("key", "message"), [
    ("prefect-secret:", "`prefect-secret:` names no Prefect Secret block"),
    ("prefect-var:  ", "`prefect-var:` names no Prefect Variable"),
    ("secret:", "`secret:` names no Ergon secret"),
    ("env:", "`env:` names no environment variable"),
    ("prefect-secret:team/openai", "`prefect-secret:team/openai` is not a Prefect block name"),
    ("prefect-secret:open ai", "`prefect-secret:open ai` is not a Prefect block name"),
    ("prefect-var:" + "v" * 256, "`prefect-var:` names a variable of 256 characters; Prefect allows 255"),
])
def test_empty_and_malformed_names_are_bad_values(key, message):
    (diag,) = keys(key)
    assert (diag.code, diag.line, diag.col) == ("bad-value", 4, 33)
    assert diag.message.startswith(message) and diag.hint


def test_a_literal_key_names_every_kind_of_reference_in_its_hint():
    (diag,) = keys("sk-literal-123")
    assert diag.message == "`api_key` must say where the key is kept, not hold the key"
    for form in ("secret:NAME", "env:VAR", "prefect-secret:NAME", "prefect-var:NAME"):
        assert f"api_key: {form}" in (diag.hint or "")


def test_parse_tells_references_from_literals():
    assert parse("prefect-secret: openai-key ") == Reference("prefect-secret", "openai-key")
    assert parse("prefect-var:x") == Reference("prefect-var", "x")
    assert parse("Bearer abc") is None and parse("prefect:x") is None and parse("PREFECT-SECRET:x") is None
    assert problem(Reference("prefect-secret", "???")) is not None
    assert "did you mean" not in problem(Reference("prefect-secret", "???")).hint  # nothing to suggest


SERVERS = """\
servers:
  - name: crm
    url: http://127.0.0.1:9/tools
    headers:
      Authorization: prefect-var:CRM.Token
      X-Tenant: "prefect-secret:"
      X-Plain: Bearer abc
      X-Block: prefect-secret:crm-token
      X-Var: prefect-var:crm_token
"""


def test_tool_server_header_references_are_checked_with_their_folder(tmp_path):
    (tmp_path / "tools").mkdir()
    (tmp_path / "tools" / "servers.yaml").write_text(SERVERS)
    (tmp_path / "e.yaml").write_text("kind: environment\nname: e\nmodels: [{model: openai/m}]\n")
    diags = check_workspace(load_workspace([tmp_path])).diagnostics
    assert [(d.file, d.code, d.line, d.col, d.path) for d in diags] == [
        (str(tmp_path / "tools" / "servers.yaml"), "bad-value", 5, 22, "servers[0].headers.Authorization"),
        (str(tmp_path / "tools" / "servers.yaml"), "bad-value", 6, 17, "servers[0].headers.X-Tenant"),
    ]
    assert diags[0].hint is not None and diags[0].hint.startswith("did you mean `prefect-var:crm_token`?")
    assert diags[1].message == "`prefect-secret:` names no Prefect Secret block"
    # checking one file of the folder reports on that file only
    assert check_workspace(load_workspace([tmp_path / "e.yaml"])).diagnostics == []

"""`ergon submissions`: create, list, show, set and export, each a real `ergon` process on a real store."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

FORMS = Path(__file__).parent.parent.parent / "definitions" / "forms"

POINTS = """
points:
  - {topic: term, statement: "Two years, renewed each year."}
  - {topic: payment, statement: "Net 30.", risky: false}
"""


@pytest.fixture
def ergon(store, definitions, tokens):
    """``ergon(*args)`` → CompletedProcess, acting as lea (a personal token) on the test's store."""
    shutil.copytree(FORMS, definitions / "forms")
    env = {k: v for k, v in os.environ.items() if k not in ("ERGON_USER", "ERGON_TOKEN")}
    env.update(ERGON_DATABASE_URL=store, ERGON_DEFINITIONS=str(definitions), ERGON_TOKEN=tokens["lea"], COLUMNS="200")

    def run(*args: str) -> subprocess.CompletedProcess:
        return subprocess.run([sys.executable, "-m", "flows.cli", "submissions", *args], env=env,
                              capture_output=True, text=True, timeout=120)

    return run


def made(ergon, tmp_path, text: str = POINTS) -> str:
    (tmp_path / "points.yaml").write_text(text)
    result = ergon("create", "key_points", "--file", str(tmp_path / "points.yaml"), "--name", "msa")
    assert result.returncode == 0, result.stderr
    return result.stdout.strip()


def count_versions() -> int:
    import sqlalchemy as sa

    from flows.store.db import connection
    from flows.store.models import ItemVersion

    with connection() as conn:
        return conn.execute(sa.select(sa.func.count()).select_from(ItemVersion)).scalar_one()


def test_create_checks_the_file_against_the_form_and_prints_the_new_id(ergon, tmp_path):
    from flows.store import submissions as submission_store
    from flows.submissions import records

    sid = made(ergon, tmp_path)
    view = records.view(sid)
    assert (view.submission.form_name, view.submission.name, view.submission.created_by) == ("key_points", "msa", "lea")
    assert view.data() == {"points": [{"topic": "term", "statement": "Two years, renewed each year."},
                                      {"topic": "payment", "statement": "Net 30.", "risky": False}]}
    assert {v.source_type for v in view.values} == {"import"}

    (tmp_path / "bad.json").write_text(json.dumps({"points": [{"topic": "terms", "statement": "x"}, {"topic": "term"}]}))
    bad = ergon("create", "key_points", "--file", str(tmp_path / "bad.json"))
    assert bad.returncode == 2 and bad.stdout == ""
    assert "Traceback" not in bad.stderr
    lines = bad.stderr.splitlines()
    assert any(line.startswith("error: points[0].topic: 'terms' is not one of") for line in lines), bad.stderr
    assert "error: points[1]: 'statement' is a required property" in lines
    assert [s.id for s in submission_store.list_submissions()] == [sid]  # nothing written


def test_create_refuses_an_unknown_form_and_a_file_that_is_not_form_data(ergon, tmp_path):
    (tmp_path / "points.yaml").write_text(POINTS)
    typo = ergon("create", "key_point", "--file", str(tmp_path / "points.yaml"))
    assert (typo.returncode, typo.stderr.strip()) == (2, "error: no form named `key_point`; did you mean `key_points`?")
    (tmp_path / "list.yaml").write_text("- a\n- b\n")
    not_a_mapping = ergon("create", "key_points", "--file", str(tmp_path / "list.yaml"))
    assert not_a_mapping.returncode == 2 and "list.yaml:1:1: error[invalid-input]" in not_a_mapping.stderr
    missing = ergon("create", "key_points", "--file", str(tmp_path / "nope.yaml"))
    assert missing.returncode == 2 and "cannot read the file" in missing.stderr and "Traceback" not in missing.stderr


def test_list_shows_the_submissions_of_a_form(ergon, tmp_path):
    sid = made(ergon, tmp_path)
    listed = json.loads(ergon("list", "--form", "key_points", "--json").stdout)["submissions"]
    assert [(s["id"], s["form"], s["name"], s["created_by"]) for s in listed] == [(sid, "key_points", "msa", "lea")]
    assert json.loads(ergon("list", "--form", "summary_output", "--json").stdout) == {"submissions": []}
    table = ergon("list")
    assert table.returncode == 0 and sid in table.stdout and "1 submission(s)" in table.stdout
    typo = ergon("list", "--form", "key_pointz")
    assert typo.returncode == 2 and "did you mean `key_points`?" in typo.stderr


def test_set_is_one_update_that_keeps_the_old_versions_and_show_history_lists_them(ergon, tmp_path):
    sid = made(ergon, tmp_path)
    result = ergon("set", sid, "points[1].statement=Net 45.", "points[0].risky=true", "points[2].topic=liability",
                   "points[2].statement=Capped at fees.")
    assert result.returncode == 0, result.stderr
    assert "4 value(s) set by lea" in result.stdout

    shown = ergon("show", sid).stdout
    assert "points[1].statement = Net 45.  [manual · lea · " in shown
    assert "points[0].topic = term  [import · lea · " in shown
    assert "points[0].risky = true  [manual · lea · " in shown

    history = ergon("show", sid, "--history").stdout.splitlines()
    at = history.index("points[1].statement")
    assert history[at + 1].startswith("    Net 30.  [import · lea · ")  # the old version, kept
    assert history[at + 2].startswith("  * Net 45.  [manual · lea · ")  # the new one, selected
    data = json.loads(ergon("show", sid, "--history", "--json").stdout)
    versions = data["history"]["points[1].statement"]
    assert [(v["value"], v["selected"], v["source_type"]) for v in versions] == [("Net 30.", False, "import"),
                                                                                ("Net 45.", True, "manual")]
    assert data["data"]["points"][2] == {"topic": "liability", "statement": "Capped at fees."}


@pytest.mark.parametrize("assignment, words", [
    ("points[0].risky=maybe", "error: points[0].risky: 'maybe' is not of type 'boolean'"),
    ("points[0].topic=terms", "error: points[0].topic: 'terms' is not one of"),
    ("points.risky=true", "error: points.risky: `points` repeats; name the entry"),
    ("points[0].colour=red", "error: points.colour: group `points` has no field `colour`"),
    ("clauses[0].topic=term", "error: clauses: form `key_points` has no group `clauses`"),
    ("points[0].risky", "write group.field=VALUE"),
    ("points[4].risky=true", "error: points[4]: entry 2 comes first"),
])
def test_set_refuses_a_bad_path_or_value_and_writes_nothing(ergon, tmp_path, assignment, words):
    sid = made(ergon, tmp_path)
    before = count_versions()
    result = ergon("set", sid, "points[1].statement=Net 45.", assignment)
    assert result.returncode == 2, result.stdout
    assert words in result.stderr and "Traceback" not in result.stderr
    assert count_versions() == before  # not even the valid assignment of the same call


def test_unknown_submission_is_one_line_exit_2(ergon):
    for args in (("show", "nope"), ("export", "nope"), ("set", "nope", "points[0].risky=true")):
        result = ergon(*args)
        assert (result.returncode, result.stderr.strip()) == (2, "error: no submission 'nope'"), args


def test_export_writes_the_json_of_records_export(ergon, tmp_path):
    from flows.submissions import records

    sid = made(ergon, tmp_path)
    assert ergon("set", sid, "points[0].risky=true").returncode == 0
    out = tmp_path / "export.json"
    result = ergon("export", sid, "--out", str(out))
    assert result.returncode == 0, result.stderr
    exported = json.loads(out.read_text())
    assert exported == records.export(sid)
    assert exported["data"]["points"][0] == {"topic": "term", "statement": "Two years, renewed each year.", "risky": True}
    risky = next(v for v in exported["values"] if v["path"] == "points[0].risky")
    assert (risky["source_type"], risky["created_by"]) == ("manual", "lea")
    assert json.loads(ergon("export", sid).stdout) == exported

"""Runs pin what they execute: `ergon run NAME --version N` runs published version N whatever
the draft says, and every run records the version it ran (none for an unpublished draft)."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

pytestmark = pytest.mark.prefect

STAMP = """\
format_version: 1
process: stamped
initial: stamp
context:
  schema:
    type: object
    properties:
      label: {{type: string}}
nodes:
  stamp: {{type: tool, config: {{context_update: {{label: {label}}}}}, writes: [label], transitions: [{{to: done}}]}}
  done: {{type: final}}
"""


def test_run_version_n_runs_the_published_content_and_records_its_number(prefect_api, store, definitions,
                                                                          run_def, monkeypatch, tokens):
    from flows import versions
    from flows.catalog import Catalog
    from flows import runs
    from flows.store import definitions as definition_store
    from flows.store import runs as run_store

    monkeypatch.setenv("ERGON_TOKEN", tokens["lea"])
    (definitions / "stamped.yaml").write_text(STAMP.format(label="one"))
    assert versions.publish("stamped").version.version == 1
    (definitions / "stamped.yaml").write_text(STAMP.format(label="two"))  # draft, not published

    env = {**os.environ, "ERGON_DATABASE_URL": store, "ERGON_DEFINITIONS": str(definitions)}
    done = subprocess.run([sys.executable, "-m", "flows.cli", "run", "stamped", "--version", "1", "--json"],
                          env=env, capture_output=True, text=True, timeout=180, check=False)
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout.strip().splitlines()[-1])
    assert result["context"]["label"] == "one", "version 1 ran, not the draft"
    pinned = run_store.get_run(result["run_id"])
    assert pinned.definition_version == 1
    assert pinned.content_hash == definition_store.get_version("stamped", 1).content_hash

    draft = run_def({}, "stamped")
    assert draft["context"]["label"] == "two"
    assert run_store.get_run(draft["run_id"]).definition_version is None, "an unpublished draft has no version"

    versions.publish("stamped")
    again = run_def({}, "stamped")
    assert run_store.get_run(again["run_id"]).definition_version == 2, "the draft is version 2's content"

    (definitions / "stamped.yaml").write_text(STAMP.format(label="three"))
    deployed = versions.resolve_for_deployment("stamped", 1)
    ran = runs.start(deployed, {}, catalog=Catalog.load(), version=deployed.version).to_dict()
    assert ran["context"]["label"] == "one" and run_store.get_run(ran["run_id"]).definition_version == 1

    missing = subprocess.run([sys.executable, "-m", "flows.cli", "run", "stamped", "--version", "9"],
                             env=env, capture_output=True, text=True, timeout=180, check=False)
    assert missing.returncode == 2 and "has no version 9; its versions are 1, 2" in missing.stderr


def test_a_background_start_of_a_version_runs_that_version(prefect_api, store, definitions, monkeypatch):
    """What the dashboard's replay does for a run of a published version (flows.runs.replay)."""
    import time

    from flows import versions
    from flows.runs import StartRefused, start_detached
    from flows.store import runs as run_store

    monkeypatch.setenv("ERGON_DEFINITIONS", str(definitions))
    (definitions / "stamped.yaml").write_text(STAMP.format(label="one"))
    versions.publish("stamped")
    (definitions / "stamped.yaml").write_text(STAMP.format(label="two"))
    run_id = start_detached("stamped", {}, started_by="lea", trigger="replay", version=1)
    assert run_store.get_run(run_id).definition_version == 1
    deadline = time.monotonic() + 180
    while run_store.get_run(run_id).status not in ("completed", "failed", "crashed") and time.monotonic() < deadline:
        time.sleep(0.3)
    run = run_store.get_run(run_id)
    assert run.status == "completed" and run.context["label"] == "one", run.error
    assert run.trigger == "replay" and run.started_by == "lea"
    with pytest.raises(StartRefused, match="has no version 4"):
        start_detached("stamped", {}, started_by="lea", version=4)

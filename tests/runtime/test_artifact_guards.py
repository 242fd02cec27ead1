"""The `artifact_exists` guard extension, routed on the run's own artifacts (real Prefect, real store)."""

from __future__ import annotations

import pytest

pytestmark = pytest.mark.prefect

ROUTE = """
format_version: 1
process: artifact_route
initial: maybe_write
context:
  schema:
    type: object
    properties:
      make: {type: boolean}
      route: {type: string}
    required: [make]
nodes:
  maybe_write:
    type: condition
    branches:
      - {to: write, when: {"==": [{var: make}, true]}}
      - {to: check, default: true}
  write:
    type: tool
    tool: write_artifact
    input: {key: out/report.md, content: "# Report"}
    transitions:
      - {to: found, guard: {artifact_exists: {var: out/report.md}}}
      - {to: check}
  check:
    type: condition
    branches:
      - {to: found, when: {artifact_exists: {var: out/report.md}}}
      - {to: not_found, default: true}
  found: {type: tool, config: {context_update: {route: found}}, writes: [route], transitions: [{to: done}]}
  not_found: {type: tool, config: {context_update: {route: not_found}}, writes: [route], transitions: [{to: done}]}
  done: {type: final}
"""


def _path(run_id: str) -> list[str]:
    from flows.store import visits as visit_store

    return [v.node_id for v in visit_store.visits_for_run(run_id)]


def test_artifact_exists_routes_on_the_runs_artifacts(run_def):
    made = run_def({"artifact_route.yaml": ROUTE}, "artifact_route", {"make": True})
    assert made["status"] == "completed", made
    assert made["context"]["route"] == "found"
    assert _path(made["run_id"]) == ["maybe_write", "write", "found", "done"]

    # another run: the artifact of the first run is not this run's
    skipped = run_def({"artifact_route.yaml": ROUTE}, "artifact_route", {"make": False})
    assert skipped["status"] == "completed", skipped
    assert skipped["context"]["route"] == "not_found"
    assert _path(skipped["run_id"]) == ["maybe_write", "check", "not_found", "done"]

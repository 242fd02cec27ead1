"""`ergon deploy`: prefect.yaml entries (other content kept), registration with the Prefect API
(typed parameters, schedules from triggers, tags, a process work pool), pinned versions, and
clear refusals."""

from __future__ import annotations

import pytest
import yaml

from deploy_helpers import cli

TICK = """
format_version: 1
process: tick
initial: go
context:
  schema:
    type: object
    properties:
      who: {type: string}
      times: {type: integer}
    required: [who]
  initial: {times: 1}
triggers:
  - {type: interval, every: 30s, input: {who: schedule}}
  - {type: cron, cron: "0 9 * * 1-5", timezone: Europe/Paris, enabled: false}
nodes:
  go: {type: tool, tool: increment, input: {value: "{{ times }}"}, writes: [times], transitions: [{to: done}]}
  done: {type: final}
"""

EXISTING = """\
# hand-written: keep me
name: ergon
prefect-version: 3.9.1
build: null
push: null
pull:
  - prefect.deployments.steps.set_working_directory:
      directory: "{{ $PWD }}"
deployments:
  - name: someone-elses
    entrypoint: elsewhere.py:flow
    work_pool: {name: other}
  - name: tick
    entrypoint: stale.py:old
"""


def test_deploy_writes_the_entries_and_keeps_the_rest_of_prefect_yaml(deploy_env, definitions, tmp_path):
    (definitions / "tick.yaml").write_text(TICK)
    target = tmp_path / "prefect.yaml"
    target.write_text(EXISTING)
    done = cli(["deploy", "tick", "--no-register", "--prefect-file", str(target)], deploy_env)
    assert done.returncode == 0, done.stdout + done.stderr
    text = target.read_text()
    assert text.startswith("# hand-written: keep me"), "comments survive"
    doc = yaml.safe_load(text)
    names = [d["name"] for d in doc["deployments"]]
    assert names == ["someone-elses", "tick"], "other deployments kept, ours replaced in place"
    assert doc["pull"] == [{"prefect.deployments.steps.set_working_directory": {"directory": "{{ $PWD }}"}}]
    tick = doc["deployments"][1]
    assert tick["entrypoint"] == "flows.prefect.deployments.flow_tick"
    assert tick["work_pool"] == {"name": "ergon"}
    assert tick["tags"] == ["ergon", "process", "version:latest"]
    assert len(tick["version"]) >= 12
    interval, cron = tick["schedules"]
    assert interval["interval"] == 30 and interval["parameters"] == {"who": "schedule"} and interval["active"] is True
    assert cron["cron"] == "0 9 * * 1-5" and cron["timezone"] == "Europe/Paris" and cron["active"] is False


def test_the_entrypoint_attribute_is_the_compiled_flow(deploy_env, definitions, store):
    import flows.prefect.deployments as deployments
    from prefect.utilities.callables import parameter_schema

    (definitions / "tick.yaml").write_text(TICK)
    deployments._flows.clear()
    flow = deployments.flow_tick
    assert flow.name == "tick" and flow.fn.__qualname__ == "flow_tick", "importable by its attribute name"
    schema = parameter_schema(flow).model_dump()
    assert set(schema["properties"]) == {"who"} and schema["required"] == ["who"], "typed inputs (initialised fields are not inputs)"
    with pytest.raises(AttributeError, match="no runnable definition .* compiles to `flow_nope`"):
        _ = deployments.flow_nope


@pytest.mark.prefect
def test_a_supervised_deployment_tags_its_runs_and_a_tagged_run_is_supervised(deploy_env, definitions, store, tmp_path):
    import asyncio

    import flows.prefect.deployments as deployments
    from prefect import tags

    from flows.store import runs as run_store

    (definitions / "tick.yaml").write_text(TICK)
    target = tmp_path / "prefect.yaml"
    done = cli(["deploy", "tick", "--supervised", "--no-register", "--prefect-file", str(target)], deploy_env)
    assert done.returncode == 0, done.stderr
    [entry] = yaml.safe_load(target.read_text())["deployments"]
    assert deployments.SUPERVISED_TAG in entry["tags"]
    deployments._flows.clear()
    with tags(deployments.SUPERVISED_TAG):  # what a run of that deployment carries
        asyncio.run(deployments.flow_tick(who="ops"))
    with tags("ergon"):
        asyncio.run(deployments.flow_tick(who="ops"))
    supervised, plain = sorted(run_store.list_runs(definition="tick")[0], key=lambda r: r.created_at)
    assert (supervised.run_type, supervised.status, plain.run_type) == ("supervised", "completed", "programmatic")


@pytest.mark.prefect
def test_deploy_registers_with_prefect_and_creates_a_process_pool(deploy_env, definitions, pool, tmp_path):
    from prefect.client.orchestration import get_client

    (definitions / "tick.yaml").write_text(TICK)
    done = cli(["deploy", "tick", "--work-pool", pool, "--prefect-file", str(tmp_path / "prefect.yaml")], deploy_env)
    assert done.returncode == 0, done.stdout + done.stderr
    with get_client(sync_client=True) as client:
        work_pool = client.read_work_pool(pool)
        deployment = client.read_deployment_by_name("tick/tick")
    assert work_pool.type == "process"
    assert deployment.entrypoint == "flows.prefect.deployments.flow_tick" and deployment.work_pool_name == pool
    assert set(deployment.parameter_openapi_schema["properties"]) == {"who"}
    assert deployment.enforce_parameter_schema
    assert {"ergon", "process"} <= set(deployment.tags)
    schedules = sorted(deployment.schedules, key=lambda s: s.slug or "")
    assert [s.active for s in schedules] == [True, False]
    assert schedules[0].schedule.interval.total_seconds() == 30 and schedules[0].parameters == {"who": "schedule"}
    assert schedules[1].schedule.cron == "0 9 * * 1-5"


@pytest.mark.prefect
def test_a_pinned_version_runs_the_published_content(deploy_env, definitions, tmp_path):
    import asyncio

    import flows.prefect.deployments as deployments
    from flows.store import definitions as definition_store
    from flows.store import runs as run_store

    (definitions / "tick.yaml").write_text(TICK)
    definition_store.save_draft("tick", "process", yaml.safe_load(TICK))
    definition_store.publish_definition("tick", comment="times start at 1")
    (definitions / "tick.yaml").write_text(TICK.replace("initial: {times: 1}", "initial: {times: 100}"))
    done = cli(["deploy", "tick", "--version", "1", "--no-register", "--prefect-file", str(tmp_path / "p.yaml")],
               deploy_env)
    assert done.returncode == 0, done.stdout + done.stderr
    entry = yaml.safe_load((tmp_path / "p.yaml").read_text())["deployments"][0]
    assert entry["entrypoint"] == "flows.prefect.deployments.flow_tick__v1" and "version:1" in entry["tags"]

    deployments._flows.clear()
    result = asyncio.run(deployments.flow_tick__v1(who="x"))
    run = run_store.get_run(result["run_id"])
    assert result["context"]["times"] == 1, "the published content ran, not the changed draft (100)"
    assert run.definition_version == 1 and run.trigger == "api"


def test_deploy_refuses_bad_input_with_the_reason(deploy_env, definitions, tmp_path):
    (definitions / "tick.yaml").write_text(TICK)
    target = str(tmp_path / "p.yaml")
    bad_version = cli(["deploy", "tick", "--version", "newest", "--no-register", "--prefect-file", target], deploy_env)
    assert bad_version.returncode == 2 and "--version takes `latest` or a published version" in bad_version.stderr
    unknown = cli(["deploy", "tickk", "--no-register", "--prefect-file", target], deploy_env)
    assert unknown.returncode == 2 and "no runnable definition named `tickk`" in unknown.stderr
    assert "tick" in unknown.stderr, "with a did-you-mean hint"
    unpublished = cli(["deploy", "tick", "--version", "7", "--no-register", "--prefect-file", target], deploy_env)
    assert unpublished.returncode == 2 and "has no published version" in unpublished.stderr
    (definitions / "broken.yaml").write_text(TICK.replace("process: tick", "process: broken").replace("to: done", "to: nowhere"))
    broken = cli(["deploy", "broken", "--no-register", "--prefect-file", target], deploy_env)
    assert broken.returncode == 2 and "unknown-target" in broken.stderr
    assert not (tmp_path / "p.yaml").exists(), "nothing written when a definition is refused"

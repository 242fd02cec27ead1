"""Triggers checked before anything is served, and turned into Prefect schedules (no server)."""

from __future__ import annotations

import pytest

from compiler import check_workspace, workspace_from_texts
from compiler.schedule_syntax import cron_error, interval_seconds, timezone_error

BASE = """
kind: pipeline
name: {name}
context:
  schema: {{type: object, properties: {{x: {{type: string}}, last: {{type: string}}}}}}
  initial: {{last: ""}}  # a chained start's map reads it: set when every run completes
nodes:
  n: {{type: tool, tool: log, input: {{message: hi}}}}
triggers:
{triggers}
"""


def diagnostics(triggers: str, extra: dict[str, str] | None = None) -> list:
    texts = {"a.yaml": BASE.format(name="a", triggers=triggers), **(extra or {})}
    return [d for d in check_workspace(workspace_from_texts(texts)).diagnostics if d.path.startswith("triggers")]


@pytest.mark.parametrize("expr", ["* * * * *", "0 9 * * 1-5", "*/15 0-6,22-23 1 jan-mar sun", "0 0 * * 7", "@hourly"])
def test_valid_cron(expr):
    assert cron_error(expr) is None


@pytest.mark.parametrize("expr, words", [
    ("* * * *", "5 fields"), ("61 * * * *", "outside 0-59"), ("* * * * mon-sun/0", "step of 0"),
    ("5-1 * * * *", "backwards"), ("* * * foo *", "not a number"), ("@sometimes", "unknown macro"),
])
def test_invalid_cron_says_why(expr, words):
    assert words in cron_error(expr)


def test_intervals_and_zones():
    assert interval_seconds(90) == 90 and interval_seconds("5m") == 300 and interval_seconds("1.5h") == 5400
    for bad in ("soon", 0, "-3s", True):
        with pytest.raises(ValueError):
            interval_seconds(bad)
    assert timezone_error("Europe/Paris") is None and "IANA" in timezone_error("Mars/Olympus")


def test_every_trigger_mistake_is_located_with_a_hint():
    found = diagnostics("""
  - {type: cron, cron: "0 25 * * *", timezone: Europe/Pariss}
  - {type: interval, every: often}
  - {type: webhook, path: hooks/a, secret: s}
  - {type: on_complete, definition: b, outcomes: [nowhere], map: {y: "{{ x }}"}}
  - {type: on_complete, definition: nothing}
  - {type: interval, every: 5, input: {z: 1}}
""", {"b.yaml": BASE.format(name="b", triggers="  []")})
    by_path = {d.path: d for d in found}
    assert "outside 0-23" in by_path["triggers[0].cron"].message
    assert by_path["triggers[0].timezone"].hint == "did you mean `Europe/Paris`?"
    assert by_path["triggers[1].every"].code == "bad-value"
    assert "must start with `/`" in by_path["triggers[2].path"].message
    assert by_path["triggers[3].outcomes[0]"].code == "bad-value"
    assert by_path["triggers[3].map.y"].code == "unknown-field"
    assert by_path["triggers[4].definition"].code == "unknown-process"
    assert by_path["triggers[5].input.z"].code == "unknown-field"
    assert all(d.line > 1 for d in found)  # every finding points into the file


def test_webhook_paths_are_unique_in_the_folder():
    hook = "  - {type: webhook, path: /hooks/same, secret: s}"
    found = diagnostics(hook, {"b.yaml": BASE.format(name="b", triggers=hook)})
    assert len(found) == 1 and "already used by `a`" in found[0].message and found[0].file == "b.yaml"


def test_valid_triggers_pass():
    assert diagnostics("""
  - {type: cron, cron: "0 9 * * 1-5", timezone: America/New_York, input: {x: hi}, as_user: ann}
  - {type: interval, every: 30s, retry: {retries: 3}}
  - {type: webhook, path: /hooks/a, secret: s, input: {x: hook}}
  - {type: on_complete, definition: a, outcomes: [n], map: {x: "{{ last }}"}}
""") == []


def test_prefect_schedules_one_per_trigger_with_slug_parameters_and_pauses():
    from flows.catalog import Catalog
    from flows.prefect.schedules import prefect_schedules

    ws = workspace_from_texts({"a.yaml": BASE.format(name="a", triggers="""
  - {type: cron, cron: "0 9 * * 1-5", timezone: Europe/Paris, input: {x: hi}}
  - {type: webhook, path: /hooks/a, secret: s}
  - {type: interval, every: 2m, enabled: false}
  - {type: interval, every: 10, input: {last: set-by-initial}}
""")})
    plan = Catalog(ws).compile("a").plan
    schedules = prefect_schedules(plan, paused={3})
    assert [s.slug for s in schedules] == ["trigger-0", "trigger-2", "trigger-3"]
    cron, disabled, paused = schedules
    assert (cron.schedule.cron, cron.schedule.timezone, cron.parameters, cron.active) == ("0 9 * * 1-5", "Europe/Paris", {"x": "hi"}, True)
    assert disabled.schedule.interval.total_seconds() == 120 and disabled.active is False
    assert paused.active is False
    # `last` is written by no node here, so it is a parameter; a field context.initial sets is not
    assert paused.parameters == {"last": "set-by-initial"}

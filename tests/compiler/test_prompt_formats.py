"""Prompt segments in the template languages of the seed's prompt pages.

Ergon renders Jinja2. A Handlebars or JS-template segment (``content_type``), or JS interpolation
written into a Jinja2 segment, would reach the model as written; ``ergon check`` refuses each with
the Jinja2 way to write it (the runtime never sends one either: tests/llm/test_interactions.py). ``{{ _now }}`` — the seed's spelling —
renders the current time, as ``{{ _now() }}`` does.
"""

from __future__ import annotations

import re
from datetime import datetime, timedelta, timezone

import pytest

from compiler import check_workspace, workspace_from_texts
from compiler.templates import render

INTERACTION = """
kind: interaction
name: summarize
prompts:
  - role: user
{segment}
"""


def _codes(segment: str) -> list[tuple[str, str]]:
    ws = workspace_from_texts({"summarize.yaml": INTERACTION.format(segment=segment)})
    return [(d.code, d.path) for d in check_workspace(ws).errors]


@pytest.mark.parametrize("language", ["handlebars", "jst"])
def test_a_segment_in_another_template_language_is_refused_with_the_jinja_way(language: str) -> None:
    found = _codes(f"    content_type: {language}\n    template: \"Summarize {{{{document_type}}}}\"")
    assert found == [("unsupported-template", "prompts[0].content_type")]


def test_js_interpolation_in_a_jinja_segment_is_refused() -> None:
    assert _codes('    template: "Summarize in ${target_language}: {{ text }}"') == [
        ("unsupported-template", "prompts[0].template")]


def test_a_jinja_segment_checks_clean() -> None:
    assert _codes('    content_type: jinja\n    template: "Summarize {{ text }} at {{ _now }}"') == []


def test_bare_now_renders_the_current_time() -> None:
    before = datetime.now(timezone.utc)
    text = render("at {{ _now }} / {{ _now() }}", {})
    stamps = re.findall(r"at (\S+) / (\S+)", text)[0]
    for stamp in stamps:
        assert before - timedelta(seconds=1) <= datetime.fromisoformat(stamp) <= datetime.now(timezone.utc)

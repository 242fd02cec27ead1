"""Mermaid and DOT rendering: snapshots, lanes, shapes, labels, escaping, route highlighting."""

from __future__ import annotations

import re

import pytest

from compiler import compile_plan, render_dot, render_mermaid, workspace_from_texts
from compiler.render import RouteHighlight, guard_text

from mini_process import mini_workspace
from snapshot_util import check_snapshot


@pytest.fixture
def mini_ws():
    return mini_workspace()


ROUTE = RouteHighlight(
    visited={"extract": "completed", "summarize": "completed", "triage": "failed", "route": "skipped", "legal_review": "paused"},
    taken={("extract", "summarize"), ("summarize", "triage")},
    current="legal_review",
)


def test_mermaid_snapshot(mini_ws):
    check_snapshot("mini_review.mmd", render_mermaid(compile_plan(mini_ws, "mini_review")))


def test_dot_snapshot(mini_ws):
    check_snapshot("mini_review.dot", render_dot(compile_plan(mini_ws, "mini_review")))


def test_mermaid_structure(mini_ws):
    text = render_mermaid(compile_plan(mini_ws, "mini_review"))
    assert text.startswith("flowchart TD\n")
    assert 'subgraph lane_ai["ai"]' in text and 'subgraph lane_legal["legal"]' in text
    ai = text.split('subgraph lane_ai["ai"]')[1].split("  end\n")[0]
    assert ai.index("n_extract") < ai.index("n_summarize") < ai.index("n_triage") < ai.index("n_route")  # by order
    assert 'n_route{"route<br/>phase: review"}' in text  # condition: diamond, phase in the label
    assert 'n_approved(["approved"])' in text  # final: stadium
    assert "class n_legal_review human_task" in text
    assert 'n_route -->|"total_value #gt; 50000"| n_legal_review' in text
    assert 'n_route -->|"default"| n_approved' in text
    assert 'n_legal_review -->|"decision == #quot;approve#quot;"| n_approved' in text
    assert 'n_legal_review -->|"timeout"| n_rejected' in text
    assert 'n_triage -.->|"reject outright"| n_rejected' in text  # agent choice: dashed
    assert "start__ --> n_extract" in text
    assert "linkStyle" not in text and "classDef completed" not in text


def test_mermaid_highlight(mini_ws):
    text = render_mermaid(compile_plan(mini_ws, "mini_review"), ROUTE)
    assert "classDef completed fill:#c8e6c9" in text and "classDef failed fill:#ffcdd2" in text
    assert "classDef paused fill:#ffe082" in text and "classDef skipped fill:#e0e0e0" in text
    assert "class n_extract,n_summarize completed" in text
    assert "class n_legal_review paused" in text  # the status wins over the type colour
    links = [line.strip() for line in text.splitlines() if re.match(r"\s+(start__|n_\w+) -", line)]
    taken = {int(m.group(1)) for m in re.finditer(r"linkStyle (\d+) stroke:#2e7d32", text)}
    assert {links[i] for i in taken} == {"start__ --> n_extract", "n_extract --> n_summarize", "n_summarize --> n_triage"}
    assert "style n_legal_review stroke:#000000,stroke-width:4px" in text


def test_dot_highlight(mini_ws):
    text = render_dot(compile_plan(mini_ws, "mini_review"), ROUTE)
    assert '"extract" [label="extract\\nExtract terms\\nphase: intake", shape="hexagon", fillcolor="#c8e6c9", color="#2e7d32"];' in text
    assert re.search(r'"legal_review" \[[^\]]*fillcolor="#ffe082"[^\]]*penwidth="3", style="filled,bold"', text)
    assert '"extract" -> "summarize" [color="#2e7d32", penwidth="2.5"];' in text
    assert '"route" -> "approved" [label="default"];' in text


def test_dot_is_well_formed(mini_ws):
    text = render_dot(compile_plan(mini_ws, "mini_review"), ROUTE)
    assert text.startswith('digraph "mini_review" {') and text.rstrip().endswith("}")
    unescaped = re.sub(r'\\.', "", text)
    assert unescaped.count('"') % 2 == 0
    assert text.count("{") == text.count("}")
    assert 'subgraph "cluster_0_ai"' in text and '"approved" [label="approved", shape="doublecircle"' in text


TRICKY = """\
format_version: 1
process: tricky
initial: start
context:
  schema:
    type: object
    properties:
      name: {type: string}
      n: {type: number}
    required: [name, n]
nodes:
  start:
    type: condition
    branches:
      - {to: end, when: {"==": [{var: name}, 'say "hi" | #1']}}
      - {to: end, when: {"some": [{var: name}, {"==": [{var: ""}, 1]}]}}
      - {to: end, when: {"and": [{"<": [1, {var: n}, 10]}, {"!": {"in": [{var: name}, [a, b]]}}]}}
      - {to: end, default: true}
  end: {type: final}
"""


def test_escaping_and_reserved_ids():
    plan = compile_plan(workspace_from_texts({"tricky.yaml": TRICKY}), "tricky")
    mmd = render_mermaid(plan)
    assert "n_end" in mmd and re.search(r"--> end\b", mmd) is None  # `end` is reserved in Mermaid
    assert r'|"name == #quot;say \#quot;hi\#quot; #124; #35;1#quot;"|' in mmd
    dot = render_dot(plan)
    assert r'"start" -> "end" [label="name == \"say \\\"hi\\\" | #1\""];' in dot
    assert re.sub(r'\\.', "", dot).count('"') % 2 == 0


def test_guard_text():
    assert guard_text({">": [{"var": "total_value"}, 50000]}) == "total_value > 50000"
    assert guard_text({"==": [{"var": "legal_decision"}, "approve"]}) == 'legal_decision == "approve"'
    assert guard_text({"and": [{"<": [1, {"var": "n"}, 10]}, {"!": {"in": [{"var": "x"}, ["a"]]}}]}) == '(1 < n < 10) and not (x in ["a"])'
    assert guard_text({"var": ["flag", False]}) == "flag"
    long = guard_text({"some": [{"var": "items"}, {"==": [{"var": "status"}, "x" * 80]}]})
    assert long.startswith('{"some"') and long.endswith("…") and len(long) == 48

"""A small project for the tests of ``ergon test``: one process with a known set of routes.

``order_check``: ``price`` (a Python tool that cannot reach its service, so tests mock it; two
retries) → ``rate`` (an interaction) → ``route`` (a condition) → ``auto`` (a fixed update) →
``approved``, or → ``review`` (a human task) → ``approved`` / ``rejected``.
Seven nodes, seven moves: price→rate, rate→route, route→review, route→auto, review→approved,
review→rejected, auto→approved.
"""

from __future__ import annotations

import textwrap
from collections.abc import Callable
from pathlib import Path

import pytest

PROCESS = """\
format_version: 1
kind: process
process: order_check
initial: price
context:
  schema:
    type: object
    properties:
      order_id: {type: string}
      amount: {type: number}
      price: {type: number}
      priority: {type: string, enum: [low, high]}
      decision: {type: string, enum: [approve, reject]}
      notes: {type: string}
    required: [order_id, amount]
  initial:
    notes: ""
nodes:
  price:
    type: tool
    tool: lookup_price
    input:
      order_id: "{{ order_id }}"
    writes: [price]
    retry: {retries: 2, delay_seconds: 30}
    transitions: [{to: rate}]
  rate:
    type: interaction
    interaction: rate_order
    input:
      amount: "{{ amount }}"
    writes: [priority]
    transitions: [{to: route}]
  route:
    type: condition
    branches:
      - {to: review, label: high priority, when: {"==": [{var: priority}, high]}}
      - {to: auto, default: true}
  auto:
    type: tool
    config:
      context_update: {decision: approve}
    writes: [decision]
    transitions: [{to: approved}]
  review:
    type: human_task
    task:
      title: "Review order {{ order_id }}"
      assignee: group:sales
      fields:
        - {name: decision, type: select, required: true, options: [approve, reject]}
        - {name: notes, type: text}
    writes: [decision, notes]
    transitions:
      - {to: approved, label: approved, guard: {"==": [{var: decision}, approve]}}
      - {to: rejected, label: rejected, guard: {"==": [{var: decision}, reject]}}
  approved:
    type: final
  rejected:
    type: final
"""

INTERACTION = """\
kind: interaction
name: rate_order
prompts:
  - role: user
    template: "Rate the priority of an order of {{ amount }} EUR."
input_schema:
  type: object
  properties:
    amount: {type: number}
  required: [amount]
result_schema:
  type: object
  properties:
    priority: {type: string, enum: [low, high]}
  required: [priority]
"""

TOOLS = '''\
from flows.tools import tool


@tool
def lookup_price(order_id: str) -> dict:
    """The price service, which tests cannot reach."""
    raise ConnectionError("the price service is not reachable")
'''


@pytest.fixture(scope="session")
def project_template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("shop")
    (root / "definitions" / "interactions").mkdir(parents=True)
    (root / "definitions" / "tools").mkdir()
    (root / "definitions" / "tests").mkdir()
    (root / "definitions" / "order_check.yaml").write_text(PROCESS)
    (root / "definitions" / "interactions" / "rate_order.yaml").write_text(INTERACTION)
    (root / "definitions" / "tools" / "shop.py").write_text(TOOLS)
    return root


@pytest.fixture
def project(project_template: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The shop project as the working folder, its ``definitions/tests/`` emptied for the test."""
    for old in (project_template / "definitions" / "tests").iterdir():
        old.unlink()
    monkeypatch.chdir(project_template)
    monkeypatch.delenv("ERGON_DEFINITIONS", raising=False)
    monkeypatch.delenv("ERGON_MODEL", raising=False)
    return project_template


@pytest.fixture
def write_test(project: Path) -> Callable[..., Path]:
    """Writes a test file into the project's ``definitions/tests/``; returns its (relative) path."""

    def write(text: str, name: str = "order_check.test.yaml") -> Path:
        path = Path("definitions") / "tests" / name
        (project / path).write_text(textwrap.dedent(text))
        return path

    return write

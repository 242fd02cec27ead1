"""``ergon test`` on a foreach with ``task_runs: node``: its items, whose attempts the engine runs
itself, are retried by their body's policy as every visit of a test is — without the policy's
delays (a test checks what a retry does, not how long it waits)."""

from __future__ import annotations

import shutil
import textwrap
import threading

from flows.testing.runner import run_tests

BATCH = """\
format_version: 1
process: batch_price
initial: each
context:
  schema:
    type: object
    properties:
      orders: {type: array, items: {type: string}}
      prices: {type: array}
    required: [orders]
nodes:
  each:
    type: foreach
    foreach: orders
    as: order
    task_runs: node
    max_concurrency: 2
    node:
      type: tool
      tool: lookup_price
      input: {order_id: "{{ order }}"}
      retry: {retries: 2, delay_seconds: 3600}
    collect: prices
    writes: [prices]
    transitions: [{to: done}]
  done: {type: final}
"""

CASE = """\
definition: batch_price
cases:
  - name: an item whose first call fails is retried at once
    inputs: {orders: [o-1, o-2]}
    mocks:
      tools:
        lookup_price: [{raises: "price service down"}, {returns: {price: 1.5}}, {returns: {price: 2.5}}]
    expect:
      status: completed
      calls: {lookup_price: 3}
"""


def test_a_node_foreachs_items_are_retried_without_waiting(project_template, tmp_path, monkeypatch) -> None:
    root = tmp_path / "shop"
    shutil.copytree(project_template, root)
    (root / "definitions" / "batch_price.yaml").write_text(BATCH)
    (root / "definitions" / "tests" / "batch_price.test.yaml").write_text(textwrap.dedent(CASE))
    monkeypatch.chdir(root)
    monkeypatch.delenv("ERGON_DEFINITIONS", raising=False)
    monkeypatch.delenv("ERGON_MODEL", raising=False)
    # with the delay of 3600 s honoured the run would wait an hour: give it two minutes
    done: list = []
    worker = threading.Thread(target=lambda: done.append(run_tests(["definitions/tests/batch_price.test.yaml"])),
                              daemon=True)
    worker.start()
    worker.join(120)
    assert done, "the item's retry waited for its delay"
    [session] = done
    assert not session.problems, [d.format() for d in session.problems]
    [result] = session.results
    assert result.passed, result.differences
    assert result.actual.calls == {"lookup_price": 3}

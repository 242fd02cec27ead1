"""The workflow DSL's `runJavascriptCode` activity in real runs (Prefect, the V8 sandbox).

The code sees the step's ``data`` as variables, its ``${…}`` are JavaScript's own (a template
literal, not a workflow reference), its value is the step's ``result``, and ``projection`` and
``output`` apply to that result as to any activity's. A cap or an exception fails the step with
the sandbox's message.
"""

from __future__ import annotations

import pytest

pytestmark = pytest.mark.prefect

WORKFLOW = """
kind: workflow
name: wf_js
input_schema:
  type: object
  properties: {invoices: {type: array}, limit: {type: number}}
  required: [invoices, limit]
vars: {currency: EUR}
steps:
  - name: runJavascriptCode
    params:
      code: |
        const big = invoices.filter(i => i.total > limit);
        ({
          count: big.length,
          ids: big.map(i => i.id),
          summary: `${big.length} of ${invoices.length} invoices over ${limit} ${currency}`,
          internal: {debug: true},
        })
      data: {invoices: "${invoices}", limit: "${limit}", currency: "${currency}"}
    projection: {$exclude: [result.internal]}
    output: analysis
  - name: runJavascriptCode
    params:
      code: |
        const n = await Promise.resolve(analysis.result.count);
        return `${n} flagged: ${analysis.result.ids.join(', ')}`;
      data: {analysis: "${analysis}"}
    projection: {$include: [result]}
    output: message
  - name: log
    params: {message: "${message.result}"}
"""


def test_code_sees_its_data_and_its_result_goes_through_projection_and_output(run_def):
    invoices = [{"id": "a", "total": 50}, {"id": "b", "total": 500}, {"id": "c", "total": 900}]
    result = run_def({"wf.yaml": WORKFLOW}, "wf_js", {"invoices": invoices, "limit": 100})
    assert result["status"] == "completed", result
    ctx = result["context"]
    assert ctx["analysis"] == {"result": {"count": 2, "ids": ["b", "c"], "summary": "2 of 3 invoices over 100 EUR"}}
    assert ctx["message"] == {"result": "2 flagged: b, c"}


@pytest.mark.parametrize(("code", "message"), [
    ("while (true) {}", "the JavaScript ran longer than its time limit"),
    ("const a = [];\nfor (;;) a.push(new Array(1e6).fill(1.5));", "the JavaScript used more than its memory limit"),
    ("const x = 1;\nthrow new Error('no invoices')", "no invoices (line 2, column 7)"),
])
def test_a_step_whose_code_fails_or_hits_a_cap_fails_with_the_sandboxs_message(run_def, code, message):
    indented = "\n".join("        " + line for line in code.splitlines())
    text = f"""
kind: workflow
name: wf_js_fails
steps:
  - name: runJavascriptCode
    params:
      code: |
{indented}
    output: out
"""
    result = run_def({"wf.yaml": text}, "wf_js_fails")
    assert result["status"] == "failed", result
    assert "runJavascriptCode" in result["error"] and message in result["error"], result["error"]

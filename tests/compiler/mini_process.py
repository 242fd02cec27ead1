"""A small process with lanes, phases and every edge kind, shared by the Plan and render tests."""

from __future__ import annotations


from compiler import workspace_from_texts

MINI_PROCESS = """\
format_version: 1
process: mini_review
description: Review a small contract and route it.
initial: extract
context:
  schema:
    type: object
    properties:
      doc_id: {type: string}
      total_value: {type: number}
      summary: {type: string}
      risk: {type: string, enum: [low, high]}
      decision: {type: string, enum: [approve, reject]}
    required: [doc_id]
nodes:
  extract:
    type: agent
    title: Extract terms
    human_description: Reads the contract and extracts its value.
    prompt: "Extract the total value of the contract {{doc_id}}."
    tools: [fetch_document, +think]
    writes: [total_value]
    retry: {retries: 2, delay_seconds: 5}
    metadata: {lane: ai, phase: intake, order: 1}
    transitions: [{to: summarize}]
  summarize:
    type: interaction
    interaction: mini_summarize
    input: {doc: "{{doc_id}}"}
    writes: [summary]
    metadata: {lane: ai, phase: intake, order: 2}
    transitions: [{to: triage}]
  triage:
    type: agent
    prompt: "Assess the risk of: {{summary}}"
    writes: [risk]
    metadata: {lane: ai, phase: review, order: 3}
    transitions:
      - {to: route, trigger: agent, label: needs routing}
      - {to: rejected, trigger: agent, label: reject outright}
  route:
    type: condition
    metadata: {lane: ai, phase: review, order: 4}
    branches:
      - {to: legal_review, when: {">": [{var: total_value}, 50000]}}
      - {to: approved, default: true}
  legal_review:
    type: human_task
    writes: [decision]
    metadata: {lane: legal, phase: approval}
    task:
      title: "Review contract {{doc_id}}"
      assignee: "group:legal"
      fields: [{name: decision, type: select, options: [approve, reject], required: true}]
    timeout: 2d
    on_timeout: rejected
    transitions:
      - {to: approved, guard: {"==": [{var: decision}, approve]}}
      - {to: rejected}
  approved: {type: final}
  rejected: {type: final}
"""

MINI_INTERACTION = """\
kind: interaction
name: mini_summarize
prompts:
  - {role: user, template: "Summarize the contract {{doc}}."}
input_schema: {type: object, properties: {doc: {type: string}}, required: [doc]}
"""


def mini_workspace():
    return workspace_from_texts({"mini_review.yaml": MINI_PROCESS, "mini_summarize.yaml": MINI_INTERACTION})

"""Definitions the dashboard tests run (their tools are the runtime tests' tools)."""

REVIEW = """
format_version: 1
process: review
initial: prepare
context:
  schema:
    type: object
    properties:
      party: {type: string, description: The other party}
      decision: {type: string}
      notes: {type: string}
      counter: {type: integer}
    required: [party]
  initial: {counter: 0}
nodes:
  prepare:
    type: tool
    tool: increment
    input: {value: "{{ counter }}"}
    writes: [counter]
    human_description: Counts the review passes.
    transitions: [{to: review}]
  review:
    type: human_task
    human_description: Legal decides whether the contract goes ahead.
    task:
      title: "Review {{ party }}"
      description: "Please decide about **{{ party }}**."
      assignee: group:legal
      fields:
        - {name: decision, type: select, required: true, options: [approve, reject]}
        - {name: notes, type: text}
    writes: [decision, notes]
    transitions:
      - {to: done, guard: {"==": [{var: decision}, approve]}}
      - {to: rejected, guard: {"==": [{var: decision}, reject]}}
  done: {type: final}
  rejected: {type: final}
"""

FOREACH = """
format_version: 1
process: doubler
initial: start
context:
  schema:
    type: object
    properties:
      numbers: {type: array, items: {type: integer}, description: Numbers to double}
      mode: {type: string, enum: [fast, careful]}
      results: {type: array}
    required: [numbers]
nodes:
  start:
    type: foreach
    foreach: numbers
    as: n
    item_id: "n{{ n }}"
    max_concurrency: 2
    failure_policy: collect_errors
    node:
      type: tool
      tool: double_unless
      input: {value: "{{ n }}", bad: 3}
      writes: [doubled]
    collect: {into: results, include: [status, item_id, output, error]}
    writes: [results]
    transitions: [{to: done}]
  done: {type: final}
"""

BOOM = """
format_version: 1
process: boom
initial: first
context:
  schema:
    type: object
    properties:
      counter: {type: integer}
      doubled: {type: integer}
  initial: {counter: 2}
nodes:
  first:
    type: tool
    tool: increment
    input: {value: "{{ counter }}"}
    writes: [counter]
    transitions: [{to: explode}]
  explode:
    type: tool
    tool: double_unless
    input: {value: "{{ counter }}", bad: 3}
    writes: [doubled]
    transitions: [{to: done}]
  done: {type: final}
"""

ALL = {"review.yaml": REVIEW, "doubler.yaml": FOREACH, "boom.yaml": BOOM}

#: A two-step template and its forms (seed 000): a contract's text → its key points → a digest.
#: The submissions page's tests write its steps' output submissions as a real run would.
CONTRACT_FORM = """
kind: form
name: contract_in
description: A contract to digest.
groups:
  - name: document
    label: Document
    required: true
    fields:
      - {name: title, type: string, label: Title, required: true}
      - {name: text, type: text, label: Contract text, required: true}
  - name: preferences
    label: Preferences
    fields:
      - {name: audience, type: select, options: [legal, finance], label: Audience}
      - {name: max_words, type: integer, label: Maximum words}
"""

POINTS_FORM = """
kind: form
name: contract_points
description: Key points of a contract, one entry per point.
groups:
  - name: points
    label: Key points
    repeat: true
    required: true
    fields:
      - {name: topic, type: select, options: [parties, term, payment, other], required: true}
      - {name: statement, type: text, required: true}
      - {name: risky, type: boolean, label: Needs attention}
"""

DIGEST_FORM = """
kind: form
name: contract_digest_out
description: A short digest of a contract.
groups:
  - name: digest
    label: Digest
    required: true
    fields:
      - {name: headline, type: string, label: Headline, required: true}
      - {name: risk_level, type: select, options: [low, medium, high], label: Risk level}
"""

TEMPLATE = """
kind: template
name: contract_digest
description: Lists a contract's key points, then writes a digest of them.
input_form: contract_in
output_type: artifact
steps:
  - key: extract_points
    name: Extract key points
    prompt: |
      List the key points of this contract:
      {{ input.document.text }}
    output_key: key_points
    output_form: contract_points
  - key: write_digest
    name: Write the digest
    parent: extract_points
    prompt: |
      Write a one-line digest of these points:
      {{ key_points.points }}
    output_key: digest
    output_form: contract_digest_out
"""

SUBMISSION_DEFS = {"forms/contract_in.yaml": CONTRACT_FORM, "forms/contract_points.yaml": POINTS_FORM,
                   "forms/contract_digest_out.yaml": DIGEST_FORM, "contract_digest.yaml": TEMPLATE}

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

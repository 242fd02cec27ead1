"""Definition texts the versions tests publish and change (a module of its own: test modules
import it by name, which a `conftest` cannot be, as every test folder has one)."""

from __future__ import annotations

#: A process with a human task; `{options}`, `{extra_field}` and `{extra_node}` make variants.
REVIEW = """\
# Review of a party: a tool step, then a person decides.
format_version: 1
process: review
initial: prepare
context:
  schema:
    type: object
    properties:
      party: {{type: string}}
      decision: {{type: string}}
      counter: {{type: {counter_type}}}{extra_field}
    required: [party]
  initial: {{counter: {counter_initial}}}
nodes:
  prepare:
    type: tool
    {prepare}
    writes: [counter]
    transitions: [{{to: review}}]
  review:
    type: human_task
    task:
      title: "Review {{{{ party }}}}"
      assignee: group:legal
      fields:
        - {{name: decision, type: select, required: true, options: [{options}]}}
    writes: [decision]
    transitions:
      - {{to: done, guard: {{"==": [{{var: decision}}, approve]}}}}
      - {{to: {reject_to}}}
  done: {{type: final}}
  {reject_to}: {{type: final}}
"""


def review(options: str = "approve, reject", *, counter_type: str = "integer", extra_field: str = "",
           reject_to: str = "rejected") -> str:
    # a numeric counter is incremented (`| int`: ergon check holds the argument to the tool's `int`
    # hint, and a number may have a fraction); a text counter starts as text and is set
    text = counter_type == "string"
    prepare = 'config: {context_update: {counter: "1"}}' if text else 'tool: increment\n    input: {value: "{{ counter | int }}"}'
    return REVIEW.format(options=options, counter_type=counter_type, extra_field=extra_field, reject_to=reject_to,
                         counter_initial='"0"' if text else "0", prepare=prepare)

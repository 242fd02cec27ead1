"""Random, valid-looking definitions: the input of the differential soundness property.

The soundness property of ``test_soundness.py`` runs the definitions the project ships; it
cannot find what nobody wrote. The strategies here write definitions from the IR's own
vocabulary, the way a new user would — mostly right, sometimes wrong in the small ways people
get things wrong (a field read before anything sets it, a literal of the wrong type, an exit
that can be missed, a tool argument the tool does not take) — so that ``ergon check`` has both to
pass and to refuse. Whatever it passes must then run without a ``definition`` failure
(``test_generated_definitions.py``, ``benchmarks/soundness.py``).

One draw is one folder of definitions (:class:`Generated`): a main runnable named ``gen_main``,
and what it uses —

* **processes**: state machines of 2–6 nodes and 1–2 ``final`` nodes; exits unguarded, guarded
  (JSON Logic over the context, with or without a fallback), picked by an agent
  (``trigger: agent``) or a person (``trigger: user``), forward and back (loops, bounded by a
  small ``metadata.max_visits`` so that a loop whose guard never changes ends as a ``world``
  failure, as a real run would);
* **pipelines**: the same bodies ordered by ``needs``, some skipped by ``when``;
* node bodies: ``tool`` (a fixed ``config.context_update``; the generated Python tools of
  :data:`TOOLS_PY`, typed, called with ``input`` templates and ``output``; the built-in ``log``),
  ``interaction`` (a generated interaction with an ``input_schema``, a ``result_schema`` or none,
  prompt segments in Jinja, Handlebars and JST reading its input), ``agent`` (a prompt over the
  context, tools, ``trigger: agent`` exits, sometimes a generated ``interaction:``),
  ``human_task`` (select, text, boolean and number fields, answers written to the context),
  ``condition``, ``foreach`` and ``branch`` (leaf bodies, with and without ``collect``, both
  failure policies) and ``process`` (a generated child process with an input mapping and
  ``returns``);
* **triggers**: maybe a second definition ``gen_next`` with an ``on_complete`` trigger on
  ``gen_main`` whose ``map`` reads ``gen_main``'s context;
* **workflows**: the Vertesia workflow DSL, from :mod:`workflow_generator`.

Not generated: templates over forms and submissions, environments, supervised runs,
workstreams, schedules and webhooks (their starts are tested where they are built).

Values come from small fixed sets (a few strings, numbers, colours), so hypothesis shrinks a
failing folder to a short, readable one.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import yaml
from hypothesis import strategies as st

#: Context field kinds and their JSON Schemas.
SCHEMAS: dict[str, dict[str, Any]] = {
    "string": {"type": "string"},
    "number": {"type": "number"},
    "integer": {"type": "integer"},
    "boolean": {"type": "boolean"},
    "colour": {"type": "string", "enum": ["red", "green", "blue"]},
    "strings": {"type": "array", "items": {"type": "string"}},
    "records": {"type": "array", "items": {"type": "object", "properties": {"id": {"type": "string"}, "n": {"type": "number"}},
                                            "required": ["id", "n"]}},
    "object": {"type": "object", "properties": {"x": {"type": "string"}, "y": {"type": "number"}}, "required": ["x"]},
    "list": {"type": "array"},  # of anything: where a fan-out's results are collected
}
KINDS = tuple(SCHEMAS)
COLOURS = ("red", "green", "blue")
WORDS = ("", "alpha", "Beta gamma", "42", "red")

#: The Python tools every generated folder holds (``tools/gen_tools.py``): typed, deterministic,
#: and one that fails on an empty text (a ``world`` failure).
TOOLS_PY = '''\
"""Tools of a generated definition folder."""

from __future__ import annotations

from flows.tools import tool


@tool
def gen_upper(text: str) -> str:
    """The text in capitals."""
    return text.upper()


@tool
def gen_sum(a: float, b: float = 1.0) -> float:
    """a + b."""
    return a + b


@tool
def gen_size(items: list) -> int:
    """How many items."""
    return len(items)


@tool
def gen_flag(value: bool) -> bool:
    """The value, negated."""
    return not value


@tool
def gen_records(n: int) -> list[dict]:
    """Up to three records {id, n}."""
    return [{"id": f"r{i}", "n": float(i)} for i in range(max(0, min(n, 3)))]


@tool
def gen_pair(text: str, n: int = 0) -> dict:
    """An object {x, y}."""
    return {"x": text, "y": float(n)}


@tool
def gen_strict(text: str) -> str:
    """Refuses an empty text (the world refuses)."""
    if not text:
        raise ValueError("empty text")
    return text
'''

#: Each generated tool: its parameters (name → (kind, required)) and the kind of its result.
TOOLS: dict[str, tuple[dict[str, tuple[str, bool]], str]] = {
    "gen_upper": ({"text": ("string", True)}, "string"),
    "gen_sum": ({"a": ("number", True), "b": ("number", False)}, "number"),
    "gen_size": ({"items": ("strings", True)}, "integer"),
    "gen_flag": ({"value": ("boolean", True)}, "boolean"),
    "gen_records": ({"n": ("integer", True)}, "records"),
    "gen_pair": ({"text": ("string", True), "n": ("integer", False)}, "object"),
    "gen_strict": ({"text": ("string", True)}, "string"),
}


@dataclass
class Generated:
    """One generated folder: file name → text, the definition to run, and the one chained after it."""

    files: dict[str, str]
    main: str = "gen_main"
    chained: str | None = None

    def __repr__(self) -> str:  # what hypothesis prints for a failing (shrunk) example
        return "\n".join(f"--- {name}\n{text}" for name, text in sorted(self.files.items()) if text != TOOLS_PY) \
            + "\n--- tools/gen_tools.py: definition_generator.TOOLS_PY"

    def _repr_pretty_(self, printer: Any, cycle: bool) -> None:  # hypothesis's printer
        printer.text(repr(self))


def dump(document: dict[str, Any]) -> str:
    return yaml.safe_dump(document, sort_keys=False, allow_unicode=True, width=120)


# --------------------------------------------------------------------------------------------
# Values and reads


def value_of(kind: str) -> st.SearchStrategy[Any]:
    """A value of ``kind``."""
    number = st.sampled_from([0, 1.5, -3, 100])
    return {
        "string": st.sampled_from(WORDS),
        "number": number,
        "integer": st.sampled_from([0, 1, 7, 250]),
        "boolean": st.booleans(),
        "colour": st.sampled_from(COLOURS),
        "strings": st.lists(st.sampled_from(WORDS), max_size=3),
        "records": st.lists(st.fixed_dictionaries({"id": st.sampled_from(["r1", "r2"]), "n": number}), max_size=3),
        "list": st.lists(st.one_of(st.sampled_from(WORDS), number), max_size=3),
        "object": st.fixed_dictionaries({"x": st.sampled_from(WORDS)}, optional={"y": number}),
    }[kind]


@st.composite
def literal(draw: st.DrawFn, kind: str) -> Any:
    """A value of ``kind``, one time in 25 a value of another kind (a user's slip)."""
    if draw(st.integers(0, 79)) == 0:
        kind = draw(st.sampled_from(KINDS))
    return draw(value_of(kind))


@dataclass
class Context:
    """The typed state a definition declares: fields by kind, which are run inputs, which start set."""

    kinds: dict[str, str]
    inputs: list[str]
    initial: dict[str, Any]
    extra_required: list[str] = field(default_factory=list)

    def spec(self) -> dict[str, Any]:
        schema: dict[str, Any] = {"type": "object", "properties": {n: dict(SCHEMAS[k]) for n, k in self.kinds.items()}}
        if self.inputs:
            schema["required"] = list(self.inputs)
        spec: dict[str, Any] = {"schema": schema}
        if self.initial:
            spec["initial"] = self.initial
        return spec

    def of(self, *kinds: str) -> list[str]:
        return [n for n, k in self.kinds.items() if k in kinds]

    def ready(self) -> list[str]:
        """The fields set when a run starts (inputs and initial values)."""
        return [n for n in self.kinds if n in self.inputs or n in self.initial]


@st.composite
def contexts(draw: st.DrawFn, prefix: str = "f") -> Context:
    count = draw(st.integers(2, 6))
    kinds = {f"{prefix}{i}": draw(st.sampled_from(KINDS)) for i in range(count)}
    inputs, initial = [], {}
    for name, kind in kinds.items():
        role = draw(st.sampled_from(["input", "initial", "later", "later"]))
        if role == "input":
            inputs.append(name)
        elif role == "initial":
            initial[name] = draw(literal(kind))
    return Context(kinds, inputs, initial)


@st.composite
def read(draw: st.DrawFn, ctx: Context, scope: dict[str, str] | None = None) -> tuple[str, str]:
    """A template reading the context (or ``scope``, e.g. a foreach item): its text and the kind
    of what it renders to."""
    names = {**ctx.kinds, **(scope or {})}
    if draw(st.integers(0, 79)) == 0:
        return "{{ nowhere }}", "string"  # a field nobody declares
    # mostly what is surely set (the inputs, the initial values, the item), sometimes any field
    sure = sorted(set(ctx.ready()) | set(scope or {}))
    name = draw(st.sampled_from(sure if sure and draw(st.integers(0, 9)) > 0 else sorted(names)))
    kind = names[name]
    form = draw(st.sampled_from(["whole", "whole", "text", "member"]))
    if form == "whole":
        return "{{ " + name + " }}", kind
    if form == "member" and kind == "object":
        return "{{ " + name + ".x }}", "string"
    if form == "member" and kind == "record":
        return "{{ " + name + ".id }}", "string"
    if form == "member" and kind in ("strings", "records", "list", "string"):
        return "{{ " + name + " | length }}", "integer"
    if form == "member" and kind == "records":
        return "{{ " + name + "[0].id }}", "string"
    return "about {{ " + name + " }}", "string"


@st.composite
def argument(draw: st.DrawFn, ctx: Context, kind: str, scope: dict[str, str] | None = None) -> Any:
    """A value for a parameter of ``kind``: a template over the context or a literal."""
    fitting = [n for n, k in {**ctx.kinds, **(scope or {})}.items() if k == kind and (n in ctx.ready() or n in (scope or {}))]
    if fitting and draw(st.booleans()):
        return "{{ " + draw(st.sampled_from(fitting)) + " }}"
    if kind == "string" and draw(st.booleans()):
        text, _ = draw(read(ctx, scope))
        return text if text.startswith("about") else "about " + text  # text around a template: a string
    if draw(st.integers(0, 29)) == 0:
        return draw(read(ctx, scope))[0]  # whatever the field holds
    return draw(literal(kind))


@st.composite
def guard(draw: st.DrawFn, ctx: Context) -> Any:
    """A JSON Logic rule over one field of the context (sometimes two, joined)."""
    def one() -> Any:
        sure = ctx.ready()
        name = draw(st.sampled_from(sure if sure and draw(st.integers(0, 9)) > 0 else sorted(ctx.kinds)))
        kind = ctx.kinds[name]
        var = {"var": name}
        if kind in ("number", "integer"):
            return {draw(st.sampled_from([">", "<", "==", ">="])): [var, draw(value_of(kind))]}
        if kind == "boolean":
            return draw(st.sampled_from([{"==": [var, True]}, {"!": var}, var]))
        if kind == "colour":
            return draw(st.sampled_from([{"==": [var, draw(st.sampled_from(COLOURS))]},
                                         {"in": [var, ["red", "blue"]]}, {"!=": [var, "green"]}]))
        if kind == "string":
            return {"==": [var, draw(st.sampled_from(WORDS))]}
        return {"!!": var}

    rule = one()
    if draw(st.integers(0, 3)) == 0:
        rule = {draw(st.sampled_from(["and", "or"])): [rule, one()]}
    return rule


# --------------------------------------------------------------------------------------------
# Interactions


@dataclass
class Folder:
    """What a draw adds besides the main definition: interactions, child processes."""

    files: dict[str, str] = field(default_factory=dict)
    count: int = 0

    def name(self, prefix: str) -> str:
        self.count += 1
        return f"{prefix}_{self.count}"


@st.composite
def prompt_segment(draw: st.DrawFn, fields: dict[str, str]) -> dict[str, Any]:
    """A prompt segment reading ``fields`` (the interaction's input) in one of the three languages."""
    language = draw(st.sampled_from(["jinja", "jinja", "handlebars", "jst"]))
    names = sorted(fields) or ["nothing"]
    # one time in 30, `stray`: a field the input does not declare
    name = "stray" if draw(st.integers(0, 29)) == 0 else draw(st.sampled_from(names))
    kind = fields.get(name, "string")
    if language == "jinja":
        if kind in ("strings", "records", "list"):
            text = "{% for v in " + name + " %}- {{ v }}\n{% endfor %}"
        else:
            text = "Consider {{ " + name + " }}."
        return {"role": "user", "template": text}
    if language == "handlebars":
        if kind in ("strings", "records", "list"):
            text = "{{#each " + name + "}}- {{this}}\n{{/each}}"
        elif kind == "boolean":
            text = "{{#if " + name + "}}Yes.{{else}}No.{{/if}}"
        else:
            text = "Consider {{" + name + "}}."
        return {"role": "user", "template": text, "content_type": "handlebars"}
    if kind in ("strings", "records", "list"):
        text = "`Items: ${" + name + ".length}`"
    else:
        text = "`Consider ${" + name + "}.`"
    return {"role": "user", "template": text, "content_type": "jst"}


@st.composite
def interaction(draw: st.DrawFn, folder: Folder, ctx: Context, writes: list[str]) -> tuple[str, dict[str, str]]:
    """A generated interaction file: its name and its input fields (name → kind). Its result
    schema (when it has one) holds the fields ``writes`` names, usually of the context's kind."""
    name = folder.name("gen_ix")
    inputs = {f"in{i}": draw(st.sampled_from(KINDS)) for i in range(draw(st.integers(0, 2)))}
    prompts = [{"role": "system", "template": "You help with generated work."}]
    prompts += [draw(prompt_segment(inputs)) for _ in range(draw(st.integers(1, 2)))]
    document: dict[str, Any] = {"kind": "interaction", "name": name, "prompts": prompts}
    if inputs or draw(st.booleans()):
        document["input_schema"] = {
            "type": "object", "properties": {n: SCHEMAS[k] for n, k in inputs.items()},
            "required": draw(st.lists(st.sampled_from(sorted(inputs)), unique=True)) if inputs else []}
    if draw(st.integers(0, 2)) > 0:
        props = {}
        for w in writes:
            kind = ctx.kinds.get(w, "string")
            props[w] = SCHEMAS[draw(st.sampled_from(KINDS)) if draw(st.integers(0, 24)) == 0 else kind]
        if draw(st.integers(0, 3)) == 0:
            props["note"] = {"type": "string"}
        document["result_schema"] = {"type": "object", "properties": props,
                                     "required": draw(st.lists(st.sampled_from(sorted(props)), unique=True)) if props else []}
    folder.files[f"interactions/{name}.yaml"] = dump(document)
    return name, inputs


# --------------------------------------------------------------------------------------------
# Node bodies


@st.composite
def writes_of(draw: st.DrawFn, ctx: Context, most: int = 2) -> list[str]:
    names = sorted(ctx.kinds)
    chosen = draw(st.lists(st.sampled_from(names), min_size=1, max_size=most, unique=True))
    if draw(st.integers(0, 79)) == 0:
        chosen.append("undeclared")  # a field the schema does not have
    return chosen


@st.composite
def tool_body(draw: st.DrawFn, ctx: Context, scope: dict[str, str] | None = None) -> dict[str, Any]:
    style = draw(st.sampled_from(["update", "call", "call", "log"]))
    if style == "update":
        writes = draw(writes_of(ctx))
        update = {w: draw(literal(ctx.kinds.get(w, "string"))) for w in writes}
        if draw(st.integers(0, 29)) == 0:
            writes = writes[1:] or writes  # a write not declared in `writes`
        return {"type": "tool", "config": {"context_update": update}, "writes": writes}
    if style == "log":
        return {"type": "tool", "tool": "log", "input": {"message": draw(read(ctx, scope))[0]}}
    tool = draw(st.sampled_from(sorted(TOOLS)))
    params, result = TOOLS[tool]
    args = {}
    for param, (kind, required) in params.items():
        if required or draw(st.booleans()):
            if draw(st.integers(0, 29)) == 0:
                continue  # a required argument forgotten
            args[param] = draw(argument(ctx, kind, scope))
    if draw(st.integers(0, 29)) == 0:
        args["extra"] = "x"  # an argument the tool does not take
    fitting = [n for n, k in ctx.kinds.items() if k == result]
    target = draw(st.sampled_from(fitting)) if fitting and draw(st.integers(0, 11)) > 0 else draw(st.sampled_from(sorted(ctx.kinds)))
    return {"type": "tool", "tool": tool, "input": args, "output": target, "writes": [target]}


@st.composite
def interaction_body(draw: st.DrawFn, folder: Folder, ctx: Context, scope: dict[str, str] | None = None) -> dict[str, Any]:
    writes = draw(writes_of(ctx))
    name, inputs = draw(interaction(folder, ctx, writes))
    args = {n: draw(argument(ctx, k, scope)) for n, k in inputs.items() if draw(st.integers(0, 39)) > 0}
    body: dict[str, Any] = {"type": "interaction", "interaction": name, "writes": writes}
    if args:
        body["input"] = args
    return body


@st.composite
def agent_body(draw: st.DrawFn, folder: Folder, ctx: Context, scope: dict[str, str] | None = None) -> dict[str, Any]:
    writes = draw(writes_of(ctx))
    body: dict[str, Any] = {"type": "agent", "prompt": "Work on " + draw(read(ctx, scope))[0], "writes": writes,
                            "max_iterations": 3}
    if draw(st.booleans()):
        body["tools"] = draw(st.lists(st.sampled_from(["think", "log", "fetch_document", "gen_upper", "gen_sum", "+think"]),
                                      unique=True, max_size=3))
    if draw(st.integers(0, 3)) == 0:
        name, inputs = draw(interaction(folder, ctx, writes))
        body["interaction"] = name
        args = {n: draw(argument(ctx, k, scope)) for n, k in inputs.items()}
        if args:
            body["input"] = args
    return body


@st.composite
def human_body(draw: st.DrawFn, ctx: Context) -> dict[str, Any]:
    fields = []
    for name in draw(st.lists(st.sampled_from(sorted(ctx.kinds)), min_size=1, max_size=2, unique=True)):
        kind = ctx.kinds[name]
        shape: dict[str, Any] = {"name": name, "required": draw(st.booleans())}
        if kind == "colour":
            shape |= {"type": "select", "options": draw(st.sampled_from([list(COLOURS), ["red", "blue"], list(COLOURS)[::-1]]))}
            if draw(st.integers(0, 19)) == 0:
                shape["options"] = ["red", "purple"]  # an option the field refuses
        elif kind == "boolean":
            shape["type"] = "boolean"
        elif kind in ("number", "integer"):
            shape["type"] = kind if draw(st.integers(0, 9)) > 0 else draw(st.sampled_from(["number", "integer"]))
        elif kind == "string":
            shape["type"] = draw(st.sampled_from(["text", "string", "select"]))
            if shape["type"] == "select":
                shape["options"] = ["yes", "no"]
        elif draw(st.integers(0, 9)) == 0:
            shape["type"] = "text"  # no task field holds a list or an object: a slip
        else:
            continue
        fields.append(shape)
    if not fields:
        fields.append({"name": "answer_note", "type": "text"})
    return {"type": "human_task", "task": {"title": "Decide " + draw(read(ctx))[0], "fields": fields},
            "writes": [f["name"] for f in fields if f["name"] in ctx.kinds and draw(st.integers(0, 5)) > 0]}


@st.composite
def child_process(draw: st.DrawFn, folder: Folder) -> tuple[str, Context]:
    """A generated child process file (no sub-process of its own): its name and context."""
    name = folder.name("gen_child")
    ctx = draw(contexts(prefix="c"))
    document = draw(process_document(folder, ctx, name, depth=1))
    folder.files[f"{name}.yaml"] = dump(document)
    return name, ctx


@st.composite
def process_body(draw: st.DrawFn, folder: Folder, ctx: Context, scope: dict[str, str] | None = None) -> dict[str, Any]:
    name, child = draw(child_process(folder))
    mapping = {}
    for field_name, kind in child.kinds.items():
        if field_name in child.inputs or draw(st.integers(0, 3)) == 0:
            if draw(st.integers(0, 29)) > 0:
                mapping[field_name] = draw(argument(ctx, kind, scope))
    body: dict[str, Any] = {"type": "process", "process": name}
    if mapping:
        body["input"] = mapping
    style = draw(st.sampled_from(["context", "from", "none"]))
    if style == "none":
        return body
    # what comes back is written to the parent field of the same name: pick names the parent has
    shared = sorted(n for n in set(child.kinds) & set(ctx.kinds) if child.kinds[n] == ctx.kinds[n] or draw(st.integers(0, 9)) == 0)
    if style == "from" or not shared:
        back = draw(st.sampled_from(sorted(child.kinds)))
        fitting = [n for n, k in ctx.kinds.items() if k == child.kinds[back]]
        target = draw(st.sampled_from(fitting if fitting and draw(st.integers(0, 9)) > 0 else sorted(ctx.kinds)))
        body["returns"] = {"from": f"context.{back}"}
        body["writes"] = [target]
        return body
    back_fields = draw(st.lists(st.sampled_from(shared), min_size=1, max_size=2, unique=True))
    body["returns"] = {"context": back_fields}
    body["writes"] = back_fields
    return body


@st.composite
def leaf_body(draw: st.DrawFn, folder: Folder, ctx: Context, depth: int, scope: dict[str, str] | None = None) -> dict[str, Any]:
    choices = ["tool", "tool", "interaction", "agent"] + (["process"] if depth == 0 else [])
    kind = draw(st.sampled_from(choices))
    if kind == "tool":
        return draw(tool_body(ctx, scope))
    if kind == "interaction":
        return draw(interaction_body(folder, ctx, scope))
    if kind == "agent":
        return draw(agent_body(folder, ctx, scope))
    return draw(process_body(folder, ctx, scope))


@st.composite
def collect_of(draw: st.DrawFn, ctx: Context) -> Any:
    lists = ctx.of("list")
    target = draw(st.sampled_from(lists)) if lists and draw(st.integers(0, 9)) > 0 else draw(st.sampled_from(sorted(ctx.kinds)))
    if draw(st.booleans()):
        return target
    return {"into": target, "include": draw(st.lists(st.sampled_from(["status", "index", "output", "error", "item"]),
                                                      min_size=1, max_size=3, unique=True))}


@st.composite
def foreach_body(draw: st.DrawFn, folder: Folder, ctx: Context, depth: int) -> dict[str, Any]:
    lists = [n for n in ctx.of("strings", "records", "list") if n in ctx.ready() or draw(st.integers(0, 3)) == 0]
    if not lists and draw(st.integers(0, 9)) > 0:
        return draw(leaf_body(folder, ctx, depth))  # nothing to run over: a user writes another step
    over = draw(st.sampled_from(lists)) if lists and draw(st.integers(0, 29)) > 0 else draw(st.sampled_from(sorted(ctx.kinds)))
    item_kind = {"strings": "string", "records": "record", "list": "list_item"}.get(ctx.kinds[over], "string")
    body = draw(leaf_body(folder, ctx, depth, scope={"item": item_kind}))
    node: dict[str, Any] = {"type": "foreach", "foreach": over, "node": body}
    if draw(st.booleans()):
        node["collect"] = draw(collect_of(ctx))
        node["writes"] = [node["collect"] if isinstance(node["collect"], str) else node["collect"]["into"]]
    if draw(st.booleans()):
        node["failure_policy"] = "collect_errors"
    if "collect" not in node and body.get("writes") and draw(st.integers(0, 5)) > 0:
        node["max_concurrency"] = 1  # items one at a time: each writes the fields in turn
    elif draw(st.integers(0, 3)) == 0:
        node["max_concurrency"] = draw(st.integers(1, 3))
    return node


@st.composite
def branch_body(draw: st.DrawFn, folder: Folder, ctx: Context, depth: int) -> dict[str, Any]:
    arms: list[dict[str, Any]] = []
    written: set[str] = set()
    for i in range(draw(st.integers(1, 3))):
        body = draw(leaf_body(folder, ctx, depth))
        # arms run at the same time: writing one field from two is a race, which users rarely write
        if written & set(body.get("writes", [])) and draw(st.integers(0, 7)) > 0:
            continue
        written |= set(body.get("writes", []))
        arms.append({"id": f"arm{i}", "node": body})
    node: dict[str, Any] = {"type": "branch", "branches": arms}
    if draw(st.booleans()):
        node["collect"] = draw(collect_of(ctx))
        node["writes"] = [node["collect"] if isinstance(node["collect"], str) else node["collect"]["into"]]
    if draw(st.booleans()):
        node["failure_policy"] = "collect_errors"
    return node


@st.composite
def node_body(draw: st.DrawFn, folder: Folder, ctx: Context, depth: int, kinds: list[str]) -> dict[str, Any]:
    kind = draw(st.sampled_from(kinds))
    if kind == "human_task":
        return draw(human_body(ctx))
    if kind == "foreach":
        return draw(foreach_body(folder, ctx, depth))
    if kind == "branch":
        return draw(branch_body(folder, ctx, depth))
    return draw(leaf_body(folder, ctx, depth))


# --------------------------------------------------------------------------------------------
# Processes and pipelines

BODY_KINDS = ["leaf", "leaf", "leaf", "human_task", "foreach", "branch", "condition"]


@st.composite
def exits(draw: st.DrawFn, ctx: Context, body: dict[str, Any], here: int, ids: list[str], finals: list[str]) -> None:
    """The exits of process node ``ids[here]``, set on ``body``: forward, to a final, sometimes back."""
    ahead = ids[here + 1:] + finals
    back = ids[:here + 1]

    def target() -> str:
        if back and draw(st.integers(0, 7)) == 0:
            return draw(st.sampled_from(back))
        return draw(st.sampled_from(ahead))

    def following() -> str:  # mostly the next node: a chain reaches every node, as people write them
        return ahead[0] if draw(st.integers(0, 4)) > 0 else draw(st.sampled_from(ahead))

    if body["type"] == "condition":
        arms = [{"to": target(), "when": draw(guard(ctx))} for _ in range(draw(st.integers(1, 2)))]
        if draw(st.integers(0, 19)) > 0:
            arms.append({"to": following(), "default": True})
        body["branches"] = arms
        return
    style = draw(st.sampled_from(["one", "one", "guarded", "picked"]))
    if style == "picked" and body["type"] in ("agent", "human_task"):
        trigger = "agent" if body["type"] == "agent" else "user"
        targets = [following()]
        targets += [t for t in draw(st.lists(st.sampled_from(ahead + back), min_size=1, max_size=2, unique=True)) if t not in targets]
        body["transitions"] = [{"to": t, "trigger": trigger} for t in targets]
        if body["type"] == "agent":
            body["writes"] = body.get("writes", [])
        return
    if style == "guarded":
        moves = [{"to": target(), "guard": draw(guard(ctx))} for _ in range(draw(st.integers(1, 2)))]
        if draw(st.integers(0, 9)) > 0:
            moves.append({"to": following()})
        body["transitions"] = moves
        return
    body["transitions"] = [{"to": following()}]


@st.composite
def process_document(draw: st.DrawFn, folder: Folder, ctx: Context, name: str, depth: int = 0) -> dict[str, Any]:
    count = draw(st.integers(1, 5 if depth == 0 else 3))
    ids = [f"n{i}" for i in range(count)]
    finals = ["done"] + (["stopped"] if draw(st.booleans()) else [])
    nodes: dict[str, Any] = {}
    for i, node_id in enumerate(ids):
        kind = draw(st.sampled_from(BODY_KINDS if depth == 0 else ["leaf", "leaf", "human_task", "condition"]))
        body = {"type": "condition"} if kind == "condition" else \
            draw(node_body(folder, ctx, depth, ["leaf"] if kind == "leaf" else [kind]))
        draw(exits(ctx, body, i, ids, finals))
        nodes[node_id] = body
    for final in finals:
        nodes[final] = {"type": "final"}
    _keep_reachable(nodes, ids[0])
    return {"format_version": 1, "process": name, "initial": ids[0], "context": ctx.spec(), "nodes": nodes,
            "metadata": {"max_visits": 25}}


def _exits_of(body: dict[str, Any]) -> list[str]:
    return [e["to"] for e in body.get("transitions", []) + body.get("branches", []) if "to" in e]


def _keep_reachable(nodes: dict[str, Any], initial: str) -> None:
    """Drop the nodes no path reaches (people do not write them; ``ergon check`` refuses them)."""
    seen, frontier = {initial}, [initial]
    while frontier:
        for target in _exits_of(nodes[frontier.pop()]):
            if target in nodes and target not in seen:
                seen.add(target)
                frontier.append(target)
    for node_id in [n for n in nodes if n not in seen]:
        del nodes[node_id]


@st.composite
def pipeline_document(draw: st.DrawFn, folder: Folder, ctx: Context, name: str) -> dict[str, Any]:
    count = draw(st.integers(1, 5))
    nodes: dict[str, Any] = {}
    for i in range(count):
        kind = draw(st.sampled_from(["leaf", "leaf", "leaf", "foreach", "branch", "human_task"]))
        body = draw(node_body(folder, ctx, 0, ["leaf"] if kind == "leaf" else [kind]))
        earlier = list(nodes)
        if earlier and draw(st.integers(0, 4)) > 0:
            body["needs"] = [earlier[-1]] + draw(st.lists(st.sampled_from(earlier[:-1]), max_size=1)) if len(earlier) > 1 \
                else [earlier[-1]]
        if draw(st.integers(0, 4)) == 0:
            body["when"] = draw(guard(ctx))
        nodes[f"p{i}"] = body
    return {"kind": "pipeline", "name": name, "context": ctx.spec(), "nodes": nodes}


@st.composite
def chained(draw: st.DrawFn, main: Context) -> dict[str, Any]:
    """``gen_next``: a small process started when ``gen_main`` completes, its inputs mapped from
    ``gen_main``'s context."""
    ctx = draw(contexts(prefix="g"))
    mapping = {}
    for name, kind in ctx.kinds.items():
        if name in ctx.inputs or draw(st.booleans()):
            if draw(st.integers(0, 29)) > 0:
                fitting = [n for n, k in main.kinds.items() if k == kind]
                mapping[name] = "{{ " + draw(st.sampled_from(fitting)) + " }}" if fitting and draw(st.integers(0, 19)) > 0 \
                    else draw(read(main))[0]
    log = {"type": "tool", "tool": "log", "input": {"message": draw(read(ctx))[0]}, "transitions": [{"to": "done"}]}
    trigger: dict[str, Any] = {"type": "on_complete", "definition": "gen_main"}
    if mapping:
        trigger["map"] = mapping
    return {"format_version": 1, "process": "gen_next", "initial": "note", "context": ctx.spec(),
            "triggers": [trigger], "nodes": {"note": log, "done": {"type": "final"}}}


SHAPES = ("process", "process", "process", "pipeline", "pipeline", "workflow")


@st.composite
def definitions(draw: st.DrawFn, shapes: tuple[str, ...] = SHAPES) -> Generated:
    """One generated folder (see the module docstring); ``shapes`` weighs the main definition's kind."""
    from workflow_generator import workflows

    shape = draw(st.sampled_from(shapes))
    folder = Folder(files={"tools/gen_tools.py": TOOLS_PY})
    if shape == "workflow":
        folder.files.update(draw(workflows()))
        return Generated(folder.files)
    ctx = draw(contexts())
    document = draw(process_document(folder, ctx, "gen_main") if shape == "process" else pipeline_document(folder, ctx, "gen_main"))
    folder.files["gen_main.yaml"] = dump(document)
    follower = None
    if draw(st.integers(0, 3)) == 0:
        folder.files["gen_next.yaml"] = dump(draw(chained(ctx)))
        follower = "gen_next"
    return Generated(folder.files, chained=follower)

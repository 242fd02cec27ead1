"""Random, valid-looking workspaces of Vertesia workflow-DSL definitions (kind ``workflow``).

:func:`workflows` draws one workspace: a main workflow named ``gen_main`` (file ``gen_main.yaml``,
written as YAML or JSON, with or without ``kind``), zero to two child workflows ``gen_child_<n>``
that it starts with ``type: workflow`` steps, and sometimes the interaction ``gen_wf_interaction``
that its ``executeInteraction`` steps may name. The point is a differential property: whatever
``ergon check`` passes must run without a ``definition``, ``model`` or ``internal`` failure, so
the drawn definitions sit near the edges of what the checker accepts — most are right, a good
share are wrong in one or two ways the checker should refuse.

What it covers:

* ``vars`` of every JSON type (string, integer, number, boolean, list, object, null), computed
  vars whose value holds a ``${}`` reference (to an input, a literal var, another computed var or
  nothing), and an ``input_schema`` of typed properties, required or not (sometimes malformed);
* ``${}`` references whole and inside strings, into nested fields (``${meta.kind}``) and list
  items (``${tags[0]}``), that exist or not, to vars, inputs, earlier outputs, the output of a
  step behind a condition, of an ``async`` child, names never set, and odd expressions
  (``${}``, ``${1}``, a Jinja filter); also a literal ``{{ name }}`` in a string, which is not
  the DSL's syntax but is Jinja's;
* ``condition`` in both shapes (``{path: {$op: v}}`` and ``{$op: {path: v}}``) and the bare
  ``{path: v}``, with every operator of the DSL page (``$eq`` … ``$regexp``) plus an unknown one,
  over operands of matching and mismatching types, ``${var}`` operands, invalid patterns and
  non-list ``$in`` operands;
* every activity of the DSL page as Ergon names them, with parameters of the right and wrong
  types, missing required ones and unknown extras; document ids that exist (``doc-1``) or not,
  documents passed whole (``${created.document}``, ``${fetched}``); some other built-in tools a
  step may name (``noop``, ``think``, ``set_context``, ``fetch_document``, ``write_artifact``…),
  unknown activity names, platform activities Ergon refuses, and an agent-only tool;
* ``fetch`` (type, source, query by ``id`` / ``name`` / ``text``, ``select``, ``limit``,
  ``on_not_found``) with ``${fetched}`` and its fields in the step's params, ``projection``
  (``$include`` / ``$exclude``, dotted paths, an unknown operator, an empty one), ``import``,
  ``output`` names that collide with vars, inputs and other outputs, explicit and repeated step
  ids (``_vars`` too), repeated activity names, ``title``, an omitted ``type``;
* child steps with and without params (matching the child's inputs, missing a required one,
  of the wrong type, unknown ones), ``async: true``, ``output`` read afterwards (its fields too),
  a child that does not exist, and a child that starts ``gen_main`` back (a call cycle).

What it does not cover: triggers, the embedding activities' indexing of documents
(``generateEmbeddings`` is drawn with ``text`` only), ``http_request`` and ``ask_user`` (a
network call and a human task are not the offline model's), grandchildren (children start no
workflows but ``gen_main``), JavaScript beyond one-line expressions, and definitions that do not
parse as YAML at all. It is deterministic given hypothesis's draws and shrinks towards one
``log`` step with no vars.
"""

from __future__ import annotations

import json
from typing import Any

import yaml
from hypothesis import strategies as st

MAIN = "gen_main"
INTERACTION = "gen_wf_interaction"
#: The document the harness puts in the store; any other id does not exist.
DOCUMENT = "doc-1"

#: Names vars, inputs and outputs are drawn from: a small pool, so that they collide.
NAMES = ("title", "count", "ratio", "flag", "tags", "meta", "nothing", "items", "documentId", "result")
#: Names nothing defines (a reference to one is never set).
GHOSTS = ("ghost", "missingVar")

JsonType = str  # "string" | "integer" | "number" | "boolean" | "array" | "object" | "null"
TYPES: tuple[JsonType, ...] = ("string", "integer", "number", "boolean", "array", "object", "null")

#: What each activity returns (a representative value, so references can reach into it).
RESULTS: dict[str, Any] = {
    "log": {"logged": "text"},
    "sleep": {"slept": 0},
    "createDocument": {"document": {"id": "d", "name": "n", "type": "t", "content": ""}},
    "updateDocument": {"document": {"id": "d", "name": "n"}},
    "deleteDocument": {"deleted": "d"},
    "extractText": {"text": "t", "hasText": True},
    "executeInteraction": {"result": {"answer": "a", "score": 1}},
    "generateText": {"text": "t"},
    "translateText": {"translatedText": "t"},
    "summarizeText": {"summary": "s"},
    "analyzeSentiment": {"sentiment": "positive"},
    "classifyText": {"category": "c"},
    "extractEntities": {"entities": [{"text": "t", "type": "p"}]},
    "runJavascriptCode": {"result": 1},
    "generateEmbeddings": {"embeddings": [0.5], "model": "m", "dimensions": 1},
    "searchEmbeddings": {"results": [{"id": "d", "name": "n", "score": 1.0, "snippet": "s"}], "model": "m"},
    "noop": {},
    "think": {"thought": "t"},
    "fetch_document": {"id": "d", "name": "n", "content": "c"},
    "search_documents": [{"id": "d", "name": "n"}],
    "write_artifact": {"key": "k", "version": 1},
    "list_artifacts": [{"key": "k"}],
}

#: Parameters of each activity: (name, sort of value, required). The sort picks right values
#: (and, sometimes, wrong ones) in :func:`_param_value`.
PARAMS: dict[str, list[tuple[str, str, bool]]] = {
    "log": [("message", "str", True), ("level", "level", False)],
    "sleep": [("duration", "num", False), ("seconds", "num", False)],
    "createDocument": [("type", "str", True), ("properties", "obj", False), ("content", "str", False)],
    "updateDocument": [("document", "doc", True), ("properties", "obj", False), ("content", "str", False)],
    "deleteDocument": [("document", "created", True)],  # never `doc-1`: later runs read it
    "extractText": [("document", "doc", True)],
    "executeInteraction": [("interaction", "interaction", True), ("data", "idata", False)],
    "generateText": [("prompt", "prompt", True), ("data", "obj", False)],
    "translateText": [("text", "str", True), ("targetLanguage", "str", True)],
    "summarizeText": [("text", "str", True)],
    "analyzeSentiment": [("text", "str", True)],
    "classifyText": [("text", "str", True), ("categories", "list", True)],
    "extractEntities": [("text", "str", True)],
    "runJavascriptCode": [("code", "code", True), ("data", "jsdata", True)],  # the code reads `x`
    "generateEmbeddings": [("text", "str", True)],
    "searchEmbeddings": [("embeddings", "vector", True), ("limit", "limit", False)],
    # built-ins that are not DSL activities, whose parameters the checker does not know
    "noop": [],
    "think": [("thought", "str", True)],
    "set_context": [("updates", "obj", True)],
    "fetch_document": [("id", "docid", True)],
    "search_documents": [("query", "str", True), ("limit", "limit", False)],
    "write_artifact": [("key", "key", True), ("content", "any", True)],
    "list_artifacts": [],
}
#: Activities a child workflow draws from (cheap ones: a child runs inside every parent run).
CHILD_ACTIVITIES = ("log", "sleep", "generateText", "runJavascriptCode", "summarizeText", "noop")
#: Names no tool has, platform activities Ergon refuses, an agent-only tool.
WRONG_ACTIVITIES = ("fetchDocument", "projectDocument", "setDocumentStatus", "chunkDocument", "launch_workstream")
#: The interaction's input: ``topic`` is required.
INTERACTION_TEXT = {
    "kind": "interaction",
    "name": INTERACTION,
    "prompts": [{"role": "user", "template": "Answer about {{ topic }} in {{ words }} words."}],
    "input_schema": {"type": "object", "properties": {"topic": {"type": "string"}, "words": {"type": "integer"}},
                     "required": ["topic"]},
    "result_schema": {"type": "object", "properties": {"answer": {"type": "string"}, "score": {"type": "integer"}},
                      "required": ["answer", "score"]},
}


class Scope:
    """What a step may refer to: names with a representative value (``None``: unknown shape),
    the names only a conditional step or a still-running ``async`` child sets, and how often
    this workspace is deliberately wrong (``rate``: one site in ``rate``; 0: never)."""

    def __init__(self, rate: int) -> None:
        self.rate = rate
        self.values: dict[str, Any] = {}
        self.conditional: dict[str, Any] = {}  # name → the condition of the step that sets it
        self.pending: set[str] = set()  # outputs of async children
        self.conditions: list[dict[str, Any]] = []  # conditions of earlier steps, to be reused
        self.vars: set[str] = set()  # the workflow's vars (what `import` may name)

    def set(self, name: str, value: Any, *, condition: dict[str, Any] | None = None, pending: bool = False) -> None:
        if pending:
            self.pending.add(name)
            return
        self.values[name] = value
        self.pending.discard(name)
        if condition:
            self.conditional[name] = condition
        else:
            self.conditional.pop(name, None)

    def settled(self) -> list[str]:
        """Names set on every path so far."""
        return sorted(n for n in self.values if n not in self.conditional)


# Every choice below shrinks towards its first option, so the first option is the plain, valid
# one and hypothesis shrinks a failing workspace towards a definition that is right but for the
# one thing that matters.


def _wrong(draw: Any, scope: Scope) -> bool:
    """Whether to be deliberately wrong here (something ``ergon check`` should refuse)."""
    return scope.rate > 0 and draw(st.integers(1, scope.rate)) == scope.rate


def _sometimes(draw: Any, n: int) -> bool:
    """True about once in ``n`` draws (an edge the checker accepts); shrinks to False."""
    return draw(st.integers(1, n)) == n


def _pick(draw: Any, options: Any) -> Any:
    return draw(st.sampled_from(list(options)))


# --------------------------------------------------------------------------------------------
# values


def _literal(draw: Any, kind: JsonType) -> Any:
    """A small literal of JSON type ``kind``; near the edges (empty, zero, negative, nested)."""
    if kind == "string":
        return _pick(draw, ["Hello World!", "", "doc-1", "contract", "a.b", "42", "yes"])
    if kind == "integer":
        return draw(st.integers(-2, 3))
    if kind == "number":
        return _pick(draw, [0.5, -1.25, 2.0, 0.0])
    if kind == "boolean":
        return draw(st.booleans())
    if kind == "array":
        return _pick(draw, [["contract", "invoice"], [], [1, 2], ["a", 1], [{"kind": "x"}]])
    if kind == "object":
        return _pick(draw, [{"kind": "report", "score": 3}, {}, {"nested": {"deep": True}, "kind": "x"}, {"tags": ["a"]}])
    return None


def _path_into(draw: Any, value: Any) -> str:
    """A path suffix reaching into ``value``: a field or item it has, rarely one it lacks."""
    if isinstance(value, dict) and value and draw(st.booleans()):
        key = _pick(draw, sorted(value))
        if _sometimes(draw, 8):
            return ".missing"
        return "." + key + _path_into(draw, value[key])
    if isinstance(value, dict) and _sometimes(draw, 10):
        return ".missing"
    if isinstance(value, list) and _sometimes(draw, 4):
        index = 0 if value and not _sometimes(draw, 4) else 3
        return f"[{index}]" + (_path_into(draw, value[index]) if index < len(value) else "")
    if value is not None and not isinstance(value, (dict, list)) and _sometimes(draw, 12):
        return ".field"  # a field of a scalar
    return ""


def _expression(draw: Any, scope: Scope, extra: dict[str, Any] | None = None, *, condition: Any = None,
                path_only: bool = False) -> str | None:
    """The expression of one ``${}`` reference: a name set on every path (or one the step's own
    ``condition`` guards), reaching into it; when wrong, a name that may be unset, or no name.
    None: there is nothing to refer to (and this is no place to be wrong)."""
    usable = {n: scope.values[n] for n in scope.settled()}
    usable.update({n: scope.values[n] for n, c in scope.conditional.items() if condition is not None and c == condition})
    usable.update(extra or {})
    if _wrong(draw, scope):
        sort = _pick(draw, ["ghost", "conditional", "pending", "odd"])
        if sort == "conditional" and scope.conditional:
            return _pick(draw, sorted(scope.conditional))
        if sort == "pending" and scope.pending:
            return _pick(draw, sorted(scope.pending))
        if sort == "odd":
            return _pick(draw, ["", "1"])
        return _pick(draw, GHOSTS)
    if not usable:
        return None
    name = _pick(draw, sorted(usable))
    if not path_only and _sometimes(draw, 15):  # a Jinja filter or blanks inside the braces: not the DSL's, but rendered
        return _pick(draw, [f" {name} ", f"{name} | length", f"{name} | upper"])
    return name + _path_into(draw, usable[name])


def _ref(draw: Any, scope: Scope, extra: dict[str, Any] | None = None, *, condition: Any = None) -> str:
    """A whole ``${}`` reference, or a plain word when there is nothing to refer to."""
    expr = _expression(draw, scope, extra, condition=condition)
    return "plain" if expr is None else "${" + expr + "}"


def _text(draw: Any, scope: Scope, extra: dict[str, Any] | None = None, *, condition: Any = None) -> str:
    """A string: plain, with references inside, a whole reference, or Jinja's own braces."""
    shape = _pick(draw, ["inside", "plain", "whole", "two", "jinja" if _sometimes(draw, 3) else "plain"])
    if shape == "plain":
        return _pick(draw, ["Hello", "", "The quarterly brief"])
    if shape == "inside":
        return f"Value: {_ref(draw, scope, extra, condition=condition)}"
    if shape == "two":
        return f"{_ref(draw, scope, extra, condition=condition)} and {_ref(draw, scope, extra, condition=condition)}"
    if shape == "whole":
        return _ref(draw, scope, extra, condition=condition)
    # `{{ }}` is not the DSL's syntax; the lowering turns `${}` into Jinja and renders the params
    return "Hello {{ " + _pick(draw, [*scope.settled(), "ghost"]) + " }}"


def _typed_ref(draw: Any, scope: Scope, wanted: tuple[type, ...]) -> str | None:
    """A whole reference to a name set on every path whose value has one of the ``wanted`` types."""
    def fits(v: Any) -> bool:
        return isinstance(v, bool) if bool in wanted and isinstance(v, bool) else \
            isinstance(v, wanted) and not isinstance(v, bool)
    names = [n for n in scope.settled() if fits(scope.values[n])]
    return "${" + _pick(draw, names) + "}" if names else None


def _param_value(draw: Any, sort: str, scope: Scope, extra: dict[str, Any], condition: Any) -> Any:
    """A value for a parameter of ``sort``: mostly right; sometimes a reference to a value of
    any type (an edge: its type is known only at run time), or, when wrong, a literal of another type."""
    if _wrong(draw, scope):
        return _pick(draw, [42, None, ["x"], {"x": 1}, True, "text", [], 0])
    if _sometimes(draw, 12):
        return _ref(draw, scope, extra, condition=condition)

    def text() -> str:
        return _text(draw, scope, extra, condition=condition)

    if sort == "str":
        return text()
    if sort == "level":
        return _pick(draw, ["info", "warning", "debug", "loud"])
    if sort == "num":
        return _pick(draw, [0, 0.01, -1]) if not _sometimes(draw, 4) else (_typed_ref(draw, scope, (int, float)) or 0)
    created = [f"${{{n}.document}}" for n in scope.settled() if isinstance(scope.values[n], dict) and "document" in scope.values[n]]
    if sort == "created":  # a document a step created, else one that does not exist
        return _pick(draw, created) if created else "doc-404"
    if sort == "doc":
        choice = _pick(draw, ["id", "fetched", "ref", "created", "missing"])
        if choice == "created" and created:
            return _pick(draw, created)
        if choice == "fetched" and "fetched" in extra:
            return "${fetched}"
        if choice == "ref":
            return _typed_ref(draw, scope, (dict, str)) or DOCUMENT
        return "doc-404" if choice == "missing" else DOCUMENT
    if sort == "docid":
        return _pick(draw, [DOCUMENT, "doc-404", _typed_ref(draw, scope, (str,)) or DOCUMENT])
    if sort == "obj":
        if draw(st.booleans()):
            return _typed_ref(draw, scope, (dict,)) or {}
        return {_pick(draw, ["name", "topic", "status"]): text() for _ in range(draw(st.integers(0, 2)))}
    if sort == "idata":  # the interaction's input: `topic` is required, `words` an integer
        data: dict[str, Any] = {}
        if not _sometimes(draw, 5):
            data["topic"] = text()
        if draw(st.booleans()):
            data["words"] = _typed_ref(draw, scope, (int,)) or 10 if not _sometimes(draw, 5) else "ten"
        return data
    if sort == "list":
        return _pick(draw, [["contract", "invoice"], _typed_ref(draw, scope, (list,)) or ["a"], []])
    if sort == "interaction":
        return INTERACTION if not _wrong(draw, scope) else _pick(draw, ["gen_wf_missing", "sys:nothing"])
    if sort == "prompt":  # Jinja over `data` (the activity's own template)
        return _pick(draw, ["Write a title.", "Write about {{ topic }}.", f"Write about {_ref(draw, scope)}."])
    if sort == "code":
        return _pick(draw, ["1 + 1", "x * 2", "return [x, 'a'];", "x.length", "`${x}`"]) \
            if not _wrong(draw, scope) else "({a: 1"
    if sort == "jsdata":
        return {"x": _typed_ref(draw, scope, (int, float, str, list)) or _pick(draw, [1, "s"])}
    if sort == "vector":
        emb = "${emb.embeddings}" if "emb" in scope.settled() else None
        return _pick(draw, [_typed_ref(draw, scope, (list,)) or [0.1, 0.2], emb or [0.5]])
    if sort == "limit":
        return _pick(draw, [1, 5, 50]) if not _wrong(draw, scope) else _pick(draw, [0, 51, "3"])
    if sort == "key":
        return _pick(draw, ["notes.md", "out/report.md", ""])
    return text() if draw(st.booleans()) else _literal(draw, _pick(draw, TYPES))


def _params(draw: Any, name: str, scope: Scope, extra: dict[str, Any], condition: Any) -> dict[str, Any]:
    params: dict[str, Any] = {}
    for pname, sort, required in PARAMS.get(name, [("message", "str", True)]):
        if (required and not _wrong(draw, scope)) or (not required and draw(st.booleans())):
            params[pname] = _param_value(draw, sort, scope, extra, condition)
    if _wrong(draw, scope):
        params["extra"] = "unexpected"
    return params


# --------------------------------------------------------------------------------------------
# step parts


OPERATORS = ("$eq", "$ne", "$gt", "$gte", "$lt", "$lte", "$in", "$nin", "$regexp")


def _condition(draw: Any, scope: Scope) -> dict[str, Any]:
    """A condition in one of the three shapes, over a path that is set (or, when wrong, not),
    compared with a value of the path's type or of another one; sometimes an earlier step's."""
    if scope.conditions and _sometimes(draw, 3):
        return _pick(draw, scope.conditions)
    path = _expression(draw, scope, path_only=True) if not _sometimes(draw, 6) else None
    if path is None:  # a condition may read what only a skipped step sets: it sees null
        path = _pick(draw, sorted(scope.conditional)) if scope.conditional else None
    if path is None:
        return {_pick(draw, ["$eq", "$ne"]): {_pick(draw, GHOSTS): None}} if _wrong(draw, scope) else {}
    op = _pick(draw, OPERATORS) if not _wrong(draw, scope) else "$like"
    if op in ("$in", "$nin"):
        value: Any = _pick(draw, [["contract", "report"], [1, 2, True], []]) if not _wrong(draw, scope) else "contract"
    elif op == "$regexp":
        value = _pick(draw, ["^Hello", "[a-z]+"]) if not _wrong(draw, scope) else _pick(draw, ["(unclosed", 3])
    elif _sometimes(draw, 5):
        value = _ref(draw, scope)
    else:
        value = _literal(draw, _pick(draw, TYPES))
    shape = _pick(draw, ["path-op", "op-path", "bare"])
    if shape == "path-op":
        return {path: {op: value}}
    if shape == "op-path":
        return {op: {path: value}}
    return {path: value}


def _fetch(draw: Any, scope: Scope) -> tuple[dict[str, Any], Any]:
    """A fetch spec and a representative of what it binds as ``fetched`` (``None``: maybe nothing)."""
    by = _pick(draw, ["id", "name", "text"])
    query: Any
    if by == "id":
        query = {"id": _pick(draw, [DOCUMENT, "doc-404", _typed_ref(draw, scope, (str,)) or DOCUMENT])}
    elif by == "name":
        query = {"name": _pick(draw, ["doc-1", "nothing.md"])}
    else:
        query = {"text": _pick(draw, ["brief", "zebra"])}
    if _wrong(draw, scope):
        query = _pick(draw, [{}, "doc-1"])
    spec: dict[str, Any] = {"type": "document", "query": query} if not _sometimes(draw, 5) else {"query": query}
    if _wrong(draw, scope):
        spec["type" if draw(st.booleans()) else "source"] = _pick(draw, ["object", "store"])
    if draw(st.booleans()):
        spec["select"] = _pick(draw, [["id", "name", "content"], ["id"], []]) if not _wrong(draw, scope) else "id"
    if draw(st.booleans()):
        spec["limit"] = _pick(draw, [1, 3]) if not _wrong(draw, scope) else _pick(draw, [0, "2"])
    if draw(st.booleans()):
        spec["on_not_found"] = _pick(draw, ["ignore", "throw"]) if not _wrong(draw, scope) else "skip"
    doc: dict[str, Any] = {"id": "d", "name": "n", "content": "c"}
    if spec.get("select") == ["id"]:
        doc = {"id": "d"}
    return spec, doc if by == "id" else [doc]


def _projection(draw: Any, scope: Scope, result: Any) -> dict[str, Any]:
    """``$include`` / ``$exclude`` of the result's fields (or others; dotted paths too)."""
    fields = sorted(result) if isinstance(result, dict) else []
    nested = [f"{k}.{j}" for k, v in (result.items() if isinstance(result, dict) else []) if isinstance(v, dict) for j in v]
    choices = [*fields, *nested, "name", "owner.email"]
    paths = draw(st.lists(st.sampled_from(choices), min_size=1, max_size=3, unique=True))
    if _wrong(draw, scope):
        return _pick(draw, [{}, {"$only": paths}, {"$include": ["a..b"]}])
    op = _pick(draw, ["$include", "$exclude", "both"])
    if op == "both":
        return {"$include": paths, "$exclude": paths[:1]}
    return {op: paths}


def _projected(value: Any, projection: dict[str, Any]) -> Any:
    """The representative result after ``$include`` of top-level fields (other shapes: as is)."""
    if isinstance(value, dict) and "$include" in projection:
        heads = {p.split(".")[0] for p in projection["$include"]}
        return {k: v for k, v in value.items() if k in heads}
    return value


# --------------------------------------------------------------------------------------------
# definitions


def _vars_and_inputs(draw: Any, scope: Scope) -> tuple[dict[str, Any], dict[str, Any] | None]:
    """``vars`` (literal and computed) and an ``input_schema``; both registered in ``scope``."""
    properties: dict[str, Any] = {}
    required: list[str] = []
    for name in draw(st.lists(st.sampled_from(NAMES), max_size=3, unique=True)):
        kind = _pick(draw, ["string", "integer", "number", "boolean", "array", "object"])
        prop: dict[str, Any] = {"type": kind}
        if kind == "array":
            prop["items"] = {"type": "string"}
        if kind == "object":
            prop["properties"] = {"kind": {"type": "string"}}
            if draw(st.booleans()):
                prop["required"] = ["kind"]
        if _wrong(draw, scope):
            prop = {"type": "strin"}  # a malformed schema
        properties[name] = prop
        if not draw(st.booleans()):
            required.append(name)
        scope.set(name, _literal(draw, kind) if kind != "object" else {"kind": "k"})
    input_schema: dict[str, Any] | None = None
    if properties or _sometimes(draw, 5):
        input_schema = {"type": "object", "properties": properties}
        if required:
            input_schema["required"] = required

    variables: dict[str, Any] = {}
    literal = [n for n in scope.values]  # inputs so far; computed vars may read them and literal vars
    for name in draw(st.lists(st.sampled_from(NAMES), max_size=4, unique=True)):
        if _sometimes(draw, 5) and (literal or scope.rate):  # computed from an input or a literal var
            target = _pick(draw, literal) if literal else "ghost"
            if _wrong(draw, scope):
                target = _pick(draw, [*GHOSTS, *variables])  # nothing, or another computed var
            variables[name] = _pick(draw, ["Doc ${" + target + "}", "${" + target + "}"])
            scope.set(name, scope.values.get(target) if variables[name].startswith("${") else "s")
        else:
            value = _literal(draw, _pick(draw, TYPES))
            variables[name] = value
            scope.set(name, value)
            literal.append(name)
    return variables, input_schema


def _child_step(draw: Any, scope: Scope, children: dict[str, dict[str, Any]], step: dict[str, Any]) -> Any:
    """Fill in a ``type: workflow`` step; returns what its ``output`` receives (the child's context)."""
    name = _pick(draw, sorted(children)) if children and not _wrong(draw, scope) else "gen_child_9"
    step["type"] = "workflow"
    step["name"] = name
    info = children.get(name)
    params: dict[str, Any] = {}
    for key, (value, required) in (info or {}).get("inputs", {}).items():
        if not required and draw(st.booleans()) or required and _wrong(draw, scope):
            continue
        if _wrong(draw, scope):
            params[key] = _literal(draw, _pick(draw, TYPES))
        else:
            # a reference to a value of the same type, else the literal
            same = _typed_ref(draw, scope, (type(value),)) if value is not None else None
            params[key] = same if same and draw(st.booleans()) else value
    if _sometimes(draw, 6):
        params[_pick(draw, NAMES)] = _ref(draw, scope)  # a param the child does not declare
    if params or draw(st.booleans()):
        step["params"] = params
    if _sometimes(draw, 3):
        step["async"] = True
    return dict(info["context"]) if info else None


def _steps(draw: Any, scope: Scope, children: dict[str, dict[str, Any]], *, child: bool) -> list[dict[str, Any]]:
    steps: list[dict[str, Any]] = []
    for _ in range(draw(st.integers(1, 3 if child else 6))):
        step: dict[str, Any] = {}
        condition = (_condition(draw, scope) or None) if _sometimes(draw, 4) else None
        result: Any
        if not child and _sometimes(draw, 4) and (children or _wrong(draw, scope)):
            result = _child_step(draw, scope, children, step)
        else:
            if _wrong(draw, scope):
                name = _pick(draw, WRONG_ACTIVITIES)
            else:
                name = _pick(draw, CHILD_ACTIVITIES if child else PARAMS)
            if draw(st.booleans()):
                step["type"] = "activity"
            step["name"] = name
            extra: dict[str, Any] = {}
            if not child and _sometimes(draw, 4) and (children or _wrong(draw, scope)):
                step["fetch"], extra["fetched"] = _fetch(draw, scope)
            params = _params(draw, name, scope, extra, condition)
            if params or draw(st.booleans()):
                step["params"] = params
            result = RESULTS.get(name)
            if _sometimes(draw, 5):
                step["projection"] = _projection(draw, scope, result)
                result = _projected(result, step["projection"])
        if _sometimes(draw, 5):
            step["id"] = f"step_{len(steps) + 1}" if not _wrong(draw, scope) else \
                _pick(draw, ["_vars", *[s["id"] for s in steps if "id" in s]])
        if _sometimes(draw, 6):
            step["title"] = f"Step {len(steps) + 1}"
        if _sometimes(draw, 6):
            names = [n for n in scope.settled() if n in scope.vars]
            if names and not _wrong(draw, scope):
                step["import"] = [_pick(draw, names)]
            elif _wrong(draw, scope):
                step["import"] = ["ghost"]
        if condition is not None:
            step["condition"] = condition
            scope.conditions.append(condition)
        if draw(st.booleans()):
            step["output"] = _pick(draw, ["out", "created", "summary", "emb", *NAMES])
            scope.set(step["output"], result, condition=condition, pending=bool(step.get("async")))
        steps.append(step)
    return steps


def _document(draw: Any, name: str, body: dict[str, Any]) -> tuple[str, str]:
    """(file name, text): YAML or JSON (the main file keeps its ``.yaml`` name: JSON is YAML),
    ``kind`` and ``name`` sometimes left out as the seed's examples do."""
    doc: dict[str, Any] = {}
    if not _sometimes(draw, 5):
        doc["kind"] = "workflow"
    if not _sometimes(draw, 5):  # else named after its file
        doc["name"] = name
    doc.update(body)
    if not draw(st.booleans()):
        return f"{name}.yaml", yaml.safe_dump(doc, sort_keys=False, allow_unicode=True)
    return f"{name}{'.yaml' if name == MAIN else '.json'}", json.dumps(doc, indent=2)


def _definition(draw: Any, name: str, scope: Scope, children: dict[str, dict[str, Any]], *,
                child: bool) -> tuple[str, str, dict[str, Any] | None]:
    """One workflow's file; returns (file name, text, input_schema)."""
    variables, input_schema = _vars_and_inputs(draw, scope)
    scope.vars = set(variables)
    if child and _wrong(draw, scope):
        steps = [{"type": "workflow", "name": MAIN}]  # a call cycle
    else:
        steps = _steps(draw, scope, children, child=child)
    body: dict[str, Any] = {}
    if _sometimes(draw, 3):
        body["description"] = "A generated workflow."
    if variables:
        body["vars"] = variables
    if input_schema is not None:
        body["input_schema"] = input_schema
    body["steps"] = steps
    fname, text = _document(draw, name, body)
    return fname, text, input_schema


@st.composite
def _workspace(draw: Any) -> dict[str, str]:
    # how often this workspace is wrong on purpose: never, or at one site in 25 or in 8
    rate = _pick(draw, [0, 25, 8])
    files: dict[str, str] = {}
    children: dict[str, dict[str, Any]] = {}
    for n in range(1, draw(st.integers(0, 2)) + 1):
        name = f"gen_child_{n}"
        scope = Scope(rate)
        fname, text, schema = _definition(draw, name, scope, {}, child=True)
        files[fname] = text
        props = (schema or {}).get("properties", {})
        required = set((schema or {}).get("required", []))
        children[name] = {"inputs": {k: (scope.values.get(k), k in required) for k in props},
                          "context": dict(scope.values)}
    scope = Scope(rate)
    fname, text, _ = _definition(draw, MAIN, scope, children, child=False)
    files[fname] = text
    if INTERACTION in text and not _wrong(draw, scope):
        files[f"{INTERACTION}.yaml"] = yaml.safe_dump(INTERACTION_TEXT, sort_keys=False)
    return files


def workflows() -> st.SearchStrategy[dict[str, str]]:
    """One workspace of workflow-DSL definitions: file name → text (see the module docstring)."""
    return _workspace()

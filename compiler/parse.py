"""Raw tree → frozen IR. Shape errors become findings located by the source map.

Pydantic does the validation; this module only decides the kind and translates pydantic's
errors into our codes, with hints that name the valid choices ("did you mean `transitions`?",
"valid types are ..."). To find the valid keys at an error's location we walk the IR classes
along the error path (following the ``type`` tag of node unions through the data).
"""

from __future__ import annotations

import types
import typing
from typing import Any

from pydantic import BaseModel, ValidationError
from pydantic_core import ErrorDetails

from compiler.errors import DocPath, Finding, choices_hint
from compiler.ir import KINDS, NODE_TYPES, IRModel

_TAGGED_UNIONS: dict[str, tuple[str, ...]] = {"type": NODE_TYPES}

#: Keys Ergon refuses where authors bring them from elsewhere — the seed's agent-template table,
#: the process document — with what Ergon uses instead: (IR class name, key) → (what the key is,
#: the hint). Still ``unknown-key`` errors: a setting nothing would read is never accepted.
_INSTEAD: dict[tuple[str, str], tuple[str, str]] = {
    ("TemplateDef", "input_type"): (
        "a template does not say where its input comes from",
        "`input_form` declares the input's shape; a run takes it from a submission of that form (`ergon run NAME "
        "--submission ID`, or a trigger `on_submission_created` / `on_submission_updated` naming the form) or from "
        "values given by hand (`ergon run NAME --input KEY=VALUE`, recorded as a submission); drop `input_type`"),
    ("TemplateDef", "is_active"): (
        "a definition has no on/off switch",
        "every definition in the folder can be run; to stop a template starting on its own, set `enabled: false` on "
        "its triggers or pause them (`ergon schedules pause NAME`); to retire it, move its file out of the "
        "definitions folder; drop `is_active`"),
    ("TemplateDef", "version"): (
        "Ergon numbers the versions of a definition itself",
        "`ergon publish NAME` records the draft as a new immutable version, `ergon versions NAME` lists them and "
        "`ergon run NAME --version N` runs one; drop `version`"),
    ("PipelineDef", "run_type"): (
        "a pipeline always runs programmatically",
        "supervision applies to processes: turn the pipeline into a process (its nodes routed with `transitions`) "
        "to run it supervised, or drop `run_type`"),
}


def detect_kind(data: dict) -> tuple[str | None, Finding | None]:
    """The definition kind: ``kind:``, a Vertesia process document by its ``format_version``, or
    a Vertesia workflow-DSL document by its ``steps`` (and no template ``input_form``)."""
    kind = data.get("kind")
    if kind is None:
        if "format_version" in data or "process" in data:
            return "process", None
        if isinstance(data.get("steps"), list) and "input_form" not in data:
            return "workflow", None  # a Vertesia workflow-DSL document, as the seed writes them
        return None, Finding(
            "unknown-kind", (), "the document has no `kind`",
            hint=f"add `kind:` with one of {', '.join(f'`{k}`' for k in KINDS)} "
            "(a process document may omit it and carry `format_version: 1`)",
        )
    if not isinstance(kind, str) or kind not in KINDS:
        shown = kind if isinstance(kind, str) else type(kind).__name__
        return None, Finding("unknown-kind", ("kind",), f"unknown kind `{shown}`", hint=choices_hint(str(shown), KINDS, what="kinds"))
    return kind, None


def parse_definition(data: dict) -> tuple[IRModel | None, list[Finding]]:
    """Validate raw data into the IR of its kind. Returns (definition or None, findings)."""
    kind, problem = detect_kind(data)
    if problem:
        return None, [problem]
    model = KINDS[kind]  # type: ignore[index]
    findings: list[Finding] = []
    if kind == "process" and data.get("format_version", 1) != 1:
        findings.append(
            Finding("format-version", ("format_version",), f"format_version {data.get('format_version')!r} is not supported",
                    hint="set `format_version: 1` (the only version of the process document)")
        )
    try:
        return model.model_validate(data), findings
    except ValidationError as exc:
        findings.extend(_translate(exc, model, data))
        return None, findings


def _translate(exc: ValidationError, model: type[BaseModel], data: Any) -> list[Finding]:
    out: list[Finding] = []
    seen: set[tuple[DocPath, str]] = set()
    for err in exc.errors(include_url=False):
        loc = _clean_loc(err["loc"], data, model)
        finding = _finding_for(err, loc, model, data)
        key = (finding.path, finding.code)
        if key in seen:  # union members often repeat the same complaint
            continue
        seen.add(key)
        out.append(finding)
    return out


def _clean_loc(loc: tuple, data: Any, model: type[BaseModel]) -> DocPath:
    """Drop pydantic's union-member segments (a tag such as ``'tool'``, a member such as
    ``'str'`` or ``'CollectSpec'``), which are not part of the document."""
    path: list[str | int] = []
    node = data
    for seg in loc:
        if isinstance(node, dict) and node.get("type") == seg and _at_tagged_union(model, data, tuple(path)):
            continue  # the tag comes first: a tool node also has a `tool:` field
        if isinstance(node, dict) and seg in node:
            path.append(seg)
            node = node[seg]
        elif isinstance(node, list) and isinstance(seg, int) and 0 <= seg < len(node):
            path.append(seg)
            node = node[seg]
        elif isinstance(node, dict) and node.get("type") == seg:
            continue  # the tag of a tagged union: the data's own `type`
        elif isinstance(seg, str) and _is_member_name(seg):
            continue
        elif isinstance(node, dict) and isinstance(seg, str):
            path.append(seg)  # a missing or extra key: keep it, the source map falls back to the parent
            node = None
        # else: a segment below a value that is not a container: nothing to point at
    return tuple(path)


def _declared_field(model: type[BaseModel], data: Any, path: DocPath) -> Any:
    """The model field that declares the value at ``path`` (for an item of a dict/list of nodes,
    the container's field); None when there is none."""
    if not path:
        return None
    parent = _model_at(model, data, path[:-1]) if not isinstance(path[-1], int) else None
    if parent is None:  # inside a dict/list of nodes: look at the container's declared items
        parent_path = path[:-1]
        container = _model_at(model, data, parent_path[:-1]) if parent_path else None
        return _field_by_name(container, parent_path[-1]) if container is not None and parent_path else None
    return _field_by_name(parent, path[-1])


def _at_tagged_union(model: type[BaseModel], data: Any, path: DocPath) -> bool:
    """Whether the value at ``path`` is declared as a union of models tagged by ``type``."""
    field = _declared_field(model, data, path)
    if field is None:
        return False
    members = [c for c in _flatten(_unwrap(field.annotation)) if isinstance(c, type) and issubclass(c, BaseModel)]
    return len(members) > 1 and all("type" in m.model_fields for m in members)


def _union_tags(model: type[BaseModel], data: Any, path: DocPath) -> list[str]:
    """The ``type`` values the tagged union at ``path`` accepts (empty when it is not one)."""
    field = _declared_field(model, data, path)
    if field is None:
        return []
    tags: list[str] = []
    for member in _flatten(_unwrap(field.annotation)):
        if isinstance(member, type) and issubclass(member, BaseModel) and "type" in member.model_fields:
            annotation = member.model_fields["type"].annotation
            if typing.get_origin(annotation) is typing.Literal:
                tags.extend(str(a) for a in typing.get_args(annotation))
    return sorted(set(tags))


def _flatten(candidates: list[Any]) -> list[Any]:
    out: list[Any] = []
    for c in candidates:
        out.extend(_flatten(c[1]) if isinstance(c, tuple) else [c])
    return out


_MEMBER_PREFIXES = ("str", "int", "float", "bool", "list[", "dict[", "function-", "json-or-python", "none",
                    "literal[", "tagged-union[", "nullable[", "union[", "lax-", "constrained-")


def _is_member_name(seg: str) -> bool:
    """Pydantic names union members by type (``str``, ``list[...]``) or by class (``CollectSpec``)."""
    return seg.startswith(_MEMBER_PREFIXES) or (seg[:1].isupper() and seg.isidentifier())


def _finding_for(err: ErrorDetails, loc: DocPath, model: type[BaseModel], data: Any) -> Finding:
    etype = err["type"]
    msg = err["msg"]
    where = loc[-1] if loc else None
    if etype == "extra_forbidden":
        owner = _model_at(model, data, loc[:-1])
        instead = _INSTEAD.get((owner.__name__ if owner is not None else "", str(where)))
        if instead is not None:
            return Finding("unknown-key", loc, f"unknown key `{where}`: {instead[0]}", hint=instead[1])
        allowed = _allowed_keys(model, data, loc[:-1])
        return Finding("unknown-key", loc, f"unknown key `{where}`", hint=choices_hint(str(where), allowed, what="valid keys") if allowed else None)
    if etype == "missing":
        if loc == ("format_version",):  # the process document's first line: say it as it is written
            return Finding("missing-field", loc, "missing required field `format_version`",
                           hint="add the line `format_version: 1` at the top (the only version of the process document)")
        return Finding("missing-field", loc, f"missing required field `{where}`", hint=_field_doc(model, data, loc))
    if etype in ("union_tag_invalid", "union_tag_not_found"):
        ctx = err.get("ctx", {})
        tag = ctx.get("tag", "")
        expected = [t.strip().strip("'") for t in str(ctx.get("expected_tags", "")).split(",") if t.strip()]
        if etype == "union_tag_not_found":
            # pydantic names the expected tags only when the tag is wrong, not when it is missing
            expected = expected or _union_tags(model, data, loc)
            hint = (f"add `type:`; valid types are {', '.join(f'`{t}`' for t in expected)}" if expected
                    else "add `type:`")
            return Finding("missing-field", (*loc, "type"), "missing `type`", hint=hint)
        return Finding("bad-value", (*loc, "type"), f"unknown type `{tag}`", hint=choices_hint(str(tag), expected, what="valid types"))
    if etype in ("literal_error", "enum"):
        expected = err.get("ctx", {}).get("expected", "")
        return Finding("bad-value", loc, f"{msg} (got {err.get('input')!r})", hint=f"valid values are {expected}")
    if etype in ("greater_than", "greater_than_equal", "less_than", "less_than_equal", "too_short", "too_long"):
        return Finding("bad-value", loc, msg)
    return Finding("wrong-type", loc, f"{msg} (got {_short(err.get('input'))})")


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def _unwrap(annotation: Any) -> list[Any]:
    """The concrete classes an annotation may hold (through Optional, list, dict, Annotated, Union)."""
    origin = typing.get_origin(annotation)
    if origin is typing.Annotated:
        return _unwrap(typing.get_args(annotation)[0])
    if origin in (typing.Union, types.UnionType):
        out: list[Any] = []
        for arg in typing.get_args(annotation):
            out.extend(_unwrap(arg))
        return out
    if origin in (list, tuple, set, frozenset):
        return [("list", _unwrap(typing.get_args(annotation)[0]))]
    if origin is dict:
        return [("dict", _unwrap(typing.get_args(annotation)[1]))]
    return [annotation]


def _model_at(model: type[BaseModel], data: Any, path: DocPath) -> type[BaseModel] | None:
    """The IR class describing the mapping at ``path`` (None when it is free-form)."""
    candidates: list[Any] = [model]
    node = data
    for seg in path:
        nxt: list[Any] = []
        for cand in candidates:
            if isinstance(cand, tuple):  # ("list"|"dict", inner)
                nxt.extend(cand[1])
            elif isinstance(cand, type) and issubclass(cand, BaseModel):
                field = _field_by_name(cand, seg)
                if field is not None:
                    nxt.extend(_unwrap(field.annotation))
        node = node.get(seg) if isinstance(node, dict) else (node[seg] if isinstance(node, list) and isinstance(seg, int) and seg < len(node) else None)
        candidates = _narrow(nxt, node)
    models = [c for c in candidates if isinstance(c, type) and issubclass(c, BaseModel)]
    return models[0] if models else None


def _narrow(candidates: list[Any], node: Any) -> list[Any]:
    """Pick the member of a tagged union that the data's `type` names."""
    models = [c for c in candidates if isinstance(c, type) and issubclass(c, BaseModel)]
    if isinstance(node, dict) and len(models) > 1 and "type" in node:
        for m in models:
            f = m.model_fields.get("type")
            if f is not None and node["type"] in typing.get_args(f.annotation):
                return [m]
    return candidates


def _field_by_name(model: type[BaseModel], name: Any) -> Any:
    for fname, field in model.model_fields.items():
        if name == (field.alias or fname):
            return field
    return None


def _allowed_keys(model: type[BaseModel], data: Any, path: DocPath) -> list[str]:
    target = _model_at(model, data, path)
    if target is None:
        return []
    return [field.alias or name for name, field in target.model_fields.items()]


def _field_doc(model: type[BaseModel], data: Any, loc: DocPath) -> str | None:
    target = _model_at(model, data, loc[:-1])
    if target is None:
        return None
    field = _field_by_name(target, loc[-1])
    if field is None or not field.description:
        return None
    return f"`{loc[-1]}`: {field.description}"

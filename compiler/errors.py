"""Diagnostics: what the compiler says about a definition, and where.

Every problem the compiler finds is a :class:`Diagnostic` with a stable code, the file, line and
column it points at, the path inside the document (``nodes.extract_terms.writes[2]``), a message
and, when there is a fix to suggest, a hint. Passes collect diagnostics; nothing stops at the
first error. The printed form is the one compilers and linters use so that editors and CI can
link to the place::

    definitions/contract_review.yaml:12:7: error[unknown-target] nodes.a.transitions[0].to: ...
      hint: did you mean `flag_clauses`?

User mistakes are diagnostics, never exceptions. :class:`CompileError` is raised only by the
convenience API (``compile_plan``) when a caller asks for a Plan of a definition that has errors.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Literal

Severity = Literal["error", "warning"]
PathSeg = str | int
DocPath = tuple[PathSeg, ...]

#: Every diagnostic code the compiler can emit, with what it means. Tests check that each code
#: has at least one golden fixture under ``tests/fixtures/invalid``; docs/reference/diagnostics.md lists them.
CODES: dict[str, str] = {
    # loading and structure
    "yaml-syntax": "the file is not valid YAML/JSON",
    "yaml-limit": "the file is beyond what the loader reads: too large, nested too deep, aliases that expand too far or form a cycle, a number too long",
    "duplicate-key": "a mapping has the same key twice",
    "not-a-mapping": "the document is not a mapping",
    "unknown-kind": "`kind` is missing or not one of the known kinds",
    "duplicate-name": "two definitions share a name",
    "unknown-key": "a key the schema does not know",
    "missing-field": "a required field is missing",
    "wrong-type": "a value has the wrong type",
    "bad-value": "a value is outside what is allowed",
    "format-version": "`format_version` is not 1",
    # graph shape
    "unknown-target": "a transition/branch target or `initial` names no node",
    "unreachable-node": "no path from `initial` reaches the node",
    "dead-end": "a non-final node has no way out",
    "final-has-exit": "a final node declares transitions",
    "condition-no-default": "a condition node has no `default: true` branch",
    "no-fallback": "a process node's exits all carry guards that are not proven to cover every case, so a run "
                   "where none holds fails (no transition matched); the fix is a last transition without "
                   "`guard`. Guards are proven complete when one negates another, or when they test one field "
                   "and hold on each of its values (an `enum`, a boolean, a required select of the node's task). "
                   "An error; a warning in a definition that declares supervision (`run_type: supervised` or "
                   "`metadata.supervisor`), whose supervisor is asked at such a node and may route the run",
    "unknown-need": "a pipeline `needs` names no node",
    "cycle": "a pipeline's `needs` form a cycle",
    "wrong-control": "a field of the other control style (transitions in a pipeline, needs in a process), or a "
                     "setting only a process acts on, in a pipeline (`metadata.supervisor`, `metadata.max_visits`, "
                     "`skippable`): pipelines are never supervised, and operator controls steer only a process",
    "agent-transition": "agent-triggered transitions used on a node that is not an agent",
    # authoring rules of the seed (processes/authoring, rules 1-16)
    "input-is-schema": "`node.input` holds a JSON-schema fragment instead of a template mapping",
    "document-field": "a document field in `context.schema` lacks `format` or `editor`",
    "undeclared-write": "a node writes context but does not declare the field in `writes`",
    "write-not-in-schema": "a `writes` entry is not a property of `context.schema`",
    "write-not-held": "a collected fan-out body writes a field neither `context.schema` nor its interaction's `result_schema` declares (the answer would lose it)",
    "role-assignee": "a human task `assignee` is not `group:<name>` or a user id",
    "assignee-without-choice": "a node sets `assignee` but has no `trigger: user` transition to ask about",
    "mixed-triggers": "a node's exits are picked both by an agent (`trigger: agent`) and a person (`trigger: user`)",
    "fanout-child": "a foreach/branch child is not a leaf body, or carries routing or a supervision setting "
                    "(`skippable`, `metadata.supervisor`): those act on the parent node",
    "foreach-limit": "a foreach limit is out of range",
    "fanout-retry": "a fan-out's `retry` or `task_runs` would not do what it says: a `retry` on a fan-out whose "
                    "items are task runs of their own, or `task_runs: node` with a `process` body",
    "set-context-envelope": "a `set_context` tool node does not pass `{updates: {...}}`",
    "skip-not-skippable": "`skip_node` is used on a node without `skippable: true`",
    "supervisor-policy": "`metadata.supervisor` or `metadata.max_visits` holds an unknown key, or a value of the wrong "
                         "type or out of range",
    "output-type": "a template's `output_type` cannot produce anything from its final steps",
    "control-tool": "an agent is given a process-control tool",
    "context-too-large": "`context.initial` is over the 64 KB cap",
    "bad-schema": "a JSON Schema in the definition is itself invalid",
    # references
    "unknown-interaction": "an interaction name that is not defined (nor a built-in `sys:` interaction)",
    "agent-only-interaction": "an interaction node names `sys:ProcessAgentNode`, the agent nodes' contract",
    "unused-agent-input": "an agent node sets `input` but uses the default interaction, which reads none",
    "unsupported-template": "`${…}` (JavaScript-template interpolation) in a Jinja2 prompt segment, which would reach the model as written; `content_type: jst` makes it JavaScript; or a Handlebars/JST segment without the JavaScript sandbox (`ergon[js]`) installed",
    "unknown-tool": "a tool name that is not registered",
    "agent-only-tool": "a tool node or a workflow activity names a tool only agents can run (the workstream tools)",
    "not-configured": "a definition uses a built-in that needs configuration the folder lacks (`send_email`: `tools/email.yaml`)",
    "unknown-process": "a sub-process name that is not defined",
    "process-cycle": "a definition runs itself through its sub-processes or child workflows (the runs would nest without end)",
    "tool-params": "a workflow step's params, or a tool node's `input`, do not match the parameters of the tool it calls",
    "dsl-unsupported": "a workflow-DSL feature or activity Ergon does not run (yet), or one whose optional package is not installed (`runJavascriptCode` without `ergon[js]`); the message says what to use",
    "not-enforced": "a limit Ergon would not keep (an environment model's `rpm`); the message says what to use",
    "unknown-form": "a form name that is not defined",
    "unknown-environment": "an environment name that is not defined",
    "broken-reference": "a definition this one's run loads (an interaction, a sub-process, an environment, a form), or one that loads in turn, has errors of its own",
    "unknown-field": "a reference to a field the context schema (or an interaction's input schema, or a `runJavascriptCode` step's `data`) does not have",
    # templates and guards
    "template-syntax": "a template does not parse: Jinja2, or a Handlebars or JST prompt segment",
    "code-syntax": "the JavaScript `code` of a `runJavascriptCode` workflow step does not parse",
    "guard-invalid": "a JSON Logic guard uses an unknown operator or a wrong argument count",
    "enum-value": "a guard compares an enum field with a value outside the enum",
    # data flow
    "maybe-unset": "a field is read where some path reaches the reader without setting it",
    "write-race": "two nodes that may run at the same time write the same field",
    "write-type": "a fixed value, or a person's answer, that a node writes does not fit the field's schema",
}


@dataclass(frozen=True, slots=True)
class Diagnostic:
    """One finding, located in a source file."""

    code: str
    message: str
    file: str
    line: int
    col: int
    path: str = ""
    hint: str | None = None
    severity: Severity = "error"

    def format(self) -> str:
        """The ``FILE:LINE:COL: error[CODE] PATH: MESSAGE`` form, plus a ``hint:`` line."""
        where = f"{self.path}: " if self.path else ""
        text = f"{self.file}:{self.line}:{self.col}: {self.severity}[{self.code}] {where}{self.message}"
        if self.hint:
            text += f"\n  hint: {self.hint}"
        return text

    def as_dict(self) -> dict:
        return {
            "code": self.code, "severity": self.severity, "file": self.file, "line": self.line,
            "col": self.col, "path": self.path, "message": self.message, "hint": self.hint,
        }


@dataclass(frozen=True, slots=True)
class Finding:
    """A diagnostic before it has a place: passes produce these, the driver locates them.

    ``path`` is the path inside the document; the driver turns it into file/line/column with the
    definition's source map, falling back to the nearest enclosing element that exists.
    """

    code: str
    path: DocPath
    message: str
    hint: str | None = None
    severity: Severity = "error"
    #: set when the location is known more precisely than the path (e.g. a line inside a template)
    line_offset: int | None = None
    col_override: int | None = None
    #: point at the mapping key that introduces ``path`` (``b:`` of an unreachable node) rather
    #: than at its value (the node's first field)
    at_key: bool = False

    def __post_init__(self) -> None:
        if self.code not in CODES:  # an internal invariant, not a user error
            raise AssertionError(f"diagnostic code {self.code!r} is not in CODES")


class ErgonError(Exception):
    """The root of every error Ergon reports to a person (the runtime's are in ``flows.errors``).

    It lives here, in the lowest layer, so that the compiler's own error is one of them too. The
    message of every subclass says what went wrong and what to do about it."""


class CompileError(ErgonError):
    """Raised by the convenience API when a caller asks for a Plan of an invalid definition."""

    def __init__(self, diagnostics: Sequence[Diagnostic]):
        self.diagnostics = list(diagnostics)
        super().__init__("\n".join(d.format() for d in self.diagnostics))


def format_path(path: Iterable[PathSeg]) -> str:
    """``("nodes", "a", "writes", 2)`` → ``nodes.a.writes[2]``."""
    out = ""
    for seg in path:
        if isinstance(seg, int):
            out += f"[{seg}]"
        else:
            out += f".{seg}" if out else str(seg)
    return out


def did_you_mean(word: str, choices: Iterable[str], *, prefix: str = "") -> str | None:
    """A ``did you mean `x`?`` hint when a close match exists, else None."""
    options = sorted(set(choices))
    close = difflib.get_close_matches(word, options, n=1, cutoff=0.6)
    if close:
        return f"{prefix}did you mean `{close[0]}`?"
    return None


def choices_hint(word: str, choices: Iterable[str], *, what: str = "valid values") -> str:
    """A did-you-mean hint if one fits, else the list of valid choices."""
    options = sorted(set(choices))
    return did_you_mean(word, options) or (
        f"{what} are: {', '.join(f'`{o}`' for o in options)}" if options else f"there are no {what}"
    )


@dataclass
class Report:
    """All diagnostics of one check, in file order."""

    diagnostics: list[Diagnostic] = field(default_factory=list)

    @property
    def errors(self) -> list[Diagnostic]:
        return [d for d in self.diagnostics if d.severity == "error"]

    @property
    def ok(self) -> bool:
        return not self.errors

    def sorted(self) -> list[Diagnostic]:
        return sorted(self.diagnostics, key=lambda d: (d.file, d.line, d.col, d.code))

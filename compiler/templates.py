"""Jinja2 for Ergon: the one module that knows how templates are parsed, analysed and rendered.

Prompts, task titles and ``input`` mappings are Jinja2 templates rendered against the run's
context. Both halves live here so that the checker and the runtime can never disagree:

* the **checker** asks :func:`syntax_error` and :func:`template_reads` (which context fields a
  template reads) and walks every template of a definition with :func:`iter_templates`;
* the **runtime** calls :func:`render` / :func:`render_value` with the same environment.

The environment is a :class:`~jinja2.sandbox.SandboxedEnvironment` (templates come from
definition authors, and the data they see comes from LLMs and users) with a
:class:`~jinja2.StrictUndefined`: a missing field is an error, never a silently empty string in
a prompt. One relaxation: a key or attribute missing from a value that *is* there is false in
a boolean test, so ``{% if doc.max_words %}`` and ``doc.max_words or 200`` work on a ``doc``
without the optional ``max_words`` (printing it, comparing it or a missing top-level name
still fail); the checker counts those tests as guards. Autoescape is off because the output is prompt text, not HTML.

Speed: a definition of 1,000 nodes has 1,000 prompts, and Jinja's lexer costs ~150 µs a
template. Most templates are plain ``{{ field }}`` substitutions, so :func:`analyse` recognises
those with one regular expression and only hands anything richer to Jinja. Results are cached by
text, so a template that appears in many nodes is analysed once.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime, timezone
from functools import lru_cache
from typing import Any

from jinja2 import StrictUndefined, TemplateSyntaxError, nodes
from jinja2.exceptions import TemplateError, TemplateRuntimeError, UndefinedError
from jinja2.runtime import Undefined
from jinja2.sandbox import SandboxedEnvironment, SecurityError
from jinja2.utils import missing

from compiler.errors import DocPath, did_you_mean
from compiler.walk import iter_definitions
from compiler.ir import (
    AgentNode,
    BranchNode,
    ForeachNode,
    HumanTaskNode,
    InteractionDef,
    InteractionNode,
    OnCompleteTrigger,
    PipelineDef,
    ProcessDef,
    ProcessNode,
    SubmissionTriggerBase,
    ToolNode,
)

__all__ = [
    "TemplateInfo", "analyse", "is_template", "iter_templates", "make_environment", "node_templates",
    "render", "render_value", "syntax_error", "template_reads", "template_required_reads",
]


class _Now:
    """The current UTC time as an ISO-8601 string, written ``{{ _now }}`` (as the seed's prompt
    pages do) or ``{{ _now() }}``: a bare ``_now`` would otherwise render the function itself."""

    def __call__(self) -> str:
        return datetime.now(timezone.utc).isoformat()

    def __str__(self) -> str:
        return self()

    __html__ = __str__


_now = _Now()


def _stringify(value: Any) -> str:
    """JSON text of a value, for putting structured context into a prompt."""
    return json.dumps(value, ensure_ascii=False, default=str)


class ErgonUndefined(StrictUndefined):
    """:class:`~jinja2.StrictUndefined`, but a missing key/attribute of an existing value is
    false in a boolean test (a missing top-level name still fails)."""

    __slots__ = ()

    def __bool__(self) -> bool:  # type: ignore[override]
        if self._undefined_obj is missing:
            self._fail_with_undefined_error()
        return False


#: The largest string or list a template may build while rendering (a prompt, a value). Jinja's
#: sandbox guards attribute access but not size: `'x' * 300000000` would allocate gigabytes.
MAX_VALUE_CHARS = 1_000_000
_TOO_LARGE = f"makes a value larger than the {MAX_VALUE_CHARS:,} characters a template may build"
_WIDTH = re.compile(r"%[-+ #0]*(\d+)|\{[^{}]*:[^{}]*?(\d+)[^{}]*\}")


def _widths_ok(text: str) -> bool:
    """No ``%N…`` or ``{:N}`` width in a format string pads past the cap."""
    return all(int(a or b) <= MAX_VALUE_CHARS for a, b in _WIDTH.findall(text))


class _BoundedSandbox(SandboxedEnvironment):
    """Jinja's sandbox, with the operators and filters that can inflate a value bounded."""

    intercepted_binops = frozenset({"*", "**", "%"})

    def call_binop(self, context: Any, operator: str, left: Any, right: Any) -> Any:
        if operator == "*":
            for seq, times in ((left, right), (right, left)):
                if isinstance(seq, (str, list, tuple)) and isinstance(times, int) and len(seq) * times > MAX_VALUE_CHARS:
                    raise SecurityError(f"`*` {_TOO_LARGE}")
        elif operator == "**" and isinstance(left, int) and isinstance(right, int) and abs(left) > 1 \
                and right * abs(left).bit_length() > MAX_VALUE_CHARS * 3:  # ~3.3 bits a digit
            raise SecurityError(f"`**` {_TOO_LARGE}")
        elif operator == "%" and isinstance(left, str) and not _widths_ok(left):
            raise SecurityError(f"`%` {_TOO_LARGE}")
        return super().call_binop(context, operator, left, right)

    def wrap_str_format(self, value: Any) -> Any:
        """``str.format`` / ``format_map`` bound to a format string whose widths stay under the cap."""
        wrapped = super().wrap_str_format(value)
        if wrapped is not None and isinstance(getattr(value, "__self__", None), str) and not _widths_ok(value.__self__):
            raise SecurityError(f"`format` {_TOO_LARGE}")
        return wrapped


def _bounded_filter(name: str, original: Any, size: Any) -> Any:
    """``original`` refusing arguments that make a value past the cap (``size(value, *args)``)."""

    def bounded(value: Any, *args: Any, **kwargs: Any) -> Any:
        if size(value, *args, **kwargs) > MAX_VALUE_CHARS:
            raise SecurityError(f"`{name}` {_TOO_LARGE}")
        return original(value, *args, **kwargs)

    return bounded


def _width_arg(args: tuple, kwargs: dict, default: int) -> int:
    width = kwargs.get("width", args[0] if args else default)
    return width if isinstance(width, int) else len(str(width))


def make_environment() -> SandboxedEnvironment:
    """The sandboxed Jinja2 environment every Ergon template is parsed and rendered with."""
    env = _BoundedSandbox(undefined=ErgonUndefined, autoescape=False, keep_trailing_newline=True)
    env.filters["center"] = _bounded_filter(
        "center", env.filters["center"], lambda v, *a, **k: _width_arg(a, k, 80))
    env.filters["indent"] = _bounded_filter(
        "indent", env.filters["indent"], lambda v, *a, **k: len(str(v)) + _width_arg(a, k, 4) * (str(v).count("\n") + 1))
    env.filters["format"] = _bounded_filter(
        "format", env.filters["format"], lambda v, *a, **k: 0 if _widths_ok(str(v)) else MAX_VALUE_CHARS + 1)
    env.filters["stringify"] = _stringify
    env.globals["stringify"] = _stringify
    env.globals["_now"] = _now
    # The runtime replaces this with the node's model string before rendering.
    env.globals["_model"] = None
    return env


_ENV = make_environment()
#: Names every template may use without reading the context (Jinja's own globals and ours).
GLOBAL_NAMES: frozenset[str] = frozenset(_ENV.globals)


def is_template(text: object) -> bool:
    """Whether a string contains Jinja markup (``{{``, ``{%`` or ``{#``)."""
    return isinstance(text, str) and ("{{" in text or "{%" in text or "{#" in text)


# --------------------------------------------------------------------------------------------
# Static analysis


@dataclass(frozen=True, slots=True)
class TemplateInfo:
    """What the checker needs to know about one template text."""

    #: ``(message, line in the template)`` when it does not parse, else None
    error: tuple[str, int] | None
    #: top-level context names the template reads
    reads: frozenset[str]
    #: the subset whose absence fails rendering (not guarded by ``| default`` or ``is defined``)
    required: frozenset[str]
    #: nested accesses ``(root, a, …, last)`` that fail when ``last`` is absent from the value at
    #: ``root.a.…`` (attribute or constant-key lookups not guarded by ``| default`` or
    #: ``is defined``); every prefix of a read path of two or more segments is listed on its own
    paths: frozenset[tuple[str, ...]] = frozenset()
    #: nested accesses through a constant index (``x.a[0].b`` is ``("x", "a", 0, "b")``), which
    #: ``paths`` cuts at the list; each access that ends past an index is listed on its own
    indexed: frozenset[tuple[str | int, ...]] = frozenset()


_EMPTY = TemplateInfo(None, frozenset(), frozenset())
_EXPR = re.compile(r"\{\{(.*?)\}\}", re.S)
# `name`, `name.attr[0]`, optionally one argument-less filter: the common shape of a placeholder.
_SIMPLE = re.compile(r"\s*([A-Za-z_][A-Za-z0-9_]*)(?:\.[A-Za-z_][A-Za-z0-9_]*|\[\d+\])*\s*(?:\|\s*([A-Za-z_][A-Za-z0-9_]*)\s*)?")
# Words the fast path must not take for variable names (Jinja keywords and constants).
_KEYWORDS = frozenset(
    "and or not in is if else elif endif for endfor true false none True False None set block "
    "macro call filter with import include extends from as recursive raw endraw".split()
)
_SEGMENT = re.compile(r"\.([A-Za-z_][A-Za-z0-9_]*)|\[(\d+)\]")
_DEFAULT_FILTERS = frozenset({"default", "d"})
_DEFINED_TESTS = frozenset({"defined", "undefined"})


@lru_cache(maxsize=16384)
def analyse(text: str) -> TemplateInfo:
    """Parse ``text`` once and report its syntax error or the names it reads (cached by text)."""
    if not is_template(text):
        return _EMPTY
    fast = _fast_analyse(text)
    if fast is not None:
        return fast
    try:
        ast = _ENV.parse(text)
    except TemplateSyntaxError as exc:
        return TemplateInfo((exc.message or str(exc), exc.lineno or 1), frozenset(), frozenset())
    except TemplateError as exc:  # pragma: no cover - parse raises only syntax errors
        return TemplateInfo((str(exc), 1), frozenset(), frozenset())
    problem = _unknown_filter_or_test(ast) or _literal_size_bomb(ast)
    if problem is not None:
        return TemplateInfo(problem, frozenset(), frozenset())
    walker = _Reads()
    walker.visit(ast, frozenset())
    declared = walker.stores | GLOBAL_NAMES
    paths = frozenset(p for p in walker.paths if p[0] not in declared)
    indexed = frozenset(p for p in walker.indexed if p[0] not in declared)
    return TemplateInfo(None, frozenset(walker.loads - declared), frozenset(walker.required - declared), paths, indexed)


def _fast_analyse(text: str) -> TemplateInfo | None:
    """Reads of a template made only of ``{{ name.path | filter }}`` placeholders, else None."""
    names: set[str] = set()
    paths: set[tuple[str, ...]] = set()
    indexed: set[tuple[str | int, ...]] = set()
    last = 0
    for m in _EXPR.finditer(text):
        between = text[last:m.start()]
        if "{%" in between or "{#" in between:
            return None
        simple = _SIMPLE.fullmatch(m.group(1))
        if simple is None:
            return None
        name, filt = simple.group(1), simple.group(2)
        if name in _KEYWORDS or (filt is not None and (filt in _DEFAULT_FILTERS or filt not in _ENV.filters)):
            return None
        names.add(name)
        path: tuple[str, ...] = (name,)
        steps: tuple[str | int, ...] = (name,)
        for seg in _SEGMENT.finditer(m.group(1), simple.end(1)):
            steps = (*steps, seg.group(1) if seg.group(1) is not None else int(seg.group(2)))
            if len(steps) > len(path) + 1 or seg.group(1) is None:
                indexed.add(steps)  # past an index: `paths` stops at the array
                continue
            path = (*path, seg.group(1))
            paths.add(path)
        last = m.end()
    tail = text[last:]
    if "{{" in tail or "{%" in tail or "{#" in tail:
        return None
    reads = frozenset(names - GLOBAL_NAMES)
    return TemplateInfo(None, reads, reads, frozenset(p for p in paths if p[0] not in GLOBAL_NAMES),
                        frozenset(p for p in indexed if p[0] not in GLOBAL_NAMES))


def _literal_size_bomb(ast: nodes.Template) -> tuple[str, int] | None:
    """``'x' * 300000000`` written with literals: refused when rendered, so refused at check."""
    for node in ast.find_all((nodes.Mul, nodes.Pow)):
        left, right = node.left, node.right
        if isinstance(left, (nodes.Const, nodes.List)) and isinstance(right, (nodes.Const, nodes.List)):
            try:
                _ENV.call_binop(None, "*" if isinstance(node, nodes.Mul) else "**",  # type: ignore[arg-type]
                                left.as_const() if isinstance(left, nodes.Const) else [None] * len(left.items),
                                right.as_const() if isinstance(right, nodes.Const) else [None] * len(right.items))
            except SecurityError as exc:
                return str(exc), node.lineno or 1
            except Exception:  # noqa: BLE001 - any other problem shows when it renders
                continue
    return None


def _unknown_filter_or_test(ast: nodes.Template) -> tuple[str, int] | None:
    """Jinja reports unknown filters/tests only when compiling (slow): check them on the AST."""
    for node in ast.find_all((nodes.Filter, nodes.Test)):
        table, what = (_ENV.filters, "filter") if isinstance(node, nodes.Filter) else (_ENV.tests, "test")
        if node.name not in table:
            hint = did_you_mean(node.name, table)
            message = f"no {what} named `{node.name}`" + (f" ({hint})" if hint else "")
            return message, node.lineno or 1
    return None


class _Reads:
    """Collects loaded and stored names of a template AST.

    Scoping is approximated on the safe side: a name assigned anywhere in the template (``set``,
    ``for`` targets, macro parameters) is not a context read. A load directly under
    ``| default(...)``, an ``is defined`` test, or inside ``{% if x is defined %}`` is a read that
    may be absent: it counts for "unknown field" but not for "may be unset". The same holds for
    nested accesses (``x.a.b``, ``x["a"]``), guarded by their dotted path: each access is recorded
    in ``paths`` unless guarded (``x.a.b | default(1)`` still needs ``x.a``). A nested access is
    also guarded where it is only truth-tested (an ``if`` test, the left of ``or``, under
    ``not``), and inside the ``if`` it made true.
    """

    def __init__(self) -> None:
        self.loads: set[str] = set()
        self.required: set[str] = set()
        self.stores: set[str] = set()
        self.paths: set[tuple[str, ...]] = set()
        self.indexed: set[tuple[str | int, ...]] = set()

    def visit(self, node: nodes.Node, guarded: frozenset[str]) -> None:
        if isinstance(node, (nodes.Getattr, nodes.Getitem)):
            path = access_path(node)
            if path is not None and ".".join(path) not in guarded:
                self.paths.add(path)
            elif path is None:
                steps = access_path(node, indexes=True)
                if steps is not None and shown_path(steps) not in guarded:
                    self.indexed.add(steps)
        if isinstance(node, nodes.Name):
            if node.ctx == "load":
                self.loads.add(node.name)
                if node.name not in guarded:
                    self.required.add(node.name)
            else:
                self.stores.add(node.name)
            return
        if isinstance(node, nodes.For):
            self.stores.add("loop")
        elif isinstance(node, (nodes.Macro, nodes.CallBlock)):
            self.stores.update(("caller", "varargs", "kwargs"))
            if isinstance(node, nodes.Macro):
                self.stores.add(node.name)
        if isinstance(node, (nodes.Filter, nodes.Test)) and node.node is not None:
            if (node.name in _DEFAULT_FILTERS if isinstance(node, nodes.Filter) else node.name in _DEFINED_TESTS):
                subject = access_path(node.node) if not isinstance(node.node, nodes.Name) else (node.node.name,)
                if subject is not None:
                    guarded = guarded | {".".join(subject)}
        if isinstance(node, nodes.Or):
            # `a or b`: `a` is truth-tested and returned only when true; `b` is the value otherwise
            self.visit(node.left, guarded | _tested_paths(node.left))
            self.visit(node.right, guarded)
            return
        if isinstance(node, nodes.And):
            # `a and b`: a false `a` is the value (an absent one fails when printed); `b` runs
            # only when `a` held (in a boolean test, the If above has guarded both sides)
            self.visit(node.left, guarded)
            self.visit(node.right, guarded | _defined_names(node.left))
            return
        if isinstance(node, nodes.Not):
            self.visit(node.node, guarded | _tested_paths(node.node))
            return
        if isinstance(node, (nodes.If, nodes.CondExpr)):
            self.visit(node.test, guarded | _tested_paths(node.test))
            inner = guarded | _defined_names(node.test)
            if isinstance(node, nodes.If):
                for child in node.body:
                    self.visit(child, inner)
                for child in [*node.elif_, *node.else_]:
                    self.visit(child, guarded)
            else:
                self.visit(node.expr1, inner)
                if node.expr2 is not None:
                    self.visit(node.expr2, guarded)
            return
        for child in node.iter_child_nodes():
            self.visit(child, guarded)


def access_path(node: nodes.Node, indexes: bool = False) -> tuple[Any, ...] | None:
    """``("x", "a", "b")`` for ``x.a.b`` / ``x["a"].b`` on a loaded name, else None (computed keys,
    calls; constant indexes too, unless ``indexes``: ``x.a[0]`` is then ``("x", "a", 0)``)."""
    segments: list[str | int] = []
    while True:
        if isinstance(node, nodes.Getattr):
            segments.append(node.attr)
            node = node.node
        elif isinstance(node, nodes.Getitem) and isinstance(node.arg, nodes.Const) and isinstance(node.arg.value, str):
            segments.append(node.arg.value)
            node = node.node
        elif (indexes and isinstance(node, nodes.Getitem) and isinstance(node.arg, nodes.Const)
              and type(node.arg.value) is int):
            segments.append(node.arg.value)
            node = node.node
        elif isinstance(node, nodes.Name) and node.ctx == "load" and segments:
            return (node.name, *reversed(segments))
        else:
            return None


def shown_path(steps: tuple[str | int, ...]) -> str:
    """``x.a[0].b`` for ``("x", "a", 0, "b")``."""
    return "".join(f"[{step}]" if isinstance(step, int) else f".{step}" if i else step for i, step in enumerate(steps))


def _tested_paths(test: nodes.Node) -> frozenset[str]:
    """Nested accesses ``test`` only truth-tests (an absent key is false there, not an error)."""
    if isinstance(test, (nodes.Getattr, nodes.Getitem)):
        path = access_path(test)
        return frozenset({".".join(path)}) if path is not None else frozenset()
    if isinstance(test, nodes.Not):
        return _tested_paths(test.node)
    if isinstance(test, (nodes.And, nodes.Or)):
        return _tested_paths(test.left) | _tested_paths(test.right)
    return frozenset()


def _defined_names(test: nodes.Node) -> frozenset[str]:
    """Names (dotted paths) that ``test`` proves defined when true: ``x is defined``,
    ``x.a is defined``, a truthy ``x.a`` (and conjunctions of them)."""
    if isinstance(test, nodes.Test) and test.name == "defined":
        subject = (test.node.name,) if isinstance(test.node, nodes.Name) else access_path(test.node)
        if subject is not None:
            return frozenset({".".join(subject)})
    if isinstance(test, (nodes.Getattr, nodes.Getitem)):
        return _tested_paths(test)
    if isinstance(test, nodes.And):
        return _defined_names(test.left) | _defined_names(test.right)
    return frozenset()


def syntax_error(text: str) -> tuple[str, int] | None:
    """``(message, line within the template)`` if ``text`` does not parse, else None."""
    return analyse(text).error


def template_reads(text: str) -> set[str]:
    """Top-level names a template reads from the context (Jinja globals excluded)."""
    return set(analyse(text).reads)


def template_required_reads(text: str) -> set[str]:
    """Names whose absence makes rendering fail (reads not guarded by ``default``/``defined``)."""
    return set(analyse(text).required)


# --------------------------------------------------------------------------------------------
# Where templates are in a definition

TemplateSite = tuple[DocPath, str, frozenset[str]]


def _values(value: Any, path: DocPath, scope: frozenset[str]) -> Iterator[TemplateSite]:
    """Every template string inside an ``input``-like value (dicts and lists, recursively)."""
    if isinstance(value, str):
        if is_template(value):
            yield path, value, scope
    elif isinstance(value, Mapping):
        for key, item in value.items():
            yield from _values(item, (*path, key), scope)
    elif isinstance(value, list):
        for i, item in enumerate(value):
            yield from _values(item, (*path, i), scope)


def node_templates(node: Any, path: DocPath, scope: frozenset[str] = frozenset()) -> Iterator[TemplateSite]:
    """Templates a node renders against *its own definition's* context, with extra names in scope.

    Covers agent prompts, ``input`` mappings of tool/interaction/agent/process nodes and tool
    nodes' ``config.context_update``, human-task
    titles and descriptions, and for ``foreach``/``branch`` their children (a foreach child and
    its ``item_id`` also see the ``as`` name). Inline ``process_definition`` bodies render
    against the child's context, so they are not included (:func:`iter_templates` walks them).
    ``config.context_update`` values are rendered too (a fixed value holding ``{{ }}``).
    """
    if isinstance(node, AgentNode) and node.prompt is not None and is_template(node.prompt):
        yield (*path, "prompt"), node.prompt, scope
    if isinstance(node, (ToolNode, InteractionNode, AgentNode, ProcessNode)) and node.input:
        yield from _values(node.input, (*path, "input"), scope)
    if isinstance(node, ToolNode) and node.config is not None and node.config.context_update:
        # rendered over the context before it is applied (flows/runtime/bodies/tool.py)
        yield from _values(node.config.context_update, (*path, "config", "context_update"), scope)
    if isinstance(node, HumanTaskNode):
        if is_template(node.task.title):
            yield (*path, "task", "title"), node.task.title, scope
        if node.task.description is not None and is_template(node.task.description):
            yield (*path, "task", "description"), node.task.description, scope
    if isinstance(node, ForeachNode):
        inner = scope | {node.as_}
        if node.item_id is not None and is_template(node.item_id):
            yield (*path, "item_id"), node.item_id, inner
        yield from node_templates(node.node, (*path, "node"), inner)
    if isinstance(node, BranchNode):
        for i, arm in enumerate(node.branches):
            yield from node_templates(arm.node, (*path, "branches", i, "node"), scope)


def iter_templates(defn: Any, path: DocPath = ()) -> Iterator[TemplateSite]:
    """Every template string of a definition, with the extra names in scope where it renders.

    Processes and pipelines: every node's templates (:func:`node_templates`), inline child
    processes recursively, and on-complete and submission triggers' ``map``. Interactions: each prompt
    segment's template. Other kinds have no Jinja templates (workflows use ``${}``).
    """
    if isinstance(defn, (ProcessDef, PipelineDef)):
        for graph, graph_path in iter_definitions(defn, path):
            for nid, node in graph.nodes.items():
                yield from node_templates(node, (*graph_path, "nodes", nid))
            for i, trigger in enumerate(graph.triggers):
                if isinstance(trigger, (OnCompleteTrigger, SubmissionTriggerBase)):
                    yield from _values(trigger.map, (*graph_path, "triggers", i, "map"), frozenset())
    elif isinstance(defn, InteractionDef):
        for i, segment in enumerate(defn.prompts):
            # other template languages are refused as such (compiler.passes.lowered_kinds), not parsed as Jinja2
            if segment.content_type == "jinja" and is_template(segment.template):
                yield (*path, "prompts", i, "template"), segment.template, frozenset()


# --------------------------------------------------------------------------------------------
# Rendering (used by the runtime)

# A value that is exactly one expression: rendered to its native value, not to text.
_SINGLE = re.compile(r"\{\{((?:(?!\{\{|\}\}).)*)\}\}", re.S)


@lru_cache(maxsize=4096)
def _compiled(text: str):
    return _ENV.from_string(text)


@lru_cache(maxsize=4096)
def _compiled_expression(expr: str):
    return _ENV.compile_expression(expr, undefined_to_none=False)


def render(template_text: str, data: Mapping[str, Any]) -> str:
    """Render a template against ``data``; a missing name raises :class:`jinja2.UndefinedError`,
    a filter or operation that fails on the value it is given (``None | length``) a
    :class:`jinja2.TemplateRuntimeError` naming the template."""
    if not is_template(template_text):
        return template_text
    with _failing_on_values(template_text):
        return _compiled(template_text).render(dict(data))


@contextmanager
def _failing_on_values(text: str) -> Iterator[None]:
    """A Python error raised while evaluating a template (a filter given a value it cannot take)
    as the template error it is, so that the run reports the template, not an internal fault."""
    try:
        yield
    except TemplateError:
        raise
    except (TypeError, ValueError, ArithmeticError, LookupError, AttributeError) as exc:
        raise TemplateRuntimeError(f"`{text}` fails on the value it is given: {type(exc).__name__}: {exc}") from exc


def render_value(value: Any, data: Mapping[str, Any]) -> Any:
    """Render every string inside ``value`` (dicts and lists recursively).

    A string that is exactly one ``{{ expr }}`` yields the expression's native value, so
    ``"{{invoice}}"`` passes a dict through and ``"{{total}}"`` stays a number.
    """
    if isinstance(value, str):
        single = _SINGLE.fullmatch(value)
        if single is not None and "{%" not in value and "{#" not in value:
            with _failing_on_values(value):
                result = _compiled_expression(single.group(1).strip())(**dict(data))
            if isinstance(result, Undefined):
                result._fail_with_undefined_error()  # StrictUndefined: raises UndefinedError
            return result
        return render(value, data)
    if isinstance(value, Mapping):
        return {key: render_value(item, data) for key, item in value.items()}
    if isinstance(value, list):
        return [render_value(item, data) for item in value]
    return value


# Re-exported for the runtime's error handling.
RenderError = (TemplateError, UndefinedError)

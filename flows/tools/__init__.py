"""The tool registry: Python functions decorated with :func:`tool`, looked up by name.

A tool is a plain (sync or async) function with type hints; its JSON Schema comes from the
hints and the docstring (pydantic; per-argument descriptions from a Google ``Args:`` section or
Sphinx ``:param x:`` lines), so agents and `tool` nodes call it with validated arguments.
``definitions/tools/*.py`` files are imported by :func:`load_tool_folder`; the compiler finds
the same names statically (``compiler.tools``) without importing anything. HTTP tool servers
(``definitions/tools/servers.yaml``, :mod:`flows.tools.remote`) register into the same
:data:`REGISTRY`.

Tools are called through :func:`flows.tools.invoke.invoke`, which validates, records and wraps
errors; ``ToolSpec.fn`` is the bare callable.
"""

from __future__ import annotations

import hashlib
import importlib.util
import inspect
import re
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from pydantic import ConfigDict, TypeAdapter, validate_call
from typing_extensions import NotRequired, Required, TypedDict


@dataclass(frozen=True)
class ToolSpec:
    """A registered tool: its name, description, argument schema and the callable.

    ``validate`` (optional) checks and coerces an argument dict, raising
    ``pydantic.ValidationError``; without it, :func:`flows.tools.invoke.invoke` checks the
    arguments against ``parameters`` with JSON Schema. ``source`` says where the tool comes
    from: ``python`` (a decorated function) or ``remote:<server>`` (an HTTP tool server).
    """

    name: str
    description: str
    parameters: dict[str, Any]
    fn: Callable[..., Any]
    is_async: bool
    validate: Callable[[dict[str, Any]], dict[str, Any]] | None = None
    source: str = "python"


REGISTRY: dict[str, ToolSpec] = {}


def _signature(fn: Callable[..., Any]) -> inspect.Signature:
    # Tool modules usually use `from __future__ import annotations`: resolve the strings here, in
    # the function's own globals, rather than leaving pydantic to guess.
    try:
        return inspect.signature(fn, eval_str=True)
    except Exception:  # a name only imported under TYPE_CHECKING: fall back to the strings
        return inspect.signature(fn)


_SPHINX_PARAM = re.compile(r"^\s*:param\s+(?:\S+\s+)?(\w+):\s*(.+)$")
_GOOGLE_ARG = re.compile(r"^\s{2,}(\w+)(?:\s*\([^)]*\))?:\s*(.+)$")


def _param_docs(doc: str | None) -> dict[str, str]:
    """Per-argument descriptions from a docstring (Google ``Args:`` or Sphinx ``:param x:``)."""
    docs: dict[str, str] = {}
    in_args = False
    for line in inspect.cleandoc(doc or "").splitlines():
        if m := _SPHINX_PARAM.match(line):
            docs[m.group(1)] = m.group(2).strip()
            continue
        stripped = line.strip()
        if stripped in ("Args:", "Arguments:", "Parameters:"):
            in_args = True
            continue
        if in_args:
            if stripped and not line.startswith((" ", "\t")):
                in_args = False  # the next section
            elif m := _GOOGLE_ARG.match(line):
                docs[m.group(1)] = m.group(2).strip()
    return docs


def _parameters_schema(fn: Callable[..., Any]) -> dict[str, Any]:
    props: dict[str, Any] = {}
    required: list[str] = []
    docs = _param_docs(fn.__doc__)
    for pname, param in _signature(fn).parameters.items():
        if param.kind in (param.VAR_POSITIONAL, param.VAR_KEYWORD):
            continue
        ann = param.annotation if param.annotation is not inspect.Parameter.empty else Any
        props[pname] = TypeAdapter(ann).json_schema()
        if pname in docs:
            props[pname].setdefault("description", docs[pname])
        if param.default is inspect.Parameter.empty:
            required.append(pname)
        else:
            props[pname].setdefault("default", param.default)
    return {"type": "object", "properties": props, "required": required, "additionalProperties": False}


def _arguments_validator(fn: Callable[..., Any]) -> Callable[[dict[str, Any]], dict[str, Any]]:
    """Check and coerce an argument dict against ``fn``'s signature (pydantic, lax mode).

    A TypedDict rather than a model: argument names such as ``json`` or ``schema`` would clash
    with BaseModel's attributes. Defaults are left to the call itself.
    """
    fields: dict[str, Any] = {}
    extra: Literal["allow", "forbid"] = "forbid"
    for pname, param in _signature(fn).parameters.items():
        if param.kind is param.VAR_KEYWORD:
            extra = "allow"
            continue
        if param.kind is param.VAR_POSITIONAL:
            continue
        ann = param.annotation if param.annotation is not inspect.Parameter.empty else Any
        fields[pname] = Required[ann] if param.default is inspect.Parameter.empty else NotRequired[ann]
    args_type = TypedDict(f"{fn.__name__}_arguments", fields)  # type: ignore[misc]
    args_type.__pydantic_config__ = ConfigDict(extra=extra, arbitrary_types_allowed=True)  # type: ignore[attr-defined]
    adapter = TypeAdapter(args_type)

    def validate(args: dict[str, Any]) -> dict[str, Any]:
        return dict(adapter.validate_python(args))

    return validate


def _safe_validator(f: Callable[..., Any]) -> Callable[[dict[str, Any]], dict[str, Any]] | None:
    # An annotation pydantic cannot build a validator for leaves the check to JSON Schema (and
    # validate_call): registering the tool must not fail where it used to succeed.
    try:
        return _arguments_validator(f)
    except Exception:  # noqa: BLE001
        return None


def tool(fn: Callable[..., Any] | None = None, *, name: str | None = None, description: str | None = None):
    """Register ``fn`` as a tool (usable bare, ``@tool``, or with options, ``@tool(name=...)``)."""

    def register(f: Callable[..., Any]) -> Callable[..., Any]:
        spec = ToolSpec(
            name=name or f.__name__,
            description=description or inspect.cleandoc(f.__doc__ or f.__name__).split("\n\n")[0],
            parameters=_parameters_schema(f),
            fn=validate_call(f),
            is_async=inspect.iscoroutinefunction(f),
            validate=_safe_validator(f),
        )
        REGISTRY[spec.name] = spec
        return f

    return register(fn) if fn is not None else register


def load_tool_folder(folder: str | Path) -> list[str]:
    """Import every ``*.py`` of ``folder`` (registering its tools); returns the new tool names.

    A ``servers.yaml`` beside them is read too, but its tool servers are only asked for their
    tools when one of their tools is first needed (:mod:`flows.tools.remote`): a server that is
    down must not stop runs that never use it.
    """
    before = set(REGISTRY)
    if (Path(folder) / "servers.yaml").is_file():
        from flows.tools import remote

        remote.configure(folder)
    if (Path(folder) / "email.yaml").is_file():  # send_email and task emails read it (flows.email)
        from flows.email import config as email_config

        email_config.configure(folder)
    for path in sorted(Path(folder).glob("*.py")):
        # The module name includes a digest of the path: two folders may both have `examples.py`.
        digest = hashlib.sha1(str(path.resolve()).encode()).hexdigest()[:10]
        mod_name = f"ergon_user_tools.{path.stem}_{digest}"
        if mod_name in sys.modules:
            continue
        spec = importlib.util.spec_from_file_location(mod_name, path)
        if spec is None or spec.loader is None:
            continue
        module = importlib.util.module_from_spec(spec)
        sys.modules[mod_name] = module
        spec.loader.exec_module(module)
    return sorted(set(REGISTRY) - before)

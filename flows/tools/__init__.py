"""The tool registry: Python functions decorated with :func:`tool`, looked up by name.

A tool is a plain (sync or async) function with type hints; its JSON Schema comes from the
hints and the docstring (pydantic), so agents and `tool` nodes call it with validated
arguments. ``definitions/tools/*.py`` files are imported by :func:`load_tool_folder`; the
compiler finds the same names statically (``compiler.tools``) without importing anything.
"""

from __future__ import annotations

import hashlib
import importlib.util
import inspect
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import TypeAdapter, validate_call


@dataclass(frozen=True)
class ToolSpec:
    """A registered tool: its name, description, argument schema and the callable."""

    name: str
    description: str
    parameters: dict[str, Any]
    fn: Callable[..., Any]
    is_async: bool


REGISTRY: dict[str, ToolSpec] = {}


def _parameters_schema(fn: Callable[..., Any]) -> dict[str, Any]:
    props: dict[str, Any] = {}
    required: list[str] = []
    for pname, param in inspect.signature(fn).parameters.items():
        if param.kind in (param.VAR_POSITIONAL, param.VAR_KEYWORD):
            continue
        ann = param.annotation if param.annotation is not inspect.Parameter.empty else Any
        props[pname] = TypeAdapter(ann).json_schema()
        if param.default is inspect.Parameter.empty:
            required.append(pname)
        else:
            props[pname].setdefault("default", param.default)
    return {"type": "object", "properties": props, "required": required, "additionalProperties": False}


def tool(fn: Callable[..., Any] | None = None, *, name: str | None = None, description: str | None = None):
    """Register ``fn`` as a tool (usable bare, ``@tool``, or with options, ``@tool(name=...)``)."""

    def register(f: Callable[..., Any]) -> Callable[..., Any]:
        spec = ToolSpec(
            name=name or f.__name__,
            description=description or inspect.cleandoc(f.__doc__ or f.__name__).split("\n\n")[0],
            parameters=_parameters_schema(f),
            fn=validate_call(f),
            is_async=inspect.iscoroutinefunction(f),
        )
        REGISTRY[spec.name] = spec
        return f

    return register(fn) if fn is not None else register


def load_tool_folder(folder: str | Path) -> list[str]:
    """Import every ``*.py`` of ``folder`` (registering its tools); returns the new tool names."""
    before = set(REGISTRY)
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

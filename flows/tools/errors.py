"""Tool errors: one class for "the call was refused or failed", one for "the tool itself raised".

:class:`ToolError` covers what Ergon refuses (unknown tool, arguments that do not match the
schema, a private address for ``http_request``, a tool server's error answer). It names the tool.

:class:`ToolFailed` wraps an exception raised by a tool's own code. Retry policies select errors
by class name (``retry_on: [TimeoutError]``, checked over the exception's MRO in
``flows.prefect.executor``), so the wrapper must not hide the original type: :func:`wrap_failure` builds,
once per original class, a subclass of *both* ToolFailed and that class, named like it. The
result is a ToolError (callers catch one thing) and ``isinstance(err, TimeoutError)`` still
holds. The original is kept as ``__cause__`` and ``.original``. When the two classes cannot be
combined (C layout conflicts), the wrapper is a plain ToolFailed subclass with the original's
name, which is what the retry check reads.
"""

from __future__ import annotations

from typing import Any

from flows.errors import ErgonError


class ToolError(ErgonError):
    """A tool call Ergon refused or that failed; ``tool`` names the tool."""

    def __init__(self, tool: str, message: str):
        # Exception.__init__ directly: in wrap_failure's combined classes, super() would reach the
        # original class's __init__, whose signature is unknown.
        Exception.__init__(self, f"tool `{tool}`: {message}")
        self.tool = tool
        self.message = message

    def __str__(self) -> str:  # KeyError and friends would otherwise repr() their argument
        return f"tool `{self.tool}`: {self.message}"

    def __reduce__(self) -> Any:
        return (_rebuild_error, (type(self), self.tool, self.message))


class UnknownTool(ToolError, LookupError):
    """No tool of that name is registered (nor offered by a configured tool server)."""


class ToolArgumentError(ToolError, ValueError):
    """The arguments do not match the tool's schema; ``field`` is the first offending argument."""

    def __init__(self, tool: str, message: str, field: str | None = None):
        super().__init__(tool, message)
        self.field = field

    def __reduce__(self) -> Any:
        return (type(self), (self.tool, self.message, self.field))


class ToolFailed(ToolError):
    """The tool's own code raised ``original`` (also the ``__cause__``)."""

    original: BaseException

    def __reduce__(self) -> Any:
        # Combined classes are made at run time and are not importable: rebuild them on unpickle
        # (Prefect may serialise a task's exception).
        return (wrap_failure, (self.tool, self.original))


def _rebuild_error(cls: type[ToolError], tool: str, message: str) -> ToolError:
    return cls(tool, message)


_WRAPPERS: dict[type[BaseException], type[ToolFailed]] = {}


def _wrapper_for(cls: type[BaseException]) -> type[ToolFailed]:
    wrapper = _WRAPPERS.get(cls)
    if wrapper is None:
        attrs = {"__module__": __name__, "__qualname__": f"ToolFailed[{cls.__qualname__}]"}
        try:
            wrapper = type(cls.__name__, (ToolFailed, cls), attrs)
        except TypeError:  # layout conflict or a final class: keep at least the name
            wrapper = type(cls.__name__, (ToolFailed,), attrs)
        _WRAPPERS[cls] = wrapper
    return wrapper


def wrap_failure(tool: str, exc: BaseException) -> ToolFailed:
    """A :class:`ToolFailed` for ``exc`` that is also an instance of ``type(exc)`` when possible."""
    if isinstance(exc, ToolFailed):
        return exc
    cls = _wrapper_for(type(exc))
    try:
        err = cls.__new__(cls)
    except TypeError:  # an exotic __new__ that insists on arguments
        cls = _WRAPPERS[type(exc)] = type(type(exc).__name__, (ToolFailed,), {"__module__": __name__})
        err = cls.__new__(cls)
    ToolError.__init__(err, tool, f"{type(exc).__name__}: {exc}")
    err.original = exc
    err.__cause__ = exc
    return err

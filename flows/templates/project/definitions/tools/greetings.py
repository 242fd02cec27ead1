"""Python tools of this project: every `@tool` function here can be called by name from a
`tool` node, a workflow `activity` or an agent. Arguments are validated against the type hints;
the docstring's `Args:` lines describe them to agents."""

from __future__ import annotations

from flows.tools import tool


@tool
def greet(name: str, excited: bool = False) -> dict:
    """Say hello to someone.

    Args:
        name: Who to greet.
        excited: End with an exclamation mark instead of a full stop.

    Returns ``{"greeting": str}``.
    """
    return {"greeting": f"Hello, {name}{'!' if excited else '.'}"}

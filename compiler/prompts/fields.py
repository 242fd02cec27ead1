"""The fields of an interaction's input, as the prompt checks of every format see them."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True, slots=True)
class Unknown:
    """A field a template reads that the schema of its context does not declare."""

    name: str
    line: int | None  # None: not known (the checker finds the name in the text)
    column: int | None  # 0-based
    declared: tuple[str, ...]  # the fields that context does declare
    nested: bool = False  # read inside a block that changes the context (`#each`, `#with`)


def declared_fields(schema: Mapping[str, Any] | None) -> dict[str, Any] | None:
    """The ``properties`` of an input schema, or None when it declares none (any field allowed)."""
    props = schema.get("properties") if isinstance(schema, Mapping) else None
    return props if isinstance(props, dict) and props else None

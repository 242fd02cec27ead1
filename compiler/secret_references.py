"""Secret references: where a key or token is kept, written in a definition instead of the value.

A model environment's ``api_key`` and an HTTP tool server's header values name the place a
value is read from when it is used, never the value itself:

* ``secret:NAME`` — an Ergon encrypted secret (``ergon secrets set NAME``);
* ``env:VAR`` — an environment variable of the process that runs the node;
* ``prefect-secret:NAME`` — a Prefect Secret block (``prefect block create secret``);
* ``prefect-var:NAME`` — a Prefect Variable (``prefect variable set NAME VALUE``).

The two Prefect forms follow Prefect's own name rules (``prefect/types/names.py``): a block
document name holds lowercase letters, digits and dashes; a variable name lowercase letters,
digits, underscores and dashes, at most 255 characters. Prefect refuses to create anything else,
so a reference breaking them could never resolve. The names of ``secret:`` and ``env:`` need only
be there.

Pure data: ``ergon check`` reports a :func:`problem` as a diagnostic (the ``environments``
pass), and the runtime (:func:`flows.secrets.resolve_reference`) refuses a malformed reference
with the same words before looking anything up.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

__all__ = ["KINDS", "Problem", "Reference", "parse", "problem"]

#: Reference kinds → what the name after the colon names.
KINDS: dict[str, str] = {
    "secret": "Ergon secret",
    "env": "environment variable",
    "prefect-secret": "Prefect Secret block",
    "prefect-var": "Prefect Variable",
}

#: Prefect's ``BlockDocumentName`` and ``VariableName`` rules.
_BLOCK_NAME = re.compile(r"^[a-z0-9-]+$")
_VARIABLE_NAME = re.compile(r"^[a-z0-9_-]+$")
MAX_VARIABLE_NAME_LENGTH = 255

#: How a missing value of each kind is made (hints name it).
CREATE: dict[str, str] = {
    "secret": "ergon secrets set NAME",
    "env": "export VAR=...",
    "prefect-secret": "prefect block create secret",
    "prefect-var": "prefect variable set NAME VALUE",
}


@dataclass(frozen=True)
class Reference:
    """``KIND:NAME`` as written (the name without surrounding blanks)."""

    kind: str
    name: str

    def __str__(self) -> str:
        return f"{self.kind}:{self.name}"


@dataclass(frozen=True)
class Problem:
    """Why a reference cannot resolve, and what to write instead."""

    message: str
    hint: str


def parse(value: str) -> Reference | None:
    """The reference ``value`` is, or None when it is not one (no known ``KIND:`` prefix: a literal)."""
    kind, colon, name = value.partition(":")
    if not colon or kind not in KINDS:
        return None
    return Reference(kind, name.strip())


def _suggestion(name: str, allowed: str, separator: str) -> str:
    """``name`` made to fit a Prefect name rule: lowercased, other characters turned into ``separator``."""
    return re.sub(f"[^{allowed}]+", separator, name.lower()).strip("-_")


def problem(ref: Reference) -> Problem | None:
    """What is wrong with ``ref``'s name, or None when it can resolve (if the value exists)."""
    if not ref.name:
        example = {"secret": "OPENAI_API_KEY", "env": "OPENAI_API_KEY", "prefect-secret": "openai-api-key",
                   "prefect-var": "openai_api_key"}[ref.kind]
        return Problem(f"`{ref.kind}:` names no {KINDS[ref.kind]}",
                       f"write its name after the colon, e.g. `{ref.kind}:{example}` (made with `{CREATE[ref.kind]}`)")
    if ref.kind == "prefect-secret" and not _BLOCK_NAME.match(ref.name):
        fixed = _suggestion(ref.name, "a-z0-9-", "-")
        return Problem(f"`{ref}` is not a Prefect block name: block names hold lowercase letters, digits and "
                       f"dashes only",
                       (f"did you mean `prefect-secret:{fixed}`? " if fixed else "")
                       + "Prefect refuses any other name for a Secret block (`prefect block create secret`)")
    if ref.kind == "prefect-var":
        if not _VARIABLE_NAME.match(ref.name):
            fixed = _suggestion(ref.name, "a-z0-9_-", "_")
            return Problem(f"`{ref}` is not a Prefect variable name: variable names hold lowercase letters, "
                           f"digits, underscores and dashes only",
                           (f"did you mean `prefect-var:{fixed}`? " if fixed else "")
                           + "Prefect refuses any other name for a variable (`prefect variable set NAME VALUE`)")
        if len(ref.name) > MAX_VARIABLE_NAME_LENGTH:
            return Problem(f"`prefect-var:` names a variable of {len(ref.name)} characters; Prefect allows "
                           f"{MAX_VARIABLE_NAME_LENGTH}",
                           "use a shorter name (`prefect variable set NAME VALUE`)")
    return None

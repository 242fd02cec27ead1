"""`ergon publish|versions|diff|revert`: published versions of definitions.

The draft is the definition's file; see :mod:`flows.versions` for the rules.
"""

from __future__ import annotations

import json
import sys
from typing import Annotated

from cyclopts import Parameter
from rich.console import Console
from rich.markup import escape

from flows.cli import bounds
from flows.cli.acting import Who
from flows.cli.output import error

out = Console(highlight=False, soft_wrap=True)
err = Console(stderr=True, highlight=False, soft_wrap=True)


def publish(
    name: str,
    *,
    comment: Annotated[str | None, Parameter(name=["--comment", "-m"])] = None,
    strict: Annotated[bool, Parameter(name="--strict", negative=())] = False,
    who: Who = Who(),
) -> int:
    """Publish a definition's draft (its file) as an immutable new version, recorded as published
    by the user you act as (--as, --token).

    Refused when the definition has errors; a no-op when it equals the latest version. Warns,
    naming them, about paused runs the change breaks.

    Parameters
    ----------
    name
        The definition's name.
    comment
        What changed, kept with the version.
    strict
        Refuse to publish when the change breaks paused runs.
    """
    from flows import versions
    from flows.catalog import DefinitionNotFound
    from flows.cli.acting import resolved

    me = resolved(who)
    if isinstance(me, int):
        return me
    try:
        result = versions.publish(name, comment=comment, published_by=me.name, strict=strict)
    except DefinitionNotFound as exc:
        return error(exc.args[0])
    except versions.PublishRefused as exc:
        for d in exc.diagnostics:
            print(d.format(), file=sys.stderr)
        for b in exc.breaks:
            err.print(f"  [red]breaks[/] {escape(b.line())}")
        return error(exc, code=1)
    row = result.version
    if not result.created:
        out.print(f"`{name}` is unchanged since version {row.version} ({row.content_hash[:12]}): nothing published")
        return 0
    for b in result.breaks:
        err.print(f"[yellow]warning:[/] {escape(b.line())}")
    if result.breaks:
        err.print(f"[yellow]warning:[/] {len(result.breaks)} paused run(s) started on an earlier version do not fit "
                  f"version {row.version}; they keep running on their own version")
    out.print(f"published [bold]{name}[/] version [bold]{row.version}[/] ({row.content_hash[:12]})"
              + (f": {escape(comment)}" if comment else ""))
    return 0


def versions_(name: str, *, json_: Annotated[bool, Parameter(name="--json")] = False) -> int:
    """List the published versions of a definition, and whether the draft differs from the latest.

    Parameters
    ----------
    name
        The definition's name.
    json_
        Print JSON.
    """
    from rich.table import Table

    from flows import versions
    from flows.catalog import DefinitionNotFound

    rows = versions.history(name)
    try:
        draft = versions.draft_info(name)
    except DefinitionNotFound:
        draft = None
    if draft is None and not rows:
        return error(f"no definition named `{name}` (no draft file, no published version)")
    latest = rows[0] if rows else None
    if draft is None:
        state = "no draft file"
    elif latest is None:
        state = "never published"
    elif draft.content_hash == latest.content_hash:
        state = f"same as version {latest.version}"
    else:
        state = f"differs from version {latest.version}"
        older = next((r.version for r in rows if r.content_hash == draft.content_hash), None)
        if older is not None:
            state += f" (same as version {older})"
    data = [{"version": r.version, "hash": r.content_hash[:12], "comment": r.comment, "published_by": r.published_by,
             "published_at": r.created_at.isoformat()} for r in rows]
    if json_:
        print(json.dumps({"definition": name, "versions": data, "draft": state,
                          "draft_hash": draft.content_hash[:12] if draft else None}))
        return 0
    table = Table("version", "hash", "comment", "by", "published")
    for r in data:
        table.add_row(str(r["version"]), r["hash"], r["comment"] or "", r["published_by"] or "", r["published_at"][:19])
    out.print(table)
    out.print(f"draft: {state}" + (f" ({draft.content_hash[:12]})" if draft and state.startswith("differs") else ""))
    return 0


def _ref(text: str):
    """A version reference (:func:`flows.versions.parse_ref`) whose number is in range
    (:data:`flows.cli.bounds.MAX_VERSION`): a larger one cannot be stored, so it names none."""
    from flows import versions

    ref = versions.parse_ref(text)
    if isinstance(ref, int) and ref > bounds.MAX_VERSION:
        shown = text if len(text) <= 24 else text[:20] + "…"
        raise ValueError(f"`{shown}` is not a version: numbers go from 1 to {bounds.MAX_VERSION}")
    return ref


def diff(name: str, v1: str, v2: str = "draft", *, json_: Annotated[bool, Parameter(name="--json")] = False) -> int:
    """Show what changed between two versions: nodes, their fields, context fields, transitions.

    Parameters
    ----------
    name
        The definition's name.
    v1
        A version number, `latest` or `draft`.
    v2
        A version number, `latest` or `draft` (default: draft).
    json_
        Print the diff as JSON.
    """
    from flows import versions
    from flows.catalog import DefinitionNotFound
    from flows.versions.diff import render

    try:
        a, b = _ref(v1), _ref(v2)
        result, title = versions.structural_diff(name, a, b)
    except (ValueError, LookupError) as exc:
        return error(exc.args[0] if isinstance(exc, DefinitionNotFound) else str(exc))
    if json_:
        print(json.dumps({"title": title, **result.to_json()}, default=str))
    else:
        print(render(result, title))
    return 0


def revert(name: str, version: str) -> int:
    """Write a published version's exact text back into the draft file (no new version is made).

    Parameters
    ----------
    name
        The definition's name.
    version
        The version number to bring back.
    """
    from flows import versions

    try:
        ref = _ref(version)
        if not isinstance(ref, int):
            return error("revert takes a version number (e.g. `ergon revert NAME 2`)")
        written, removed = versions.revert(name, ref)
    except (ValueError, LookupError) as exc:
        return error(str(exc))
    out.print(f"draft of [bold]{name}[/] is now version {ref}'s text: {escape(str(written))}"
              + (f" (removed {escape(str(removed))})" if removed else ""))
    out.print(f"[dim]publish it again with `ergon publish {name}` to make it the latest version[/]")
    return 0

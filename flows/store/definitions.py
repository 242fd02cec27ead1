"""Definitions (name, kind, editable draft), their published versions and the snapshots runs execute.

A snapshot is a definition's content stored once under its :func:`content_hash`; runs point at
the snapshot they started with, whatever happens to the draft later. Versions are immutable and
numbered 1, 2, … per definition; publishing takes a row lock on the definition, so two
publishers cannot hand out the same number.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

from sqlalchemy.exc import IntegrityError
from sqlmodel import Session, col, func, select

from flows.store._common import add_row, get_row, require_row
from flows.store.db import session
from flows.store.models import Definition, DefinitionSnapshot, DefinitionVersion, utcnow


def content_hash(content: Any) -> str:
    """sha256 of the canonical JSON of ``content`` (sorted keys, no spaces): the snapshot id."""
    canonical = json.dumps(content, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(canonical.encode()).hexdigest()


# --- snapshots ---------------------------------------------------------------------------------


def snapshot_definition(content: Any) -> str:
    """Store ``content`` once under its hash (see :func:`content_hash`) and return the hash."""
    digest = content_hash(content)
    with session() as s:
        if s.get(DefinitionSnapshot, digest) is not None:
            return digest
    try:
        add_row(DefinitionSnapshot(hash=digest, content=content))
    except IntegrityError:
        pass  # another writer stored the same content first: same hash, same content
    return digest


def get_snapshot(digest: str) -> Any | None:
    """The content stored under ``digest``, or None."""
    row = get_row(DefinitionSnapshot, digest)
    return None if row is None else row.content


# --- definitions and their drafts --------------------------------------------------------------


def save_draft(name: str, kind: str, content: Any) -> Definition:
    """Create the definition or replace its draft."""
    now = utcnow()
    with session(write=True) as s:
        row = s.get(Definition, name, with_for_update=True)
        if row is None:
            row = Definition(name=name, kind=kind, created_at=now)
        row.kind, row.draft_content, row.draft_hash, row.updated_at = kind, content, content_hash(content), now
        s.add(row)
    return row


def get_definition(name: str) -> Definition | None:
    return get_row(Definition, name)


def list_definitions() -> list[Definition]:
    with session() as s:
        return list(s.exec(select(Definition).order_by(col(Definition.name))).all())


# --- published versions ------------------------------------------------------------------------


def _versions_of(name: str):
    """Versions of ``name``, newest first (the one query behind every "which version" question)."""
    q = select(DefinitionVersion).where(DefinitionVersion.definition_name == name)
    return q.order_by(col(DefinitionVersion.version).desc())


def _latest_version(s: Session, name: str) -> DefinitionVersion | None:
    return s.exec(_versions_of(name).limit(1)).first()


def publish_definition(
    name: str, *, content: Any = None, comment: str | None = None, published_by: str | None = None
) -> DefinitionVersion:
    """Publish ``content`` (default: the current draft) as the next version (1, 2, …)."""
    with session(write=True) as s:
        definition = require_row(s, Definition, name, lock=True)
        content = definition.draft_content if content is None else content
        latest = s.exec(
            select(func.max(DefinitionVersion.version)).where(DefinitionVersion.definition_name == name)
        ).one()
        digest = content_hash(content)
        if s.get(DefinitionSnapshot, digest) is None:
            s.add(DefinitionSnapshot(hash=digest, content=content))
        row = DefinitionVersion(
            definition_name=name, version=(latest or 0) + 1, content=content, content_hash=digest,
            comment=comment, published_by=published_by,
        )
        s.add(row)
    return row


def publish_version(
    name: str, kind: str, *, content: Any, source: str | None, source_file: str | None,
    comment: str | None = None, published_by: str | None = None,
) -> tuple[DefinitionVersion, bool]:
    """Publish ``content`` (and the exact ``source`` text it was parsed from) as the next version
    of ``name``, creating the definition row if needed and making the content its draft.

    Returns ``(version, created)``: when the latest version already has this content nothing is
    written and that version comes back with ``created=False``. The check and the insert share
    one write transaction, so two concurrent publishes of the same text make one version.
    """
    digest = content_hash(content)
    now = utcnow()
    with session(write=True) as s:
        definition = s.get(Definition, name, with_for_update=True)
        if definition is None:
            definition = Definition(name=name, kind=kind, created_at=now)
        latest = _latest_version(s, name)
        if latest is not None and latest.content_hash == digest:
            return latest, False
        definition.kind, definition.draft_content, definition.draft_hash, definition.updated_at = kind, content, digest, now
        s.add(definition)
        if s.get(DefinitionSnapshot, digest) is None:
            s.add(DefinitionSnapshot(hash=digest, content=content))
        row = DefinitionVersion(
            definition_name=name, version=(latest.version if latest else 0) + 1, content=content,
            content_hash=digest, source=source, source_file=source_file, comment=comment,
            published_by=published_by, created_at=now,
        )
        s.add(row)
    return row, True


def list_versions(name: str) -> list[DefinitionVersion]:
    """Published versions of ``name``, newest first."""
    with session() as s:
        return list(s.exec(_versions_of(name)).all())


def get_version(name: str, version: int | None = None) -> DefinitionVersion | None:
    """Version ``version`` of ``name``, or the latest when ``version`` is None."""
    with session() as s:
        if version is None:
            return _latest_version(s, name)
        return s.exec(_versions_of(name).where(DefinitionVersion.version == version).limit(1)).first()

"""Published versions of definitions: drafts, immutable versions, revert, pinning.

The **draft** of a definition is its file in the definitions folder — what ``ergon check`` and
``ergon run`` read, what an editor changes. **Publishing** stores the draft as version N+1 in
the store: the exact source text (comments, key order, YAML or JSON), the parsed content and
its hash. Versions never change; ``revert`` copies one back into the draft file (it makes no
version — publish again to do that). A run records the snapshot it executes (``content_hash``)
and, when that content is a published version, its number (``definition_version``).

Rules, and why:

* a definition with compile errors is not published (a version must be runnable — deployments
  start it unattended);
* publishing content identical to the latest version (same parsed content, whatever the
  formatting) is a no-op with a message, so versions stay meaningful;
* publishing warns about paused runs the change breaks (:mod:`flows.versions.breaking`);
  ``strict`` refuses instead.

Public API: :func:`publish`, :func:`history`, :func:`content_for`, :func:`structural_diff`,
:func:`revert`, :func:`compiled_version`, :func:`resolve_for_deployment` (deployments call it),
:func:`version_of_content`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from compiler import CompileError, Diagnostic
from compiler.errors import did_you_mean
from compiler.plan import RUNNABLE_KINDS
from flows.catalog import Catalog, Compiled, DefinitionNotFound
from flows.errors import DefinitionError
from flows.versions.breaking import Break, breaking_runs
from flows.versions.diff import StructuralDiff, diff_contents, diff_plans

__all__ = [
    "Break", "DraftInfo", "PublishRefused", "PublishResult", "StructuralDiff", "VersionNotFound", "VersionedCompiled",
    "compiled_version", "content_for", "draft_info", "history", "publish", "resolve_for_deployment", "revert",
    "structural_diff", "version_of_content",
]


class VersionNotFound(DefinitionError, LookupError):
    """The definition has no published version of that number (or none at all)."""


class PublishRefused(DefinitionError):
    """Publishing was refused: compile errors, or breaking changes under ``strict``."""

    def __init__(self, message: str, *, diagnostics: list[Diagnostic] | None = None,
                 breaks: list[Break] | None = None) -> None:
        super().__init__(message)
        self.diagnostics = diagnostics or []
        self.breaks = breaks or []


@dataclass
class PublishResult:
    version: Any  # the DefinitionVersion row (new, or the latest when nothing changed)
    created: bool
    breaks: list[Break] = field(default_factory=list)


@dataclass
class DraftInfo:
    """The draft file of a definition as the folder has it now."""

    name: str
    kind: str | None
    file: Path
    source: str
    content: dict[str, Any]
    content_hash: str


@dataclass
class VersionedCompiled(Compiled):
    """A compiled published version: the Plan and content plus the version number."""

    version: int = 0


def _hash(content: Any) -> str:
    from flows.store import definitions as definition_store

    return definition_store.content_hash(content)


def _store():
    from flows.store import db
    from flows.store import definitions as definition_store

    db.init_db()
    return definition_store


def _draft_unit(catalog: Catalog, name: str):
    named = {u.name: u for u in catalog.ws.units if u.name and u.reported}
    if name in named:
        return named[name]
    hint = did_you_mean(name, named)
    raise DefinitionNotFound(f"no definition named `{name}` in the definitions folder" + (f"; {hint}" if hint else ""))


def draft_info(name: str, catalog: Catalog | None = None) -> DraftInfo:
    """The draft of ``name``: its file, exact text and parsed content."""
    catalog = catalog or Catalog.load()
    unit = _draft_unit(catalog, name)
    file = Path(unit.file)
    content = unit.data or {}
    return DraftInfo(name, unit.kind, file, file.read_text(encoding="utf-8"), content, _hash(content))


def _relative(file: Path) -> str:
    from flows.settings import definitions_dir

    try:
        return file.resolve().relative_to(definitions_dir().resolve()).as_posix()
    except ValueError:
        return file.name


def publish(name: str, *, comment: str | None = None, published_by: str | None = None, strict: bool = False,
            catalog: Catalog | None = None) -> PublishResult:
    """Publish the draft of ``name`` as its next version (see the module docstring for the rules)."""
    catalog = catalog or Catalog.load()
    unit = _draft_unit(catalog, name)
    errors = catalog.diagnostics(unit)
    if errors:
        raise PublishRefused(f"`{name}` has {len(errors)} error(s); fix them (see `ergon check`) and publish again",
                             diagnostics=errors)
    draft = draft_info(name, catalog)
    definition_store = _store()
    latest = definition_store.get_version(name)
    if latest is not None and latest.content_hash == draft.content_hash:
        return PublishResult(latest, False)
    breaks: list[Break] = []
    if unit.kind in RUNNABLE_KINDS:
        try:
            plan = catalog.compile(name).plan
        except CompileError as exc:
            raise PublishRefused(f"`{name}` does not compile", diagnostics=list(exc.diagnostics)) from None
        breaks = breaking_runs(name, plan, draft.content_hash, catalog=catalog)
        if breaks and strict:
            raise PublishRefused(f"not published: the change breaks {len(breaks)} paused run(s) (--strict)",
                                 breaks=breaks)
    row, created = definition_store.publish_version(name, unit.kind or "unknown", content=draft.content,
                                                    source=draft.source, source_file=_relative(draft.file),
                                                    comment=comment, published_by=published_by)
    return PublishResult(row, created, breaks if created else [])


def history(name: str) -> list[Any]:
    """Published versions of ``name``, newest first."""
    return _store().list_versions(name)


def _version_row(name: str, version: int | None):
    row = _store().get_version(name, version)
    if row is None:
        versions = [v.version for v in _store().list_versions(name)]
        if not versions:
            raise VersionNotFound(f"`{name}` has no published version; publish it with `ergon publish {name}`")
        raise VersionNotFound(f"`{name}` has no version {version}; its versions are "
                              f"{', '.join(str(v) for v in sorted(versions))}")
    return row


VersionRef = int | Literal["draft", "latest"]


def parse_ref(text: str) -> VersionRef:
    """``3``, ``v3``, ``draft`` or ``latest`` → a version reference (ValueError otherwise)."""
    t = text.strip().lower()
    if t in ("draft", "latest"):
        return t  # type: ignore[return-value]
    t = t.removeprefix("v")
    if t.isdigit() and int(t) > 0:
        return int(t)
    raise ValueError(f"`{text}` is not a version: use a number (3 or v3), `latest` or `draft`")


def content_for(name: str, ref: VersionRef, catalog: Catalog | None = None) -> tuple[dict[str, Any], str]:
    """(content, label) of version ``ref`` of ``name`` (``draft`` = the file in the folder)."""
    if ref == "draft":
        return draft_info(name, catalog).content, "draft"
    row = _version_row(name, None if ref == "latest" else int(ref))
    return row.content, f"v{row.version}"


def structural_diff(name: str, a: VersionRef, b: VersionRef, catalog: Catalog | None = None) -> tuple[StructuralDiff, str]:
    """The diff from ``a`` to ``b`` and its title line."""
    catalog = catalog or Catalog.load()
    old, old_label = content_for(name, a, catalog)
    new, new_label = content_for(name, b, catalog)
    title = f"{name}: {old_label} → {new_label}"
    kind = next((u.kind for u in catalog.ws.units if u.name == name), None) or old.get("kind")
    if kind in RUNNABLE_KINDS or "process" in old:
        try:
            old_plan = catalog.compile_content(name, old, label=f".{old_label}").plan
            new_plan = catalog.compile_content(name, new, label=f".{new_label}").plan
            return diff_plans(old_plan, new_plan), title
        except Exception as exc:  # noqa: BLE001 - a side that does not build is still worth comparing
            return diff_contents(old, new, note=f"compared as data: {exc}".splitlines()[0]), title
    return diff_contents(old, new), title


def revert(name: str, version: int, catalog: Catalog | None = None) -> tuple[Path, Path | None]:
    """Write version ``version``'s exact source text into the draft file; returns (file written,
    file removed). The current draft file is overwritten when it has the same format (YAML or
    JSON); otherwise the version's own file name is written and the old draft file removed, so
    the folder never holds the definition twice."""
    from flows.settings import definitions_dir

    row = _version_row(name, version)
    if row.source is None:
        raise VersionNotFound(f"version {version} of `{name}` was stored without its source text; it cannot be reverted")
    catalog = catalog or Catalog.load()
    try:
        current: Path | None = Path(_draft_unit(catalog, name).file)
    except DefinitionNotFound:
        current = None
    target = definitions_dir() / (row.source_file or f"{name}.yaml")

    def fmt(p: Path) -> str:
        return "json" if p.suffix == ".json" else "yaml"

    removed = None
    if current is not None and fmt(current) == fmt(target):
        target = current
    elif current is not None:
        removed = current
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(row.source, encoding="utf-8")
    if removed is not None and removed.resolve() != target.resolve():
        removed.unlink()
    return target, removed


def compiled_version(name: str, version: int | Literal["latest"], catalog: Catalog | None = None) -> VersionedCompiled:
    """Compile published version ``version`` (or the latest) of ``name``; references to other
    definitions resolve against the folder, as for any run."""
    catalog = catalog or Catalog.load()
    row = _version_row(name, None if version == "latest" else int(version))
    compiled = catalog.compile_content(name, row.content, label=f"@v{row.version}")
    return VersionedCompiled(plan=compiled.plan, content=compiled.content, unit=compiled.unit, version=row.version)


def resolve_for_deployment(name: str, version: int | Literal["latest"] = "latest", *,
                           catalog: Catalog | None = None) -> VersionedCompiled:
    """What a deployment runs: published version ``version`` of ``name`` (``"latest"``: the newest
    at the moment the run starts). Raises :class:`VersionNotFound` when there is none.

    The result is a :class:`~flows.catalog.Compiled` (``plan``, ``content``, ``unit``) plus
    ``version``, the number to record as the run's ``definition_version``. ``catalog`` (default:
    the definitions folder) resolves the version's references to other definitions.
    """
    return compiled_version(name, version, catalog)


def version_of_content(name: str, content_hash: str) -> int | None:
    """The published version of ``name`` whose content has this hash (None: never published)."""
    for row in _store().list_versions(name):
        if row.content_hash == content_hash:
            return row.version
    return None

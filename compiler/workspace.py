"""A workspace: every definition in a folder, loaded and parsed, with the tools it can see.

References between definitions (sub-processes, interactions, forms, environments) are resolved
within a workspace, and names are unique across it. When the user checks a single file, the
folder around it is loaded too (as context for references) but only the requested files are
reported on.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from compiler.errors import Finding
from compiler.ir import IRModel, definition_name
from compiler.parse import detect_kind, parse_definition
from compiler.source import LoadedDocument, SourceMap, load_file, load_text
from compiler.tools import ToolCatalogue

DEFINITION_SUFFIXES = (".yaml", ".yml", ".json")
#: Folders under a definitions folder that hold something other than definitions.
SKIPPED_FOLDERS = frozenset({"tools", "fixtures", ".ergon", "__pycache__"})
#: Test files (``ergon test``) are not definitions.
TEST_SUFFIXES = (".test.yaml", ".test.yml")


@dataclass
class Unit:
    """One definition file: raw data, positions, IR (when it parsed) and its own findings."""

    file: str
    data: dict | None
    source: SourceMap
    defn: IRModel | None = None
    kind: str | None = None
    findings: list[Finding] = field(default_factory=list)
    reported: bool = True

    @property
    def name(self) -> str | None:
        if self.defn is not None:
            return definition_name(self.defn)
        if isinstance(self.data, dict):
            value = self.data.get("process") if self.kind == "process" else self.data.get("name")
            return value if isinstance(value, str) else None
        return None


@dataclass
class Workspace:
    """All units plus the tool catalogue; lookups by kind and name."""

    units: list[Unit] = field(default_factory=list)
    tools: ToolCatalogue = field(default_factory=ToolCatalogue)
    #: what passes derive from the whole workspace once and share (e.g. the call graph)
    memo: dict[str, Any] = field(default_factory=dict)
    #: the ``tools/`` folders of the folders checked (their ``servers.yaml`` is reported on)
    reported_tool_folders: list[Path] = field(default_factory=list)

    def named(self, *kinds: str) -> dict[str, Unit]:
        """Units of the given kinds by name (first one wins on duplicates)."""
        out: dict[str, Unit] = {}
        for u in self.units:
            if u.kind in kinds and u.name and u.name not in out:
                out[u.name] = u
        return out

    def get(self, name: str, *kinds: str) -> IRModel | None:
        unit = self.named(*kinds).get(name)
        return unit.defn if unit else None

    def reported_units(self) -> list[Unit]:
        return [u for u in self.units if u.reported]


def make_unit(doc: LoadedDocument, *, reported: bool = True) -> Unit:
    """Parse a loaded document into a unit (never raises)."""
    unit = Unit(file=doc.file, data=doc.data, source=doc.source or SourceMap(doc.file), findings=list(doc.findings), reported=reported)
    if isinstance(doc.data, dict):
        unit.kind, _ = detect_kind(doc.data)
        data = doc.data
        if unit.kind == "workflow" and "name" not in data:
            # the seed's workflow-DSL examples are bare `{"steps": [...]}` documents: a workflow
            # without a `name` is named after its file, as a CI workflow file is
            data = {**data, "name": Path(doc.file).stem}
        defn, findings = parse_definition(data)
        unit.defn = defn
        unit.findings.extend(findings)
    return unit


def definition_files(folder: Path) -> list[Path]:
    """Definition files under ``folder``, sorted, skipping tool and fixture folders."""
    out = []
    for p in sorted(folder.rglob("*")):
        if p.suffix in DEFINITION_SUFFIXES and p.is_file():
            rel = p.relative_to(folder).parts
            if not any(part in SKIPPED_FOLDERS or part.startswith(".") for part in rel[:-1]):
                # test files of `ergon test` (flows.testing) sit beside definitions, and are not ones
                if p.name != "manifest.yaml" and not p.name.endswith(TEST_SUFFIXES):
                    out.append(p)
    return out


def load_workspace(targets: Iterable[str | Path], *, context_dirs: Iterable[str | Path] = ()) -> Workspace:
    """Load ``targets`` (files or folders) and, unreported, the definitions of ``context_dirs``.

    A folder target also provides tools from its ``tools/`` subfolder, and its
    ``tools/servers.yaml`` is checked with it; a file target's folder provides tools too.
    """
    ws = Workspace()
    seen: set[Path] = set()
    tool_dirs: list[Path] = []

    def add(path: Path, reported: bool) -> None:
        key = path.resolve()
        if key in seen:
            return
        seen.add(key)
        ws.units.append(make_unit(load_file(path), reported=reported))

    for target in targets:
        p = Path(target)
        if p.is_dir():
            tool_dirs.append(p / "tools")
            ws.reported_tool_folders.append(p / "tools")
            for f in definition_files(p):
                add(f, True)
        else:
            tool_dirs.append(p.parent / "tools")
            add(p, True)
    for folder in context_dirs:
        d = Path(folder)
        if d.is_dir():
            tool_dirs.append(d / "tools")
            for f in definition_files(d):
                add(f, False)
    for d in dict.fromkeys(tool_dirs):
        ws.tools.add_folder(d)
    return ws


def workspace_from_texts(texts: dict[str, str], *, tools: Iterable[str] = ()) -> Workspace:
    """A workspace from in-memory documents (tests, benchmarks, the dashboard's editor)."""
    ws = Workspace()
    for file, text in texts.items():
        ws.units.append(make_unit(load_text(text, file)))
    for name in tools:
        ws.tools.tools[name] = "given"  # like a Python tool, a given name replaces a built-in
    return ws

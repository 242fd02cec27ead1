"""A workspace: every definition in a folder, loaded and parsed, with the tools it can see.

The skills of the folder's ``skills/`` (:mod:`compiler.skills`) are units too, of kind
``skill``: their front matter is reported on like a definition's, but they have no IR and no
definition name (skills are named by ``learn_<name>`` tools, apart from definitions); the
workspace's :attr:`Workspace.skills` holds the ones that read, over the system skills.

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
from compiler.skills import SKILL_SUFFIX, SKILLS_FOLDER, ParsedSkill, Skill, catalogue_findings, parse_skill, read_skill_file, skill_files
from compiler.system_skills import system_skills
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
        if self.kind == "skill":  # skills are named apart from definitions (Workspace.skills)
            return None
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
    #: the skills agents may learn, by name: the system skills, replaced by the project's own
    skills: dict[str, Skill] = field(default_factory=lambda: dict(system_skills()))
    #: the skill files read, with the units their findings are reported through
    skill_files: list[tuple[Unit, ParsedSkill]] = field(default_factory=list)

    def add_skill(self, parsed: ParsedSkill, *, reported: bool = True) -> None:
        """Add a skill file read: a unit for its findings, and its skill (the first file of a
        name wins over later ones; any file wins over a system skill)."""
        doc = parsed.doc
        unit = Unit(file=doc.file, data=doc.data, source=doc.source or SourceMap(doc.file), kind="skill",
                    findings=list(parsed.findings), reported=reported)
        self.units.append(unit)
        self.skill_files.append((unit, parsed))
        skill = parsed.skill
        if skill is not None and (skill.name not in self.skills or self.skills[skill.name].system):
            self.skills[skill.name] = skill

    def check_skill_tools(self) -> None:
        """Add to each skill file's findings its tools that no catalogue provides (once the
        workspace's tools are all known)."""
        for unit, _ in self.skill_files:
            if isinstance(unit.data, dict):
                unit.findings.extend(catalogue_findings(unit.data, self.tools.names()))

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
        if path.suffix == SKILL_SUFFIX:
            ws.add_skill(read_skill_file(path), reported=reported)
        else:
            ws.units.append(make_unit(load_file(path), reported=reported))

    def add_folder(folder: Path, reported: bool) -> None:
        for f in [*definition_files(folder), *skill_files(folder / SKILLS_FOLDER)]:
            add(f, reported)

    for target in targets:
        p = Path(target)
        if p.is_dir():
            tool_dirs.append(p / "tools")
            ws.reported_tool_folders.append(p / "tools")
            add_folder(p, True)
        elif p.suffix == SKILL_SUFFIX:  # a skill file: its definitions folder provides the tools
            tool_dirs.append(p.parent.parent / "tools")
            add(p, True)
        else:
            tool_dirs.append(p.parent / "tools")
            add(p, True)
    for folder in context_dirs:
        d = Path(folder)
        if d.is_dir():
            tool_dirs.append(d / "tools")
            add_folder(d, False)
    for d in dict.fromkeys(tool_dirs):
        ws.tools.add_folder(d)
    ws.check_skill_tools()
    return ws


def workspace_from_texts(texts: dict[str, str], *, tools: Iterable[str] = ()) -> Workspace:
    """A workspace from in-memory documents (tests, benchmarks, the dashboard's editor); a text
    whose file name ends in ``.md`` is a skill."""
    ws = Workspace()
    for file, text in texts.items():
        if file.endswith(SKILL_SUFFIX):
            ws.add_skill(parse_skill(text, file))
        else:
            ws.units.append(make_unit(load_text(text, file)))
    for name in tools:
        ws.tools.tools[name] = "given"  # like a Python tool, a given name replaces a built-in
    ws.check_skill_tools()
    return ws

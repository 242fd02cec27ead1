"""Definitions as the runtime sees them: compiled Plans by name, with the content they came from.

``ergon run NAME|PATH`` and deployments both start here. A run pins the *content* of its
definition (stored once per hash in the store's snapshots), and sub-processes named by a
process node are resolved from the same definitions folder when the parent flow is built.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from compiler import CompileError, Diagnostic, check_workspace, load_workspace
from compiler.errors import did_you_mean
from compiler.plan import RUNNABLE_KINDS, Plan, build_plan
from compiler.workspace import Unit, Workspace
from flows.errors import DefinitionError
from flows.settings import definitions_dir


def load_tools(folders: list[Path]) -> None:
    """Register the built-in tools, the Python tools of each folder's ``tools/`` and the skills
    of its ``skills/`` (their ``learn_<skill>`` tools, :mod:`flows.tools.skills`)."""
    import flows.tools.builtins  # noqa: F401  (registers on import)
    from flows.tools import load_tool_folder
    from flows.tools.skills import load_skill_folder

    for folder in folders:
        tools = (folder if folder.is_dir() else folder.parent) / "tools"
        if tools.is_dir():
            load_tool_folder(tools)
        load_skill_folder((folder if folder.is_dir() else folder.parent) / "skills")


class DefinitionNotFound(DefinitionError, KeyError):
    """No runnable definition has that name."""


@dataclass
class Compiled:
    """A runnable definition: its Plan, the raw content (the run's snapshot), its unit."""

    plan: Plan
    content: dict[str, Any]
    unit: Unit


class Catalog:
    """The definitions folder, loaded and checked once, with Plans compiled on demand."""

    def __init__(self, workspace: Workspace, sources: list[Path] | None = None):
        self.ws = workspace
        #: what the catalog was loaded from (absolute folders and file), recorded on every run so
        #: that resuming and replaying it rebuild the same catalog (see :mod:`flows.runs.sources`)
        self.sources: list[str] = [str(Path(p).resolve()) for p in sources or []]
        self._plans: dict[str, Plan] = {}

    @classmethod
    def load(cls, target: str | Path | None = None) -> Catalog:
        """The catalog of ``definitions/`` (plus ``target``'s folder when it is a file)."""
        folder = definitions_dir()
        targets: list[Path] = [folder] if folder.is_dir() else []
        if target is not None and Path(target).is_file():
            targets.append(Path(target))
            if Path(target).parent.resolve() != folder.resolve():
                targets.append(Path(target).parent)
        ws = load_workspace(targets)
        load_tools(targets)
        return cls(ws, targets)

    @classmethod
    def from_sources(cls, sources: list[str]) -> Catalog:
        """The catalog a run was started with (its recorded :attr:`sources`), whatever the
        current folder; :class:`DefinitionNotFound` when one of them is gone."""
        targets = [Path(s) for s in sources]
        gone = [str(t) for t in targets if not t.exists()]
        if gone:
            raise DefinitionNotFound(f"the run's definitions are gone: {', '.join(gone)} no longer exist(s)")
        ws = load_workspace(targets)
        load_tools(targets)
        return cls(ws, targets)

    def unit_for(self, name_or_path: str) -> Unit:
        path = Path(name_or_path)
        if path.is_file():
            for unit in self.ws.units:
                if Path(unit.file).resolve() == path.resolve():
                    return unit
        runnable = self.ws.named(*RUNNABLE_KINDS)
        if name_or_path in runnable:
            return runnable[name_or_path]
        hint = did_you_mean(name_or_path, runnable)
        raise DefinitionNotFound(f"no runnable definition named `{name_or_path}`" + (f"; {hint}" if hint else ""))

    def diagnostics(self, unit: Unit) -> list[Diagnostic]:
        """Errors of ``unit`` (the whole workspace is checked so references resolve)."""
        report = check_workspace(self.ws)
        return [d for d in report.errors if d.file == unit.file]

    def compile(self, name_or_path: str) -> Compiled:
        """The Plan of a definition; :class:`CompileError` if the definition has errors."""
        unit = self.unit_for(name_or_path)
        errors = self.diagnostics(unit)
        if errors:
            raise CompileError(errors)
        plan = build_plan(unit, self.ws)
        self._plans[plan.name] = plan
        return Compiled(plan=plan, content=unit.data or {}, unit=unit)

    def interaction(self, name: str) -> Any:
        """An interaction definition by name (process and agent nodes call these): the folder's,
        or a built-in ``sys:`` one (:mod:`compiler.builtin_interactions`)."""
        from compiler.builtin_interactions import BUILTIN

        defn = self.ws.get(name, "interaction") or BUILTIN.get(name)
        if defn is None:
            raise DefinitionNotFound(f"no interaction named `{name}`")
        return defn

    def environments(self) -> dict[str, Any]:
        """Environment definitions by name."""
        return {name: unit.defn for name, unit in self.ws.named("environment").items() if unit.defn is not None}

    def compile_content(self, name: str, content: Any, *, label: str) -> Compiled:
        """Compile stored content of ``name`` (a run's snapshot, a published version) in place of
        the folder's current file; its references still resolve against this folder."""
        import json

        from compiler import workspace_from_texts

        ws = workspace_from_texts({f"{name}{label}.json": json.dumps(content)})
        ws.units.extend(u for u in self.ws.units if u.name != name)
        ws.tools = self.ws.tools
        return Compiled(plan=build_plan(ws.units[0], ws), content=content, unit=ws.units[0])

    def resolve(self, name: str, version: int | None = None) -> Plan:
        """Resolver for process nodes that name their child (pinned versions come from the store)."""
        if version is not None:
            from flows.store import definitions as definition_store

            pinned = definition_store.get_version(name, version)
            if pinned is None:
                raise DefinitionNotFound(f"`{name}` has no published version {version}")
            return self.compile_content(name, pinned.content, label=f"@v{version}").plan
        if name not in self._plans:
            self._plans[name] = build_plan(self.unit_for(name), self.ws)
        return self._plans[name]

"""The check driver: run every pass over every definition and locate what they find.

Passes are pure functions ``check(unit, ws) -> Iterable[Finding]`` listed in
``compiler.passes.PASSES``; they run only on definitions that parsed. The driver adds the
workspace-wide checks (unique names), turns each finding's document path into file:line:col,
and returns every diagnostic at once.
"""

from __future__ import annotations

from compiler.errors import Diagnostic, Finding, Report, format_path
from compiler.passes import PASSES
from compiler.workspace import Unit, Workspace


def locate(unit: Unit, finding: Finding) -> Diagnostic:
    """Turn a finding into a diagnostic with a file position."""
    is_key = finding.at_key or finding.code in ("unknown-key", "duplicate-key", "duplicate-name")
    line, col = unit.source.locate(finding.path, key=is_key)
    if finding.line_offset is not None:
        line, col = unit.source.template_line(finding.path, finding.line_offset)
    if finding.col_override is not None:
        col = finding.col_override
    path = format_path(s[:-4] if isinstance(s, str) and s.endswith("#dup") else s for s in finding.path)
    return Diagnostic(finding.code, finding.message, unit.file, line, col, path, finding.hint, finding.severity)


def _duplicate_names(ws: Workspace) -> dict[int, list[Finding]]:
    first: dict[str, Unit] = {}
    out: dict[int, list[Finding]] = {}
    for unit in ws.units:
        name = unit.name
        if not name:
            continue
        if name in first:
            other = first[name]
            key = ("process",) if unit.kind == "process" else ("name",)
            out.setdefault(id(unit), []).append(
                Finding("duplicate-name", key, f"the name `{name}` is already used by {other.file}",
                        hint="names are unique across the definitions folder; rename one of them")
            )
        else:
            first[name] = unit
    return out


def unit_findings(unit: Unit, ws: Workspace) -> list[Finding]:
    """Everything wrong with one unit: load/parse findings, then every pass."""
    findings = list(unit.findings)
    if unit.defn is not None:
        for run in PASSES:
            findings.extend(run(unit, ws))
    return findings


def check_workspace(ws: Workspace) -> Report:
    """All diagnostics of the reported units, sorted by file and position."""
    dupes = _duplicate_names(ws)
    report = Report()
    for unit in ws.reported_units():
        for finding in [*unit_findings(unit, ws), *dupes.get(id(unit), [])]:
            report.diagnostics.append(locate(unit, finding))
    report.diagnostics = report.sorted()
    return report

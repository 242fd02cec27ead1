"""The check driver: run every pass over every definition and locate what they find.

Passes are pure functions ``check(unit, ws) -> Iterable[Finding]`` listed in
``compiler.passes.PASSES``; they run only on definitions that parsed. The driver adds the
workspace-wide checks (unique names), turns each finding's document path into file:line:col,
and returns every diagnostic at once. A checked folder's ``tools/servers.yaml`` is checked too
(its header references: :mod:`compiler.tool_servers`), and so is its ``tools/email.yaml``
(:mod:`compiler.email_config`).

A clean check of a definition means its run loads nothing broken: where it names another
definition its run loads (an interaction, a sub-process, an environment, a form — see
:func:`compiler.passes.references.definition_references`), and that one, or one it loads in
turn, has errors of its own, the reference gets a ``broken-reference`` error quoting the first
of them. This holds when the referenced file is only context (``ergon check one.yaml`` loads
the folder around it but reports on the file alone), which is how a definition calling a
broken interaction used to check clean and then fail in the middle of its run. A referenced
definition's ``process-cycle`` error is left out: the referrer is on that cycle and has its own.
Every other error counts, a sub-process's ``maybe-unset`` of a field its caller passes
included: that child fails when run on its own, and checking its folder reports it anyway; the
fix is to declare the field ``required``, which its callers then pass.
"""

from __future__ import annotations

from compiler.email_config import load_email_config, runnable_inputs
from compiler.errors import Diagnostic, Finding, Report, format_path
from compiler.passes import PASSES
from compiler.passes.references import definition_references
from compiler.source import SourceMap
from compiler.tool_servers import load_servers
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
    own = OwnFindings(ws)
    for unit in ws.reported_units():
        for finding in [*own(unit), *dupes.get(id(unit), []), *broken_references(unit, ws, own)]:
            report.diagnostics.append(locate(unit, finding))
    for folder in dict.fromkeys(ws.reported_tool_folders):
        loaded = load_servers(folder)
        if loaded is not None:
            doc, findings = loaded
            servers = Unit(file=doc.file, data=doc.data, source=doc.source or SourceMap(doc.file))
            report.diagnostics.extend(locate(servers, finding) for finding in findings)
        email = load_email_config(folder, runnable_inputs(ws))
        if email is not None:
            doc, findings = email
            config = Unit(file=doc.file, data=doc.data, source=doc.source or SourceMap(doc.file))
            report.diagnostics.extend(locate(config, finding) for finding in [*doc.findings, *findings])
    report.diagnostics = report.sorted()
    return report


class OwnFindings:
    """:func:`unit_findings` of a workspace's units, each unit's worked out once per check (a
    definition many others name is checked once, not once per referrer)."""

    def __init__(self, ws: Workspace) -> None:
        self._ws = ws
        self._done: dict[int, tuple[Unit, list[Finding]]] = {}  # the unit is kept: its id stays its own

    def __call__(self, unit: Unit) -> list[Finding]:
        entry = self._done.get(id(unit))
        if entry is None:
            entry = self._done[id(unit)] = (unit, unit_findings(unit, self._ws))
        return entry[1]


def broken_references(unit: Unit, ws: Workspace, own: OwnFindings | None = None) -> list[Finding]:
    """A ``broken-reference`` finding at each place ``unit`` names a definition whose run-time
    load would meet errors: its own, or those of a definition it names in turn."""
    own = own or OwnFindings(ws)
    out = []
    for path, sort, target in definition_references(unit, ws):
        found = _first_error(target, ws, own, seen={id(unit)})
        if found is None:
            continue
        via, where, count = found
        what = f"{sort} `{target.name}`"
        if via:  # the error is further down: name the way there
            what += " loads " + ", which loads ".join(f"{s} `{n}`" for s, n in via) + ", which"
        more = f" (and {count - 1} more)" if count > 1 else ""
        out.append(Finding(
            "broken-reference", path,
            f"{what} has errors: {where.file}:{where.line}:{where.col}: {where.message}{more}",
            hint=f"fix {where.file} first (`ergon check {where.file}` lists its errors): a run of this "
                 "definition would load it and fail there"))
    return out


def _first_error(unit: Unit, ws: Workspace, own: OwnFindings, seen: set[int]) -> tuple[list[tuple[str, str]], Diagnostic, int] | None:
    """The first error met loading ``unit``, depth first: (the definitions passed through on the
    way as (sort, name), the error located, how many errors its file has); None when clean."""
    if id(unit) in seen:
        return None
    seen.add(id(unit))
    errors = [f for f in own(unit) if f.severity == "error" and f.code != "process-cycle"]
    if errors:
        return [], locate(unit, errors[0]), len(errors)
    for _, sort, target in definition_references(unit, ws):
        found = _first_error(target, ws, own, seen)
        if found is not None:
            via, where, count = found
            return [(sort, target.name or "?"), *via], where, count
    return None

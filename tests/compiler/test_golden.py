"""Golden tests of the compiler's diagnostics.

Layout under ``tests/fixtures/invalid/``:

* ``NAME.yaml`` (or ``.json``) with a sibling ``NAME.expected``: the file is loaded *alone*
  (``load_workspace([path])``) and checked; the set of ``(code, line, col)`` it produces must equal
  the expected file's lines ``CODE LINE:COL``;
* a folder ``NAME/`` holding several definition files and one file named ``expected`` whose
  lines are ``FILE CODE LINE:COL`` (``FILE`` relative to the folder): the folder is loaded as one
  workspace (for diagnostics that need several files, such as ``duplicate-name``).

In expected files blank lines and ``#`` comments are ignored.

Besides the fixtures: every code in ``compiler.errors.CODES`` must have at least one fixture,
every definition under ``definitions/`` must check clean, and every diagnostic must print in the
``FILE:LINE:COL: error[CODE] PATH: MESSAGE`` shape that editors and CI link to.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from compiler import CODES, check_workspace, load_workspace
from compiler.errors import Diagnostic

ROOT = Path(__file__).resolve().parents[2]
INVALID = ROOT / "tests" / "fixtures" / "invalid"
DEFINITIONS = ROOT / "definitions"
SUFFIXES = (".yaml", ".yml", ".json")

#: ``FILE:LINE:COL: error[CODE] PATH: MESSAGE`` (PATH is absent for whole-document problems such
#: as a YAML syntax error), optionally followed by one ``  hint: ...`` line.
FORMAT = re.compile(
    r"^(?P<file>[^\n]+?):(?P<line>[1-9]\d*):(?P<col>[1-9]\d*): "
    r"(?P<severity>error|warning)\[(?P<code>[a-z][a-z0-9-]*)\] "
    r"(?:(?P<path>\S+): )?(?P<message>[^\n]+)"
    r"(?:\n  hint: (?P<hint>[^\n]+))?$"
)

Key = tuple[str, str, int, int]  # (file relative to the fixture, code, line, col)


# --------------------------------------------------------------------------------------------
# Fixture discovery


def _single_fixtures() -> list[Path]:
    return sorted(p for p in INVALID.iterdir() if p.is_file() and p.suffix in SUFFIXES) if INVALID.is_dir() else []


def _folder_fixtures() -> list[Path]:
    return sorted(p for p in INVALID.iterdir() if p.is_dir() and not p.name.startswith((".", "_"))) if INVALID.is_dir() else []


def _expected_lines(path: Path) -> list[tuple[int, list[str]]]:
    out = []
    for n, raw in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        line = raw.strip()
        if line and not line.startswith("#"):
            out.append((n, line.split()))
    return out


def _position(text: str, where: str) -> tuple[int, int]:
    m = re.fullmatch(r"([1-9]\d*):([1-9]\d*)", text)
    if not m:
        raise AssertionError(f"{where}: expected LINE:COL, got {text!r}")
    return int(m.group(1)), int(m.group(2))


def parse_expected_file(path: Path) -> set[Key]:
    """``CODE LINE:COL`` lines of a single-file fixture."""
    out: set[Key] = set()
    for n, parts in _expected_lines(path):
        where = f"{path.relative_to(ROOT)}:{n}"
        assert len(parts) == 2, f"{where}: expected `CODE LINE:COL`, got {' '.join(parts)!r}"
        code, pos = parts
        assert code in CODES, f"{where}: unknown diagnostic code {code!r}"
        out.add(("", code, *_position(pos, where)))
    return out


def parse_expected_folder(path: Path) -> set[Key]:
    """``FILE CODE LINE:COL`` lines of a folder fixture's ``expected`` file."""
    out: set[Key] = set()
    for n, parts in _expected_lines(path):
        where = f"{path.relative_to(ROOT)}:{n}"
        assert len(parts) == 3, f"{where}: expected `FILE CODE LINE:COL`, got {' '.join(parts)!r}"
        file, code, pos = parts
        assert code in CODES, f"{where}: unknown diagnostic code {code!r}"
        assert (path.parent / file).is_file(), f"{where}: no file {file!r} in {path.parent.name}/"
        out.add((file, code, *_position(pos, where)))
    return out


def _rel(file: str, base: Path) -> str:
    p = Path(file)
    if not p.is_absolute():
        p = (Path.cwd() / p)
    try:
        return p.resolve().relative_to(base.resolve()).as_posix()
    except ValueError:
        return file


def _show(keys: set[Key]) -> str:
    return "\n".join(f"    {(f + ' ') if f else ''}{c} {ln}:{col}" for f, c, ln, col in sorted(keys, key=lambda k: (k[0], k[2], k[3], k[1]))) or "    (none)"


def _compare(name: str, expected: set[Key], diagnostics: list[Diagnostic], actual: set[Key]) -> None:
    if expected == actual:
        return
    formatted = "\n".join("    " + d.format().replace("\n", "\n    ") for d in diagnostics) or "    (no diagnostics)"
    raise AssertionError(
        f"diagnostics of {name} differ from its expected file\n"
        f"  missing (expected, not produced):\n{_show(expected - actual)}\n"
        f"  unexpected (produced, not expected):\n{_show(actual - expected)}\n"
        f"  expected:\n{_show(expected)}\n"
        f"  actual diagnostics:\n{formatted}"
    )


# --------------------------------------------------------------------------------------------
# The golden fixtures


@pytest.mark.parametrize("path", _single_fixtures(), ids=lambda p: p.name)
def test_invalid_fixture(path: Path) -> None:
    expected_file = path.with_suffix(".expected")
    assert expected_file.is_file(), f"{path.relative_to(ROOT)} has no sibling {expected_file.name}"
    expected = parse_expected_file(expected_file)
    assert expected, f"{expected_file.relative_to(ROOT)} lists no diagnostics: an invalid fixture must produce some"
    report = check_workspace(load_workspace([path]))
    for d in report.diagnostics:
        assert _rel(d.file, path.parent) == path.name, f"a diagnostic points outside the fixture: {d.format()}"
    actual = {("", d.code, d.line, d.col) for d in report.diagnostics}
    _compare(path.name, expected, report.diagnostics, actual)


@pytest.mark.parametrize("folder", _folder_fixtures(), ids=lambda p: p.name + "/")
def test_invalid_fixture_folder(folder: Path) -> None:
    expected_file = folder / "expected"
    assert expected_file.is_file(), f"fixture folder {folder.relative_to(ROOT)}/ has no `expected` file"
    expected = parse_expected_folder(expected_file)
    assert expected, f"{expected_file.relative_to(ROOT)} lists no diagnostics"
    report = check_workspace(load_workspace([folder]))
    actual = {(_rel(d.file, folder), d.code, d.line, d.col) for d in report.diagnostics}
    _compare(folder.name + "/", expected, report.diagnostics, actual)


def test_expected_files_have_fixtures() -> None:
    """An ``.expected`` file without its definition is a fixture that silently stopped running."""
    orphans = [
        p.name for p in INVALID.glob("*.expected")
        if not any(p.with_suffix(s).is_file() for s in SUFFIXES)
    ]
    assert not orphans, f"expected files without a fixture: {orphans}"


def fixture_codes() -> dict[str, list[str]]:
    """code → fixtures that expect it."""
    out: dict[str, list[str]] = {}
    for path in _single_fixtures():
        exp = path.with_suffix(".expected")
        if exp.is_file():
            for _, code, _, _ in parse_expected_file(exp):
                out.setdefault(code, []).append(path.name)
    for folder in _folder_fixtures():
        exp = folder / "expected"
        if exp.is_file():
            for _, code, _, _ in parse_expected_folder(exp):
                out.setdefault(code, []).append(folder.name + "/")
    return out


def test_every_code_has_a_fixture() -> None:
    covered = fixture_codes()
    missing = sorted(set(CODES) - set(covered))
    assert not missing, (
        f"{len(missing)} diagnostic code(s) have no golden fixture in tests/fixtures/invalid/:\n"
        + "\n".join(f"  {c}: {CODES[c]}" for c in missing)
    )


# --------------------------------------------------------------------------------------------
# The shipped definitions


def test_definitions_check_clean() -> None:
    ws = load_workspace([DEFINITIONS])
    assert ws.units, "definitions/ holds no definitions"
    report = check_workspace(ws)
    assert not report.diagnostics, "definitions/ must check without diagnostics:\n" + "\n".join(
        d.format() for d in report.diagnostics
    )


def test_definitions_are_all_parsed() -> None:
    ws = load_workspace([DEFINITIONS])
    unparsed = [u.file for u in ws.units if u.defn is None]
    assert not unparsed, f"definitions that did not parse: {unparsed}"
    names = [u.name for u in ws.units]
    assert len(names) == len(set(names)), f"duplicate names in definitions/: {names}"


# --------------------------------------------------------------------------------------------
# The printed form


def _all_fixture_diagnostics() -> list[Diagnostic]:
    """Diagnostics of every fixture (a fixture that crashes the compiler fails its own test)."""
    out: list[Diagnostic] = []
    for target in [*_single_fixtures(), *_folder_fixtures()]:
        try:
            out.extend(check_workspace(load_workspace([target])).diagnostics)
        except Exception:  # noqa: BLE001 - reported by test_invalid_fixture*
            continue
    return out


def _path_matches(m: re.Match, d: Diagnostic) -> bool:
    """The PATH the regex saw is the diagnostic's path (paths whose keys hold spaces aside)."""
    seen = m.group("path") or ""
    if d.path and any(c.isspace() for c in d.path):
        return True
    if not d.path and seen:  # a path-less message that itself contains `word: `
        return f"{seen}: {m.group('message')}" == d.message
    return seen == d.path


def test_diagnostic_format_shape() -> None:
    diagnostics = _all_fixture_diagnostics()
    assert diagnostics, "no fixture produced a diagnostic"
    bad = []
    for d in diagnostics:
        text = d.format()
        m = FORMAT.match(text)
        if (
            not m
            or m.group("file") != d.file
            or int(m.group("line")) != d.line
            or int(m.group("col")) != d.col
            or m.group("code") != d.code
            or not _path_matches(m, d)
        ):
            bad.append(text)
        elif d.line < 1 or d.col < 1 or d.code not in CODES or not d.message.strip():
            bad.append(text)
    assert not bad, "diagnostics not in the `FILE:LINE:COL: error[CODE] PATH: MESSAGE` shape:\n" + "\n".join(bad)


def test_format_shape_examples() -> None:
    """The shape itself, on hand-made diagnostics (with and without a path and a hint)."""
    d = Diagnostic("unknown-target", "no node `reveiw`", "definitions/a.yaml", 12, 7, "nodes.a.transitions[0].to", "did you mean `review`?")
    assert d.format() == (
        "definitions/a.yaml:12:7: error[unknown-target] nodes.a.transitions[0].to: no node `reveiw`\n"
        "  hint: did you mean `review`?"
    )
    assert FORMAT.match(d.format())
    d2 = Diagnostic("yaml-syntax", "found character that cannot start any token", "x.yaml", 3, 1)
    assert d2.format() == "x.yaml:3:1: error[yaml-syntax] found character that cannot start any token"
    m = FORMAT.match(d2.format())
    assert m and m.group("path") is None

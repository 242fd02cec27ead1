"""Loading YAML/JSON with positions: the raw tree and a SourceMap (path → line:column).

PyYAML's composer gives every node a start mark; we build plain Python data from the node tree
ourselves so that each mapping key and value, and each list item, gets its position recorded
under its document path. Two departures from stock PyYAML, both deliberate:

* **Duplicate keys are an error** (PyYAML silently keeps the last one), reported at the second
  occurrence with the line of the first.
* **Booleans follow YAML 1.2** (``true``/``false`` only): YAML 1.1 turns ``on``, ``yes``, ``no``
  into booleans, which silently breaks keys such as ``on:`` and enum values such as ``no``.

JSON is a subset of YAML 1.2, so ``.json`` files go through the same loader and get positions too.
The libyaml-backed loader is used when available (it is several times faster).

Definition files come from anyone who can open a pull request, so loading is bounded: a file
larger than :data:`MAX_FILE_BYTES`, nesting deeper than :data:`MAX_DEPTH`, an alias that
contains itself, a document that expands (through aliases, the "billion laughs") to more than
:data:`MAX_ELEMENTS` values, and a number too long to convert are each a ``yaml-limit``
finding with its place and the limit — never a hang, a multi-gigabyte allocation or a traceback.
The limits are far above any real definition (the 1,000-node benchmark definition is ~0.3 MB
and ~20,000 values).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from compiler.errors import DocPath, Finding, PathSeg

try:  # the C loader is much faster; pure Python is the fallback
    _BaseLoader: type = yaml.CSafeLoader
except AttributeError:  # pragma: no cover - libyaml missing
    _BaseLoader = yaml.SafeLoader


class _Loader(_BaseLoader):
    """Safe loader with YAML 1.2 booleans."""


# Replace the YAML 1.1 bool resolver (yes/no/on/off/y/n) with YAML 1.2's.
_Loader.yaml_implicit_resolvers = {
    first: [(tag, regexp) for tag, regexp in resolvers if tag != "tag:yaml.org,2002:bool"]
    for first, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()
}
_Loader.add_implicit_resolver(
    "tag:yaml.org,2002:bool",
    re.compile(r"^(?:true|True|TRUE|false|False|FALSE)$"),
    list("tTfF"),
)

Position = tuple[int, int]  # 1-based line, 1-based column

#: Largest definition file the loader reads.
MAX_FILE_BYTES = 4 * 1024 * 1024
#: Deepest nesting of mappings and lists.
MAX_DEPTH = 100
#: Most values (mapping entries, list items, scalars) a document may expand to, aliases counted
#: each time they are used.
MAX_ELEMENTS = 200_000


class _LimitExceeded(Exception):
    """A document beyond one of the loader's limits; carries where and why."""

    def __init__(self, path: DocPath, message: str, hint: str):
        super().__init__(message)
        self.path = path
        self.hint = hint


@dataclass
class SourceMap:
    """Where each element of a document sits in its file.

    ``values[path]`` is the position of the value at ``path``; ``keys[path]`` the position of the
    mapping key that introduces it. Block scalars (``|``/``>``) are recorded in ``block`` so that
    a line inside a multi-line template can be mapped to its file line.
    """

    file: str
    values: dict[DocPath, Position] = field(default_factory=dict)
    keys: dict[DocPath, Position] = field(default_factory=dict)
    block: set[DocPath] = field(default_factory=set)
    #: indentation of each block scalar's text (columns before it on its file lines)
    indent: dict[DocPath, int] = field(default_factory=dict)

    def locate(self, path: DocPath, *, key: bool = False) -> Position:
        """Position of ``path``, or of its nearest enclosing element that exists."""
        probe = tuple(path)
        while True:
            table = self.keys if key and probe in self.keys else self.values
            if probe in table:
                return table[probe]
            if not probe:
                return (1, 1)
            probe = probe[:-1]
            key = False

    def template_line(self, path: DocPath, line_in_template: int) -> Position:
        """File position of line ``line_in_template`` (1-based) of the string at ``path``."""
        line, col = self.locate(path)
        if path in self.block:  # the text starts on the line after the `|` indicator
            return (line + line_in_template, col)
        return (line + line_in_template - 1, col)


@dataclass
class LoadedDocument:
    """One file's raw data and source map, or the findings that stopped it from loading."""

    file: str
    data: Any = None
    source: SourceMap | None = None
    findings: list[Finding] = field(default_factory=list)


def _mark(node: yaml.Node) -> Position:
    return (node.start_mark.line + 1, node.start_mark.column + 1)


class _Builder:
    """Turns a composed node tree into plain data, recording positions as it goes."""

    def __init__(self, loader: _Loader, source: SourceMap, text: str = ""):
        self.loader = loader
        self.source = source
        self.text = text
        self._lines: list[str] | None = None  # the text's lines, split once when a block scalar needs them
        self.findings: list[Finding] = []
        self._elements = 0
        self._open: set[int] = set()  # ids of the collections being built: an alias to one is a cycle

    def _indent(self, first_line: int) -> int:
        """Indentation of a block scalar's text: its first non-blank line's (0-based ``first_line`` on)."""
        if self._lines is None:
            self._lines = self.text.splitlines()
        for i in range(first_line, len(self._lines)):
            line = self._lines[i]
            if line.strip():
                return len(line) - len(line.lstrip(" "))
        return 0

    def build(self, node: yaml.Node, path: DocPath) -> Any:
        self._elements += 1
        if self._elements > MAX_ELEMENTS:
            # at the top-level entry being built: deeper positions inside an alias are its anchor's
            raise _LimitExceeded(path[:1], f"the document expands to more than {MAX_ELEMENTS:,} values",
                                 "YAML aliases (`*name`) copy what they refer to each time: use fewer of them")
        self.source.values[path] = _mark(node)
        if isinstance(node, (yaml.MappingNode, yaml.SequenceNode)):
            if id(node) in self._open:
                raise _LimitExceeded(path, "an alias refers to a value that contains it (a cycle)",
                                     "a definition is a tree: copy the value instead of aliasing its parent")
            if len(self._open) >= MAX_DEPTH:
                raise _LimitExceeded(path, f"values are nested more than {MAX_DEPTH} levels deep",
                                     "flatten the structure")
            self._open.add(id(node))
            try:
                if isinstance(node, yaml.MappingNode):
                    return self._mapping(node, path)
                return [self.build(item, (*path, i)) for i, item in enumerate(node.value)]
            finally:
                self._open.discard(id(node))
        if isinstance(node, yaml.ScalarNode) and node.style in ("|", ">"):
            self.source.block.add(path)
            self.source.indent[path] = self._indent(node.start_mark.line + 1)
        return self._scalar(node, path)

    def _scalar(self, node: yaml.Node, path: DocPath) -> Any:
        try:
            return self.loader.construct_object(node, deep=True)
        except ValueError as exc:  # e.g. an integer longer than Python converts (4,300 digits)
            raise _LimitExceeded(path, f"this value cannot be read: {exc}".split("; use")[0],
                                 "quote it to keep it as text") from None

    def _mapping(self, node: yaml.MappingNode, path: DocPath) -> dict:
        self.loader.flatten_mapping(node)  # resolves `<<` merge keys
        out: dict[Any, Any] = {}
        first_seen: dict[Any, Position] = {}
        for key_node, value_node in node.value:
            if not isinstance(key_node, yaml.ScalarNode):  # a mapping or list as a key
                self.findings.append(Finding("wrong-type", path, "mapping keys must be strings, not mappings or lists"))
                continue
            key = self._scalar(key_node, path)
            if not isinstance(key, (str, int, float, bool)) or key is None:
                self.findings.append(Finding("wrong-type", path, f"mapping keys must be strings, got {key!r}"))
                continue
            if isinstance(key, bool):  # YAML 1.2 `true:` as a key: keep the text the author wrote
                key = key_node.value
            seg: PathSeg = key if isinstance(key, str) else str(key)
            if seg in out:
                line = first_seen[seg][0]
                self.source.keys.setdefault((*path, f"{seg}#dup"), _mark(key_node))
                self.findings.append(
                    Finding(
                        "duplicate-key", (*path, f"{seg}#dup"),
                        f"duplicate key `{seg}` (first defined on line {line})",
                        hint="remove one of the two entries; YAML would silently keep only the last",
                    )
                )
                continue
            first_seen[seg] = _mark(key_node)
            self.source.keys[(*path, seg)] = _mark(key_node)
            out[seg] = self.build(value_node, (*path, seg))
        return out


def load_text(text: str, file: str) -> LoadedDocument:
    """Parse one YAML/JSON document, keeping positions. Never raises on bad input."""
    source = SourceMap(file=file)
    doc = LoadedDocument(file=file, source=source)
    if len(text) > MAX_FILE_BYTES:  # characters, a lower bound of the bytes: checked before parsing
        doc.findings.append(Finding("yaml-limit", (), f"the file is larger than {MAX_FILE_BYTES // (1024 * 1024)} MiB",
                                    hint="split it into several definitions, or keep data in documents"))
        return doc
    loader = _Loader(text)
    try:
        node = loader.get_single_node()
        if node is None:
            doc.findings.append(Finding("not-a-mapping", (), "the file is empty"))
            return doc
        builder = _Builder(loader, source, text)
        doc.data = builder.build(node, ())
        doc.findings.extend(builder.findings)
    except _LimitExceeded as exc:
        doc.findings.append(Finding("yaml-limit", exc.path, str(exc), hint=exc.hint))
        doc.data = None
    except RecursionError:  # the parser's own nesting limit, below ours in some builds
        doc.findings.append(Finding("yaml-limit", (), f"values are nested more than {MAX_DEPTH} levels deep",
                                    hint="flatten the structure"))
        doc.data = None
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        problem = exc.problem or exc.context or "invalid YAML"
        line, col = (mark.line + 1, mark.column + 1) if mark else (1, 1)
        source.values[()] = (line, col)
        doc.findings.append(Finding("yaml-syntax", (), f"{problem}", hint=_syntax_hint(problem)))
        doc.data = None
    except yaml.YAMLError as exc:  # e.g. several documents in one file
        doc.findings.append(Finding("yaml-syntax", (), str(exc).splitlines()[0]))
        doc.data = None
    finally:
        loader.dispose()
    if not doc.findings and not isinstance(doc.data, dict):  # a list, a scalar, or a file holding only `null`
        doc.findings.append(Finding("not-a-mapping", (), "a definition must be a mapping at the top level"))
        doc.data = None
    return doc


def load_file(path: str | Path) -> LoadedDocument:
    """Read and parse a definition file."""
    p = Path(path)
    try:
        if p.stat().st_size > MAX_FILE_BYTES:  # not even read: a huge file must not stall other commands
            doc = LoadedDocument(file=str(path), source=SourceMap(file=str(path)))
            doc.findings.append(Finding("yaml-limit", (), f"the file is larger than {MAX_FILE_BYTES // (1024 * 1024)} MiB",
                                        hint="split it into several definitions, or keep data in documents"))
            return doc
        text = p.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        doc = LoadedDocument(file=str(path), source=SourceMap(file=str(path)))
        doc.findings.append(Finding("yaml-syntax", (), f"cannot read the file: {exc}"))
        return doc
    return load_text(text, str(path))


def _syntax_hint(problem: str) -> str | None:
    if "tab" in problem:
        return "indent with spaces, not tabs"
    if "mapping values are not allowed" in problem:
        return "quote strings that contain `: ` (for example templates), or indent the nested mapping"
    if "found character '%'" in problem or "found character '@'" in problem:
        return "quote values that start with `%` or `@`"
    if "found undefined alias" in problem or "expected <block end>" in problem:
        return "check the indentation of this line against the lines above it"
    if "{" in problem:
        return "a value starting with `{{` must be quoted in YAML"
    return None

#!/usr/bin/env python3
"""Write the documentation's reference pages from the code, so they never drift from it.

* ``reference/definitions.md``  the definition language: every kind and every type it uses, with
  their fields, types and descriptions, from the JSON Schema ``ergon schema`` prints
  (:mod:`compiler.schema_export`, itself generated from the IR);
* ``reference/cli.md``          every ``ergon`` command with its help and parameters, from the
  cyclopts app (:data:`flows.cli.COMMANDS`), by cyclopts' own documentation generator;
* ``reference/diagnostics.md``  every diagnostic code ``ergon check`` can report, with what it
  means (:data:`compiler.errors.CODES`).

Usage (from the repository root, with the project's virtualenv)::

    python3 dev.py docs              # write the pages into docs/reference/
    python3 dev.py docs --check      # exit 1, naming them, when a committed page is stale
    python3 dev.py docs --build      # also build the site with --strict (broken links fail it)

The pages are committed; ``tests/test_docs.py`` fails when one is stale.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

DOCS = Path(__file__).resolve().parent
ROOT = DOCS.parent
REFERENCE = DOCS / "reference"
REFRESH = "python3 dev.py docs"
#: The site builder: Zensical, by the makers of Material for MkDocs, which builds this
#: mkdocs.yml and the docs/ folder as they are (Material for MkDocs is out of maintenance).
BUILDER = "zensical"

if str(ROOT) not in sys.path:  # run as a script: the packages are the repository's own
    sys.path.insert(0, str(ROOT))


def _banner(source: str) -> str:
    return f"<!-- Generated from {source} by `{REFRESH}`: edit the source, not this file. -->\n\n"


def _cell(text: str) -> str:
    """Text fit for one cell of a Markdown table: one line, pipes escaped."""
    return " ".join(str(text).split()).replace("|", "\\|")


# ---------------------------------------------------------------- the definition language


def _ref_name(ref: str) -> str:
    return ref.rsplit("/", 1)[-1]


def _type(schema: dict[str, Any]) -> str:
    """A field's type in words, a reference to another type as a link to its section."""
    if "$ref" in schema:
        name = _ref_name(schema["$ref"])
        return f"[{name}](#{name.lower()})"
    if "const" in schema:
        return f'`"{schema["const"]}"`' if isinstance(schema["const"], str) else f"`{schema['const']}`"
    if "enum" in schema:
        return "one of " + ", ".join(f"`{value}`" for value in schema["enum"])
    for union in ("oneOf", "anyOf"):
        if union in schema:
            return " or ".join(dict.fromkeys(_type(option) for option in schema[union]))
    kind = schema.get("type")
    if isinstance(kind, list):
        return " or ".join(_type({**schema, "type": one}) for one in kind)
    if kind == "array":
        return f"list of {_type(schema['items'])}" if schema.get("items") else "list"
    if kind == "object":
        values = schema.get("additionalProperties")
        if isinstance(values, dict) and values:
            return f"map of string to {_type(values)}"
        return "mapping"
    if kind in ("string", "integer", "number", "boolean", "null"):
        return str(kind)
    return "any value"


def _fields_table(schema: dict[str, Any]) -> list[str]:
    properties: dict[str, Any] = schema.get("properties", {})
    if not properties:
        return ["No fields.", ""]
    required = set(schema.get("required", ()))
    lines = ["| Field | Type | Required | Description |", "| --- | --- | --- | --- |"]
    for name, field in properties.items():
        description = field.get("description", "")
        if "default" in field and field["default"] not in (None, [], {}) and name not in required:
            description = f"{description} Default: `{_cell(_json(field['default']))}`.".strip()
        lines.append(f"| `{name}` | {_cell(_type(field))} | {'yes' if name in required else ''} | {_cell(description)} |")
    return [*lines, ""]


def _json(value: Any) -> str:
    import json

    return json.dumps(value, ensure_ascii=False)


def definitions_page() -> str:
    from compiler.ir import KINDS
    from compiler.schema_export import definition_schema

    out = [
        _banner("the JSON Schema `ergon schema` prints (compiler/schema_export.py, from the IR)"),
        "# Definition language",
        "",
        "Every file under `definitions/` holds one definition of one of these kinds, named by its",
        "`kind` field (a process may leave it out). `ergon check` checks each one against this",
        "schema and much more (see [diagnostic codes](diagnostics.md)); `ergon schema` prints the",
        "JSON Schema itself, for editors' YAML language servers.",
        "",
        "Kinds: " + ", ".join(f"[{kind}](#kind-{kind})" for kind in KINDS) + ". The types they use are",
        "listed after them, under [Types](#types).",
        "",
    ]
    types: dict[str, dict[str, Any]] = {}
    for kind in KINDS:
        schema = definition_schema(kind)
        for name, sub in schema.get("$defs", {}).items():
            if name in types and types[name] != sub:
                raise SystemExit(f"two kinds define the type {name} differently; the reference cannot name both")
            types[name] = sub
        out += [f"## {kind} {{ #kind-{kind} }}", ""]
        if schema.get("description"):
            out += [" ".join(schema["description"].split()), ""]
        out += _fields_table(schema)
    out += ["## Types", ""]
    for name in sorted(types, key=str.lower):
        sub = types[name]
        out += [f"### {name} {{ #{name.lower()} }}", ""]
        if sub.get("description"):
            out += [" ".join(sub["description"].split()), ""]
        if "properties" in sub or sub.get("type") == "object":
            out += _fields_table(sub)
        else:
            out += [f"A {_type(sub)}.", ""]
    return "\n".join(out).rstrip() + "\n"


# ---------------------------------------------------------------- the CLI


def cli_page() -> str:
    from flows.cli import app

    # cyclopts writes some usage lines from the running program's arguments: under
    # `python -m pytest` they read "ergon documents add -m pytest …"
    argv, sys.argv = sys.argv, ["ergon"]
    try:
        text = app.generate_docs(output_format="markdown", heading_level=1)
    finally:
        sys.argv = argv
    # the site's own "on this page" list already shows every command: drop cyclopts' copy of it
    text = re.sub(r"\n## Table of Contents\n.*?(?=\n\*\*Commands\*\*:)", "", text, count=1, flags=re.DOTALL)
    return _banner("the `ergon` command's cyclopts app (flows/cli)") + text.rstrip() + "\n"


# ---------------------------------------------------------------- diagnostic codes


def diagnostics_page() -> str:
    from compiler.errors import CODES

    out = [
        _banner("`CODES` in compiler/errors.py"),
        "# Diagnostic codes",
        "",
        "Every problem `ergon check` finds is reported with its file, line and column, the path",
        "inside the document, one of these stable codes, a message and, when there is a fix to",
        "suggest, a hint:",
        "",
        "```text",
        "definitions/contract_review.yaml:12:7: error[unknown-target] nodes.a.transitions[0].to: ...",
        "  hint: did you mean `flag_clauses`?",
        "```",
        "",
        "`ergon check --json` prints the same diagnostics as one JSON array.",
        "",
        "| Code | Meaning |",
        "| --- | --- |",
    ]
    out += [f"| `{code}` | {_cell(meaning)} |" for code, meaning in CODES.items()]
    return "\n".join(out) + "\n"


# ---------------------------------------------------------------- writing, checking, building

#: Each generated page (relative to docs/) and the function that writes it.
PAGES = {
    "reference/definitions.md": definitions_page,
    "reference/cli.md": cli_page,
    "reference/diagnostics.md": diagnostics_page,
}


def generate() -> dict[str, str]:
    """Every generated page's text, by its path relative to docs/."""
    return {path: make() for path, make in PAGES.items()}


def stale() -> list[str]:
    """The generated pages whose committed text differs from what the code generates now."""
    return [path for path, text in generate().items()
            if not (DOCS / path).exists() or (DOCS / path).read_text(encoding="utf-8") != text]


_ANSI = re.compile(r"\x1b\[[0-9;]*m")


def build(strict: bool = True, docs: Path = DOCS) -> tuple[int, str, float]:
    """Build the site into a temporary folder: (exit status, output, seconds). The builder keeps its
    site and cache inside the project folder it is given, so it builds a copy of mkdocs.yml and
    ``docs`` (docs/ unless told), and the checkout is left untouched."""
    exe = shutil.which(BUILDER, path=str(Path(sys.executable).parent)) or shutil.which(BUILDER)
    if exe is None:
        return 127, f"`{BUILDER}` is not installed: install the docs extra (pip install -e '.[docs]')", 0.0
    with tempfile.TemporaryDirectory(prefix="ergon-docs-") as tmp:
        shutil.copy2(ROOT / "mkdocs.yml", tmp)
        shutil.copytree(docs, Path(tmp) / "docs", ignore=shutil.ignore_patterns("__pycache__", "*.py"))
        start = time.monotonic()
        done = subprocess.run([exe, "build", *(["--strict"] if strict else [])], cwd=tmp,
                              capture_output=True, text=True, env={**os.environ, "NO_COLOR": "1"})
        seconds = time.monotonic() - start
        built = (Path(tmp) / "site" / "index.html").exists()
    output = _ANSI.sub("", done.stdout + done.stderr)  # its warnings come coloured even when piped
    if done.returncode == 0 and not built:
        return 1, output + "\nthe build wrote no site/index.html", seconds
    return done.returncode, output, seconds


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Write the documentation's generated reference pages.")
    parser.add_argument("--check", action="store_true", help="write nothing; exit 1 when a committed page is stale")
    parser.add_argument("--build", action="store_true", help="then build the site with --strict into a temporary folder")
    args = parser.parse_args(argv)
    if args.check:
        old = stale()
        if old:
            print(f"stale generated pages: {', '.join(old)}; refresh them with `{REFRESH}`", file=sys.stderr)
            return 1
        print("generated pages are up to date")
    else:
        for path, text in generate().items():
            target = DOCS / path
            target.parent.mkdir(parents=True, exist_ok=True)
            if not target.exists() or target.read_text(encoding="utf-8") != text:
                target.write_text(text, encoding="utf-8")
                print(f"wrote docs/{path}")
    if args.build:
        status, output, seconds = build()
        print(output, end="" if output.endswith("\n") else "\n")
        if status != 0:
            print(f"the documentation site does not build (`{BUILDER} build --strict`, status {status})", file=sys.stderr)
            return 1
        print(f"site built with --strict in {seconds:.1f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())

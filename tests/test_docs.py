"""The documentation site: its generated reference pages match the code, and it builds with --strict.

The reference pages under ``docs/reference/`` are generated (``docs/generate.py``) and committed;
a change to the IR, the CLI or the diagnostic codes that is not followed by ``python3 dev.py docs``
fails here, naming the stale pages. The site is built with the docs extra's builder (part of the
test extra): a broken link, a missing anchor or a page the nav names that does not exist fails.
"""

from __future__ import annotations

import importlib.util
import shutil
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def _generator():
    spec = importlib.util.spec_from_file_location("ergon_docs_generate", ROOT / "docs" / "generate.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


gen = _generator()


@pytest.fixture(scope="module")
def pages() -> dict[str, str]:
    return gen.generate()


def test_generated_pages_are_committed_and_current(pages):
    stale = [path for path, text in pages.items()
             if not (gen.DOCS / path).exists() or (gen.DOCS / path).read_text(encoding="utf-8") != text]
    assert not stale, f"stale generated docs: {', '.join(stale)}; refresh them with `{gen.REFRESH}` and commit them"


def test_definition_reference_has_every_kind_and_field(pages):
    from compiler.ir import KINDS
    from compiler.schema_export import definition_schema

    text = pages["reference/definitions.md"]
    for kind in KINDS:
        assert f"## {kind} {{ #kind-{kind} }}" in text
        schema = definition_schema(kind)
        for field in schema["properties"]:
            assert f"| `{field}` |" in text, f"{kind}.{field} missing from the definition reference"
        for name in schema.get("$defs", {}):
            assert f"### {name} {{ #{name.lower()} }}" in text
    # a field's description and a link to the type it holds
    assert "| `initial` | string | yes | Id of the first node. |" in text
    assert "[AgentNode](#agentnode)" in text


def test_cli_reference_has_every_command(pages):
    from flows.cli import COMMANDS

    text = pages["reference/cli.md"]
    for name, (_target, help_text) in COMMANDS.items():
        assert f"## ergon {name}\n" in text, f"`ergon {name}` missing from the CLI reference"
        assert help_text.split("\n")[0] in text
    assert "### ergon runs list" in text  # a group's subcommands too, with their parameters
    assert "`--json, --no-json`" in text


def test_diagnostics_reference_has_every_code(pages):
    from compiler.errors import CODES

    text = pages["reference/diagnostics.md"]
    for code in CODES:
        assert f"| `{code}` |" in text, f"diagnostic code {code} missing from the reference"
    assert "| `duplicate-key` | a mapping has the same key twice |" in text


def _require_builder() -> None:
    if shutil.which(gen.BUILDER, path=str(Path(sys.executable).parent)) is None and shutil.which(gen.BUILDER) is None:
        pytest.fail(f"`{gen.BUILDER}` is not installed; the test extra installs it (python3 dev.py setup, or "
                    "pip install -e '.[docs]')")


def test_site_builds_strict():
    _require_builder()
    status, output, _seconds = gen.build()
    assert status == 0, f"the documentation site does not build with --strict:\n{output}"


def test_strict_build_refuses_a_broken_link(tmp_path):
    """The gate above means something: a link to a page that does not exist fails the build."""
    _require_builder()
    docs = tmp_path / "docs"
    shutil.copytree(gen.DOCS, docs, ignore=shutil.ignore_patterns("__pycache__"))
    index = docs / "index.md"
    index.write_text(index.read_text(encoding="utf-8") + "\nSee [the guide](no-such-page.md).\n", encoding="utf-8")
    status, output, _seconds = gen.build(docs=docs)
    assert status != 0
    assert "no-such-page" in output or "does not exist" in output

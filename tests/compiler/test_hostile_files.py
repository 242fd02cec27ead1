"""Hostile or broken definition files: each is a finding with a place, in bounded time and
memory — never a hang, a traceback, or a definition that silently disappears."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from compiler import check_workspace, load_workspace
from compiler.source import MAX_DEPTH, MAX_FILE_BYTES, load_file, load_text

ERGON = [sys.executable, "-m", "flows.cli"]


def _only(text: str):
    doc = load_text(text, "x.yaml")
    assert doc.data is None, "a refused document yields no data"
    [finding] = doc.findings
    return finding


def test_an_alias_bomb_stops_at_the_expansion_limit():
    bomb = 'a0: &a0 ["x","x","x","x","x","x","x","x","x","x"]\n' + "".join(
        f"a{i}: &a{i} [" + ",".join([f"*a{i - 1}"] * 10) + "]\n" for i in range(1, 10))  # 10^10 copies
    finding = _only(bomb)
    assert finding.code == "yaml-limit" and "expands to more than 200,000 values" in finding.message
    assert "alias" in finding.hint


def test_an_alias_that_contains_itself_is_a_cycle():
    finding = _only("a: &a [*a]\n")
    assert finding.code == "yaml-limit" and "cycle" in finding.message


@pytest.mark.parametrize("depth", [MAX_DEPTH + 1, 500, 5000])
def test_deep_nesting_is_refused_with_the_limit(depth):
    finding = _only("a: " + "[" * depth + "]" * depth + "\n")
    assert finding.code in ("yaml-limit", "yaml-syntax") and "nest" in finding.message


def test_nesting_up_to_the_limit_loads():
    depth = MAX_DEPTH - 2
    doc = load_text("a: " + "[" * depth + "]" * depth + "\n", "x.yaml")
    assert doc.findings == [] and isinstance(doc.data, dict)


def test_an_integer_too_long_to_convert_is_a_finding_that_says_to_quote_it():
    finding = _only("a: " + "9" * 5000 + "\n")
    assert finding.code == "yaml-limit" and "4300 digits" in finding.message and "quote" in finding.hint


def test_a_mapping_as_a_key_is_refused():
    doc = load_text("? {a: 1}\n: x\nkind: process\n", "x.yaml")
    assert [f.code for f in doc.findings] == ["wrong-type"]


@pytest.mark.parametrize("text", ["null\n", "~\n", "42\n", "- a\n"])
def test_a_document_that_is_not_a_mapping_never_disappears(text, tmp_path):
    (tmp_path / "doc.yaml").write_text(text)
    report = check_workspace(load_workspace([tmp_path / "doc.yaml"]))
    assert [d.code for d in report.errors] == ["not-a-mapping"]


def test_a_file_larger_than_the_limit_is_not_read(tmp_path):
    big = tmp_path / "big.yaml"
    big.write_text("kind: process\n" + "# padding\n" * (MAX_FILE_BYTES // 10 + 1))
    doc = load_file(big)
    assert doc.data is None and [f.code for f in doc.findings] == ["yaml-limit"]
    assert "larger than 4 MiB" in doc.findings[0].message


def test_one_hostile_file_does_not_stop_the_others_being_checked(tmp_path):
    (tmp_path / "bomb.yaml").write_text(Path(__file__).parents[1].joinpath(
        "fixtures", "invalid", "yaml_limit_alias_bomb.yaml").read_text())
    (tmp_path / "self.yaml").write_text("a: &a [*a]\n")
    (tmp_path / "bad.yaml").write_text("kind: process\nprocess: p\ninitial: nowhere\nnodes: {done: {type: final}}\n")
    out = subprocess.run([*ERGON, "check", str(tmp_path)], capture_output=True, text=True, timeout=60)
    assert out.returncode == 1
    assert "Traceback" not in out.stdout + out.stderr
    assert "bomb.yaml:7:5: error[yaml-limit]" in out.stdout and "self.yaml:1:4: error[yaml-limit]" in out.stdout
    assert "bad.yaml" in out.stdout, "the other definitions are still checked"



def test_a_cron_field_of_a_hundred_thousand_digits_is_a_finding():
    from compiler.schedule_syntax import cron_error

    assert "outside 0-59" in cron_error("9" * 100_000 + " * * * *")
    assert "larger than" in cron_error("*/" + "9" * 100_000 + " * * * *")

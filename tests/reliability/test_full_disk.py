"""A full disk, for real: ``ERGON_HOME`` on a 4 MB tmpfs filled to the last block, then real
``ergon`` processes — ``secrets set`` (with its key file already made, and making it), ``run``,
``documents add``.

Each says in one ``error:`` line that the disk is full, naming the file (the store's, the key
file, the document), exits 1 and prints no traceback; no key file is left empty, no document
half-written, no temporary file behind. Once space is freed, ``secrets set`` works again and the
secrets stored before still open. Mounting needs root: elsewhere these tests are skipped.

An empty key file left by an older Ergon (which wrote the key in place) is replaced by a new key
while no secret is stored, and refused with what to do when secrets were sealed with the key it
lost.
"""

from __future__ import annotations

import errno
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ERGON = [sys.executable, "-m", "flows.cli"]
ROOT = Path(__file__).resolve().parents[2]
TINY = """\
format_version: 1
kind: process
process: tiny
initial: done
context:
  schema:
    type: object
nodes:
  done: {type: final}
"""


def _env(home: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items()
           if not k.startswith("ERGON_SECRET_") and k not in ("ERGON_DATABASE_URL", "ERGON_DEFINITIONS")}
    return {**env, "ERGON_HOME": str(home), "COLUMNS": "400"}


def ergon(args: list[str], home: Path, stdin: str = "") -> subprocess.CompletedProcess:
    return subprocess.run(ERGON + args, env=_env(home), input=stdin, capture_output=True, text=True,
                          timeout=120, cwd=ROOT)


def one_error_line(done: subprocess.CompletedProcess) -> str:
    """The command's only stderr line, which must be an ``error:`` sentence (no traceback)."""
    assert "Traceback" not in done.stderr, done.stderr
    lines = [line for line in done.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("error: "), done.stderr
    return lines[0]


@pytest.fixture
def disk(tmp_path):
    """A 4 MB tmpfs mounted for the test (root only), unmounted after it."""
    if os.geteuid() != 0:
        pytest.skip("mounting a tmpfs to fill needs root")
    mount = tmp_path / "disk"
    mount.mkdir()
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=4M", "tmpfs", str(mount)], capture_output=True,
                          text=True)
    if done.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {done.stderr.strip()}")
    try:
        yield mount
    finally:
        subprocess.run(["umount", "-l", str(mount)], check=False)


def fill(folder: Path) -> Path:
    """Write a new file into ``folder`` until its disk has no block left; returns it (delete to
    free). Called before each step: a failed command may free a block it had taken (SQLite's
    shared-memory file), which the next one would find."""
    filler = folder / f"filler-{len(list(folder.glob('filler-*')))}"
    fd = os.open(filler, os.O_WRONLY | os.O_CREAT, 0o600)
    try:
        for size in (65536, 4096, 512, 1):  # down to the last partial block
            try:
                while True:
                    os.write(fd, b"\0" * size)
            except OSError as exc:
                assert exc.errno == errno.ENOSPC
    finally:
        os.close(fd)
    return filler


def home_with_store(disk: Path, name: str, template: Path) -> Path:
    home = disk / name
    home.mkdir(mode=0o700)
    shutil.copy(template, home / "ergon.db")
    return home


def reveal(home: Path, name: str) -> str:
    done = subprocess.run([sys.executable, "-c", f"from flows import secrets; print(secrets.reveal({name!r}))"],
                          env=_env(home), capture_output=True, text=True, timeout=60, cwd=ROOT)
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


def test_a_full_disk_is_one_sentence_and_leaves_nothing_half_written(disk, migrated_template, tmp_path):
    keyed = home_with_store(disk, "keyed", migrated_template)
    fresh = home_with_store(disk, "fresh", migrated_template)
    first = ergon(["secrets", "set", "FIRST"], keyed, stdin="first-value")
    assert first.returncode == 0, first.stderr
    key_file = keyed / "secret.key"
    key_text = key_file.read_text()
    definition = tmp_path / "tiny.yaml"
    definition.write_text(TINY)
    document = tmp_path / "contract.txt"
    document.write_text("a contract of some length\n" * 400)

    fill(disk)
    # the store cannot grow: `secrets set` with its key file already there
    refused = ergon(["secrets", "set", "SECOND"], keyed, stdin="second-value")
    line = one_error_line(refused)
    assert refused.returncode == 1
    assert str(keyed / "ergon.db") in line and "disk is full" in line and "ERGON_HOME" in line
    assert key_file.read_text() == key_text, "the key file is untouched"

    # the key file cannot be made: no key file at all rather than an empty one
    fill(disk)
    no_key = ergon(["secrets", "set", "FIRST"], fresh, stdin="fresh-value")
    line = one_error_line(no_key)
    assert no_key.returncode == 1 and str(fresh / "secret.key") in line and "no space left" in line
    assert not (fresh / "secret.key").exists()

    fill(disk)
    run = ergon(["run", str(definition)], keyed)
    line = one_error_line(run)
    assert run.returncode == 1 and str(keyed / "ergon.db") in line and "disk is full" in line

    fill(disk)
    added = ergon(["documents", "add", str(document)], keyed)
    line = one_error_line(added)
    assert added.returncode == 1 and str(keyed / "documents") in line and "no space left" in line
    assert sorted(p.name for p in (keyed / "documents").iterdir()) == [], "no document, no reserved id, no temp file"
    for home in (keyed, fresh):
        leftovers = [p.name for p in home.iterdir() if p.name.endswith(".tmp")]
        assert leftovers == []

    for filler in disk.glob("filler-*"):
        filler.unlink()

    again = ergon(["secrets", "set", "SECOND"], keyed, stdin="second-value")
    assert again.returncode == 0, again.stderr
    made = ergon(["secrets", "set", "FIRST"], fresh, stdin="fresh-value")
    assert made.returncode == 0, made.stderr
    assert (fresh / "secret.key").stat().st_size > 0
    assert reveal(keyed, "FIRST") == "first-value"
    assert reveal(keyed, "SECOND") == "second-value"
    assert reveal(fresh, "FIRST") == "fresh-value"
    added = ergon(["documents", "add", str(document)], keyed)
    assert added.returncode == 0, added.stderr


def test_an_empty_key_file_is_replaced_only_while_no_secret_needs_it(store, tmp_path):
    home = tmp_path / "home"
    home.mkdir()
    key_file = home / "secret.key"
    key_file.touch(mode=0o600)  # what an older Ergon left when the disk filled as it made the key
    env_store = {"ERGON_DATABASE_URL": store}

    def cli(args: list[str], stdin: str = "") -> subprocess.CompletedProcess:
        return subprocess.run(ERGON + args, env={**_env(home), **env_store}, input=stdin, capture_output=True,
                              text=True, timeout=120, cwd=ROOT)

    listed = cli(["secrets", "rotate"])  # reading commands do not make keys: they say what to do
    assert listed.returncode == 2 and "holds no key" in one_error_line(listed)
    made = cli(["secrets", "set", "CRM_TOKEN"], stdin="v1")
    assert made.returncode == 0, made.stderr
    assert "k1:" in key_file.read_text()

    key_file.write_text("")  # the key is lost after a secret was sealed with it
    refused = cli(["secrets", "set", "OTHER"], stdin="v2")
    line = one_error_line(refused)
    assert refused.returncode == 2
    assert "holds no key" in line and "CRM_TOKEN" in line and "k1" in line and "ergon secrets delete" in line
    assert key_file.read_text() == "", "no new key is made while a secret needs the old one"

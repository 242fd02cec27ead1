"""The store's own faults and unbounded input, through real ``ergon`` processes: each is one
``error:`` sentence and an exit status, never a traceback.

* A damaged store (pages of the runs, users and tasks tables overwritten, or the file's header):
  ``runs list``, ``users list``, ``tasks list`` name the file and what helps.
* A store another process holds locked (``BEGIN EXCLUSIVE``, with and without SQLite's exclusive
  locking mode): a command says the store is busy and which process holds it, within the busy
  timeout (30 s) and a margin for start-up.
* Numbers past their range (``tokens create --expires-days 999999999``, ``runs list --limit``
  past SQLite's integers), a 50 MB secret value and a 5,000-character secret name are refused;
  the name is not echoed back whole, and nothing is stored.
"""

from __future__ import annotations

import os
import shutil
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

ERGON = [sys.executable, "-m", "flows.cli"]
ROOT = Path(__file__).resolve().parents[2]
BUSY_TIMEOUT_S = 30


def _env(database: Path, home: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("ERGON_SECRET_")}
    return {**env, "ERGON_DATABASE_URL": f"sqlite:///{database}", "ERGON_HOME": str(home), "COLUMNS": "400"}


def ergon(args: list[str], database: Path, home: Path, stdin: str | bytes = "") -> subprocess.CompletedProcess:
    return subprocess.run(ERGON + args, env=_env(database, home), input=stdin, capture_output=True,
                          text=isinstance(stdin, str), timeout=120, cwd=ROOT)


def one_error_line(stderr: str) -> str:
    assert "Traceback" not in stderr, stderr
    lines = [line for line in stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("error: "), stderr
    return lines[0]


@pytest.fixture
def copy(migrated_template, tmp_path):
    """copy(name) → a new migrated store file of its own."""
    def make(name: str = "ergon.db") -> Path:
        folder = tmp_path / name.removesuffix(".db")
        folder.mkdir()
        shutil.copy(migrated_template, folder / "ergon.db")
        return folder / "ergon.db"
    return make


def _overwrite_tables(database: Path, tables: tuple[str, ...]) -> None:
    """Overwrite every page that roots one of ``tables`` or its indexes with garbage."""
    with sqlite3.connect(database) as conn:
        size = conn.execute("PRAGMA page_size").fetchone()[0]
        marks = ",".join("?" * len(tables))
        pages = [r[0] for r in conn.execute(
            f"SELECT rootpage FROM sqlite_master WHERE tbl_name IN ({marks}) AND rootpage > 0", tables)]
    conn.close()
    assert pages
    with open(database, "r+b") as f:
        for page in pages:
            f.seek((page - 1) * size)
            f.write(b"\xde\xad\xbe\xef" * (size // 4))


def test_a_damaged_store_is_named_with_what_helps(copy, tmp_path):
    damaged = copy("damaged.db")
    _overwrite_tables(damaged, ("runs", "users", "human_tasks"))
    for args in (["runs", "list"], ["users", "list"], ["tasks", "list"]):
        done = ergon(args, damaged, tmp_path / "home")
        line = one_error_line(done.stderr)
        assert done.returncode == 1, args
        assert f"the store {damaged} is damaged" in line, line
        assert "ergon runs export" in line and ".recover" in line and "ERGON_DATABASE_URL" in line

    not_a_database = copy("header.db")
    with open(not_a_database, "r+b") as f:
        f.write(b"this is no database file" * 8)
    done = ergon(["runs", "list"], not_a_database, tmp_path / "home")
    assert done.returncode == 1 and f"the store {not_a_database} is damaged" in one_error_line(done.stderr)


HOLD = """
import sqlite3, sys, time
conn = sqlite3.connect(sys.argv[1], isolation_level=None)
if sys.argv[2] == "exclusive-mode":
    conn.execute("PRAGMA locking_mode=EXCLUSIVE")  # readers are shut out too
conn.execute("BEGIN EXCLUSIVE")
conn.execute("UPDATE alembic_version SET version_num = version_num")
print("held", flush=True)
time.sleep(float(sys.argv[3]))
"""


def test_a_store_held_locked_by_another_process_is_busy_and_names_it(copy, tmp_path):
    held_stores = {mode: copy(f"{mode}.db") for mode in ("exclusive-mode", "wal")}
    holders = {mode: subprocess.Popen([sys.executable, "-c", HOLD, str(db), mode, str(BUSY_TIMEOUT_S * 3)],
                                      stdout=subprocess.PIPE, text=True)
               for mode, db in held_stores.items()}
    try:
        for holder in holders.values():
            assert holder.stdout is not None and holder.stdout.readline().strip() == "held"
        started = time.monotonic()
        # under the exclusive locking mode even a reader waits; in WAL mode a writer does
        commands = {
            "exclusive-mode": ["runs", "list"],
            "wal": ["secrets", "set", "CRM_TOKEN"],
        }
        value = tmp_path / "value"
        value.write_text("a-value")  # from a file: each command waits for the lock, not for its input
        running = {mode: subprocess.Popen(ERGON + args, env=_env(held_stores[mode], tmp_path / mode), cwd=ROOT,
                                          stdin=value.open(), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                          text=True)
                   for mode, args in commands.items()}
        for mode, proc in running.items():
            _, stderr = proc.communicate(timeout=BUSY_TIMEOUT_S + 30)
            took = time.monotonic() - started
            line = one_error_line(stderr)
            assert proc.returncode == 1, (mode, stderr)
            assert f"the store {held_stores[mode]} is busy" in line, line
            assert f"process {holders[mode].pid} (" in line, f"the holder is named: {line}"
            assert "30 s" in line and "try again" in line
            assert took < BUSY_TIMEOUT_S + 25, f"{mode}: answered after {took:.0f} s"
    finally:
        for holder in holders.values():
            holder.kill()
            holder.wait()


def test_numbers_past_their_range_are_refused_in_one_sentence(copy, tmp_path):
    import getpass

    database = copy()
    me = getpass.getuser()  # tokens are made by the OS user's own Ergon user
    made = ergon(["users", "create-admin", me], database, tmp_path / "home")
    assert made.returncode == 0, made.stderr
    for args, option in ((["tokens", "create", "--expires-days", "999999999"], "--expires-days"),
                         (["runs", "list", "--limit", "99999999999999999999"], "--limit"),
                         (["tasks", "list", "--limit", "99999999999999999999"], "--limit"),
                         (["runs", "list", "--limit", "-1"], "--limit"),
                         (["server", "start", "--port", "70000"], "--port"),
                         (["ui", "--port", "99999999999999999999"], "--port"),
                         (["serve", "--webhook-port", "70000"], "--webhook-port"),
                         (["serve", "--limit", "0"], "--limit")):
        done = ergon(args, database, tmp_path / "home")
        assert done.returncode == 2, (args, done.stderr)
        assert "Traceback" not in done.stderr and "OverflowError" not in done.stderr
        assert f"for {option}. Must be" in " ".join(done.stderr.split()), done.stderr
    longest = ergon(["tokens", "create", "--expires-days", "36500"], database, tmp_path / "home")
    assert longest.returncode == 0, longest.stderr
    revert = ergon(["revert", "tiny", "99999999999999999999"], database, tmp_path / "home")
    assert revert.returncode == 2 and "numbers go from 1 to" in one_error_line(revert.stderr)


def test_a_huge_secret_value_and_an_overlong_name_are_refused_and_nothing_is_stored(copy, tmp_path):
    database, home = copy(), tmp_path / "home"
    huge = ergon(["secrets", "set", "BIG"], database, home, stdin=b"x" * (50 * 1024 * 1024))
    line = one_error_line(huge.stderr.decode())
    assert huge.returncode == 2 and "larger than 64 KiB" in line

    name = "N" * 5000
    long_name = ergon(["secrets", "set", name], database, home, stdin="a-value")
    line = one_error_line(long_name.stderr)
    assert long_name.returncode == 2 and "at most 128 characters" in line and "5000" in line
    assert len(line) < 300, "the name is not echoed back whole"
    bad_name = ergon(["secrets", "set", "é" * 5000], database, home, stdin="a-value")
    assert bad_name.returncode == 2 and len(one_error_line(bad_name.stderr)) < 300
    deleted = ergon(["secrets", "delete", name], database, home)
    assert deleted.returncode == 1 and len(one_error_line(deleted.stderr)) < 300

    at_bound = ergon(["secrets", "set", "AT_BOUND"], database, home, stdin="y" * (64 * 1024))
    assert at_bound.returncode == 0, at_bound.stderr
    listed = ergon(["secrets", "list", "--json"], database, home)
    assert '"AT_BOUND"' in listed.stdout and '"BIG"' not in listed.stdout and "NNNN" not in listed.stdout

"""`ergon secrets …` as a user types it: the value comes from stdin, never from argv, and no
command prints it."""

from __future__ import annotations

import os
import subprocess
import sys

ERGON = [sys.executable, "-m", "flows.cli", "secrets"]
VALUE = "tok-9d2b7e-plaintext-marker"


def cli(args, env, stdin: str = ""):
    return subprocess.run(ERGON + args, check=False, env=env, input=stdin, capture_output=True, text=True, timeout=120)


def _env(store, tmp_path) -> dict:
    env = {k: v for k, v in os.environ.items() if not k.startswith("ERGON_SECRET_")}
    return {**env, "ERGON_DATABASE_URL": store, "ERGON_HOME": str(tmp_path / "home"), "COLUMNS": "200"}


def test_set_reads_stdin_list_delete_and_nothing_prints_the_value(store, tmp_path, database_bytes, monkeypatch):
    env = _env(store, tmp_path)
    done = cli(["set", "CRM_TOKEN"], env, stdin=VALUE + "\n")
    assert done.returncode == 0, done.stderr
    assert "stored secret CRM_TOKEN (key k1)" in done.stdout
    assert (tmp_path / "home" / "secret.key").stat().st_mode & 0o777 == 0o600  # made on first set
    listed = cli(["list"], env)
    assert listed.returncode == 0 and "CRM_TOKEN" in listed.stdout and "k1" in listed.stdout
    as_json = cli(["list", "--json"], env)
    assert '"name": "CRM_TOKEN"' in as_json.stdout
    rotated = cli(["rotate", "--new-key"], env)
    assert rotated.returncode == 0 and "re-encrypted 1 secret(s) under key k2: CRM_TOKEN" in rotated.stdout
    for result in (done, listed, as_json, rotated):
        assert VALUE not in result.stdout + result.stderr
    assert VALUE.encode() not in database_bytes()

    from flows import secrets

    monkeypatch.setenv("ERGON_HOME", str(tmp_path / "home"))  # the key file the CLI made
    for name in [k for k in os.environ if k.startswith("ERGON_SECRET_")]:
        monkeypatch.delenv(name)
    assert secrets.reveal("CRM_TOKEN") == VALUE, "the trailing newline of stdin is not part of the value"

    gone = cli(["delete", "CRM_TOKEN"], env)
    assert gone.returncode == 0 and "deleted secret CRM_TOKEN" in gone.stdout
    again = cli(["delete", "CRM_TOKEN"], env)
    assert again.returncode == 1 and "no secret named `CRM_TOKEN`" in again.stderr


def test_a_value_on_the_command_line_is_refused_and_nothing_is_stored(store, tmp_path):
    env = _env(store, tmp_path)
    refused = cli(["set", "CRM_TOKEN", VALUE], env)
    assert refused.returncode != 0
    empty = cli(["set", "CRM_TOKEN"], env, stdin="")
    assert empty.returncode == 2 and "no value on standard input" in empty.stderr
    from flows.store import secrets as secret_store

    assert secret_store.get_secret("CRM_TOKEN") is None


def test_a_bad_key_file_mode_is_reported_with_the_fix(store, tmp_path):
    from flows.secrets.keys import generate_key

    key_file = tmp_path / "ergon.keys"
    key_file.write_text(f"k1:{generate_key()}\n")
    key_file.chmod(0o640)
    env = {**_env(store, tmp_path), "ERGON_SECRET_KEY_FILE": str(key_file)}
    done = cli(["set", "X"], env, stdin=VALUE)
    assert done.returncode == 2
    assert f"run `chmod 600 {key_file}`" in done.stderr.replace("\n", "")

"""Ergon reads the user's Prefect settings where Prefect does, and picks the same winner.

:mod:`flows.prefect.user_settings` reads Prefect's sources without importing Prefect. Each case
below puts settings in some of the sources (environment, ``.env``, ``prefect.toml``,
``pyproject.toml``, a profile found the ways Prefect finds one); Prefect's own ``Settings()``,
built in a fresh interpreter with exactly that folder and environment, says which value wins,
and Ergon's reader must name the same value.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from flows.prefect import user_settings
from flows.prefect.config import CLIENT_DEFAULTS
from flows.prefect.user_settings import API_URL, Setting

MAX_RETRIES = Setting("PREFECT_CLIENT_MAX_RETRIES", ("client", "max_retries"))


def _profiles(active: str | None, **profiles: dict[str, str]) -> str:
    lines = [f'active = "{active}"'] if active else []
    for name, values in profiles.items():
        lines.append(f"[profiles.{name}]")
        lines += [f'{k} = "{v}"' for k, v in values.items()]
    return "\n".join(lines) + "\n"


#: name → (environment, files by path relative to the case folder; "home/…" is the user's home)
CASES: dict[str, tuple[dict[str, str], dict[str, str]]] = {
    "nothing": ({}, {}),
    "environment": ({"PREFECT_API_URL": "http://env/api", "PREFECT_CLIENT_MAX_RETRIES": "3"}, {}),
    "dotenv": ({}, {"proj/.env": "PREFECT_API_URL=http://dotenv/api\nprefect_client_max_retries=4\n"}),
    "prefect.toml": ({}, {"proj/prefect.toml": '[api]\nurl = "http://toml/api"\n[client]\nmax_retries = 5\n'}),
    "dotted keys": ({}, {"proj/prefect.toml": 'api.url = "http://dotted/api"\nclient.max_retries = 6\n'}),
    "pyproject": ({}, {"proj/pyproject.toml": '[tool.prefect.api]\nurl = "http://pyproject/api"\n'}),
    "home profile": ({}, {"home/.prefect/profiles.toml": _profiles("dev", dev={"PREFECT_API_URL": "http://dev/api"})}),
    "PREFECT_PROFILE": ({"PREFECT_PROFILE": "prod"}, {"home/.prefect/profiles.toml": _profiles(
        "dev", dev={"PREFECT_API_URL": "http://dev/api"}, prod={"PREFECT_API_URL": "http://prod/api",
                                                                "PREFECT_CLIENT_MAX_RETRIES": "7"})}),
    "unknown active profile": ({}, {"home/.prefect/profiles.toml": _profiles(
        "gone", dev={"PREFECT_API_URL": "http://dev/api"})}),
    "PREFECT_PROFILES_PATH": ({"PREFECT_PROFILES_PATH": "{case}/elsewhere/p.toml"}, {
        "elsewhere/p.toml": _profiles("x", x={"PREFECT_API_URL": "http://elsewhere/api"})}),
    "PREFECT_HOME": ({"PREFECT_HOME": "{case}/phome"}, {
        "phome/profiles.toml": _profiles("x", x={"PREFECT_API_URL": "http://phome/api"})}),
    "profiles_path in prefect.toml": ({}, {
        "proj/prefect.toml": 'profiles_path = "{case}/p2.toml"\n',
        "p2.toml": _profiles("y", y={"PREFECT_API_URL": "http://p2/api"})}),
    "environment over prefect.toml": ({"PREFECT_API_URL": "http://env/api"},
                                      {"proj/prefect.toml": '[api]\nurl = "http://toml/api"\n'}),
    ".env over prefect.toml": ({}, {"proj/.env": "PREFECT_API_URL=http://dotenv/api\n",
                                    "proj/prefect.toml": '[api]\nurl = "http://toml/api"\n'}),
    "prefect.toml over profile": ({}, {
        "proj/prefect.toml": '[api]\nurl = "http://toml/api"\n',
        "home/.prefect/profiles.toml": _profiles("dev", dev={"PREFECT_API_URL": "http://dev/api",
                                                             "PREFECT_CLIENT_MAX_RETRIES": "8"})}),
    "pyproject over profile": ({}, {
        "proj/pyproject.toml": '[tool.prefect.client]\nmax_retries = 9\n',
        "home/.prefect/profiles.toml": _profiles("dev", dev={"PREFECT_CLIENT_MAX_RETRIES": "8"})}),
}

_PREFECT_SAYS = """
import json
from prefect.settings.models.root import Settings
s = Settings()
print(json.dumps({"url": s.api.url, "max_retries": s.client.max_retries}))
"""


def _prepare(root: Path, name: str) -> tuple[Path, dict[str, str]]:
    env_extra, files = CASES[name]
    case = root / name.replace(" ", "_").replace(".", "_")
    (case / "proj").mkdir(parents=True)
    (case / "home").mkdir()
    for rel, text in files.items():
        path = case / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text.replace("{case}", str(case)))
    env = {k: v for k, v in os.environ.items() if not k.startswith("PREFECT_")}
    env["HOME"] = str(case / "home")
    env.update({k: v.replace("{case}", str(case)) for k, v in env_extra.items()})
    return case / "proj", env


def _prefect(folder: Path, env: dict[str, str]) -> dict:
    done = subprocess.run([sys.executable, "-c", _PREFECT_SAYS], cwd=folder, env=env, capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.strip().splitlines()[-1])


def _ergon(folder: Path, env: dict[str, str], monkeypatch) -> dict:
    with monkeypatch.context() as m:
        for key in [k for k in os.environ if k.startswith("PREFECT_") or k == "HOME"]:
            m.delenv(key)
        for key, value in env.items():
            m.setenv(key, value)
        m.chdir(folder)
        url, retries = user_settings.first(API_URL), user_settings.first(MAX_RETRIES)
    return {"url": url.value if url else None, "max_retries": int(retries.value) if retries else None}


def test_ergon_and_prefect_agree_on_every_source_and_their_order(tmp_path, monkeypatch):
    prepared = {name: _prepare(tmp_path, name) for name in CASES}
    with ThreadPoolExecutor(max_workers=2) as pool:
        prefect = dict(zip(prepared, pool.map(lambda p: _prefect(*p), prepared.values()), strict=True))
    default_retries = prefect["nothing"]["max_retries"]
    disagree = {}
    for name, (folder, env) in prepared.items():
        ours = _ergon(folder, env, monkeypatch)
        ours["max_retries"] = ours["max_retries"] if ours["max_retries"] is not None else default_retries
        if ours != prefect[name]:
            disagree[name] = {"prefect": prefect[name], "ergon": ours}
    assert not disagree, json.dumps(disagree, indent=2)
    assert prefect["nothing"]["url"] is None and prefect["PREFECT_PROFILE"]["url"] == "http://prod/api", \
        "the cases reach the sources they name"


def test_ergons_client_defaults_name_each_prefect_setting_by_both_of_its_names(tmp_path, monkeypatch):
    """Each default Ergon applies reaches the same Prefect setting through its environment name
    and through its path in prefect.toml, and changes it from Prefect's own default."""
    from prefect.settings.models.root import Settings

    def read(path: tuple[str, ...]) -> object:
        node: object = Settings()
        for key in path:
            node = getattr(node, key)
        return node

    for key in [k for k in os.environ if k.startswith("PREFECT_")]:
        monkeypatch.delenv(key)
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.chdir(tmp_path)
    for setting, value in CLIENT_DEFAULTS.items():
        prefects_default = read(setting.path)
        with monkeypatch.context() as m:
            m.setenv(setting.env, value)
            by_env = read(setting.path)
        section, key = ".".join(setting.path[:-1]), setting.path[-1]
        (tmp_path / "prefect.toml").write_text(f'[{section}]\n{key} = "{value}"\n')
        by_file = read(setting.path)
        (tmp_path / "prefect.toml").unlink()
        assert by_env == by_file != prefects_default, (setting, by_env, by_file, prefects_default)


def test_a_setting_in_the_users_profile_is_not_overridden_by_ergons_default(tmp_path):
    """A user who set the client's retries in their profile keeps them in Ergon's processes."""
    home = tmp_path / "home"
    (home / ".prefect").mkdir(parents=True)
    (home / ".prefect" / "profiles.toml").write_text(_profiles("dev", dev={"PREFECT_CLIENT_MAX_RETRIES": "2"}))
    env = {k: v for k, v in os.environ.items() if not k.startswith("PREFECT_")} | {"HOME": str(home)}
    probe = ("import flows.prefect, json; from prefect.settings import get_current_settings as g; "
             "s = g(); print(json.dumps([s.client.max_retries, s.worker.query_seconds]))")
    done = subprocess.run([sys.executable, "-c", probe], cwd=tmp_path, env=env, capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout.strip().splitlines()[-1]) == [2, 2.0], \
        "the profile's retries are kept; Ergon's default fills what nothing set (worker polls every 2 s)"

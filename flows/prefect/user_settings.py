"""Which Prefect settings the user configured, and where — read without importing Prefect.

Prefect takes a setting from the first of these sources that has it (Prefect 3.9's
``PrefectBaseSettings.settings_customise_sources``), and so does this module:

1. the environment (``PREFECT_API_URL=…``);
2. ``.env`` in the current folder;
3. ``prefect.toml`` in the current folder (``[api]`` / ``url = …``);
4. ``pyproject.toml`` in the current folder (``[tool.prefect.api]`` / ``url = …``);
5. the active profile (``prefect profile use``, ``prefect config set``, ``prefect cloud login``):
   ``PREFECT_PROFILE`` or the ``active`` entry of ``profiles.toml``, found at
   ``PREFECT_PROFILES_PATH`` / the same key in ``.env``, ``prefect.toml``, ``pyproject.toml`` /
   ``$PREFECT_HOME/profiles.toml`` / ``~/.prefect/profiles.toml``; without a profiles file,
   Prefect's own default profile, which configures no API.

Ergon must know two things before ``import prefect`` (Prefect reads its settings and sets up
logging when imported): whether the user set one of the few settings Ergon gives a default
(:mod:`flows.prefect.config` then leaves it alone), and which API the user configured, if any
(:mod:`flows.prefect.server` starts its local server only when none is). Importing Prefect to
ask it costs a process about a second, and a command such as ``ergon runs list`` needs neither.
The values Prefect itself then uses come from Prefect's own settings model; that this module
agrees with it is checked against Prefect in ``tests/prefect/test_user_settings.py``.
"""

from __future__ import annotations

import importlib.util
import os
import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import Any


@dataclass(frozen=True)
class Setting:
    """A Prefect setting: its environment/profile name and its path in a TOML file."""

    env: str
    path: tuple[str, ...]


API_URL = Setting("PREFECT_API_URL", ("api", "url"))


@dataclass(frozen=True)
class Found:
    """Where a setting was found, and its value there."""

    source: str  # "environment", ".env", "prefect.toml", "pyproject.toml", "profile" or "default profile"
    value: Any
    where: str  # for people: the file (and profile) it is in

    @property
    def by_user(self) -> bool:
        """Set by the user (Prefect's own default profile is not a choice anyone made)."""
        return self.source != "default profile"


def found(setting: Setting) -> list[Found]:
    """Every source that sets ``setting``, in Prefect's order of precedence (the first wins)."""
    hits: list[Found] = []
    if value := os.environ.get(setting.env):
        hits.append(Found("environment", value, f"the environment ({setting.env})"))
    dotenv = _dotenv()
    if value := dotenv.get(setting.env):
        hits.append(Found(".env", value, str(Path(".env").resolve())))
    for name, table in (("prefect.toml", ()), ("pyproject.toml", ("tool", "prefect"))):
        value = _lookup(_toml(Path(name)), (*table, *setting.path))
        if value is not None and not isinstance(value, dict):
            hits.append(Found(name, value, str(Path(name).resolve())))
    profile = active_profile()
    if profile is not None and (value := profile.settings.get(setting.env)) is not None:
        source = "default profile" if profile.bundled else "profile"
        hits.append(Found(source, value, f"profile `{profile.name}` in {profile.path}"))
    return hits


def first(setting: Setting) -> Found | None:
    """The source Prefect takes ``setting`` from, or None when nothing sets it."""
    hits = found(setting)
    return hits[0] if hits else None


def set_by_user(setting: Setting) -> bool:
    """Whether any source the user controls sets ``setting``."""
    return any(hit.by_user for hit in found(setting))


@dataclass(frozen=True)
class Profile:
    name: str
    path: Path
    settings: dict[str, Any]
    bundled: bool  # Prefect's own default profiles file: no profiles file of the user's exists


def active_profile() -> Profile | None:
    """The profile Prefect would load (None in Prefect's test mode, which loads none)."""
    if _test_mode():
        return None
    path, bundled = profiles_path()
    data = _toml(path)
    name = os.environ.get("PREFECT_PROFILE") or data.get("active")
    profiles = data.get("profiles") or {}
    if not name or name not in profiles:  # Prefect falls back to its own default profile
        path, bundled = _bundled_profiles(), True
        data = _toml(path)
        name = data.get("active", "ephemeral")
        profiles = data.get("profiles") or {}
    return Profile(str(name), path, dict(profiles.get(name) or {}), bundled)


def profiles_path() -> tuple[Path, bool]:
    """Where Prefect reads profiles from, and whether that is its own bundled default file."""
    if env_path := os.environ.get("PREFECT_PROFILES_PATH"):
        return Path(env_path).expanduser(), False
    if value := _dotenv().get("PREFECT_PROFILES_PATH"):
        return Path(value).expanduser(), False
    for name, keys in (("prefect.toml", ("profiles_path",)), ("pyproject.toml", ("tool", "prefect", "profiles_path"))):
        if value := _lookup(_toml(Path(name)), keys):
            return Path(value).expanduser(), False
    if home := os.environ.get("PREFECT_HOME"):
        return Path(home).expanduser() / "profiles.toml", False
    default = Path("~/.prefect/profiles.toml").expanduser()
    return (default, False) if default.exists() else (_bundled_profiles(), True)


def _bundled_profiles() -> Path:
    spec = importlib.util.find_spec("prefect")
    assert spec is not None and spec.submodule_search_locations, "Prefect is installed with Ergon"
    return Path(next(iter(spec.submodule_search_locations))) / "settings" / "profiles.toml"


def _test_mode() -> bool:
    return any(os.environ.get(name) for name in ("PREFECT_TEST_MODE", "PREFECT_UNIT_TEST_MODE",
                                                 "PREFECT_TESTING_UNIT_TEST_MODE", "PREFECT_TESTING_TEST_MODE"))


def _dotenv() -> dict[str, str]:
    """``.env`` of the current folder, keys upper-cased (Prefect's settings ignore their case)."""
    if not Path(".env").is_file():
        return {}
    from dotenv import dotenv_values

    return {k.upper(): v for k, v in dotenv_values(".env").items() if v}


def _toml(path: Path) -> dict[str, Any]:
    try:
        with path.open("rb") as fh:
            return tomllib.load(fh)
    except (OSError, tomllib.TOMLDecodeError):
        # Prefect refuses an invalid prefect.toml itself, with its own message, when it is imported
        return {}


def _lookup(data: dict[str, Any], keys: tuple[str, ...]) -> Any:
    for key in keys:
        if not isinstance(data, dict):
            return None
        data = data.get(key)  # type: ignore[assignment]
    return data

"""The entry in the project's ``prefect.toml`` that points Prefect at Ergon's local server.

When no Prefect API is configured anywhere, Ergon starts its own local server
(:mod:`flows.prefect.server`) and writes its address into ``prefect.toml`` in the current
folder, so that every ``prefect`` command run there — ``prefect worker start``, ``prefect
deployment run``, ``prefect flow-run logs`` — reaches the same server with nothing exported.
The ``url`` line carries the comment :data:`MARKER`: that is how Ergon tells its own entry from
an address the user wrote (which it never changes or removes).

Everything else in the file (the user's other settings, their comments) is kept: the file is
edited with tomlkit, which round-trips TOML.
"""

from __future__ import annotations

from pathlib import Path

import tomlkit
from tomlkit.items import Item, Table

#: The comment on the ``url`` line Ergon wrote.
MARKER = "ergon-local-server"
#: What a new file starts with.
HEADER = (
    "Prefect settings for this folder (Prefect reads this file in every `prefect` command run here).\n"
    f"The api.url marked `{MARKER}` was written by Ergon: no Prefect API was configured, so Ergon\n"
    "started its local server (`ergon server status`). Configure your own API (a profile, the\n"
    "environment, or an url here without the marker) and Ergon uses yours and drops its line."
)
PATH = Path("prefect.toml")


def _load(path: Path) -> tomlkit.TOMLDocument | None:
    try:
        return tomlkit.parse(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return None
    except Exception:  # noqa: BLE001 - an unreadable file is the user's: Prefect reports it, Ergon leaves it
        return None


def _url_item(doc: tomlkit.TOMLDocument) -> Item | None:
    api = doc.get("api")
    if not isinstance(api, Table | dict):
        return None
    item = api.get("url")
    return item if isinstance(item, Item) else None


def is_ergons(path: Path = PATH) -> bool:
    """Whether the file's ``api.url`` is the line Ergon wrote."""
    doc = _load(path)
    item = _url_item(doc) if doc is not None else None
    return item is not None and MARKER in (item.trivia.comment or "")


def write(url: str, path: Path = PATH) -> None:
    """Point ``api.url`` at Ergon's local server (a new file, or a new/changed line in the file)."""
    doc = _load(path) if path.exists() else None
    if doc is None:
        if path.exists():
            raise ValueError(f"{path} is not valid TOML: fix it or set PREFECT_API_URL")
        doc = tomlkit.document()
        for line in HEADER.splitlines():
            doc.add(tomlkit.comment(line))
        doc.add(tomlkit.nl())
    item = tomlkit.item(url)
    item.comment(f"{MARKER}: Ergon's local Prefect server")
    api = doc.get("api")
    if isinstance(api, Table | dict):
        api["url"] = item
    else:
        table = tomlkit.table()
        table.add("url", item)
        doc["api"] = table
    path.write_text(tomlkit.dumps(doc), encoding="utf-8")


def forget(path: Path = PATH) -> bool:
    """Remove Ergon's ``api.url`` line (and the file, when nothing else is left in it); returns
    whether there was one. An address the user wrote is never touched."""
    if not is_ergons(path):
        return False
    doc = _load(path)
    assert doc is not None
    api = doc["api"]
    assert isinstance(api, Table | dict)
    del api["url"]
    if not api:
        del doc["api"]
    text = tomlkit.dumps(doc)
    ours = "".join(f"# {line}\n" for line in HEADER.splitlines())
    if not doc.unwrap() and text.strip() in ("", ours.strip()):  # only what Ergon wrote was left
        path.unlink()
    else:
        path.write_text(text, encoding="utf-8")
    return True

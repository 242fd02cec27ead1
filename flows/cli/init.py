"""`ergon init [DIR]`: scaffold an Ergon project in a data engineer's own folder.

The files come from the package (:mod:`flows.templates`, package data in the wheel): a
``definitions/`` folder with one small example of each runnable kind (process, pipeline,
interaction, agent template with its forms, workflow), the Python tool they call, a test of each
example (``definitions/tests/*.test.yaml``, run by ``ergon test``), a ``prefect.yaml`` with no deployments (``ergon deploy`` fills it), and ``README-ergon.md`` saying
how to check, run and deploy. Existing files are never overwritten unless ``--force`` is given:
without it, ``init`` names the files in the way and changes nothing.

It also writes a ``.gitignore`` (:data:`GITIGNORE`) keeping out of version control what Ergon
writes into the folder and must not be committed: ``.ergon/`` (the store ``ergon.db`` with every
answer and sealed secret, ``secret.key``, the local Prefect server's database, documents, logs)
and Python's caches of the project's tools. A ``.gitignore`` the folder has already is kept: the
lines it lacks are appended.
"""

from __future__ import annotations

import re
from importlib import resources
from importlib.resources.abc import Traversable
from pathlib import Path
from typing import Annotated

from cyclopts import Parameter
from rich.console import Console

from flows.cli.output import error

out = Console(highlight=False, soft_wrap=True)
err = Console(stderr=True, highlight=False, soft_wrap=True)

#: The project file written beside the templates (generated: its `name:` is the folder's).
PREFECT_FILE = "prefect.yaml"
#: What Ergon writes into a project folder that must not be committed.
GITIGNORE = (
    "# Ergon's local state: the store (ergon.db), the secret key (secret.key), the local Prefect\n"
    "# server's database, documents and logs. Never commit it: it holds answers and sealed secrets.\n"
    ".ergon/\n"
    "# Python's caches of the project's tools\n"
    "__pycache__/\n"
    "*.py[cod]\n"
)


def gitignore(current: str | None) -> str | None:
    """The ``.gitignore`` text with :data:`GITIGNORE`'s entries: all of it for a new file, the
    ``current`` text plus the entries it lacks, or None when it has them all."""
    if current is None:
        return GITIGNORE
    have = {line.strip() for line in current.splitlines()}
    wanted = [line for line in GITIGNORE.splitlines() if line and not line.startswith("#")]
    missing = [line for line in wanted if line not in have and line.rstrip("/") not in have]
    if not missing:
        return None
    return current + ("" if not current or current.endswith("\n") else "\n") + "# Ergon\n" + "".join(f"{m}\n" for m in missing)


def template_files() -> dict[str, str]:
    """Relative path → text of every file ``init`` writes (the templates, then prefect.yaml)."""
    files: dict[str, str] = {}

    def walk(node: Traversable, prefix: str) -> None:
        for child in sorted(node.iterdir(), key=lambda c: c.name):
            if child.name == "__pycache__" or child.name.endswith(".pyc"):
                continue
            rel = f"{prefix}{child.name}"
            if child.is_dir():
                walk(child, rel + "/")
            else:
                files[rel] = child.read_text(encoding="utf-8")

    walk(resources.files("flows.templates") / "project", "")
    return files


def prefect_project(name: str) -> str:
    """``prefect.yaml`` for a project folder called ``name`` (no deployments yet)."""
    from flows.cli.deploy import PROJECT_HEADER

    slug = re.sub(r"[^A-Za-z0-9_-]+", "-", name).strip("-") or "ergon"
    return PROJECT_HEADER.replace("\nname: ergon\n", f"\nname: {slug}\n", 1)


def init(
    directory: str = ".",
    *,
    force: Annotated[bool, Parameter(name="--force", negative="")] = False,
) -> int:
    """Create an Ergon project: example definitions, a Python tool, prefect.yaml, a README.

    Parameters
    ----------
    directory
        The project folder (created when missing; default: the current folder).
    force
        Overwrite files that already exist.
    """
    root = Path(directory).expanduser()
    if root.exists() and not root.is_dir():
        return error(f"{directory} exists and is not a folder", code=1)
    from flows.cli.shadowing import refusals

    for sentence in (shadowed := refusals(str(root.resolve()))):  # a worker started here would import it, not Ergon
        error(sentence, code=1)
    if shadowed:
        return 1
    files = template_files()
    files[PREFECT_FILE] = prefect_project(root.resolve().name)
    existing = [rel for rel in files if (root / rel).exists()]
    if existing and not force:
        return error(f"{len(existing)} file(s) already exist in {directory}: {', '.join(existing)} "
                  "(nothing written; --force overwrites them)", code=1)
    try:
        for rel, text in files.items():
            target = root / rel
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(text, encoding="utf-8")
        ignore = root / ".gitignore"
        ignored = gitignore(ignore.read_text(encoding="utf-8") if ignore.is_file() else None)
        if ignored is not None:
            ignore.write_text(ignored, encoding="utf-8")
    except OSError as exc:
        return error(f"cannot write the project into {directory}: {exc.strerror or exc}", code=1)
    out.print(f"created an Ergon project in {root} ({len(files)} files{', overwriting ' + str(len(existing)) if existing else ''})")
    for rel in files:
        out.print(f"  {rel}")
    if ignored is not None:
        out.print(f"  .gitignore{' (Ergon entries added)' if ignored != GITIGNORE else ''}")
    out.print("next: [bold]ergon check[/] and [bold]ergon test[/], then [bold]ergon run hello_process --input name=Ada[/] "
              "(see README-ergon.md)" + ("" if root.resolve() == Path.cwd().resolve() else f", from {root}"))
    return 0

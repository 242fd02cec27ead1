"""`ergon deploy`: Prefect deployments for definitions, written to prefect.yaml and registered.

``ergon deploy [NAME …] [--work-pool P] [--version latest|N]`` has ``prefect deploy``'s
semantics: the chosen definitions' deployments are written into ``prefect.yaml`` (entries of
other deployments, and every other key, are kept — comments too), then Prefect's own
``prefect deploy`` registers exactly those entries with the API. One deployment per definition,
named after it (``NAME/NAME``): entrypoint ``flows.prefect.deployments.flow_NAME`` (or
``…__vN`` for a pinned published version; a module path, importable wherever Ergon is installed),
the flow's typed parameters, schedules from the
definition's cron and interval triggers, tags (``ergon``, its kind, its version), the work pool
(created as a ``process`` pool when missing) and version = the content hash.

Run it from the project folder (where ``definitions/`` is): each deployment's ``pull`` step names
that folder (its absolute path), so a worker started anywhere — by systemd, from another
folder — runs the flow runs there and compiles the definitions it finds. A ``pull`` the user
wrote on an entry (a ``git_clone``) is kept when the entry is written again.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Annotated, Any

from cyclopts import Parameter
from rich.console import Console

from flows.cli.output import error
from flows.errors import ErgonError

out = Console(highlight=False, soft_wrap=True)
err = Console(stderr=True, highlight=False, soft_wrap=True)

#: What a new prefect.yaml starts with (an existing file keeps its own content).
PROJECT_HEADER = """\
# Prefect project file. `ergon deploy` writes one deployment per definition here; each
# entrypoint is a module attribute holding the compiled flow (flows.prefect.deployments.flow_<name>).
name: ergon
prefect-version: 3.9.1

build: null
push: null

pull:
  - prefect.deployments.steps.set_working_directory:
      directory: "{{ $PWD }}"

deployments: []
"""
#: `prefect deploy` imports every chosen entrypoint (Prefect + the definitions): allow for a slow machine.
REGISTER_TIMEOUT_SECONDS = 600


class DeployError(ErgonError):
    """A deployment that cannot be made; the message says what to change."""


def deploy(
    names: list[str] | None = None,
    *,
    work_pool: Annotated[str, Parameter(name="--work-pool")] = "ergon",
    version: Annotated[str, Parameter(name="--version")] = "latest",
    prefect_file: Annotated[str, Parameter(name="--prefect-file")] = "prefect.yaml",
    register: Annotated[bool, Parameter(name="--register", negative="--no-register")] = True,
    supervised: Annotated[bool, Parameter(name="--supervised", negative=())] = False,
) -> int:
    """Write the deployments of definitions into prefect.yaml and register them with Prefect.

    Parameters
    ----------
    names
        Definitions to deploy (default: every runnable definition in the definitions folder).
    work_pool
        Prefect work pool the deployments run on (created as a `process` pool when missing).
    version
        `latest`: runs execute the definition as the folder holds it when they start; `N`: its
        published version N, pinned.
    prefect_file
        The Prefect project file to write (other deployments and keys in it are kept).
    register
        Register the deployments with the Prefect API (`--no-register` only writes the file).
    supervised
        Every run of these deployments is supervised (processes only; tagged `ergon:supervised`).
    """
    from compiler import CompileError

    try:
        pinned = parse_version(version)
        entries = build_entries(names or [], version=pinned, work_pool=work_pool, supervised=supervised)
        path = Path(prefect_file)
        write_prefect_yaml(path, entries)
        out.print(f"wrote {len(entries)} deployment(s) to {path}")
        api = register_deployments(path, entries, work_pool) if register else None
    except CompileError as exc:
        for d in exc.diagnostics:
            print(d.format(), file=sys.stderr)
        return 2
    except DeployError as exc:
        return error(exc)
    for entry in entries:
        when = ", ".join(_describe(s) for s in entry["schedules"]) or "no schedule"
        out.print(f"  [bold]{entry['name']}/{entry['name']}[/] → {entry['entrypoint']}  [dim]{entry['tags'][-1]}, "
                  f"version {entry['version'][:12]}, pool {work_pool}, {when}[/]")
    if api is not None and entries:
        next_steps(api, entries, work_pool)
    return 0


def parse_version(text: str) -> int | None:
    """``latest`` → None; ``N`` (a published version number) → N."""
    if text.strip().lower() == "latest":
        return None
    if text.strip().isdigit() and int(text) >= 1:
        return int(text)
    raise DeployError(f"--version takes `latest` or a published version number (1, 2, …), not `{text}`")


def build_entries(names: list[str], *, version: int | None, work_pool: str, supervised: bool = False) -> list[dict[str, Any]]:
    """The prefect.yaml entries of the chosen definitions (all runnable ones when none is named)."""
    from compiler import CompileError
    from compiler.plan import RUNNABLE_KINDS
    from flows.catalog import Catalog, DefinitionNotFound
    from flows.prefect.deployments import Target, compile_target, deployment_entry
    from flows.versions import VersionNotFound

    catalog = Catalog.load()
    chosen = names or sorted(catalog.ws.named(*RUNNABLE_KINDS))
    if not chosen:
        raise DeployError("no runnable definition to deploy in the definitions folder: add one (`ergon init` writes an "
                          "example of each kind), or point ERGON_DEFINITIONS at the folder that holds them")
    if version is not None:
        from flows.store import db

        db.init_db()  # published versions live in the store
    entries, errors = [], []
    for name in chosen:
        try:
            unit = catalog.unit_for(name)
            compiled = compile_target(Target(unit.name or name, version), catalog)
        except (DefinitionNotFound, VersionNotFound) as exc:
            raise DeployError(exc.args[0]) from None
        except CompileError as exc:
            errors.extend(exc.diagnostics)
            continue
        if supervised and compiled.plan.control != "state_machine":
            raise DeployError(f"`{compiled.plan.name}` is a {compiled.plan.kind}: only processes run supervised; deploy it "
                              "without --supervised")
        entries.append(deployment_entry(compiled, version=version, work_pool=work_pool, supervised=supervised,
                                        folder=str(Path.cwd())))
    if errors:
        raise CompileError(errors)
    return entries


def write_prefect_yaml(path: Path, entries: list[dict[str, Any]]) -> None:
    """Replace or add the entries (matched by deployment name); keep everything else in the file."""
    from ruamel.yaml import YAML

    from flows.prefect.deployments import is_ergons_pull

    yaml = YAML()  # round-trip: the file's comments, order and other deployments survive
    yaml.preserve_quotes = True
    yaml.width = 4096  # one line per value: readable diffs
    yaml.indent(mapping=2, sequence=4, offset=2)
    doc = yaml.load(path.read_text(encoding="utf-8") if path.is_file() else PROJECT_HEADER)
    if doc is None:
        doc = yaml.load(PROJECT_HEADER)
    if not isinstance(doc, dict):
        raise DeployError(f"{path} is not a Prefect project file (a mapping with `deployments:`): fix it, or move it "
                          "away and `ergon deploy` writes a new one")
    deployments = doc.get("deployments") or []
    if not isinstance(deployments, list):
        raise DeployError(f"{path}: `deployments` must be a list: write `deployments: []` (or a list of entries)")
    index = {d.get("name"): i for i, d in enumerate(deployments) if isinstance(d, dict)}
    for entry in entries:
        if entry["name"] in index:
            before = deployments[index[entry["name"]]]
            if "pull" in before and not is_ergons_pull(before["pull"]):
                entry = {**entry, "pull": before["pull"]}  # steps the user wrote (a git_clone) stay
            deployments[index[entry["name"]]] = entry
        else:
            deployments.append(entry)
    doc["deployments"] = deployments
    with path.open("w", encoding="utf-8") as fh:
        yaml.dump(doc, fh)


def register_deployments(path: Path, entries: list[dict[str, Any]], work_pool: str) -> Any:
    """``prefect deploy`` for exactly these entries (Prefect imports each entrypoint itself), on the
    API Prefect's configuration names (Ergon's local server when none does)."""
    from flows.prefect.deployments import ensure_work_pool
    from flows.prefect.server import ensure_api

    api = ensure_api()
    created, pool_type = ensure_work_pool(work_pool)
    if created:
        out.print(f"created work pool `{work_pool}` (process)")
    elif pool_type != "process":
        out.print(f"[yellow]note:[/] work pool `{work_pool}` is a `{pool_type}` pool; Ergon's deployments expect "
                  "workers that start flow runs as processes in the project folder")
    command = [sys.executable, "-m", "prefect", "--no-prompt", "deploy", "--prefect-file", str(path)]
    for entry in entries:
        command += ["--name", entry["name"]]
    done = subprocess.run(command, capture_output=True, text=True, env=dict(os.environ),
                          timeout=REGISTER_TIMEOUT_SECONDS)
    if done.returncode != 0:
        detail = (done.stdout + done.stderr).strip().splitlines()[-15:]
        raise DeployError("prefect deploy failed:\n  " + "\n  ".join(detail))
    return api


def next_steps(api: Any, entries: list[dict[str, Any]], work_pool: str) -> None:
    """What to run next, with the API the deployments went to and where that setting comes from."""
    whose = "Ergon's local server; prefect.toml here points `prefect` commands at it" if api.managed \
        else f"from {api.where}"
    out.print(f"registered with the Prefect API at {api.url} ({whose})")
    out.print("next, from this folder:")
    out.print(f"  prefect worker start --pool {work_pool}   [dim]# runs the flow runs of these deployments; keep it running[/]")
    first = entries[0]["name"]
    out.print(f"  prefect deployment run '{first}/{first}'   [dim]# start one (or from Prefect's UI, or its schedules)[/]")


def _describe(schedule: dict[str, Any]) -> str:
    if "cron" in schedule:
        text = f"cron {schedule['cron']} {schedule.get('timezone', '')}".strip()
    elif "interval" in schedule:
        text = f"every {schedule['interval']:g} s"
    else:
        text = "rrule"
    return text if schedule.get("active", True) else f"{text} (inactive)"

"""Commands about interactions: `interactions list`, `interactions run NAME --data FILE|JSON`."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Any

from cyclopts import App, Parameter
from rich.console import Console

from compiler.ir import EnvironmentDef, InteractionDef
from flows.cli.output import error

interactions_app = App(name="interactions", help="List interactions and run one on its own.")

out = Console(highlight=False, soft_wrap=True)
err = Console(stderr=True, highlight=False, soft_wrap=True)


def _load_data(data: str | None, fallback: Any) -> Any:
    """``--data``: a JSON/YAML file, or inline JSON; without it the interaction's ``test_data``."""
    import yaml

    if data is None:
        return (fallback[0] if isinstance(fallback, list) and fallback else fallback) or {}
    path = Path(data)
    if path.is_file():
        return yaml.safe_load(path.read_text(encoding="utf-8"))
    return json.loads(data)


@interactions_app.command(name="list")
def interactions_list(*, json_: Annotated[bool, Parameter(name="--json")] = False) -> int:
    """List the interactions of `definitions/` with the model or environment they name.

    Parameters
    ----------
    json_
        Print JSON.
    """
    from flows.catalog import Catalog

    ws = Catalog.load().ws
    rows = []
    for name, unit in sorted(ws.named("interaction").items()):
        defn = unit.defn
        if not isinstance(defn, InteractionDef):  # a file that did not parse
            continue
        rows.append({"name": name, "model": defn.environment or defn.model, "structured": defn.result_schema is not None,
                     "description": defn.description, "file": str(unit.file)})
    if json_:
        print(json.dumps(rows))
        return 0
    if not rows:
        out.print("no interactions")
    for row in rows:
        model = row["model"] or "[dim]default[/]"
        out.print(f"[bold]{row['name']}[/]  {model}  [dim]{row['description'] or ''}[/]")
    return 0


@interactions_app.command(name="run")
def interactions_run(
    name: str,
    *,
    data: Annotated[str | None, Parameter(name=["--data", "-d"])] = None,
    model: str | None = None,
    json_: Annotated[bool, Parameter(name="--json")] = False,
    record: str | None = None,
    replay: str | None = None,
) -> int:
    """Run one interaction alone and print its result (exit 2: bad input, 1: the model failed).

    Parameters
    ----------
    name
        Interaction name.
    data
        Input: a JSON/YAML file or inline JSON (default: the interaction's `test_data`).
    model
        A litellm model string or an environment name (default: the interaction's, then ERGON_MODEL, then offline).
    json_
        Print the result as one JSON line.
    record
        Store every model response in this cassette file.
    replay
        Answer from this cassette file; a request not in it fails.
    """
    import asyncio
    import contextlib

    import flows.prefect  # noqa: F401 - registers `prefect-secret:` / `prefect-var:` keys (imports no prefect)
    from compiler.errors import did_you_mean
    from flows.catalog import Catalog
    from flows.llm.cassettes import use_cassette
    from flows.llm.gateway import resolve_target
    from flows.llm.interactions import InvalidInput, interaction_model, run_interaction
    from flows.llm.types import LlmError

    ws = Catalog.load().ws
    interaction = ws.get(name, "interaction")
    if not isinstance(interaction, InteractionDef):
        hint = did_you_mean(name, ws.named("interaction"))
        error(f"no interaction named `{name}`" + (f"; {hint}" if hint else ""))
        return 2
    try:
        payload = _load_data(data, interaction.test_data)
    except (json.JSONDecodeError, OSError) as exc:
        return error(f"--data is neither a file nor JSON: {exc}")
    environments = {n: u.defn for n, u in ws.named("environment").items() if isinstance(u.defn, EnvironmentDef)}
    named = interaction_model(interaction, model)
    target = resolve_target(named, environments)
    note = " (offline: no model configured)" if target.kind == "offline" else f" ({target.kind})"
    err.print(f"[dim]{interaction.name} → {target.name}{note}[/]")
    cassette = use_cassette(record=record, replay=replay) if (record or replay) else contextlib.nullcontext()
    try:
        with cassette:
            result = asyncio.run(run_interaction(interaction, payload or {}, model=model, environments=environments))
    except InvalidInput as exc:
        return error(exc)
    except LlmError as exc:
        return error(exc, code=1)
    if json_:
        print(json.dumps(result, ensure_ascii=False))
    elif isinstance(result, str):
        print(result)
    else:
        print(json.dumps(result, ensure_ascii=False, indent=2))
    return 0

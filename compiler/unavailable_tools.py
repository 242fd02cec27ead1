"""Built-in tools of the Vertesia catalog that Ergon does not provide, and why.

The seed's "Built-in Tools" page names tools an agent may list. Ergon provides most of them
(:data:`compiler.tools.BUILTIN_TOOLS`); the ones below it does not, because a local deployment
has nothing it could defend behind them (a shell sandbox, a vision model, a web search
provider), or because what they would do is done another way here (schedules are a definition's
reviewed ``triggers``). Naming one in an agent's ``tools``, a template step's
``tools_allowed``, a tool node's ``tool`` or a workflow activity is refused by ``ergon check``
with the reason and what to use instead, rather than the bare "no tool is named" a misspelt
name gets. A project Python tool or a manifest tool of the same name is a tool like any other:
the checker only consults this table for names no catalogue provides.
"""

from __future__ import annotations

from dataclasses import dataclass

from compiler.errors import DocPath, Finding


@dataclass(frozen=True)
class Unavailable:
    """Why a catalog tool is not provided, and what a definition uses instead."""

    why: str
    instead: str


UNAVAILABLE_TOOLS: dict[str, Unavailable] = {
    "execute_shell": Unavailable(
        "it runs shell commands in a managed sandbox, and Ergon has no sandbox it can defend "
        "(a model's commands would run with the worker's rights, files and network)",
        "compute with a workflow `runJavascriptCode` step (the JavaScript sandbox: time and memory capped, "
        "no files or network), or write the operation as a Python tool in `tools/*.py` that an operator reviews"),
    "web_search": Unavailable(
        "it needs a web search provider and its API key, and Ergon configures none",
        "call a search API with `http_request`, or serve a search tool from an HTTP tool server "
        "(`tools/servers.yaml`, its key as `secret:NAME`), or write a Python tool in `tools/*.py`"),
    "view_image": Unavailable(
        "it shows an image to the model, which needs a vision model and image messages Ergon's tool loop does not send",
        "describe the image in text (a document or an artifact) and give the agent that text"),
    "analyze_image": Unavailable(
        "it runs ImageMagick commands on images and PDFs, a shell tool Ergon does not sandbox",
        "use `inspect_pdf` for a PDF's pages and text, or a reviewed Python tool in `tools/*.py` for image processing"),
    "schedule_workflow": Unavailable(
        "a model would create recurring runs at run time; in Ergon schedules are a definition's `triggers` "
        "(`cron` or `interval`), checked by `ergon check` and deployed by `ergon serve` / `ergon deploy`",
        "declare the schedule under the definition's `triggers:` (pause one with `ergon schedules pause`)"),
    "update_index_configuration": Unavailable(
        "the local document store's vector index has no configuration to change: its dimensions are the embedding model's",
        "re-index with a workflow `generateEmbeddings` step (`document`, `force: true`, `model`)"),
}


def unavailable_tool(name: str, path: DocPath, *, what: str = "tool") -> Finding | None:
    """The ``unknown-tool`` finding for a catalog tool Ergon does not provide, else None.

    Call it only for a name no catalogue holds (a project tool of the same name is provided)."""
    entry = UNAVAILABLE_TOOLS.get(name)
    if entry is None:
        return None
    return Finding("unknown-tool", path,
                   f"`{name}` is a built-in {what} of the Vertesia catalog that Ergon does not provide: {entry.why}",
                   hint=f"instead, {entry.instead}")

"""What the compiler knows about tools, without importing any of them.

The tool registry proper lives in ``flows`` (it imports and calls tools). The compiler only
needs names, so it reads them statically:

* the built-in tools below;
* Python tools in ``<definitions>/tools/*.py``: functions decorated with ``@tool`` (read with
  :mod:`ast`, never imported, so checking a definition never runs user code);
* an optional manifest ``<definitions>/tools/manifest.yaml`` listing tool names provided
  elsewhere (HTTP tool servers): ``tools: [{name: ..., description: ...}]``;
* the MCP servers' tools recorded in ``<definitions>/tools/servers.lock.json`` by ``ergon tools
  sync``, as ``<namespace>_<tool>`` (:mod:`compiler.mcp_lock`).
"""

from __future__ import annotations

import ast
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from compiler import mcp_lock
from compiler.builtin_interactions import BUILTIN
from compiler.builtin_signatures import BUILTIN_SIGNATURES
from compiler.catalog_tools import CATALOG_TOOLS
from compiler.tool_signatures import Signature, python_signatures

#: Tools every run has. Agent nodes get DEFAULT_AGENT_TOOLS unless `tools:` says otherwise.
BUILTIN_TOOLS: dict[str, str] = {
    "think": "Write down reasoning; no side effect.",
    "plan": "Record a step-by-step plan for the task.",
    "update_plan": "Update the recorded plan.",
    "write_artifact": "Store a run artifact (markdown, json, table, chart, file).",
    "read_artifact": "Read a run artifact.",
    "list_artifacts": "List the run's artifacts.",
    "fetch_document": "Read a document from the local document store.",
    "search_documents": "Search the local document store.",
    "create_document": "Create a document in the local document store.",
    "http_request": "HTTP request to a public address (private addresses refused).",
    "ask_user": "Ask a person a question (creates a human task).",
    "set_context": "Tool nodes only: apply `{updates: {...}}` to the context.",
    "noop": "Do nothing and return an empty result (useful in tests and benchmarks).",
    "log": "Log a message into the run record.",
    "sleep": "Wait `duration` seconds.",
    "createDocument": "Workflow DSL: create a document (type, properties) in the local document store.",
    "updateDocument": "Workflow DSL: update a document's properties (or text) in the local document store.",
    "deleteDocument": "Workflow DSL: delete a document from the local document store.",
    "executeInteraction": "Workflow DSL: run a named interaction on `data`.",
    "extractText": "Workflow DSL: the text of a document of the local document store.",
    "generateText": "Workflow DSL: generate text from a prompt template (model call).",
    "translateText": "Workflow DSL: translate a text (model call).",
    "summarizeText": "Workflow DSL: summarize a text (model call).",
    "analyzeSentiment": "Workflow DSL: the sentiment of a text (model call).",
    "classifyText": "Workflow DSL: classify a text into given categories (model call).",
    "extractEntities": "Workflow DSL: the named entities of a text (model call).",
    "runJavascriptCode": "Workflow DSL: run JavaScript in the sandbox; `result` is the value of its last expression.",
    "generateEmbeddings": "Workflow DSL: embed a text, or index documents of the local document store (embedding model).",
    "searchEmbeddings": "Workflow DSL: the documents nearest to an embedding (the document store's vector index).",
    "semantic_search_documents": "Search the local document store by meaning (embeddings).",
    "launch_workstream": "Agents only: delegate a task to a sub-agent (a workstream) that runs alongside; returns at once.",
    "check_workstream": "Agents only: the state, phase and deadline use of a workstream.",
    "list_workstreams": "Agents only: the agent's workstreams, optionally filtered by state.",
    "get_workstream_result": "Agents only: the result of a workstream that ended.",
    "message_workstream": "Agents only: send a follow-up message to an interactive workstream.",
    "steer_workstream": "Agents only: send a running workstream a directive (add_instruction, set_priority, ...).",
    "terminate_workstream": "Agents only: stop a workstream (interactive ones end only this way).",
    "send_email": "Send an email (markdown body) through the SMTP server of `tools/email.yaml`.",
    "list_tools": "Agents only: the tools the agent may call now and the skills it may still learn (`learn_<skill>`).",
}

BUILTIN_TOOLS.update(CATALOG_TOOLS)  # the catalog's further tools (compiler.catalog_tools)

#: Parameters of built-in tools the checker holds workflow-step ``params`` to:
#: name → (required, optional). ``tests/tools`` asserts these equal the registered tools' schemas.
BUILTIN_TOOL_PARAMS: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] = {
    "log": (("message",), ("level",)),
    "sleep": ((), ("duration", "seconds")),
    "createDocument": (("type",), ("properties", "content")),
    "updateDocument": (("document",), ("properties", "content")),
    "deleteDocument": (("document",), ()),
    "executeInteraction": (("interaction",), ("data",)),
    "extractText": (("document",), ()),
    "generateText": (("prompt",), ("data",)),
    "translateText": (("text", "targetLanguage"), ()),
    "summarizeText": (("text",), ()),
    "analyzeSentiment": (("text",), ()),
    "classifyText": (("text", "categories"), ()),
    "extractEntities": (("text",), ()),
    "runJavascriptCode": (("code",), ("data",)),
    "generateEmbeddings": ((), ("text", "document", "type", "force", "model")),
    "searchEmbeddings": (("embeddings",), ("limit", "filter", "model")),
    "send_email": (("to", "subject", "markdown"), ("cc", "bcc")),
}

#: Parameters of built-in activities that a workflow passes as written, never interpolated:
#: ``${…}`` in a ``runJavascriptCode`` step's ``code`` is JavaScript's own (a template literal),
#: and a ``generateText`` step's ``prompt`` is a template the activity renders over its ``data``;
#: workflow values reach both through ``data``. The lowering keeps them out of Jinja
#: (``extras["verbatim"]``), and the checker reads no workflow reference in them.
VERBATIM_PARAMS: dict[str, tuple[str, ...]] = {
    "runJavascriptCode": ("code",),
    "generateText": ("prompt",),
}

DEFAULT_AGENT_TOOLS: tuple[str, ...] = (
    "think", "plan", "update_plan", "write_artifact", "read_artifact", "list_artifacts",
)

#: The workstream tools (:mod:`flows.tools.builtins_workstreams`): an agent delegating to sub-agents.
#: Only an agent's tool loop can run them, so agent nodes (and template steps, which are agents)
#: may list them in ``tools:``; a tool node or a workflow activity naming one is ``agent-only-tool``.
WORKSTREAM_TOOLS: frozenset[str] = frozenset({
    "launch_workstream", "check_workstream", "list_workstreams", "get_workstream_result",
    "message_workstream", "steer_workstream", "terminate_workstream",
})
#: The skills' built-in (:mod:`compiler.skills`): what an agent may call now, and may learn.
SKILL_TOOLS: frozenset[str] = frozenset({"list_tools"})
#: Built-in tools that work only inside an agent's tool loop.
AGENT_ONLY_TOOLS: frozenset[str] = WORKSTREAM_TOOLS | SKILL_TOOLS

#: Supervisor-only tools that worker agents never get (seed: agent nodes).
PROCESS_CONTROL_TOOLS: frozenset[str] = frozenset(
    {"set_context", "transition_to", "skip_node", "continue_process", "retry_node", "fail_process"}
)

#: Built-in tools no step gets by "all tools": the workflow DSL's activities (the same operations
#: as the agent tools, under the DSL's names and parameters), ``ask_user`` (a person is asked only
#: where a node names who) and ``noop``.
NOT_IN_ALL_TOOLS: frozenset[str] = frozenset(BUILTIN_TOOL_PARAMS) - {"log"} | {"ask_user", "noop"}


def all_agent_tools(catalogue: ToolCatalogue) -> list[str]:
    """Every tool of ``catalogue`` an agent's loop may be given: what a template step with an
    empty ``tools_allowed`` gets (the seed: "empty = all tools allowed") — the built-in agent
    tools (plans, artifacts, documents, ``http_request``, workstreams, ``log``) and the project's
    own Python and manifest tools; never the process-control tools (supervisors only), nor
    :data:`NOT_IN_ALL_TOOLS`."""
    return [name for name in catalogue.names()
            if name not in PROCESS_CONTROL_TOOLS and not (catalogue.tools[name] == "builtin" and name in NOT_IN_ALL_TOOLS)]


#: Built-in interactions (the seed's `sys:*` names Ergon ships: :mod:`compiler.builtin_interactions`).
BUILTIN_INTERACTIONS: frozenset[str] = frozenset(BUILTIN)


@dataclass
class ToolCatalogue:
    """Tool names known to the compiler, with where each came from."""

    tools: dict[str, str] = field(default_factory=lambda: {n: "builtin" for n in BUILTIN_TOOLS})
    #: signatures of the Python tool files read so far, by file (read on first use)
    _signatures: dict[str, dict[str, Signature]] = field(default_factory=dict, repr=False, compare=False)
    #: signatures of the MCP servers' locked tools, by tool name
    _mcp_signatures: dict[str, Signature] = field(default_factory=dict, repr=False, compare=False)
    #: (the loaded servers.yaml, its folder) of each tools folder with one: unknown names' hints
    _mcp_servers: list[tuple[Any, Path]] = field(default_factory=list, repr=False, compare=False)
    #: the email configuration (``tools/email.yaml``) of a folder added, which ``send_email`` needs
    email_config: str | None = None

    def builtin_params(self, name: str) -> tuple[tuple[str, ...], tuple[str, ...]] | None:
        """(required, optional) parameters of a built-in tool the checker knows, else None."""
        return BUILTIN_TOOL_PARAMS.get(name) if self.tools.get(name) == "builtin" else None

    def agent_only(self, name: str) -> bool:
        """Whether ``name`` is a built-in that only an agent's tool loop can run (not replaced by a
        Python tool of the same name)."""
        return name in AGENT_ONLY_TOOLS and self.tools.get(name) == "builtin"

    def __contains__(self, name: str) -> bool:
        return name in self.tools

    def signature(self, name: str) -> Signature | None:
        """The parameters and result of a tool: a built-in's from
        :data:`compiler.builtin_signatures.BUILTIN_SIGNATURES`, a project Python tool's from its type
        hints (None for a tool served over HTTP and for ``set_context``, checked at run time, and for
        an agent-only tool, which no tool node or activity may call at all)."""
        source = self.tools.get(name)
        if source == "builtin":
            return None if name in AGENT_ONLY_TOOLS else BUILTIN_SIGNATURES.get(name)
        if source is not None and source.endswith(mcp_lock.LOCK_NAME):
            return self._mcp_signatures.get(name)
        if source is None or not source.endswith(".py"):
            return None
        if source not in self._signatures:
            self._signatures[source] = python_signatures(Path(source))
        return self._signatures[source].get(name)

    def names(self) -> list[str]:
        return sorted(self.tools)

    def add_folder(self, folder: Path) -> None:
        """Add the tools of ``folder`` (``*.py`` with ``@tool`` functions, ``manifest.yaml``)."""
        if not folder.is_dir():
            return
        for py in sorted(folder.glob("*.py")):
            for name in python_tool_names(py):
                # a Python tool named like a built-in replaces it, as it does at run time
                if self.tools.get(name, "builtin") == "builtin":
                    self.tools[name] = str(py)
        if (folder / "email.yaml").is_file() and self.email_config is None:
            self.email_config = str(folder / "email.yaml")
        manifest = folder / "manifest.yaml"
        if manifest.is_file():
            data = yaml.safe_load(manifest.read_text(encoding="utf-8")) or {}
            for entry in data.get("tools", []) or []:
                listed = entry.get("name") if isinstance(entry, dict) else entry
                if isinstance(listed, str):
                    self.tools.setdefault(listed, str(manifest))
        servers = folder / "servers.yaml"
        if servers.is_file():
            try:
                data = yaml.safe_load(servers.read_text(encoding="utf-8"))
            except (yaml.YAMLError, OSError, UnicodeDecodeError):
                data = None  # the servers.yaml check reports it
            for name, locked in mcp_lock.catalogue_tools(folder, data).items():
                if self.tools.setdefault(name, str(folder / mcp_lock.LOCK_NAME)).endswith(mcp_lock.LOCK_NAME):
                    self._mcp_signatures[name] = locked.signature
            self._mcp_servers.append((data, folder))

    def unknown_hint(self, name: str) -> str:
        """More for an unknown tool's hint: where MCP tools come from, or, for a name in an MCP
        server's namespace, its locked tools and the command that refreshes them."""
        for data, folder in self._mcp_servers:
            found = mcp_lock.unknown_hint(name, data, folder)
            if found:
                return f"; {found}"
        return ""


def python_tool_names(path: Path) -> list[str]:
    """Names of functions decorated ``@tool`` / ``@tool(...)`` / ``@x.tool`` in a Python file."""
    try:
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    except (SyntaxError, OSError, UnicodeDecodeError):
        return []
    names = (tool_name(node) for node in ast.walk(tree) if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)))
    return [name for name in names if name is not None]


def tool_name(fn: ast.FunctionDef | ast.AsyncFunctionDef) -> str | None:
    """The tool name a function's ``@tool`` decorator gives it (its own name unless the decorator
    names one), or None when it is not decorated ``@tool``."""
    for deco in fn.decorator_list:
        target = deco.func if isinstance(deco, ast.Call) else deco
        ident = target.attr if isinstance(target, ast.Attribute) else getattr(target, "id", None)
        if ident == "tool":
            explicit: str | None = None
            if isinstance(deco, ast.Call):
                for kw in deco.keywords:
                    if kw.arg == "name" and isinstance(kw.value, ast.Constant) and isinstance(kw.value.value, str):
                        explicit = kw.value.value
                if deco.args and isinstance(deco.args[0], ast.Constant) and isinstance(deco.args[0].value, str):
                    explicit = deco.args[0].value
            return explicit or fn.name
    return None


def resolve_agent_tools(spec: list[str]) -> tuple[list[str], list[str]]:
    """Apply the tools grammar: bare names replace the defaults, `+x` adds, `-x` removes.

    Returns (resolved tool list, names as written without their +/- prefix).
    """
    bare = [t for t in spec if not t.startswith(("+", "-"))]
    tools = list(bare) if bare else list(DEFAULT_AGENT_TOOLS)
    for t in spec:
        if t.startswith("+") and t[1:] not in tools:
            tools.append(t[1:])
        elif t.startswith("-") and t[1:] in tools:
            tools.remove(t[1:])
    return tools, [t.lstrip("+-") for t in spec]

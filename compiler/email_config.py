"""What ``ergon check`` checks of email: the folder's ``tools/email.yaml`` and who needs it.

The email configuration sits beside the other operator-written tool configuration
(``tools/servers.yaml``), where the definitions loader never reads it as a definition::

    smtp:                                # the server every email is sent through
      host: smtp.example.com
      port: 587                          # default: 587 for starttls, 465 for ssl, 25 for none
      security: starttls                 # starttls (default) | ssl | none
      username: ergon@example.com        # optional: a literal or a secret reference
      password: secret:SMTP_PASSWORD     # a secret reference, never the password itself
      timeout_seconds: 30
    from: "Ergon <ergon@example.com>"    # every email's From; a tool cannot change it
    reply_domain: mail.example.com       # per-task reply addresses r+<task>.<token>@reply_domain
    ask_by_email: true                   # human tasks are emailed to their assignees
    addresses:                           # Ergon user → email address (who is emailed, whose
      lea: lea@example.com               #   replies answer as whom)
    inbound:                             # the SMTP listener of `ergon serve`
      host: 127.0.0.1
      port: 2525
      max_bytes: 1048576                 # a longer message is refused (552)
      allowed_senders: [example.com, partner@other.org]   # domains or whole addresses
      start:                             # mail to an address starts a run of a definition
        - {address: invoices@mail.example.com, definition: invoice_processing}

Checked here (each at its file:line:col): unknown keys (with the closest known one), missing
required keys, types and ranges, addresses that are not addresses, a ``password`` that holds a
password instead of naming where it is kept (or a reference that could never resolve, as for
an environment's ``api_key``), ``ask_by_email`` without a ``reply_domain`` or an ``inbound``
listener to take the replies, and a ``start`` entry naming no runnable definition, or a process
or pipeline whose context has no ``email`` field for the mail it is started with.

Who needs it: an agent's ``tools:``, a tool node, a template step's ``tools_allowed`` or a
workflow activity naming the built-in ``send_email`` in a folder without ``tools/email.yaml`` is
``not-configured`` (:func:`send_email_uses`): the tool would fail at its first call.

Pure data: the runtime (:mod:`flows.email.config`) reads the same file with the same rules.
"""

from __future__ import annotations

from collections.abc import Iterator
from email.utils import parseaddr
from pathlib import Path
from typing import Any

from compiler import secret_references
from compiler.errors import Finding, did_you_mean
from compiler.source import LoadedDocument, load_file

FILE_NAME = "email.yaml"
TOOL = "send_email"

#: The keys of each part of the file.
TOP_KEYS = ("smtp", "from", "reply_domain", "ask_by_email", "addresses", "inbound")
SMTP_KEYS = ("host", "port", "security", "username", "password", "timeout_seconds")
INBOUND_KEYS = ("host", "port", "max_bytes", "allowed_senders", "start")
START_KEYS = ("address", "definition")
SECURITY = ("starttls", "ssl", "none")
#: Bounds of the listener's message size: an email with a few attachments fits the upper one.
MIN_BYTES, MAX_BYTES = 1024, 25 * 1024 * 1024
DEFAULT_MAX_BYTES = 1024 * 1024


def is_address(value: Any) -> bool:
    """Whether ``value`` is one plain address (``name@domain``, display name allowed)."""
    if not isinstance(value, str):
        return False
    _, addr = parseaddr(value)
    local, at, domain = addr.rpartition("@")
    return bool(at and local and "." in domain and not any(c.isspace() for c in addr))


def _unknown(data: dict, known: tuple[str, ...], base: tuple) -> Iterator[Finding]:
    for key in data:
        if key not in known:
            hint = did_you_mean(str(key), known) or "known keys: " + ", ".join(f"`{k}`" for k in known)
            yield Finding("unknown-key", (*base, key), f"`{key}` is not a key of the email configuration here", hint=hint)


def _int(value: Any, path: tuple, what: str, low: int, high: int) -> Iterator[Finding]:
    if isinstance(value, bool) or not isinstance(value, int):
        yield Finding("wrong-type", path, f"{what} must be a whole number", hint=f"between {low} and {high}")
    elif not low <= value <= high:
        yield Finding("bad-value", path, f"{what} {value} is out of range", hint=f"between {low} and {high}")


def _smtp(smtp: Any) -> Iterator[Finding]:
    if not isinstance(smtp, dict):
        yield Finding("wrong-type", ("smtp",), "`smtp` must be a mapping (host, port, security, username, password)")
        return
    yield from _unknown(smtp, SMTP_KEYS, ("smtp",))
    if not isinstance(smtp.get("host"), str) or not smtp.get("host"):
        yield Finding("missing-field", ("smtp",), "`smtp` needs `host`: the SMTP server emails are sent through",
                      hint="e.g. `host: smtp.example.com`", at_key=True)
    if "port" in smtp:
        yield from _int(smtp["port"], ("smtp", "port"), "`port`", 1, 65535)
    if "security" in smtp and smtp["security"] not in SECURITY:
        yield Finding("bad-value", ("smtp", "security"), f"`security: {smtp['security']}` is not one of "
                      + ", ".join(SECURITY), hint="starttls (port 587), ssl (port 465) or none (a local relay)")
    if "timeout_seconds" in smtp:
        yield from _int(smtp["timeout_seconds"], ("smtp", "timeout_seconds"), "`timeout_seconds`", 1, 300)
    for key in ("username", "password"):
        if key in smtp and not isinstance(smtp[key], str):
            yield Finding("wrong-type", ("smtp", key), f"`{key}` must be a string")
    username, password = smtp.get("username"), smtp.get("password")
    for key, value in (("username", username), ("password", password)):
        ref = secret_references.parse(value) if isinstance(value, str) else None
        wrong = secret_references.problem(ref) if ref is not None else None
        if wrong is not None:
            yield Finding("bad-value", ("smtp", key), wrong.message, hint=wrong.hint)
    if isinstance(password, str) and secret_references.parse(password) is None:
        yield Finding("bad-value", ("smtp", "password"), "`password` holds a password instead of naming where it is kept",
                      hint="write `secret:NAME` (`ergon secrets set NAME`), `env:VAR`, `prefect-secret:NAME` or "
                      "`prefect-var:NAME`: a definitions folder is shared and versioned")
    if isinstance(password, str) and not isinstance(username, str):
        yield Finding("missing-field", ("smtp", "password"), "`password` without `username`: the server is logged in "
                      "to with both", hint="add `username`, or remove `password` for a server that takes mail without a login")


def _inbound(inbound: Any, runnable: dict[str, set[str] | None] | None) -> Iterator[Finding]:
    if not isinstance(inbound, dict):
        yield Finding("wrong-type", ("inbound",), "`inbound` must be a mapping (host, port, max_bytes, allowed_senders, start)")
        return
    yield from _unknown(inbound, INBOUND_KEYS, ("inbound",))
    if "port" not in inbound:
        yield Finding("missing-field", ("inbound",), "`inbound` needs `port`: where `ergon serve` listens for email",
                      hint="e.g. `port: 2525`, with the mail server that receives your domain's mail relaying to it",
                      at_key=True)
    else:
        yield from _int(inbound["port"], ("inbound", "port"), "`port`", 1, 65535)
    if "host" in inbound and not isinstance(inbound["host"], str):
        yield Finding("wrong-type", ("inbound", "host"), "`host` must be a string (the address to listen on)")
    if "max_bytes" in inbound:
        yield from _int(inbound["max_bytes"], ("inbound", "max_bytes"), "`max_bytes`", MIN_BYTES, MAX_BYTES)
    senders = inbound.get("allowed_senders")
    if not isinstance(senders, list) or not senders:
        yield Finding("missing-field", ("inbound", "allowed_senders") if "allowed_senders" in inbound else ("inbound",),
                      "`inbound` needs `allowed_senders`: the domains or addresses whose mail is taken",
                      hint="e.g. `allowed_senders: [example.com]`; mail from anyone else is refused", at_key=True)
    else:
        for i, sender in enumerate(senders):
            if not isinstance(sender, str) or not sender or " " in sender or sender.startswith("@"):
                yield Finding("bad-value", ("inbound", "allowed_senders", i), f"`{sender}` is neither a domain nor an address",
                              hint="write a domain (`example.com`) or an address (`ann@example.com`)")
    starts = inbound.get("start", [])
    if not isinstance(starts, list):
        yield Finding("wrong-type", ("inbound", "start"), "`start` must be a list of {address, definition}")
        return
    for i, entry in enumerate(starts):
        base = ("inbound", "start", i)
        if not isinstance(entry, dict):
            yield Finding("wrong-type", base, "a `start` entry must be a mapping {address, definition}")
            continue
        yield from _unknown(entry, START_KEYS, base)
        if not is_address(entry.get("address")):
            yield Finding("bad-value" if "address" in entry else "missing-field", (*base, "address") if "address" in entry else base,
                          "a `start` entry needs `address`: the address whose mail starts a run",
                          hint="e.g. `address: invoices@mail.example.com`")
        definition = entry.get("definition")
        if not isinstance(definition, str):
            yield Finding("missing-field", base, "a `start` entry needs `definition`: the definition a run is started of")
        elif runnable is not None and definition not in runnable:
            yield Finding("unknown-process", (*base, "definition"), f"no runnable definition is named `{definition}`",
                          hint=did_you_mean(definition, runnable) or "name a process, pipeline, template or workflow of the folder")
        elif runnable is not None and (fields := runnable[definition]) is not None and "email" not in fields:
            yield Finding("bad-value", (*base, "definition"), f"`{definition}` has no context field `email`, which a run "
                          "started by mail is given ({from, subject, body, message_id})",
                          hint="add `email: {type: object, properties: {from: {type: string}, subject: {type: string}, "
                          "body: {type: string}}}` to its context.schema (and `email` to its `required`)")


def findings(data: Any, runnable: dict[str, set[str] | None] | None = None) -> list[Finding]:
    """Everything wrong with an email configuration's data (``runnable``: the folder's runnable
    definitions, which ``inbound.start`` entries must name, with the context fields of those whose
    context is declared — see :func:`runnable_inputs`; None leaves them unchecked)."""
    if not isinstance(data, dict):
        return [Finding("not-a-mapping", (), "the email configuration must be a mapping (smtp, from, ...)")]
    out = list(_unknown(data, TOP_KEYS, ()))
    if "smtp" not in data:
        out.append(Finding("missing-field", (), "the email configuration needs `smtp`: the server emails are sent through",
                           hint="e.g. `smtp: {host: smtp.example.com, username: ..., password: secret:SMTP_PASSWORD}`"))
    else:
        out.extend(_smtp(data["smtp"]))
    if "from" not in data:
        out.append(Finding("missing-field", (), "the email configuration needs `from`: the address every email is sent from",
                           hint='e.g. `from: "Ergon <ergon@example.com>"`'))
    elif not is_address(data["from"]):
        out.append(Finding("bad-value", ("from",), f"`from` is not an email address: {data['from']!r}",
                           hint='e.g. `from: "Ergon <ergon@example.com>"`'))
    domain = data.get("reply_domain")
    if domain is not None and (not isinstance(domain, str) or "." not in domain or "@" in domain or " " in domain):
        out.append(Finding("bad-value", ("reply_domain",), f"`reply_domain` is not a domain: {domain!r}",
                           hint="e.g. `reply_domain: mail.example.com` (its mail must reach `ergon serve`'s listener)"))
    addresses = data.get("addresses", {})
    if not isinstance(addresses, dict):
        out.append(Finding("wrong-type", ("addresses",), "`addresses` must map Ergon user names to email addresses"))
    else:
        for user, address in addresses.items():
            if not is_address(address):
                out.append(Finding("bad-value", ("addresses", user), f"the address of `{user}` is not an email address: {address!r}",
                                   hint="e.g. `lea: lea@example.com`"))
    ask = data.get("ask_by_email", False)
    if not isinstance(ask, bool):
        out.append(Finding("wrong-type", ("ask_by_email",), "`ask_by_email` must be true or false"))
    elif ask:
        if domain is None:
            out.append(Finding("missing-field", ("ask_by_email",), "`ask_by_email` needs `reply_domain`: each task's email "
                               "carries a reply address there", hint="e.g. `reply_domain: mail.example.com`", at_key=True))
        if "inbound" not in data:
            out.append(Finding("missing-field", ("ask_by_email",), "`ask_by_email` needs `inbound`: replies answer a task "
                               "only through `ergon serve`'s listener", hint="add `inbound: {port: 2525, allowed_senders: [...]}`",
                               at_key=True))
    if "inbound" in data:
        out.extend(_inbound(data["inbound"], runnable))
    return out


def runnable_inputs(ws: Any) -> dict[str, set[str] | None]:
    """The workspace's runnable definitions by name → the fields of a process's or pipeline's
    context schema (which a mail-started run's ``email`` input must be one of), None for the kinds
    whose inputs are shaped otherwise (templates, workflows)."""
    from compiler.ir import PipelineDef, ProcessDef

    out: dict[str, set[str] | None] = {}
    for name, unit in ws.named("process", "pipeline", "template", "workflow").items():
        defn = unit.defn
        properties = defn.context.schema_.get("properties") if isinstance(defn, (ProcessDef, PipelineDef)) else None
        out[name] = set(properties) if isinstance(properties, dict) else None
    return out


def load_email_config(tools_folder: Path, runnable: dict[str, set[str] | None] | None = None,
                      ) -> tuple[LoadedDocument, list[Finding]] | None:
    """``tools_folder/email.yaml`` loaded, with its findings; None when there is none."""
    path = tools_folder / FILE_NAME
    if not path.is_file():
        return None
    doc = load_file(path)
    if doc.source is None:
        return doc, []  # the loader's own findings (YAML syntax) are in doc.findings
    return doc, findings(doc.data, runnable)


NOT_CONFIGURED_HINT = (f"add `tools/{FILE_NAME}` to the definitions folder with `smtp` (host, port, security, username, "
                       "password as `secret:NAME`) and `from` (docs/agents-and-tools.md, email)")


def send_email_uses(unit: Any, tools: Any) -> Iterator[tuple[tuple, str]]:
    """The places ``unit`` names the built-in ``send_email``: (document path, what names it).
    ``tools`` is the workspace's :class:`compiler.tools.ToolCatalogue`; a project tool of that
    name replaces the built-in and needs no configuration."""
    from compiler.ir import AgentNode, PipelineDef, ProcessDef, TemplateDef, ToolNode, WorkflowDef
    from compiler.walk import iter_definitions, iter_nodes

    if tools.tools.get(TOOL) != "builtin":
        return
    defn = unit.defn
    if isinstance(defn, (ProcessDef, PipelineDef)):
        for graph, base in iter_definitions(defn):
            for site in iter_nodes(graph, base):
                node = site.node
                if isinstance(node, ToolNode) and node.tool == TOOL:
                    yield (*site.path, "tool"), f"tool node `{site.id}`"
                if isinstance(node, AgentNode):
                    for i, spec in enumerate(node.tools):
                        if spec.lstrip("+-") == TOOL and not spec.startswith("-"):
                            yield (*site.path, "tools", i), f"agent `{site.id}`"
    elif isinstance(defn, TemplateDef):
        for i, step in enumerate(defn.steps):
            for j, spec in enumerate(step.tools_allowed):
                if spec.lstrip("+-") == TOOL and not spec.startswith("-"):
                    yield ("steps", i, "tools_allowed", j), f"step `{step.key}`"
    elif isinstance(defn, WorkflowDef):
        for k, activity in enumerate(defn.steps):
            if activity.type == "activity" and activity.name == TOOL:
                yield ("steps", k, "name"), f"step {k + 1}"

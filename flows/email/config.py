"""The email configuration of a definitions folder (``tools/email.yaml``), as the runtime uses it.

The file's shape and rules are :mod:`compiler.email_config`'s (``ergon check`` reports them at
their place); here the same rules refuse a file with errors as a whole, so a run never sends
through a half-read configuration. The password stays a reference until the moment a message
is sent (:meth:`Smtp.login`), and is redacted from every record from then on.

:func:`configure` is called when a folder's tools are loaded (:func:`flows.tools.load_tool_folder`);
:func:`current` falls back to ``$ERGON_DEFINITIONS/tools/email.yaml`` for processes that never
loaded a catalog (``ergon serve``'s listener loads one first anyway).
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from email.utils import parseaddr
from pathlib import Path
from typing import Any

import yaml

from compiler import email_config
from flows.errors import ErgonError
from flows.settings import definitions_dir


class EmailNotConfigured(ErgonError):
    """No email configuration, or one with errors: nothing can be sent or received."""


@dataclass(frozen=True)
class Smtp:
    host: str
    port: int
    security: str
    username: str | None
    password: str | None  # a secret reference, resolved at login
    timeout: float

    def credentials(self) -> tuple[str, str] | None:
        """(username, password) resolved now, or None for a server taken without login."""
        if self.username is None:
            return None
        from flows.secrets import resolve_reference

        user = resolve_reference(self.username)
        return user, resolve_reference(self.password) if self.password is not None else ""


@dataclass(frozen=True)
class StartRoute:
    address: str
    definition: str


@dataclass(frozen=True)
class Inbound:
    host: str
    port: int
    max_bytes: int
    allowed_senders: tuple[str, ...]
    start: tuple[StartRoute, ...] = ()

    def allows(self, sender: str) -> bool:
        """Whether mail from ``sender`` (an address) is taken: its address or its domain is listed."""
        sender = sender.strip().lower()
        domain = sender.rpartition("@")[2]
        return any(sender == s.lower() or domain == s.lower() for s in self.allowed_senders)

    def route(self, recipient: str) -> StartRoute | None:
        wanted = recipient.strip().lower()
        return next((r for r in self.start if parseaddr(r.address)[1].lower() == wanted), None)


@dataclass(frozen=True)
class EmailConfig:
    smtp: Smtp
    sender: str  # the `from` of every email
    reply_domain: str | None = None
    ask_by_email: bool = False
    #: Ergon user → address
    addresses: dict[str, str] = field(default_factory=dict)
    inbound: Inbound | None = None
    file: str = ""

    def address_of(self, user: str) -> str | None:
        return self.addresses.get(user)

    def user_of(self, address: str) -> str | None:
        """The Ergon user whose configured address is ``address`` (case-insensitive), else None."""
        wanted = address.strip().lower()
        return next((u for u, a in self.addresses.items() if parseaddr(a)[1].lower() == wanted), None)


_DEFAULT_PORTS = {"starttls": 587, "ssl": 465, "none": 25}


def parse(data: Any, file: str = "email.yaml") -> EmailConfig:
    """The configuration in ``data``; :class:`EmailNotConfigured` naming the first problem."""
    problems = email_config.findings(data)
    if problems:
        first = problems[0]
        where = ".".join(str(p) for p in first.path) or "(top)"
        more = f" (and {len(problems) - 1} more; `ergon check` lists them)" if len(problems) > 1 else ""
        raise EmailNotConfigured(f"{file}: {where}: {first.message}{more}")
    smtp = data["smtp"]
    security = smtp.get("security", "starttls")
    inbound = data.get("inbound")
    return EmailConfig(
        smtp=Smtp(host=smtp["host"], port=int(smtp.get("port", _DEFAULT_PORTS[security])), security=security,
                  username=smtp.get("username"), password=smtp.get("password"),
                  timeout=float(smtp.get("timeout_seconds", 30))),
        sender=data["from"],
        reply_domain=data.get("reply_domain"),
        ask_by_email=bool(data.get("ask_by_email", False)),
        addresses=dict(data.get("addresses") or {}),
        inbound=None if inbound is None else Inbound(
            host=inbound.get("host", "127.0.0.1"), port=int(inbound["port"]),
            max_bytes=int(inbound.get("max_bytes", email_config.DEFAULT_MAX_BYTES)),
            allowed_senders=tuple(inbound["allowed_senders"]),
            start=tuple(StartRoute(s["address"], s["definition"]) for s in inbound.get("start") or [])),
        file=file,
    )


def read(tools_folder: str | Path) -> EmailConfig | None:
    """``tools_folder/email.yaml`` parsed; None when there is none."""
    path = Path(tools_folder) / email_config.FILE_NAME
    if not path.is_file():
        return None
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
    except yaml.YAMLError as exc:
        raise EmailNotConfigured(f"{path}: not valid YAML: {exc}") from None
    return parse(data, str(path))


_lock = threading.Lock()
_configured: dict[str, Path] = {}


def configure(tools_folder: str | Path) -> None:
    """Remember the tools folder whose ``email.yaml`` this process uses (read at each use, so an
    edit applies to the next email)."""
    with _lock:
        _configured["folder"] = Path(tools_folder).resolve()


def current(*, required: bool = True) -> EmailConfig | None:
    """The configuration in use: the folder given to :func:`configure`, else the definitions
    folder's ``tools/``. Without one, :class:`EmailNotConfigured` (or None when not ``required``)."""
    folder = _configured.get("folder") or definitions_dir() / "tools"
    found = read(folder)
    if found is None and required:
        raise EmailNotConfigured(f"no email configuration: add {folder / email_config.FILE_NAME} "
                                 "(smtp, from; docs/agents-and-tools.md, email)")
    return found

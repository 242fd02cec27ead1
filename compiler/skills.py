"""Agent skills: instructions an agent reads on demand, and the tools reading them unlocks.

A skill is a markdown file ``<definitions>/skills/<name>.md``: a YAML front matter block, then
the instructions (the body)::

    ---
    name: invoice_math            # optional; the file's name without `.md` when left out
    title: Invoice arithmetic     # optional
    description: Totals, VAT and rounding rules for invoices
    tools: [vat_rate, http_request]   # unlocked by learning the skill
    related_tools: [search_documents] # complementary, listed by `list_tools`, not unlocked
    dynamic: false                # true: the body is a Jinja template (below)
    ---
    Always compute VAT with `vat_rate` ...

An agent may learn a skill when its ``tools:`` names ``learn_<name>`` (``+learn_<name>`` adds it
to the default tools, as for any tool). Calling ``learn_<name>`` returns the instructions, and
from then on, for the rest of that agent's conversation, the skill's ``tools`` are offered to
the model too (they were not before): the agent reads the rules on its way to the tools. The
runtime half is :mod:`flows.tools.skills`.

**Dynamic instructions.** With ``dynamic: true`` the body is rendered when the skill is learned,
by the same sandboxed Jinja environment as every Ergon template (:mod:`compiler.templates`).
It reads exactly :data:`TEMPLATE_NAMES`: ``tools`` (the sorted names the agent may call once
the skill is learned), ``skill`` (``name``, ``title``, ``description``, ``tools``,
``related_tools``), ``process`` (the process name) and ``node`` (the agent's node id). It never
sees the process context: instructions are trusted guidance, and the context is data that
reaches the model only between the agent prompt's data markers.

**System skills** (:mod:`compiler.system_skills`) are shipped with Ergon, in the same format;
a project skill of the same name replaces one, as a project Python tool replaces a built-in.

What the checker says about a skill file (located at file:line:col like any definition):
``missing-field`` / ``wrong-type`` / ``bad-value`` / ``unknown-key`` / ``yaml-syntax`` for the
front matter, ``unknown-tool`` for a ``tools`` or ``related_tools`` entry no catalogue provides
(with a did-you-mean), ``control-tool`` for a process-control tool, ``template-syntax`` for a
dynamic body that does not parse and ``unknown-field`` for a name it reads that is not one of
:data:`TEMPLATE_NAMES`. What it says about the agents that name skills is
:mod:`compiler.passes.skills`.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from compiler.errors import Finding, did_you_mean
from compiler.source import LoadedDocument, SourceMap, load_text
from compiler.templates import analyse

#: The prefix of the tool that learns a skill: ``learn_<skill name>``.
LEARN_PREFIX = "learn_"
#: The built-in agent tool that lists what an agent may call now and the skills it may learn.
LIST_TOOLS = "list_tools"
#: The folder of a definitions folder that holds its skills.
SKILLS_FOLDER = "skills"
SKILL_SUFFIX = ".md"
#: A skill name: what follows ``learn_`` in a tool name.
NAME = re.compile(r"^[a-z][a-z0-9_]{0,63}$")
#: Front-matter keys and whether each is required.
KEYS: dict[str, bool] = {"name": False, "title": False, "description": True, "tools": False,
                         "related_tools": False, "dynamic": False}
#: What a dynamic skill's template may read (see the module docstring).
TEMPLATE_NAMES: frozenset[str] = frozenset({"tools", "skill", "process", "node"})
#: The document path findings about the body (the instructions) are reported at.
BODY = ("instructions",)


@dataclass(frozen=True)
class Skill:
    """One skill, as an agent may learn it."""

    name: str
    description: str
    instructions: str
    title: str | None = None
    #: unlocked for the rest of the conversation once the skill is learned
    tools: tuple[str, ...] = ()
    #: complementary tools, listed with the skill by ``list_tools``; learning does not unlock them
    related_tools: tuple[str, ...] = ()
    #: the instructions are a Jinja template rendered over :data:`TEMPLATE_NAMES`
    dynamic: bool = False
    file: str = ""
    system: bool = False

    @property
    def learn_tool(self) -> str:
        return LEARN_PREFIX + self.name

    def summary(self) -> dict[str, Any]:
        """What a dynamic template sees as ``skill`` (and ``list_tools`` shows)."""
        return {"name": self.name, "title": self.title or self.name, "description": self.description,
                "tools": list(self.tools), "related_tools": list(self.related_tools)}


def skill_of(tool_name: str) -> str | None:
    """The skill a ``learn_<name>`` tool name learns, else None."""
    return tool_name[len(LEARN_PREFIX):] if tool_name.startswith(LEARN_PREFIX) else None


def is_skill_tool(tool_name: str) -> bool:
    """Whether a tool name is handled by the skills machinery (``learn_*``, ``list_tools``)."""
    return tool_name == LIST_TOOLS or tool_name.startswith(LEARN_PREFIX)


@dataclass
class ParsedSkill:
    """A skill file read: the skill (None when its front matter is unusable), the front matter
    as data with its positions, and what is wrong with it on its own (without the catalogue)."""

    skill: Skill | None
    doc: LoadedDocument
    findings: list[Finding] = field(default_factory=list)


def _split(text: str) -> tuple[str, str, int] | None:
    """(front matter text, body, file line the body starts on), or None without front matter."""
    lines = text.splitlines(keepends=True)
    if not lines or lines[0].strip() != "---":
        return None
    for i in range(1, len(lines)):
        if lines[i].strip() == "---":
            return "".join(lines[1:i]), "".join(lines[i + 1:]), i + 2
    return None


def parse_skill(text: str, file: str, *, system: bool = False) -> ParsedSkill:
    """Read one skill file (never raises on bad input)."""
    stem = Path(file).name.removesuffix(SKILL_SUFFIX)
    split = _split(text)
    if split is None:
        doc = LoadedDocument(file=file, source=SourceMap(file=file))
        return ParsedSkill(None, doc, [Finding(
            "missing-field", (), "a skill file starts with a front matter block between `---` lines",
            hint="begin the file with `---`, then `description: ...` (and `tools: [...]`), then `---` and the instructions")])
    front, body, body_line = split
    # a blank first line keeps the loader's line numbers those of the file (line 1 is `---`)
    doc = load_text("\n" + front, file) if front.strip() else LoadedDocument(file=file, data={}, source=SourceMap(file=file))
    if doc.source is not None:
        # at the closing `---`, as a block scalar's indicator line: the template's line n is the
        # file's line body_line + n - 1
        doc.source.values[BODY] = (body_line - 1, 1)
        doc.source.block.add(BODY)
    findings = list(doc.findings)
    data = doc.data
    if doc.findings:
        return ParsedSkill(None, doc, findings)
    if not isinstance(data, dict):
        findings.append(Finding("not-a-mapping", (), "a skill's front matter is a mapping of `key: value` lines"))
        return ParsedSkill(None, doc, findings)
    findings.extend(_front_matter(data, stem))
    if not body.strip():
        findings.append(Finding("missing-field", BODY, "a skill has instructions: the text after its front matter is empty",
                                hint="write what the agent must know to use the skill's tools after the closing `---`"))
    dynamic = data.get("dynamic") is True
    if dynamic:
        findings.extend(_template(body))
    if any(f.severity == "error" for f in findings):
        return ParsedSkill(None, doc, findings)
    skill = Skill(name=data.get("name") or stem, description=data["description"].strip(), instructions=body.strip("\n"),
                  title=data.get("title"), tools=tuple(data.get("tools") or ()),
                  related_tools=tuple(data.get("related_tools") or ()), dynamic=dynamic, file=file, system=system)
    return ParsedSkill(skill, doc, findings)


def _name_like(text: str) -> str:
    """A skill name close to ``text`` (for a hint): lower-case, other characters as ``_``."""
    name = re.sub(r"[^a-z0-9_]+", "_", text.lower()).strip("_")
    name = name.lstrip("0123456789_") or "skill"
    return name[:64]


def _front_matter(data: dict[str, Any], stem: str) -> Iterable[Finding]:
    for key in data:
        if key not in KEYS:
            yield Finding("unknown-key", (key,), f"`{key}` is not a key of a skill's front matter",
                          hint=did_you_mean(key, KEYS) or f"the keys are: {', '.join(f'`{k}`' for k in KEYS)}")
    for key, required in KEYS.items():
        if required and key not in data:
            yield Finding("missing-field", (), f"a skill needs `{key}` in its front matter",
                          hint="add `description: <when the agent should learn this skill>` between the `---` "
                          "lines: it is what the agent sees of the skill before it learns it")
    name = data.get("name")
    if name is not None:
        if not isinstance(name, str):
            yield Finding("wrong-type", ("name",), "`name` is a string",
                          hint=f"write `name: {_name_like(str(name))}`, or leave `name` out (the file's name is used)")
        elif not NAME.match(name):
            yield Finding("bad-value", ("name",), f"`{name}` is not a skill name: lower-case letters, digits and `_`, "
                          "starting with a letter (it becomes the tool `learn_<name>`)",
                          hint=f"write `name: {_name_like(name)}`")
        elif name != stem:
            yield Finding("bad-value", ("name",), f"the skill is named `{name}` but its file is `{stem}{SKILL_SUFFIX}`",
                          hint=f"rename the file to `{name}{SKILL_SUFFIX}`, or leave `name` out")
    elif not NAME.match(stem):
        yield Finding("bad-value", (), f"`{stem}` is not a skill name: lower-case letters, digits and `_`, starting "
                      "with a letter (the file's name is the skill's, which becomes the tool `learn_<name>`)",
                      hint=f"rename the file to `{_name_like(stem)}{SKILL_SUFFIX}`")
    for key in ("description", "title"):
        value = data.get(key)
        if value is not None and (not isinstance(value, str) or not value.strip()):
            yield Finding("wrong-type", (key,), f"`{key}` is a non-empty string",
                          hint=f"write `{key}: <one line of text>`")
    if "dynamic" in data and not isinstance(data["dynamic"], bool):
        yield Finding("wrong-type", ("dynamic",), "`dynamic` is `true` or `false`",
                      hint="write `dynamic: true` (the instructions are a template) or leave it out")
    for key in ("tools", "related_tools"):
        value = data.get(key)
        if value is None:
            continue
        if not isinstance(value, list):
            yield Finding("wrong-type", (key,), f"`{key}` is a list of tool names",
                          hint=f"write `{key}: [{value if isinstance(value, str) and value else 'tool_name'}]`")
            continue
        for i, item in enumerate(value):
            if not isinstance(item, str) or not item:
                yield Finding("wrong-type", (key, i), f"`{key}` entries are tool names (strings)",
                              hint="write each tool's name as it is registered, e.g. `search_documents`")
            elif item.startswith(LEARN_PREFIX):
                yield Finding("bad-value", (key, i), f"`{item}` is a skill; a skill lists tools, not other skills",
                              hint="name the skill on the agent (`tools: [+learn_...]`), or list its tools here")


def _template(body: str) -> Iterable[Finding]:
    info = analyse(body)
    if info.error is not None:
        message, line = info.error
        yield Finding("template-syntax", BODY, f"the instructions do not parse as a template: {message}", line_offset=line)
        return
    for name in sorted(info.reads - TEMPLATE_NAMES):
        yield Finding("unknown-field", BODY, f"dynamic instructions read `{name}`, which a skill's template does not have",
                      hint=f"it may read {', '.join(f'`{n}`' for n in sorted(TEMPLATE_NAMES))}; the process context "
                      "is data, never part of a skill's instructions")


def catalogue_findings(data: dict[str, Any], tools: Iterable[str]) -> Iterable[Finding]:
    """A skill's ``tools`` and ``related_tools`` (its front matter ``data``, read even when
    something else in it is wrong) against the tools that exist (``tools``: the catalogue's names)."""
    from compiler.tools import PROCESS_CONTROL_TOOLS

    known = set(tools)
    for key in ("tools", "related_tools"):
        listed = data.get(key)
        for i, name in enumerate(listed if isinstance(listed, list) else []):
            if not isinstance(name, str) or not name or name.startswith(LEARN_PREFIX):
                continue  # reported by the front matter's own check
            if name in PROCESS_CONTROL_TOOLS:
                yield Finding("control-tool", (key, i), f"`{name}` is a process-control tool; agents never get it",
                              hint=f"remove `{name}` from `{key}`: agents return their output as structured data "
                              "instead of calling control tools")
            elif name not in known:
                yield Finding("unknown-tool", (key, i), f"no tool is named `{name}`",
                              hint=(did_you_mean(name, known) or "tools come from the built-ins, `tools/*.py`, "
                                    "`tools/manifest.yaml` and the tool servers of `tools/servers.yaml`"))


def read_skill_file(path: Path, *, system: bool = False) -> ParsedSkill:
    """Read a skill file; one that cannot be read is a finding, never an exception."""
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        doc = LoadedDocument(file=str(path), source=SourceMap(file=str(path)))
        return ParsedSkill(None, doc, [Finding("yaml-syntax", (), f"cannot read the file: {exc}")])
    return parse_skill(text, str(path), system=system)


def skill_files(folder: Path) -> list[Path]:
    """The skill files of a ``skills/`` folder, sorted (none when it does not exist)."""
    return sorted(p for p in folder.glob(f"*{SKILL_SUFFIX}") if p.is_file()) if folder.is_dir() else []


def render_instructions(skill: Skill, *, tools: Iterable[str], process: str | None, node: str | None) -> str:
    """The instructions an agent learning ``skill`` reads: the body, rendered when dynamic.

    Raises what :func:`compiler.templates.render` raises when a dynamic body fails to render."""
    if not skill.dynamic:
        return skill.instructions
    from compiler.templates import render

    return render(skill.instructions, {"tools": sorted(set(tools)), "skill": skill.summary(),
                                       "process": process, "node": node})

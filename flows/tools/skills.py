"""Skills at run time: the ``learn_<skill>`` tools, ``list_tools``, and what an agent is offered.

A skill (:mod:`compiler.skills`) is learned by calling its ``learn_<name>`` tool, which each
skill registers in :data:`flows.tools.REGISTRY` like any tool (so its calls are validated,
recorded and mockable as every tool call is). What learning *does* belongs to one conversation:
:class:`Offer` is that conversation's state — the tools the agent declared, the skills it may
learn, the ones it learned — and :data:`OFFER` holds the running agent's offer while its loop
runs (the agent body sets it). :class:`SkillToolbox` is the toolbox the loop is given: the
definitions it offers the model are the declared tools plus the tools of the learned skills, so
a skill's tools reach the model only on the turns after ``learn_<name>`` was called.

Resuming: the offer is not stored. A resumed agent visit runs its loop again and is given the
earlier visit's answers for the same requests (:mod:`flows.llm.records`); the same
``learn_<name>`` calls come back in the same order, so the same skills are learned before the
same turns, and the requests (which carry the tools offered) match the recorded ones.

Skills come from the system skills (:mod:`compiler.system_skills`) and from the definitions
folders' ``skills/`` (:func:`load_skill_folder`, called where their ``tools/`` are loaded). A
skill file with errors is not registered: ``ergon check`` refuses the definitions that name it.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from contextvars import ContextVar
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from jinja2.exceptions import TemplateError

from compiler.skills import LIST_TOOLS, Skill, is_skill_tool, read_skill_file, render_instructions, skill_files, skill_of
from compiler.system_skills import system_skills
from flows.tools import REGISTRY, ToolSpec, tool
from flows.tools import invoke as _invoke
from flows.tools.errors import ToolError

#: The skills a run may learn, by name (the system skills, then the definitions folders').
SKILLS: dict[str, Skill] = {}

#: The parameters of every ``learn_<skill>`` tool (the seed's generic skill input).
LEARN_PARAMETERS: dict[str, Any] = {
    "type": "object",
    "properties": {"context": {"type": "string", "description": "optional: what you need the skill for"}},
    "additionalProperties": False,
}


def register(skill: Skill) -> None:
    """Make ``skill`` learnable: its ``learn_<name>`` tool in the registry (replacing one of the
    same name, as a definitions folder's skill replaces a system skill)."""
    SKILLS[skill.name] = skill

    async def learn(context: str | None = None) -> dict[str, Any]:
        offer = OFFER.get()
        if offer is None:
            raise ToolError(skill.learn_tool, "a skill is learned inside an agent's tool loop (an agent node's `tools:`)")
        return offer.learn(skill.name)

    REGISTRY[skill.learn_tool] = ToolSpec(name=skill.learn_tool, description=f"[Skill] {skill.description}",
                                          parameters=LEARN_PARAMETERS, fn=learn, is_async=True, source="skill")


def load_skill_folder(folder: Path) -> list[str]:
    """Register the skills of a ``skills/`` folder that read without errors; their names."""
    names = []
    for path in skill_files(folder):
        parsed = read_skill_file(path)
        if parsed.skill is not None:
            register(parsed.skill)
            names.append(parsed.skill.name)
    return names


for _skill in system_skills().values():
    register(_skill)


@dataclass
class Offer:
    """One agent conversation's tools: declared, learnable, learned."""

    #: the tools the agent's node resolves to (``learn_*`` and ``list_tools`` among them)
    declared: list[str]
    #: the skills it may learn (those ``declared`` names ``learn_<name>`` of), by name
    skills: dict[str, Skill]
    process: str | None = None
    node: str | None = None
    #: skills learned so far, in order
    learned: list[str] = field(default_factory=list)

    def unlocked(self) -> list[str]:
        """Tools the learned skills opened that the agent did not declare, in the order learned."""
        out: list[str] = []
        for name in self.learned:
            out += [t for t in self.skills[name].tools if t not in self.declared and t not in out]
        return out

    def names(self) -> list[str]:
        """What the agent may call now."""
        return [*self.declared, *self.unlocked()]

    def unlockable(self) -> list[str]:
        """Every tool learning could open (the agent body prepares for them: workstreams)."""
        return list(dict.fromkeys(t for s in self.skills.values() for t in s.tools))

    def learn(self, name: str) -> dict[str, Any]:
        """Learn skill ``name``: its instructions, and its tools from the next turn on."""
        skill = self.skills.get(name)
        if skill is None:  # the loop offers only declared learn tools; a stand-in or direct call may not
            raise ToolError(f"learn_{name}", f"this agent may not learn `{name}`; it may learn: "
                                             f"{', '.join(sorted(self.skills)) or 'no skill'}")
        already = name in self.learned
        if not already:
            self.learned.append(name)
        try:
            text = render_instructions(skill, tools=self.names(), process=self.process, node=self.node)
        except TemplateError as exc:
            if not already:
                self.learned.remove(name)
            raise ToolError(skill.learn_tool, f"the skill's instructions did not render: {exc}") from None
        out: dict[str, Any] = {"skill": name, "title": skill.title or name, "instructions": text,
                               "unlocked_tools": list(skill.tools)}
        if already:
            out["note"] = "you learned this skill already; its tools stay available for the rest of the conversation"
        return out

    async def listing(self, grep: str | None = None) -> dict[str, Any]:
        """``list_tools``: each tool callable now (name, description) and each skill with whether
        it is learned, the tools it unlocks and its related tools; ``grep`` keeps the entries whose
        name or description it matches (a case-insensitive regular expression)."""
        try:
            pattern = re.compile(grep, re.IGNORECASE) if grep else None
        except re.error as exc:
            raise ToolError(LIST_TOOLS, f"`grep` is not a regular expression: {exc}") from None

        def keep(*texts: str) -> bool:
            return pattern is None or any(pattern.search(t) for t in texts)

        tools = []
        for name in self.names():
            if skill_of(name) is not None:
                continue  # listed under skills
            spec = await _invoke.lookup(name)
            if keep(name, spec.description):
                tools.append({"name": name, "description": spec.description})
        skills = [{"name": s.learn_tool, "title": s.title or s.name, "description": s.description,
                   "learned": s.name in self.learned, "unlocks": list(s.tools), "related_tools": list(s.related_tools)}
                  for s in self.skills.values() if keep(s.learn_tool, s.description, s.title or "")]
        return {"tools": tools, "skills": skills}


#: The running agent's offer (set by the agent body around its loop; None outside one).
OFFER: ContextVar[Offer | None] = ContextVar("ergon_skill_offer", default=None)


def offer_for(tools: Iterable[str], *, process: str | None, node: str | None) -> Offer | None:
    """The offer of an agent declaring ``tools``, or None when it names no skill and no
    ``list_tools`` (its loop then needs none). A ``learn_<name>`` of a skill that is not
    registered fails here (the checker refuses it first)."""
    declared = list(tools)
    if not any(is_skill_tool(t) for t in declared):
        return None
    skills: dict[str, Skill] = {}
    for t in declared:
        name = skill_of(t)
        if name is not None:
            if name not in SKILLS:
                known = ", ".join(f"learn_{n}" for n in sorted(SKILLS)) or "none"
                raise ToolError(t, f"no skill is named `{name}` (skills: {known})")
            skills[name] = SKILLS[name]
    return Offer(declared=declared, skills=skills, process=process, node=node)


class SkillToolbox:
    """The agent loop's toolbox when it has an offer: the model is offered what the agent may
    call now (asked again after every turn with tool calls), and calls go through
    :func:`flows.tools.invoke.invoke` like any tool call."""

    def __init__(self, offer: Offer):
        self.offer = offer

    async def tool_definitions(self, names: list[str]) -> list[dict[str, Any]]:
        """The definitions of ``names`` (the declared tools) and of the tools learned skills unlocked."""
        return await _invoke.tool_definitions([*names, *(t for t in self.offer.unlocked() if t not in names)])

    async def invoke(self, name: str, args: dict[str, Any] | None = None) -> Any:
        return await _invoke.invoke(name, args)


@tool(name=LIST_TOOLS)
async def list_tools(grep: str | None = None) -> dict:
    """List the tools you may call now (name and description) and the skills you may learn: each
    `learn_<skill>` with whether you learned it, the tools learning it unlocks and related tools.

    Args:
        grep: keep only the tools and skills whose name or description match this regular expression (case-insensitive)
    """
    offer = OFFER.get()
    if offer is None:
        raise ToolError(LIST_TOOLS, "`list_tools` works inside an agent's tool loop (an agent node's `tools:`)")
    return await offer.listing(grep)

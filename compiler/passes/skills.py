"""The `skills` pass: the skills an agent names exist, read cleanly, and can open their tools.

An agent node names a skill it may learn as ``learn_<skill>`` in its ``tools:`` (``+learn_x``
adds it to the default tools; ``-learn_x`` removes it), a template step (an agent too) in its
``tools_allowed``. For each such name:

* ``unknown-tool`` — no skill of that name: neither a system skill (:mod:`compiler.system_skills`)
  nor a ``skills/<name>.md`` of the workspace; the hint is a did-you-mean or the list of skills;
* ``broken-reference`` — the skill's file has errors of its own (the first is quoted): a run
  would not find the skill, as a run would not load a broken interaction;
* ``bad-value`` — the agent removes with ``-tool`` a tool that a skill it may learn unlocks:
  learning the skill would open what the author took away, so the two contradict each other
  (drop one of them);
* ``not-configured`` — a skill it may learn unlocks the built-in ``send_email`` and the folder
  has no ``tools/email.yaml`` (the rule the ``email_tools`` pass applies to an agent listing
  ``send_email`` itself).

A skill's tools are the agent's to call once it learned the skill, whatever else its ``tools:``
lists — naming the skill is what allows them (the seed: "the only path that opens the tools").
Whether each of them exists, and is no process-control tool, is checked on the skill's own file
(:mod:`compiler.skills`). The references pass leaves ``learn_*`` names to this one.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

from compiler.email_config import NOT_CONFIGURED_HINT
from compiler.email_config import TOOL as EMAIL_TOOL
from compiler.errors import Finding, did_you_mean
from compiler.ir import AgentNode, PipelineDef, ProcessDef, TemplateDef
from compiler.skills import SKILL_SUFFIX, skill_of
from compiler.tools import resolve_agent_tools
from compiler.walk import iter_definitions, iter_nodes

#: Beyond this many, a hint lists the first skills and how many more exist.
HINT_LIMIT = 12


def check(unit, ws) -> Iterator[Finding]:
    defn = unit.defn
    if isinstance(defn, TemplateDef):
        for i, step in enumerate(defn.steps):
            yield from _agent(f"step `{step.key}`", step.tools_allowed, ("steps", i), "tools_allowed", ws)
    if not isinstance(defn, (ProcessDef, PipelineDef)):
        return
    for graph, base in iter_definitions(defn):
        for site in iter_nodes(graph, base):
            if isinstance(site.node, AgentNode):
                yield from _agent(f"agent `{site.id}`", site.node.tools, site.path, "tools", ws)


def _agent(who: str, tools: list[str], path: tuple, key: str, ws) -> Iterator[Finding]:
    """The skills of one agent (``who``) whose tools (at ``path`` + ``key``) are ``tools``."""
    resolved, _ = resolve_agent_tools(tools)
    for i, spec in enumerate(tools):
        name = skill_of(spec.lstrip("+-"))
        if name is None:
            continue
        where = (*path, key, i)
        broken = _broken(name, ws)
        if broken is not None:
            yield Finding("broken-reference", where, f"skill `{name}` has errors: {broken}",
                          hint="fix the skill's file first (`ergon check` on its folder lists its errors)")
        elif name not in ws.skills:
            yield Finding("unknown-tool", where, f"no skill is named `{name}` (`learn_{name}` would learn it)",
                          hint=_skills_hint(f"learn_{name}", ws))
    removed = {spec[1:]: i for i, spec in enumerate(tools) if spec.startswith("-")}
    added = {spec.lstrip("+"): i for i, spec in enumerate(tools) if not spec.startswith("-")}
    for learn in resolved:
        skill = ws.skills.get(skill_of(learn) or "")
        if skill is None:
            continue
        if EMAIL_TOOL in skill.tools and ws.tools.tools.get(EMAIL_TOOL) == "builtin" and ws.tools.email_config is None:
            yield Finding("not-configured", (*path, key, added.get(learn, 0)),
                          f"{who} may learn skill `{skill.name}`, which unlocks `{EMAIL_TOOL}`, and the "
                          "definitions folder has no email configuration to send through", hint=NOT_CONFIGURED_HINT)
        for tool in skill.tools:
            if tool in removed:
                yield Finding("bad-value", (*path, key, removed[tool]),
                              f"`-{tool}` removes a tool that skill `{skill.name}` unlocks when the agent learns it "
                              f"(`{learn}`)",
                              hint=f"drop `-{tool}` to let the skill open it, or drop `{learn}` from the tools")


def _broken(name: str, ws) -> str | None:
    """The first error of the skill file that would define ``name``, located; None when clean."""
    from compiler.check import locate  # check imports the passes

    for unit, parsed in ws.skill_files:
        data_name = unit.data.get("name") if isinstance(unit.data, dict) else None
        file_name = Path(unit.file).name.removesuffix(SKILL_SUFFIX)
        if (data_name if isinstance(data_name, str) else file_name) != name:
            continue
        skill = ws.skills.get(name)
        if parsed.skill is not None and skill is not parsed.skill:
            continue  # another file of that name is the skill
        errors = [f for f in unit.findings if f.severity == "error"]
        if errors:
            d = locate(unit, errors[0])
            more = f" (and {len(errors) - 1} more)" if len(errors) > 1 else ""
            return f"{d.file}:{d.line}:{d.col}: {d.message}{more}"
    return None


def _skills_hint(learn: str, ws) -> str:
    names = sorted(f"learn_{n}" for n in ws.skills)
    close = did_you_mean(learn, names)
    if close:
        return close
    shown = ", ".join(f"`{n}`" for n in names[:HINT_LIMIT])
    more = f" and {len(names) - HINT_LIMIT} more" if len(names) > HINT_LIMIT else ""
    return (f"the skills are: {shown}{more}; a project's own skill is a file `skills/<name>.md` "
            "of its definitions folder")

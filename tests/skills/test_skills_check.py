"""What `ergon check` says about skills: a skill file's front matter, tools and template (at
file:line:col), and the agents that name `learn_<skill>`; the system skills Ergon ships."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from compiler import check_workspace, compile_plan, load_workspace, workspace_from_texts
from compiler.skills import parse_skill, render_instructions
from compiler.system_skills import system_skills
from compiler.tools import AGENT_ONLY_TOOLS, BUILTIN_TOOLS, NOT_IN_ALL_TOOLS


def diagnostics(texts: dict[str, str], tools=()) -> list[tuple[str, int, int, str, str, str | None]]:
    report = check_workspace(workspace_from_texts(texts, tools=tools))
    return [(d.file, d.line, d.col, d.code, d.message, d.hint) for d in report.diagnostics]


def agent(tools: str) -> str:
    return f"""\
format_version: 1
process: p
initial: a
nodes:
  a:
    type: agent
    prompt: go
    tools: {tools}
    transitions: [{{to: done}}]
  done: {{type: final}}
"""


TRIAGE = """\
---
description: Sort incoming mail
tools: [http_request, fetch_document]
related_tools: [search_documents]
---
Fetch the mail with `fetch_document` first.
"""


def test_a_clean_skill_and_the_agent_that_learns_it_check_clean_and_compile():
    texts = {"skills/triage.md": TRIAGE, "p.yaml": agent("[+learn_triage, +learn_workstreams]")}
    assert diagnostics(texts) == []
    plan = compile_plan(workspace_from_texts(texts), "p")
    assert plan.nodes["a"].agent_tools == [
        "think", "plan", "update_plan", "write_artifact", "read_artifact", "list_artifacts",
        "learn_triage", "learn_workstreams"]


def test_bad_front_matter_is_reported_where_it_is_written():
    text = """\
---
name: Triage
descripton: Sort mail
tools: think
dynamic: maybe
---
"""
    assert diagnostics({"skills/triage.md": text}) == [
        ("skills/triage.md", 2, 1, "missing-field", "a skill needs `description` in its front matter",
         "add `description: <when the agent should learn this skill>` between the `---` lines: it is what the agent "
         "sees of the skill before it learns it"),
        ("skills/triage.md", 2, 7, "bad-value", "`Triage` is not a skill name: lower-case letters, digits and `_`, "
         "starting with a letter (it becomes the tool `learn_<name>`)", "write `name: triage`"),
        ("skills/triage.md", 3, 1, "unknown-key", "`descripton` is not a key of a skill's front matter",
         "did you mean `description`?"),
        ("skills/triage.md", 4, 8, "wrong-type", "`tools` is a list of tool names", "write `tools: [think]`"),
        ("skills/triage.md", 5, 10, "wrong-type", "`dynamic` is `true` or `false`",
         "write `dynamic: true` (the instructions are a template) or leave it out"),
        ("skills/triage.md", 6, 1, "missing-field",  # at the closing `---`: nothing follows it
         "a skill has instructions: the text after its front matter is empty",
         "write what the agent must know to use the skill's tools after the closing `---`"),
    ]


def test_a_file_without_front_matter_and_a_name_that_is_not_the_file_s():
    found = diagnostics({"skills/a.md": "Just text.\n", "skills/b.md": "---\nname: c\ndescription: x\n---\nx\n"})
    assert [(f, line, col, code) for f, line, col, code, _, _ in found] == [
        ("skills/a.md", 1, 1, "missing-field"), ("skills/b.md", 2, 7, "bad-value")]
    assert found[0][4] == "a skill file starts with a front matter block between `---` lines"
    assert found[1][4] == "the skill is named `c` but its file is `b.md`"
    assert found[1][5] == "rename the file to `c.md`, or leave `name` out"


def test_unknown_and_control_tools_of_a_skill_with_did_you_mean():
    text = "---\ndescription: d\ntools: [serch_documents, set_context]\nrelated_tools: [fetch_documnt]\n---\nx\n"
    assert diagnostics({"skills/s.md": text}) == [
        ("skills/s.md", 3, 9, "unknown-tool", "no tool is named `serch_documents`", "did you mean `search_documents`?"),
        ("skills/s.md", 3, 26, "control-tool", "`set_context` is a process-control tool; agents never get it",
         "remove `set_context` from `tools`: agents return their output as structured data instead of calling "
         "control tools"),
        ("skills/s.md", 4, 17, "unknown-tool", "no tool is named `fetch_documnt`", "did you mean `fetch_document`?"),
    ]
    # a project tool of that name is a tool like any other
    assert diagnostics({"skills/s.md": "---\ndescription: d\ntools: [crm_lookup]\n---\nx\n"}, tools=["crm_lookup"]) == []


def test_dynamic_instructions_are_checked_as_a_template():
    broken = "---\ndescription: d\ndynamic: true\n---\nline one\n{% if tools %}\nno end\n"
    (found,) = diagnostics({"skills/s.md": broken})
    assert found[:4] == ("skills/s.md", 6, 1, "template-syntax")  # the `{% if %}` left open
    reads_context = "---\ndescription: d\ndynamic: true\n---\nFor {{ context.customer }} in {{ process }}\n"
    (found,) = diagnostics({"skills/s.md": reads_context})
    assert found[3:5] == ("unknown-field", "dynamic instructions read `context`, which a skill's template does not have")
    assert found[5].startswith("it may read `node`, `process`, `skill`, `tools`")
    # without `dynamic: true` braces are text, shown as written
    static = parse_skill("---\ndescription: d\n---\nWrite {{ name }} literally.\n", "skills/s.md").skill
    assert static is not None and render_instructions(static, tools=[], process="p", node="n") == "Write {{ name }} literally."


def test_a_dynamic_skill_renders_over_what_it_may_read():
    text = ("---\ntitle: Triage\ndescription: d\ntools: [http_request]\ndynamic: true\n---\n"
            "{{ skill.title }} for {{ node }} of {{ process }}: {{ tools | join(', ') }}\n")
    skill = parse_skill(text, "skills/triage.md").skill
    assert skill is not None
    assert render_instructions(skill, tools=["think", "http_request"], process="intake", node="sort") == \
        "Triage for sort of intake: http_request, think"


def test_an_agent_naming_an_unknown_skill():
    found = diagnostics({"p.yaml": agent("[+learn_workstream, +learn_zip]")})
    assert found == [
        ("p.yaml", 8, 13, "unknown-tool", "no skill is named `workstream` (`learn_workstream` would learn it)",
         "did you mean `learn_workstreams`?"),
        ("p.yaml", 8, 32, "unknown-tool", "no skill is named `zip` (`learn_zip` would learn it)",
         "the skills are: `learn_conversation_analysis`, `learn_document_search`, `learn_expert_roundtable`, "
         "`learn_send_email`, `learn_workstreams`; a project's own skill is a file `skills/<name>.md` of its "
         "definitions folder"),
    ]


def test_an_agent_naming_a_broken_skill_is_refused_with_the_skill_s_first_error():
    found = diagnostics({"p.yaml": agent("[+learn_triage]"),
                         "skills/triage.md": "---\ndescription: d\ntools: [nope_tool]\n---\nx\n"})
    assert [(f, code) for f, _, _, code, _, _ in found] == [("p.yaml", "broken-reference"), ("skills/triage.md", "unknown-tool")]
    assert found[0][4] == "skill `triage` has errors: skills/triage.md:3:9: no tool is named `nope_tool`"


def test_an_agent_removing_a_tool_its_skill_unlocks_contradicts_itself():
    found = diagnostics({"p.yaml": agent("[+learn_triage, -http_request]"), "skills/triage.md": TRIAGE})
    assert found == [("p.yaml", 8, 28, "bad-value",
                      "`-http_request` removes a tool that skill `triage` unlocks when the agent learns it (`learn_triage`)",
                      "drop `-http_request` to let the skill open it, or drop `learn_triage` from the tools")]
    # removing the skill itself leaves nothing to contradict
    assert diagnostics({"p.yaml": agent("[+learn_triage, -learn_triage, -http_request]"), "skills/triage.md": TRIAGE}) == []


def test_list_tools_is_an_agent_only_built_in():
    assert "list_tools" in BUILTIN_TOOLS and "list_tools" in AGENT_ONLY_TOOLS
    tool_node = """\
format_version: 1
process: p
initial: a
nodes:
  a: {type: tool, tool: list_tools, transitions: [{to: done}]}
  done: {type: final}
"""
    assert [code for _, _, _, code, _, _ in diagnostics({"p.yaml": tool_node})] == ["agent-only-tool"]
    assert diagnostics({"p.yaml": agent("[+list_tools]")}) == []


def test_a_project_skill_replaces_the_system_skill_of_its_name():
    mine = "---\ndescription: Our own way of delegating\ntools: [think]\n---\nDo not delegate.\n"
    ws = workspace_from_texts({"skills/workstreams.md": mine})
    assert ws.skills["workstreams"].tools == ("think",) and not ws.skills["workstreams"].system
    assert system_skills()["workstreams"].system


def test_the_shipped_system_skills_open_only_built_in_agent_tools_that_are_registered():
    import flows.tools.builtins  # noqa: F401
    from flows.tools import REGISTRY

    assert sorted(system_skills()) == [
        "conversation_analysis", "document_search", "expert_roundtable", "send_email", "workstreams"]
    for skill in system_skills().values():
        for name in (*skill.tools, *skill.related_tools):
            # an agent may be given each (send_email only where email is configured: checked below)
            assert name in BUILTIN_TOOLS and (name not in NOT_IN_ALL_TOOLS or name == "send_email"), (skill.name, name)
            assert name in REGISTRY, (skill.name, name)
        assert REGISTRY[skill.learn_tool].description == f"[Skill] {skill.description}"
    # the shipped skills check clean on an agent (send_email's aside)
    learn_all = ", ".join(f"+learn_{n}" for n in system_skills() if n != "send_email")
    assert diagnostics({"p.yaml": agent(f"[{learn_all}]")}) == []


EMAIL = """\
smtp:
  host: smtp.example.com
  port: 587
  username: ergon@example.com
  password: secret:SMTP_PASSWORD
from: "Ergon <ergon@example.com>"
"""


def test_learning_send_email_needs_the_folder_s_email_configuration(tmp_path: Path):
    folder = tmp_path / "definitions"
    folder.mkdir()
    (folder / "p.yaml").write_text(agent("[+learn_send_email]"))
    (found,) = check_workspace(load_workspace([folder])).diagnostics
    assert (found.line, found.col, found.code) == (8, 13, "not-configured")
    assert found.message == ("agent `a` may learn skill `send_email`, which unlocks `send_email`, and the definitions "
                             "folder has no email configuration to send through")
    (folder / "tools").mkdir()
    (folder / "tools" / "email.yaml").write_text(EMAIL)
    assert check_workspace(load_workspace([folder])).diagnostics == []


def test_ergon_check_reports_a_skills_folder(tmp_path: Path):
    folder = tmp_path / "definitions"
    (folder / "skills").mkdir(parents=True)
    (folder / "skills" / "triage.md").write_text("---\ndescription: d\ntools: [http_requst]\n---\nx\n")
    (folder / "p.yaml").write_text(agent("[+learn_triage, +learn_nothing]"))
    ws = load_workspace([folder])
    assert [(Path(d.file).name, d.line, d.col, d.code) for d in check_workspace(ws).diagnostics] == [
        ("p.yaml", 8, 13, "broken-reference"), ("p.yaml", 8, 28, "unknown-tool"), ("triage.md", 3, 9, "unknown-tool")]
    # the real command, as a user runs it
    out = subprocess.run([sys.executable, "-m", "flows.cli", "check", str(folder)], capture_output=True, text=True,
                         cwd=Path(__file__).parents[2])
    assert out.returncode != 0
    assert f"{folder / 'skills' / 'triage.md'}:3:9: error[unknown-tool] tools[0]: no tool is named `http_requst`" in out.stdout
    assert "hint: did you mean `http_request`?" in out.stdout


FORM = """\
kind: form
name: intake
groups:
  - name: intake
    fields:
      - {name: text, type: text}
"""


def template(tools: str) -> str:
    return f"""\
kind: template
name: t
input_form: intake
steps:
  - key: sort
    prompt: "Sort {{{{input}}}}"
    output_key: sorted
    output_form: intake
    tools_allowed: {tools}
"""


def test_a_template_step_names_skills_in_its_tools_allowed():
    assert diagnostics({"f.yaml": FORM, "t.yaml": template("[think, learn_triage]"), "skills/triage.md": TRIAGE}) == []
    plan = compile_plan(workspace_from_texts({"f.yaml": FORM, "t.yaml": template("[think, learn_triage]"),
                                              "skills/triage.md": TRIAGE}), "t")
    (step,) = [n for n in plan.nodes.values() if n.type == "agent"]
    assert step.agent_tools == ["think", "learn_triage"]
    found = diagnostics({"f.yaml": FORM, "t.yaml": template("[think, learn_triag, learn_send_email]"),
                         "skills/triage.md": TRIAGE})
    assert [(line, col, code, hint) for _, line, col, code, _, hint in found] == [
        (9, 28, "unknown-tool", "did you mean `learn_triage`?"),
        (9, 41, "not-configured", found[1][5])]
    assert found[1][4].startswith("step `sort` may learn skill `send_email`, which unlocks `send_email`")


def test_a_file_whose_name_is_no_skill_name_is_told_the_name_to_use():
    [found] = diagnostics({"skills/Order-Triage.md": "---\ndescription: d\n---\nx\n"})
    assert found[3:] == ("bad-value", "`Order-Triage` is not a skill name: lower-case letters, digits and `_`, starting "
                         "with a letter (the file's name is the skill's, which becomes the tool `learn_<name>`)",
                         "rename the file to `order_triage.md`")

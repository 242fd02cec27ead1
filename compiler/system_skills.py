"""The system skills Ergon ships: skills of the seed's catalogue whose tools Ergon has.

They are skill files (the format of :mod:`compiler.skills`) kept in the code, so that every
installation has them and no definitions folder has to carry them. An agent learns one as any
other skill (``tools: [+learn_workstreams]``); a project skill of the same name replaces it.

Shipped: ``workstreams`` (the seven workstream tools) and ``document_search`` (``search_documents``
and ``semantic_search_documents``). The seed's other system skills are not shipped, because
Ergon lacks their tools (``expert_roundtable`` needs ``analyze_conversation``;
``agent_scheduling``, ``content_authoring``, ``docx_editing``, ``pptx_editing``,
``document_management``, ``conversation_analysis``, ``image_analysis``,
``presentation_authoring`` and ``send_email`` need tools that are not built-ins): naming
``learn_<one of them>`` is ``unknown-tool``, like any skill that does not exist. A test keeps
every shipped skill's tools among the built-ins.
"""

from __future__ import annotations

from functools import cache

from compiler.skills import Skill, parse_skill

WORKSTREAMS = """\
---
title: Workstreams
description: Launch and manage parallel sub-agents (workstreams) that work on parts of the task while you go on
tools: [launch_workstream, check_workstream, list_workstreams, get_workstream_result, message_workstream,
        steer_workstream, terminate_workstream]
---
# Workstreams

A workstream is a sub-agent that does one part of your task in the background while you go on.

- Launch one with `launch_workstream`: a short `id`, a `name`, complete `instruction`s and the
  `allowed_tools` it needs (only tools you have yourself; a workstream never delegates in turn
  and never asks a person). It does not see this conversation: put everything it needs in
  `instruction` and `context`.
- Its result comes to you as a message on your next turn. Do not poll: end your turn with a
  short text such as `waiting`, and you are woken when something arrives.
- `check_workstream` and `list_workstreams` show status, phase and how much of the deadline is
  used; `get_workstream_result` gives an ended workstream's full result.
- An `interactive: true` workstream waits for your follow-ups (`message_workstream`) and ends
  only when you `terminate_workstream` it.
- `steer_workstream` gives a running workstream a directive (`add_instruction`, `set_priority`,
  `add_constraint`, `pause_requested`, `resume_requested`) without stopping it.
- Your final answer is taken only once no workstream you launched is still working: terminate
  the ones you no longer need.
"""

DOCUMENT_SEARCH = """\
---
title: Document Search
description: Find documents in the document store by words or by meaning, then read the right ones
tools: [search_documents, semantic_search_documents]
related_tools: [fetch_document]
---
# Document search

Two searches over the same document store; both return `{id, name, score, snippet}` results,
best first, at most `limit` (1-50, default 5).

- `search_documents(query)` matches **words** (the terms of `query`, a match in a document's
  name counting more). Use it for names, numbers, identifiers and exact terms.
- `semantic_search_documents(query)` matches **meaning** (embeddings). Use it for a question in
  your own words, or when the documents may use other words than yours.
- Start with a few distinctive words; when nothing fits, try the other search rather than the
  same query again. A snippet is not the document: read the ones you need with
  `fetch_document(id)` before you rely on them, and cite documents by `id`.
"""

#: The shipped skills' texts by name (the file name a diagnostic about one would carry).
TEXTS: dict[str, str] = {"workstreams": WORKSTREAMS, "document_search": DOCUMENT_SEARCH}


@cache
def system_skills() -> dict[str, Skill]:
    """The shipped skills by name (parsed once; a broken one is an internal error)."""
    out: dict[str, Skill] = {}
    for name, text in TEXTS.items():
        parsed = parse_skill(text, f"<system skill>/{name}.md", system=True)
        if parsed.skill is None:  # an invariant of the shipped texts, checked by the tests
            raise AssertionError(f"system skill `{name}` does not parse: {parsed.findings}")
        out[name] = parsed.skill
    return out

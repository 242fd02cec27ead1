"""The system skills Ergon ships: skills of the seed's catalogue whose tools Ergon has.

They are skill files (the format of :mod:`compiler.skills`) kept in the code, so that every
installation has them and no definitions folder has to carry them. An agent learns one as any
other skill (``tools: [+learn_workstreams]``); a project skill of the same name replaces it.

Shipped, with the tools the seed's table unlocks: ``workstreams`` (the seven workstream tools),
``expert_roundtable`` (the workstream tools and ``analyze_conversation``),
``conversation_analysis`` (``search_conversations``, ``analyze_conversation``), ``send_email``
(``send_email``, which needs the folder's ``tools/email.yaml``: the checker says so where an
agent names the skill) and ``document_search`` (``search_documents``, and Ergon's
``semantic_search_documents``). The seed's other system skills are not shipped, because Ergon
lacks some of their tools: ``agent_scheduling`` (schedules are a definition's ``triggers``),
``content_authoring``, ``docx_editing`` and ``pptx_editing`` (the Office XML rendering and
reading tools), ``document_management`` (document revisions), ``image_analysis`` and
``presentation_authoring``. Naming ``learn_<one of them>`` is ``unknown-tool``, like any skill
that does not exist. A test keeps every shipped skill's tools among the agents' built-ins.
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

EXPERT_ROUNDTABLE = """\
---
title: Expert Roundtable
description: Run a debate between specialist sub-agents, each with its own perspective (and model), and weigh it
tools: [launch_workstream, check_workstream, steer_workstream, message_workstream, list_workstreams,
        get_workstream_result, terminate_workstream, analyze_conversation]
---
# Expert roundtable

Put a question to several experts, each a workstream with one perspective, and decide from what
they say rather than from one voice.

1. Pick 2 to 4 perspectives that can disagree (for example: legal, finance, operations; or an
   advocate and a sceptic). Launch one `interactive: true` workstream per perspective with
   `launch_workstream`: its `instruction` states the perspective, the question and everything it
   must know (it does not see this conversation); give each a different `model` when the run has
   several environments, so the voices differ.
2. Their opening positions come to you as messages. Take each position to the others with
   `message_workstream` ("the finance expert says …: what do you answer?") for one or two rounds.
3. `terminate_workstream` every expert when the debate has converged or stopped moving: an
   interactive workstream ends only that way, and your answer is taken only once all have ended.
4. Weigh the arguments yourself: name where they agreed, where they did not, and why you decide
   as you do. `analyze_conversation` can analyze an earlier run's debate when you are asked to
   review one.
"""

CONVERSATION_ANALYSIS = """\
---
title: Conversation Analysis
description: Find past runs (conversations) and analyze what their agents and model calls did
tools: [search_conversations, analyze_conversation]
---
# Conversation analysis

- `search_conversations` lists runs newest first, filtered by `status`, `since` / `until` (ISO
  8601 times), `initiator` and `interaction` (the definition's name); page with `limit` and
  `offset`, or write every match to an artifact with `output_artifact` and read it there.
- `analyze_conversation(run_id, analyzer_prompt)` sends one run's recorded conversation to a
  model with your question (`analyzer_prompt`): ask one precise thing ("did the agent verify the
  totals before answering? list the tools it called"). Give a `result_schema` when you need the
  answer as data.
- A run summary holds no inputs or context: analyze the conversation to learn what happened in it.
"""

SEND_EMAIL = """\
---
title: Send Email
description: Send an email with a markdown body from the project's address
tools: [send_email]
---
# Sending email

`send_email(to, subject, markdown, cc?, bcc?)` sends one email from the project's address: the
markdown body is sent as HTML with a plain-text part.

- Send only what the task asks you to send, to the addresses the task or its data give you; never
  guess an address, and never put secrets or data the recipient should not see in the body.
- Write the subject as the recipient would file it; keep the body short, with headings or lists
  where they help.
- One call sends one email to every recipient listed: use `bcc` for recipients who must not see
  each other. A failure is returned as an error: report it rather than retrying the same call.
"""

#: The shipped skills' texts by name (the file name a diagnostic about one would carry).
TEXTS: dict[str, str] = {"workstreams": WORKSTREAMS, "expert_roundtable": EXPERT_ROUNDTABLE,
                         "conversation_analysis": CONVERSATION_ANALYSIS, "send_email": SEND_EMAIL,
                         "document_search": DOCUMENT_SEARCH}


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

"""The built-in ``sys:`` interactions Ergon ships, as interaction definitions.

The seed names several ``sys:`` interactions; the ones below are those that make sense without
the Vertesia platform behind them:

* ``sys:ProcessAgentNode`` — the default interaction of every agent node: the engine's contract
  (process, node prompt, writes, context, result schema; :mod:`flows.llm.agent`) *is* its
  prompt, so it has no segments of its own. Naming it on an agent node is the same as leaving
  ``interaction`` unset; an interaction node cannot call it (there is no contract to fill in).
* ``sys:GeneralAgent`` — open-ended work: a general system segment plus the ``prompt`` input as
  the user message. On an agent node its segments come before the engine's contract message
  (``prompt`` is then the node's rendered prompt); on an interaction node, pass ``input: {prompt}``.

The others the seed mentions (``sys:ExplainProcess``, ``sys:ExtractInformation``,
``sys:SelectDocumentType``, ``sys:GenerateMetadataModel``, ``sys:ChunkDocument``) belong to the
Vertesia platform's studio and document pipeline; ``ergon check`` refuses them and every other
``sys:`` name it does not know (``unknown-interaction``, listing these), so write an
``interaction`` definition of your own instead.
"""

from __future__ import annotations

from compiler.ir import InteractionDef

#: The agent nodes' default interaction (no segments: the engine's contract is the prompt).
PROCESS_AGENT_NODE = "sys:ProcessAgentNode"

BUILTIN: dict[str, InteractionDef] = {
    PROCESS_AGENT_NODE: InteractionDef.model_validate({
        "kind": "interaction", "name": PROCESS_AGENT_NODE, "prompts": [],
        "description": "The engine's agent-node contract (the default of agent nodes).",
    }),
    "sys:GeneralAgent": InteractionDef.model_validate({
        "kind": "interaction", "name": "sys:GeneralAgent",
        "description": "Open-ended work: a general system prompt, then the `prompt` input.",
        "prompts": [
            {"role": "system", "name": "general", "template":
                "You are a capable general-purpose assistant. Work the task out step by step, use the tools "
                "you are given to check facts instead of guessing, and say plainly when something cannot be "
                "determined from what you have."},
            {"role": "user", "name": "prompt", "template": "{{ prompt }}"},
        ],
        "input_schema": {"type": "object", "properties": {"prompt": {"type": "string"}}, "required": ["prompt"]},
    }),
}

#: Built-ins that only an agent node can name.
AGENT_ONLY: frozenset[str] = frozenset({PROCESS_AGENT_NODE})

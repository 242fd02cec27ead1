"""An LLM conversation as it was sent and received, for the run page's node inspector.

Prompts are shown preformatted — a prompt's line breaks, indentation and ``- `` lines are what
the model read, and markdown would collapse or re-shape them. Recorded values often carry JSON
*as text* (a response's content is the JSON string the model wrote); :func:`unwrap` parses such
text, at any depth, so a response reads as the object it is. Calls of a foreach or branch are
labelled with their item. :func:`show` draws calls (the run page's node inspector, the
submissions page's provenance of a value an LLM step wrote); the other functions are pure.
"""

from __future__ import annotations

import json
from typing import Any

import streamlit as st

from ui import json_view

_MAX_DEPTH = 4


def unwrap(value: Any, depth: int = 0) -> Any:
    """``value`` with every string that holds a JSON object or array parsed (recursively)."""
    if depth > _MAX_DEPTH:
        return value
    if isinstance(value, str):
        text = value.strip()
        if text[:1] in ("{", "[") and text[-1:] in ("}", "]"):
            try:
                return unwrap(json.loads(text), depth + 1)
            except ValueError:
                return value
        return value
    if isinstance(value, dict):
        return {k: unwrap(v, depth + 1) for k, v in value.items()}
    if isinstance(value, list):
        return [unwrap(v, depth + 1) for v in value]
    return value


def call_heading(number: int, call: Any, item: str | None, money: str) -> str:
    """``LLM call 2 · item `n3` · `model` · 12+7 tokens · $0.0020 · 840 ms`` (latency "—" if unknown)."""
    latency = f"{call.latency_ms:,} ms" if call.latency_ms is not None else "latency —"
    return (f"**LLM call {number}**" + (f" · item `{item}`" if item else "") + f" · `{call.model}` · "
            f"{call.tokens_in}+{call.tokens_out} tokens · {money} · {latency}"
            + (" · repair" if call.repair else "") + (" · offline" if call.offline else ""))


def message_text(message: Any) -> tuple[str, Any]:
    """``(role, content)`` of a recorded message (content unwrapped)."""
    if isinstance(message, dict):
        return str(message.get("role") or "user"), unwrap(message.get("content"))
    return "user", unwrap(message)


def text_or_json(value: Any, expanded: int = 2) -> None:
    """A prompt or response: preformatted text as sent (line breaks and ``-`` lines kept), or the
    JSON it holds as a tree (open ``expanded`` levels deep)."""
    if isinstance(value, (dict, list)):
        json_view.show(value, expanded=expanded)
    elif value is None:
        st.caption("_empty_")
    else:
        st.code(str(value), language=None, wrap_lines=True)


def recorded(value: Any, empty: str) -> None:
    """A recorded value: JSON as a tree (``ui/json_view.py``), text as text, nothing as ``empty``
    (a caption rather than an empty tree)."""
    if value is None:
        st.caption(f"_{empty}_")
    elif isinstance(value, (dict, list)):
        json_view.show(value, expanded=1)
    else:
        st.code(value if isinstance(value, str) else json.dumps(value), language=None, wrap_lines=True)


def show(calls: list[tuple[Any, str | None]], tools: list[tuple[Any, str | None]], *, expanded: int = 2) -> None:
    """Model calls ``(call, item)`` as a conversation (every message, then the response, its JSON
    open ``expanded`` levels deep), and tool calls ``(call, item)`` with their arguments and result."""
    from ui import format as fmt

    for i, (call, item) in enumerate(calls):
        st.markdown(call_heading(i + 1, call, item, fmt.money(call.cost_usd) or "$0"))
        for m in call.messages or []:
            role, content = message_text(m)
            with st.chat_message("assistant" if role == "assistant" else ("user" if role == "user" else "ai"),
                                 avatar=":material/settings:" if role in ("system", "tool") else None):
                st.caption(role)
                text_or_json(content, expanded)
                if isinstance(m, dict) and m.get("tool_calls"):
                    json_view.show(unwrap(m["tool_calls"]), expanded=False)
        if call.response is not None:
            with st.chat_message("assistant"):
                st.caption("response")
                text_or_json(unwrap(call.response), expanded)
        if call.error:
            st.error(call.error)
    for t, item in tools:
        st.markdown(f"**Tool `{t.tool}`**" + (f" · item `{item}`" if item else "") + f" · {fmt.status(t.status)}"
                    + (f" · {t.latency_ms:,} ms" if t.latency_ms is not None else ""))
        c1, c2 = st.columns(2)
        with c1:
            st.caption("arguments")
            recorded(t.args, "no arguments")
        with c2:
            st.caption("result")
            recorded(t.result, "no result")
        if t.error:
            st.error(t.error)

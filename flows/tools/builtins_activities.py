"""Activities of the workflow DSL (seed 002) as built-in tools, named as the DSL page names them.

Document activities work over the local document store (:mod:`flows.documents`):
``createDocument(type, properties)`` creates a document (its text is ``content``, or empty; its
name is ``properties.name``, else the type), ``updateDocument(document, properties)`` merges
properties (and may replace the text), ``deleteDocument(document)`` removes it. ``document`` is a
document id, or a document mapping with an ``id`` (what ``createDocument`` or a ``fetch`` gives).
``extractText`` reads a document's text from the store; ``executeInteraction`` runs a named
interaction of the run's catalog; the other text activities are each one structured model call
(a small ``sys:<Activity>`` interaction with a result schema holding the documented field).
``runJavascriptCode`` runs its ``code`` in the V8 sandbox (:mod:`compiler.js.code`: a fresh
isolate, a time and a memory cap) with ``data``'s keys as variables.
The compiler knows their parameters statically (``compiler.tools.BUILTIN_TOOL_PARAMS``; a test
keeps the two in step).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from compiler.builtin_signatures import answer_schema
from flows import documents
from flows.tools import tool
from flows.tools.errors import ToolError


@contextmanager
def _document_errors(activity: str) -> Iterator[None]:
    """The document store's refusals (no such document, a bad name...) as the activity's tool error."""
    try:
        yield
    except documents.DocumentError as exc:
        raise ToolError(activity, str(exc)) from None


def _doc_id(activity: str, document: str | dict[str, Any]) -> str:
    if isinstance(document, dict):
        doc_id = document.get("id")
        if not isinstance(doc_id, str):
            raise ToolError(activity, "`document` is a document id or a mapping with an `id`")
        return doc_id
    return document


@tool(name="createDocument")
def create_document_activity(type: str, properties: dict[str, Any] | None = None, content: str = "") -> dict:
    """Create a document in the document store; returns `{document: <its metadata>}`.

    Args:
        type: the document's type (kept in its metadata)
        properties: the document's properties (`name` also names it)
        content: the document's text (default empty)
    """
    props = dict(properties or {})
    name = str(props.get("name") or type)
    with _document_errors("createDocument"):
        return {"document": documents.create(name, content, type=type, properties=props)}


@tool(name="updateDocument")
def update_document_activity(document: str | dict[str, Any], properties: dict[str, Any] | None = None,
                             content: str | None = None) -> dict:
    """Update a document: merge `properties` into its properties, replace its text when `content` is given.

    Args:
        document: the document's id, or a document (a mapping with `id`)
        properties: properties to set
        content: the new text (omit to keep it)
    """
    with _document_errors("updateDocument"):
        return {"document": documents.update(_doc_id("updateDocument", document), properties=properties, content=content)}


@tool(name="deleteDocument")
def delete_document_activity(document: str | dict[str, Any]) -> dict:
    """Delete a document from the document store; returns `{deleted: <id>}`.

    Args:
        document: the document's id, or a document (a mapping with `id`)
    """
    doc_id = _doc_id("deleteDocument", document)
    with _document_errors("deleteDocument"):
        documents.delete(doc_id)
    return {"deleted": doc_id}


# --------------------------------------------------------------------------------------------
# Interactions and text activities: one structured model call each (the run's default model:
# ERGON_MODEL, else the offline model)


async def _ask(activity: str, interaction: Any, data: dict[str, Any]) -> Any:
    from flows.llm.interactions import run_interaction
    from flows.llm.types import LlmError
    from flows.tools.context import current

    ctx = current()
    try:
        return await run_interaction(interaction, data, run_id=ctx.run_id, visit_id=ctx.visit_id,
                                     environments=ctx.environments or None)
    except LlmError as exc:
        raise ToolError(activity, str(exc)) from None


def _structured_interaction(name: str, prompts: list[dict[str, str]], result_schema: dict[str, Any]) -> Any:
    """The built-in interaction ``sys:<name>``: ``prompts``, and the answer held to ``result_schema``."""
    from compiler.ir import InteractionDef

    return InteractionDef.model_validate({"kind": "interaction", "name": f"sys:{name}", "prompts": prompts,
                                          "result_schema": result_schema})


def _text_interaction(name: str, instruction: str, result_schema: dict[str, Any]) -> Any:
    """A text activity's interaction: ``instruction`` as the system prompt, the ``text`` input as the user's."""
    return _structured_interaction(name, [{"role": "system", "template": instruction},
                                          {"role": "user", "template": "{{ text }}"}], result_schema)


@tool(name="executeInteraction")
async def execute_interaction(interaction: str, data: dict[str, Any] | None = None) -> dict:
    """Run a named interaction on `data`; returns `{result: <its result>}`.

    Args:
        interaction: the interaction's name (a `kind: interaction` definition)
        data: the interaction's input
    """
    from flows.tools.context import current

    resolve = current().resolve_interaction
    if resolve is None:
        raise ToolError("executeInteraction", "interactions can only be run inside a run")
    try:
        defn = resolve(interaction)
    except LookupError as exc:
        raise ToolError("executeInteraction", str(exc)) from None
    return {"result": await _ask("executeInteraction", defn, dict(data or {}))}


@tool(name="extractText")
def extract_text(document: str | dict[str, Any]) -> dict:
    """The text of a document of the document store: `{text, hasText}` (no model call: the store holds text).

    Args:
        document: the document's id, or a document (a mapping with `id`)
    """
    with _document_errors("extractText"):
        text = documents.get(_doc_id("extractText", document))["content"]
    return {"text": text, "hasText": bool(text.strip())}


@tool(name="generateText")
async def generate_text(prompt: str, data: dict[str, Any] | None = None) -> dict:
    """Generate text from a prompt template (Jinja2, rendered over `data`); returns `{text}`.

    Args:
        prompt: the prompt template, e.g. `Write a title for {{ topic }}`
        data: the values the template reads
    """
    defn = _structured_interaction("GenerateText", [{"role": "user", "template": prompt}], answer_schema("generateText"))
    return await _ask("generateText", defn, dict(data or {}))


@tool(name="translateText")
async def translate_text(text: str, targetLanguage: str) -> dict:  # noqa: N803 - the DSL's parameter name
    """Translate a text; returns `{translatedText}`.

    Args:
        text: the text to translate
        targetLanguage: the language to translate into, e.g. `French`
    """
    defn = _text_interaction("TranslateText", "Translate the user's text into {{ targetLanguage }}.",
                             answer_schema("translateText"))
    return await _ask("translateText", defn, {"text": text, "targetLanguage": targetLanguage})


@tool(name="summarizeText")
async def summarize_text(text: str) -> dict:
    """Summarize a text; returns `{summary}`.

    Args:
        text: the text to summarize
    """
    defn = _text_interaction("SummarizeText", "Summarize the user's text in a few sentences.", answer_schema("summarizeText"))
    return await _ask("summarizeText", defn, {"text": text})


@tool(name="analyzeSentiment")
async def analyze_sentiment(text: str) -> dict:
    """The sentiment of a text; returns `{sentiment}` (positive, negative, neutral or mixed).

    Args:
        text: the text to analyze
    """
    defn = _text_interaction("AnalyzeSentiment", "Give the sentiment of the user's text.", answer_schema("analyzeSentiment"))
    return await _ask("analyzeSentiment", defn, {"text": text})


@tool(name="classifyText")
async def classify_text(text: str, categories: list[str]) -> dict:
    """Classify a text into one of `categories`; returns `{category}`.

    Args:
        text: the text to classify
        categories: the categories to choose from
    """
    if not categories:
        raise ToolError("classifyText", "`categories` is empty")
    defn = _text_interaction("ClassifyText", "Classify the user's text into one of: {{ categories | join(', ') }}.",
                             answer_schema("classifyText", category={"type": "string", "enum": list(categories)}))
    return await _ask("classifyText", defn, {"text": text, "categories": categories})


@tool(name="extractEntities")
async def extract_entities(text: str) -> dict:
    """The named entities of a text; returns `{entities: [{text, type}]}`.

    Args:
        text: the text to extract entities from
    """
    defn = _text_interaction("ExtractEntities", "List the named entities (people, organisations, places, dates...) of the user's text.",
                             answer_schema("extractEntities"))
    return await _ask("extractEntities", defn, {"text": text})


# --------------------------------------------------------------------------------------------
# JavaScript


@tool(name="runJavascriptCode")
def run_javascript_code(code: str, data: dict[str, Any] | None = None) -> dict:
    """Run JavaScript in the sandbox; returns `{result: <its value>}` (JSON).

    Args:
        code: the JavaScript: a script whose last expression is the result, or a function body that `return`s it; `${...}` in it is JavaScript's own
        data: values the code sees as variables, by name (e.g. `{invoices: "${invoices}"}`)
    """
    from compiler.js.code import run_code
    from compiler.js.engine import JsError

    try:
        return {"result": run_code(code, dict(data or {}))}
    except JsError as exc:  # its exception, a syntax error or a time/memory cap: the step fails with it
        raise ToolError("runJavascriptCode", str(exc)) from None

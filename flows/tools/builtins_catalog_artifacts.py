"""The catalog's artifact tools over the run's artifacts: search, patch, merge, render, inspect.

``grep_artifacts``, ``patch_artifact`` and ``merge_artifacts`` work on text artifacts (markdown
and file artifacts as they are, JSON ones as their JSON text); ``render_markdown`` turns a
markdown artifact into PDF, DOCX or HTML, ``render_docx`` a DOCX artifact into PDF or markdown,
``inspect_pdf`` reads a PDF artifact's pages, and ``edit_artifact_docx`` applies XPath edits to a
DOCX artifact's ``word/document.xml``. Each result is recorded as a new artifact (a new version
when its key exists), the way ``write_artifact`` records one, so the dashboard shows it and a
later tool reads it.

**Binary artifacts.** An artifact's content is a JSON value in the store
(:class:`flows.store.models.Artifact`). A PDF or DOCX is kept as a ``file`` artifact whose content
is the object ``{"encoding": "base64", "media_type": …, "size": <bytes>, "sha256": …, "data":
<base64>}`` (:func:`binary_content`); a text ``file`` artifact's content stays a string, so the
two never mix up. ``write_artifact`` only takes text for ``file`` artifacts: binary artifacts
come from these tools, never from a model's arguments. They are limited to
:data:`MAX_BINARY_BYTES`. ``read_artifact`` gives a binary artifact's description without its
``data``, and names the tools that read it.

Libraries, not hand-written formats: markdown is parsed by markdown-it-py (CommonMark with
tables), PDFs are written by fpdf2 from that HTML and read by pypdf, DOCX files are read and
written by python-docx, and the XPath edits run on lxml. What is left out, and why:

* ``render_markdown`` has no LaTeX pipeline, so its ``template_path``, ``logo_path`` and
  ``data_source`` parameters are not taken (the checker refuses them as unknown parameters). PDFs
  use the PDF core fonts: a character outside Latin-1 is written as its closest ASCII (dashes,
  quotes, ellipsis) or ``?``.
* A PDF holds no images: a markdown image is written as a link (fpdf2 would fetch its URL or
  read its path, which a model chooses). A DOCX gets the image's alt text.
* ``inspect_pdf`` returns text, not images (no vision model): the page count, the document's
  metadata and each page's size and text; its thumbnail grid's ``columns`` is not taken.
* The document store holds text documents only (:mod:`flows.documents`), so no DOCX or PDF can
  be one: ``render_docx`` and ``inspect_pdf`` read artifacts and take no ``document_id``.
* A regular expression is matched by the ``regex`` package with a time limit, so a pattern a
  model writes cannot stall the worker (catastrophic backtracking fails the call instead).
"""

from __future__ import annotations

import base64
import copy
import hashlib
import html as html_lib
import io
import re
from pathlib import PurePosixPath
from typing import Any, Literal

from typing_extensions import NotRequired, TypedDict

from flows.tools import tool
from flows.tools.builtins_agent import _check_key, _rows, _run_id
from flows.tools.context import current
from flows.tools.errors import ToolError

#: Largest PDF or DOCX an artifact holds (base64 makes the stored text a third larger).
MAX_BINARY_BYTES = 10 * 1024 * 1024
PDF = "application/pdf"
DOCX = "application/vnd.openxmlformats-officedocument.wordprocessingml.document"
#: Seconds a regular expression may take over one artifact.
REGEX_TIMEOUT = 1.0
#: Longest line grep_artifacts returns (the rest is cut and marked).
MAX_LINE = 500


# --------------------------------------------------------------------------------------------
# Reading and recording artifacts


def binary_content(data: bytes, media_type: str) -> dict[str, Any]:
    """The stored form of a binary artifact (see the module docstring)."""
    return {"encoding": "base64", "media_type": media_type, "size": len(data),
            "sha256": hashlib.sha256(data).hexdigest(), "data": base64.b64encode(data).decode("ascii")}


def is_binary(content: Any) -> bool:
    return isinstance(content, dict) and content.get("encoding") == "base64" and isinstance(content.get("data"), str)


def _latest(tool_name: str, key: str) -> Any:
    from flows.store import artifacts as artifact_store

    run_id = _run_id(tool_name)
    rows = _rows(run_id, key.strip())
    if not rows:
        keys = sorted({r.key for r in artifact_store.artifacts_for_run(run_id, latest_only=True)})
        raise ToolError(tool_name, f"no artifact `{key}` in this run (artifacts: {', '.join(keys) or 'none'})")
    return rows[-1]


def _text(tool_name: str, row: Any) -> str:
    import json

    if is_binary(row.content):
        raise ToolError(tool_name, f"artifact `{row.key}` is a binary file ({row.content.get('media_type')}), not text")
    if isinstance(row.content, str):
        return row.content
    return json.dumps(row.content, indent=2, ensure_ascii=False)


def _bytes(tool_name: str, row: Any, media_type: str, what: str) -> bytes:
    content = row.content
    if not is_binary(content):
        raise ToolError(tool_name, f"artifact `{row.key}` is not a {what} file (it holds {row.type} text)")
    if content.get("media_type") != media_type:
        raise ToolError(tool_name, f"artifact `{row.key}` is {content.get('media_type')}, not a {what} file")
    return base64.b64decode(content["data"])


def _record(tool_name: str, key: str, type: Literal["markdown", "file"], content: Any, description: str) -> dict[str, Any]:
    from flows.artifacts import record

    run_id = _run_id(tool_name)
    full_key = _check_key(tool_name, key)
    row = record(run_id, full_key, type, content, visit_id=current().visit_id, description=description)
    size = content["size"] if is_binary(content) else len(content.encode("utf-8")) if isinstance(content, str) else None
    return {"path": row.key, "version": row.version, "type": row.type, "size": size}


def _record_binary(tool_name: str, key: str, data: bytes, media_type: str, description: str) -> dict[str, Any]:
    if len(data) > MAX_BINARY_BYTES:
        raise ToolError(tool_name, f"the result is {len(data)} bytes; binary artifacts are limited to {MAX_BINARY_BYTES}")
    return _record(tool_name, key, "file", binary_content(data, media_type), description)


# --------------------------------------------------------------------------------------------
# grep, patch, merge


@tool(name="grep_artifacts")
def grep_artifacts(pattern: str, path_prefix: str | None = None, ignore_case: bool = False, max_matches: int = 100) -> dict:
    """Search the run's text artifacts (latest versions) for a regular expression, line by line.

    Args:
        pattern: a regular expression (Python syntax), e.g. `ERROR|Traceback`
        path_prefix: only artifacts whose key starts with this, e.g. `out/`
        ignore_case: match without regard to case
        max_matches: at most this many matching lines (1-1000); `truncated` says if more exist
    """
    import regex

    from flows.store import artifacts as artifact_store

    run_id = _run_id("grep_artifacts")
    try:
        compiled = regex.compile(pattern, regex.IGNORECASE if ignore_case else 0)
    except regex.error as exc:
        raise ToolError("grep_artifacts", f"invalid regular expression: {exc}") from None
    limit = max(1, min(max_matches, 1000))
    matches: list[dict[str, Any]] = []
    searched = 0
    truncated = False
    for row in artifact_store.artifacts_for_run(run_id, latest_only=True):
        if (path_prefix and not row.key.startswith(path_prefix)) or is_binary(row.content):
            continue
        searched += 1
        for number, line in enumerate(_text("grep_artifacts", row).splitlines(), 1):
            try:
                found = compiled.search(line, timeout=REGEX_TIMEOUT)
            except TimeoutError:
                raise ToolError("grep_artifacts", f"the pattern took longer than {REGEX_TIMEOUT} s on `{row.key}` "
                                                  f"line {number}: simplify it") from None
            if found is None:
                continue
            if len(matches) == limit:
                truncated = True
                break
            shown = line if len(line) <= MAX_LINE else line[:MAX_LINE] + "…"
            matches.append({"path": row.key, "version": row.version, "line": number, "text": shown})
        if truncated:
            break
    return {"matches": matches, "searched": searched, "truncated": truncated}


class PatchEdit(TypedDict):
    """One literal replacement: ``find`` must occur in the artifact (exactly once unless ``all``)."""

    find: str
    replace: str
    all: NotRequired[bool]


@tool(name="patch_artifact")
def patch_artifact(path: str, edits: list[PatchEdit]) -> dict:
    """Apply literal find-and-replace edits to a text artifact, in order; records a new version.

    Every `find` must occur in the text; one that occurs more than once needs `all: true` (or more
    surrounding text) so that the edit is not ambiguous. Nothing is recorded if an edit fails.

    Args:
        path: the artifact's key, e.g. `out/report.md`
        edits: the edits, applied in order, each `{find, replace}` and optionally `all: true`
    """
    if not edits:
        raise ToolError("patch_artifact", "give at least one edit")
    row = _latest("patch_artifact", path)
    if row.type not in ("markdown", "file") or is_binary(row.content):
        raise ToolError("patch_artifact", f"artifact `{row.key}` is no text artifact: patch markdown or text file artifacts "
                                          "(write a JSON one again with write_artifact)")
    text = _text("patch_artifact", row)
    replaced = 0
    for i, edit in enumerate(edits, 1):
        find, replacement = edit["find"], edit["replace"]
        if not find:
            raise ToolError("patch_artifact", f"edit {i}: `find` is empty")
        count = text.count(find)
        if count == 0:
            raise ToolError("patch_artifact", f"edit {i}: `find` does not occur in `{row.key}`; nothing was changed")
        if count > 1 and not edit.get("all", False):
            raise ToolError("patch_artifact", f"edit {i}: `find` occurs {count} times in `{row.key}`: add surrounding "
                                              "text to make it unique, or set `all: true`; nothing was changed")
        text = text.replace(find, replacement) if edit.get("all", False) else text.replace(find, replacement, 1)
        replaced += count if edit.get("all", False) else 1
    result = _record("patch_artifact", path, row.type, text, row.description or f"{row.key}, patched")
    return {**result, "replacements": replaced}


@tool(name="merge_artifacts")
def merge_artifacts(paths: list[str], output_path: str, separator: str = "\n\n") -> dict:
    """Concatenate text artifacts in order into one artifact (e.g. sections written separately).

    Args:
        paths: the artifacts' keys, in the order they are joined
        output_path: the key of the merged artifact, e.g. `out/report.md`
        separator: text put between two artifacts (default: a blank line)
    """
    if not paths:
        raise ToolError("merge_artifacts", "give at least one artifact path")
    rows = [_latest("merge_artifacts", p) for p in paths]
    text = separator.join(_text("merge_artifacts", row) for row in rows)
    kind: Literal["markdown", "file"] = "markdown" if all(row.type == "markdown" for row in rows) else "file"
    result = _record("merge_artifacts", output_path, kind, text, f"{len(rows)} artifacts merged")
    return {**result, "merged": [row.key for row in rows]}


# --------------------------------------------------------------------------------------------
# Markdown → HTML, PDF, DOCX


def _markdown() -> Any:
    from markdown_it import MarkdownIt

    return MarkdownIt("commonmark").enable("table")


def _headings(tokens: list[Any]) -> list[tuple[int, str]]:
    return [(int(tok.tag[1]), tokens[i + 1].content) for i, tok in enumerate(tokens) if tok.type == "heading_open"]


def _toc_markdown(tokens: list[Any]) -> str:
    lines = [f"{'  ' * (level - 1)}- {text}" for level, text in _headings(tokens)]
    return "**Contents**\n\n" + "\n".join(lines) + "\n\n" if lines else ""


def markdown_to_html(text: str, *, title: str | None = None, toc: bool = False) -> str:
    """A standalone HTML page of a markdown text (markdown-it's rendering, raw HTML kept out)."""
    md = _markdown().disable("html_block").disable("html_inline")
    body = md.render((_toc_markdown(md.parse(text)) if toc else "") + text)
    head = f"<title>{html_lib.escape(title)}</title>" if title else ""
    return f'<!DOCTYPE html>\n<html><head><meta charset="utf-8">{head}</head>\n<body>\n{body}</body></html>\n'


#: Characters the PDF core fonts lack, written as their closest Latin-1 text.
_LATIN1 = str.maketrans({"\u2014": "-", "\u2013": "-", "\u2018": "'", "\u2019": "'", "\u201c": '"', "\u201d": '"',
                         "\u2026": "...", "\u2022": "\u00b7", "\u00a0": " ", "\u2212": "-", "\u20ac": "EUR"})


def _latin1(text: str) -> str:
    return text.translate(_LATIN1).encode("latin-1", "replace").decode("latin-1")


def html_to_pdf(body_html: str, *, title: str | None = None) -> bytes:
    from fpdf import FPDF

    pdf = FPDF()
    pdf.set_creator("Ergon")
    if title:
        pdf.set_title(_latin1(title))
    pdf.add_page()
    pdf.set_font("helvetica", size=11)
    pdf.write_html(_latin1(body_html))
    return bytes(pdf.output())


def markdown_to_pdf(text: str, *, title: str | None = None, toc: bool = False) -> bytes:
    # fpdf2 loads an <img> it is given, from a URL or a local path: a model's `![](…)` would make
    # Ergon fetch a private address or embed a file of the worker, so images stay links here
    md = _markdown().disable("html_block").disable("html_inline").disable("image")
    return html_to_pdf(md.render((_toc_markdown(md.parse(text)) if toc else "") + text), title=title)


def _inline(paragraph: Any, token: Any) -> None:
    """Add an inline token's children to a python-docx paragraph as runs (bold, italic, code)."""
    bold = italic = False
    for child in token.children or []:
        kind = child.type
        if kind == "strong_open":
            bold = True
        elif kind == "strong_close":
            bold = False
        elif kind == "em_open":
            italic = True
        elif kind == "em_close":
            italic = False
        elif kind in ("text", "code_inline", "html_inline"):
            run = paragraph.add_run(child.content)
            run.bold, run.italic = bold or None, italic or None
            if kind == "code_inline":
                run.font.name = "Courier New"
        elif kind in ("softbreak", "hardbreak"):
            paragraph.add_run().add_break() if kind == "hardbreak" else paragraph.add_run(" ")
        elif kind == "image":
            paragraph.add_run(child.content or child.attrGet("alt") or "")


def markdown_to_docx(text: str, *, title: str | None = None, toc: bool = False) -> bytes:
    """A DOCX of a markdown text: headings, paragraphs, bullet and numbered lists, block quotes,
    code blocks, tables and rules, with bold, italic and code spans."""
    import docx

    tokens = _markdown().parse(text)
    document = docx.Document()
    if title:
        document.core_properties.title = title
    if toc and (headings := _headings(tokens)):
        document.add_paragraph("Contents", style="Heading 1")
        for level, heading in headings:
            document.add_paragraph(heading, style="List Bullet" if level == 1 else "List Bullet 2")
    lists: list[str] = []
    quote = 0
    i = 0
    while i < len(tokens):
        tok = tokens[i]
        if tok.type == "heading_open":
            _inline(document.add_heading(level=min(int(tok.tag[1]), 9)), tokens[i + 1])
            i += 3
            continue
        if tok.type in ("bullet_list_open", "ordered_list_open"):
            lists.append("List Bullet" if tok.type == "bullet_list_open" else "List Number")
        elif tok.type in ("bullet_list_close", "ordered_list_close"):
            lists.pop()
        elif tok.type == "blockquote_open":
            quote += 1
        elif tok.type == "blockquote_close":
            quote -= 1
        elif tok.type == "paragraph_open":
            style = (lists[-1] + ("" if len(lists) == 1 else f" {min(len(lists), 3)}")) if lists else "Quote" if quote else None
            _inline(document.add_paragraph(style=style), tokens[i + 1])
            i += 3
            continue
        elif tok.type in ("fence", "code_block"):
            run = document.add_paragraph().add_run(tok.content.rstrip("\n"))
            run.font.name = "Courier New"
        elif tok.type == "hr":
            document.add_paragraph("\u2014" * 20)
        elif tok.type == "table_open":
            i = _docx_table(document, tokens, i)
            continue
        i += 1
    out = io.BytesIO()
    document.save(out)
    return out.getvalue()


def _docx_table(document: Any, tokens: list[Any], start: int) -> int:
    rows: list[list[Any]] = []
    i = start + 1
    while tokens[i].type != "table_close":
        if tokens[i].type == "tr_open":
            rows.append([])
        elif tokens[i].type == "inline":
            rows[-1].append(tokens[i])
        i += 1
    width = max((len(r) for r in rows), default=0)
    if rows and width:
        table = document.add_table(rows=len(rows), cols=width)
        table.style = "Table Grid"
        for r, cells in enumerate(rows):
            for c, inline in enumerate(cells):
                cell_paragraph = table.cell(r, c).paragraphs[0]
                _inline(cell_paragraph, inline)
                if r == 0:
                    for run in cell_paragraph.runs:
                        run.bold = True
    return i + 1


def _stem(path: str) -> str:
    return PurePosixPath(path).stem or "document"


@tool(name="render_markdown")
def render_markdown(artifact_path: str, format: Literal["pdf", "docx", "html"] = "pdf", title: str | None = None,
                    toc: bool = True) -> dict:
    """Render a markdown artifact to PDF, DOCX or HTML; the result is the artifact `out/<title>.<format>`.

    Args:
        artifact_path: the markdown artifact's key, e.g. `files/report.md`
        format: pdf (default), docx or html
        title: the document's title (its metadata and the output's name; default: the artifact's name)
        toc: begin with a list of the headings (default: true)
    """
    row = _latest("render_markdown", artifact_path)
    text = _text("render_markdown", row)
    name = (title or _stem(row.key)).strip() or "document"
    safe = re.sub(r"[^\w.-]+", "_", name).strip("._") or "document"
    output = f"out/{safe}.{format}"
    description = f"{row.key} rendered as {format.upper()}"
    if format == "html":
        result = _record("render_markdown", output, "file", markdown_to_html(text, title=name, toc=toc), description)
    elif format == "docx":
        result = _record_binary("render_markdown", output, markdown_to_docx(text, title=name, toc=toc), DOCX, description)
    else:
        result = _record_binary("render_markdown", output, markdown_to_pdf(text, title=name, toc=toc), PDF, description)
    return {**result, "format": format}


# --------------------------------------------------------------------------------------------
# DOCX → markdown, PDF


def _md_escape(text: str) -> str:
    return text.replace("|", "\\|")


def _docx_runs(paragraph: Any) -> str:
    parts = []
    for run in paragraph.runs:
        text = run.text
        if not text.strip():
            parts.append(text)
            continue
        if run.bold:
            text = f"**{text}**"
        if run.italic:
            text = f"*{text}*"
        parts.append(text)
    return "".join(parts).strip()


def docx_to_markdown(data: bytes) -> str:
    """The markdown of a DOCX: headings (``Heading N`` and ``Title`` styles), list paragraphs,
    tables, and bold or italic runs; body elements in document order."""
    import docx
    from docx.table import Table
    from docx.text.paragraph import Paragraph

    document = docx.Document(io.BytesIO(data))
    blocks: list[str] = []
    for element in document.element.body.iterchildren():
        tag = element.tag.rsplit("}", 1)[-1]
        if tag == "p":
            paragraph = Paragraph(element, document)
            text = _docx_runs(paragraph)
            if not text:
                continue
            style = paragraph.style.name if paragraph.style is not None else ""
            if style == "Title":
                blocks.append(f"# {paragraph.text.strip()}")
            elif style.startswith("Heading ") and style[8:].isdigit():
                blocks.append(f"{'#' * min(int(style[8:]), 6)} {paragraph.text.strip()}")
            elif style.startswith("List Number"):
                blocks.append(f"1. {text}")
            elif style.startswith("List"):
                blocks.append(f"- {text}")
            else:
                blocks.append(text)
        elif tag == "tbl":
            table = Table(element, document)
            rows = [[_md_escape(cell.text.strip()).replace("\n", " ") for cell in row.cells] for row in table.rows]
            if rows:
                lines = ["| " + " | ".join(rows[0]) + " |", "|" + "---|" * len(rows[0])]
                lines += ["| " + " | ".join(r) + " |" for r in rows[1:]]
                blocks.append("\n".join(lines))
    # consecutive list items stay one list
    out = blocks[:1]
    for before, block in zip(blocks, blocks[1:], strict=False):
        out.append(("\n" if block[:2] in ("- ", "1.") and before[:2] in ("- ", "1.") else "\n\n") + block)
    return "".join(out) + "\n"


@tool(name="render_docx")
def render_docx(docx_path: str, format: Literal["pdf", "markdown"] = "pdf", output_path: str | None = None,
                title: str | None = None) -> dict:
    """Export a DOCX artifact to PDF or markdown (default output: `out/<title>.pdf` or `.md`).

    Args:
        docx_path: the DOCX artifact's key, e.g. `out/report.docx`
        format: pdf (default) or markdown
        output_path: the output artifact's key
        title: the output's base name when `output_path` is omitted (default: the DOCX's name)
    """
    row = _latest("render_docx", docx_path)
    data = _bytes("render_docx", row, DOCX, "DOCX")
    try:
        text = docx_to_markdown(data)
    except Exception as exc:  # noqa: BLE001 - python-docx raises several kinds on a damaged file
        raise ToolError("render_docx", f"`{row.key}` is not a readable DOCX: {exc}") from None
    base = (title or _stem(row.key)).strip() or "document"
    description = f"{row.key} exported as {format}"
    if format == "markdown":
        result = _record("render_docx", output_path or f"out/{base}.md", "markdown", text, description)
    else:
        result = _record_binary("render_docx", output_path or f"out/{base}.pdf", markdown_to_pdf(text, title=base), PDF,
                                description)
    return {**result, "format": format}


# --------------------------------------------------------------------------------------------
# PDF inspection

#: Characters of each page's text in overview mode (detail mode returns the whole page).
OVERVIEW_CHARS = 300


@tool(name="inspect_pdf")
def inspect_pdf(pdf_path: str, pages: list[int] | None = None, from_page: int = 1, to_page: int | None = None) -> dict:
    """Read a PDF artifact page by page: its page count and metadata, and each page's size and text.

    Overview mode (no `pages`) gives the start of each page's text from `from_page` to `to_page`;
    detail mode (`pages`, at most 4) gives those pages' whole text.

    Args:
        pdf_path: the PDF artifact's key, e.g. `out/report.pdf`
        pages: 1-indexed page numbers for detail mode (at most 4)
        from_page: overview mode: the first page (default 1)
        to_page: overview mode: the last page (default: the last)
    """
    from pypdf import PdfReader
    from pypdf.errors import PdfReadError

    row = _latest("inspect_pdf", pdf_path)
    try:
        reader = PdfReader(io.BytesIO(_bytes("inspect_pdf", row, PDF, "PDF")))
        count = len(reader.pages)
    except PdfReadError as exc:
        raise ToolError("inspect_pdf", f"`{row.key}` is not a readable PDF: {exc}") from None
    if pages is not None:
        if not 1 <= len(pages) <= 4:
            raise ToolError("inspect_pdf", "detail mode takes 1 to 4 page numbers")
        wanted, limit = pages, None
    else:
        last = count if to_page is None else min(to_page, count)
        wanted, limit = list(range(max(1, from_page), last + 1)), OVERVIEW_CHARS
    bad = [p for p in wanted if not 1 <= p <= count]
    if bad:
        raise ToolError("inspect_pdf", f"`{row.key}` has pages 1 to {count}, not {', '.join(map(str, bad))}")
    shown = []
    for number in wanted:
        page = reader.pages[number - 1]
        text = (page.extract_text() or "").strip()
        entry: dict[str, Any] = {"page": number, "width": float(page.mediabox.width), "height": float(page.mediabox.height),
                                 "text": text if limit is None or len(text) <= limit else text[:limit] + "…"}
        shown.append(entry)
    meta: Any = reader.metadata or {}
    return {"path": row.key, "version": row.version, "page_count": count, "mode": "overview" if pages is None else "detail",
            "metadata": {k.lstrip("/").lower(): str(v) for k, v in meta.items()}, "pages": shown}


# --------------------------------------------------------------------------------------------
# DOCX XPath edits

W = "http://schemas.openxmlformats.org/wordprocessingml/2006/main"
_NS = {"w": W}


class DocxEdit(TypedDict):
    """One XPath edit of ``word/document.xml`` (the seed's ``structured_edits`` item)."""

    operation: Literal["insert_before", "insert_after", "replace", "delete", "append", "move_to"]
    anchor_type: NotRequired[Literal["xpath"]]
    anchor_expr: str
    content: NotRequired[str]
    target_anchor_expr: NotRequired[str]
    position: NotRequired[Literal["top", "end", "before", "after"]]


def _fragment(tool_name: str, content: str | None, i: int) -> list[Any]:
    """Parse an edit's XML ``content`` (elements of the WordprocessingML namespace, ``w:`` bound)."""
    from lxml import etree

    if not content:
        raise ToolError(tool_name, f"edit {i}: this operation needs `content` (WordprocessingML XML)")
    try:
        parser = etree.XMLParser(resolve_entities=False, no_network=True)
        wrapper = etree.fromstring(f'<w:wrap xmlns:w="{W}">{content}</w:wrap>'.encode(), parser)
    except etree.XMLSyntaxError as exc:
        raise ToolError(tool_name, f"edit {i}: `content` is not well-formed XML: {exc}") from None
    return list(wrapper)


def _mark(kind: str, author: str, when: str, ids: list[int]) -> Any:
    from lxml import etree

    ids[0] += 1
    return etree.Element(f"{{{W}}}{kind}", {f"{{{W}}}id": str(ids[0]), f"{{{W}}}author": author, f"{{{W}}}date": when})


def _track_insert(elements: list[Any], author: str, when: str, ids: list[int]) -> list[Any]:
    """Mark inserted content as a tracked insertion: each of its runs goes inside a ``w:ins``
    (a run given alone is returned wrapped)."""
    out = []
    for element in elements:
        runs = [element] if element.tag == f"{{{W}}}r" else element.findall(f".//{{{W}}}r")
        for run in runs:
            ins = _mark("ins", author, when, ids)
            if run.getparent() is not None:
                run.addprevious(ins)
            ins.append(run)
            if run is element:
                element = ins
        out.append(element)
    return out


def _track_delete(element: Any, author: str, when: str, ids: list[int]) -> None:
    """Mark an element's runs as a tracked deletion (``w:del``, ``w:t`` → ``w:delText``)."""
    runs = [element] if element.tag == f"{{{W}}}r" else element.findall(f".//{{{W}}}r")
    for run in runs:
        for t in run.findall(f"{{{W}}}t"):
            t.tag = f"{{{W}}}delText"
        wrapper = _mark("del", author, when, ids)
        run.addprevious(wrapper)
        wrapper.append(run)


@tool(name="edit_artifact_docx")
def edit_artifact_docx(path: str, structured_edits: list[DocxEdit], track_changes: bool = False,
                       author: str | None = None) -> dict:
    """Apply XPath edits to a DOCX artifact's `word/document.xml`; records a new version.

    Each edit's `anchor_expr` is an XPath (prefix `w:` for WordprocessingML) that must select
    exactly one element. Operations: insert_before, insert_after, replace, append (as the anchor's
    last child) — these take `content`, WordprocessingML XML such as `<w:p><w:r><w:t>Text</w:t></w:r></w:p>`
    — delete, and move_to (`target_anchor_expr` and `position`: top, end, before or after).
    With `track_changes`, inserted runs are marked as insertions and deleted runs as deletions
    (Word shows them as tracked changes) instead of being changed silently.

    Args:
        path: the DOCX artifact's key, e.g. `out/report.docx`
        structured_edits: the edits, applied in order
        track_changes: mark insertions and deletions as Word tracked changes (default false)
        author: the tracked changes' author (default: Ergon)
    """
    import zipfile
    from datetime import UTC, datetime

    from lxml import etree

    if not structured_edits:
        raise ToolError("edit_artifact_docx", "give at least one edit")
    row = _latest("edit_artifact_docx", path)
    data = _bytes("edit_artifact_docx", row, DOCX, "DOCX")
    try:
        archive = zipfile.ZipFile(io.BytesIO(data))
        root = etree.fromstring(archive.read("word/document.xml"), etree.XMLParser(resolve_entities=False, no_network=True))
    except (zipfile.BadZipFile, KeyError, etree.XMLSyntaxError) as exc:
        raise ToolError("edit_artifact_docx", f"`{row.key}` is not a readable DOCX: {exc}") from None
    when = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    who = author or "Ergon"
    taken: Any = root.xpath("//w:ins/@w:id | //w:del/@w:id", namespaces=_NS)
    ids = [max([int(str(v)) for v in taken if str(v).isdigit()] or [0])]  # tracked-change ids stay unique

    def one(expr: str | None, i: int, what: str) -> Any:
        if not expr:
            raise ToolError("edit_artifact_docx", f"edit {i}: `{what}` is required")
        try:
            found = root.xpath(expr, namespaces=_NS)
        except etree.XPathError as exc:
            raise ToolError("edit_artifact_docx", f"edit {i}: invalid XPath `{expr}`: {exc}") from None
        elements = [f for f in found if isinstance(f, etree._Element)] if isinstance(found, list) else []
        if len(elements) != 1:
            raise ToolError("edit_artifact_docx", f"edit {i}: `{expr}` selects {len(elements)} elements, not exactly one; "
                                                  "nothing was changed")
        return elements[0]

    for i, edit in enumerate(structured_edits, 1):
        if edit.get("anchor_type", "xpath") != "xpath":
            raise ToolError("edit_artifact_docx", f"edit {i}: `anchor_type` must be `xpath`")
        op = edit["operation"]
        anchor = one(edit["anchor_expr"], i, "anchor_expr")
        if op == "move_to":
            target = one(edit.get("target_anchor_expr"), i, "target_anchor_expr")
            if anchor is target or target in anchor.iterdescendants():
                raise ToolError("edit_artifact_docx", f"edit {i}: cannot move an element into itself")
            position = edit.get("position", "after")
            moved = copy.deepcopy(anchor) if track_changes else anchor
            if track_changes:
                _track_delete(anchor, who, when, ids)
                moved = _track_insert([moved], who, when, ids)[0]
            if position == "top":
                target.insert(0, moved)
            elif position == "end":
                target.append(moved)
            elif position == "before":
                target.addprevious(moved)
            else:
                target.addnext(moved)
            continue
        if op == "delete":
            if track_changes:
                _track_delete(anchor, who, when, ids)
            else:
                anchor.getparent().remove(anchor)
            continue
        new = _fragment("edit_artifact_docx", edit.get("content"), i)
        if track_changes:
            new = _track_insert(new, who, when, ids)
        if op == "insert_before":
            for element in new:
                anchor.addprevious(element)
        elif op == "insert_after":
            for element in reversed(new):
                anchor.addnext(element)
        elif op == "append":
            for element in new:
                anchor.append(element)
        elif op == "replace":
            for element in new:
                anchor.addprevious(element)
            if track_changes:
                _track_delete(anchor, who, when, ids)
            else:
                anchor.getparent().remove(anchor)
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as target_zip:
        for item in archive.infolist():
            body = etree.tostring(root, xml_declaration=True, encoding="UTF-8", standalone=True) \
                if item.filename == "word/document.xml" else archive.read(item.filename)
            target_zip.writestr(item, body)
    result = _record_binary("edit_artifact_docx", path, out.getvalue(), DOCX, row.description or f"{row.key}, edited")
    return {**result, "applied": len(structured_edits), "tracked": track_changes}

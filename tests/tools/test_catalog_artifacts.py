"""The catalog's artifact tools, called through ``flows.tools.invoke`` on a real store, with real
PDF and DOCX files (written by fpdf2 and python-docx, read back by pypdf and python-docx)."""

from __future__ import annotations

import asyncio
import base64
import io
import zipfile

import pytest

from flows.tools.errors import ToolArgumentError, ToolError
from flows.tools.invoke import invoke


def call(name, args=None):
    return asyncio.run(invoke(name, args or {}))


def write(key, content, type="markdown"):
    return call("write_artifact", {"key": key, "content": content, "type": type})


def stored(run_ctx, key):
    from flows.store import artifacts as artifact_store

    return artifact_store.artifacts_for_run(run_ctx.run_id, key=key)[-1]


def stored_bytes(run_ctx, key, media_type):
    content = stored(run_ctx, key).content
    assert content["encoding"] == "base64" and content["media_type"] == media_type
    data = base64.b64decode(content["data"])
    assert content["size"] == len(data)
    return data


def put_binary(run_ctx, key, data, media_type):
    from flows.artifacts import record
    from flows.tools.builtins_catalog_artifacts import binary_content

    record(run_ctx.run_id, key, "file", binary_content(data, media_type))


REPORT = """\
# Quarterly report

Revenue grew **12%** in *Q3* — see `totals.csv`.

## Risks

- supplier delay
- currency

| Region | Sales |
|--------|-------|
| North  | 120   |
| South  | 80    |
"""


def test_grep_finds_lines_by_regular_expression_across_text_artifacts(run_ctx):
    write("out/log.txt", "ok\nERROR disk full\nok\nerror: retry", "file")
    write("files/notes.md", "nothing here\nan Error in the notes")
    write("data", {"status": "ERROR"}, "json")
    found = call("grep_artifacts", {"pattern": r"^ERROR|error:"})
    assert [(m["path"], m["line"], m["text"]) for m in found["matches"]] == [
        ("out/log.txt", 2, "ERROR disk full"), ("out/log.txt", 4, "error: retry")]
    assert found["searched"] == 3 and not found["truncated"]
    only_out = call("grep_artifacts", {"pattern": "error", "ignore_case": True, "path_prefix": "files/"})
    assert [(m["path"], m["line"]) for m in only_out["matches"]] == [("files/notes.md", 2)]
    # a JSON artifact is searched as its JSON text
    assert [m["path"] for m in call("grep_artifacts", {"pattern": '"status": "ERROR"'})["matches"]] == ["data"]
    capped = call("grep_artifacts", {"pattern": "o", "max_matches": 2})
    assert len(capped["matches"]) == 2 and capped["truncated"]
    with pytest.raises(ToolError, match="invalid regular expression"):
        call("grep_artifacts", {"pattern": "(unclosed"})


def test_grep_stops_a_pattern_that_backtracks_catastrophically(run_ctx):
    write("files/a.txt", "a" * 40 + "!", "file")
    with pytest.raises(ToolError, match="took longer than"):
        call("grep_artifacts", {"pattern": "(a|aa)+$"})


def test_patch_applies_literal_edits_in_order_as_a_new_version(run_ctx):
    write("out/report.md", "Total: 10 EUR. Total: 10 EUR. Owner: Ann.")
    result = call("patch_artifact", {"path": "out/report.md", "edits": [
        {"find": "10 EUR", "replace": "12 EUR", "all": True}, {"find": "Ann", "replace": "Bob"}]})
    assert result["version"] == 2 and result["replacements"] == 3
    assert call("read_artifact", {"key": "out/report.md"})["content"] == "Total: 12 EUR. Total: 12 EUR. Owner: Bob."
    # ambiguous or missing text changes nothing
    with pytest.raises(ToolError, match="occurs 2 times"):
        call("patch_artifact", {"path": "out/report.md", "edits": [{"find": "Total", "replace": "Sum"}]})
    with pytest.raises(ToolError, match="does not occur"):
        call("patch_artifact", {"path": "out/report.md", "edits": [{"find": "Bob", "replace": "Eve"},
                                                                   {"find": "nowhere", "replace": "x"}]})
    assert stored(run_ctx, "out/report.md").version == 2
    write("data", {"a": 1}, "json")
    with pytest.raises(ToolError, match="no text artifact"):
        call("patch_artifact", {"path": "data", "edits": [{"find": "1", "replace": "2"}]})
    with pytest.raises(ToolArgumentError):
        call("patch_artifact", {"path": "out/report.md", "edits": [{"find": "x"}]})


def test_merge_concatenates_in_order_with_the_separator(run_ctx):
    write("sections/1.md", "# One")
    write("sections/2.md", "# Two")
    result = call("merge_artifacts", {"paths": ["sections/2.md", "sections/1.md"], "output_path": "out/all.md"})
    assert result["merged"] == ["sections/2.md", "sections/1.md"] and result["type"] == "markdown"
    assert stored(run_ctx, "out/all.md").content == "# Two\n\n# One"
    call("merge_artifacts", {"paths": ["sections/1.md", "sections/2.md"], "output_path": "out/all.md", "separator": "\n---\n"})
    assert stored(run_ctx, "out/all.md").content == "# One\n---\n# Two"
    with pytest.raises(ToolError, match="no artifact `sections/3.md`"):
        call("merge_artifacts", {"paths": ["sections/3.md"], "output_path": "x"})


def test_render_markdown_to_pdf_is_a_readable_pdf_with_the_text(run_ctx):
    from pypdf import PdfReader

    write("files/report.md", REPORT)
    result = call("render_markdown", {"artifact_path": "files/report.md", "title": "Q3 report"})
    assert result["path"] == "out/Q3_report.pdf" and result["format"] == "pdf"
    reader = PdfReader(io.BytesIO(stored_bytes(run_ctx, "out/Q3_report.pdf", "application/pdf")))
    text = "\n".join(page.extract_text() for page in reader.pages)
    assert reader.metadata.title == "Q3 report"
    for expected in ("Contents", "Quarterly report", "Revenue grew 12% in Q3 - see totals.csv", "supplier delay", "North"):
        assert expected in text
    no_toc = call("render_markdown", {"artifact_path": "files/report.md", "toc": False})
    assert no_toc["path"] == "out/report.pdf"
    assert "Contents" not in PdfReader(io.BytesIO(stored_bytes(run_ctx, "out/report.pdf", "application/pdf"))).pages[0].extract_text()


def test_render_markdown_to_docx_keeps_headings_lists_and_tables(run_ctx):
    import docx

    write("files/report.md", REPORT)
    result = call("render_markdown", {"artifact_path": "files/report.md", "format": "docx", "toc": False})
    assert result["path"] == "out/report.docx"
    document = docx.Document(io.BytesIO(stored_bytes(run_ctx, "out/report.docx",
                                                     "application/vnd.openxmlformats-officedocument.wordprocessingml.document")))
    styled = [(p.style.name, p.text) for p in document.paragraphs]
    assert ("Heading 1", "Quarterly report") in styled and ("Heading 2", "Risks") in styled
    assert ("List Bullet", "supplier delay") in styled
    revenue = next(p for p in document.paragraphs if p.text.startswith("Revenue"))
    assert [r.text for r in revenue.runs if r.bold] == ["12%"] and [r.text for r in revenue.runs if r.italic] == ["Q3"]
    table = document.tables[0]
    assert [[c.text for c in row.cells] for row in table.rows] == [["Region", "Sales"], ["North", "120"], ["South", "80"]]


def test_render_markdown_to_html_escapes_raw_html(run_ctx):
    write("files/page.md", "# Hi\n\n<script>alert(1)</script>\n\nText & more")
    call("render_markdown", {"artifact_path": "files/page.md", "format": "html", "toc": False})
    page = stored(run_ctx, "out/page.html").content
    assert "<h1>Hi</h1>" in page and "<script>" not in page and "&lt;script&gt;" in page and "Text &amp; more" in page


def test_render_markdown_takes_no_latex_parameters(run_ctx):
    write("files/report.md", REPORT)
    with pytest.raises(ToolArgumentError, match="template_path"):
        call("render_markdown", {"artifact_path": "files/report.md", "template_path": "t.tex"})


def test_render_docx_exports_a_python_docx_file_to_markdown_and_pdf(run_ctx):
    import docx
    from pypdf import PdfReader

    document = docx.Document()
    document.add_heading("Contract", level=1)
    para = document.add_paragraph("The term is ")
    para.add_run("two years").bold = True
    document.add_paragraph("first clause", style="List Bullet")
    document.add_paragraph("second clause", style="List Bullet")
    table = document.add_table(rows=2, cols=2)
    table.cell(0, 0).text, table.cell(0, 1).text, table.cell(1, 0).text, table.cell(1, 1).text = "Party", "Role", "Acme", "Seller"
    out = io.BytesIO()
    document.save(out)
    put_binary(run_ctx, "files/contract.docx", out.getvalue(),
               "application/vnd.openxmlformats-officedocument.wordprocessingml.document")

    result = call("render_docx", {"docx_path": "files/contract.docx", "format": "markdown"})
    assert result["path"] == "out/contract.md"
    assert stored(run_ctx, "out/contract.md").content == (
        "# Contract\n\nThe term is **two years**\n\n- first clause\n- second clause\n\n"
        "| Party | Role |\n|---|---|\n| Acme | Seller |\n")
    call("render_docx", {"docx_path": "files/contract.docx", "output_path": "out/c.pdf"})
    text = PdfReader(io.BytesIO(stored_bytes(run_ctx, "out/c.pdf", "application/pdf"))).pages[0].extract_text()
    assert "Contract" in text and "The term is two years" in text and "Acme" in text
    write("files/plain.txt", "not a docx", "file")
    with pytest.raises(ToolError, match="is not a DOCX file"):
        call("render_docx", {"docx_path": "files/plain.txt"})


def _pdf(pages):
    from fpdf import FPDF

    pdf = FPDF()
    pdf.set_title("Three pages")
    for text in pages:
        pdf.add_page()
        pdf.set_font("helvetica", size=12)
        pdf.multi_cell(0, 10, text)
    return bytes(pdf.output())


def test_inspect_pdf_overview_and_detail(run_ctx):
    long_text = "Clause " + "word " * 200
    put_binary(run_ctx, "files/deal.pdf", _pdf(["Cover page", long_text, "Signatures"]), "application/pdf")
    overview = call("inspect_pdf", {"pdf_path": "files/deal.pdf"})
    assert overview["page_count"] == 3 and overview["mode"] == "overview"
    assert overview["metadata"]["title"] == "Three pages"
    assert [p["page"] for p in overview["pages"]] == [1, 2, 3]
    assert overview["pages"][0]["text"] == "Cover page" and overview["pages"][1]["text"].endswith("…")
    assert round(overview["pages"][0]["width"]) == 595  # A4 in points
    detail = call("inspect_pdf", {"pdf_path": "files/deal.pdf", "pages": [2]})
    assert detail["mode"] == "detail" and len(detail["pages"][0]["text"]) > 900
    assert [p["page"] for p in call("inspect_pdf", {"pdf_path": "files/deal.pdf", "from_page": 2, "to_page": 3})["pages"]] == [2, 3]
    with pytest.raises(ToolError, match="has pages 1 to 3, not 7"):
        call("inspect_pdf", {"pdf_path": "files/deal.pdf", "pages": [7]})
    with pytest.raises(ToolError, match="1 to 4 page numbers"):
        call("inspect_pdf", {"pdf_path": "files/deal.pdf", "pages": [1, 2, 3, 1, 2]})


def _docx_with(paragraphs):
    import docx

    document = docx.Document()
    for text in paragraphs:
        document.add_paragraph(text)
    out = io.BytesIO()
    document.save(out)
    return out.getvalue()


DOCX = "application/vnd.openxmlformats-officedocument.wordprocessingml.document"
RUN = '<w:p><w:r><w:t>{}</w:t></w:r></w:p>'


def test_edit_artifact_docx_applies_xpath_edits(run_ctx):
    import docx

    put_binary(run_ctx, "out/memo.docx", _docx_with(["Alpha", "Beta", "Gamma"]), DOCX)
    p = "//w:body/w:p[w:r/w:t='{}']"
    result = call("edit_artifact_docx", {"path": "out/memo.docx", "structured_edits": [
        {"operation": "insert_before", "anchor_type": "xpath", "anchor_expr": p.format("Alpha"), "content": RUN.format("Intro")},
        {"operation": "replace", "anchor_expr": p.format("Beta"), "content": RUN.format("Beta v2")},
        {"operation": "delete", "anchor_expr": p.format("Gamma")},
        {"operation": "append", "anchor_expr": p.format("Alpha"), "content": "<w:r><w:t> and more</w:t></w:r>"},
        {"operation": "move_to", "anchor_expr": p.format("Intro"), "target_anchor_expr": p.format("Beta v2"), "position": "after"},
    ]})
    assert result["version"] == 2 and result["applied"] == 5
    document = docx.Document(io.BytesIO(stored_bytes(run_ctx, "out/memo.docx", DOCX)))
    assert [p.text for p in document.paragraphs] == ["Alpha and more", "Beta v2", "Intro"]
    with pytest.raises(ToolError, match="selects 0 elements"):
        call("edit_artifact_docx", {"path": "out/memo.docx", "structured_edits": [
            {"operation": "delete", "anchor_expr": p.format("Nothing")}]})
    with pytest.raises(ToolError, match="not well-formed XML"):
        call("edit_artifact_docx", {"path": "out/memo.docx", "structured_edits": [
            {"operation": "append", "anchor_expr": p.format("Intro"), "content": "<w:r>"}]})
    assert stored(run_ctx, "out/memo.docx").version == 2  # failed edits record nothing


def test_edit_artifact_docx_tracks_changes_as_word_insertions_and_deletions(run_ctx):
    put_binary(run_ctx, "out/memo.docx", _docx_with(["Keep", "Drop"]), DOCX)
    call("edit_artifact_docx", {"path": "out/memo.docx", "track_changes": True, "author": "Reviewer", "structured_edits": [
        {"operation": "delete", "anchor_expr": "//w:body/w:p[w:r/w:t='Drop']"},
        {"operation": "insert_after", "anchor_expr": "//w:body/w:p[w:r/w:t='Keep']", "content": RUN.format("Added")},
    ]})
    xml = zipfile.ZipFile(io.BytesIO(stored_bytes(run_ctx, "out/memo.docx", DOCX))).read("word/document.xml").decode()
    assert '<w:del w:id="1" w:author="Reviewer"' in xml and "<w:delText>Drop</w:delText>" in xml
    assert '<w:ins w:id="2" w:author="Reviewer"' in xml and "<w:t>Added</w:t></w:r></w:ins>" in xml
    assert xml.index("Keep") < xml.index("Added") < xml.index("Drop")


def test_a_markdown_image_is_never_fetched_or_read_into_a_pdf(run_ctx, local_server, monkeypatch, tmp_path):
    from pypdf import PdfReader

    requests = []
    port = local_server(lambda request: (requests.append(request.path), request.send(404))[1])
    monkeypatch.setenv("ERGON_HTTP_ALLOW_HOSTS", f"127.0.0.1:{port}")
    from PIL import Image

    picture = tmp_path / "secret.png"  # a file of the worker: without the guard fpdf2 embeds it
    Image.new("RGB", (10, 10), (255, 0, 0)).save(picture)
    write("files/img.md", f"# Pictures\n\n![remote](http://127.0.0.1:{port}/x.png)\n\n![local]({picture})\n")
    call("render_markdown", {"artifact_path": "files/img.md", "toc": False})
    reader = PdfReader(io.BytesIO(stored_bytes(run_ctx, "out/img.pdf", "application/pdf")))
    assert requests == []
    assert "remote" in reader.pages[0].extract_text() and not list(reader.pages[0].images)


def test_read_artifact_describes_a_binary_artifact_without_its_bytes(run_ctx):
    write("files/report.md", REPORT)
    call("render_markdown", {"artifact_path": "files/report.md"})
    got = call("read_artifact", {"key": "out/report.pdf"})
    assert got["type"] == "file" and "inspect_pdf" in got["note"]
    assert set(got["content"]) == {"encoding", "media_type", "size", "sha256"}
    assert got["content"]["media_type"] == "application/pdf" and got["content"]["size"] > 500
    assert call("read_artifact", {"key": "files/report.md"})["content"] == REPORT  # text is returned whole

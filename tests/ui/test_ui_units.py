"""The dashboard's pure helpers: the executed route, artifact shaping and diffs, the CLI command."""

from __future__ import annotations

from compiler import workspace_from_texts
from compiler.plan import build_plan
from ui_defs import BOOM, REVIEW
from ui.artifact_view import chart_spec, json_diff, table_rows, text_diff
from ui.route import first_inspected, route_highlight

PIPE = """
kind: pipeline
name: pipe
context:
  schema: {type: object, properties: {a: {type: integer}, b: {type: integer}, c: {type: integer}}}
nodes:
  one: {type: tool, config: {context_update: {a: 1}}, writes: [a]}
  two: {type: tool, needs: [one], config: {context_update: {b: 2}}, writes: [b]}
  three: {type: tool, needs: [one], when: {"==": [1, 2]}, config: {context_update: {c: 3}}, writes: [c]}
"""


def _plan(text: str, name: str):
    ws = workspace_from_texts({f"{name}.yaml": text})
    return build_plan(ws.units[0], ws)


def _visit(seq, node, status, next_node=None, parent=None):
    return {"sequence": seq, "node_id": node, "status": status, "next_node": next_node, "parent_visit_id": parent}


def test_state_machine_route_follows_next_node_and_marks_where_it_stopped():
    plan = _plan(BOOM, "boom")
    visits = [_visit(1, "first", "completed", "explode"), _visit(2, "explode", "failed")]
    hl = route_highlight(plan, visits, "failed")
    assert hl.visited == {"first": "completed", "explode": "failed"}
    assert hl.taken == {("first", "explode")}, "only the transition the run took"
    assert hl.current == "explode"


def test_loop_keeps_the_latest_status_and_item_visits_stay_inside_their_node():
    plan = _plan(REVIEW, "review")
    visits = [_visit(1, "prepare", "completed", "review"), _visit(2, "review", "completed", "done"),
              _visit(3, "x", "completed", parent="v2"), _visit(4, "done", "completed")]
    hl = route_highlight(plan, visits, "completed")
    assert hl.visited == {"prepare": "completed", "review": "completed", "done": "completed"}
    assert hl.taken == {("prepare", "review"), ("review", "done")}
    assert hl.current == "done", "an ended run points at its outcome"
    paused = route_highlight(plan, visits[:1] + [_visit(2, "review", "paused")], "paused")
    assert paused.current == "review" and paused.visited["review"] == "paused"


def test_pipeline_edges_are_taken_when_both_ends_ran():
    plan = _plan(PIPE, "pipe")
    visits = [_visit(1, "one", "completed"), _visit(2, "two", "completed"), _visit(3, "three", "skipped")]
    hl = route_highlight(plan, visits, "completed")
    assert hl.taken == {("one", "two")}, "a skipped node's incoming edge was not taken"


def test_table_shapes():
    assert table_rows([{"a": 1}]) == [{"a": 1}]
    assert table_rows({"columns": ["a", "b"], "rows": [[1, 2]]}) == [{"a": 1, "b": 2}]
    assert table_rows({"a": [1, 2], "b": [3]}) == [{"a": 1, "b": 3}, {"a": 2, "b": None}]
    assert table_rows("text") is None


def test_chart_specs():
    spec = {"mark": "bar", "encoding": {}}
    assert chart_spec(spec) is spec, "a Vega-Lite spec is drawn as it is"
    built = chart_spec({"data": [{"d": "mon", "n": 1}], "x": "d", "y": "n", "kind": "line"})
    assert built["mark"]["type"] == "line" and built["encoding"]["x"]["field"] == "d"
    assert built["encoding"]["y"] == {"field": "n", "type": "quantitative"}
    assert chart_spec([{"only": 1}]) is None, "one column cannot be charted"


def test_structural_json_diff_points_at_items():
    ops = json_diff({"score": 1, "tags": ["a", "b"], "gone": True}, {"score": 2, "tags": ["a", "c"], "new": 1})
    assert {(o["op"], o["path"]) for o in ops} == {
        ("replace", "/score"), ("replace", "/tags/1"), ("remove", "/gone"), ("add", "/new")}
    assert json_diff([1], [1]) == []
    assert json_diff(1, "1") == [{"op": "replace", "path": "", "old": 1, "new": "1"}]


def test_text_diff_is_unified():
    diff = text_diff("# Hello\nsame", "# Bye\nsame", "a", "b")
    assert diff.splitlines()[:2] == ["--- a", "+++ b"]
    assert "-# Hello" in diff and "+# Bye" in diff and " same" in diff
    assert text_diff({"x": 1}, {"x": 1}, "a", "b") == ""


def test_ergon_ui_command_line():
    from flows.cli.ui import APP, SERVER, streamlit_command

    cmd = streamlit_command(9999, "127.0.0.1")
    assert cmd[1:4] == ["-m", "ui.serve", "run"] and cmd[4] == str(SERVER) and SERVER.is_file() and APP.is_file()
    for flag in ("--server.address=127.0.0.1", "--server.port=9999", "--server.headless=true",
                 "--browser.gatherUsageStats=false", "--server.fileWatcherType=none", "--runner.magicEnabled=false"):
        assert flag in cmd


def test_no_page_relies_on_streamlits_magic():
    """The dashboard runs with magic off (ui/streamlit.toml): a bare expression in a page, which
    magic would show with st.write, would show nothing. Magic's own rewrite finds none."""
    import ast
    from pathlib import Path

    from streamlit.runtime.scriptrunner import magic

    ui = Path(__file__).resolve().parents[2] / "ui"
    for path in [ui / "app.py", *sorted((ui / "pages").glob("*.py"))]:
        rewritten = magic.add_magic(path.read_text(encoding="utf-8"), str(path))
        shown = [node.lineno for node in ast.walk(rewritten) if isinstance(node, ast.Call)
                 and isinstance(node.func, ast.Attribute) and isinstance(node.func.value, ast.Name)
                 and node.func.value.id == "__streamlitmagic__"]
        assert not shown, f"{path.name}: bare expressions at lines {shown} are shown only with magic on; use st.write"



def test_the_inspector_opens_where_the_story_is():
    plan = _plan(BOOM, "boom")
    failed = route_highlight(plan, [_visit(1, "first", "completed", "explode"), _visit(2, "explode", "failed")], "failed")
    assert first_inspected(failed, "failed", "first") == "explode", "a failed run: the node that failed"
    done = route_highlight(plan, [_visit(1, "first", "completed", "explode"), _visit(2, "explode", "completed", "done"),
                                  _visit(3, "done", "completed")], "completed")
    assert first_inspected(done, "completed", "explode") == "explode", "not the final node, which changes nothing"
    assert first_inspected(done, "completed", None) == "done"


def test_a_resumed_run_does_not_count_the_time_it_lay_failed():
    from datetime import UTC, datetime, timedelta

    from ui.format import run_seconds

    t0 = datetime(2026, 1, 1, tzinfo=UTC)
    at = lambda s: t0 + timedelta(seconds=s)  # noqa: E731
    spans = [("completed", at(0), at(2)), ("failed", at(2), at(3)), ("completed", at(86403), at(86405))]
    assert run_seconds(at(0), at(86405), spans) == 5.0, "a day between the failure and the resume is not run time"
    assert run_seconds(at(0), at(3), spans[:2]) == 3.0
    assert run_seconds(None, None, []) is None


def test_task_card_reads_what_the_task_is_about_and_audit_details_as_words():
    from types import SimpleNamespace

    from ui.taskcard import detail_text, subject

    plan = _plan(REVIEW, "review")
    task = SimpleNamespace(node_id="review")
    about = subject(plan, task, {"party": "ACME", "counter": 3, "notes": "x"})
    assert [(f.name, f.label, f.help, f.value) for f in about] == [("party", "Party", "The other party", "ACME")], \
        "the field its title and description read, described by the schema"
    assert subject(plan, SimpleNamespace(node_id="prepare"), {"party": "ACME"}) == [], "not a human task"
    assert detail_text({"assignee": "group:legal", "via": None}) == "assignee: group:legal"
    assert detail_text(None) == ""


def test_start_form_labels_read_as_words():
    from ui.forms import _read_lines, field_label

    assert field_label("due_date") == "Due date" and field_label("x", "Amount (EUR)") == "Amount (EUR)"
    assert _read_lines("5\n\n6\nseven", "integer") == ([5, 6], [4])
    assert _read_lines("yes\nno", "boolean") == ([True, False], [])


def test_the_first_pages_element_code_is_found_in_streamlits_bundle():
    from pathlib import Path

    import streamlit

    from ui import preload

    files = preload.files()
    static = Path(streamlit.__file__).parent / "static"
    for element in preload.ELEMENTS:  # each element's own file, and what it imports
        assert any(Path(f).name.startswith(f"{element}.") for f in files), element
    assert all((static / f).is_file() for f in files)
    assert len(files) == len(set(files))
    assert b'rel="modulepreload" crossorigin href="./static/js/BidiComponent.' in preload.tags()


def test_the_dashboard_server_answers_without_waiting_for_acknowledgements():
    """A connection Streamlit's server accepts has Nagle's algorithm off once ``ui.serve`` has set
    up the binding: otherwise each small response (headers and body, two writes) waits for the
    browser's delayed acknowledgement, ~40 ms a file. Checked on a connection accepted by an
    asyncio server, as uvicorn accepts them, on the socket Streamlit's own function binds."""
    import asyncio
    import socket

    from streamlit.web.server.starlette import starlette_server

    from ui.serve import without_nagle

    original = starlette_server._bind_socket
    try:
        without_nagle()
        without_nagle()  # twice is once
        sock = starlette_server._bind_socket("127.0.0.1", 0, 8)
    finally:
        starlette_server._bind_socket = original

    async def accepted_nodelay() -> int:
        accepted: asyncio.Future[int] = asyncio.get_running_loop().create_future()

        class Probe(asyncio.Protocol):
            def connection_made(self, transport):  # type: ignore[override]
                accepted.set_result(transport.get_extra_info("socket").getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY))
                transport.close()

        server = await asyncio.get_running_loop().create_server(Probe, sock=sock)
        async with server:
            _, writer = await asyncio.open_connection(*sock.getsockname()[:2])
            value = await asyncio.wait_for(accepted, 10)
            writer.close()
        return value

    assert asyncio.run(accepted_nodelay()) == 1


def test_streamlit_files_in_memory_are_only_streamlits_own():
    """Only files that exist in Streamlit's static folders are answered from memory and kept: a
    request for any other name (made up, hidden, a path) is left to Streamlit and keeps nothing,
    so asking for endless names cannot grow the server's memory."""
    from ui import static_files

    name = next(n for folder, n in static_files._names() if folder == "js" and n.startswith("index."))
    content, kind = static_files._asset("js", name)
    assert content == (static_files._folder() / "js" / name).read_bytes() and b"javascript" in kind
    before = dict(static_files._loaded)
    for made_up in ("no-such-file.js", ".hidden.js", "..", f"{name}x"):
        assert static_files._asset("js", made_up) is None
    assert static_files._asset("css", name) is None, "a js file is not served as css"
    assert static_files._loaded == before

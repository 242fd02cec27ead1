"""The Submissions page under AppTest, over a template run's real submissions (``ui_seed.template_chain``):
the list, a submission drawn as its form, a value's provenance back to the input values with the
steps and model calls that made it, its versions, and editing it; the run page's links to a run's
input and its steps' output submissions. Also the page's pure helpers (``ui/submission_view.py``)."""

from __future__ import annotations

from contextlib import contextmanager

import pytest

import ui_seed as seed
from ui_defs import SUBMISSION_DEFS
from flows.store import submissions as submission_store
from flows.store.submissions import Cell

PAGE = "pages/submissions.py"


def _texts(at) -> str:
    parts = [e.value for kind in ("markdown", "caption", "error", "warning", "info", "success", "subheader", "header")
             for e in getattr(at, kind)]
    return "\n".join(str(p) for p in parts)


def _links(at) -> list[str]:
    return [p.proto.label for p in at.get("page_link")]


def _targets(at) -> dict[str, str]:
    """Each page link's label → its query string (where it leads)."""
    return {p.proto.label: p.proto.query_string for p in at.get("page_link")}


def _button(at, label: str):
    matches = [b for b in at.button if b.label == label]
    assert matches, f"no button {label!r}; buttons: {[b.label for b in at.button]}"
    return matches[0]


@pytest.fixture
def chain(store, ui_defs):
    (ui_defs / "forms").mkdir(exist_ok=True)
    for name, text in SUBMISSION_DEFS.items():
        (ui_defs / name).write_text(text)
    return seed.template_chain()


def _page(make_app, user: str | None = None, **query: str):
    at = make_app(user, **query)
    at.run()
    at.switch_page(PAGE).run()
    assert not at.exception, at.exception
    return at


def test_the_list_is_newest_first_and_filters_by_form(make_app, chain):
    at = _page(make_app)
    table = at.dataframe[0].value
    assert list(table["form"]) == ["contract_digest_out", "contract_points", "contract_in"], "newest first"
    assert list(table["submission"]) == [f"submissions?submission={s}" for s in (chain.digest_id, chain.points_id,
                                                                                 chain.input_id)]
    assert list(table["step"]) == ["write_digest", "extract_points", ""] and table["run"].iloc[0] == f"run?run={chain.run_id}"
    at.selectbox(key="subs_form").set_value("contract_points").run()
    assert list(at.dataframe[0].value["form"]) == ["contract_points"]
    assert "contract_digest" not in at.selectbox(key="subs_form").options, "a template is not a form"


def test_a_submission_is_drawn_as_its_form_with_each_values_source(make_app, chain):
    at = _page(make_app, submission=chain.points_id)
    text = _texts(at)
    assert "#### Key points" in text, "the group's label"
    assert "Entry 1" in text and "Entry 2" in text, "a repeating group as its entries"
    assert "**Needs attention**" in text and "**Topic** \\*" in text, "field labels, required marked"
    labels = [b.label for b in at.button]
    assert "Initech pays \\$900 a year\\." in labels and "Either side may end it with 30 days' notice\\." in labels
    assert labels.count("yes") == 1 and labels.count("no") == 1, "booleans in words"
    assert text.count(":violet-badge[llm\\_extract] a template step · ") == 6, "every value made by the step says so"
    assert f"Made by step extract_points of run {chain.run_id}" in _links(at)
    assert "Click a value to see where it came from" in text and not at.expander[0].proto.expanded

    at = _page(make_app, submission=chain.input_id)
    text = _texts(at)
    assert "#### Document" in text and "#### Preferences" in text and "Entry 1" not in text
    assert text.count(":gray-badge[import] importer · ") == 4, "imported values, with who imported them"


def test_a_value_shows_its_provenance_back_to_the_input_values(make_app, chain):
    headline = chain.versions["digest.headline"]
    at = _page(make_app, submission=chain.digest_id)
    _button(at, "Drills for \\$900 a year, ends on 30 days' notice").click().run()
    assert at.query_params["value"] == headline, "the opened value is in the address"
    text = _texts(at)
    assert "Digest · Headline" in text and "**This value** · `digest.headline`" in text
    assert "Made by a `llm_extract` transformation." in text
    assert "**1 step back** · `points[0].statement` of a `contract_points` submission" in text
    assert "**1 step back** · `points[1].statement` of a `contract_points` submission" in text
    assert "**2 steps back** · `document.text` of a `contract_in` submission" in text
    assert "Nothing computed it: imported with the submission." in text
    assert "Taken from 2 input values." in text and "(1 drawn under another value)" in text, \
        "the contract's text is cited by both points: drawn once"
    links = _links(at)
    assert f"Step `write_digest` (visit #2) of run {chain.run_id[:8]}…" in links, links
    assert f"Step `extract_points` (visit #1) of run {chain.run_id[:8]}…" in links, links
    follow = [b.label for b in at.button if b.label.startswith("Open it in submission")]
    assert sorted(follow) == sorted(f"Open it in submission {s}" for s in (chain.points_id, chain.points_id,
                                                                           chain.input_id)), \
        "both points, and the contract's text once (under whichever point the walk reached it from first)"
    codes = [c.value for c in at.code]
    assert seed.DIGEST_PROMPT in codes and seed.EXTRACT_PROMPT in codes, "each step's prompt as the model read it"
    answers = seed.json_trees(at)
    assert any(a.get("digest", {}).get("headline", {}).get("refId") == [chain.versions["points[0].statement"],
                                                                           chain.versions["points[1].statement"]]
               for a in answers), "the answer, citing the input values by refId"
    assert "**v1** · selected" in text and "Sign in (in the sidebar) to change this value." in text

    # following the chain: the first point's statement, in its own submission
    at.button(key=f"follow:{chain.versions['points[0].statement']}").click().run()
    assert (at.query_params["submission"], at.query_params["value"]) == (chain.points_id,
                                                                         chain.versions["points[0].statement"])
    text = _texts(at)
    assert "Key points · entry 1 · Statement" in text and "**1 step back** · `document.text`" in text
    assert "**2 steps back**" not in text


def test_an_unknown_submission_or_value_says_so(make_app, chain):
    at = _page(make_app, submission="nope")
    assert "No submission `nope`" in at.error[0].value
    at = _page(make_app, submission=chain.digest_id, value=chain.versions["document.text"])
    assert "No value version" in at.warning[0].value, "a version of another submission is not shown as this one's"


def test_editing_a_value_makes_a_manual_version_and_a_bad_one_is_refused(make_app, chain):
    cell = Cell("preferences", 0, "max_words")
    old = chain.versions["preferences.max_words"]
    at = _page(make_app, "alice", submission=chain.input_id, value=old)
    box = at.text_input(key=f"edit:{chain.input_id}:preferences:0:max_words:value")
    assert box.value == "120"
    box.input("many")
    _button(at, "Save as a new version").click().run()
    assert "Refused: the value does not fit the form, nothing was written." in [e.value for e in at.error]
    assert "preferences\\.max\\_words: 'many' is not of type 'integer'" in _texts(at), "the form's reason"
    assert [v.version_id for v in submission_store.history(chain.input_id)[cell]] == [old], "nothing written"

    at.text_input(key=f"edit:{chain.input_id}:preferences:0:max_words:value").input("150")
    _button(at, "Save as a new version").click().run()
    assert not at.exception
    [first, second] = submission_store.history(chain.input_id)[cell]
    assert (first.version_id, first.value, first.source_type) == (old, 120, "import"), "the old version kept"
    assert (second.value, second.source_type, second.created_by) == (150, "manual", "alice")
    [selected] = [v for v in submission_store.selected_values(chain.input_id) if v.cell == cell]
    assert selected.version_id == second.version_id
    assert at.query_params["value"] == second.version_id, "the page opens the new version"
    text = _texts(at)
    assert "Saved `preferences.max_words` as a new version by alice" in text
    assert "**v2** · selected" in text and "**v1**" in text and ":blue-badge[manual] alice · " in text

    # the earlier version still opens, and says it is not the current value
    _button(at, "120").click().run()
    assert "An earlier version: the value now is **150**." in _texts(at)

    # a select is edited through its options
    risk = chain.versions["digest.risk_level"]
    at = _page(make_app, "alice", submission=chain.digest_id, value=risk)
    at.selectbox(key=f"edit:{chain.digest_id}:digest:0:risk_level:value").set_value("high")
    _button(at, "Save as a new version").click().run()
    values = {v.cell.field: v for v in submission_store.selected_values(chain.digest_id)}
    assert values["risk_level"].value == "high" and values["risk_level"].created_by == "alice"
    assert values["headline"].source_type == "transformation", "only the edited value changed"


def test_an_empty_field_can_be_set(make_app, chain):
    from flows.submissions import records

    form, digest = records.form_named("contract_in")
    sid = records.create(form, digest, {"document": {"title": "T", "text": "x"}}, created_by="bob", tell=False)
    at = _page(make_app, "alice", submission=sid)
    assert [b.key for b in at.button if b.label == "— (no value) · set it"] == [
        "set:preferences:0:audience", "set:preferences:0:max_words"], "a group it lacks still shows its fields"
    at.button(key="set:preferences:0:max_words").click().run()
    assert "No value yet." in _texts(at)
    at.text_input(key=f"edit:{sid}:preferences:0:max_words:value").input("90")
    _button(at, "Save as a new version").click().run()
    assert not at.exception
    assert "Saved `preferences.max_words` by alice." in _texts(at)
    assert records.view(sid).data()["preferences"] == {"max_words": 90}


def test_the_run_page_links_the_input_and_each_steps_output_submission(make_app, chain):
    at = make_app(run=chain.run_id)
    at.run()
    at.switch_page("pages/run.py").run()
    assert not at.exception, at.exception
    # named by their forms, leading to the submissions
    assert _targets(at)["Input submission: contract_in"] == f"submission={chain.input_id}"
    at.selectbox(key="inspect_node").set_value("extract_points").run()
    assert _targets(at)["Output submission: contract_points"] == f"submission={chain.points_id}"
    at.selectbox(key="inspect_node").set_value("write_digest").run()
    assert _targets(at)["Output submission: contract_digest_out"] == f"submission={chain.digest_id}"
    at.session_state["run_tabs"] = "Visits"
    at.run()
    table = next(f.value for f in at.dataframe if "next" in f.value.columns)
    assert list(table["output submission"]) == [f"submissions?submission={chain.points_id}",
                                               f"submissions?submission={chain.digest_id}"]


def test_a_merged_submission_links_its_sources_and_each_copy_leads_to_its_original(make_app, chain):
    from flows.submissions import merging, records

    form, digest = records.form_named("contract_points")
    extra = records.create(form, digest, {"points": [{"topic": "other", "statement": "Governed by Delaware law."}]},
                           created_by="lea", tell=False)
    merged = merging.plan([chain.points_id, extra], form, digest).write(created_by="lea")
    at = _page(make_app, submission=merged)
    text = _texts(at)
    assert "origin **merged**" in text and "Entry 3" in text, "both sources' points, one after the other"
    assert text.count(":orange-badge[merged] lea · ") == 8, "the six points values made by the step, and two"
    assert {f"Merged from submission {s}" for s in (chain.points_id, extra)} <= {b.label for b in at.button}

    _button(at, "Governed by Delaware law\\.").click().run()
    text = _texts(at)
    assert "Copied unchanged into a merged submission from the value below." in text
    assert "**1 step back** · `points[0].statement` of a `contract_points` submission" in text
    assert "Nothing computed it: imported with the submission." in text
    assert [b.label for b in at.button if b.label.startswith("Open it in submission")] == [
        f"Open it in submission {extra}"]

    _button(at, f"Merged from submission {chain.points_id}").click().run()
    assert at.query_params["submission"] == chain.points_id


@pytest.mark.prefect
def test_a_real_template_runs_values_trace_back_to_its_input_on_the_page(make_app, run_def, ui_defs):
    """The same page over what a real run of the template records (the offline model cites its input)."""
    from flows.store import runs as run_store

    (ui_defs / "forms").mkdir(exist_ok=True)
    data = {"document": {"title": "ACME drills", "text": seed.CONTRACT_TEXT}, "preferences": {"audience": "legal"}}
    result = run_def(SUBMISSION_DEFS, "contract_digest", {"input": data})
    assert result["status"] == "completed", result
    run = run_store.require_run(result["run_id"])
    outputs = submission_store.output_submissions(run.id)
    digest = next(sid for sid in outputs.values()
                  if submission_store.require_submission(sid).form_name == "contract_digest_out")
    [headline] = [v for v in submission_store.selected_values(digest) if v.cell.field == "headline"]
    at = _page(make_app, submission=digest, value=headline.version_id)
    text = _texts(at)
    assert "**This value** · `digest.headline`" in text and "**2 steps back**" in text, text
    assert "Nothing computed it: imported with the submission." in text, "down to the run's input submission"
    links = _links(at)
    assert any(label.startswith("Step `write_digest`") for label in links), links
    assert any(label.startswith("Step `extract_points`") for label in links), links
    assert any("Write a one-line digest of these points" in c.value for c in at.code), "the step's prompt as sent"

    at = make_app(run=run.id)
    at.run()
    at.switch_page("pages/run.py").run()
    assert _targets(at)["Input submission: contract_in"] == f"submission={run.input_submission_id}"


@contextmanager
def _statements():
    """The SQL statements run inside the block (on this test's store)."""
    import sqlalchemy as sa

    from flows.store import db

    seen: list[str] = []

    def count(conn, cursor, statement, *args) -> None:
        seen.append(statement)

    engine = db.get_engine()
    sa.event.listen(engine, "before_cursor_execute", count)
    try:
        yield seen
    finally:
        sa.event.remove(engine, "before_cursor_execute", count)


def test_the_pages_queries_do_not_grow_with_the_rows(make_app, chain):
    """One query for the list, a fixed number for a submission and a value, however many rows."""
    from flows.submissions import records

    at = _page(make_app, submission=chain.points_id, value=chain.versions["points[0].statement"])
    at_list = _page(make_app)

    def counted(app) -> int:
        with _statements() as seen:
            app.run()
        assert not app.exception
        return len(seen)

    small_list, small_value = counted(at_list), counted(at)
    form, digest = records.form_named("contract_points")
    for i in range(30):
        records.create(form, digest, {"points": [{"topic": "other", "statement": f"point {i}.{j}"} for j in range(4)]},
                       created_by="loader", tell=False)
    more = submission_store.create_submission(
        form_name="contract_points", form_hash=digest, source_type="transformation", origin="transformation",
        run_id=chain.run_id, visit_id=chain.visits["extract_points"], step_key="extract_points",
        values=[seed_value for seed_value in _many_points(chain, 25)])
    at_more = _page(make_app, submission=more, value=submission_store.selected_values(more)[0].version_id)
    assert counted(at_list) == small_list, "the list: one query a page, whatever it holds"
    assert counted(at_more) <= small_value, "a submission of 75 values and a value citing 1 costs what 6 values cost"


def _many_points(chain, n: int):
    from flows.store.submissions import NewValue

    text = chain.versions["document.text"]
    for i in range(n):
        yield NewValue(Cell("points", i, "topic"), "other", kind="llm_extract", inputs=[text])
        yield NewValue(Cell("points", i, "statement"), f"point {i}", kind="llm_extract", inputs=[text])
        yield NewValue(Cell("points", i, "risky"), False, kind="llm_extract", inputs=[text])


# --------------------------------------------------------------------------------- pure helpers
def test_source_badges_values_and_edits_read_as_words():
    from compiler.ir import FormDef
    from ui import submission_view as sv

    assert sv.source_badge("transformation", {"kind": "llm_extract"}) == ("llm_extract", "violet")
    assert sv.source_badge("manual") == ("manual", "blue") and sv.source_badge("import")[0] == "import"
    assert sv.source_badge("merged") == ("merged", "orange")
    assert sv.value_text(None) == "—" and sv.value_text(True) == "yes" and sv.value_text({"a": 1}) == '{"a": 1}'
    assert sv.value_text("a\n  b") == "a b" and len(sv.value_text("x" * 500)) == 120
    assert sv.markdown_text("$900 *now*") == "\\$900 \\*now\\*"
    assert sv.edit_text(None) == "" and sv.edit_text(120) == "120" and sv.edit_text("x") == "x"
    import yaml

    form = FormDef.model_validate(yaml.safe_load(SUBMISSION_DEFS["forms/contract_in.yaml"]))
    assert sv.parse_edit(form, Cell("preferences", 0, "max_words"), "150") == 150
    assert sv.parse_edit(form, Cell("preferences", 0, "max_words"), "many") == "many", "the form's check refuses it"
    assert sv.parse_edit(form, Cell("document", 0, "title"), "150") == "150", "a text field keeps the text"


def test_hops_walk_the_chain_depth_first_within_a_limit():
    from datetime import UTC, datetime

    from flows.store.submissions import CellValue, VersionInfo
    from flows.submissions.provenance import Link
    from ui import submission_view as sv

    def link(vid: str, entry: int, inputs: tuple[str, ...] = (), *children: Link) -> Link:
        value = CellValue(Cell("g", entry, "f"), vid, vid, "import", None, None, datetime.now(UTC))
        return Link(VersionInfo(value, "s", "form", None, inputs), list(children))

    root = link("root", 0, ("b", "a", "z"), link("b", 2, ("leaf",), link("leaf", 9)), link("a", 1))
    drawn, left = sv.hops(root)
    assert [(h.depth, h.link.version_id) for h in drawn] == [(0, "root"), (1, "a"), (1, "b"), (2, "leaf")], \
        "depth first, inputs in form order"
    assert drawn[0].shown_elsewhere == 1 and left == 0, "z is cited but drawn under no link here"
    drawn, left = sv.hops(root, limit=2)
    assert [h.link.version_id for h in drawn] == ["root", "a"] and left == 2, "b and its leaf left out"

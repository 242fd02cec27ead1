"""Submissions: instances of forms, every value with where it came from.

The list shows the submissions newest first (one query a page), filtered by form; a click on a
row, or ``submissions?submission=<id>``, shows one submission **as its form** (the form it was
made for, pinned): each group under its label, a repeating group as its entries, each field's
selected value with a badge of its source (``manual``, ``import``, ``human``, ``merged``, or the
kind of the transformation that made it, ``llm_extract``) and who made it when; a merged
submission links the submissions it was merged from.

A click on a value (``&value=<version id>``) opens it beside the form:

* **where it came from** — its provenance chain (:func:`flows.submissions.provenance.chain`) back
  to the input values: each link's value, field path and submission (a link to it there), the
  transformation's kind and expression, the step that made it (its run and node) and that step's
  model call, prompts and answer, drawn like the run page's conversation (:mod:`ui.conversation`);
* **its versions** — every version of the item, the selected one marked;
* **change it** — a new ``manual`` version through :func:`flows.submissions.records.set_values`
  by the signed-in user (the earlier one stays in the versions); a value that does not fit the
  form is refused with the form's reason and nothing is written.
"""

from __future__ import annotations

import functools
import json
from typing import Any

import streamlit as st

from flows.store import submissions as submission_store
from flows.store import visits as visit_store
from flows.store.errors import NotFound
from flows.store.submissions import Cell, CellValue
from flows.submissions import provenance, records, shape
from ui import auth, nav, taskcard
from ui import catalog as cat
from ui import conversation as conv
from ui import format as fmt
from ui import submission_view as sv
from ui.forms import field_label

PAGE_SIZE = 50
_FLASH = "_subs_flash"
_CELL = "_subs_cell"  # an empty field opened to be set: (submission id, group, entry, field)


def _open(submission_id: str, version_id: str | None = None) -> None:
    st.query_params["submission"] = submission_id
    if version_id:
        st.query_params["value"] = version_id
    else:
        st.query_params.pop("value", None)
    st.session_state.pop(_CELL, None)


def _open_cell(submission_id: str, cell: Cell) -> None:
    _open(submission_id)
    st.session_state[_CELL] = (submission_id, *cell)


def _picked(ids: list[str]) -> None:
    rows = (st.session_state.get("subs_table") or {}).get("selection", {}).get("rows") or []
    if rows and rows[0] < len(ids):
        _open(ids[rows[0]])


def _list() -> None:
    forms = sorted(cat.catalog().ws.named("form"))
    c1, c2 = st.columns([1, 2], vertical_alignment="bottom")
    form = c1.selectbox("Form", forms, index=None, placeholder="any form", key="subs_form")
    if st.session_state.get("_subs_form_seen") != form:  # another filter: back to the newest
        st.session_state["_subs_form_seen"] = form
        st.session_state["subs_page"] = 1
    page = st.session_state.get("subs_page", 1)
    rows = submission_store.list_submissions(form_name=form, limit=PAGE_SIZE + 1, offset=(page - 1) * PAGE_SIZE)
    more, rows = len(rows) > PAGE_SIZE, rows[:PAGE_SIZE]
    if not rows:
        st.info("No submissions" + (f" of `{form}`" if form else "") + " yet. `ergon submissions create` makes "
                "one; a template run records its input and each step's output.", icon=":material/dataset:")
        return
    first = (page - 1) * PAGE_SIZE + 1
    c2.caption(f"{first:,}–{first + len(rows) - 1:,}, newest first · click a row to open it")
    ids = [r.id for r in rows]
    st.dataframe([{
        "submission": nav.submission_url(r.id), "form": r.form_name, "name": r.name or "", "origin": r.origin,
        "step": r.step_key or "", "run": nav.run_url(r.run_id) if r.run_id else None,
        "created by": r.created_by or "", "created": fmt.when(r.created_at), "updated": fmt.when(r.updated_at),
    } for r in rows], hide_index=True, key="subs_table", on_select=functools.partial(_picked, ids), selection_mode="single-row",
        column_config={"submission": st.column_config.LinkColumn("submission", display_text=r"submission=(.*)"),
                       "run": st.column_config.LinkColumn("run", display_text=r"run\?run=(.*)")})
    if page > 1 or more:
        with st.container(horizontal=True, gap="small"):
            if page > 1:
                st.button("Newer", key="subs_newer", icon=":material/arrow_back:",
                          on_click=st.session_state.__setitem__, args=("subs_page", page - 1))
            if more:
                st.button("Older", key="subs_older", icon=":material/arrow_forward:",
                          on_click=st.session_state.__setitem__, args=("subs_page", page + 1))


# --- one submission, as its form -----------------------------------------------------------------


def _badge(value: CellValue, transformation: dict[str, Any] | None) -> None:
    """The version's source as a badge, then who made it and when, on one line."""
    label, colour = sv.source_badge(value.source_type, transformation)
    who = value.created_by or ("a template step" if value.source_type == "transformation" else "—")
    st.caption(f":{colour}-badge[{sv.markdown_text(label)}] {sv.markdown_text(who)} · {fmt.when_md(value.created_at)}")


def _field_row(view: records.View, group: Any, fld: Any, entry: int, made: dict[str, Any], opened: str | None) -> None:
    cell = Cell(group.name, entry, fld.name)
    value = view.value_at(cell)
    c1, c2, c3 = st.columns([2, 5, 3], vertical_alignment="center")
    c1.markdown(f"**{sv.markdown_text(field_label(fld.name, fld.label))}**" + (" \\*" if fld.required else ""),
                help=fld.description)
    sid = view.submission.id
    if value is None:
        c2.button("— (no value) · set it", key=f"set:{group.name}:{entry}:{fld.name}", type="tertiary",
                  on_click=_open_cell, args=(sid, cell))
        return
    c2.button(sv.markdown_text(sv.value_text(value.value)), key=f"val:{value.version_id}", wrap=True,
              type="secondary" if opened == value.version_id else "tertiary", on_click=_open, args=(sid, value.version_id),
              help=f"`{shape.cell_path(cell, view.form)}`: where it came from, its versions; change it")
    with c3:
        info = made.get(value.version_id)
        _badge(value, info.transformation if info else None)


def _form(view: records.View, opened: str | None) -> None:
    # what made each transformed value (its kind for the badge): one batch for the whole form
    made = submission_store.versions(v.version_id for v in view.values if v.source_type == "transformation")
    for group in view.form.groups:
        with st.container(key=f"group:{group.name}"):
            st.markdown(f"#### {sv.markdown_text(group.label or field_label(group.name))}")
            if not group.repeat:
                for fld in group.fields:
                    _field_row(view, group, fld, 0, made, opened)
                continue
            entries = sorted({e for g, e in view.entries if g == group.name}
                             | {v.cell.entry for v in view.values if v.cell.group == group.name})
            if not entries:
                st.caption("No entries.")
            for entry in entries:
                with st.container(border=True, key=f"entry:{group.name}:{entry}"):
                    st.caption(f"Entry {entry + 1}")
                    for fld in group.fields:
                        _field_row(view, group, fld, entry, made, opened)


# --- one value: where it came from, its versions, changing it --------------------------------------


def _form_of(name: str) -> Any:
    """A form of the definitions folder by name (for the field paths of other submissions)."""
    unit = cat.catalog().ws.named("form").get(name)
    return getattr(unit, "defn", None)


def _steps(hops: list[sv.Hop]) -> tuple[dict[str, dict], dict[str, Any]]:
    """The visits and model calls behind the transformations of a chain: two queries per run."""
    by_run: dict[str, set[str]] = {}
    for hop in hops:
        t = hop.link.info.transformation
        if t and t.get("visit_id"):
            by_run.setdefault(t["run_id"], set()).add(t["visit_id"])
    visits: dict[str, dict] = {}
    calls: dict[str, Any] = {}
    for run_id, visit_ids in by_run.items():
        visits.update({v["id"]: v for v in visit_store.visits_for_run(run_id, light=True) if v["id"] in visit_ids})
        llm, _ = visit_store.calls_for_visits(run_id, visit_ids)
        calls.update({c.id: c for per_visit in llm.values() for c in per_visit})
    return visits, calls


_LEAF = {"import": "imported with the submission", "manual": "typed by a person", "human": "answered in a human task"}


def _provenance(root: provenance.Link) -> None:
    drawn, left = sv.hops(root)
    visits, calls = _steps(drawn)
    for hop in drawn:
        info = hop.link.info
        v, t = info.value, info.transformation
        path = shape.cell_path(v.cell, _form_of(info.form_name))
        with st.container(border=True, key=f"hop_{v.version_id}"):
            if hop.depth == 0:
                st.markdown(f"**This value** · `{path}`")
            else:
                st.markdown(f"**{hop.depth} step{'s' if hop.depth > 1 else ''} back** · `{path}` of a "
                            f"`{info.form_name}` submission")
                st.markdown(sv.markdown_text(sv.value_text(v.value, limit=300)))
                # a button, not a page link: a link to the page it is on does not change its query
                st.button(f"Open it in submission {info.submission_id}", key=f"follow:{v.version_id}", type="tertiary",
                          icon=":material/dataset:", on_click=_open, args=(info.submission_id, v.version_id))
            _badge(v, t)
            if v.source_type == "merged":
                st.caption("Copied unchanged into a merged submission from the value below.")
                continue
            if t is None:
                st.caption("Nothing computed it: " + _LEAF.get(v.source_type, v.source_type) + ".")
                continue
            st.markdown(f"Made by a `{t['kind']}` transformation" + ("" if t.get("expression") else "."))
            if t.get("expression"):
                st.code(str(t["expression"]), language=None, wrap_lines=True)
            visit = visits.get(t.get("visit_id") or "")
            step = f"Step `{visit['node_id']}` (visit #{visit['sequence']}) of run" if visit else "Made in run"
            nav.run_link(t["run_id"], f"{step} {t['run_id'][:8]}…", help=f"run {t['run_id']}")
            call = calls.get(t.get("llm_call_id") or "")
            if call is not None:
                with st.expander(f"The model call of this step · `{call.model}` · prompt and answer",
                                 expanded=hop.depth == 0):
                    conv.show([(call, None)], [], expanded=4)  # down to each field's refId
            taken = len(info.inputs)
            st.caption(f"Taken from {taken} input value{'' if taken == 1 else 's'}"
                       + (f" ({hop.shown_elsewhere} drawn under another value)" if hop.shown_elsewhere else "")
                       + ("." if taken else ": the step cited none."))
    if left:
        st.caption(f"{left} more input value(s) are not drawn here; open an input above to follow its own chain.")


def _history(view: records.View, cell: Cell, current: CellValue | None, opened: str | None) -> None:
    versions = submission_store.history(view.submission.id).get(cell, [])
    made = submission_store.versions(h.version_id for h in versions if h.source_type == "transformation")
    for n, h in reversed(list(enumerate(versions, 1))):  # newest first
        selected = current is not None and h.version_id == current.version_id
        c1, c2, c3 = st.columns([2, 4, 3], vertical_alignment="center")
        c1.markdown(f"**v{n}**" + (" · selected" if selected else ""))
        c2.button(sv.markdown_text(sv.value_text(h.value)), key=f"hist:{h.version_id}", wrap=True,
                  type="secondary" if h.version_id == opened else "tertiary", on_click=_open,
                  args=(view.submission.id, h.version_id))
        with c3:
            info = made.get(h.version_id)
            _badge(h, info.transformation if info else None)


def _widget(fld: Any, value: Any, key: str) -> tuple[bool, Any]:
    """The editor of one field: ``(typed, value)`` — a select or a boolean gives its value, the
    others the text typed (read as the field's type by :func:`ui.submission_view.parse_edit`)."""
    label = field_label(fld.name, fld.label)
    if fld.type == "select" and fld.options:
        options = list(fld.options) + ([value] if value is not None and value not in fld.options else [])
        return True, st.selectbox(label, options, index=options.index(value) if value in options else None, key=key)
    if fld.type == "boolean":
        return True, st.selectbox(label, [True, False], index=None if value is None else [True, False].index(bool(value)),
                                  format_func=lambda b: "yes" if b else "no", key=key)
    if fld.type == "text":
        return False, st.text_area(label, sv.edit_text(value), key=key)
    return False, st.text_input(label, sv.edit_text(value), key=key,
                                help={"number": "a number", "integer": "a whole number",
                                      "date": "a date, YYYY-MM-DD"}.get(fld.type))


def _editor(view: records.View, cell: Cell, current: CellValue | None) -> None:
    user = auth.require_user("change this value")
    if user is None:
        return
    fld = sv.form_field(view.form, cell)
    if fld is None:
        st.caption(f"The form `{view.form.name}` has no field `{cell.field}` in `{cell.group}` any more.")
        return
    key = f"edit:{view.submission.id}:{cell.group}:{cell.entry}:{cell.field}"
    with st.form(key, border=False):
        typed, raw = _widget(fld, current.value if current else None, key=f"{key}:value")
        saved = st.form_submit_button("Save as a new version", type="primary")
    if not saved:
        return
    path = shape.cell_path(cell, view.form)
    try:
        value = raw if typed else sv.parse_edit(view.form, cell, raw)
        [version] = records.set_values(view.submission.id, [(cell, value)], by=user)
    except records.SubmissionInvalid as exc:
        st.error("Refused: the value does not fit the form, nothing was written.")
        st.markdown("\n".join(f"- {sv.markdown_text(p)}" for p in exc.problems))
        return
    st.session_state[_FLASH] = (f"Saved `{path}` as a new version by {user}; the earlier one stays in its versions."
                                if current is not None else f"Saved `{path}` by {user}.")
    _open(view.submission.id, version)
    st.rerun()


def _heading(view: records.View, cell: Cell) -> None:
    group = next((g for g in view.form.groups if g.name == cell.group), None)
    fld = sv.form_field(view.form, cell)
    words = [sv.markdown_text(group.label or field_label(group.name)) if group is not None else cell.group]
    if group is not None and group.repeat:
        words.append(f"entry {cell.entry + 1}")
    words.append(sv.markdown_text(field_label(fld.name, fld.label) if fld is not None else cell.field))
    st.subheader(" · ".join(words))
    st.caption(f"`{shape.cell_path(cell, view.form)}`")


def _value_panel(view: records.View, version_id: str) -> None:
    root = provenance.chain(version_id)
    if root is None or root.info.submission_id != view.submission.id:
        st.warning(f"No value version `{version_id}` in this submission: pick a value of the form.")
        return
    v = root.info.value
    current = view.value_at(v.cell)
    _heading(view, v.cell)
    if current is not None and current.version_id != v.version_id:
        st.info(f"An earlier version: the value now is **{sv.markdown_text(sv.value_text(current.value))}**.",
                icon=":material/history:")
        st.button("Open the current value", key="subs_current", on_click=_open,
                  args=(view.submission.id, current.version_id))
    taskcard.show_value(v.value)
    _badge(v, root.info.transformation)
    st.markdown("##### Where it came from")
    _provenance(root)
    st.markdown("##### Versions")
    _history(view, v.cell, current, version_id)
    st.markdown("##### Change it")
    _editor(view, v.cell, current)


def _cell_panel(view: records.View, cell: Cell) -> None:
    _heading(view, cell)
    st.caption("No value yet.")
    _editor(view, cell, None)


# --- the page ------------------------------------------------------------------------------------

st.title("Submissions")
flash = st.session_state.pop(_FLASH, None)
if flash:
    st.success(flash)
submission_id = nav.param("submission")
if submission_id is None:
    _list()
    st.stop()

listing = st.expander("All submissions", key="subs_list", on_change="rerun")
if listing.open:  # drawn only when opened: the submission is what this page is about now
    with listing:
        _list()

try:
    view = records.view(submission_id)
except NotFound as exc:
    st.error(f"No submission `{submission_id}` to show: {exc}. Pick one in the list above.")
    st.stop()
sub = view.submission
st.header(sub.name or view.form.name)
st.caption(" · ".join([f"form `{view.form.name}`", f"origin **{sub.origin}**", f"created by **{sub.created_by or (f'step {sub.step_key}' if sub.step_key else '—')}**",
                       f"created {fmt.when_md(sub.created_at)} UTC", f"updated {fmt.when_md(sub.updated_at)} UTC",
                       f"submission `{sub.id}`"]))
if view.form.description:
    st.markdown(sv.markdown_text(view.form.description))
with st.container(horizontal=True, gap="small"):
    if sub.run_id:
        nav.run_link(sub.run_id, f"Made by step {sub.step_key or '—'} of run {sub.run_id}")
    if sub.origin == "merged":  # buttons: a link to the page it is on does not change its query
        for source in submission_store.merged_from(sub.id):
            st.button(f"Merged from submission {source}", key=f"merged_from:{source}", type="tertiary",
                      icon=":material/dataset:", on_click=_open, args=(source,))
    st.download_button("Export JSON", lambda: json.dumps(records.export(sub.id), indent=2, default=str),
                       file_name=f"submission-{sub.id}.json", mime="application/json", key="subs_export",
                       icon=":material/download:", on_click="ignore")

opened = nav.param("value")
empty = st.session_state.get(_CELL)
empty_cell = Cell(empty[1], int(empty[2]), empty[3]) if empty and empty[0] == sub.id and not opened else None
if opened is None and empty_cell is None:
    st.caption("Click a value to see where it came from, its versions, and to change it.")
    _form(view, None)
else:
    left, right = st.columns([5, 4], gap="large")
    with left:
        _form(view, opened)
    with right, st.container(key="value_panel"):
        if opened is not None:
            _value_panel(view, opened)
        elif empty_cell is not None:
            _cell_panel(view, empty_cell)

"""Definitions: every definition of the folder with its diagnostics, published versions and
graph, and a start-run form generated from its ``context.schema``.

The diagnostics are ``ergon check``'s (the whole folder is checked so references resolve).
The form has one widget per run input (types, enums, required marks, descriptions); a start
goes through :func:`flows.runs.start_detached`, which validates the inputs like ``ergon run``
and refuses an invalid start before any run is recorded.
"""

from __future__ import annotations

from pathlib import Path

import streamlit as st

from compiler import CompileError
from compiler.plan import RUNNABLE_KINDS
from compiler.render import render_dot
from flows.store import definitions as definition_store
from flows.store import runs as run_store
from flows import runs
from ui import auth, forms, nav
from ui import catalog as cat
from ui import format as fmt

def _in_words(problem, plan) -> str:
    """A refused start's problem in the form's words: the field's label, no command-line syntax
    (the checks are the CLI's; its hints say `--input name=…`)."""
    props = plan.context_schema.get("properties") or {}
    name = problem.path.split(".")[0] if problem.path else ""
    label = forms.field_label(name, (props.get(name) or {}).get("title")) if name else ""
    if problem.message.startswith("missing required input"):
        desc = (props.get(name) or {}).get("description")
        return f"**{label}** is required" + (f" ({desc})" if desc else "")
    hint = problem.hint if problem.hint and "--input" not in problem.hint else None
    return (f"**{label}**: " if label else "") + problem.message + (f" ({hint})" if hint else "")


st.title("Definitions")
catalog = cat.catalog()
report = cat.report()
units = [u for u in catalog.ws.reported_units() if u.name]
if not units:
    st.info("No definitions found. Put YAML definitions in `definitions/` (or set ERGON_DEFINITIONS).")
    st.stop()

by_file: dict[str, list] = {}
for d in report.diagnostics:
    by_file.setdefault(d.file, []).append(d)

summary = [{
    "definition": u.name, "kind": u.kind or "?", "file": Path(u.file).name,
    "errors": sum(d.severity == "error" for d in by_file.get(u.file, [])),
    "warnings": sum(d.severity != "error" for d in by_file.get(u.file, [])),
} for u in sorted(units, key=lambda u: (u.kind not in RUNNABLE_KINDS, u.kind or "", u.name))]  # what runs first
st.dataframe(summary, hide_index=True, key="defs_table")

names = [row["definition"] for row in summary]
wanted = nav.param("definition")
if st.session_state.get("def_pick") is None:
    # a deep link's definition, else the first that runs (not an environment or a form)
    runnable = [row["definition"] for row in summary if row["kind"] in RUNNABLE_KINDS]
    st.session_state["def_pick"] = wanted if wanted in names else (runnable or names)[0]
name = st.selectbox("Definition", names, key="def_pick")
unit = next(u for u in units if u.name == name)
st.subheader(name)
st.caption(f"{unit.kind} · {unit.file}")

diagnostics = by_file.get(unit.file, [])
errors = [d for d in diagnostics if d.severity == "error"]
if not diagnostics:
    st.success("Valid: no diagnostics.")
for d in diagnostics:
    (st.error if d.severity == "error" else st.warning)(
        f"`{Path(d.file).name}:{d.line}:{d.col}` **{d.code}** {d.path + ': ' if d.path else ''}{d.message}"
        + (f"\n\nhint: {d.hint}" if d.hint else ""))

versions = definition_store.list_versions(name)
with st.expander(f"Published versions ({len(versions)})"):
    if versions:
        st.dataframe([{"version": v.version, "published": fmt.when(v.created_at), "by": v.published_by or "",
                       "comment": v.comment or "", "hash": v.content_hash[:12]} for v in versions], hide_index=True,
                     key="defs_versions")
    else:
        st.caption("None: runs execute the folder's file as it is when they start.")
    recent, count = run_store.list_runs(definition=name, limit=5, light=True)
    st.caption(f"{count} run(s) of {name}" + (", latest:" if recent else ""))
    for r in recent:
        nav.run_link(r["id"], f"{fmt.status(r['status'])} · {fmt.when_md(r['created_at'])} · {r['id']}")

if unit.kind not in RUNNABLE_KINDS:
    st.caption(f"A {unit.kind} is used by other definitions; it does not run on its own.")
    st.stop()
if errors:
    st.caption("Fix the errors above to draw and run this definition.")
    st.stop()
try:
    compiled = cat.compiled(name)
except CompileError as exc:
    for d in exc.diagnostics:
        st.error(d.format())
    st.stop()
plan = compiled.plan

graph, start = st.tabs(["Graph", "Start a run"])
with graph:
    st.graphviz_chart(render_dot(plan, rankdir="LR", max_size=(10.5, 6)))
with start:
    if plan.description:
        st.markdown(plan.description)
    user = auth.require_user("start runs")
    with st.form(f"start:{name}"):
        inputs, problems = forms.schema_inputs(plan.input_schema, plan.context_initial, key=f"input:{name}")
        supervised, message = plan.run_type == "supervised", None
        if plan.control == "state_machine":
            supervised = st.toggle("Supervised", value=supervised, key=f"supervised:{name}",
                                   disabled=plan.run_type == "supervised",
                                   help="An LLM supervisor hears every step and may steer it (the engine checks each command)")
            message = st.text_input("Message to the supervisor (supervised runs)", key=f"message:{name}",
                                    placeholder="e.g. prioritise speed over thoroughness").strip() or None
        submitted = st.form_submit_button("Start run", type="primary", disabled=user is None)
    if submitted and user is not None:
        if problems:
            st.error("Not started:\n\n" + "\n".join(f"- {p}" for p in problems))
        else:
            try:
                st.session_state[f"_started:{name}"] = runs.start_background(
                    name, inputs, started_by=user, trigger="manual", supervised=supervised,
                    message=message if supervised else None)
            except runs.StartRefused as exc:
                st.error("Not started: the inputs do not fit the definition.\n\n"
                         + "\n".join(f"- {_in_words(p, plan)}" for p in exc.problems))
    started = st.session_state.get(f"_started:{name}")
    if started:
        st.success(f"Run {started.run_id} started {started.where}.")
        nav.run_link(started.run_id, f"Open run {started.run_id}")

"""The task inbox: the human tasks the signed-in user may see, and answering them.

Listing uses ``task_store.list_tasks(visible_to=user)`` (assignee, group members, unassigned tasks,
admins); taking goes through :mod:`flows.humans` and answering through the run owner
(:func:`flows.runs.answers.answer`) — the rules and messages of ``ergon tasks``. An open task
shows whether its run can take the answer: it waits (the answer resumes it), it stopped while
it waited (the answer is kept and the run resumes from its checkpoint), or it is over (the task
is closed and cannot be answered). A refused answer is shown next to the form with each
problem, and the run stays paused. ``inbox?task=<id>`` opens one task directly.

The list re-draws itself every few seconds (a fragment), so the task a run creates next — the
same review again after "request edits" — appears without a click; a click on a row opens
that task. The task itself is drawn outside the timer, so a half-typed answer is never re-drawn
under the approver's hands. What to review is a card: the task's description and the values of
the run's context that its title and description are about (:func:`ui.taskcard.subject`).
"""

from __future__ import annotations

import streamlit as st

from flows import humans
from flows.runs import answers
from flows.store import runs as run_store
from flows.store import tasks as task_store
from ui import auth, forms, json_view, nav, taskcard
from ui import catalog as cat
from ui import format as fmt

FILTERS = ("open", "pending", "in_progress", "completed", "cancelled", "expired", "all")
LABELS = {"open": "Open", "pending": "Pending", "in_progress": "In progress", "completed": "Completed",
          "cancelled": "Cancelled", "expired": "Expired", "all": "All"}
PAGE_SIZE = 50
REFRESH_SECONDS = 3

st.title("Task inbox")
user = auth.require_user("see the tasks you can answer")
if user is None:
    st.stop()
who = auth.current_actor()

flash = st.session_state.pop("_inbox_flash", None)
if flash:
    (st.warning if flash[0] == "warning" else st.success)(flash[1])

choice = st.segmented_control("Show", [f for f in FILTERS if f in task_store.TASK_FILTERS], default="open",
                              format_func=LABELS.get, key="inbox_filter", required=True) or "open"
if st.session_state.get("_inbox_choice") != choice:  # another filter: the rows mean other tasks
    for key in ("inbox_table", "_inbox_shown", "_inbox_drawn_at"):
        st.session_state.pop(key, None)
    st.session_state["_inbox_choice"] = choice


def _open(task_id: str | None) -> None:
    st.session_state["inbox_task"] = task_id
    if task_id:
        st.query_params["task"] = task_id
    else:
        st.query_params.pop("task", None)


@st.fragment(run_every=REFRESH_SECONDS)
def _list() -> None:
    page = st.session_state.get("inbox_page", 1)
    tasks, total = task_store.list_tasks(choice, visible_to=user, limit=PAGE_SIZE, offset=(page - 1) * PAGE_SIZE)
    runs = run_store.run_summaries(t.run_id for t in tasks)
    kind = "" if choice == "all" else LABELS[choice].lower() + " "
    st.caption(f"{total:,} {kind}task{'' if total == 1 else 's'} you may see"
               + (" · click a row to open it" if tasks else ""))
    ids = [t.id for t in tasks]
    shown = st.session_state.get("inbox_task") or nav.param("task")
    clicked = None
    if tasks:
        # A selection other than the one drawn last is a click, on the rows as they were then.
        before, drawn_at = st.session_state.get("_inbox_shown", []), st.session_state.get("_inbox_drawn_at")
        # A click on any cell opens its row's task, as does the row's check box.
        picked = (st.session_state.get("inbox_table") or {}).get("selection") or {}
        rows = list(picked.get("rows") or []) + [cell[0] for cell in picked.get("cells") or []]
        rows = [r for r in rows if r != drawn_at] or rows
        if rows and rows != ([] if drawn_at is None else [drawn_at]) and rows[0] < len(before) \
                and before[rows[0]] != shown:
            clicked = shown = before[rows[0]]
        at = ids.index(shown) if shown in ids else None
        st.session_state["inbox_table"] = {"selection": {"rows": [] if at is None else [at], "columns": [],
                                                         "cells": []}}
        st.session_state.update(_inbox_shown=ids, _inbox_drawn_at=at)
        if clicked:
            _open(clicked)
            st.rerun()  # the task is drawn outside this fragment
        st.dataframe([{
            "title": t.title, "status": fmt.status(t.status), "assigned to": t.assignee or "anyone",
            "taken by": t.claimed_by or "", "definition": runs.get(t.run_id, {}).get("definition_name", ""),
            "node": t.node_id, "created": fmt.when(t.created_at), "task": t.id,
        } for t in tasks], hide_index=True, key="inbox_table", on_select="rerun", selection_mode=["single-row", "single-cell"])
    else:
        st.info("Nothing here. Tasks appear when a run reaches a `human_task` node assigned to you, one of your "
                "groups or anyone" + ("; try **All** to see answered ones." if choice != "all" else "."),
                icon=":material/inbox:")
    if total > PAGE_SIZE:
        st.pagination(-(-total // PAGE_SIZE), key="inbox_page")
    if shown is None and ids and nav.param("task") is None:
        _open(ids[0])  # nothing open yet and a task arrived: open it
        st.rerun()


_list()

task_id = st.session_state.get("inbox_task") or nav.param("task")
if task_id is None:
    st.stop()
if nav.param("task") != task_id:
    st.query_params["task"] = task_id

task = task_store.get_task(task_id)
if task is None:
    st.error(f"No task `{task_id}`. It may have been removed; pick one in the list above.")
    st.stop()
if not humans.can_see(task, who):
    st.error(f"{user} may not see task {task_id} (assigned to {task.assignee}).")
    st.stop()
run = run_store.get_run(task.run_id)
started_by = run.started_by if run is not None else None
plan = cat.run_plan(run)[0] if run is not None else None

with st.container(border=True, key="task_card"):
    st.subheader(task.title)
    bits = [f"**{fmt.status(task.status)}**", f"assigned to **{task.assignee or 'anyone'}**"]
    if task.claimed_by:
        bits.append(f"taken by **{task.claimed_by}**")
    if task.four_eyes:
        bits.append("four-eyes (the run's starter may not answer)")
    bits.append(f"created {fmt.when_md(task.created_at)} UTC")
    st.markdown(" · ".join(bits))
    if task.description:
        st.markdown(task.description)
    about = taskcard.subject(plan, task, run.context if run is not None else {})
    if about:
        st.caption("What to review")
        for item in about:
            label, value = st.columns([1, 3])
            label.markdown(f"**{item.label}**" + (f"  \n<small>{item.help}</small>" if item.help else ""),
                           unsafe_allow_html=True)
            with value:
                taskcard.show_value(item.value)
    if run is not None:
        nav.run_link(run.id, f"Run {run.definition_name} · {fmt.status(run.status)} · started by {started_by or '—'}")

if task.status in ("pending", "in_progress"):
    waiting = answers.task_run_state(task)
    if waiting.state == "over":  # closed just now: nothing can take its answer
        task = task_store.get_task(task.id) or task
        st.error(f"This task can no longer be answered: {waiting.reason}.")
    elif waiting.state == "resumable":
        st.warning(f"The run stopped while it waited: {waiting.reason}.", icon=":material/history:")
    else:
        st.caption(f"The run waits for this answer ({waiting.run.status if waiting.run else 'unknown'}).")
if task.status in ("pending", "in_progress"):
    may_claim, _ = humans.can_claim(task, who, started_by)
    if task.status == "pending" and may_claim and st.button("Take this task", key=f"claim:{task.id}",
                                                            icon=":material/pan_tool:"):
        try:
            humans.claim(task.id, who)
        except humans.TaskRefused as exc:
            st.error(f"Refused: {exc.reason}")
        else:
            st.session_state["_inbox_flash"] = ("success", f"You took task {task.id}.")
            st.rerun()
    may_answer, reason = humans.can_answer(task, who, started_by)
    if not may_answer:
        st.warning(f"You may not answer this task: {reason}")
    else:
        with st.form(f"answer:{task.id}"):
            values = forms.task_fields(task.fields, key=f"field:{task.id}")
            submitted = st.form_submit_button("Submit answer", type="primary")
        if submitted:
            try:
                result = answers.answer(task.id, who, values, via="dashboard")
            except humans.TaskRefused as exc:
                st.error("Refused: " + (exc.reason if not exc.errors else "the answer is not valid"))
                for problem in exc.errors:
                    st.markdown(f"- {problem}")
            else:
                flash = ("success", f"Answered task {task.id}; " + (
                    "the run resumes." if result.delivered == "prefect" else result.message + "."))
                if result.errors:  # the answer stands; say that the run did not get it
                    flash = ("warning", f"Answered task {task.id}, but the run was not resumed: "
                             + "; ".join(result.errors))
                st.session_state["_inbox_flash"] = flash
                _open(None)  # the next task (the same review again, after a loop) opens when it arrives
                st.rerun()
else:
    if task.status == "completed":
        st.markdown(f"Answered by **{task.answered_by}** via {task.answered_via} at {fmt.when_md(task.answered_at)} UTC")
        taskcard.show_value(task.answer or {})

with st.expander("The run's whole context"):
    json_view.show(run.context if run is not None else {}, expanded=2)
with st.expander("Audit trail"):
    st.dataframe([{"at": fmt.when(e.at), "who": e.actor or "", "action": e.action,
                   "detail": taskcard.detail_text(e.detail)} for e in task_store.task_events(task.id)],
                 hide_index=True, key="inbox_events")

"""The task inbox: the human tasks the signed-in user may see, and answering them.

Listing uses ``task_store.list_tasks(visible_to=user)`` (assignee, group members, unassigned tasks,
admins); taking goes through :mod:`flows.humans` and answering through the run owner
(:func:`flows.runs.answers.answer`) — the rules and messages of ``ergon tasks``. An open task
shows whether its run can take the answer: it waits (the answer resumes it), it stopped while
it waited (the answer is kept and the run resumes from its checkpoint), or it is over (the task
is closed and cannot be answered). A refused answer is shown next to the form with each
problem, and the run stays paused. ``inbox?task=<id>`` opens one task directly.
"""

from __future__ import annotations

import streamlit as st

from flows import humans
from flows.runs import answers
from flows.store import runs as run_store
from flows.store import tasks as task_store
from ui import auth, forms, nav
from ui import format as fmt

FILTERS = ("open", "pending", "in_progress", "completed", "cancelled", "expired", "all")
LABELS = {"open": "Open", "pending": "Pending", "in_progress": "In progress", "completed": "Completed",
          "cancelled": "Cancelled", "expired": "Expired", "all": "All"}
PAGE_SIZE = 50

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
page = st.session_state.get("inbox_page", 1)
tasks, total = task_store.list_tasks(choice, visible_to=user, limit=PAGE_SIZE, offset=(page - 1) * PAGE_SIZE)
runs = run_store.run_summaries(t.run_id for t in tasks)
st.caption(f"{total} {LABELS[choice].lower()} task(s) you may see")
if tasks:
    st.dataframe([{
        "title": t.title, "status": fmt.status(t.status), "assigned to": t.assignee or "anyone",
        "taken by": t.claimed_by or "", "definition": runs.get(t.run_id, {}).get("definition_name", ""),
        "node": t.node_id, "created": fmt.when(t.created_at), "task": t.id,
    } for t in tasks], hide_index=True, key="inbox_table")
if total > PAGE_SIZE:
    st.pagination(-(-total // PAGE_SIZE), key="inbox_page")

ids = [t.id for t in tasks]
linked = nav.param("task")
if linked and linked not in ids:
    ids.insert(0, linked)  # a deep link shows its task even when the filter hides it
if not ids:
    st.stop()
titles = {t.id: t.title for t in tasks}
if st.session_state.get("inbox_task") not in ids:
    st.session_state["inbox_task"] = linked or ids[0]
task_id = st.selectbox("Task", ids, key="inbox_task",
                       format_func=lambda i: f"{titles.get(i, 'linked task')} · {i}")
if nav.param("task") != task_id:
    st.query_params["task"] = task_id

task = task_store.get_task(task_id)
if task is None:
    st.error(f"No task `{task_id}`.")
    st.stop()
if not humans.can_see(task, who):
    st.error(f"{user} may not see task {task_id} (assigned to {task.assignee}).")
    st.stop()
run = run_store.get_run(task.run_id)
started_by = run.started_by if run is not None else None

st.divider()
st.subheader(task.title)
bits = [fmt.status(task.status), f"assigned to **{task.assignee or 'anyone'}**"]
if task.claimed_by:
    bits.append(f"taken by **{task.claimed_by}**")
if task.four_eyes:
    bits.append("four-eyes (the run's starter may not answer)")
bits.append(f"node `{task.node_id}` · created {fmt.when(task.created_at)} UTC")
st.markdown(" · ".join(bits))
if run is not None:
    nav.run_link(run.id, f"Run {run.definition_name} · {fmt.status(run.status)} · started by {started_by or '—'}")
if task.description:
    st.markdown(task.description)

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
                st.rerun()
else:
    if task.status == "completed":
        st.markdown(f"Answered by **{task.answered_by}** via {task.answered_via} at {fmt.when(task.answered_at)} UTC")
        st.json(task.answer or {})

with st.expander("The run's context"):
    st.json(run.context if run is not None else {}, expanded=2)
with st.expander("Audit trail"):
    st.dataframe([{"at": fmt.when(e.at), "who": e.actor or "", "action": e.action,
                   "detail": fmt.short(e.detail, 200) if e.detail else ""} for e in task_store.task_events(task.id)],
                 hide_index=True, key="inbox_events")

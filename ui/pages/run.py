"""A run: its state chart with the executed route, a node inspector, timeline, visits,
artifacts, context and tasks, and the actions (resume, cancel, replay, export).

The run is named in the query string (``run?run=<id>``). While the run can still change, the
page body is a fragment that re-draws itself every two seconds; when the run ends it re-draws
once more as a whole and stops.
"""

from __future__ import annotations

import html
import json
import time
from datetime import UTC, datetime
from typing import Any

import streamlit as st
import yaml

from compiler.render import render_dot
from flows.store import artifacts as artifact_store
from flows.store import export as export_store
from flows.store import runs as run_store
from flows.store import submissions as submission_store
from flows.store import tasks as task_store
from flows.store import visits as visit_store
from flows import runs
from ui import auth, nav
from ui import catalog as cat
from ui import conversation as conv
from ui import timeline
from ui import workstreams as workstream_view
from ui import format as fmt
from ui.artifact_view import show as show_artifact
from ui import graph
from ui import json_view
from ui.route import first_inspected, node_state, route_highlight

REFRESH_SECONDS = 2
WATCH_SECONDS = 60  # after an action, keep refreshing while the run's process picks it up
VISITS_PER_PAGE = 10
#: The graph's largest drawing (inches of 72 px): the main column's width at 1280 px, and short
#: enough to leave the inspector in view; Graphviz shrinks a larger graph to fit it.
GRAPH_INCHES = (10.5, 4.5)
#: The context first: it is what the run made, and the cheapest to draw (the timeline's chart and
#: the visits' grid load the browser's heaviest code; they are drawn when their tab opens).
TABS = ("Context", "Timeline", "Visits", "Artifacts", "Tasks")

run_id = nav.param("run")
if run_id is None:
    st.title("Run")
    typed = st.text_input("Run id", key="run_pick")
    if typed.strip():
        st.query_params["run"] = typed.strip()
        st.rerun()
    st.caption("Or pick one of the latest runs:")
    for r in run_store.list_runs(limit=15, light=True)[0]:
        nav.run_link(r["id"], f"{r['definition_name']} · {fmt.status(r['status'])} · {fmt.when_md(r['created_at'])} · {r['id']}")
    st.stop()

first = run_store.get_run(run_id)
if first is None:
    st.title("Run")
    st.error(f"No run `{run_id}` in this store. Check the id (the Runs page lists them).")
    st.stop()


def _watching() -> bool:
    return st.session_state.get(f"_watch_{run_id}", 0.0) > time.monotonic()


def _watch() -> None:
    st.session_state[f"_watch_{run_id}"] = time.monotonic() + WATCH_SECONDS


LIVE = first.status in fmt.ACTIVE_RUN or _watching()


def _header(run: Any, visits: list[dict[str, Any]]) -> None:
    version = f" v{run.definition_version}" if run.definition_version is not None else ""
    st.title(f"{run.definition_name}{version}")
    st.caption(f"run `{run.id}`" + (" · refreshing while it runs" if LIVE else ""))
    now = datetime.now(UTC)
    # the spans `top_level_spans` gives the Runs page, from the visits this page reads anyway
    spans = [(v["status"], v["started_at"], v["ended_at"]) for v in visits if v["parent_visit_id"] is None]
    # Each figure as wide as its text, in a row that wraps: six equal columns cut "completed",
    # an outcome's name or "3 min 12 s" short at 1280 px.
    with st.container(horizontal=True, gap="large", key="run_metrics"):
        st.metric("Status", fmt.status(run.status), width="content")
        st.metric("Outcome", run.outcome or "—", width="content")
        st.metric("Duration", fmt.duration(fmt.run_seconds(
            run.started_at, run.ended_at, spans, now=now if run.status in fmt.ACTIVE_RUN else None)) or "—",
            help="Time it ran; the time a failed run lay stopped before its resume is not counted", width="content")
        st.metric("Cost", fmt.money(run.cost_usd) or "$0", width="content")
        st.metric("Tokens", f"{run.tokens:,}", width="content")
        st.metric("Trigger", run.trigger.replace("_", " "), width="content")
    st.caption(f"started by **{run.started_by or '—'}** · created {fmt.when_md(run.created_at)} UTC"
               + (f" · started {fmt.when_md(run.started_at)}" if run.started_at else "")
               + (f" · ended {fmt.when_md(run.ended_at)}" if run.ended_at else ""))
    if run.error:
        st.error(run.error)
    if run.prefect_flow_run_id and (url := nav.prefect_url("flow-run", run.prefect_flow_run_id)):
        st.markdown(f"[Prefect flow run `{run.prefect_flow_run_id}`]({url}) — its task runs, logs and artifacts "
                    "in Prefect's UI")
    if run.parent_run_id:
        parent = run_store.get_run(run.parent_run_id)
        nav.run_link(run.parent_run_id, f"Parent run: {parent.definition_name} · {fmt.status(parent.status)}"
                     if parent is not None else "Parent run")
    if run.input_submission_id:
        given = submission_store.get_submission(run.input_submission_id)
        nav.submission_link(run.input_submission_id, "Input submission" + (f": {given.form_name}" if given else ""))
    for child in run_store.child_runs(run.id):
        nav.run_link(child.id, f"Sub-process run {child.definition_name} · {fmt.status(child.status)}")


def _actions(run: Any) -> None:
    """The run's actions in one row, sized to their labels. Cancel asks first: it ends a paused
    run's wait and closes its tasks, which cannot be undone."""
    user = auth.user_name()
    pressed = None
    confirm_key = f"_confirm_cancel_{run.id}"
    cancellable = run.status in fmt.ACTIVE_RUN and run.status != "cancelling"
    with st.container(horizontal=True, gap="small"):
        if run.status in ("failed", "crashed"):
            pressed = "resume" if st.button("Resume", key="act_resume", icon=":material/replay:") else pressed
        if cancellable:
            st.button("Cancel…", key="act_cancel", icon=":material/stop:", help="Stop the run before its next node (asks first)",
                      on_click=st.session_state.__setitem__, args=(confirm_key, True))
        pressed = "replay" if st.button("Replay", key="act_replay", icon=":material/repeat:",
                                        help="A new run of this definition with the same inputs") else pressed
        st.download_button("Export JSON", lambda: json.dumps(export_store.export_run(run.id), indent=2, default=str),
                           file_name=f"run-{run.id}.json", mime="application/json", key="act_export",
                           icon=":material/download:", on_click="ignore")
    if st.session_state.get(confirm_key) == "yes":
        st.session_state.pop(confirm_key)
        pressed = "cancel"
    elif cancellable and st.session_state.get(confirm_key):
        with st.container(border=True):
            st.markdown("**Cancel this run?** It stops before its next node"
                        + (" and its open tasks close; whoever was to answer them no longer can."
                           if run.status == "paused" else ".") + " This cannot be undone.")
            with st.container(horizontal=True, gap="small"):
                # the callbacks run before the re-draw, so the question is gone from it at once
                st.button("Yes, cancel the run", key="act_cancel_yes", type="primary",
                          on_click=st.session_state.update, kwargs={confirm_key: "yes"})
                st.button("No, keep it", key="act_cancel_no", on_click=st.session_state.pop, args=(confirm_key, None))
    replayed = st.session_state.get(f"_replayed_{run.id}")
    if replayed:
        nav.run_link(replayed, f"Replay started: run {replayed}")
    if pressed is None:
        return
    if user is None:
        auth.require_user(f"{pressed} runs")
        return
    if pressed == "resume":
        try:
            started = runs.resume_detached(run, user)
        except runs.ResumeRefused as exc:
            st.warning(str(exc))
            return
        _watch()
        st.success(f"Resuming {started.where}: the run continues after its last completed node.")
    elif pressed == "cancel":
        try:
            status = runs.cancel(run.id, actor=user)
        except runs.AlreadyEnded as exc:
            st.warning(str(exc))
        else:
            _watch()
            st.success("Cancel requested: the run stops before its next node." if status == "cancelling"
                       else "Cancelled.")
    elif pressed == "replay":
        try:
            replayed_run = runs.replay(run, user)
            new_id = replayed_run.run_id
        except runs.StartRefused as exc:
            st.error("The replay was refused:\n\n" + "\n".join(f"- {p.message}" for p in exc.problems))
        else:
            st.session_state[f"_replayed_{run.id}"] = new_id
            nav.run_link(new_id, f"Replay started {replayed_run.where}: run {new_id}")


def _node_options(plan: Any, visits: list[dict]) -> list[str]:
    return list(plan.nodes) if plan is not None else list(dict.fromkeys(v["node_id"] for v in visits))


def _visit_label(v: Any, run_status: str, asks_person: bool) -> str:
    item = f"[{v.item_key}]" if v.item_key else ""
    took = f" · {v.duration_ms} ms" if v.duration_ms is not None and v.status not in ("running", "paused") else ""
    nxt = f" → {v.next_node}" if v.next_node else ""
    state = node_state(v.status, run_status, asks_person)
    return f"#{v.sequence} {v.node_id}{item} · {state} · attempt {v.attempt}{took}{nxt}"


def _explain(run: Any, plan: Any, node_id: str) -> str:
    """The explanation of a node (a model's when one is configured, else the engine's outline)."""
    import asyncio

    from flows.runs.explain import explain

    text, by_model = asyncio.run(explain(plan, node=node_id, context=dict(run.context or {}), run_id=run.id,
                                         environments=cat.catalog().environments()))
    lines = text.splitlines()
    body = "\n".join(f"- {line.strip()}" if line.startswith("  ") else line for line in lines)
    return body if by_model else body + "\n\n_The engine's outline: set `ERGON_MODEL` for a written explanation._"


#: How a visit's context change looks (``_diff_table``): rules between rows, values as code.
_DIFF_CSS = """<style>
.ergon-diff { border-collapse: collapse; width: 100%; font-size: 0.875rem; margin-bottom: 1rem; }
.ergon-diff th, .ergon-diff td { text-align: left; vertical-align: top; padding: 0.25rem 0.5rem;
  border-bottom: 1px solid rgba(49, 51, 63, 0.1); overflow-wrap: anywhere; }
.ergon-diff th { font-weight: 600; color: rgba(49, 51, 63, 0.75); }
</style>"""


def _diff_table(diff: list[dict]) -> None:
    """A visit's context change as a plain HTML table: a few rows, for which ``st.table`` costs
    a DataFrame and an Arrow table on the server and the browser its table code (about 0.8 MB
    of JavaScript, 60-100 ms of a run page's first draw on 2026-12-07), and a grid far more."""
    if not diff:
        st.caption("no context change")
        return
    cells = [(d.get("op"), d.get("path"), json.dumps(d.get("old"), default=str), json.dumps(d.get("new"), default=str))
             for d in diff]
    rows = "".join("<tr>" + "".join(f"<td><code>{html.escape(str(c))}</code></td>" for c in row) + "</tr>"
                   for row in cells)
    st.html(f'{_DIFF_CSS}<table class="ergon-diff"><thead><tr><th>op</th><th>path</th><th>old</th><th>new</th></tr>'
            f"</thead><tbody>{rows}</tbody></table>")


def _pick(node_id: str) -> None:
    st.session_state["inspect_node"] = node_id


def _story(run: Any, plan: Any, why: str | None, visits: list[dict], highlight: Any) -> None:
    """The graph, and under it the node inspector (a fragment of its own: picking a node re-draws
    the inspector only, not the graph or the rest of the page)."""
    nodes = _node_options(plan, visits)
    came_from = st.session_state.get("_inspect_run")
    if (came_from is not None and came_from != run.id) or st.session_state.get("inspect_node") not in nodes:
        # another run's pick means nothing here: open where this run's story is
        first = first_inspected(highlight, run.status, visit_store.last_changing_node(run.id)) if highlight else None
        st.session_state["inspect_node"] = first if first in nodes else (nodes[0] if nodes else None)
    st.session_state["_inspect_run"] = run.id
    if plan is not None:
        graph.graph(render_dot(plan, highlight, rankdir="LR", max_size=GRAPH_INCHES), key="run_graph")
        st.caption("Click a node to inspect it · green: completed · red: failed · amber: running or waiting · "
                   "grey: skipped · thick green arrows: transitions taken · bold outline: where the run is (or ended)")
    else:
        st.warning(f"The definition this run executed cannot be drawn: {why}")
    _inspect(run, plan, visits, highlight, nodes)


@st.fragment
def _inspect(run: Any, plan: Any, visits: list[dict], highlight: Any, nodes: list[str]) -> None:
    if plan is not None:
        graph.node_clicks(nodes, key="run_graph", selected=st.session_state.get("inspect_node"), on_pick=_pick)
    _inspector(run, plan, visits, highlight, nodes)


def _inspector(run: Any, plan: Any, visits: list[dict], highlight: Any, nodes: list[str]) -> None:
    if not nodes:
        return
    counts: dict[str, int] = {}
    for v in visits:
        if v["parent_visit_id"] is None:
            counts[v["node_id"]] = counts.get(v["node_id"], 0) + 1
    visited = highlight.visited if highlight is not None else {}
    run_tasks = task_store.tasks_for_run(run.id)
    asking = {t.node_id for t in run_tasks if t.status in ("pending", "in_progress")}  # nodes waiting for a person

    def label(n: str) -> str:
        kind = f" · {plan.nodes[n].type.replace('_', ' ')}" if plan is not None else ""
        state = f" · {node_state(visited[n], run.status, n in asking)}" if n in visited else " · not visited"
        return f"{n}{kind} · {counts.get(n, 0)} visit(s){state}"

    node_id = st.selectbox("Inspect node", nodes, key="inspect_node", format_func=label)
    node = plan.nodes.get(node_id) if plan is not None else None
    left, right = st.columns([2, 3])
    with left:
        if node is not None:
            if node.title and node.title != node.id:
                st.markdown(f"**{node.title}**")
            if node.human_description:
                st.markdown(node.human_description)
            else:  # the definition says nothing more: what this kind of node does, and where to learn more
                st.markdown(fmt.node_kind(node.type) + " Its definition gives no description; "
                            "**Explain** below outlines what it does.")
            extra = [f"{node.type.replace('_', ' ')} step"] + ([f"lane {node.lane}"] if node.lane else []) \
                + ([f"phase {node.phase}"] if node.phase else []) \
                + ([f"sets {', '.join(fmt.markdown_text(w) for w in node.writes)}"] if node.writes else [])
            st.caption(" · ".join(extra))
            # drawn only when opened: a highlighted code block is the dearest element of the page
            definition = st.expander("Its definition (YAML)", key=f"yaml:{node.id}", on_change="rerun")
            if definition.open:
                with definition:
                    st.code(yaml.safe_dump({node.id: node.body_json()}, sort_keys=False, allow_unicode=True),
                            language="yaml")
            if st.button("Explain", key=f"explain:{node.id}", icon=":material/help:",
                         help="What the node does, why it routes as it does, what can go wrong"):
                st.session_state["_explained"] = (run.id, node.id, _explain(run, plan, node.id))
            explained = st.session_state.get("_explained")
            if explained and explained[:2] == (run.id, node.id):
                st.markdown(explained[2])
        for task in [t for t in run_tasks if t.node_id == node_id]:
            st.markdown(f"**Task** {task.title} · {fmt.status(task.status)}"
                        + (f" · answered by {task.answered_by} via {task.answered_via}" if task.answered_by else ""))
            if task.answer:
                json_view.show(task.answer, expanded=False)
            nav.task_link(task.id, "Open in the task inbox")
    with right:
        total = counts.get(node_id, 0)
        if total == 0:
            st.caption("This node was not visited.")
            return
        pages = max(1, -(-total // VISITS_PER_PAGE))
        page = st.session_state.get(f"visits_page:{node_id}", 1)
        shown, total = visit_store.node_visits(run.id, node_id, limit=VISITS_PER_PAGE, offset=(page - 1) * VISITS_PER_PAGE,
                                               top_only=True)  # a foreach's items are listed in its visit
        st.caption(f"{total} visit(s), newest first")
        children_of: dict[str, list[dict]] = {}
        for v in visits:
            if v["parent_visit_id"]:
                children_of.setdefault(v["parent_visit_id"], []).append(v)
        ids = [v.id for v in shown] + [c["id"] for v in shown for c in children_of.get(v.id, [])]
        llm, tools = visit_store.calls_for_visits(run.id, ids)
        outputs = submission_store.output_submissions(run.id)  # a template step's visit → its output
        for i, v in enumerate(shown):
            # Only an open visit is drawn (its JSON, tables and conversation are what the
            # browser spends its time on); opening another re-runs the inspector with it.
            box = st.expander(_visit_label(v, run.status, node_id in asking), expanded=i == 0, key=f"visit:{v.id}", on_change="rerun")
            if not box.open:
                continue
            with box:
                task_run = nav.prefect_url("task-run", v.prefect_task_run_id) if v.prefect_task_run_id else None
                st.caption(f"started {fmt.when_md(v.started_at)} · ended {fmt.when_md(v.ended_at) or '—'}"
                           + (f" · [Prefect task run]({task_run})" if task_run else ""))
                if v.error:
                    st.error(v.error)
                if v.id in outputs:
                    made = submission_store.get_submission(outputs[v.id])
                    nav.submission_link(outputs[v.id], "Output submission" + (f": {made.form_name}" if made else ""))
                c1, c2 = st.columns(2)
                with c1:
                    st.caption("input")
                    conv.recorded(v.input, "no input recorded")
                with c2:
                    st.caption("output")
                    conv.recorded(v.output, "no output")
                st.caption("context diff")
                _diff_table(v.context_diff or [])
                kids = children_of.get(v.id, [])
                if kids:
                    st.caption(f"{len(kids)} item visit(s)")
                    st.dataframe([{"#": k["sequence"], "item": k["item_key"], "status": fmt.status(k["status"]),
                                   "attempt": k["attempt"], "ms": k["duration_ms"], "error": fmt.short(k["error"])}
                                  for k in kids], hide_index=True, key=f"kids:{v.id}")
                own = v.item_key
                calls = [(c, own) for c in llm.get(v.id, [])] + [(c, k["item_key"]) for k in kids for c in llm.get(k["id"], [])]
                tool_calls = [(c, own) for c in tools.get(v.id, [])] \
                    + [(c, k["item_key"]) for k in kids for c in tools.get(k["id"], [])]
                if calls or tool_calls:
                    tokens = sum(c.tokens_in + c.tokens_out for c, _ in calls)
                    st.caption(f"conversation · {len(calls)} LLM call(s) · {tokens} tokens · "
                               f"{fmt.money(sum(c.cost_usd for c, _ in calls)) or '$0'} · {len(tool_calls)} tool call(s)")
                    conv.show(calls, tool_calls)
                workstream_view.show(v)
        if pages > 1:
            st.pagination(pages, key=f"visits_page:{node_id}")


def _timeline(visits: list[dict]) -> None:
    lay = timeline.layout(visits, datetime.now(UTC))
    if not lay.rows:
        st.caption("No visits yet: the timeline fills in as the run's nodes start.")
        return
    st.vega_lite_chart(spec=timeline.spec(lay), key="timeline", width="stretch")
    if lay.shortened:
        st.caption("Waits for a person and idle stretches (a failed run before its resume) are drawn short, "
                   "hatched; their labels and the axis give their real length.")


def _visits_table(run: Any, visits: list[dict]) -> None:
    outputs = submission_store.output_submissions(run.id)  # one query for the whole table
    rows = [{"#": v["sequence"], "node": v["node_id"], "item": v["item_key"] or "", "type": v["node_type"],
             "status": fmt.status(v["status"]), "attempt": v["attempt"], "started": fmt.when(v["started_at"]),
             "ms": v["duration_ms"], "next": v["next_node"] or "", "error": fmt.short(v["error"])}
            for v in visits]
    config = {}
    if outputs:
        for row, v in zip(rows, visits, strict=True):
            row["output submission"] = nav.submission_url(outputs[v["id"]]) if v["id"] in outputs else None
        config["output submission"] = st.column_config.LinkColumn("output submission",
                                                                  display_text=r"submission=(.*)")
    st.dataframe(rows, hide_index=True, key="visits_table", column_config=config)


def _artifacts(run: Any) -> None:
    rows = artifact_store.artifacts_for_run(run.id, latest_only=True)
    if not rows:
        st.caption("No artifacts: this run has made no report, table or chart.")
    for a in rows:
        with st.expander(f"{a.key} · {a.type} · v{a.version}" + (f" — {a.description}" if a.description else "")):
            show_artifact(a.type, a.content, key=f"art:{a.id}")


def _tasks(run: Any) -> None:
    tasks = task_store.tasks_for_run(run.id)
    if not tasks:
        st.caption("No tasks for people: this run has not reached a step that asks a person.")
    for t in tasks:
        st.markdown(f"**{t.title}** · at step {t.node_id} · {fmt.status(t.status)} · for {fmt.assignee(t.assignee)}"
                    + (f" · answered by {t.answered_by} via {t.answered_via}" if t.answered_by else ""))
        nav.task_link(t.id, "Open in the task inbox")


def _trail(run: Any, commands: list[Any]) -> None:
    """The run's trail: the commands of its supervisor and its operators with the engine's
    verdicts; for a supervised run also the messages people posted, the supervisor's
    conversation, and a box to post another message."""
    from flows.runs.supervision import MessageRefused, post_message
    from flows.store import run_events

    if commands:
        st.caption("commands, with what the engine made of them")
        st.table([{"at": fmt.when(c.at), "by": c.actor or "", "event": (c.args or {}).get("event"), "node": c.node_id or "",
                   "command": c.name, "args": json.dumps((c.args or {}).get("args") or {}, default=str),
                   "why": (c.args or {}).get("why") or "", "verdict": c.outcome, "reason": c.reason or ""}
                  for c in commands], border="horizontal", hide_index=True)
    else:
        st.caption("No commands yet: the supervisor has let the run go on as defined.")
    if run.run_type != "supervised":
        return
    for m in run_events.events_for_run(run.id, kind="message"):
        st.markdown(f"**{m.actor or 'someone'}** · {fmt.when_md(m.at)}"
                    + (" · read" if m.delivered_at else " · not read yet"))
        st.code(str((m.args or {}).get("text", "")), language=None, wrap_lines=True)
    calls = [c for c in visit_store.llm_calls_for_run(run.id) if c.visit_id is None]
    box = st.expander(f"The supervisor's conversation · {len(calls)} model call(s)", key="sup_conv", on_change="rerun")
    if box.open:
        with box:
            conv.show([(c, None) for c in calls], [])
    text = st.chat_input("Message the supervisor (it reads it with the run's next step)", key="sup_message")
    if text:
        user = auth.require_user("message a supervisor")
        if user is not None:
            try:
                post_message(run, text, actor=user)
                st.success("Posted: the supervisor reads it with the run's next step.")
            except MessageRefused as exc:
                st.warning(str(exc))


def _operator(run: Any, plan: Any) -> None:
    """Admins, on a failed or crashed process run: advance, retry, skip or set context, then resume;
    on a paused one: advance past the task its process waits for (the process goes on)."""
    from flows.runs import controls

    who = auth.current_actor()
    paused = run.status == "paused"
    if plan is None or plan.control != "state_machine" or (run.status not in controls.STOPPED and not paused) \
            or who is None or not who.is_admin:
        return
    user = who.name
    current = controls.current_node(run)
    if current is None:
        return
    box = st.expander(f"Operator controls · the run {'waits' if paused else 'stopped'} at `{current}`", key="operator",
                      on_change="rerun")
    if not box.open:
        return
    with box, st.form("operator_form", border=False):
        exits = [e.target for e in plan.successors(current)]
        choices = ["advance"] if paused else ["advance", "retry", "skip", "set context"]
        action = st.radio("Control", choices, horizontal=True, key="op_action",
                          captions=["through a declared exit", "re-enter a node", "where skippable", "repair fields"][:len(choices)])
        to = st.selectbox("Advance to (a declared exit)", exits, key="op_to") if exits else None
        node = st.selectbox("Retry node", list(dict.fromkeys([current, *plan.nodes])), key="op_node")
        updates = st.text_area("Set context (a JSON object of fields)", "{}", key="op_updates")
        why = st.text_input("Why (kept in the run's trail)", key="op_why")
        if not st.form_submit_button("Apply and resume", type="primary"):
            return
    try:
        if action == "advance":
            controls.advance(run.id, str(to), actor=user, why=why)
        elif action == "retry":
            controls.retry_node(run.id, node, actor=user, why=why)
        elif action == "skip":
            controls.skip_node(run.id, actor=user, why=why)
        else:
            try:
                fields = json.loads(updates)
            except ValueError as exc:
                st.error(f"Set context needs a JSON object: {exc}")
                return
            controls.set_context(run.id, fields if isinstance(fields, dict) else {}, actor=user, why=why)
        if not paused:
            runs.resume_detached(run_store.require_run(run.id), user)
    except (controls.ControlRefused, runs.ResumeRefused) as exc:
        st.warning(str(exc))
        return
    _watch()
    st.success(f"{action.capitalize()} recorded; " + ("its waiting process goes on." if paused else "the run resumes."))


def _body() -> None:
    run = run_store.get_run(run_id)
    if (run.status in fmt.ACTIVE_RUN or _watching()) != LIVE:
        st.rerun()  # started or stopped being live: re-draw the whole page with(out) the timer
    visits = visit_store.visits_for_run(run.id, light=True)
    _header(run, visits)
    _actions(run)
    plan, why = cat.run_plan(run)
    highlight = route_highlight(plan, visits, run.status) if plan is not None else None
    _operator(run, plan)
    _story(run, plan, why, visits, highlight)
    # Only the open tab is drawn (a 2,000-visit table or chart costs the browser more than the
    # rest of the page): switching tabs re-runs this fragment with the other one open.
    from flows.store import run_events

    commands = run_events.events_for_run(run.id, kind="command")
    trail = "Supervisor" if run.run_type == "supervised" else "Trail" if commands else None
    tabs = st.tabs((*TABS, trail) if trail else TABS, key="run_tabs", on_change="rerun")
    context, timeline, table, artifacts, tasks = tabs[:5]
    if trail and tabs[5].open:
        with tabs[5]:
            _trail(run, commands)
    if timeline.open:
        with timeline:
            _timeline(visits)
    if table.open:
        with table:
            _visits_table(run, visits)
    if artifacts.open:
        with artifacts:
            _artifacts(run)
    if context.open:
        with context:
            st.caption("inputs")
            json_view.show(run.inputs or {}, expanded=1)
            st.caption("context")
            json_view.show(run.context or {}, expanded=2)
    if tasks.open:
        with tasks:
            _tasks(run)




st.fragment(_body, run_every=REFRESH_SECONDS if LIVE else None)()

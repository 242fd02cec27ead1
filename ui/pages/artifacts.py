"""Artifacts: every artifact of every run with its provenance (run, definition, version,
node visit), rendered by type, and a comparison of one artifact key across two runs."""

from __future__ import annotations

import streamlit as st

from flows.store import artifacts as artifact_store
from flows.store import runs as run_store
from flows.store import visits as visit_store
from flows.store.models import ARTIFACT_TYPES
from ui import artifact_view, nav
from ui import format as fmt

PAGE_SIZE = 50

st.title("Artifacts")
browse, compare = st.tabs(["All artifacts", "Compare across runs"])

with browse:
    c1, c2, c3 = st.columns(3)
    kind = c1.selectbox("Type", ARTIFACT_TYPES, index=None, key="art_type", placeholder="any")
    key_text = c2.text_input("Key contains", key="art_key")
    definition = c3.selectbox("Definition", run_store.definition_names_with_runs(), index=None, key="art_def",
                              placeholder="any")
    page = st.session_state.get("art_page", 1)
    rows, total = artifact_store.artifacts_page(type=kind, key=key_text.strip() or None, definition=definition,
                                                limit=PAGE_SIZE, offset=(page - 1) * PAGE_SIZE)
    st.caption(f"{total} artifact version(s), newest first")
    if rows:
        st.dataframe([{
            "key": r["key"], "version": r["version"], "type": r["type"], "description": r["description"] or "",
            "definition": r["definition_name"], "run": nav.run_url(r["run_id"]), "run status": fmt.status(r["run_status"]),
            "created": fmt.when(r["created_at"]),
        } for r in rows], hide_index=True, key="art_table",
            # the first 8 characters name a run well enough on screen (as on the Runs page)
            column_config={"run": st.column_config.LinkColumn("run", display_text=r"run\?run=(.{8}).*")})
        if total > PAGE_SIZE:
            st.pagination(-(-total // PAGE_SIZE), key="art_page")
        chosen = st.selectbox("Show", [r["id"] for r in rows], key="art_pick",
                              format_func=lambda i: next(f"{r['key']} v{r['version']} · from a {r['definition_name']} run "
                                                         f"of {fmt.when(r['run_created_at'])}" for r in rows if r["id"] == i))
        artifact = artifact_store.get_artifact(chosen)
        if artifact is not None:
            st.markdown(f"**{artifact.key}** · {artifact.type} · version {artifact.version}"
                        + (f" — {artifact.description}" if artifact.description else ""))
            row = next(r for r in rows if r["id"] == chosen)
            nav.run_link(artifact.run_id, f"From a {row['definition_name']} run · {fmt.status(row['run_status'])}")
            if artifact.visit_id and (visit := visit_store.get_visit(artifact.visit_id)) is not None:
                st.caption(f"written by step {visit.node_id} (visit #{visit.sequence}) at {fmt.when_md(artifact.created_at)} UTC")
            artifact_view.show(artifact.type, artifact.content, key=f"art:{artifact.id}")
    elif key_text.strip() or kind or definition:
        st.info("No artifact matches these filters: clear one to see more.", icon=":material/filter_alt_off:")
    else:
        st.info("No artifacts yet: runs make them with the `write_artifact` tool.", icon=":material/description:")


with compare:
    keys = artifact_store.artifact_keys()
    if not keys:
        st.info("No artifacts yet. A run makes one when a node calls the `write_artifact` tool (a report, a "
                "table, a chart); the same key in two runs can then be compared here.", icon=":material/description:")
    else:
        key = st.selectbox("Artifact key", keys, key="cmp_key")
        runs = artifact_store.runs_with_artifact(key)
        labels = {r["run_id"]: f"{r['definition_name']} · {fmt.when(r['created_at'])} · {r['run_id']}" for r in runs}
        if len(runs) < 2:
            st.info(f"Only one run has `{key}`: comparing needs two.")
        else:
            c1, c2 = st.columns(2)
            left = c1.selectbox("Run A", list(labels), index=1, key="cmp_a", format_func=labels.get)
            right = c2.selectbox("Run B", list(labels), index=0, key="cmp_b", format_func=labels.get)
            # both runs are among runs_with_artifact(key): each has a newest version of it
            (a,) = artifact_store.artifacts_for_run(left, key=key, latest_only=True)
            (b,) = artifact_store.artifacts_for_run(right, key=key, latest_only=True)
            textual = a.type in artifact_view.TEXT_TYPES and b.type in artifact_view.TEXT_TYPES
            if textual or isinstance(a.content, str) and isinstance(b.content, str):
                diff = artifact_view.text_diff(a.content, b.content, f"{key} (run {left})", f"{key} (run {right})")
                st.caption("unified diff")
                if diff:
                    st.code(diff, language="diff")
                else:
                    st.success("Identical.")
            else:
                ops = artifact_view.json_diff(a.content, b.content)
                st.caption(f"structural diff: {len(ops)} difference(s)")
                if ops:
                    st.dataframe([{"op": o["op"], "path": o["path"] or "(whole value)",
                                   "run A": artifact_view.as_text(o["old"]) if o["old"] is not None else "",
                                   "run B": artifact_view.as_text(o["new"]) if o["new"] is not None else ""}
                                  for o in ops], hide_index=True, key="cmp_ops")
                else:
                    st.success("Identical.")
            d1, d2 = st.columns(2)
            with d1:
                artifact_view.show(a.type, a.content, key=f"cmpa:{a.id}")
            with d2:
                artifact_view.show(b.type, b.content, key=f"cmpb:{b.id}")

"""The state chart as a control: clicking a node of the graph picks it.

``st.graphviz_chart`` draws the DOT (Graphviz compiled to WebAssembly, shipped inside Streamlit,
so nothing is fetched) but reports no clicks. :func:`graph` draws it in a keyed container;
:func:`node_clicks` mounts a tiny ``st.components.v2`` component whose script listens for
clicks (and Enter) on that container's SVG nodes (``g.node``; their ``<title>`` is the node
id) and sends the id back as a one-shot trigger. The component has no look of its own: it
marks the nodes clickable (pointer, keyboard focus, a glow on the picked one) and re-attaches
when the chart re-draws. The two are apart so that the clicks can belong to a fragment that
does not contain the graph: picking a node then re-draws the inspector, not the graph.
"""

from __future__ import annotations

from collections.abc import Callable

import streamlit as st

_JS = """
export default function ({ data, parentElement, setTriggerValue }) {
  const main = document.querySelector('[data-testid=stMain]') || document.body;
  const wire = () => {
    const box = document.querySelector('.st-key-' + data.container);
    if (!box) return;
    for (const g of box.querySelectorAll('svg g.node')) {
      const id = (g.querySelector('title') || {}).textContent;
      if (!id || !data.nodes.includes(id) || g.dataset.ergonClick) continue;
      g.dataset.ergonClick = '1';
      g.style.cursor = 'pointer';
      g.setAttribute('tabindex', '0');
      g.setAttribute('role', 'button');
      g.setAttribute('aria-label', 'Inspect ' + id);
      const pick = () => setTriggerValue('clicked', id);
      g.addEventListener('click', pick);
      g.addEventListener('keydown', (e) => { if (e.key === 'Enter' || e.key === ' ') { e.preventDefault(); pick(); } });
    }
    for (const g of box.querySelectorAll('svg g.node')) {
      const id = (g.querySelector('title') || {}).textContent;
      const shape = g.querySelector('polygon, ellipse, path');
      if (shape) shape.style.filter = id === data.selected ? 'drop-shadow(0 0 4px #1f6feb)' : '';
    }
  };
  wire();
  const watch = new MutationObserver(wire);
  watch.observe(main, { childList: true, subtree: true });
  return () => watch.disconnect();
}
"""

_component = st.components.v2.component("ergon_graph_click", js=_JS, html="<span></span>")


def graph(dot: str, *, key: str) -> None:
    """Draw ``dot`` in a container that :func:`node_clicks` with the same ``key`` listens to."""
    with st.container(key=f"{key}_box"):
        st.graphviz_chart(dot)


def node_clicks(nodes: list[str], *, key: str, selected: str | None, on_pick: Callable[[str], None]) -> None:
    """Make the nodes of :func:`graph` ``key`` clickable: a click on one of ``nodes`` calls
    ``on_pick(node id)`` before the re-run (which then already shows the picked node)."""

    def picked() -> None:
        state = st.session_state.get(f"{key}_clicks") or {}
        node = state.get("clicked") if hasattr(state, "get") else None
        if node in nodes:
            on_pick(node)

    _component(key=f"{key}_clicks", data={"container": f"{key}_box", "nodes": nodes, "selected": selected},
               on_clicked_change=picked)

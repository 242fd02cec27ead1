"""The state chart as a control: clicking a node of the graph picks it.

``st.graphviz_chart`` draws the DOT (Graphviz compiled to WebAssembly, shipped inside Streamlit,
so nothing is fetched) but reports no clicks. :func:`clickable_graph` draws it in a keyed
container together with a tiny ``st.components.v2`` component whose script listens for clicks
on that container's SVG nodes (``g.node``; their ``<title>`` is the node id) and sends the id
back as a one-shot trigger; :func:`clickable_graph` returns it. The component has no look of
its own: it marks the nodes clickable (pointer, hover outline, keyboard focus) and re-attaches
when the chart re-draws.
"""

from __future__ import annotations

from collections.abc import Callable

import streamlit as st

_JS = """
export default function ({ data, parentElement, setTriggerValue }) {
  const host = parentElement.host || parentElement;
  const box = host.closest('.st-key-' + data.container);
  if (!box) return;
  const wire = () => {
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
  watch.observe(box, { childList: true, subtree: true });
  return () => watch.disconnect();
}
"""

_CSS = ""
_component = st.components.v2.component("ergon_graph_click", js=_JS, html="<span></span>")


def clickable_graph(dot: str, nodes: list[str], *, key: str, selected: str | None,
                    on_pick: Callable[[str], None]) -> None:
    """Draw ``dot``; a click on one of ``nodes`` calls ``on_pick(node id)`` before the re-run
    (so the re-run already shows the picked node). ``selected`` is drawn with a glow."""
    container = f"{key}_box"

    def picked() -> None:
        state = st.session_state.get(key) or {}
        node = state.get("clicked") if hasattr(state, "get") else None
        if node in nodes:
            on_pick(node)

    with st.container(key=container):
        st.graphviz_chart(dot)
        _component(key=key, data={"container": container, "nodes": nodes, "selected": selected},
                   on_clicked_change=picked, height=0)

"""Tables of the dashboard that outlive a refresh: which row is selected.

Streamlit's dataframe selection is a row *position*; a table that re-draws itself (a live
list) changes what stands at each position. The functions here keep a selection on the
object the row shows. Pure, tested without Streamlit.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any


def keep_selection(shown_before: Sequence[str], ids: Sequence[str], state: Mapping[str, Any] | None,
                   chosen: str | None, drawn_at: int | None) -> tuple[str | None, int | None]:
    """Which run is selected, and at which row of ``ids`` to draw it: ``(run id, row)``.

    ``state`` is the table's selection as the browser last reported it (row positions in the
    rows it was showing, ``shown_before``); ``drawn_at`` is the row this page last drew the
    selection at. A selection that differs from ``drawn_at`` is the person's click, read in the
    rows they clicked on; otherwise the selection stays with ``chosen``, wherever its run is now
    (no row when it left this page)."""
    rows = list(((state or {}).get("selection") or {}).get("rows") or [])
    if rows != ([] if drawn_at is None else [drawn_at]):
        chosen = shown_before[rows[0]] if rows and rows[0] < len(shown_before) else None
    return chosen, (ids.index(chosen) if chosen in ids else None)

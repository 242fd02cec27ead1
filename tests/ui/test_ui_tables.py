"""Keeping a table's selection on the object its row shows (ui/tables.py)."""

from __future__ import annotations

from ui.tables import keep_selection


def _state(*rows: int) -> dict:
    return {"selection": {"rows": list(rows), "columns": []}}


def test_a_click_picks_the_run_of_the_row_clicked():
    assert keep_selection(["c", "b", "a"], ["c", "b", "a"], _state(1), None, None) == ("b", 1)


def test_a_new_run_at_the_top_moves_the_selection_down_with_its_run():
    # drawn at row 1 ("b"); a refresh brings "d" in at the top
    assert keep_selection(["c", "b", "a"], ["d", "c", "b", "a"], _state(1), "b", 1) == ("b", 2)


def test_a_click_is_read_in_the_rows_the_person_saw():
    # the person clicked row 0 of what was on screen ("c"), while "d" had just arrived
    assert keep_selection(["c", "b", "a"], ["d", "c", "b", "a"], _state(0), "b", 1) == ("c", 1)


def test_a_run_that_left_the_page_stays_chosen_without_a_row_and_clearing_clears():
    assert keep_selection(["b", "a"], ["z", "y"], _state(0), "b", 0) == ("b", None)
    assert keep_selection(["b", "a"], ["b", "a"], _state(), "b", 0) == (None, None)

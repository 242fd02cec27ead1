"""The dashboard's JSON trees (ui/json_view.py): the tree's text is the value's JSON, every key
and string is escaped, levels open as asked, and a value too large for a tree goes to st.json."""

from __future__ import annotations

import re

from hypothesis import given, settings
from hypothesis import strategies as st
from streamlit.testing.v1 import AppTest

import ui_seed as seed
from ui import json_view

_JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False) | st.text(),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(), inner, max_size=4),
    max_leaves=20)


class _Page:
    """What ``seed.json_trees`` reads: the page's HTML elements."""

    def __init__(self, *bodies: str) -> None:
        self.html = [type("Html", (), {"value": body})() for body in bodies]


@settings(max_examples=200, deadline=None)
@given(value=_JSON, expanded=st.sampled_from([True, False, 0, 1, 2]))
def test_the_trees_text_is_the_values_json(value, expanded):
    assert seed.json_trees(_Page(json_view.tree_html(value, expanded=expanded))) == [value]


def test_keys_and_strings_are_escaped():
    hostile = {'<script>alert(1)</script>': '"><img src=x onerror=alert(1)>', "a": ['</div></details>']}
    page = json_view.tree_html(hostile, expanded=True)
    assert "<script" not in page and "<img" not in page and '"</div></details>"' not in page
    assert seed.json_trees(_Page(page)) == [hostile], "and read back as they were"


def test_levels_open_as_asked_and_closed_ones_say_what_they_hold():
    value = {"a": {"b": [1, 2, 3]}, "c": 1}
    one = json_view.tree_html(value, expanded=1)
    assert re.findall(r"<details( open)?>", one) == [" open", "", ""], "the top level only"
    assert 'data-closed="1 key },"' in one and 'data-closed="3 items ]"' in one
    assert re.findall(r"<details( open)?>", json_view.tree_html(value, expanded=True)) == [" open"] * 3
    assert re.findall(r"<details( open)?>", json_view.tree_html(value, expanded=False)) == [""] * 3


def _app(value_size: int, depth: int) -> AppTest:
    def script(size: int, depth: int) -> None:
        from ui import json_view as view

        nested: object = list(range(size))
        for _ in range(depth):
            nested = {"inner": nested}
        view.show(nested, expanded=1)

    return AppTest.from_function(script, kwargs={"size": value_size, "depth": depth}).run()


def test_a_small_value_is_a_tree_and_a_large_or_deep_one_goes_to_st_json():
    small = _app(10, 3)
    assert not small.json and len(small.html) == 1
    large = _app(json_view.MAX_NODES + 1, 0)
    assert len(large.json) == 1 and not large.html
    deep = _app(1, json_view.MAX_DEPTH + 1)
    assert len(deep.json) == 1 and not deep.html

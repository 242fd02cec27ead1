"""context_diff / apply_diff: pure functions, JSON-Patch-like operations with old and new values."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from flows.store.diff import DiffError, apply_diff, context_diff, split_path


def test_equal_contexts_have_an_empty_diff():
    assert context_diff({"a": 1, "b": {"c": [1, 2]}}, {"b": {"c": [1, 2]}, "a": 1}) == []
    assert context_diff({}, {}) == []


def test_top_level_add_remove_replace():
    old = {"keep": 1, "gone": "x", "changed": "a"}
    new = {"keep": 1, "changed": "b", "added": [1]}
    assert context_diff(old, new) == [
        {"op": "remove", "path": "/gone", "old": "x", "new": None},
        {"op": "replace", "path": "/changed", "old": "a", "new": "b"},
        {"op": "add", "path": "/added", "old": None, "new": [1]},
    ]


def test_nested_objects_are_diffed_key_by_key():
    old = {"contract": {"party": "ACME", "terms": {"days": 30}}}
    new = {"contract": {"party": "ACME", "terms": {"days": 45, "auto_renew": True}}}
    assert context_diff(old, new) == [
        {"op": "replace", "path": "/contract/terms/days", "old": 30, "new": 45},
        {"op": "add", "path": "/contract/terms/auto_renew", "old": None, "new": True},
    ]


def test_lists_and_type_changes_are_replaced_whole():
    assert context_diff({"xs": [1, 2]}, {"xs": [1, 2, 3]}) == [
        {"op": "replace", "path": "/xs", "old": [1, 2], "new": [1, 2, 3]}
    ]
    assert context_diff({"a": {"b": 1}}, {"a": "flat"}) == [
        {"op": "replace", "path": "/a", "old": {"b": 1}, "new": "flat"}
    ]
    assert context_diff({"a": None}, {"a": {"b": 1}}) == [
        {"op": "replace", "path": "/a", "old": None, "new": {"b": 1}}
    ]


def test_json_equality_not_python_equality():
    assert context_diff({"flag": 1}, {"flag": True}) == [
        {"op": "replace", "path": "/flag", "old": 1, "new": True}
    ]
    assert context_diff({"xs": [0]}, {"xs": [False]}) != []
    assert context_diff({"n": 1}, {"n": 1.0}) == []


def test_keys_with_slash_and_tilde_are_escaped():
    diff = context_diff({}, {"a/b": 1, "c~d": 2})
    assert [op["path"] for op in diff] == ["/a~1b", "/c~0d"]
    assert split_path("/a~1b/c~0d") == ["a/b", "c~d"]
    assert apply_diff({}, diff) == {"a/b": 1, "c~d": 2}


def test_apply_diff_rebuilds_new_and_leaves_its_input_alone():
    old = {"a": {"b": 1, "c": [1]}, "d": 4}
    new = {"a": {"b": 2}, "e": {"f": None}}
    diff = context_diff(old, new)
    snapshot = {"a": {"b": 1, "c": [1]}, "d": 4}
    assert apply_diff(old, diff) == new
    assert old == snapshot


def test_apply_diff_values_are_copies():
    diff = context_diff({}, {"xs": [1]})
    result = apply_diff({}, diff)
    result["xs"].append(2)
    assert diff[0]["new"] == [1]


@pytest.mark.parametrize(
    ("context", "op"),
    [
        ({}, {"op": "replace", "path": "/a", "old": 1, "new": 2}),
        ({}, {"op": "remove", "path": "/a", "old": 1, "new": None}),
        ({"a": 1}, {"op": "add", "path": "/a", "old": None, "new": 2}),
        ({"a": 1}, {"op": "add", "path": "/a/b", "old": None, "new": 2}),
        ({}, {"op": "move", "path": "/a"}),
        ({}, {"op": "add", "path": "a", "new": 1}),
    ],
)
def test_strict_apply_refuses_a_diff_that_does_not_fit(context, op):
    with pytest.raises(DiffError):
        apply_diff(context, [op])


def test_lenient_apply_sets_and_removes_whatever_is_there():
    ops = [
        {"op": "replace", "path": "/a/b", "old": 1, "new": 2},
        {"op": "add", "path": "/x", "old": None, "new": 1},
        {"op": "remove", "path": "/missing/deep", "old": 1, "new": None},
    ]
    assert apply_diff({"x": 0}, ops, strict=False) == {"a": {"b": 2}, "x": 1}


json_scalars = st.none() | st.booleans() | st.integers() | st.text(max_size=5)
json_values = st.recursive(
    json_scalars,
    lambda children: st.lists(children, max_size=3) | st.dictionaries(st.text(max_size=4), children, max_size=3),
    max_leaves=12,
)
contexts = st.dictionaries(st.text(max_size=4), json_values, max_size=5)


@settings(max_examples=100, deadline=None)
@given(contexts, contexts)
def test_apply_of_diff_is_new(old, new):
    diff = context_diff(old, new)
    assert apply_diff(old, diff) == new
    assert (diff == []) == (old == new) or _python_equal_but_not_json(old, new)


def _python_equal_but_not_json(a, b) -> bool:
    return a == b and context_diff(a, b) != []

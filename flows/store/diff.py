"""Context diffs: what a node visit changed in the run context, as JSON-Patch-like operations.

A diff is a list of ``{"op": "add"|"remove"|"replace", "path": "/a/b", "old": …, "new": …}``.
Paths are JSON Pointers (RFC 6901: ``~`` is written ``~0`` and ``/`` is written ``~1``). The diff
goes into nested objects key by key, so the dashboard can show which field changed. Lists and
scalars are replaced whole: an index-level list diff confuses readers more than it helps.
Unlike JSON Patch, every operation keeps both the old and the new value (``None`` for the
missing side), so a diff can be shown, and checked against the context it is applied to.

:func:`apply_diff` replays a diff on a context (resume and replay rebuild the context from the
stored visits). Both functions are pure: they never change their arguments.
"""

from __future__ import annotations

from flows.errors import ErgonError

import copy
from typing import Any

OPS = ("add", "remove", "replace")


class DiffError(ErgonError, ValueError):
    """A diff does not fit the context it is applied to."""


def context_diff(old: dict, new: dict) -> list[dict]:
    """The operations that turn ``old`` into ``new`` (empty when they are equal)."""
    ops: list[dict] = []
    _diff_into(ops, "", old or {}, new or {})
    return ops


def apply_diff(context: dict, diff: list[dict], *, strict: bool = True) -> dict:
    """A copy of ``context`` with ``diff`` applied.

    With ``strict`` (the default) a ``remove``/``replace`` of a missing path, or an ``add`` of a
    path that exists, raises :class:`DiffError`: replaying on the wrong context is a bug to see,
    not to paper over. Without it, every operation just sets or removes its path.
    """
    result = copy.deepcopy(context or {})
    for op in diff:
        _apply_one(result, op, strict)
    return result


def escape(key: str) -> str:
    return key.replace("~", "~0").replace("/", "~1")


def split_path(path: str) -> list[str]:
    """``"/a/b~1c"`` → ``["a", "b/c"]``."""
    if not path.startswith("/"):
        raise DiffError(f"path {path!r} must start with '/'")
    return [part.replace("~1", "/").replace("~0", "~") for part in path[1:].split("/")]


def _diff_into(ops: list[dict], prefix: str, old: dict, new: dict) -> None:
    for key, old_value in old.items():
        path = f"{prefix}/{escape(str(key))}"
        if key not in new:
            ops.append({"op": "remove", "path": path, "old": old_value, "new": None})
            continue
        new_value = new[key]
        if isinstance(old_value, dict) and isinstance(new_value, dict):
            _diff_into(ops, path, old_value, new_value)
        elif not same(old_value, new_value):
            ops.append({"op": "replace", "path": path, "old": old_value, "new": new_value})
    for key, new_value in new.items():
        if key not in old:
            ops.append({"op": "add", "path": f"{prefix}/{escape(str(key))}", "old": None, "new": new_value})


def same(a: Any, b: Any) -> bool:
    """Equality as JSON sees it: ``True`` is not ``1`` (Python says it is); ``1`` is ``1.0``."""
    if isinstance(a, bool) or isinstance(b, bool):
        return isinstance(a, bool) and isinstance(b, bool) and a == b
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(same(a[k], b[k]) for k in a)
    if isinstance(a, list | tuple) and isinstance(b, list | tuple):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b, strict=True))
    return a == b


def _apply_one(context: dict, op: dict, strict: bool) -> None:
    kind = op.get("op")
    if kind not in OPS:
        raise DiffError(f"unknown op {kind!r} (expected one of {', '.join(OPS)})")
    *parents, last = split_path(op["path"])
    target = _parent(context, parents, op["path"], strict=strict, create=kind != "remove")
    if target is None:  # lenient remove under a missing parent: nothing to remove
        return
    exists = last in target
    if strict and kind == "add" and exists:
        raise DiffError(f"add {op['path']}: the path already exists")
    if strict and kind != "add" and not exists:
        raise DiffError(f"{kind} {op['path']}: the path does not exist")
    if kind == "remove":
        target.pop(last, None)
    else:
        target[last] = copy.deepcopy(op.get("new"))


def _parent(context: dict, parts: list[str], path: str, *, strict: bool, create: bool) -> dict | None:
    node = context
    for part in parts:
        child = node.get(part)
        if not isinstance(child, dict):
            if strict:
                raise DiffError(f"{path}: {part!r} is not an object in the context")
            if not create:
                return None
            child = node[part] = {}
        node = child
    return node

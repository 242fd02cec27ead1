"""The per-visit hot path's statements, run on SQLite's own driver cursor.

On SQLite the store writes of a node visit — its checkpoint, a fan-out item's close, a model
call's record — are most of Ergon's own CPU per visit, and about two thirds of each was
SQLAlchemy's statement execution around the driver's call (the statement's cache key, the
compiled-statement lookup, parameter and result set-up), not SQLite's work. Measured on one item
of a foreach of interactions (a model call's record and the item's close): 1.30 → 0.47 ms of CPU.

A :class:`DriverStatement` is SQL text built once per table and set of columns, each parameter
passed through its column's own SQLAlchemy bind processor, so the database gets the same JSON
text, timestamps and booleans a Core statement would write. It runs in the caller's open
transaction (a :func:`flows.store.db.hot_transaction`, or a Core connection), and a driver error
is raised as SQLAlchemy's (``IntegrityError`` for a missing run, as a Core statement's would be).

Only SQLite takes this path; PostgreSQL keeps Core statements (its driver's round trip dwarfs the
difference, and a deployment's store is not on a flow's event loop the way the embedded file is).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any, Protocol

import sqlalchemy as sa

__all__ = ["DriverConnection", "DriverStatement", "insert", "sql", "update_by_id"]


class DriverConnection(Protocol):
    """What a statement needs of the transaction it runs in: a Core connection, or the store's
    own :class:`flows.store.db.HotTransaction`."""

    @property
    def dialect(self) -> sa.Dialect: ...

    @property
    def connection(self) -> Any: ...

_Param = tuple[str, Callable[[Any], Any] | None]


class DriverStatement:
    """One SQL statement for the driver's cursor, with the bind processor of each parameter."""

    def __init__(self, text: str, params: Sequence[_Param]) -> None:
        self.text = text
        self.params = list(params)

    def run(self, conn: DriverConnection, values: Mapping[str, Any]) -> sa.Row[Any] | tuple[Any, ...] | int | None:
        """Execute in ``conn``'s transaction: the first row when the statement returns rows,
        else the number of rows it changed."""
        return self._execute(conn, self._parameters(values), many=False)

    def run_many(self, conn: DriverConnection, rows: Sequence[Mapping[str, Any]]) -> None:
        """Execute once per row in ``conn``'s transaction, in one driver call (``executemany``):
        a flush of a large fan-out's deferred visits writes thousands of rows at once."""
        self._execute(conn, [self._parameters(values) for values in rows], many=True)

    def _parameters(self, values: Mapping[str, Any]) -> list[Any]:
        return [process(values.get(name)) if process else values.get(name) for name, process in self.params]

    def _execute(self, conn: DriverConnection, parameters: Any, *, many: bool) -> Any:
        driver_error = conn.dialect.loaded_dbapi.Error
        cursor = conn.connection.driver_connection.cursor()
        try:
            if many:
                cursor.executemany(self.text, parameters)
                return None
            cursor.execute(self.text, parameters)
            if cursor.description is not None:
                return cursor.fetchone()
            return cursor.rowcount
        except driver_error as exc:
            raise sa.exc.DBAPIError.instance(self.text, None, exc, driver_error, dialect=conn.dialect) from exc
        finally:
            cursor.close()


_built: dict[tuple[Any, ...], DriverStatement] = {}


def _param(column: sa.Column[Any], dialect: sa.Dialect) -> _Param:
    return column.name, _bind_processor(column, dialect)


def _bind_processor(column: sa.Column[Any], dialect: sa.Dialect) -> Callable[[Any], Any] | None:
    """The column's bind processor; for a JSON column, one that hands the two values most visit
    rows hold (nothing, an empty object) their text as the processor made it once, instead of
    encoding them again for every row."""
    process = column.type.bind_processor(dialect)
    if process is None or not isinstance(column.type, sa.JSON):
        return process
    null, empty = process(None), process({})

    def json_text(value: Any) -> Any:
        if value is None:
            return null
        if type(value) is dict and not value:
            return empty
        return process(value)

    return json_text


def insert(table: sa.Table, columns: Sequence[str], dialect: sa.Dialect) -> DriverStatement:
    """``INSERT INTO table (columns…)``, once per table and set of columns.

    Every column with a Python-side default (an id, a creation time) must be among ``columns``:
    unlike a Core insert, the driver would leave it NULL."""
    key = ("insert", table.name, tuple(columns), dialect.name)
    found = _built.get(key)
    if found is None:
        missing = [c.name for c in table.c if c.default is not None and c.name not in columns]
        if missing:
            raise ValueError(f"insert into {table.name} without {', '.join(missing)}: their defaults are Python's")
        text = f"INSERT INTO {table.name} ({', '.join(columns)}) VALUES ({', '.join('?' for _ in columns)})"
        found = _built[key] = DriverStatement(text, [_param(table.c[name], dialect) for name in columns])
    return found


def update_by_id(table: sa.Table, columns: Sequence[str], dialect: sa.Dialect) -> DriverStatement:
    """``UPDATE table SET columns… WHERE id = ?`` (values by column name, the row's as ``id``)."""
    key = ("update", table.name, tuple(columns), dialect.name)
    found = _built.get(key)
    if found is None:
        text = f"UPDATE {table.name} SET {', '.join(f'{name} = ?' for name in columns)} WHERE id = ?"
        params = [_param(table.c[name], dialect) for name in columns] + [_param(table.c.id, dialect)]
        found = _built[key] = DriverStatement(text, params)
    return found


def sql(name: str, text: str, params: Sequence[tuple[str, sa.Column[Any]]], dialect: sa.Dialect) -> DriverStatement:
    """A statement written out (``name`` caches it): ``params`` names each ``?`` in order and the
    column whose bind processor its value goes through."""
    key = ("sql", name, dialect.name)
    found = _built.get(key)
    if found is None:
        found = _built[key] = DriverStatement(text, [(p, _bind_processor(column, dialect)) for p, column in params])
    return found

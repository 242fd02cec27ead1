"""The Ergon store: SQLModel tables, migrations and the queries everything else uses.

This is the only package that imports sqlmodel or sqlalchemy. Callers use :mod:`flows.store.repo`
(plain functions returning detached rows or dicts) and :func:`flows.store.db.init_db`;
:mod:`flows.store.diff` holds the pure context-diff helpers.
"""

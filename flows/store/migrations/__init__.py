"""Alembic migration environment and revisions of the Ergon store (a package so that it ships
in the wheel)."""

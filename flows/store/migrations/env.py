"""Alembic environment for the Ergon store.

The URL comes from :func:`flows.store.db.alembic_config` (programmatic use) or
:func:`flows.store.db.database_url` (the ``alembic`` command), and the connection from
:func:`flows.store.db.get_engine`, so migrations run with the same SQLite settings as the app.
"""

from __future__ import annotations

from logging.config import fileConfig

from alembic import context
from sqlmodel import SQLModel

from flows.store import db, models  # noqa: F401  (models registers the tables on the metadata)

config = context.config
target_metadata = SQLModel.metadata

# Only the alembic command configures logging: called from the app, fileConfig would replace the
# app's (and Prefect's) logging set-up.
if config.cmd_opts is not None and config.config_file_name is not None:
    fileConfig(config.config_file_name)


def _url() -> str:
    return config.attributes.get("url") or db.database_url()


def _options(dialect_name: str) -> dict:
    sqlite = dialect_name == "sqlite"
    return {
        "target_metadata": target_metadata,
        "compare_type": True,
        # SQLite cannot ALTER most things; batch mode copies the table instead.
        "render_as_batch": sqlite,
        # SQLite does have transactional DDL once pysqlite stops managing transactions (db.py):
        # a failed migration then leaves nothing half-done.
        "transactional_ddl": True if sqlite else None,
    }


def run_migrations_offline() -> None:
    import sqlalchemy as sa

    url = _url()
    opts = {k: v for k, v in _options(sa.make_url(url).get_backend_name()).items() if v is not None}
    context.configure(url=url, literal_binds=True, dialect_opts={"paramstyle": "named"}, **opts)
    with context.begin_transaction():
        context.run_migrations()


def run_migrations_online() -> None:
    engine = db.get_engine(_url())
    with engine.connect() as connection:
        if engine.dialect.name == "sqlite":
            # Batch mode recreates tables; with foreign keys on, dropping the old copy would
            # cascade or fail. The pragma is ignored inside a transaction, so set it first, on
            # the raw connection (which is in autocommit mode, see db.py).
            connection.connection.driver_connection.execute("PRAGMA foreign_keys=OFF")
            # Take the write lock before reading the current revision: a second process running
            # the same upgrade waits, then finds the schema at head.
            connection.execution_options(**{db.IMMEDIATE: True})
        opts = {k: v for k, v in _options(engine.dialect.name).items() if v is not None}
        try:
            context.configure(connection=connection, **opts)
            with context.begin_transaction():
                context.run_migrations()
        finally:
            if engine.dialect.name == "sqlite":
                connection.connection.driver_connection.execute("PRAGMA foreign_keys=ON")


if context.is_offline_mode():
    run_migrations_offline()
else:
    run_migrations_online()

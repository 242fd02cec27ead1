"""The Ergon store: SQLModel tables, migrations and the queries everything else uses.

This is the only package that imports sqlmodel or sqlalchemy. Callers use one module per entity
(plain functions returning detached rows or dicts, each in its own short transaction) and
:func:`flows.store.db.init_db`:

* :mod:`~flows.store.definitions`: definitions, their drafts, published versions, content snapshots
* :mod:`~flows.store.runs`: runs, their status machine, totals, listing (whole or light rows), crashes
* :mod:`~flows.store.visits`: node visits, LLM calls and tool calls
* :mod:`~flows.store.workstreams`: the sub-agents an agent visit delegates to
* :mod:`~flows.store.artifacts`: artifacts and the dashboard's artifact listings
* :mod:`~flows.store.tasks`: human tasks and their audit events
* :mod:`~flows.store.people`: users, groups, memberships
* :mod:`~flows.store.secrets`: sealed secrets (ciphertext only)
* :mod:`~flows.store.triggers`: trigger states
* :mod:`~flows.store.webhook_deliveries`: signatures of accepted webhook requests (replays refused)
* :mod:`~flows.store.export`: a whole run as one JSON-able dict
* :mod:`~flows.store.errors`: :class:`~flows.store.errors.StoreError` and its subclasses

Callers import them under one alias each: ``from flows.store import runs as run_store`` (likewise
``definition_store``, ``visit_store``, ``artifact_store``, ``task_store``, ``people_store``,
``secret_store``, ``trigger_store``, ``export_store``, ``workstream_store``); the errors by name. :mod:`flows.store.diff`
holds the pure context-diff helpers; ``flows.store._common`` the helpers the entity modules share.
"""

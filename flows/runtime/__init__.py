"""The runtime: executing a compiled Plan, node by node, with every visit checkpointed.

* :mod:`flows.runtime.context` — applying a node's writes: scope, schema, size; the diff.
* :mod:`flows.runtime.routing` — picking the next node (guards, conditions, `_next_node`).
* :mod:`flows.runtime.bodies`  — what each node type does.
* :mod:`flows.runtime.engine`  — the interpreter: the state-machine loop and the DAG scheduler,
  foreach windows and branch joins, resume from the store's checkpoint, cooperative cancel.

Prefect is reached only through :mod:`flows.backend`, which hands the engine an executor that
turns each visit into a Prefect task run.
"""

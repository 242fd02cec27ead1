"""The runtime: executing a compiled Plan, node by node, with every visit checkpointed.

* :mod:`flows.runtime.engine`  — the interpreter: the state-machine loop and the DAG scheduler,
  foreach windows and branch joins, resume from the store's checkpoint, cooperative cancel.
* :mod:`flows.runtime.bodies`  — what each node type does, one module per body kind.
* :mod:`flows.runtime.effects` — what a body returns and the services (and ports) it may call.
* :mod:`flows.runtime.context` — applying a node's writes: scope, schema, size.
* :mod:`flows.runtime.routing` — picking the next node (guards, conditions, `_next_node`).

This package never imports prefect: the engine gets an executor (each visit a Prefect task run,
:mod:`flows.prefect.executor`) and the bodies a ``Pauses`` port (:mod:`flows.prefect.pause`)
from the run owner, :mod:`flows.runs`.
"""

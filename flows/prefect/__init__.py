"""Prefect behind one boundary: the only package of Ergon that imports prefect.

* :mod:`~flows.prefect.config`      — the Prefect settings Ergon runs with (applied on import of
  this package, before any ``import prefect``).
* :mod:`~flows.prefect.server`      — the local Prefect server used when ``PREFECT_API_URL`` is unset.
* :mod:`~flows.prefect.build`       — Plan → Prefect flow (typed parameters), run in-process.
* :mod:`~flows.prefect.executor`    — each node visit a Prefect task run with the node's retry policy.
* :mod:`~flows.prefect.tagging`     — task-run tags without Prefect's per-task concurrency lease.
* :mod:`~flows.prefect.pause`       — waiting for a person: pause, own subflow, suspension.
* :mod:`~flows.prefect.workstreams` — an agent's workstream (sub-agent) as a flow run of its own.
* :mod:`~flows.prefect.resume`      — resuming a paused flow run with a task's answer.
* :mod:`~flows.prefect.leftovers`   — flow runs a dead process left open, given the store's final state.
* :mod:`~flows.prefect.api`         — Prefect's own client, configured by Prefect's settings, for calls
  from outside a flow run (resume, crash clean-up, health); its refusals as one-line errors.
* :mod:`~flows.prefect.cancel`      — cancelling a flow run.
* :mod:`~flows.prefect.deployments` — deployment entrypoints, ``prefect.yaml`` entries, work pools.
* :mod:`~flows.prefect.schedules`   — trigger schedules as Prefect schedules; reading and pausing them.
* :mod:`~flows.prefect.serve`       — ``ergon serve``'s Prefect runner.
* :mod:`~flows.prefect.secrets`     — ``prefect-secret:NAME`` / ``prefect-var:NAME`` references:
  Secret blocks and Variables, registered on import of this package (no Prefect import).

The rest of Ergon reaches Prefect through the ports it defines (the engine's ``Executor``, the
bodies' ``Pauses``) and through :mod:`flows.runs`, which starts runs on this package.
``tests/test_layering.py`` proves the boundary in a fresh interpreter.
"""

from flows.prefect.config import configure_prefect_env
from flows.prefect.secrets import register as _register_secret_references

configure_prefect_env()
# Every process that runs nodes imports this package: its keys and headers may name Prefect's
# Secret blocks and Variables (the lookups import prefect only when a value is needed).
_register_secret_references()

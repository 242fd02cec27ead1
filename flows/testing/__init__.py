"""``ergon test``: tests of definitions, written as YAML beside them and run in-process.

One concept per module, in the order a test goes through them:

* :mod:`~flows.testing.spec` — the ``*.test.yaml`` format, loaded with positions;
* :mod:`~flows.testing.checks` — what a test file names, checked against the definitions;
* :mod:`~flows.testing.doubles` — a case's tool and interaction stand-ins, and the calls counted;
* :mod:`~flows.testing.backend` — the run's executor and pauses without Prefect;
* :mod:`~flows.testing.on_prefect` — a ``prefect: true`` case through the real Prefect flow;
* :mod:`~flows.testing.runner` — every case through the real flow body on a temporary store;
* :mod:`~flows.testing.compare` — expected against actual, as readable differences;
* :mod:`~flows.testing.coverage` — the nodes and moves the cases took, per definition;
* :mod:`~flows.testing.junit` — the results as JUnit XML for CI systems;
* :mod:`~flows.testing.explore` — generated inputs through each definition (``--explore``);
* :mod:`~flows.testing.pytest_plugin` — the same cases as pytest items, in a project's ``pytest``.

Nothing here imports Prefect: a case runs in-process, without a Prefect server or a subprocess,
unless it asks for the real Prefect path (``prefect: true``); then :mod:`~flows.testing.on_prefect`
calls the compiled flow through :mod:`flows.prefect`, on the API ``ergon run`` would use.
"""

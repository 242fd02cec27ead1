"""One execution of a run, inside its flow body, written without Prefect.

* :mod:`~flows.execution.body`     — open the run's record, run the engine, record the end; what
  happens around it (schedules' retries, template submissions, supervision, answers, chains) is
  called through the ``run.*`` moments of :mod:`flows.moments`.
* :mod:`~flows.execution.recorder` — the store writer the engine gets; the only writer of a run's
  status while it executes.
* :mod:`~flows.execution.request`  — what travels from the starter to the flow body.
* :mod:`~flows.execution.inputs`   — checking a run's inputs against its definition.

The orchestrator adapter (:mod:`flows.prefect`) runs the body in a flow run; the run owner
(:mod:`flows.runs`) starts, resumes and stops runs through that adapter. Both are above this
package, which imports neither.
"""

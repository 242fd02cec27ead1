"""Triggers: what starts a run without a person typing `ergon run`.

A definition's ``triggers:`` (parsed and checked by the compiler, see ``compiler/ir.py`` and
``compiler/passes/triggers.py``) are served here:

* **cron / interval** — Prefect schedules (:mod:`.schedules`) on the definition's one deployment,
  one schedule per trigger, slugged ``trigger-<index>``, the trigger's ``input`` as the schedule's
  parameters. ``ergon serve`` serves them (:mod:`.serve`); ``ergon deploy`` puts the same
  schedules in ``prefect.yaml`` for workers. A scheduled flow run knows its trigger from the
  schedule slug Prefect records as the run's creator (:mod:`.origin`): the run is recorded with
  trigger ``schedule``, ``started_by`` = the trigger's ``as_user``, and is retried per the
  trigger's ``retry`` policy (:mod:`.retries`).
* **webhook** — a signed HTTP POST (:mod:`.webhooks`), served by ``ergon serve``.
* **on_complete** — dispatched by the finishing run's own process (:mod:`.chaining`).
* **on_submission_created / on_submission_updated** — dispatched by the process that creates or
  changes a submission of the trigger's form (:mod:`.submissions`).

``ergon schedules`` and the dashboard's Schedules page read and change trigger state through
:mod:`.control`. Trigger names are ``<definition>:<index>`` (:mod:`.refs`).
"""

"""Submissions (seed 000): instances of forms whose every value keeps its versions and where
they came from.

* :mod:`~flows.submissions.shape` — form data ↔ cells, checks against the form, ``group.field=VALUE``;
* :mod:`~flows.submissions.records` — create, view, set and export submissions (the CLI's and the
  dashboard's operations), which dispatch the submission triggers (:mod:`flows.triggers.submissions`);
* :mod:`~flows.submissions.merging` — one submission made of several of a form (a template run
  given several input submissions), every value a copy citing its original;
* :mod:`~flows.submissions.provenance` — a value's chain back through the steps that made it (and
  the merges that copied it) to the input values.

The rows live in :mod:`flows.store.submissions`; template runs write their steps' output
submissions through the run's recorder (:mod:`flows.runtime.bodies.template_step`).
"""

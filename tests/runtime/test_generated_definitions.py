"""The promise of ``ergon check`` on definitions nobody here wrote: what it passes runs as written.

Hypothesis draws folders of definitions from :mod:`definition_generator` (processes, pipelines,
workflows, their interactions, tools, child processes and chained definitions); for each, the
differential property of :mod:`differential`: when ``ergon check`` passes ``gen_main``, every
run of it on the offline model (random model choices, drawn human answers, drawn inputs) and of
a definition chained after it ends completed or failed by the *world*. A ``definition``,
``model`` or ``internal`` failure after a clean check is a checker (or runtime) bug; hypothesis
shrinks the folder to a small one, which then belongs in the golden fixtures with the fix.

The budget is fixed for CI: ``ERGON_GENERATED_DEFINITIONS`` folders (default 300), derandomized
and without an example database, so every CI run draws the same folders. The counts (how many
checked clean, refusals by code, how runs ended, the precision of ``maybe-unset`` and
``no-fallback``) are printed at the end of the session; ``benchmarks/soundness.py`` runs the
large budget.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

import soundness_report
from definition_generator import Generated, definitions
from differential import GENERATED, differential

pytestmark = pytest.mark.prefect

FOLDERS = int(os.environ.get("ERGON_GENERATED_DEFINITIONS") or 300)
#: who answers the tasks: an admin, so that every task is theirs to answer (and never the starter)
ANSWERER = "soundness-checker"


@pytest.fixture
def world(tmp_path, monkeypatch, prefect_api, store) -> Path:
    """The store, the Prefect server, an answerer; no background chains (``doc-1`` is stocked per folder)."""
    from flows import people, tokens

    people.add_user(ANSWERER, admin=True)
    monkeypatch.setenv("ERGON_TOKEN", tokens.create(ANSWERER).token)  # how `ergon tasks answer` proves who answers
    monkeypatch.delenv("ERGON_MODEL", raising=False)
    monkeypatch.setenv("ERGON_CHAIN_MAX_DEPTH", "0")  # the property starts the chained definition itself
    return tmp_path


def test_what_checks_clean_runs_as_written(world, request):
    folder = world / "definitions"

    @settings(max_examples=FOLDERS, deadline=None, derandomize=True, database=None,
              phases=[Phase.explicit, Phase.generate, Phase.shrink],
              suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow,
                                     HealthCheck.data_too_large, HealthCheck.filter_too_much])
    @given(generated=definitions(), data=st.data())
    def one_folder(generated: Generated, data: st.DataObject) -> None:
        outcome = differential(generated, data, folder)
        GENERATED.add(generated, outcome)
        assert not outcome.problems, "checks clean, but did not run as written:\n  " + "\n  ".join(outcome.problems)

    with soundness_report.Timer(request.node.nodeid):
        one_folder()

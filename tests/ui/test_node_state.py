"""What the run page says of a node, for every status a visit can have and every status its
run can be in (:func:`ui.route.node_state`): a node waiting for a person reads paused (waiting
for a person) however the run waits, and an open visit of an ended run is not running."""

from __future__ import annotations

import pytest

from flows.store.models import RUN_STATUSES
from ui.route import node_state

VISIT_STATUSES = ("running", "completed", "failed", "skipped", "paused", "cancelled")


def test_every_visit_status_is_covered():
    from typing import get_args

    from flows.store.models import VisitStatus

    assert set(get_args(VisitStatus)) == set(VISIT_STATUSES)


@pytest.mark.parametrize("visit", ["running", "paused"])
def test_a_node_with_an_open_task_of_a_paused_run_waits_for_a_person(visit):
    # running: the run's process blocks in Prefect's pause; paused: the run suspended
    assert node_state(visit, "paused", asks_person=True) == "paused (waiting for a person)"


def test_a_suspended_visit_waits_even_before_the_run_says_paused():
    assert node_state("paused", "running", asks_person=True) == "paused (waiting for a person)"


def test_a_paused_node_without_a_task_is_paused():
    # a sub-process node whose child run waits: the person is asked in the child
    assert node_state("running", "paused", asks_person=False) == "paused"


@pytest.mark.parametrize("run", ["pending", "running"])
def test_a_running_node_of_a_live_run_is_running(run):
    assert node_state("running", run, asks_person=False) == "running"


def test_cancel_requested():
    assert node_state("running", "cancelling", asks_person=False) == "running (cancel requested)"


@pytest.mark.parametrize(("run", "words"), [("crashed", "stopped: the run crashed"), ("failed", "stopped: the run failed"),
                                            ("cancelled", "stopped: the run was cancelled"),
                                            ("completed", "stopped: the run completed")])
@pytest.mark.parametrize("visit", ["running", "paused"])
def test_an_open_visit_of_an_ended_run_is_stopped(visit, run, words):
    assert node_state(visit, run, asks_person=True) == words


@pytest.mark.parametrize("visit", ["completed", "failed", "skipped", "cancelled"])
@pytest.mark.parametrize("run", RUN_STATUSES)
def test_a_finished_visit_says_how_it_finished(visit, run):
    assert node_state(visit, run, asks_person=False) == visit

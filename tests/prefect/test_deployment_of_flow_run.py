"""A deployment's flow body learns its deployment without asking the Prefect API.

The body names the deployment and work pool on the run before it takes the run up. It used to
read the deployment's name through ``prefect.runtime.deployment``, which asks the API with a new
client — one that fails at once while the server is away (a restart): the flow run failed before
the body took up its Ergon run, and that run stayed pending for good (found by
``tests/cluster/test_fleet.py``, restarting the server while flow runs started). The worker gives
the flow-run process the name in ``PREFECT__DEPLOYMENT_NAME``; the API is asked only without it.
"""

from __future__ import annotations

import uuid
from types import SimpleNamespace

import pytest


@pytest.fixture
def in_a_flow_run(monkeypatch):
    """A flow run of a deployment, as the flow-run process sees it; Prefect's API unreachable."""
    from prefect import context, runtime

    current = SimpleNamespace(flow_run=SimpleNamespace(id=uuid.uuid4(), deployment_id=uuid.uuid4(),
                                                       work_pool_name="pool-a", name="r", tags=[]),
                              flow=SimpleNamespace(name="greet"))
    monkeypatch.setattr(context.FlowRunContext, "get", classmethod(lambda cls: current))

    def unreachable():
        raise ConnectionError("the Prefect API is away")

    monkeypatch.setitem(runtime.deployment.FIELDS, "name", unreachable)
    return current


def test_the_deployment_name_comes_from_the_worker_given_environment(in_a_flow_run, monkeypatch):
    from flows.prefect.deployments import _deployment_of_current_run

    monkeypatch.setenv("PREFECT__DEPLOYMENT_NAME", "greet-prod")
    assert _deployment_of_current_run() == ("greet/greet-prod", "pool-a")


def test_without_it_the_api_is_asked(in_a_flow_run, monkeypatch):
    from flows.prefect.deployments import _deployment_of_current_run

    monkeypatch.delenv("PREFECT__DEPLOYMENT_NAME", raising=False)
    with pytest.raises(ConnectionError):
        _deployment_of_current_run()

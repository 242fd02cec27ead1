"""A run's process notices when the Prefect API it runs on goes away.

Prefect's client retries a refused connection with an exponential back-off — with Ergon's ten
retries (:mod:`flows.prefect.config`) about 34 minutes before one call gives up — and nothing in
Prefect's engine watches the API itself. A run waiting for a person polls Prefect for its resume;
with the server killed, that poll sat in the client's back-off and the process waited on a dead
address long after the task was answered elsewhere.

While a top-level run executes, :func:`watch` asks the API's health check every
:data:`~flows.settings.API_CHECK_SECONDS` (one GET, no retries, 2 s timeout:
:func:`flows.prefect.api.reachable`), beside the run:

* An API back at the same address within :func:`~flows.settings.api_lost_seconds` (60 s unless
  ``ERGON_API_LOST_SECONDS`` says otherwise) is simply taken up again: the calls in flight retry
  into it — a pause's poll finds the answer given meanwhile, a task run's state is recorded — and
  the run goes on. Any ``ergon`` command that needs Prefect restarts Ergon's local server on its
  old port (:func:`flows.prefect.server.start`), answering a task included.
* An API silent for longer is lost: the process stops waiting on it (:func:`fail_fast`: its
  client's retries are set to none, so the engine's last reports fail at once instead of
  retrying for half an hour), and the run's body is cancelled with the reason, which the run
  records as ``crashed`` (:mod:`flows.execution.body`). A crashed run resumes from its
  checkpoint — ``ergon runs resume``, or answering its task, which resumes it — and its answered
  tasks keep their answers.

Sub-process runs and subflows share their top-level run's process and its watchdog.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable
from typing import Any

from flows.settings import API_CHECK_SECONDS, api_lost_seconds

log = logging.getLogger("ergon.prefect")


async def watch(body: asyncio.Future[Any], api_url: str, lost: Callable[[str], None]) -> None:
    """Until ``body`` (the task executing the run) is done: when the API at ``api_url`` has not
    answered for :func:`~flows.settings.api_lost_seconds`, call ``lost`` with the reason, make the
    process stop waiting on the API and cancel ``body``."""
    from flows.prefect.api import reachable

    window = api_lost_seconds()
    answered_at = time.monotonic()
    said = False
    while not body.done():
        await asyncio.sleep(API_CHECK_SECONDS)
        if await asyncio.to_thread(reachable):
            if said:
                log.warning("Prefect's API at %s answers again: the run goes on", api_url)
            answered_at, said = time.monotonic(), False
            continue
        silent = time.monotonic() - answered_at
        if not said:  # once per outage: the run's log is not filled while the server is down
            log.warning("Prefect's API at %s does not answer; the run waits up to %.0f s for it to come back",
                        api_url, window)
            said = True
        if silent >= window:
            reason = f"Prefect's API at {api_url} did not answer for {silent:.0f} s (ERGON_API_LOST_SECONDS)"
            lost(reason)
            fail_fast()
            body.cancel(reason)
            return


def fail_fast() -> None:
    """This process stops retrying Prefect's API: every later call fails at once. Called when
    the process is about to end with the API unreachable (lost, or the process stopped while it
    is down), so that Prefect's engine, log and event workers do not hold it for their retries.
    Only this process's settings change (never the environment, which the processes it starts
    would inherit)."""
    import prefect.context
    from prefect.settings import PREFECT_CLIENT_MAX_RETRIES, PREFECT_LOGGING_TO_API_ENABLED

    current = prefect.context.get_settings_context()
    # the run's log lines would each print "Error logging to API" on stderr
    settings = current.settings.copy_with_update(
        updates={PREFECT_CLIENT_MAX_RETRIES: 0, PREFECT_LOGGING_TO_API_ENABLED: False})
    prefect.context.GLOBAL_SETTINGS_CONTEXT = prefect.context.SettingsContext(profile=current.profile,
                                                                            settings=settings)

"""A kill -9 harness for a large fan-out: a real ``ergon run`` of a ``foreach`` with
``task_runs: node`` killed with SIGKILL while its items run, then resumed with ``ergon runs
resume`` until the run ends — no item the store had completed before the kill may run again.

The run is :data:`DEFINITION`: one ``foreach`` over the run's ``items`` input (the numbers 0 to
``n`` - 1, given with ``ergon run --input-file``; an item's key is its number), :data:`WINDOW` in
flight, the whole node one Prefect task run. Each item calls ``fanout_mark`` (:data:`TOOL`, an async
tool: the items run on the process's event loop), which appends one line, its key, to a
*ledger*: a file outside the store, named by the run's ``ledger`` input, written with one
``write`` on an ``O_APPEND`` descriptor — so an item executed twice shows as two lines whatever
the store says. The run's ``seconds`` input makes each item pause up to that long around its
write (0 in the benchmark: the items are as short as they get; the CI test's few hundred items
pause, so that the kill finds some committed and some in flight).

One case (:meth:`Harness.run_case`) draws from ``random.Random(case)`` one or two kill moments,
each a share of the ``n`` items (5–95 %): the process executing the run is killed once the
ledger has that many lines. The kill is taken as an operator would meet it: the harness reads
which item visits the store has ``completed`` (straight from the SQLite file), sends SIGKILL to
the process group at once, waits for it to die, reads the completed items again — nothing
writes any more, so this second read is the set completed before the kill: the first read can
only have missed ends committed between the two, and nothing after the kill — and notes the
ledger's length then. It then lists the runs with ``ergon runs list`` (which marks the run
``crashed``) and starts ``ergon runs resume RUN_ID`` in a process group of its own; a second
moment kills that process the same way. The last resume is left to end.

What each case checks (:meth:`Harness.check_case`):

* every kill left the run ``crashed`` in ``ergon runs list``;
* the run ends ``completed``, outcome ``done``;
* each item has exactly one ``completed`` visit in the store and appears in the ledger at
  least once;
* an item the store had ``completed`` at a kill has no ledger line after that kill: it ran
  exactly once. An item in flight at the kill, or whose end the store had not yet committed
  (an item's end is group-committed: it waits for the next transaction or the flusher after
  ``flows.store.visits.FLUSH_AFTER``), may run again — at-least-once for an unfinished
  checkpoint; the report counts these;
* afterwards no visit of the run is left ``running``, no run of the store is ``pending``,
  ``running`` or ``paused`` without a live process, and no Prefect flow run of the definition
  made during the case is left ``Running``, ``Pending`` or ``Paused``.

The store must be SQLite (the harness reads its file directly, read-only, to take the snapshot
as close to the kill as it can). ``tests/reliability/test_kill_nine_fanout.py`` runs a case or
two of a few hundred items in CI; ``benchmarks/kill_nine_fanout.py`` runs cases of 10,000 items
and prints the figures of docs/benchmarks.md.
"""

from __future__ import annotations

import json
import os
import random
import signal
import sqlite3
import subprocess
import sys
import time
from collections import Counter
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from kill_nine import stuck_runs

NAME = "kill_fanout"
#: Items in flight at once.
WINDOW = 100
#: How long one case may take before it is a hang.
CASE_SECONDS = 900.0

DEFINITION = f"""
format_version: 1
process: {NAME}
initial: fan
context:
  schema:
    type: object
    properties:
      ledger: {{type: string}}
      items: {{type: array, items: {{type: integer}}}}
      seconds: {{type: number}}
    required: [ledger, items, seconds]
nodes:
  fan:
    type: foreach
    foreach: items
    as: item
    item_id: "{{{{ item }}}}"
    max_concurrency: {WINDOW}
    task_runs: node
    node:
      type: tool
      tool: fanout_mark
      input: {{ledger: "{{{{ ledger }}}}", key: "{{{{ item }}}}", seconds: "{{{{ seconds }}}}"}}
    transitions: [{{to: done}}]
  done: {{type: final}}
"""

TOOL = '''"""The fan-out kill -9 harness's side effect: one ledger line per executed item."""

import asyncio
import os

from flows.tools import tool


@tool
async def fanout_mark(ledger: str, key: int, seconds: float = 0.0) -> dict:
    """Append the line `key` to the ledger file, one write on an O_APPEND descriptor; with
    `seconds`, between two halves of a pause of up to that long (spread by the key)."""
    pause = seconds * (key * 7919 % 100) / 100
    await asyncio.sleep(pause / 2)
    fd = os.open(ledger, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        os.write(fd, (str(key) + "\\n").encode())
    finally:
        os.close(fd)
    await asyncio.sleep(pause / 2)
    return {"key": key}
'''


def items(n: int) -> list[int]:
    """The run's items, 0 to ``n`` - 1 (their keys are their numbers): integers, so that 10,000 of
    them fit a run's inputs, which are capped at 64 KB like its context."""
    if not 0 < n <= 10_000:
        raise ValueError(f"n must be 1..10,000, not {n}")
    return list(range(n))


def plan(case: int) -> list[float]:
    """The kills of ``case``: one or two shares of the items, ascending, each in 5–95 %."""
    rng = random.Random(case)
    return sorted(round(rng.uniform(0.05, 0.95), 3) for _ in range(rng.choice([1, 2])))


# ------------------------------------------------------------------------------- reports


@dataclass
class Kill:
    share: float  # the planned moment: this share of n ledger lines
    what: str  # the process killed
    seconds: float  # after that process started
    lines: int  # ledger lines when the harness saw the moment come
    completed_just_before: int  # items completed in the store, read just before the SIGKILL
    completed: set[str]  # ... and read after it: the items completed before the kill
    boundary: int  # ledger lines once the process was dead
    unconfirmed: int  # items with a ledger line by then but no completed visit: they may run again
    listed: str  # the run's status in `ergon runs list` afterwards


@dataclass
class CaseReport:
    case: int
    n: int
    shares: list[float]
    kills: list[Kill] = field(default_factory=list)
    run_id: str | None = None
    first_seconds: float = 0.0  # the first `ergon run` until it was killed (or ended)
    resume_seconds: float = 0.0  # the last `ergon runs resume`, from its start to its end
    seconds: float = 0.0
    repeated: int = 0  # items with more than one ledger line
    problems: list[str] = field(default_factory=list)

    def describe(self) -> str:
        kills = "; ".join(
            f"at {k.lines:,} lines ({k.lines / self.n:.0%}), {k.what} +{k.seconds:.2f} s: "
            f"{len(k.completed):,} completed ({k.completed_just_before:,} just before the SIGKILL), "
            f"{k.unconfirmed} ran but not completed, runs list: {k.listed}"
            for k in self.kills) or "no kill landed"
        return (f"case {self.case} (seed {self.case}), {self.n:,} items, plan "
                f"{', '.join(f'{s:.0%}' for s in self.shares)}: {kills}; repeated {self.repeated}; "
                f"resume to the end {self.resume_seconds:.1f} s; case {self.seconds:.1f} s; run {self.run_id}")


# ------------------------------------------------------------------------------- the harness


class Harness:
    """Runs cases of ``n`` items against one store, Prefect API and workspace (``env`` is the
    ``ergon`` processes' environment: ``ERGON_DATABASE_URL`` or ``ERGON_HOME``,
    ``ERGON_DEFINITIONS``, ``PREFECT_API_URL``)."""

    def __init__(self, env: dict[str, str], workspace: Path, n: int, seconds: float = 0.0):
        from sqlalchemy.engine import make_url

        from flows.store import db

        self.env = {**env, "COLUMNS": "200"}
        self.workspace = workspace
        self.n = n
        self.seconds = seconds
        self.items = items(n)
        self.keys = [str(i) for i in self.items]
        url = make_url(db.database_url())
        if not url.drivername.startswith("sqlite") or not url.database:
            raise ValueError(f"the fan-out kill harness reads a SQLite store, not {url.drivername}")
        self.db_path = url.database
        (workspace / f"{NAME}.yaml").write_text(DEFINITION, encoding="utf-8")
        (workspace / "tools").mkdir(exist_ok=True)
        (workspace / "tools" / "kill_fanout_tools.py").write_text(TOOL, encoding="utf-8")
        (workspace / "ledgers").mkdir(exist_ok=True)
        self.log = workspace / "harness.log"

    # ---------------------------------------------------------------- processes
    def _spawn(self, args: list[str]) -> subprocess.Popen:
        """``ergon ARGS`` in a process group of its own (its output to the harness log)."""
        with open(self.log, "ab") as log:
            log.write(f"\n{_now()} $ ergon {' '.join(args)} &\n".encode())
            return subprocess.Popen([sys.executable, "-m", "flows.cli", *args], env=self.env, stdout=log,
                                    stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, start_new_session=True)

    def ergon(self, args: list[str], timeout: float = 120) -> subprocess.CompletedProcess:
        done = subprocess.run([sys.executable, "-m", "flows.cli", *args], env=self.env, capture_output=True,
                              text=True, timeout=timeout)
        with open(self.log, "a", encoding="utf-8") as log:
            log.write(f"\n{_now()} $ ergon {' '.join(args)} -> {done.returncode}\n{done.stdout[-2000:]}"
                      f"{done.stderr[-2000:]}")
        return done

    def listed_status(self, run_id: str) -> str:
        listed = self.ergon(["runs", "list", "--json", "--definition", NAME, "--limit", "500"])
        if listed.returncode != 0:
            return f"`runs list` exited {listed.returncode}"
        rows = {r["run_id"]: r for r in json.loads(listed.stdout)["runs"]}
        return rows[run_id]["status"] if run_id in rows else "not recorded"

    # ---------------------------------------------------------------- the store, read-only
    def _query(self, sql: str, *args: Any) -> list[tuple]:
        con = sqlite3.connect(f"file:{self.db_path}?mode=ro", uri=True, timeout=30)
        try:
            return con.execute(sql, args).fetchall()
        finally:
            con.close()

    def run_of(self, ledger: Path) -> str | None:
        """The case's run (its ``ledger`` input names it), None until one is recorded."""
        rows = self._query("SELECT id FROM runs WHERE definition_name = ? AND json_extract(inputs, '$.ledger') = ?",
                           NAME, str(ledger))
        return rows[0][0] if rows else None

    def completed_items(self, run_id: str) -> set[str]:
        """The item keys whose visit the store has ``completed``."""
        return {k for (k,) in self._query(
            "SELECT item_key FROM node_visits WHERE run_id = ? AND parent_visit_id IS NOT NULL AND status = 'completed'",
            run_id)}

    # ---------------------------------------------------------------- the case
    def run_case(self, case: int, shares: list[float] | None = None) -> CaseReport:
        """One case: its kills are :func:`plan` (``case``), or ``shares`` when given ([]: no kill)."""
        report = CaseReport(case, self.n, plan(case) if shares is None else shares)
        started = time.monotonic()
        since = datetime.now(timezone.utc)
        ledger = self.workspace / "ledgers" / f"case-{case}.txt"
        ledger.unlink(missing_ok=True)
        inputs = self.workspace / "ledgers" / f"case-{case}.json"
        inputs.write_text(json.dumps({"ledger": str(ledger), "items": self.items, "seconds": self.seconds}), encoding="utf-8")
        what = "ergon run"
        proc = self._spawn(["run", NAME, "--input-file", str(inputs), "--json"])
        spawned = time.monotonic()
        try:
            for share in report.shares:
                target = max(int(share * self.n), _lines(ledger) + 1)
                while _lines(ledger) < target and proc.poll() is None:
                    if time.monotonic() - started > CASE_SECONDS:
                        report.problems.append(f"the ledger stopped at {_lines(ledger):,} lines before {target:,}")
                        return report
                    time.sleep(0.002)
                if proc.poll() is not None:
                    break  # it ended before the moment came: the kill did not land
                report.run_id = report.run_id or self.run_of(ledger)
                if report.run_id is None:
                    report.problems.append("items ran before the run was recorded")
                    return report
                kill = self._kill(proc, what, spawned, report.run_id, ledger, share)
                report.kills.append(kill)
                if len(report.kills) == 1:
                    report.first_seconds = kill.seconds
                if kill.listed != "crashed":
                    report.problems.append(f"after the kill at {share:.0%} `runs list` shows the run {kill.listed}, "
                                           "its process dead")
                    return report
                what = "ergon runs resume"
                proc = self._spawn(["runs", "resume", report.run_id, "--json"])
                spawned = time.monotonic()
            try:
                proc.wait(timeout=max(1.0, CASE_SECONDS - (time.monotonic() - started)))
            except subprocess.TimeoutExpired:
                report.problems.append(f"{what} did not end within {CASE_SECONDS:.0f} s")
                return report
            if report.kills:
                report.resume_seconds = time.monotonic() - spawned
            else:
                report.first_seconds = time.monotonic() - spawned
            if proc.returncode != 0:
                report.problems.append(f"{what} exited {proc.returncode}")
        finally:
            if proc.poll() is None:
                _kill_group(proc)
            report.seconds = time.monotonic() - started
        report.run_id = report.run_id or self.run_of(ledger)
        self.check_case(report, ledger, since)
        return report

    def _kill(self, proc: subprocess.Popen, what: str, spawned: float, run_id: str, ledger: Path,
              share: float) -> Kill:
        lines = _lines(ledger)
        just_before = len(self.completed_items(run_id))
        _kill_group(proc)  # at once: the read above is the last before it
        seconds = time.monotonic() - spawned
        completed = self.completed_items(run_id)  # nothing writes any more: what the kill left
        boundary = _lines(ledger)
        ran = set(ledger.read_text(encoding="utf-8").split("\n")[:boundary])
        with open(self.log, "a", encoding="utf-8") as log:
            log.write(f"\n{_now()} kill -9 {what} (pid {proc.pid}) at {lines} ledger lines: {len(completed)} "
                      f"items completed ({just_before} just before)\n")
        return Kill(share, what, seconds, lines, just_before, completed, boundary, len(ran - completed),
                    self.listed_status(run_id))

    # ---------------------------------------------------------------- checks
    def check_case(self, report: CaseReport, ledger: Path, since: datetime) -> None:
        problems = report.problems
        if report.run_id is None:
            problems.append("no run was recorded")
            return
        [(status, outcome, error)] = self._query("SELECT status, outcome, error FROM runs WHERE id = ?", report.run_id)
        if (status, outcome) != ("completed", "done"):
            problems.append(f"the run ended {status}/{outcome}: {error}")
        lines = ledger.read_text(encoding="utf-8").split("\n")[:-1] if ledger.exists() else []
        counts = Counter(lines)
        report.repeated = sum(1 for k in self.keys if counts[k] > 1)
        if missing := [k for k in self.keys if counts[k] < 1]:
            problems.append(f"{len(missing)} items never ran, e.g. {missing[:5]}")
        if stray := sorted(set(counts) - set(self.keys)):
            problems.append(f"ledger lines that are no item: {stray[:5]}")
        for kill in report.kills:
            again = Counter(lines[kill.boundary:])
            ran = sorted(kill.completed & set(again))
            if ran:
                problems.append(f"{len(ran)} items completed before the kill at {kill.share:.0%} ran again, "
                                f"e.g. {', '.join(f'{k} ({counts[k]} lines)' for k in ran[:5])}")
        visits = self._query("SELECT item_key, status FROM node_visits WHERE run_id = ? AND parent_visit_id IS NOT NULL",
                             report.run_id)
        done = Counter(k for k, s in visits if s == "completed")
        if wrong := [(k, done[k]) for k in self.keys if done[k] != 1]:
            problems.append(f"{len(wrong)} items have not exactly one completed visit, e.g. {wrong[:5]}")
        parents = self._query("SELECT status FROM node_visits WHERE run_id = ? AND parent_visit_id IS NULL",
                              report.run_id)
        still = Counter(s for (s,) in parents) + Counter(s for _, s in visits)
        if open_ := {s: n for s, n in still.items() if s in ("running", "pending")}:
            problems.append(f"visits left open: {open_}")
        problems.extend(stuck_runs())
        problems.extend(stuck_flow_runs(since, len(report.kills) + 1))


def stuck_flow_runs(since: datetime, processes: int) -> list[str]:
    """Prefect flow runs of the definition made since ``since`` still ``Running``, ``Pending`` or
    ``Paused`` (with every process of the case gone, nothing executes them); and fewer than one
    for each of the case's ``processes`` (``ergon run`` and each resume): the check found none of
    them, so it checked nothing."""
    from prefect.client.orchestration import get_client
    from prefect.client.schemas.filters import FlowFilter, FlowFilterName
    from prefect.client.schemas.sorting import FlowRunSort

    with get_client(sync_client=True) as client:  # newest first: the case's own are the first few
        rows = client.read_flow_runs(flow_filter=FlowFilter(name=FlowFilterName(any_=[NAME])),
                                     sort=FlowRunSort.EXPECTED_START_TIME_DESC, limit=50)
    rows = [r for r in rows if r.created is not None and r.created >= since]
    problems = [f"Prefect flow run {r.id} ({r.name}) is still {r.state.type.value}" for r in rows
                if r.state is not None and r.state.type.value in ("RUNNING", "PENDING", "PAUSED")]
    if len(rows) < processes:
        problems.append(f"Prefect has {len(rows)} flow runs of the case, fewer than its {processes} processes")
    return problems


def _kill_group(proc: subprocess.Popen) -> None:
    """SIGKILL to the process group of ``proc`` (it leads one of its own); returns once it is reaped."""
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    proc.wait(timeout=60)


def _lines(ledger: Path) -> int:
    """The ledger's complete lines."""
    try:
        return ledger.read_bytes().count(b"\n")
    except FileNotFoundError:
        return 0


def _now() -> str:
    return datetime.now().strftime("%H:%M:%S.%f")[:-3]

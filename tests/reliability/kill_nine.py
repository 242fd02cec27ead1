"""A kill -9 harness: real ``ergon`` processes killed with SIGKILL at seeded random moments of a
multi-node run with side effects, then found, answered and resumed until the run ends.

The run is :data:`DEFINITION`: a tool node, a foreach of three items (two at a time), a human
task, a parallel branch of two tool nodes, a tool node, a final node. Every tool node calls
``step`` (:data:`TOOL`), which appends one line naming the node (``fan[b]`` for an item,
``ship[notify]`` for a branch) to a *ledger*: a file outside the store, named by the run's
input, so a node executed twice shows as two lines whatever the store says.

One case (:func:`run_case`) draws from ``random.Random(case)`` a plan of one to three kills.
A kill is a moment — an event and an offset after it — and hits the process executing the run
at that moment:

* ``spawn`` — 0–2.5 s after the process started: during start, often before the run is even
  recorded, or before its Prefect flow run exists;
* ``pending`` — after the run is recorded ``pending``, before its flow body marks it running;
* ``flow`` — after Prefect has the run's flow run, while the run is still ``pending`` (its flow
  body has not yet recorded the flow run);
* ``node:<id>`` — after a visit of that node started: during node execution (for ``fan`` and
  ``ship``, while items or branches are in flight);
* ``pause`` — after the run waits at the human task;
* ``answer`` — after the harness started answering the task of a live waiting run: while the
  answer is recorded, on its way to the process, or the process goes on with it.

The processes are an ``ergon run`` (the first, and a fresh one when the kill came before the run
was recorded), ``ergon runs resume`` (started by the harness, in a process group of its own) and
the background resume ``ergon tasks answer`` starts for a run that stopped while it waited.
While a process lives, the harness runs crash detection (what ``ergon runs list`` runs, and the
dashboard's inbox for a task's run) at every look, every 50 ms or so, as a person watching the
runs would. After a
kill — before reaping the killed process, a zombie meanwhile, as the child of a dashboard or a
webhook server that started a run is until that parent waits for it — it lists the runs with
``ergon runs list`` and goes on the way an operator would: a stopped run with an open task is
answered with ``ergon tasks answer`` (the CLI's answer path resumes it from its checkpoint); any
other stopped run is resumed with ``ergon runs resume``; a live run waiting at the task is
answered the same way, in the background. When the plan is spent the run is left to end.

What each case checks (:meth:`Harness.check_case`):

* crash detection never marked the run ``crashed`` while a process executed it;
* every kill left the run ``crashed`` in ``ergon runs list`` (or it had ended, or was not yet
  recorded): never ``pending``, ``running`` or ``paused`` with its process dead;
* the run ends ``completed`` with outcome ``done`` and the context the definition makes;
* a step whose visit the store had ``completed`` just before a kill never runs again: no ledger
  line of it comes after that moment. A step killed *while it executed* may run again — its
  side effect may have happened before the kill, its checkpoint not: that is at-least-once
  delivery for an unfinished node, and it is allowed (every step is checked to have run at
  least once; the table counts these re-executions);
* each node and item has one completed visit in the store; one task was asked, and answered
  (an answer given just before a kill is not asked for again);
* afterwards no run in the store is ``pending``, ``running`` or ``paused`` without a live owner
  process (a zombie is not one), and no Prefect flow run of the definition is left ``Running``,
  ``Pending`` or ``Paused``.

A case is reproducible from its number: the plan is drawn from it alone (the moments hit are
times, so the exact instruction a kill lands on varies; the report says what state each kill
found). ``tests/reliability/test_kill_nine.py`` runs a few cases in CI;
``benchmarks/kill_nine.py`` runs more and prints the figures of docs/benchmarks.md.
"""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import time
from collections import Counter
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

NAME = "kill_nine"
ITEMS = ["a", "b", "c"]
BRANCHES = ["invoice", "notify"]
#: The top-level nodes in the order the run visits them.
ROUTE = ["prepare", "fan", "review", "ship", "archive", "done"]
#: Seconds a step takes (half before its ledger line, half after: a kill can land on either side).
STEP_SECONDS = 0.4

DEFINITION = f"""
format_version: 1
process: {NAME}
initial: prepare
context:
  schema:
    type: object
    properties:
      ledger: {{type: string}}
      items: {{type: array, items: {{type: string}}}}
      prepared: {{type: string}}
      results: {{type: array}}
      decision: {{type: string}}
      shipped: {{type: array}}
      archived: {{type: string}}
    required: [ledger]
  initial: {{items: {json.dumps(ITEMS)}}}
nodes:
  prepare:
    type: tool
    tool: step
    input: {{ledger: "{{{{ ledger }}}}", name: prepare, key: prepared, seconds: {STEP_SECONDS}}}
    writes: [prepared]
    transitions: [{{to: fan}}]
  fan:
    type: foreach
    foreach: items
    as: item
    item_id: "{{{{ item }}}}"
    max_concurrency: 2
    node:
      type: tool
      tool: step
      input: {{ledger: "{{{{ ledger }}}}", name: "fan[{{{{ item }}}}]", key: item, seconds: {STEP_SECONDS}}}
    collect: results
    writes: [results]
    transitions: [{{to: review}}]
  review:
    type: human_task
    task:
      title: "Review the {{{{ results | length }}}} results"
      description: Approve to ship.
      fields:
        - {{name: decision, type: select, required: true, options: [approve, reject]}}
    writes: [decision]
    transitions:
      - {{to: ship, guard: {{"==": [{{var: decision}}, approve]}}}}
      - {{to: rejected, guard: {{"==": [{{var: decision}}, reject]}}}}
  ship:
    type: branch
    branches:
      - {{id: invoice, node: {{type: tool, tool: step, input: {{ledger: "{{{{ ledger }}}}", name: "ship[invoice]", key: sent, seconds: {STEP_SECONDS}}}}}}}
      - {{id: notify, node: {{type: tool, tool: step, input: {{ledger: "{{{{ ledger }}}}", name: "ship[notify]", key: sent, seconds: {STEP_SECONDS}}}}}}}
    collect: shipped
    writes: [shipped]
    transitions: [{{to: archive}}]
  archive:
    type: tool
    tool: step
    input: {{ledger: "{{{{ ledger }}}}", name: archive, key: archived, seconds: {STEP_SECONDS}}}
    writes: [archived]
    transitions: [{{to: done}}]
  done: {{type: final}}
  rejected: {{type: final}}
"""

TOOL = '''"""The kill -9 harness's side effect: one ledger line per executed step."""

import os
import time

from flows.tools import tool


@tool
def step(ledger: str, name: str, key: str, seconds: float = 0.0) -> dict:
    """Append `name` to the ledger file (between two halves of `seconds`); returns {key: name}."""
    time.sleep(seconds / 2)
    with open(ledger, "a", encoding="utf-8") as fh:
        fh.write(f"{name} {os.getpid()}\\n")
    time.sleep(seconds / 2)
    return {key: name}
'''

#: Every ledger name a completed run has, with the store's key of its visit (node, item).
STEPS = {"prepare": ("prepare", None), **{f"fan[{i}]": ("fan", i) for i in ITEMS},
         **{f"ship[{b}]": ("ship", b) for b in BRANCHES}, "archive": ("archive", None)}
EXPECTED_CONTEXT = {"prepared": "prepare", "results": [{"item": f"fan[{i}]"} for i in ITEMS],
                    "decision": "approve", "archived": "archive"}

#: The events a kill waits for, and the longest offset drawn after each (seconds).
OFFSETS = {"spawn": 2.5, "pending": 0.8, "flow": 0.3, "node:prepare": 0.5, "node:fan": 0.8, "pause": 2.0, "answer": 3.0,
           "node:ship": 0.6, "node:archive": 0.5}
#: How long one case may take before it is a hang.
CASE_SECONDS = 300.0
_STUCK = "stuck"


@dataclass(frozen=True)
class Moment:
    event: str
    offset: float

    def __str__(self) -> str:
        return f"{self.event}+{self.offset:.2f}s"


def plan(case: int) -> list[Moment]:
    """The kills of ``case``: one to three moments, in the order the run can reach them."""
    rng = random.Random(case)
    moments: list[Moment] = []
    position = 0  # the route index the run is at, at the latest
    for _ in range(rng.choice([1, 1, 2, 2, 3])):
        events = [e for e in OFFSETS if e in _STARTING or _rank(e) >= position]
        event = rng.choice(events)
        moments.append(Moment(event, round(rng.uniform(0, OFFSETS[event]), 2)))
        position = max(position, _rank(event))
    return moments


_STARTING = ("spawn", "pending", "flow")


def _rank(event: str) -> int:
    if event in ("pause", "answer"):
        return ROUTE.index("review")
    if event.startswith("node:"):
        return ROUTE.index(event[5:])
    return 0


# ------------------------------------------------------------------------------- processes


@dataclass
class Owner:
    """A process executing (or about to execute) the run: the harness's child, or a background
    resume another ``ergon`` started (found by its command line)."""

    pid: int
    what: str
    started: float
    child: subprocess.Popen | None = None
    answered: bool = False  # the harness answered the task while this process waited
    started_at: datetime = field(default_factory=lambda: datetime.now(timezone.utc))

    def alive(self) -> bool:
        return process_alive(self.pid)  # never reaps: a zombie child is dead, not gone

    def kill(self) -> None:
        """SIGKILL to its process group (whatever it started goes too); returns once it is dead —
        a zombie until :meth:`reap`, like the child of a dashboard that has not waited for it."""
        try:
            os.killpg(self.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        deadline = time.monotonic() + 30
        while self.alive() and time.monotonic() < deadline:
            time.sleep(0.01)

    def reap(self) -> None:
        if self.child is not None:
            self.child.communicate(timeout=60)

    def peak_mb(self) -> float:
        return _vm_hwm(self.pid)


def process_alive(pid: int) -> bool:
    """Whether ``pid`` is a process that still executes (a zombie does not)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return False
    return fields[0] not in ("Z", "X")


def _vm_hwm(pid: int) -> float:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    except OSError:
        pass
    return 0.0


def _background_resume(run_id: str) -> int | None:
    """The pid of a live ``ergon runs resume RUN`` that this harness did not start."""
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            argv = (entry / "cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if b"flows.cli" in argv and b"resume" in argv and run_id.encode() in argv and process_alive(int(entry.name)):
            return int(entry.name)
    return None


# ------------------------------------------------------------------------------- one case


@dataclass
class Kill:
    moment: Moment
    found: str  # what the store said when the kill landed
    after: str  # the run's status in `ergon runs list` afterwards
    completed: set[str]  # the steps the store had completed just before
    ledger_lines: int  # and the ledger's length then


@dataclass
class CaseReport:
    case: int
    moments: list[Moment]
    kills: list[Kill] = field(default_factory=list)
    run_id: str | None = None
    seconds: float = 0.0
    peak_mb: float = 0.0
    problems: list[str] = field(default_factory=list)
    ledger: list[str] = field(default_factory=list)
    details: list[str] = field(default_factory=list)

    def describe(self) -> str:
        kills = "; ".join(f"{k.moment} hit {k.found} -> {k.after}" for k in self.kills) or "none landed"
        return (f"case {self.case} (seed {self.case}): plan {', '.join(map(str, self.moments))}; kills: {kills}; "
                f"run {self.run_id}; {self.seconds:.1f} s")


class Harness:
    """Runs cases against one store, Prefect API and workspace (``env`` is the ``ergon``
    processes' environment: ``ERGON_DATABASE_URL``, ``ERGON_DEFINITIONS``, ``PREFECT_API_URL``)."""

    def __init__(self, env: dict[str, str], workspace: Path):
        self.env = {**env, "COLUMNS": "200"}
        self.workspace = workspace
        (workspace / f"{NAME}.yaml").write_text(DEFINITION, encoding="utf-8")
        (workspace / "tools").mkdir(exist_ok=True)
        (workspace / "tools" / "kill_nine_tools.py").write_text(TOOL, encoding="utf-8")
        (workspace / "ledgers").mkdir(exist_ok=True)
        self.log = workspace / "harness.log"
        self._runs: dict[Path, str] = {}

    # ---------------------------------------------------------------- commands
    def _spawn(self, args: list[str], what: str) -> Owner:
        with open(self.log, "ab") as log:
            log.write(f"\n{_now()} $ ergon {' '.join(args)} &\n".encode())
            child = subprocess.Popen([sys.executable, "-m", "flows.cli", *args], env=self.env, stdout=log,
                                     stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, start_new_session=True)
        return Owner(child.pid, what, time.monotonic(), child)

    def ergon(self, args: list[str], timeout: float = 120) -> subprocess.CompletedProcess:
        done = subprocess.run([sys.executable, "-m", "flows.cli", *args], env=self.env, capture_output=True,
                              text=True, timeout=timeout)
        with open(self.log, "a", encoding="utf-8") as log:
            log.write(f"\n{_now()} $ ergon {' '.join(args)} -> {done.returncode}\n{done.stdout[-2000:]}"
                      f"{done.stderr[-2000:]}")
        return done

    def listed_status(self, run_id: str | None) -> str:
        listed = self.ergon(["runs", "list", "--json", "--definition", NAME, "--limit", "500"])
        if listed.returncode != 0:
            return f"`runs list` exited {listed.returncode}"
        rows = {r["run_id"]: r for r in json.loads(listed.stdout)["runs"]}
        return rows[run_id]["status"] if run_id in rows else "not recorded"

    # ---------------------------------------------------------------- the store
    def _run_of(self, ledger: Path) -> Any:
        """The case's run (its ``ledger`` input names it), None until one is recorded."""
        from flows.store import runs as run_store

        if (known := self._runs.get(ledger)) is not None:
            return run_store.get_run(known)
        rows, _ = run_store.list_runs(definition=NAME, limit=500)
        mine = [r for r in rows if (r.inputs or {}).get("ledger") == str(ledger)]
        if mine:
            self._runs[ledger] = mine[0].id
        return mine[0] if mine else None

    @staticmethod
    def _open_task(run_id: str) -> Any:
        from flows.store import tasks as task_store

        return next((t for t in task_store.tasks_for_run(run_id) if t.status in ("pending", "in_progress")), None)

    @staticmethod
    def _completed_steps(run_id: str) -> set[str]:
        """The ledger names of the visits the store has ``completed``."""
        from flows.store import visits as visit_store

        visits = visit_store.visits_for_run(run_id)
        parents = {v.id: v.node_id for v in visits}
        done = set()
        for v in visits:
            if v.status != "completed":
                continue
            node = parents.get(v.parent_visit_id, v.node_id) if v.parent_visit_id else v.node_id
            name = f"{node}[{v.item_key}]" if v.parent_visit_id else node
            if name in STEPS:
                done.add(name)
        return done

    def _found(self, ledger: Path) -> str:
        """What the store says about the run now (for the report)."""
        from flows.store import visits as visit_store

        run = self._run_of(ledger)
        if run is None:
            return "no run recorded"
        running = [f"{v.node_id}[{v.item_key}]" if v.item_key else v.node_id
                   for v in visit_store.visits_for_run(run.id) if v.status == "running"]
        return run.status + (f" in {','.join(running)}" if running else "")

    def _reached(self, event: str, ledger: Path, owner: Owner, seen: set[str]) -> bool | None:
        """Whether ``event`` happened in ``owner``'s execution (None: it can no longer happen)."""
        from flows.store import visits as visit_store

        if event == "spawn":
            return True
        run = self._run_of(ledger)
        if run is None:
            return None if not owner.alive() else False
        if event in ("pending", "flow"):
            if run.status == "pending" and (event == "pending" or _flow_runs(ledger, since=owner.started_at)):
                return True
            return None if run.status not in ("crashed", "failed", "pending") or not owner.alive() else False
        visits = [v for v in visit_store.visits_for_run(run.id) if v.parent_visit_id is None and v.id not in seen]
        if event in ("pause", "answer"):
            if event == "answer" and owner.answered:
                return True
            if event == "pause" and run.status == "paused" and self._open_task(run.id) is not None:
                return True
            beyond = {v.node_id for v in visits} & set(ROUTE[ROUTE.index("review") + 1:])
        else:
            node = event[5:]
            if any(v.node_id == node and v.status == "running" for v in visits):
                return True
            beyond = {v.node_id for v in visits} & set(ROUTE[ROUTE.index(node) + 1:])
        if beyond or run.status in ("completed", "failed", "cancelled") or not owner.alive():
            return None
        return False

    # ---------------------------------------------------------------- the case
    def run_case(self, case: int) -> CaseReport:
        from flows.store import visits as visit_store

        report = CaseReport(case, plan(case))
        started = time.monotonic()
        ledger = self.workspace / "ledgers" / f"case-{case}.txt"
        ledger.unlink(missing_ok=True)
        owner: Owner | None = None
        seen: set[str] = set()
        moments = list(report.moments)
        answering: subprocess.Popen | None = None  # a person answering the task of the live run
        try:
            while not report.problems:
                if time.monotonic() - started > CASE_SECONDS:
                    report.problems.append(f"no end within {CASE_SECONDS:.0f} s ({self._found(ledger)})")
                    break
                run = self._run_of(ledger)
                report.run_id = run.id if run is not None else None
                if owner is None or not owner.alive():
                    if owner is not None:
                        owner.reap()
                    if run is not None and run.status in ("completed", "failed", "cancelled"):
                        break
                    owner = self._next_owner(run, ledger, report)
                    if owner is None:
                        time.sleep(0.05)
                        continue
                    seen = {v.id for v in visit_store.visits_for_run(run.id)} if run is not None else set()
                report.peak_mb = max(report.peak_mb, owner.peak_mb())
                self._observe(owner, report)
                if moments:
                    reached = self._reached(moments[0].event, ledger, owner, seen)
                    if reached is None:  # the run went past it: the next moment
                        moments.pop(0)
                        continue
                    if reached:
                        self._kill(moments.pop(0), owner, ledger, report)
                        owner = None
                        continue
                if answering is not None and answering.poll() is not None:
                    if answering.returncode != 0:
                        report.problems.append(f"`tasks answer` exited {answering.returncode}")
                    answering = None
                # a live run waiting at the task, and no kill wanted there now: a person answers
                # (in the background: a kill may land while the answer is on its way)
                if run is not None and run.status == "paused" and answering is None \
                        and not (moments and moments[0].event == "pause"):
                    task = self._open_task(run.id)
                    if task is not None:
                        answering = self._answer_in_background(task)
                        owner.answered = True
                time.sleep(0.05)
        finally:
            if owner is not None:
                owner.kill()
                owner.reap()
            if answering is not None:
                answering.communicate(timeout=120)
        report.seconds = time.monotonic() - started
        report.ledger = _ledger_lines(ledger)
        if not any(p.startswith(_STUCK) for p in report.problems):
            self.check_case(report)
        return report

    def _kill(self, moment: Moment, owner: Owner, ledger: Path, report: CaseReport) -> None:
        """Kill ``owner`` ``moment.offset`` seconds from now, then list the runs as an operator would."""
        self._sleep_alive(owner, moment.offset)
        if not owner.alive():
            return
        run = self._run_of(ledger)
        found = self._found(ledger)
        # first what the store has completed, then the ledger's length: a step completed by then
        # wrote its line before, so a line of it past that length is a second execution
        completed = self._completed_steps(run.id) if run is not None else set()
        lines = _ledger_lines(ledger)
        report.peak_mb = max(report.peak_mb, owner.peak_mb())
        owner.kill()
        with open(self.log, "a", encoding="utf-8") as log:
            log.write(f"\n{_now()} kill -9 {owner.what} (pid {owner.pid}) at {moment}: {found}\n")
        after = self.listed_status(run.id if run is not None else None)  # before the harness reaps it
        owner.reap()
        report.kills.append(Kill(moment, f"{owner.what}: {found}", after, completed, len(lines)))
        now = self._run_of(ledger)
        # not crashed: only right when another process owns it already (an answer given just
        # before the kill found the run stopped and resumed it in the background)
        taken = now is not None and now.pid not in (None, owner.pid) and process_alive(now.pid)
        if after not in ("crashed", "completed", "not recorded") and not taken:
            report.problems.append(f"after the kill at {moment} ({owner.what}: {found}) `runs list` shows the "
                                   f"run {after}, its process dead")

    @staticmethod
    def _observe(owner: Owner, report: CaseReport) -> None:
        """Crash detection, as ``ergon runs list`` runs it, while the run's process lives: it
        must never take that process's run for a dead one."""
        from flows import runs

        for run in runs.detect_crashed():
            if run.id == report.run_id and owner.alive():
                report.problems.append(f"run {run.id} was marked crashed while {owner.what} (pid {owner.pid}) "
                                       f"executed it: {run.error}")

    def _sleep_alive(self, owner: Owner, seconds: float) -> None:
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline and owner.alive():
            time.sleep(0.01)

    def _next_owner(self, run: Any, ledger: Path, report: CaseReport) -> Owner | None:
        """Who executes the run next: a fresh `ergon run`, the answer path's resume, or `runs resume`."""
        if run is None:
            return self._spawn(["run", NAME, "--input", f"ledger={ledger}", "--json"], "ergon run")
        if run.status == "crashed" and (task := self._open_task(run.id)) is not None:
            self._answer(task, report)
            deadline = time.monotonic() + 30
            while time.monotonic() < deadline:
                pid = _background_resume(run.id)
                if pid is not None:
                    return Owner(pid, "answer's resume", time.monotonic())
                status = self._run_of(ledger).status
                if status in ("running", "paused", "completed"):
                    break
                time.sleep(0.02)
            return None  # the background resume is gone already (or never came): look again
        if run.status in ("crashed", "failed"):
            return self._spawn(["runs", "resume", run.id, "--json"], "ergon runs resume")
        if run.status in ("pending", "running", "paused"):
            pid = run.pid if run.pid and process_alive(run.pid) else _background_resume(run.id)
            if pid is not None:
                return Owner(pid, "the run's owner", time.monotonic())
            status = self.listed_status(run.id)
            if status in ("pending", "running", "paused"):
                report.problems.append(f"{_STUCK}: run {run.id} is {status} in `runs list` with no live process")
            return None
        raise AssertionError(f"run {run.id} is {run.status}")

    def _answer_in_background(self, task: Any) -> subprocess.Popen:
        with open(self.log, "ab") as log:
            log.write(f"\n{_now()} $ ergon tasks answer {task.id} --set decision=approve &\n".encode())
            return subprocess.Popen([sys.executable, "-m", "flows.cli", "tasks", "answer", task.id, "--set",
                                     "decision=approve"], env=self.env, stdout=log, stderr=subprocess.STDOUT,
                                    stdin=subprocess.DEVNULL)

    def _answer(self, task: Any, report: CaseReport) -> bool:
        answered = self.ergon(["tasks", "answer", task.id, "--set", "decision=approve"])
        if answered.returncode != 0 and "already answered" in answered.stderr and self._answered_once(task.id):
            # the harness's own answer, given in the background just before the kill, got there
            # first: refusing a second answer is right, and the run takes the first one
            return False
        if answered.returncode != 0:
            report.problems.append(f"`tasks answer` exited {answered.returncode}: {answered.stderr[-500:]}")
            return False
        return True

    @staticmethod
    def _answered_once(task_id: str) -> bool:
        """Whether the task has exactly one recorded answer (its audit trail)."""
        from flows.store import tasks as task_store

        return [e.action for e in task_store.task_events(task_id)].count("answered") == 1

    # ---------------------------------------------------------------- checks
    def check_case(self, report: CaseReport) -> None:
        from flows.store import runs as run_store
        from flows.store import tasks as task_store
        from flows.store import visits as visit_store

        problems = report.problems
        run = run_store.get_run(report.run_id) if report.run_id else None
        if run is None:
            problems.append("no run was recorded")
            return
        if (run.status, run.outcome) != ("completed", "done"):
            problems.append(f"the run ended {run.status}/{run.outcome}: {run.error}")
        context = dict(run.context or {})
        for key, value in EXPECTED_CONTEXT.items():
            if context.get(key) != value:
                problems.append(f"context[{key!r}] is {context.get(key)!r}, not {value!r}")
        if sorted(x.get("sent") for x in context.get("shipped") or []) != [f"ship[{b}]" for b in BRANCHES]:
            problems.append(f"context['shipped'] is {context.get('shipped')!r}")
        counts = Counter(line.split()[0] for line in report.ledger)
        for kill in report.kills:
            again = Counter(line.split()[0] for line in report.ledger[kill.ledger_lines:])
            for name in sorted(kill.completed & set(again)):
                problems.append(f"`{name}` completed before the kill at {kill.moment} and ran {again[name]} more "
                                "time(s)")
        for name in STEPS:
            if counts[name] < 1 and run.status == "completed":
                problems.append(f"`{name}` never ran")
        visits = visit_store.visits_for_run(run.id)
        parents = {v.id: v.node_id for v in visits}
        completed = Counter((parents.get(v.parent_visit_id or "", v.node_id), v.item_key if v.parent_visit_id else None)
                            for v in visits if v.status == "completed")
        for (node, item), n in completed.items():
            if n != 1:
                problems.append(f"{node}{f'[{item}]' if item else ''} has {n} completed visits")
        still = [f"{v.node_id}#{v.sequence}" for v in visits if v.status in ("running", "pending")]
        if still:
            problems.append(f"visits left running: {still}")
        tasks = task_store.tasks_for_run(run.id)
        if len(tasks) != 1 or tasks[0].status != "completed":
            problems.append(f"tasks asked: {[(t.id, t.status) for t in tasks]} (one, answered, expected)")
        problems.extend(stuck_runs())
        problems.extend(stuck_flow_runs(since=run.created_at))
        if problems:  # what the store holds, to tell what happened
            report.details = [f"#{v.sequence} {v.node_id}{f'[{v.item_key}]' if v.item_key else ''} {v.status} "
                              f"{_clock(v.started_at)}..{_clock(v.ended_at)} {v.error or ''}"[:160]
                              for v in visits] + [f"ledger: {' | '.join(report.ledger)}"]


def _now() -> str:
    return datetime.now().strftime("%H:%M:%S.%f")[:-3]


def _ledger_lines(ledger: Path) -> list[str]:
    """The ledger's complete lines."""
    return ledger.read_text(encoding="utf-8").split("\n")[:-1] if ledger.exists() else []


def _clock(at: Any) -> str:
    return at.strftime("%H:%M:%S.%f")[:-3] if at is not None else "-"


def stuck_runs() -> list[str]:
    """Runs of the store ``pending``, ``running`` or ``paused`` whose owner process is not alive."""
    from flows.store import runs as run_store

    problems = []
    for status in ("pending", "running", "paused"):
        rows, _ = run_store.list_runs(status=status, limit=1000)
        for r in rows:
            if not (r.pid and process_alive(r.pid)):
                problems.append(f"run {r.id} is {status} and its process {r.pid} is not alive")
    return problems


def _flow_runs(ledger: Path, since: datetime) -> list[Any]:
    """The Prefect flow runs of the case's run (its ``ledger`` input is a flow parameter) made since ``since``."""
    from prefect.client.orchestration import get_client
    from prefect.client.schemas.filters import FlowFilter, FlowFilterName

    with get_client(sync_client=True) as client:
        rows = client.read_flow_runs(flow_filter=FlowFilter(name=FlowFilterName(any_=[NAME])), limit=200)
    return [r for r in rows if (r.parameters or {}).get("ledger") == str(ledger) and r.created and r.created >= since]


def stuck_flow_runs(since: Any = None) -> list[str]:
    """Prefect flow runs of the definition still ``Running``, ``Pending`` or ``Paused`` (made since
    ``since``: the case's own, so one case's leftover is reported by that case alone): with every
    process of the case gone, nothing executes them."""
    from prefect.client.orchestration import get_client
    from prefect.client.schemas.filters import (
        FlowFilter,
        FlowFilterName,
        FlowRunFilter,
        FlowRunFilterState,
        FlowRunFilterStateType,
    )
    from prefect.client.schemas.objects import StateType

    with get_client(sync_client=True) as client:
        rows = client.read_flow_runs(
            flow_filter=FlowFilter(name=FlowFilterName(any_=[NAME])),
            flow_run_filter=FlowRunFilter(state=FlowRunFilterState(type=FlowRunFilterStateType(
                any_=[StateType.RUNNING, StateType.PENDING, StateType.PAUSED]))),
            limit=200)
    return [f"Prefect flow run {r.id} ({r.name}) is still {r.state.type.value if r.state else '?'}" for r in rows
            if since is None or (r.created is not None and r.created >= since)]


# ------------------------------------------------------------------------------- many cases


@dataclass
class Tally:
    reports: list[CaseReport] = field(default_factory=list)

    @property
    def failures(self) -> list[CaseReport]:
        return [r for r in self.reports if r.problems]

    def table(self) -> list[str]:
        kills = Counter(k.moment.event for r in self.reports for k in r.kills)
        found = Counter(k.found.split(" in ")[0] for r in self.reports for k in r.kills)
        repeats = sum(max(0, Counter(line.split()[0] for line in r.ledger)[n] - 1) for r in self.reports for n in STEPS)
        lines = [f"{'event':14} {'kills':>6}"]
        lines += [f"{e:14} {kills[e]:6d}" for e in OFFSETS]
        lines.append(f"{'total':14} {sum(kills.values()):6d}")
        lines.append("kills found the run: " + ", ".join(f"{s} {n}" for s, n in sorted(found.items())))
        lines.append(f"re-executed steps (killed mid-execution, allowed): {repeats}")
        return lines


def run_cases(harness: Harness, first: int, count: int, *, echo: Any = None) -> Tally:
    tally = Tally()
    for case in range(first, first + count):
        report = harness.run_case(case)
        tally.reports.append(report)
        if echo is not None:
            echo(("FAIL " if report.problems else "ok   ") + report.describe()
                 + "".join(f"\n       {p}" for p in report.problems + report.details))
    return tally

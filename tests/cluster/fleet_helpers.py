"""A fleet of Ergon on one machine, for ``tests/cluster/test_fleet.py`` and ``benchmarks/fleet.py``.

The shape a team runs in production, with every part a real process:

* a **Prefect server** on PostgreSQL (its own database), which the scenario stops and starts
  again on the same port and database while runs are in flight (:class:`PrefectServer`);
* Ergon's **store** on PostgreSQL (another database on the same server);
* **worker hosts**: ``prefect worker start --pool POOL``, each launched from a folder of its own
  with an ``ERGON_HOME`` of its own (:class:`WorkerHost`); the flow runs they start work in the
  project folder the deployment's ``pull`` step names, as on a machine with the same checkout;
* a **web host**: ``ergon serve`` (the real CLI) in a third folder with its own copy of the
  definitions, receiving signed webhooks (:class:`WebHost`);
* the **dashboard host**: the process driving the scenario, which answers tasks through the
  store's answer path (:func:`flows.runs.answers.answer`), finds crashed runs with
  ``ergon runs list`` and resumes them with :func:`flows.runs.resume_detached` (the dashboard's
  resume), and observes the store and Prefect's API.

Every process gets an environment built here from scratch (:func:`host_env`): none of the
calling process's ``PREFECT_*`` or ``ERGON_*`` settings leak into it.

The definition (:data:`FLEET`) has a webhook trigger, a ``foreach`` of interaction model calls
against a local OpenAI-compatible server (``tests/llm/fake_openai.py``; an environment file
points at it), a human task (under a deployment it suspends the flow run; the answer
reschedules it for any worker), and two tool nodes (:data:`LEDGER_TOOL`) that append what ran,
the process and the time to the ledger of the ``ERGON_HOME`` of the process that runs them:
each worker host's ledger is a record, outside the store, of what ran there, and an execution
that began after the store had that node completed is a repeat.

:func:`drive` runs the scenario — N webhook starts, one worker killed with SIGKILL (its flow-run
processes with it, as when a machine is lost) while one of its runs is in its ``foreach``, the
Prefect server restarted, the killed worker started again, crashed runs found and resumed
through the deployment, tasks answered while other runs are in flight — and returns what it saw
(:class:`Outcome`); :func:`audit` checks it against the ledgers, the store and Prefect.
"""

from __future__ import annotations

import base64
import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterator

ROOT = Path(__file__).resolve().parents[2]
for _extra in (ROOT, ROOT / "tests" / "deploy", ROOT / "tests" / "llm"):
    if str(_extra) not in sys.path:
        sys.path.insert(0, str(_extra))

from benchmarks.concurrent_pg import _create_database as create_database  # noqa: E402
from benchmarks.concurrent_pg import _stop_group  # noqa: E402
from deploy_helpers import Worker, wait_for  # noqa: E402
from fake_openai import ENVIRONMENT  # noqa: E402

from flows.settings import TAKE_UP_TIMEOUT_SECONDS  # noqa: E402

ERGON = [sys.executable, "-m", "flows.cli"]
DEFINITION = "fleet"
HOOK_PATH = "/hooks/fleet"
HOOK_SECRET = "fleet_hook"
MODEL = "fleet-label"
#: whoever answers the tasks and resumes crashed runs (a person at the dashboard)
OPERATOR = "ops"

FLEET = f"""
format_version: 1
process: {DEFINITION}
initial: intake
context:
  schema:
    type: object
    properties:
      key: {{type: string}}
      topics: {{type: array, items: {{type: string}}}}
      labels: {{type: array}}
      label: {{type: string}}
      last: {{type: string}}
      decision: {{type: string}}
    required: [key, topics]
triggers:
  - {{type: webhook, path: {HOOK_PATH}, secret: {HOOK_SECRET}, as_user: hook-bot}}
nodes:
  intake: {{type: tool, tool: fleet_mark, input: {{name: "{{{{ key }}}}:intake"}}, writes: [last], transitions: [{{to: each}}]}}
  each:
    type: foreach
    foreach: topics
    as: topic
    max_concurrency: 1
    node: {{type: interaction, interaction: fleet_label, input: {{topic: "{{{{ key }}}}/{{{{ topic }}}}"}}, writes: [label]}}
    collect: labels
    writes: [labels]
    transitions: [{{to: review}}]
  review:
    type: human_task
    task:
      title: "Review {{{{ key }}}}"
      fields: [{{name: decision, type: select, required: true, options: [approve, reject]}}]
    writes: [decision]
    transitions: [{{to: finish}}]
  finish: {{type: tool, tool: fleet_mark, input: {{name: "{{{{ key }}}}:finish"}}, writes: [last], transitions: [{{to: done}}]}}
  done: {{type: final}}
"""

#: the interaction of the foreach's items, on the environment ``fake`` (``fake_openai.ENVIRONMENT``)
INTERACTION = """
kind: interaction
name: fleet_label
environment: fake
prompts: [{role: user, template: "Label {{ topic }}."}]
input_schema: {type: object, properties: {topic: {type: string}}, required: [topic]}
"""

#: the nodes whose tool appends to the ledger, once per execution
LEDGER_NODES = ("intake", "finish")

#: ``tools/fleet_tools.py`` of the fleet's definitions: the ledger outside the store, a line per
#: execution (what ran, in which process, when) in the ``ERGON_HOME`` of the host that ran it
LEDGER_TOOL = """
import os
import time
from pathlib import Path

from flows.tools import tool


@tool
def fleet_mark(name: str) -> dict:
    \"\"\"Append `name`, this process's id and the time to this host's ledger.\"\"\"
    folder = Path(os.environ["ERGON_HOME"]) / "ledger"
    folder.mkdir(parents=True, exist_ok=True)
    with (folder / "fleet").open("a") as fh:
        fh.write(f"{name} {os.getpid()} {time.time():.6f}\\n")
    return {"last": name}
"""


# ------------------------------------------------------------------------------------ processes
def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextmanager
def postgres_server() -> Iterator[str | None]:
    """The PostgreSQL server of ``ERGON_TEST_POSTGRES_URL``, else a throwaway cluster on loopback
    (:func:`dev.start_postgres`: root and Debian's packages), stopped on the way out; None
    when there is neither."""
    given = os.environ.get("ERGON_TEST_POSTGRES_URL")
    if given:
        yield given
        return
    import dev

    url, stop = dev.start_postgres()
    try:
        yield url
    finally:
        if stop is not None:
            stop()


def drop_databases(base: str, urls: list[str]) -> None:
    """Drop the databases of ``urls`` (made by :func:`create_database` on the server of ``base``)."""
    import psycopg

    with psycopg.connect(base.replace("postgresql+psycopg://", "postgresql://"), autocommit=True) as conn:
        for url in urls:
            conn.execute(f'drop database if exists "{url.rsplit("/", 1)[1]}" with (force)')


def clean_env() -> dict[str, str]:
    """This process's environment without any Prefect or Ergon setting."""
    return {k: v for k, v in os.environ.items() if not k.startswith(("PREFECT_", "ERGON_"))}


def host_env(folder: Path, api: str, store: str, **extra: str) -> dict[str, str]:
    """The environment of a process on a host whose folder is ``folder``: the fleet's Prefect API
    and store, its own ``ERGON_HOME`` and Prefect client home, and ``extra``."""
    return {**clean_env(), "PREFECT_API_URL": api, "ERGON_DATABASE_URL": store, "ERGON_HOME": str(folder / "home"),
            "PREFECT_HOME": str(folder / "prefect-client"), "COLUMNS": "200", **extra}


def descendants(pid: int) -> set[int]:
    """Every process below ``pid`` (flow-run processes start in sessions of their own, so a
    process group does not reach them; the parent links in /proc do)."""
    children: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                ppid = int(Path(f"/proc/{entry}/stat").read_text().rsplit(")", 1)[1].split()[1])
            except (OSError, IndexError, ValueError):
                continue
            children.setdefault(ppid, []).append(int(entry))
    found: set[int] = set()
    todo = [pid]
    while todo:
        for child in children.get(todo.pop(), []):
            if child not in found:
                found.add(child)
                todo.append(child)
    return found


def stop_process(proc: subprocess.Popen | None, first: int = signal.SIGTERM) -> None:
    """Stop a process started in a session of its own: ``first`` to its group, then SIGKILL."""
    if proc is not None:
        _stop_group(proc, first)


def _popen(args: list[str], env: dict[str, str], cwd: Path, log: Path) -> subprocess.Popen:
    with open(log, "ab") as out:
        return subprocess.Popen(args, env=env, cwd=cwd, stdout=out, stderr=subprocess.STDOUT,
                                stdin=subprocess.DEVNULL, start_new_session=True)


def tail(path: Path, chars: int = 3000) -> str:
    return path.read_text(errors="replace")[-chars:] if path.exists() else f"({path} is empty)"


class PrefectServer:
    """``prefect server start`` on a PostgreSQL database, on a fixed port so that it can be
    stopped and started again where every client expects it."""

    def __init__(self, folder: Path, database: str, port: int | None = None):
        self.folder, self.port = folder, port or free_port()
        self.api = f"http://127.0.0.1:{self.port}/api"
        self.log = folder / "server.log"
        folder.mkdir(parents=True, exist_ok=True)
        self.env = {**clean_env(), "PREFECT_HOME": str(folder / "home"), "PREFECT_API_DATABASE_CONNECTION_URL": database,
                    "PREFECT_SERVER_ANALYTICS_ENABLED": "false", "PREFECT_UI_ENABLED": "false"}
        self.proc: subprocess.Popen | None = None
        self.restarts = 0

    def start(self, timeout: float = 180) -> PrefectServer:
        from flows.prefect.server import healthy

        self.proc = _popen([sys.executable, "-m", "prefect", "server", "start", "--host", "127.0.0.1",
                            "--port", str(self.port)], self.env, self.folder, self.log)
        wait_for("the Prefect server on PostgreSQL to answer", lambda: healthy(self.api) or self.proc.poll() is not None,
                 timeout=timeout, every=0.3, diagnose=lambda: tail(self.log))
        assert self.proc.poll() is None, f"the Prefect server exited:\n{tail(self.log)}"
        return self

    def stop(self) -> None:
        stop_process(self.proc)

    def restart(self) -> float:
        """Stop it and start it again on the same port and database; seconds it was away."""
        started = time.monotonic()
        self.stop()
        self.start()
        self.restarts += 1
        return time.monotonic() - started


class WorkerHost:
    """A worker machine: ``prefect worker start --pool POOL`` from a folder of its own, with an
    ``ERGON_HOME`` of its own (its ledger is ``home/ledger/fleet``)."""

    def __init__(self, name: str, folder: Path, pool: str, env: dict[str, str], limit: int):
        self.name, self.folder = name, folder
        folder.mkdir(parents=True, exist_ok=True)
        self.worker = Worker(pool, env, folder / "worker.log", limit=limit, cwd=folder)
        self.kills = 0

    @property
    def pid(self) -> int | None:
        proc = self.worker.proc
        return proc.pid if proc is not None and proc.poll() is None else None

    def start(self) -> WorkerHost:
        self.worker.start()
        return self

    def stop(self) -> None:
        self.worker.stop()

    def kill(self) -> set[int]:
        """SIGKILL the worker and every process it started (a machine lost); their pids."""
        pid = self.pid
        if pid is None:
            return set()
        victims = descendants(pid) | {pid}
        for victim in victims:
            try:
                os.kill(victim, signal.SIGKILL)
            except ProcessLookupError:
                pass
        self.worker.proc.wait(timeout=10)  # type: ignore[union-attr]
        self.kills += 1
        return victims

    def ledger(self) -> list[tuple[str, int, float]]:
        """(what ran, process, when) of every execution of a ledger node on this host."""
        path = self.folder / "home" / "ledger" / "fleet"
        lines = [line.split() for line in path.read_text().splitlines()] if path.exists() else []
        return [(name, int(pid), float(at)) for name, pid, at in lines]


class WebHost:
    """``ergon serve`` (the real CLI) in a folder of its own, with its own copy of the definitions."""

    def __init__(self, folder: Path, env: dict[str, str]):
        self.folder, self.env = folder, env
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.log = folder / "serve.log"
        self.proc: subprocess.Popen | None = None

    def start(self) -> WebHost:
        self.proc = _popen(ERGON + ["serve", "--webhook-port", str(self.port)], self.env, self.folder, self.log)
        wait_for("ergon serve to be ready", lambda: "ready" in tail(self.log) or self.proc.poll() is not None,
                 timeout=180, diagnose=lambda: tail(self.log))
        assert self.proc.poll() is None, tail(self.log)
        return self

    def stop(self) -> None:
        stop_process(self.proc, first=signal.SIGINT)

    def post(self, body: dict[str, Any], secret: str) -> tuple[int, dict[str, Any]]:
        """A signed webhook to the fleet definition's trigger: (HTTP status, JSON answer)."""
        from flows.triggers.webhooks import SIGNATURE_HEADER, TIMESTAMP_HEADER, sign

        data = json.dumps(body).encode()
        stamp = str(int(time.time()))
        request = urllib.request.Request(self.url + HOOK_PATH, data=data, method="POST", headers={
            "Content-Type": "application/json", TIMESTAMP_HEADER: stamp, SIGNATURE_HEADER: sign(secret, stamp, data)})
        try:
            with urllib.request.urlopen(request, timeout=60) as answer:
                return answer.status, json.loads(answer.read())
        except urllib.error.HTTPError as exc:
            return exc.code, json.loads(exc.read() or b"{}")

    def run_logs(self) -> list[str]:
        logs = self.folder / "home" / "logs"
        return sorted(p.name for p in logs.glob("run-*")) if logs.is_dir() else []


class Watch(threading.Thread):
    """Which processes each worker host started: the descendants of every worker process, sampled
    every 0.2 s (a flow-run process lives for seconds: its imports alone take longer)."""

    def __init__(self, hosts: list[WorkerHost]):
        super().__init__(daemon=True)
        self.hosts = hosts
        self.seen: dict[str, set[int]] = {h.name: set() for h in hosts}
        self.stopping = threading.Event()

    def sample(self) -> None:
        for host in self.hosts:
            if (pid := host.pid) is not None:
                self.seen[host.name] |= descendants(pid)

    def run(self) -> None:
        while not self.stopping.is_set():
            self.sample()
            self.stopping.wait(0.2)

    def host_of(self, pid: int | None) -> str | None:
        return next((name for name, pids in self.seen.items() if pid in pids), None)

    def stop(self) -> None:
        self.stopping.set()
        self.join(timeout=5)


# ----------------------------------------------------------------------------------- the fleet
@dataclass
class Fleet:
    """Everything started for one fleet, stopped by :meth:`close` in reverse order."""

    folder: Path
    pool: str
    server: PrefectServer
    store: str
    fake: Any  # FakeOpenAI
    secret_keys: str
    hook_secret: str
    workers: list[WorkerHost] = field(default_factory=list)
    web: WebHost | None = None
    worker_limit: int = 4

    @property
    def project(self) -> Path:
        return self.folder / "project"

    def env(self, folder: Path, **extra: str) -> dict[str, str]:
        return host_env(folder, self.server.api, self.store, FAKE_OPENAI_KEY="sk-fleet", **extra)

    def add_worker(self, name: str) -> WorkerHost:
        folder = self.folder / name
        host = WorkerHost(name, folder, self.pool, self.env(folder), self.worker_limit)
        self.workers.append(host)
        return host.start()

    def cli(self, args: list[str], folder: Path, timeout: float = 300) -> subprocess.CompletedProcess:
        """``ergon ARGS`` on a host of this fleet (its folder, its environment)."""
        folder.mkdir(parents=True, exist_ok=True)
        return subprocess.run(ERGON + args, env=self.env(folder, ERGON_SECRET_KEYS=self.secret_keys), cwd=folder,
                              capture_output=True, text=True, timeout=timeout)

    def close(self) -> None:
        for part in [*reversed(self.workers), self.web]:
            try:
                if part is not None:
                    part.stop()
            except Exception as exc:  # noqa: BLE001 - keep stopping the rest
                print(f"warning: stopping {part}: {exc}", file=sys.stderr)
        self.server.stop()


def write_definitions(folder: Path, model_url: str) -> None:
    """The fleet's definitions (with the ledger's tool) in ``folder/definitions``."""
    defs = folder / "definitions"
    (defs / "tools").mkdir(parents=True, exist_ok=True)
    (defs / "tools" / "fleet_tools.py").write_text(LEDGER_TOOL)
    (defs / f"{DEFINITION}.yaml").write_text(FLEET)
    (defs / "fleet_label.yaml").write_text(INTERACTION)
    (defs / "fake.yaml").write_text(ENVIRONMENT.format(model=MODEL, url=model_url))


def secret_keys() -> str:
    """An ``ERGON_SECRET_KEYS`` value with one fresh key."""
    return "k1:" + base64.b64encode(os.urandom(32)).decode()


@contextmanager
def dashboard(api: str, store: str, home: Path, keys: str) -> Iterator[None]:
    """This process as the fleet's dashboard host: the fleet's Prefect API (environment and
    Prefect's settings context), its store, an ``ERGON_HOME`` of its own; restored afterwards."""
    from prefect.settings import PREFECT_API_URL, temporary_settings

    from flows.store import db

    values = {"PREFECT_API_URL": api, "ERGON_DATABASE_URL": store, "ERGON_HOME": str(home), "ERGON_SECRET_KEYS": keys}
    saved = {k: os.environ.get(k) for k in values}
    os.environ.update(values)
    try:
        with temporary_settings(updates={PREFECT_API_URL: api}):
            db.init_db(store)
            yield
    finally:
        db.dispose_all()
        # Prefect's event and log workers of this process made their clients for the fleet's API
        # (one worker per process, whatever the API): sent now, while that server is up, and
        # stopped, so the next event or log line makes a worker for the session's server.
        from prefect.events.worker import EventsWorker
        from prefect.logging.handlers import APILogWorker

        EventsWorker.drain_all(timeout=30, at_exit=False)
        APILogWorker.drain_all(timeout=30, at_exit=False)
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value
        # What ran here may have pointed this process at the fleet's API for good (an Ergon process
        # told which API to use refreshes Prefect's process-wide settings): the tests after this one
        # use the session's server again.
        from prefect.context import refresh_global_settings_context

        import flows.prefect.server as ergon_server

        ergon_server._exported = None
        refresh_global_settings_context()


@contextmanager
def running_fleet(folder: Path, postgres: str, fake: Any, *, workers: int = 2, worker_limit: int = 4,
                  pool: str = "fleet") -> Iterator[Fleet]:
    """The whole fleet on new databases of the PostgreSQL server ``postgres``: the Prefect
    server, the store (migrated once, before the workers open it), the definitions deployed
    with ``ergon deploy`` from the project folder to ``pool``, ``workers`` worker hosts, the web
    host; this process as the dashboard host throughout. Everything is stopped on the way out."""
    from flows import secrets

    suffix = os.urandom(4).hex()
    prefect_db = create_database(postgres, f"prefect_fleet_{suffix}").replace("postgresql+psycopg://",
                                                                               "postgresql+asyncpg://")
    store = create_database(postgres, f"ergon_fleet_{suffix}")
    fleet = Fleet(folder, pool, PrefectServer(folder / "prefect-server", prefect_db), store, fake, secret_keys(),
                  os.urandom(16).hex(), worker_limit=worker_limit)
    fake.respond(MODEL, _label)
    try:
        fleet.server.start()
        with dashboard(fleet.server.api, store, folder / "dashboard" / "home", fleet.secret_keys):
            secrets.set_secret(HOOK_SECRET, fleet.hook_secret)
            write_definitions(fleet.project, fake.url)
            deployed = fleet.cli(["deploy", DEFINITION, "--work-pool", pool], fleet.project)
            assert deployed.returncode == 0, deployed.stdout + deployed.stderr
            for i in range(workers):
                fleet.add_worker(f"worker-{i + 1}")
            web = folder / "web"
            write_definitions(web, fake.url)  # the web host's own checkout of the same definitions
            fleet.web = WebHost(web, fleet.env(web, ERGON_SECRET_KEYS=fleet.secret_keys)).start()
            yield fleet
    finally:
        fleet.close()
        drop_databases(postgres, [prefect_db, store])


def _label(body: dict[str, Any]) -> dict[str, Any]:
    """The model's answer: a label naming what it was asked about."""
    asked = next((m.get("content") for m in body.get("messages", []) if m.get("role") == "user"), "")
    return {"json": {"label": f"label of {asked}"}}


# ---------------------------------------------------------------------------------- the scenario
#: what each run's foreach asks the model about (one call each, one at a time)
TOPICS = ("alpha", "beta", "gamma")
#: how often the dashboard host looks for crashed runs with `ergon runs list` while waiting: until
#: the killed worker's runs are found, then now and then (each look is a process of its own)
SWEEP_SECONDS, SWEEP_IDLE_SECONDS = 10.0, 15.0
#: no run's status or heartbeat changed for this long (after the kill and the restart, and with
#: every waiting task answered and crash detection run meanwhile): the runs left are stuck. Crash
#: detection finds a run a dead worker's process never took up once Prefect has shown its flow
#: run started for TAKE_UP_TIMEOUT_SECONDS, so a stall is only called well after that.
STALL_SECONDS = TAKE_UP_TIMEOUT_SECONDS + 45.0


@dataclass
class Outcome:
    """What :func:`drive` saw."""

    label: str
    runs: dict[str, str] = field(default_factory=dict)  # run id → its key
    refused: list[tuple[int, dict]] = field(default_factory=list)  # webhook answers other than 202
    accepted: list[dict] = field(default_factory=list)  # the 202 answers
    since: Any = None  # when the first webhook was sent (UTC, for Prefect's events)
    wall: float = 0.0  # first webhook sent → last run completed, seconds (a stalled wait not counted)
    killed: str | None = None  # the worker host killed
    killed_runs: list[str] = field(default_factory=list)  # its runs in flight then
    server_away: float | None = None  # seconds the Prefect server was stopped and starting
    outage: tuple[Any, Any] | None = None  # (UTC) from the server's stop to its answering again
    stalled: bool = False  # nothing moved for STALL_SECONDS: the wait ended before the deadline
    sweeps: int = 0
    crashed: set[str] = field(default_factory=set)  # runs `ergon runs list` found crashed
    resumed: list[Any] = field(default_factory=list)  # flows.runs.Started of each resume
    answered: list[tuple[str, str, int]] = field(default_factory=list)  # (task, run, runs still working then)
    unfinished: dict[str, str] = field(default_factory=dict)  # run id → its status, at the deadline
    pids: dict[str, set[int]] = field(default_factory=dict)  # worker host → the processes it started

    @property
    def throughput(self) -> float:
        """Completed runs a minute."""
        done = len(self.runs) - len(self.unfinished)
        return 60.0 * done / self.wall if self.wall else 0.0


def _post_all(web: WebHost, keys: list[str], secret: str) -> list[tuple[int, dict]]:
    with ThreadPoolExecutor(4) as pool:  # several senders at once, as webhooks arrive
        return list(pool.map(lambda key: web.post({"key": key, "topics": list(TOPICS)}, secret), keys))


def _in_foreach(run: Any) -> bool:
    from flows.store import visits as visit_store

    return any(v["node_id"] == "each" and v["status"] == "running"
               for v in visit_store.visits_for_run(run.id, light=True))


def _victim(fleet: Fleet, watch: Watch, runs: list[Any]) -> tuple[WorkerHost, list[Any]] | None:
    """A worker host with a run in its ``foreach`` right now, and its runs in flight."""
    watch.sample()
    for host in fleet.workers:
        mine = [r for r in runs if r.status == "running" and r.ran_pid in watch.seen[host.name]]
        if any(_in_foreach(r) for r in mine):
            return host, mine
    return None


def sweep(fleet: Fleet, outcome: Outcome) -> None:
    """Crash detection as an operator runs it (``ergon runs list`` on the dashboard host), then
    the dashboard's resume (:func:`flows.runs.resume_detached`) of every run of ours it found."""
    from flows.runs import ResumeRefused, resume_detached
    from flows.store import runs as run_store

    listed = fleet.cli(["runs", "list", "--status", "crashed", "--json", "--limit", "1000"], fleet.folder / "dashboard")
    assert listed.returncode == 0, listed.stdout + listed.stderr
    outcome.sweeps += 1
    for row in json.loads(listed.stdout)["runs"]:
        if row["run_id"] not in outcome.runs:
            continue
        outcome.crashed.add(row["run_id"])
        run = run_store.get_run(row["run_id"])
        if run is None or run.status != "crashed":
            continue
        try:
            outcome.resumed.append(resume_detached(run, OPERATOR))
        except ResumeRefused:  # another sweep resumed it meanwhile
            pass


def _answer_waiting(outcome: Outcome, runs: list[Any]) -> None:
    """Answer the task of every run suspended on it, as a person at the dashboard does."""
    from flows.runs.answers import answer
    from flows.store import tasks as task_store

    working = sum(1 for r in runs if r.status in ("pending", "running"))
    for run in runs:
        if run.status != "paused":
            continue
        for task in task_store.tasks_for_run(run.id):
            if task.status in ("pending", "in_progress"):
                done = answer(task.id, OPERATOR, {"decision": "approve"}, via="dashboard")
                assert not done.errors, f"the answer to task {task.id} did not reach its run: {done.errors}"
                outcome.answered.append((task.id, run.id, working))


def drive(fleet: Fleet, n: int, *, label: str, kill: bool = True, restart: bool = True,
          timeout: float = 600, progress: Callable[[str], None] | None = None) -> Outcome:
    """Start ``n`` runs by webhook and see them through (see the module docstring); with
    ``kill``, SIGKILL the first worker host seen running a run's ``foreach`` and start it again;
    with ``restart``, restart the Prefect server right after (or, without a kill, once a run is
    running). Runs not completed by ``timeout`` are in :attr:`Outcome.unfinished`."""
    from datetime import datetime, timezone

    from flows.store import runs as run_store

    say = progress or (lambda _line: None)
    outcome = Outcome(label, since=datetime.now(timezone.utc))
    watch = Watch(fleet.workers)
    watch.start()
    started = time.monotonic()
    try:
        keys = [f"{label}-{i:03d}" for i in range(n)]
        for key, (status, body) in zip(keys, _post_all(fleet.web, keys, fleet.hook_secret), strict=True):
            if status == 202:
                outcome.runs[body["run_id"]] = key
                outcome.accepted.append(body)
            else:
                outcome.refused.append((status, body))
        say(f"{len(outcome.runs)} webhooks accepted in {time.monotonic() - started:.1f} s"
            + (f"; refused: {outcome.refused}" if outcome.refused else ""))
        kill_pending, restart_pending = kill, restart
        last_sweep = moved = last_done = time.monotonic()
        deadline = started + timeout
        seen: list[tuple[str, str | None]] = []
        done = 0
        while True:
            runs = [run_store.require_run(rid) for rid in outcome.runs]
            if (now_done := sum(r.status == "completed" for r in runs)) != done:
                done, last_done = now_done, time.monotonic()
            if done == len(runs):
                break
            now = [(r.status, str(r.heartbeat_at)) for r in runs]
            if now != seen:
                seen, moved = now, time.monotonic()
            outcome.stalled = not (kill_pending or restart_pending) and time.monotonic() - moved > STALL_SECONDS
            if time.monotonic() > deadline or outcome.stalled:
                outcome.unfinished = {r.id: r.status for r in runs if r.status != "completed"}
                break
            if kill_pending and (found := _victim(fleet, watch, runs)) is not None:
                host, mine = found
                host.kill()
                kill_pending, outcome.killed, outcome.killed_runs = False, host.name, [r.id for r in mine]
                say(f"killed {host.name} (SIGKILL, with its flow-run processes) with {len(mine)} runs in flight")
            if restart_pending and not kill_pending and any(r.status == "running" for r in runs):
                down = datetime.now(timezone.utc)
                outcome.server_away = fleet.server.restart()
                outcome.outage = (down, datetime.now(timezone.utc))
                restart_pending = False
                say(f"Prefect server restarted: away {outcome.server_away:.1f} s")
            if outcome.killed and (host := next(h for h in fleet.workers if h.name == outcome.killed)).pid is None:
                host.start()
                say(f"{host.name} started again")
                sweep(fleet, outcome)
                last_sweep = time.monotonic()
            _answer_waiting(outcome, runs)
            searching = outcome.killed is not None and not set(outcome.killed_runs) <= outcome.crashed
            if time.monotonic() - last_sweep > (SWEEP_SECONDS if searching else SWEEP_IDLE_SECONDS):
                sweep(fleet, outcome)
                last_sweep = time.monotonic()
            time.sleep(0.3)
        outcome.wall = last_done - started
    finally:
        watch.stop()
    outcome.pids = {name: set(pids) for name, pids in watch.seen.items()}
    say(f"{len(outcome.runs) - len(outcome.unfinished)} of {len(outcome.runs)} runs completed in {outcome.wall:.1f} s")
    return outcome


# ------------------------------------------------------------------------------------- the audit
@dataclass
class Audit:
    """What the ledgers, the store, the model server and Prefect say about an :class:`Outcome`;
    ``problems`` is empty when every run completed exactly once, where it should have run."""

    problems: list[str] = field(default_factory=list)
    lost: list[str] = field(default_factory=list)  # runs not completed
    repeated: list[str] = field(default_factory=list)  # "key:node" that ran again after completing
    per_host: dict[str, int] = field(default_factory=dict)  # worker host → ledger lines (executions) of this outcome
    ran_on: Counter = field(default_factory=Counter)  # worker host → runs whose last process was its


def _flow_run_states(deployment: str) -> list[Any]:
    from prefect.client.orchestration import get_client
    from prefect.client.schemas.filters import DeploymentFilter, DeploymentFilterId

    with get_client(sync_client=True) as client:
        deployment_id = client.read_deployment_by_name(deployment).id
        found, offset = [], 0
        while page := client.read_flow_runs(deployment_filter=DeploymentFilter(id=DeploymentFilterId(any_=[deployment_id])),
                                            limit=200, offset=offset):
            found += page
            offset += len(page)
    return found


OPEN_FLOW_RUN_STATES = ("RUNNING", "PENDING", "SCHEDULED", "PAUSED", "CANCELLING")


def _aware(at: Any) -> Any:
    from datetime import timezone

    return at if at.tzinfo else at.replace(tzinfo=timezone.utc)


def _prefect_view(run: Any) -> str:
    """What Prefect shows of a run's flow runs (made with the run's id as their name)."""
    from prefect.client.orchestration import get_client
    from prefect.client.schemas.filters import FlowRunFilter, FlowRunFilterName

    with get_client(sync_client=True) as client:
        flow_runs = client.read_flow_runs(flow_run_filter=FlowRunFilter(name=FlowRunFilterName(any_=[run.id])))
    return "its flow runs in Prefect: " + ", ".join(
        f"{fr.id} {fr.state.name if fr.state else '?'} (process {fr.infrastructure_pid})" for fr in flow_runs)


def open_flow_runs(run_ids: Any, deployment: str = f"{DEFINITION}/{DEFINITION}") -> list[str]:
    """Flow runs of the deployment made for ``run_ids`` (named after them) still Running,
    Pending, Scheduled, Paused or Cancelling."""
    return [f"{fr.name} {fr.state.type.value}" for fr in _flow_run_states(deployment)
            if fr.name in run_ids and fr.state is not None and fr.state.type.value in OPEN_FLOW_RUN_STATES]


def audit(fleet: Fleet, outcome: Outcome) -> Audit:
    """Check ``outcome`` (see :class:`Audit`); waits up to a minute for Prefect to close the
    flow runs of runs the store has completed (a flow-run process reports its end last)."""
    import socket as _socket

    from flows.store import runs as run_store
    from flows.store import tasks as task_store
    from flows.store import visits as visit_store

    result = Audit()
    problems = result.problems
    if outcome.refused:
        problems.append(f"webhooks refused: {outcome.refused[:3]}")
    keys = set(outcome.runs.values())
    executions: dict[str, list[tuple[float, str, int]]] = {}  # "key:node" → (when, host, process)
    for worker in fleet.workers:
        mine = [(name, pid, at) for name, pid, at in worker.ledger() if name.split(":")[0] in keys]
        result.per_host[worker.name] = len(mine)
        for name, pid, at in mine:
            executions.setdefault(name, []).append((at, worker.name, pid))
            if pid not in outcome.pids.get(worker.name, set()):
                problems.append(f"{name} ran in process {pid}, not a flow run of {worker.name}")
    crashed_keys = {outcome.runs[r] for r in outcome.crashed}
    prompts = Counter(m["content"] for req in fleet.fake.for_model(MODEL) for m in req.body.get("messages", [])
                      if m.get("role") == "user")
    for run_id, key in outcome.runs.items():
        run = run_store.require_run(run_id)
        if run.status != "completed":
            never = " (no flow body took it up)" if run.status == "pending" and run.ran_pid is None else ""
            result.lost.append(f"{run_id} ({key}) {run.status}{never}; {_prefect_view(run)}")
            continue
        visits = visit_store.visits_for_run(run_id, light=True)
        for node in LEDGER_NODES:
            ran = sorted(executions.get(f"{key}:{node}", []))
            ends = [v["ended_at"] for v in visits if v["node_id"] == node and v["status"] == "completed"]
            if not ran or not ends:
                problems.append(f"run {run_id} ({key}): `{node}` ran {len(ran)} times, completed {len(ends)} times")
                continue
            # an execution that began after the store had the node completed ran it again (one
            # killed before its visit's end was committed left no completed visit: that is no repeat)
            completed = min(_aware(e) for e in ends).timestamp()
            if again := [(host, pid) for at, host, pid in ran if at > completed]:
                result.repeated.append(f"{key}:{node} again after it completed: {again}")
        for topic in TOPICS:
            asked = prompts[f"Label {key}/{topic}."]
            if asked == 0 or (asked > 1 and key not in crashed_keys):
                problems.append(f"run {run_id} ({key}) asked the model about {topic} {asked} times")
        asked = task_store.tasks_for_run(run_id)
        if len(asked) != 1 or asked[0].status != "completed":
            problems.append(f"run {run_id} ({key}) asked {len(asked)} tasks: {[(t.id, t.status) for t in asked]}")
        if run.context.get("decision") != "approve" or len(run.context.get("labels") or []) != len(TOPICS):
            problems.append(f"run {run_id} ({key}) ended with context {run.context}")
        if (run.deployment, run.work_pool) != (f"{DEFINITION}/{DEFINITION}", fleet.pool):
            problems.append(f"run {run_id} ran through {run.deployment!r} / {run.work_pool!r}")
        host = next((name for name, pids in outcome.pids.items() if run.ran_pid in pids), None)
        if host is None or run.host != _socket.gethostname():
            problems.append(f"run {run_id} last ran in process {run.ran_pid} on {run.host}, not a worker's flow run")
        else:
            result.ran_on[host] += 1
    if result.lost:
        problems.append(f"{len(result.lost)} runs not completed: {result.lost[:5]}")
    if result.repeated:
        problems.append(f"completed visits ran again: {result.repeated[:5]}")
    for name, lines in result.per_host.items():
        if lines == 0:
            problems.append(f"worker host {name} ran none of the runs' tool nodes")
    if fleet.web is not None and fleet.web.run_logs():
        problems.append(f"the web host started run processes: {fleet.web.run_logs()[:5]}")
    dashboard_logs = fleet.folder / "dashboard" / "home" / "logs"
    if dashboard_logs.is_dir() and (local := sorted(p.name for p in dashboard_logs.glob("run-*"))):
        problems.append(f"the dashboard host started run processes: {local[:5]}")
    if any(a.get("deployment") != f"{DEFINITION}/{DEFINITION}" or a.get("work_pool") != fleet.pool
           or not a.get("flow_run_id") for a in outcome.accepted):
        problems.append(f"a webhook's answer does not name the deployment: {outcome.accepted[:2]}")
    if any(s.deployment is None for s in outcome.resumed):
        problems.append(f"a resume started here instead of through the deployment: {outcome.resumed}")
    try:  # a lost run's flow run stays open: no point waiting for it
        wait_for("Prefect to close the runs' flow runs", lambda: not open_flow_runs(outcome.runs),
                 timeout=0 if result.lost else 60, every=1)
    except AssertionError:
        if still := open_flow_runs(outcome.runs):
            problems.append(f"flow runs left open in Prefect: {still[:5]}")
    return result


# ------------------------------------------------------------------------------------ the events
def ergon_events(since: Any) -> list[Any]:
    """Every ``ergon.*`` event Prefect's event API holds since ``since`` (all pages)."""
    from prefect.client.orchestration import get_client
    from prefect.events.filters import EventFilter, EventNameFilter, EventOccurredFilter

    query = EventFilter(occurred=EventOccurredFilter(since=since), event=EventNameFilter(prefix=["ergon."]))
    with get_client(sync_client=True) as client:
        page = client.read_events(filter=query, limit=50)  # the API's most
        events = list(page.events)
        while page.next_page:
            page = client.read_events_page(page.next_page)
            events += page.events
    return events


#: events of moments up to this long after the server answers again may still be lost: a flow
#: run's events client gives up after its reconnection attempts and drops them
OUTAGE_GRACE_SECONDS = 5.0
#: Prefect's server persists the events it received in batches, at least every this many seconds
#: (``PREFECT_SERVER_SERVICES_EVENT_PERSISTER_FLUSH_INTERVAL``, default 5): a server stopped loses
#: the batch it had not written, so moments this long before the outage may lack their events too.
PERSISTER_FLUSH_SECONDS = 5.0


def _while_away(outcome: Outcome, at: Any) -> bool:
    """Whether a moment of the store (``at``) fell while the Prefect server was away, or in the
    last flush interval before it went away."""
    from datetime import timedelta

    if outcome.outage is None or at is None:
        return False
    down, up = outcome.outage
    return down - timedelta(seconds=PERSISTER_FLUSH_SECONDS) <= _aware(at) <= up + timedelta(seconds=OUTAGE_GRACE_SECONDS)


def event_problems(outcome: Outcome, events: list[Any]) -> tuple[list[str], list[str]]:
    """What the ``ergon.*`` events in Prefect's API lack for ``outcome``'s runs and tasks, and
    the moments excused: a started event (at least one: a resumed run starts again) and exactly
    one completed event per completed run, with the definition's label and related to the flow run that
    completed it; exactly one created and one answered event per task, related to its run. A
    moment the store dates within the Prefect server's outage (:data:`PERSISTER_FLUSH_SECONDS`
    before it and :data:`OUTAGE_GRACE_SECONDS` after it included) may lack its event: a process's
    events client drops what it cannot send after ten reconnection attempts, and a stopped server
    loses the events it had not persisted. So may the start of a run in flight on the killed worker
    host (the process that took it up was killed with whatever its events client had not sent yet).
    Such moments are listed as excused, not as problems."""
    from flows.store import runs as run_store
    from flows.store import tasks as task_store

    seen: Counter = Counter((e.event, e.resource.id) for e in events)
    problems: list[str] = []
    excused: list[str] = []

    def expect(name: str, resource: str, at: Any, *, at_least: bool = False, killed: bool = False) -> bool:
        count = seen[(name, resource)]
        if (count >= 1) if at_least else (count == 1):
            return True
        if count == 0 and _while_away(outcome, at):
            excused.append(f"{name} of {resource} at {at} (server away)")
        elif count == 0 and killed:
            excused.append(f"{name} of {resource} (sent by a process killed with SIGKILL)")
        else:
            problems.append(f"{resource}: {count} {name} events")
        return False

    for run_id in outcome.runs:
        run = run_store.require_run(run_id)
        if run.status != "completed":
            continue  # lost: the audit says so
        resource = f"ergon.run.{run_id}"
        expect("ergon.run.started", resource, run.started_at, at_least=True, killed=run_id in outcome.killed_runs)
        if expect("ergon.run.completed", resource, run.ended_at):
            completed = next(e for e in events if e.event == "ergon.run.completed" and e.resource.id == resource)
            if completed.resource.get("ergon.definition") != DEFINITION:
                problems.append(f"run {run_id}: the completed event's resource is {completed.resource.root}")
            related = {(r.id, r.role) for r in completed.related}
            if (f"prefect.flow-run.{run.prefect_flow_run_id}", "flow-run") not in related:
                problems.append(f"run {run_id}: the completed event is not related to flow run "
                                f"{run.prefect_flow_run_id} ({sorted(related)})")
        for task in task_store.tasks_for_run(run_id):
            task_resource = f"ergon.task.{task.id}"
            for name, at in (("ergon.task.created", task.created_at), ("ergon.task.answered", task.answered_at)):
                if expect(name, task_resource, at):
                    event = next(e for e in events if e.event == name and e.resource.id == task_resource)
                    if (resource, "ergon-run") not in {(r.id, r.role) for r in event.related}:
                        problems.append(f"task {task.id}: its {name} event is not related to run {run_id}")
    return problems, excused


def wait_for_events(outcome: Outcome, timeout: float = 60) -> tuple[list[Any], list[str], list[str]]:
    """The events, :func:`event_problems` and the excused moments, once there are no problems
    or ``timeout`` passed (the server persists events in batches)."""
    deadline = time.monotonic() + timeout
    while True:
        events = ergon_events(outcome.since)
        problems, excused = event_problems(outcome, events)
        if not problems or time.monotonic() > deadline:
            return events, problems, excused
        time.sleep(2)

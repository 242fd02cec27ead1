"""20 concurrent runs on PostgreSQL: a Prefect server on PostgreSQL, a process worker, Ergon's
store on PostgreSQL — the production shape of a scaled-out Ergon.

What it does:

1. takes the PostgreSQL server given by ``ERGON_TEST_POSTGRES_URL`` or starts a throwaway cluster
   on loopback (``dev.start_postgres``: root and Debian's packages), and creates two databases on
   it, one for the Prefect server and one for Ergon's store;
2. starts a Prefect server on the first (``PREFECT_API_DATABASE_CONNECTION_URL`` with asyncpg, as
   ``tests/cluster/test_cluster.py`` does), migrates the store on the second, deploys the
   definition below with ``ergon deploy`` to a process work pool and starts ``prefect worker start
   --limit 20`` on it;
3. runs the deployment **alone** (median of ``--repeat`` runs, each on an idle Prefect server),
   then **20 at once**: 20 flow runs created from the deployment, picked up by the worker, each
   in its own flow-run process — what a user of a deployment does. Both are timed the same way,
   from the first flow run's creation to the last one's end (Prefect's ``created`` and
   ``end_time``), so both include the worker's poll and the flow-run process start;
4. prints alone, the 20-at-once wall, ideal = alone × 20 / ``os.cpu_count()``, the ratio
   wall / ideal (aim ≤ 1.5), and the errors: flow runs not ``Completed``, Ergon runs not
   ``completed`` or missing visits (every run must have exactly the visits of the alone run),
   error lines in the worker's (it carries the flow-run processes' output) and the server's log
   (tracebacks, "database is locked", deadlocks, serialization failures, too many connections,
   pool timeouts, 503s), and the databases' deadlock and conflict counters;
5. samples ``pg_stat_activity`` and ``pg_locks`` every 0.5 s during the concurrent runs: the peak
   connections per database (against ``max_connections``), the peak of ungranted locks and the
   wait events seen — the evidence of where time is lost if the ratio misses.

Every process it started (worker and its flow runs, server, PostgreSQL) is stopped on the way
out, on error and on SIGTERM too.

The definition: a chain of 20 no-op tool nodes, then a foreach over 20 items (window 5) of a
no-op tool node — 42 visits, both the engine's shapes (sequential visits, a fan-out running item
bodies in parallel), with no model or sleep in it so that what is measured is the engine, the
store and Prefect, not a tool. The ``definitions/`` examples run on the offline model in
seconds too, but mostly measure its canned answers and their templates, one node at a time.

    python benchmarks/concurrent_pg.py [--runs 20] [--repeat 3] [--rounds 1] [--chain 20] [--items 20]
"""

from __future__ import annotations

import argparse
import collections
import os
import re
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmarks.settle import server_cpu_seconds, wait_until_idle  # noqa: E402

NAME = "bench_pg"

#: Lines of the worker's and server's logs that count as errors (pattern → label).
ERROR_PATTERNS = {
    r"Traceback \(most recent call last\)": "traceback",
    r"database is locked": "database is locked",
    r"deadlock detected": "deadlock",
    r"could not serialize|SerializationFailure": "serialization failure",
    r"too many clients|remaining connection slots": "too many connections",
    r"QueuePool limit|TimeoutError": "pool/timeout",
    # Prefect's client retries 503s at DEBUG level; a request that exhausted them says so
    r"Server error '5\d\d|retryable status code": "HTTP 5xx answer",
    r"Crashed|crashed": "crashed",
}


def definition(chain: int, items: int, window: int) -> str:
    lines = [f"format_version: 1\nprocess: {NAME}\ninitial: n0",
             "context:",
             "  schema: {type: object, properties: {items: {type: array}}}",
             f"  initial: {{items: {list(range(items))}}}",
             "nodes:"]
    for i in range(chain):
        lines.append(f"  n{i}: {{type: tool, tool: noop, transitions: [{{to: {'n' + str(i + 1) if i + 1 < chain else 'each'}}}]}}")
    lines.append(f"  each: {{type: foreach, foreach: items, as: item, max_concurrency: {window}, "
                 "node: {type: tool, tool: noop}, transitions: [{to: done}]}")
    lines.append("  done: {type: final}")
    return "\n".join(lines) + "\n"


def loadavg() -> str:
    return Path("/proc/loadavg").read_text().split(" ", 3)[:3].__str__().replace("'", "")


class Stack:
    """Everything started, stopped in reverse order whatever happens."""

    def __init__(self) -> None:
        self.stops: list[tuple[str, Any]] = []

    def push(self, what: str, stop) -> None:
        self.stops.append((what, stop))

    def close(self) -> None:
        while self.stops:
            what, stop = self.stops.pop()
            try:
                stop()
            except Exception as exc:  # keep stopping the rest
                print(f"warning: stopping {what}: {exc}", file=sys.stderr)


def _stop_group(proc: subprocess.Popen, first=signal.SIGTERM) -> None:
    """Stop a process started in its own session, and its children: ``first``, then SIGKILL."""
    if proc.poll() is not None:
        return
    for sig in (first, first):
        try:
            os.killpg(proc.pid, sig)
        except ProcessLookupError:
            return
        try:
            proc.wait(timeout=10)
            return
        except subprocess.TimeoutExpired:
            continue
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except ProcessLookupError:
        return
    proc.wait(timeout=10)


def _create_database(base: str, name: str) -> str:
    import psycopg

    with psycopg.connect(base.replace("postgresql+psycopg://", "postgresql://"), autocommit=True) as conn:
        conn.execute(f'create database "{name}"')
    return base.rsplit("/", 1)[0] + f"/{name}"


class Sampler(threading.Thread):
    """``pg_stat_activity`` / ``pg_locks`` every ``every`` s while running (see the docstring)."""

    def __init__(self, admin: str, databases: dict[str, str], every: float = 0.5):
        super().__init__(daemon=True)
        self.admin, self.databases, self.every = admin, databases, every
        self.stop_event = threading.Event()
        self.peak: dict[str, int] = collections.defaultdict(int)      # label → peak connections
        self.peak_active: dict[str, int] = collections.defaultdict(int)
        self.peak_ungranted = 0
        self.waits: collections.Counter[str] = collections.Counter()  # "type:event" per sample
        self.samples = 0
        self.max_connections = 0

    def run(self) -> None:
        import psycopg

        labels = {db: label for label, db in self.databases.items()}
        with psycopg.connect(self.admin, autocommit=True) as conn:
            self.max_connections = int(conn.execute("show max_connections").fetchone()[0])
            while not self.stop_event.is_set():
                rows = conn.execute(
                    "select datname, state, wait_event_type, wait_event from pg_stat_activity "
                    "where backend_type = 'client backend' and pid <> pg_backend_pid()").fetchall()
                count: collections.Counter[str] = collections.Counter()
                active: collections.Counter[str] = collections.Counter()
                for datname, state, wtype, wevent in rows:
                    label = labels.get(datname, "other")
                    count[label] += 1
                    if state == "active":
                        active[label] += 1
                        if wtype and wtype not in ("Client", "Activity"):
                            self.waits[f"{label} {wtype}:{wevent}"] += 1
                for label in set(count) | set(self.peak):
                    self.peak[label] = max(self.peak[label], count[label])
                    self.peak_active[label] = max(self.peak_active[label], active[label])
                ungranted = conn.execute("select count(*) from pg_locks where not granted").fetchone()[0]
                self.peak_ungranted = max(self.peak_ungranted, ungranted)
                self.samples += 1
                self.stop_event.wait(self.every)

    def report(self) -> str:
        peaks = ", ".join(f"{k} {self.peak[k]} (active {self.peak_active[k]})" for k in sorted(self.peak))
        waits = ", ".join(f"{k} ×{n}" for k, n in self.waits.most_common(6)) or "none"
        return (f"  PostgreSQL ({self.samples} samples): peak connections {peaks} of max_connections "
                f"{self.max_connections}; peak ungranted locks {self.peak_ungranted}; "
                f"waits of active backends: {waits}")


def db_counters(admin: str, names: list[str]) -> dict[str, tuple[int, int]]:
    """(deadlocks, conflicts) of each database, from ``pg_stat_database``."""
    import psycopg

    with psycopg.connect(admin, autocommit=True) as conn:
        rows = conn.execute("select datname, deadlocks, conflicts from pg_stat_database where datname = any(%s)",
                            (names,)).fetchall()
    return {name: (int(d), int(c)) for name, d, c in rows}


def log_errors(*paths: Path, since: dict[Path, int] | None = None) -> collections.Counter[str]:
    found: collections.Counter[str] = collections.Counter()
    for path in paths:
        text = path.read_text(errors="replace") if path.exists() else ""
        text = text[(since or {}).get(path, 0):]
        for pattern, label in ERROR_PATTERNS.items():
            n = len(re.findall(pattern, text))
            if n:
                found[f"{label} ({path.name})"] += n
    return found


def log_sizes(*paths: Path) -> dict[Path, int]:
    return {p: len(p.read_text(errors="replace")) if p.exists() else 0 for p in paths}


def run_batch(deployment_id, n: int, timeout: float = 1200) -> tuple[float, list[Any]]:
    """Create ``n`` flow runs of the deployment, wait until all are final; (first created → last
    end, seconds; the flow runs)."""
    from prefect.client.orchestration import get_client
    from prefect.client.schemas.filters import FlowRunFilter, FlowRunFilterId

    with get_client(sync_client=True) as client:
        ids = [client.create_flow_run_from_deployment(deployment_id).id for _ in range(n)]
        deadline = time.monotonic() + timeout
        while True:
            runs = client.read_flow_runs(flow_run_filter=FlowRunFilter(id=FlowRunFilterId(any_=ids)), limit=n)
            if len(runs) == n and all(r.state is not None and r.state.is_final() for r in runs):
                break
            if time.monotonic() > deadline:
                raise SystemExit(f"timed out: {sum(1 for r in runs if r.state and r.state.is_final())}/{n} final")
            time.sleep(0.5)
    first = min(r.created for r in runs)
    last = max(r.end_time or r.state.timestamp for r in runs)
    return (last - first).total_seconds(), runs


def check_runs(flow_runs: list[Any], reference: list[tuple[str, str]] | None) -> tuple[list[str], list[tuple[str, str]]]:
    """Problems of the batch (flow run not Completed, Ergon run missing / not completed / visits
    differing from ``reference``), and the visits of the first run (the reference)."""
    from flows.store import runs as run_store
    from flows.store import visits as visit_store

    problems: list[str] = []
    first: list[tuple[str, str]] = []
    for fr in flow_runs:
        if not fr.state.is_completed():
            problems.append(f"flow run {fr.name} is {fr.state.name}: {(fr.state.message or '')[:200]}")
        run = run_store.get_run_by_prefect_id(str(fr.id))
        if run is None:
            problems.append(f"flow run {fr.name} has no Ergon run")
            continue
        if run.status != "completed":
            problems.append(f"run {run.id} is {run.status}: {(run.error or '')[:200] if hasattr(run, 'error') else ''}")
        visits = sorted((v["node_id"], v["status"]) for v in visit_store.visits_for_run(run.id, light=True))
        if reference is None and not first:
            first = visits
        elif visits != (reference or first):
            problems.append(f"run {run.id} has {len(visits)} visits ({sum(s == 'completed' for _, s in visits)} "
                            f"completed), expected {len(reference or first)}")
    return problems, first


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=20, help="runs at once")
    parser.add_argument("--repeat", type=int, default=3, help="alone runs before each batch (their median)")
    parser.add_argument("--rounds", type=int, default=1, help="rounds of alone runs + a batch (median ratio)")
    parser.add_argument("--chain", type=int, default=20)
    parser.add_argument("--items", type=int, default=20)
    parser.add_argument("--window", type=int, default=5)
    parser.add_argument("--keep", action="store_true", help="keep the temporary folder (logs) and print it")
    args = parser.parse_args()

    def on_term(signum, _frame):
        raise SystemExit(f"stopped by signal {signum}")

    signal.signal(signal.SIGTERM, on_term)
    work = Path(tempfile.mkdtemp(prefix="ergon-bench-pg-"))
    stack = Stack()
    try:
        return _bench(args, work, stack)
    finally:
        stack.close()
        try:
            from flows.store import db

            db.dispose_all()
        except Exception:
            pass
        if args.keep:
            print(f"logs kept in {work}")
        else:
            shutil.rmtree(work, ignore_errors=True)


def _bench(args, work: Path, stack: Stack) -> int:
    base = os.environ.get("ERGON_TEST_POSTGRES_URL")
    if not base:
        import dev

        base, stop_pg = dev.start_postgres()
        if not base:
            print("needs PostgreSQL: set ERGON_TEST_POSTGRES_URL=postgresql+psycopg://user@host:port/db, or run as "
                  "root with Debian's postgresql package installed")
            return 2
        stack.push("PostgreSQL", stop_pg)
    admin = base.replace("postgresql+psycopg://", "postgresql://")
    suffix = uuid.uuid4().hex[:8]
    prefect_name, store_name = f"prefect_{suffix}", f"ergon_{suffix}"
    prefect_db = _create_database(base, prefect_name).replace("postgresql+psycopg://", "postgresql+asyncpg://")
    store_db = _create_database(base, store_name)

    defs = work / "definitions"
    defs.mkdir()
    (work / "home" / "prefect").mkdir(parents=True)
    (defs / f"{NAME}.yaml").write_text(definition(args.chain, args.items, args.window))
    os.environ.pop("PREFECT_API_URL", None)
    os.environ.update({"ERGON_HOME": str(work / "home"), "ERGON_DEFINITIONS": str(defs),
                       "ERGON_DATABASE_URL": store_db})

    from flows.prefect import server
    from flows.prefect.config import configure_prefect_env

    configure_prefect_env()
    port = server._free_port(0)
    api = f"http://127.0.0.1:{port}/api"
    server_env = {k: v for k, v in os.environ.items() if k != "PREFECT_API_URL"}
    server_env.update({"PREFECT_HOME": str(work / "prefect-server"), "PREFECT_API_DATABASE_CONNECTION_URL": prefect_db,
                       "PREFECT_SERVER_ANALYTICS_ENABLED": "false", "PREFECT_UI_ENABLED": "false",
                       # Ergon silences the server's log; here it is evidence (errors, 5xx answers)
                       "PREFECT_SERVER_LOGGING_LEVEL": "INFO"})
    server_log = work / "server.log"
    with open(server_log, "ab") as log:
        proc = subprocess.Popen([sys.executable, "-m", "prefect", "server", "start", "--host", "127.0.0.1", "--port",
                                 str(port)], env=server_env, stdout=log, stderr=subprocess.STDOUT,
                                start_new_session=True)
    stack.push("Prefect server", lambda: _stop_group(proc))
    deadline = time.monotonic() + 180
    while not server.healthy(api):
        if time.monotonic() > deadline or proc.poll() is not None:
            print(server_log.read_text()[-3000:])
            return 1
        time.sleep(0.5)
    os.environ["PREFECT_API_URL"] = api

    from flows.store import db

    db.init_db(store_db)
    env = {**os.environ, "COLUMNS": "200"}
    done = subprocess.run([sys.executable, "-m", "flows.cli", "deploy", NAME, "--work-pool", "bench-pg",
                           "--prefect-file", str(work / "prefect.yaml")], cwd=ROOT, env=env,
                          capture_output=True, text=True)
    if done.returncode != 0:
        print(done.stdout + done.stderr)
        return 1
    worker_log = work / "worker.log"
    # The flow-run processes inherit the worker's environment and write to its log: their
    # warnings and errors (Ergon turns Prefect's console log off) are evidence here.
    worker_env = {**env, "PREFECT_WORKER_QUERY_SECONDS": "1", "PREFECT_WORKER_PREFETCH_SECONDS": "5",
                  "PREFECT_LOGGING_HANDLERS_CONSOLE_LEVEL": "WARNING"}
    with open(worker_log, "ab") as log:
        worker = subprocess.Popen([sys.executable, "-m", "prefect", "worker", "start", "--pool", "bench-pg",
                                   "--limit", str(args.runs)], cwd=ROOT, env=worker_env, stdout=log,
                                  stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, start_new_session=True)
    # a worker ignores SIGTERM; SIGINT stops it and its flow runs
    stack.push("worker", lambda: _stop_group(worker, signal.SIGINT))

    from prefect.client.orchestration import get_client

    with get_client(sync_client=True) as client:
        deployment_id = client.read_deployment_by_name(f"{NAME}/{NAME}").id

    cores = os.cpu_count() or 1
    logs = (worker_log, server_log)
    print(f"{args.runs} concurrent runs on PostgreSQL: chain of {args.chain} no-op nodes + foreach of "
          f"{args.items} items (window {args.window}); process worker, Prefect server on PostgreSQL; {cores} cores; "
          f"{args.rounds} rounds of {args.repeat} alone + {args.runs} at once")
    errors: collections.Counter[str] = collections.Counter()
    reference: list[tuple[str, str]] | None = None
    alone_all: list[float] = []
    walls: list[float] = []
    ratios: list[float] = []
    for r in range(args.rounds):
        # the alone runs just before the batch: both under the same outside load
        alone: list[float] = []
        for i in range(args.repeat):
            wait_until_idle(proc.pid)
            load = loadavg()
            mark = log_sizes(*logs)
            engine_cpu, server_before = EngineCpu(), server_cpu_seconds(proc.pid) or 0.0
            engine_cpu.start()
            wall, runs = run_batch(deployment_id, 1)
            time.sleep(1)  # the flow-run process exits a moment after its run is final
            cpu = (engine_cpu.total(), (server_cpu_seconds(proc.pid) or 0.0) - server_before)
            problems, first = check_runs(runs, reference)
            reference = reference or first
            errors.update(log_errors(*logs, since=mark))
            errors.update(p.split(" ")[0] + " problem" for p in problems)
            for p in problems:
                print(f"  problem: {p}")
            alone.append(wall)
            fr = runs[0]
            phases = (f"created→Running {(fr.start_time - fr.created).total_seconds():.1f}, Running→end "
                      f"{(fr.end_time - fr.start_time).total_seconds():.1f}; ") if fr.start_time and fr.end_time else ""
            print(f"  round {r + 1} alone #{i + 1}: {wall:.2f} s  ({phases}load {load}; CPU: flow-run process "
                  f"{cpu[0]:.1f} s, Prefect server {cpu[1]:.1f} s)", flush=True)
        alone_median = statistics.median(alone)
        alone_all += alone

        wait_until_idle(proc.pid)
        load = loadavg()
        mark = log_sizes(*logs)
        before = db_counters(admin, [prefect_name, store_name])
        sampler = Sampler(admin, {"prefect": prefect_name, "ergon": store_name})
        sampler.start()
        engine_cpu, server_before = EngineCpu(), server_cpu_seconds(proc.pid) or 0.0
        engine_cpu.start()
        try:
            wall, runs = run_batch(deployment_id, args.runs)
        finally:
            sampler.stop_event.set()
            sampler.join(timeout=5)
        time.sleep(1)
        cpu = (engine_cpu.total(), (server_cpu_seconds(proc.pid) or 0.0) - server_before)
        load_after = loadavg()
        problems, _ = check_runs(runs, reference)
        after = db_counters(admin, [prefect_name, store_name])
        batch_errors = log_errors(*logs, since=mark)
        batch_errors.update(p.split(" ")[0] + " problem" for p in problems)
        for name in (prefect_name, store_name):
            d = after[name][0] - before[name][0]
            c = after[name][1] - before[name][1]
            if d or c:
                batch_errors[f"deadlocks/conflicts in {name.split('_')[0]}"] += d + c
        errors.update(batch_errors)
        walls.append(wall)
        ideal = alone_median * args.runs / cores
        ratios.append(wall / ideal)
        durations = sorted((fr.end_time - fr.created).total_seconds() for fr in runs if fr.end_time)
        # created → Running: the worker's poll and the flow-run process start (imports, compiling
        # the definitions, opening the store); Running → end: the flow body
        pickup = statistics.median((fr.start_time - fr.created).total_seconds() for fr in runs if fr.start_time)
        body = statistics.median((fr.end_time - fr.start_time).total_seconds() for fr in runs
                                 if fr.start_time and fr.end_time)
        print(f"  round {r + 1} {args.runs} at once: wall {wall:.2f} s, ideal {ideal:.2f} s (alone median "
              f"{alone_median:.2f} × {args.runs} / {cores}), ratio {wall / ideal:.2f}  (load before {load}, after "
              f"{load_after})\n"
              f"    per run created→end: min {durations[0]:.1f}, median {statistics.median(durations):.1f}, "
              f"max {durations[-1]:.1f} s (median created→Running {pickup:.1f}, Running→end {body:.1f}); "
              f"CPU: flow-run processes {cpu[0]:.1f} s "
              f"({cpu[0] / args.runs:.1f} s a run), Prefect server {cpu[1]:.1f} s → CPU floor "
              f"{(cpu[0] + cpu[1]) / cores:.1f} s on {cores} cores (PostgreSQL not counted)")
        print(sampler.report())
        for p in problems[:10]:
            print(f"  problem: {p}")
        if batch_errors:
            print(f"  errors: {dict(batch_errors)}")
    alone_median = statistics.median(alone_all)
    ratio = statistics.median(ratios)
    total = sum(errors.values())
    print(f"alone (median of {len(alone_all)}): {alone_median:.2f} s")
    print(f"{args.runs} at once (median of {len(walls)}): {statistics.median(walls):.2f} s")
    print(f"ideal (alone × {args.runs} / {cores} cores): {alone_median * args.runs / cores:.2f} s")
    print(f"ratio wall / ideal (median of the rounds' ratios, each against its own alone runs): {ratio:.2f}  "
          f"(aim <= 1.5) {'met' if ratio <= 1.5 else 'NOT met'}")
    print(f"errors: {total}{f' {dict(errors)}' if total else ''}  (aim 0)")
    return 0 if total == 0 else 1


class EngineCpu(threading.Thread):
    """CPU of the flow-run processes (``python -m prefect.engine``), sampled every 0.2 s: the last
    figure seen of each process (what it used in its last < 0.2 s is missed)."""

    def __init__(self) -> None:
        super().__init__(daemon=True)
        self.seen: dict[int, float] = {}
        self.stop_event = threading.Event()

    def run(self) -> None:
        ticks = os.sysconf("SC_CLK_TCK")
        while not self.stop_event.is_set():
            for entry in os.listdir("/proc"):
                if entry.isdigit():
                    try:
                        if b"prefect.engine" not in Path(f"/proc/{entry}/cmdline").read_bytes():
                            continue
                        fields = Path(f"/proc/{entry}/stat").read_text().rsplit(")", 1)[1].split()
                    except OSError:
                        continue
                    self.seen[int(entry)] = (int(fields[11]) + int(fields[12])) / ticks
            self.stop_event.wait(0.2)

    def total(self) -> float:
        self.stop_event.set()
        self.join(timeout=5)
        return sum(self.seen.values())


if __name__ == "__main__":
    sys.exit(main())

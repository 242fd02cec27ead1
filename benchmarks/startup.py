"""Start-up time of the `ergon` command: `ergon check FILE` (cold and warm) and `ergon --help` against `python -c pass`.

`ergon check FILE` is timed three ways: with its check cache empty (a state folder of its own
each round, ``ERGON_HOME``: the check runs and its result is stored), with ``--no-cache`` (the
check alone), and warm (the result stored by the warm-up run is printed;
:mod:`flows.cli.check_cache`). Each round starts one fresh process of each command, in turn, so a
machine that gets busier or quieter during the script slows them all alike; the figures are
medians over the rounds, wall time and CPU time (user + system, from ``wait4``), with the
bytecode caches on (see :data:`CHILD_ENV`). Then one
``python -X importtime`` of each Ergon command gives the ten modules that cost most on their own
(self time) and the top-level packages by cumulative time.

    python benchmarks/startup.py [--rounds 15] [--file definitions/kyc_check.yaml] [--before DIR]

``--before DIR`` also times `ergon check FILE` and `ergon --help` run from another checkout (say
a ``git worktree`` of an older commit: ``python -m flows.cli`` started in that folder imports its code),
in the same rounds, so a before → after comparison sees the same machine load. Both sides are
then started as ``python -m flows.cli``.

Aims: ``ergon --help`` in at most 0.1 s wall and ``ergon check FILE`` in at most 0.15 s
(:data:`AIMS`), judged for each way the check is timed. The median wall time, its difference to
``python -c pass`` and the ratio are printed; on a busy machine the CPU time is the steadier figure.

One more row is the floor under a check that runs: the third-party modules a cold ``ergon check``
imports (pydantic, jsonschema, Jinja, PyYAML and what they import, read from its ``-X
importtime``), imported in a fresh process without any of Ergon's code (:func:`_libraries`).
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

#: The children's environment: the bytecode caches are written and used, as they are for an
#: installed package (pip compiles them at install), even where this shell turns them off
#: (``PYTHONDONTWRITEBYTECODE``) — without them every run compiles the compiler's sources again,
#: about a fifth of `ergon check`'s time, which no user of an installed Ergon pays.
CHILD_ENV = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}


#: The most wall time each command may take, in seconds (median), keyed by its place in the table.
AIMS = {"check": 0.15, "help": 0.1}


def _ergon() -> list[str]:
    """The installed console script beside this interpreter, else ``python -m flows.cli``."""
    script = Path(sys.executable).with_name("ergon")
    return [str(script)] if script.exists() else [sys.executable, "-m", "flows.cli"]


def _timed(argv: list[str], cwd: Path = ROOT, env: dict[str, str] = CHILD_ENV) -> tuple[float, float, int]:
    """(wall seconds, CPU seconds of the child, exit code) of one fresh process."""
    start = time.perf_counter()
    proc = subprocess.Popen(argv, cwd=cwd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - start
    proc.returncode = os.waitstatus_to_exitcode(status)
    return wall, usage.ru_utime + usage.ru_stime, proc.returncode


def _importtime(argv: list[str], env: dict[str, str]) -> list[tuple[int, int, str]]:
    """``-X importtime`` of one process: (self µs, cumulative µs, indented module name) per import."""
    python, rest = (argv[0], argv[1:]) if argv[0] == sys.executable else (sys.executable, argv)
    done = subprocess.run([python, "-X", "importtime", *rest], cwd=ROOT, env=env, capture_output=True, text=True)
    rows = []
    for line in done.stderr.splitlines():
        if not line.startswith("import time:") or "self [us]" in line:
            continue
        self_us, cumulative, name = line.removeprefix("import time:").split("|", 2)
        rows.append((int(self_us), int(cumulative), name.rstrip()))
    return rows


#: Ergon's own top-level packages (and the editable install's path hook): left out of the floor.
OWN = ("compiler", "flows", "ui", "__editable__")


def _libraries(argv: list[str], env: dict[str, str]) -> list[str]:
    """The third-party modules ``argv`` imports, in the order ``-X importtime`` reports them
    (a module after those it imports): every module outside the standard library and Ergon."""
    names = []
    for _, _, name in _importtime(argv, env):
        module = name.strip()
        top = module.split(".")[0]
        if top not in sys.stdlib_module_names and not top.startswith(OWN) and module not in names:
            names.append(module)
    return names


def _import_all(names: list[str]) -> list[str]:
    """A ``python -c`` command importing ``names``. ``-X importtime`` also lists the imports that
    failed (a format checker jsonschema tries, a platform's module): they fail here too."""
    code = ("import importlib\nfor name in " + repr(names) + ":\n"
            "    try:\n        importlib.import_module(name)\n    except ImportError:\n        pass\n")
    return [sys.executable, "-c", code]


def _summary(label: str, argv: list[str], env: dict[str, str]) -> None:
    rows = _importtime(argv, env)
    total = sum(s for s, _, _ in rows)
    print(f"\n{label}: {len(rows)} modules imported, {total / 1000:.0f} ms of imports (one run, -X importtime)")
    print("  top 10 by self time:")
    for self_us, cumulative, name in sorted(rows, reverse=True)[:10]:
        print(f"    {self_us / 1000:7.1f} ms self {cumulative / 1000:7.1f} ms cumulative  {name.strip()}")
    tops = [(c, n.strip()) for _, c, n in rows if not n.startswith("  ")]  # top-level imports only
    print("  top-level imports by cumulative time:",
          ", ".join(f"{n} {c / 1000:.0f} ms" for c, n in sorted(tops, reverse=True)[:8]))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=15, help="fresh processes of each command (≥ 5)")
    parser.add_argument("--file", default="definitions/kyc_check.yaml", help="the definition `ergon check` reads")
    parser.add_argument("--before", type=Path, help="another checkout of Ergon to time beside this one")
    args = parser.parse_args()
    rounds = max(5, args.rounds)
    ergon = [sys.executable, "-m", "flows.cli"] if args.before else _ergon()
    check = f"ergon check {args.file}"
    empty, no_cache, warm = f"{check} (cache empty)", f"ergon check --no-cache {args.file}", f"{check} (cache warm)"
    homes = tempfile.TemporaryDirectory(prefix="ergon-startup-")
    libraries = _libraries([*ergon, "check", "--no-cache", args.file], {**CHILD_ENV, "ERGON_HOME": homes.name})
    floor = f"the check's {len(libraries)} third-party modules, without Ergon"
    commands: dict[str, list[str]] = {
        "python -c pass": [sys.executable, "-c", "pass"],
        floor: _import_all(libraries),
        empty: [*ergon, "check", args.file],
        no_cache: [*ergon, "check", "--no-cache", args.file],
        warm: [*ergon, "check", args.file],
        "ergon --help": [*ergon, "--help"],
    }
    folders = {label: ROOT for label in commands}
    if args.before:  # an older checkout has no cache (nor --no-cache): its check is the check itself
        for label, argv in ((f"{check} (before)", commands[warm]), ("ergon --help (before)", commands["ergon --help"])):
            commands[label] = argv
            folders[label] = args.before.resolve()
    fresh = iter(range(1_000_000))

    def env(label: str) -> dict[str, str]:
        """The child's environment; for the empty cache, a state folder no run has used yet."""
        return {**CHILD_ENV, "ERGON_HOME": f"{homes.name}/{next(fresh)}"} if label == empty else CHILD_ENV

    for label, argv in commands.items():  # warm the file-system, bytecode and check caches once
        subprocess.run(argv, cwd=folders[label], env=env(label), capture_output=True)
    walls: dict[str, list[float]] = {k: [] for k in commands}
    cpus: dict[str, list[float]] = {k: [] for k in commands}
    for _ in range(rounds):
        for label, argv in commands.items():
            wall, cpu, code = _timed(argv, folders[label], env(label))
            if code != 0:
                raise SystemExit(f"`{label}` exited {code}")
            walls[label].append(wall)
            cpus[label].append(cpu)
    base = "python -c pass"
    print(f"start-up, median of {rounds} fresh processes each (alternating), {os.cpu_count()} cores, "
          f"load {os.getloadavg()[0]:.1f}")
    print(f"  {'command':<60} {'wall s':>7} {'min':>6} {'cpu s':>6}  {'− pass (wall)':>13} {'× pass':>7}")
    for label in commands:
        wall, cpu = statistics.median(walls[label]), statistics.median(cpus[label])
        diff = wall - statistics.median(walls[base])
        ratio = wall / statistics.median(walls[base])
        print(f"  {label:<60} {wall:7.3f} {min(walls[label]):6.3f} {cpu:6.3f}  {diff:+13.3f} {ratio:7.1f}")
    for label, aim in ((empty, AIMS["check"]), (no_cache, AIMS["check"]), (warm, AIMS["check"]), ("ergon --help", AIMS["help"])):
        verdict = "met" if statistics.median(walls[label]) <= aim else "NOT met"
        print(f"  aim: `{label}` ≤ {aim} s wall — {verdict}")
    print(f"  floor of a check that runs: {floor}, {statistics.median(walls[floor]):.3f} s wall")
    for label, argv in commands.items():
        if label not in (base, floor) and folders[label] == ROOT:
            _summary(label, argv, env(label))
    homes.cleanup()
    return 0


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/env python3
"""Set up and run Ergon with nothing but python3: `python3 dev.py demo` / `python3 dev.py test`.

* ``setup``  creates ``.venv`` and installs the project with its test extras (re-run only when
  ``pyproject.toml`` changed), plus, when running as root on Debian, the OS packages the full
  test suite drives (chromium for the dashboard's browser tests, PostgreSQL for the cluster test).
* ``demo``   sets up with Ergon's own dependencies only (no extras: the demo's definitions need
  neither the dashboard, V8 nor PostgreSQL), installed as a user installs it (a wheel built from
  the checkout, not an editable install: setuptools warns at every editable install of this
  layout; ``setup`` and ``test`` make it editable), checks every definition, runs the demo definition
  on the embedded default (local SQLite store, local Prefect server, offline model), and ends by
  saying what it left running (the Prefect server) and what to try next. A ``.venv`` set up for
  the tests already has all of it.
* ``test``   sets up and runs the whole test suite; extra arguments go to pytest.
* ``lint``   sets up and runs ruff and mypy over the lint gate's scope (``[tool.ruff]`` and
  ``[tool.mypy]`` in ``pyproject.toml``); either one failing fails it.
* ``screenshots``  sets up and regenerates the dashboard's screenshots (every page at 1280 and
  1600 px, into ``screenshots/``) with ``scripts/screenshots.py``.
* ``docs``   sets up and writes the documentation's generated reference pages (``docs/generate.py``;
  ``--check`` only compares them, ``--build`` also builds the site with ``--strict``).

Standard library only: this file runs before any dependency is installed.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent
VENV = ROOT / ".venv"
BIN = VENV / ("Scripts" if os.name == "nt" else "bin")
PY = BIN / "python"
STAMP = VENV / ".ergon-installed"
#: OS packages (Debian names) the full suite uses, and a binary that shows each is present.
OS_PACKAGES = {"chromium": "/usr/bin/chromium", "postgresql": "/usr/lib/postgresql"}
DEMO_DEFINITION = "vendor_onboarding"  # branch, an interaction on the offline model, a sub-process


def run(cmd: list[str], **kw) -> int:
    print("+", " ".join(str(c) for c in cmd), flush=True)
    return subprocess.call([str(c) for c in cmd], cwd=ROOT, **kw)


def _requirements_hash(extras: str) -> str:
    return hashlib.sha256((ROOT / "pyproject.toml").read_bytes()).hexdigest() + f" {extras}"


def setup(extras: str = "test", *, editable: bool = True) -> None:
    """Create the virtualenv and install the project with ``extras`` (``test`` pulls every extra;
    "" none), idempotent and fast when up to date; a ``.venv`` set up with ``test`` serves all.
    ``editable=False`` installs the wheel built from the checkout (edits need a new install)."""
    if not PY.exists():
        if run([sys.executable, "-m", "venv", VENV]) != 0:
            sys.exit("could not create .venv (on Debian: apt-get install python3-venv)")
    if STAMP.exists() and STAMP.read_text() in (_requirements_hash(extras), _requirements_hash("test")):
        return
    if run([PY, "-m", "pip", "install", "--quiet", "--upgrade", "pip"]) != 0:
        sys.exit("pip upgrade failed")
    if run([PY, "-m", "pip", "install", "--quiet", *(["-e"] if editable else []), f".[{extras}]" if extras else "."]) != 0:
        sys.exit("installing the project failed")
    STAMP.write_text(_requirements_hash(extras))


def os_packages() -> None:
    """Install chromium and PostgreSQL from Debian's packages when we can (root + apt)."""
    missing = [pkg for pkg, probe in OS_PACKAGES.items() if not Path(probe).exists()]
    if not missing:
        return
    if os.geteuid() != 0 or not shutil.which("apt-get"):
        print(f"note: {', '.join(missing)} not installed and cannot be installed here; "
              "the tests that need them will be skipped with the reason", flush=True)
        return
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    if run(["apt-get", "update", "-qq"], env=env) != 0 or run(
        ["apt-get", "install", "-y", "-qq", "--no-install-recommends", *missing], env=env
    ) != 0:
        print(f"warning: could not install {', '.join(missing)}", flush=True)


def start_postgres() -> tuple[str, callable] | tuple[None, None]:
    """A throwaway PostgreSQL cluster on loopback for the store's PostgreSQL tests (root + Debian
    packages only; elsewhere those tests skip with their reason). Returns (URL, stop)."""
    import glob
    import socket
    import tempfile
    import time

    bins = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"))
    if os.geteuid() != 0 or not bins or not shutil.which("runuser"):
        return None, None
    bindir = Path(bins[-1]).parent
    data = Path(tempfile.mkdtemp(prefix="ergon-pg-"))
    shutil.chown(data, "postgres", "postgres")
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    as_pg = ["runuser", "-u", "postgres", "--"]
    quiet = {"stdout": subprocess.DEVNULL, "stderr": subprocess.DEVNULL}
    if subprocess.call([*as_pg, bindir / "initdb", "-D", data / "db", "-U", "postgres", "--auth=trust"], **quiet) != 0:
        return None, None
    opts = f"-p {port} -c listen_addresses=127.0.0.1 -k {data}"
    if subprocess.call([*as_pg, bindir / "pg_ctl", "-D", data / "db", "-o", opts, "-l", data / "log", "-w", "start"], **quiet) != 0:
        return None, None

    def stop() -> None:
        subprocess.call([*as_pg, bindir / "pg_ctl", "-D", data / "db", "-m", "fast", "stop"], **quiet)
        shutil.rmtree(data, ignore_errors=True)

    for _ in range(50):
        if subprocess.call([bindir / "psql" if (bindir / "psql").exists() else "psql", "-h", "127.0.0.1", "-p", str(port),
                            "-U", "postgres", "-c", "create database ergon_test"], **quiet) == 0:
            return f"postgresql+psycopg://postgres@127.0.0.1:{port}/ergon_test", stop
        time.sleep(0.2)
    stop()
    return None, None


def demo() -> int:
    setup(extras="", editable=False)
    ergon = BIN / "ergon"
    if run([ergon, "check", "definitions"]) != 0:
        return 1
    code = run([ergon, "run", DEMO_DEFINITION, "--input", "vendor_name=Acme Tools", "--input", "country=FR",
                "--input", "category=hardware"])
    # what the demo leaves behind, and where to go next
    print("\nLeft running: the Prefect server the run used (stop Ergon's own with `ergon server stop`):", flush=True)
    run([ergon, "server", "status"])
    print("\nNext:\n"
          "  source .venv/bin/activate\n"
          "  ergon runs list                      # the run above; `ergon runs show RUN_ID` for its visits\n"
          "  ergon tasks list                     # a human task waiting for an answer, if the run paused\n"
          "  ergon test                           # the shipped definitions' own tests (the dashboard: pip install '.[ui]', ergon ui)",
          flush=True)
    return code


def test(args: list[str]) -> int:
    setup()
    os_packages()
    env = dict(os.environ)
    pg_url, stop_pg = (None, None) if env.get("ERGON_TEST_POSTGRES_URL") else start_postgres()
    if pg_url:
        env["ERGON_TEST_POSTGRES_URL"] = pg_url
        print(f"PostgreSQL for the tests at {pg_url}", flush=True)
    try:
        code = run([PY, "-m", "pytest", *args], env=env)
    finally:
        if stop_pg:
            stop_pg()
    if code == 5:  # pytest: no tests collected
        if args:
            print("pytest collected no tests for this selection", flush=True)
            return 0
        print("error: the test suite collected no tests", flush=True)
        return 1
    return code


def lint() -> int:
    setup()
    codes = [run([BIN / "ruff", "check", "."]), run([BIN / "mypy"])]  # both run, so one go shows everything
    return 1 if any(codes) else 0


def main(argv: list[str]) -> int:
    if not argv or argv[0] not in ("setup", "demo", "test", "lint", "screenshots", "docs"):
        print(__doc__)
        return 2
    if argv[0] == "setup":
        setup()
        return 0
    if argv[0] == "demo":
        return demo()
    if argv[0] == "lint":
        return lint()
    if argv[0] == "screenshots":
        setup()
        os_packages()  # chromium
        return run([PY, ROOT / "scripts" / "screenshots.py", *argv[1:]])
    if argv[0] == "docs":
        setup()
        return run([PY, ROOT / "docs" / "generate.py", *argv[1:]])
    return test(argv[1:])


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

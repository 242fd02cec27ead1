"""`ergon ui`: start the Streamlit dashboard on this machine.

It runs ``python -m streamlit run ui/server.py`` (the app of ``ui/app.py`` and the sign-in
endpoints of ``ui/web.py`` as one ``st.App``; through ``ui/serve.py``, which fixes deep links
on a fresh server) in the foreground (Ctrl-C stops it), from the installed ``ui`` package, with
the settings of ``ui/streamlit.toml``: headless, bound to 127.0.0.1 by default, Streamlit's
usage statistics off and no file watcher (the dashboard is not being edited while it serves). ``ERGON_UI_REQUIRE_LOGIN=1`` makes every page
ask for a sign-in (by default viewing is open and acting needs one; see ``ui/auth.py``). A
setting the dashboard cannot use (``ERGON_UI_SESSION_HOURS`` out of its range, see
``ui/session.py``) makes the command refuse to start, with one sentence naming it, instead of
failing at the first sign-in.

On POSIX the command *becomes* Streamlit (``exec``) instead of starting it as a child: a signal
sent to ``ergon ui`` (SIGTERM from a service manager or ``kill``, SIGHUP from a closed terminal)
then reaches the dashboard itself, and no Streamlit is ever left serving with its parent gone.
Elsewhere the child is started and stopped with the command.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Annotated

from cyclopts import Parameter

from flows.cli import bounds


#: The dashboard and its Streamlit settings, inside the installed `ui` package (not the checkout:
#: `ergon ui` runs from any folder).
UI_PACKAGE = Path(__file__).resolve().parents[2] / "ui"
APP = UI_PACKAGE / "app.py"
SERVER = UI_PACKAGE / "server.py"
CONFIG = UI_PACKAGE / "streamlit.toml"


def config_flags() -> list[str]:
    """``CONFIG`` as Streamlit command-line flags (``--section.key=value``): Streamlit reads
    config files only from ``~/.streamlit`` and the current folder's ``.streamlit``."""
    import tomllib

    data = tomllib.loads(CONFIG.read_text(encoding="utf-8")) if CONFIG.is_file() else {}
    flags = []
    for section, values in data.items():
        for key, value in values.items():
            text = str(value).lower() if isinstance(value, bool) else str(value)
            flags.append(f"--{section}.{key}={text}")
    return flags


def streamlit_command(port: int = 8501, host: str = "127.0.0.1") -> list[str]:
    """The command line that serves the dashboard (tests and benchmarks start it the same way)."""
    return [
        sys.executable, "-m", "ui.serve", "run", str(SERVER), *config_flags(),
        f"--server.address={host}", f"--server.port={port}",
    ]


def ui(*, port: Annotated[int, Parameter(validator=bounds.PORT)] = 8501, host: str = "127.0.0.1") -> int:
    """Start the dashboard (runs, a run's story, the task inbox, artifacts, definitions).

    Parameters
    ----------
    port
        Port to listen on.
    host
        Address to bind; the default serves this machine only.
    """
    missing = next((f for f in (APP, SERVER, CONFIG) if not f.is_file()), None)
    if missing is not None:
        print(f"error: the dashboard is missing ({missing}); reinstall Ergon", file=sys.stderr)
        return 2
    from importlib.util import find_spec

    absent = [name for name in ("streamlit", "pandas", "starlette") if find_spec(name) is None]
    if absent:  # the dashboard's packages are an optional dependency, the `ui` extra
        print(f"error: the dashboard needs {', '.join(absent)}, which {'is' if len(absent) == 1 else 'are'} not installed; "
              "install them with: pip install 'ergon[ui]'", file=sys.stderr)
        return 2
    from ui.session import setting_error  # the installed dashboard's own check (standard library only)

    problem = setting_error()
    if problem is not None:
        print(f"error: {problem}", file=sys.stderr)
        return 2
    print(f"Ergon dashboard at http://{host}:{port}/  (Ctrl-C to stop)", file=sys.stderr, flush=True)
    # `-m ui.serve` must import the same `ui` package as APP whatever the working directory.
    path = os.pathsep.join(p for p in (str(APP.parents[1]), os.environ.get("PYTHONPATH")) if p)
    command, env = streamlit_command(port, host), {**os.environ, "PYTHONPATH": path}
    if os.name == "posix":
        sys.stdout.flush()
        os.execve(command[0], command, env)  # does not return: this process is the dashboard now
    child = subprocess.Popen(command, env=env)
    try:
        return child.wait()
    except KeyboardInterrupt:
        return 0
    finally:
        if child.poll() is None:  # stopped by something other than the dashboard exiting
            child.terminate()
            try:
                child.wait(timeout=10)
            except subprocess.TimeoutExpired:
                child.kill()

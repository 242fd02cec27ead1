"""Ergon built into a wheel and installed into a fresh virtualenv outside the checkout.

The wheel is built without build isolation and without an index (no network); the virtualenv
gets the wheel without dependencies and is lent the dependencies of this interpreter's
site-packages through a plain path line in a ``.pth`` file (the checkout's editable-install
finder is *not* loaded that way: ``.pth`` files of a directory added by a path line are not
processed); the lent Prefect gets the ``prefect`` command pip would have made for it.
:func:`run_in` runs the new virtualenv's ``ergon`` in a folder of the test's.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
#: what the wheel is built from (copied: building in place would leave build/ in the checkout)
SOURCES = ("pyproject.toml", "README.md", "compiler", "flows", "ui")


def build_venv(base: Path) -> Path:
    """A virtualenv under ``base`` with the wheel installed (and only the dependencies lent)."""
    src = base / "src"
    src.mkdir()
    for name in SOURCES:
        if (ROOT / name).is_dir():
            shutil.copytree(ROOT / name, src / name, ignore=shutil.ignore_patterns("__pycache__", "*.pyc", "node_modules"))
        else:
            shutil.copy(ROOT / name, src / name)
    dist = base / "dist"
    built = subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "--no-index",
                            "--wheel-dir", str(dist), str(src)], capture_output=True, text=True, timeout=300)
    assert built.returncode == 0, built.stdout[-3000:] + built.stderr[-3000:]
    (wheel,) = dist.glob("ergon-*.whl")

    env_dir = base / "venv"
    made = subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(env_dir)], capture_output=True, text=True)
    assert made.returncode == 0, made.stderr
    python = env_dir / "bin" / "python"
    installed = subprocess.run([sys.executable, "-m", "pip", "--python", str(python), "install", "--no-deps",
                                "--no-index", str(wheel)], capture_output=True, text=True, timeout=300)
    assert installed.returncode == 0, installed.stdout[-3000:] + installed.stderr[-3000:]
    site = Path(subprocess.check_output([str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                                        text=True).strip())
    ours = {sysconfig.get_paths()["purelib"], sysconfig.get_paths()["platlib"]}
    # plain path lines: appended to sys.path after the venv's own site-packages; not site.addsitedir
    (site / "ergon_test_dependencies.pth").write_text("".join(f"{p}\n" for p in sorted(ours)))
    # the console script pip makes when it installs Prefect with Ergon (the docs' `prefect worker start`)
    script = env_dir / "bin" / "prefect"
    script.write_text(f"#!{python}\nimport sys\nfrom prefect.cli import app\nsys.exit(app())\n")
    script.chmod(0o755)
    return env_dir


def run_in(venv: Path, cwd: Path, env: dict[str, str], *args: str, timeout: float = 300) -> subprocess.CompletedProcess:
    """``ergon ARGS`` of the installed virtualenv, from ``cwd`` (with ``PWD`` set as a shell would)."""
    return subprocess.run([str(venv / "bin" / "ergon"), *args], cwd=cwd, env={**env, "PWD": str(cwd)},
                          capture_output=True, text=True, timeout=timeout)


def last_json(done: subprocess.CompletedProcess) -> dict:
    return json.loads(done.stdout.strip().splitlines()[-1])

"""Prefect reads its settings when it is first imported, so the CLI must point it at its server
(``flows.settings.configure_prefect_env`` + ``flows.server.ensure_api_url``) before anything
imports it. Loading the definitions — the tools folder, the built-in tools, the CLI's modules —
happens earlier than that in `ergon run`; it must not import Prefect, or a run without
``PREFECT_API_URL`` falls into Prefect's temporary server (and loses its records on exit)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

PROBE = """
import sys
import flows.cli
from flows.catalog import Catalog
catalog = Catalog.load()
catalog.compile("vendor_onboarding")
loaded = sorted(m for m in ("prefect", "litellm") if m in sys.modules)
print(",".join(loaded) or "none")
"""


def test_loading_the_cli_and_the_definitions_imports_neither_prefect_nor_litellm(tmp_path):
    env = {k: v for k, v in os.environ.items() if not k.startswith("PREFECT_")}
    env.update({"ERGON_HOME": str(tmp_path), "ERGON_DEFINITIONS": str(ROOT / "definitions")})
    done = subprocess.run([sys.executable, "-c", PROBE], cwd=ROOT, env=env, capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "none", f"imported before the runtime is configured: {done.stdout.strip()}"

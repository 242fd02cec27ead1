"""Ergon's wheel installed without its extras: a worker's install, without the dashboard, V8 or PostgreSQL.

The wheel is built and installed as in :mod:`installed`; the dependencies lent to the new
virtualenv are this interpreter's site-packages *minus* every distribution that only the extras
bring (``ui``, ``js``, ``postgres``: computed from the installed wheel's own metadata, the
dependency closure of ``ergon[all]`` less that of ``ergon``). They are lent as a folder of links
to the site-packages' entries, those distributions' files left out, so in the new virtualenv
``import py_mini_racer`` (or ``streamlit``, ``psycopg``) fails as it does after
``pip install ergon``. No index is needed.

With that install, ``ergon check`` and ``ergon run`` of Jinja2-only definitions work, and what
needs an extra is refused naming it: Handlebars/JST prompts and ``runJavascriptCode`` by
``ergon check`` (``pip install 'ergon[js]'``), ``ergon ui`` (``ergon[ui]``), a PostgreSQL store
(``ergon[postgres]``).
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import sysconfig
import tomllib
from importlib import metadata
from pathlib import Path

import pytest
from packaging.requirements import Requirement

sys.path.insert(0, str(Path(__file__).resolve().parent))
from installed import ROOT, build_venv, last_json, run_in  # noqa: E402

EXTRAS = ("ui", "js", "postgres")


def _name(text: str) -> str:
    return re.sub(r"[-_.]+", "-", text).lower()


def _closure(ergon: metadata.Distribution, extras: set[str]) -> set[str]:
    """The installed distributions ``ergon[extras]`` needs, by normalized name (``ergon``: the
    installed wheel's metadata; the others' from this interpreter)."""
    seen: set[str] = set()
    todo: list[tuple[str, set[str]]] = [("ergon", extras)]
    while todo:
        name, wanted = todo.pop()
        key = f"{_name(name)}[{','.join(sorted(wanted))}]"
        if key in seen:
            continue
        seen.add(key)
        try:
            dist = ergon if name == "ergon" else metadata.distribution(name)
        except metadata.PackageNotFoundError:
            continue
        for line in dist.requires or []:
            req = Requirement(line)
            envs = [{"extra": e} for e in wanted] or [{"extra": ""}]
            if req.marker is None or any(req.marker.evaluate(env) for env in envs):
                todo.append((req.name, set(req.extras)))
    return {k.split("[")[0] for k in seen}


def _tops(names: set[str], site: Path) -> set[str]:
    """The site-packages entries (packages, modules, .dist-info folders) of distributions ``names``."""
    out: set[str] = set()
    for dist in metadata.distributions(path=[str(site)]):
        if _name(dist.metadata["Name"]) in names:
            for file in dist.files or []:
                first = Path(file).parts[0]
                if first != "..":
                    out.add(first)
    return out


@pytest.fixture(scope="module")
def bare(tmp_path_factory) -> Path:
    """The wheel installed without extras, lent only what ``pip install ergon`` would bring."""
    venv = build_venv(tmp_path_factory.mktemp("bare"))
    site = Path(sysconfig.get_paths()["purelib"])
    assert site == Path(sysconfig.get_paths()["platlib"])
    (wheel_site,) = (venv / "lib").glob("python*/site-packages")
    (ergon,) = [d for d in metadata.distributions(path=[str(wheel_site)]) if d.metadata["Name"] == "ergon"]
    base, full = _closure(ergon, set()), _closure(ergon, set(EXTRAS))
    only_extras = full - base
    assert {"mini-racer", "streamlit", "psycopg", "pandas"} <= only_extras, sorted(only_extras)
    left_out = _tops(only_extras, site) - _tops(base, site)
    assert {"py_mini_racer", "streamlit", "psycopg"} <= left_out
    lent = tmp_path_factory.mktemp("lent")
    for entry in site.iterdir():
        if entry.name not in left_out and not entry.name.endswith(".pth"):
            (lent / entry.name).symlink_to(entry)
    (wheel_site / "ergon_test_dependencies.pth").write_text(f"{lent}\n")
    return venv


@pytest.fixture
def env(bare, prefect_api, store, tmp_path) -> dict[str, str]:
    clean = {k: v for k, v in os.environ.items()
             if k not in ("PYTHONPATH", "ERGON_DEFINITIONS", "VIRTUAL_ENV", "PYTHONHOME")}
    return {**clean, "ERGON_DATABASE_URL": store, "ERGON_HOME": str(tmp_path / "home"), "COLUMNS": "200"}


def test_the_wheel_declares_the_extras_and_needs_none_of_them(bare, env, tmp_path):
    probe = ("import importlib.metadata as m, importlib.util as u, json; "
             "print(json.dumps({'requires': m.requires('ergon'), 'version': m.version('ergon'), "
             "'found': [n for n in ('py_mini_racer', 'streamlit', 'pandas', 'psycopg') if u.find_spec(n)]}))")
    done = subprocess.run([str(bare / "bin" / "python"), "-c", probe], cwd=tmp_path, env=env, capture_output=True,
                          text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    found = last_json(done)
    assert found["found"] == [], "the extras' packages are not importable in the bare install"
    unconditional = {_name(Requirement(r).name) for r in found["requires"] if "extra ==" not in r}
    assert not unconditional & {"mini-racer", "streamlit", "pandas", "psycopg", "starlette"}
    for extra, needed in (("ui", {"streamlit", "pandas", "starlette"}), ("js", {"mini-racer"}),
                          ("postgres", {"psycopg"})):
        assert needed <= {_name(Requirement(r).name) for r in found["requires"] if f'extra == "{extra}"' in r}
    declared = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["version"]
    assert found["version"] == declared
    version = run_in(bare, tmp_path, env, "--version")
    assert version.returncode == 0 and version.stdout.strip() == declared


HANDLEBARS = """
kind: interaction
name: hb_greeting
prompts:
  - role: user
    content_type: handlebars
    template: "Greet {{name}}"
input_schema:
  type: object
  properties:
    name: {type: string}
"""

JST = """
kind: interaction
name: jst_greeting
prompts:
  - role: user
    content_type: jst
    template: "`Greet ${name}`"
input_schema:
  type: object
  properties:
    name: {type: string}
"""

JAVASCRIPT_STEP = """
kind: workflow
name: js_step
input_schema:
  type: object
  properties: {n: {type: number}}
steps:
  - name: runJavascriptCode
    params:
      code: "n + 1"
      data: {n: "${n}"}
"""


@pytest.mark.prefect
def test_jinja_definitions_check_and_run_and_javascript_is_refused_with_the_extra(bare, env, tmp_path):
    project = tmp_path / "worker-repo"
    project.mkdir()
    assert run_in(bare, project, env, "init").returncode == 0
    checked = run_in(bare, project, env, "check")
    assert checked.returncode == 0 and "0 error(s)" in checked.stdout, checked.stdout + checked.stderr
    ran = run_in(bare, project, env, "run", "hello_process", "--input", "name=Ada", "--json")
    assert ran.returncode == 0, ran.stdout + ran.stderr
    assert last_json(ran)["status"] == "completed"

    for name, text in (("hb.yaml", HANDLEBARS), ("jst.yaml", JST), ("js_step.yaml", JAVASCRIPT_STEP)):
        (project / "definitions" / name).write_text(text)
    refused = run_in(bare, project, env, "check")
    out = refused.stdout + refused.stderr
    assert refused.returncode == 1, out
    assert "Traceback" not in out and "ImportError" not in out and "ModuleNotFoundError" not in out
    for name, code in (("hb.yaml", "unsupported-template"), ("jst.yaml", "unsupported-template"),
                       ("js_step.yaml", "dsl-unsupported")):
        lines = [line for line in refused.stdout.splitlines() if name in line]
        assert lines and code in lines[0], (name, refused.stdout)
    assert refused.stdout.count("pip install 'ergon[js]'") >= 3, refused.stdout
    assert "hello_process.yaml" not in refused.stdout, "the Jinja2 definitions stay clean"


def test_the_dashboard_and_postgres_name_their_extras(bare, env, tmp_path):
    ui = run_in(bare, tmp_path, env, "ui", "--port", "8599", timeout=60)
    assert ui.returncode == 2 and "pip install 'ergon[ui]'" in ui.stderr and "streamlit" in ui.stderr, ui.stderr
    assert "Traceback" not in ui.stderr
    pg = run_in(bare, tmp_path, {**env, "ERGON_DATABASE_URL": "postgresql+psycopg://u:p@127.0.0.1:9/ergon"},
                "runs", "list", timeout=60)
    assert pg.returncode == 1 and "pip install 'ergon[postgres]'" in pg.stderr, pg.stdout + pg.stderr
    assert "Traceback" not in pg.stderr

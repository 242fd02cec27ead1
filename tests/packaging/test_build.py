"""The sdist and the wheel build cleanly from the working tree, and ship every file Ergon needs.

``python -m build`` runs on a copy of the working tree (the files git tracks or would track), so
nothing lands in the checkout, without build isolation (this interpreter's setuptools and
``build``, no index needed). Building the sdist and then the wheel from it is what ``python -m
build`` does and what a packager's build farm does; the wheel built straight from the tree is
what ``pip install .`` installs: both must hold the same files.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import tarfile
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
#: files of the packages that are not shipped: the JavaScript bundles' sources (compiler/js/vendor
#: holds what they build)
NOT_SHIPPED = ("compiler/js/src/",)
#: a build's warnings: setuptools' "WARNING Package ... is absent", SetuptoolsDeprecationWarning, ...
WARNING = re.compile(r"warning|deprecat", re.IGNORECASE)
#: the build's lines that name the files it copies (a module called `warnings.py` is no warning)
FILE_LINES = ("copying ", "adding '", "creating ", "removing ", "hard linking ", "writing ")


def _working_tree(dest: Path) -> Path:
    listed = subprocess.run(["git", "ls-files", "--cached", "--others", "--exclude-standard", "-z"], cwd=ROOT,
                            capture_output=True, text=True, check=True).stdout
    for rel in filter(None, listed.split("\0")):
        source = ROOT / rel
        if source.is_file():  # a file deleted in the working tree is still in the index
            (dest / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, dest / rel)
    return dest


def _build(src: Path, out: Path, *which: str) -> str:
    # PYTHONDONTWRITEBYTECODE makes setuptools print "byte-compiling is disabled" warnings
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONDONTWRITEBYTECODE")}
    done = subprocess.run([sys.executable, "-m", "build", "--no-isolation", *which, "--outdir", str(out), str(src)],
                          cwd=src, env=env, capture_output=True, text=True, timeout=600)
    output = done.stdout + done.stderr
    assert done.returncode == 0, output[-4000:]
    return output


@pytest.fixture(scope="module")
def built(tmp_path_factory) -> dict:
    base = tmp_path_factory.mktemp("build")
    src = _working_tree(base / "src")
    logs = {"sdist+wheel": _build(src, base / "dist"), "wheel": _build(src, base / "direct", "--wheel")}
    (sdist,) = (base / "dist").glob("ergon-*.tar.gz")
    (from_sdist,) = (base / "dist").glob("ergon-*.whl")
    (direct,) = (base / "direct").glob("ergon-*.whl")
    with tarfile.open(sdist) as tar:
        top = tar.getnames()[0].split("/")[0]
        sdist_files = {m.name.removeprefix(top + "/") for m in tar.getmembers() if m.isfile()}
    return {
        "src": src,
        "logs": logs,
        "sdist": sdist_files,
        "from_sdist": set(zipfile.ZipFile(from_sdist).namelist()),
        "direct": set(zipfile.ZipFile(direct).namelist()),
    }


def _package_files(src: Path) -> set[str]:
    """Every file of the packages in the tree, but the JavaScript sources and bytecode."""
    found = set()
    for package in ("compiler", "flows", "ui"):
        for path in (src / package).rglob("*"):
            rel = path.relative_to(src).as_posix()
            if path.is_file() and not rel.startswith(NOT_SHIPPED) and "__pycache__" not in path.parts:
                found.add(rel)
    return found


def test_the_builds_print_no_warning(built):
    for what, log in built["logs"].items():
        warned = [line for line in log.splitlines() if WARNING.search(line) and not line.startswith(FILE_LINES)]
        assert not warned, f"`python -m build` ({what}) warned:\n" + "\n".join(warned[:20])


def test_the_wheel_ships_every_file_of_the_packages(built):
    shipped = {name for name in built["direct"] if ".dist-info/" not in name}
    missing = _package_files(built["src"]) - shipped
    assert not missing, f"not in the wheel: {sorted(missing)}"
    assert not {n for n in shipped if n.startswith(NOT_SHIPPED)}, "the JavaScript sources stay out of the wheel"
    # what `ergon init`, the dashboard and V8 read at run time, named so a failure says what broke
    for rel in ("flows/templates/project/README-ergon.md", "flows/templates/project/definitions/hello_process.yaml",
                "flows/templates/project/definitions/tests/hello_process.test.yaml",
                "flows/templates/project/definitions/tools/greetings.py", "ui/assets/icon.svg",
                "compiler/js/vendor/runtime.js", "compiler/js/vendor/analysis.js",
                "compiler/js/vendor/LICENSES/handlebars-4.7.10.LICENSE", "flows/store/alembic.ini"):
        assert rel in shipped, rel
    assert "ergon-0.1.0.dist-info/entry_points.txt" in built["direct"]


def test_the_wheel_built_from_the_sdist_is_the_wheel_built_from_the_tree(built):
    assert built["from_sdist"] == built["direct"], (
        f"only from the sdist: {sorted(built['from_sdist'] - built['direct'])}; "
        f"only from the tree: {sorted(built['direct'] - built['from_sdist'])}")


def test_the_sdist_holds_the_sources_and_the_project_files(built):
    sources = {name for name in built["direct"] if ".dist-info/" not in name}
    assert not sources - built["sdist"], f"not in the sdist: {sorted(sources - built['sdist'])}"
    expected = {"pyproject.toml", "MANIFEST.in", "README.md", "CHANGELOG.md"}
    expected |= {name for name in ("LICENSE", "LICENSE.txt", "NOTICE") if (ROOT / name).is_file()}
    assert expected <= built["sdist"], sorted(expected - built["sdist"])
    assert not {n for n in built["sdist"] if n.startswith("tests/")}, "the tests need the repository's fixtures"

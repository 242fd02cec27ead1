"""A project folder holding a Python package of its own named like one of Ergon's.

Ergon installs three top-level packages: ``flows``, ``compiler`` and ``ui``. Run from a folder,
Python looks there first — ``python -m`` puts the current folder at the head of ``sys.path``, and
Prefect puts the working folder there before it imports a deployment's entrypoint
(``flows.prefect.deployments:flow_<name>``). So when the project folder holds a *regular* package
or a module of one of those names (``flows/__init__.py``, ``flows.py``), that is what gets
imported: a Prefect worker's flow run, ``ergon deploy`` (``prefect deploy`` loads the
entrypoints), ``ergon ui`` and a detached ``ergon run`` fail with ``ModuleNotFoundError: No
module named 'flows.prefect'``, far from the cause. Every command run in such a folder refuses
instead, naming the cause and the fix (:func:`refuse_in_shadowed_folder`, called by
:func:`flows.cli.main`; ``ergon init`` checks the folder it is given).

A folder of that name *without* ``__init__.py`` — HTML, YAML, even ``.py`` files — is a namespace
package and harmless: the import system keeps looking along ``sys.path`` and the regular package
found later (Ergon's) wins. Such a folder is not refused.

It runs before every command, so it stays cheap: the standard library only until there is
something to say, and a few ``stat`` calls (each name with each of the interpreter's module suffixes).
"""

from __future__ import annotations

import os
from importlib.machinery import all_suffixes

#: Ergon's top-level packages (``[tool.setuptools.packages.find]`` in pyproject.toml)
ERGON_PACKAGES = ("flows", "compiler", "ui")


def shadowing_files(folder: str) -> list[tuple[str, str]]:
    """(package name, the file that makes ``folder``'s own package or module of that name importable)
    for each of :data:`ERGON_PACKAGES` the folder would shadow; empty for Ergon's own source tree."""
    join, isfile = os.path.join, os.path.isfile  # plain os.stat calls: this runs before every command
    if isfile(join(folder, "flows", "prefect", "deployments.py")):
        return []  # a checkout of Ergon: these are Ergon's packages
    suffixes = all_suffixes()  # .py, .pyc and the extension modules' suffixes
    found: list[tuple[str, str]] = []
    for name in ERGON_PACKAGES:
        for path in (*(join(folder, name, f"__init__{s}") for s in suffixes), *(join(folder, name + s) for s in suffixes)):
            if isfile(path):
                found.append((name, path))
                break
    return found


#: what the fix suggests renaming each package to
RENAMES = {"flows": "pipelines", "compiler": "compilation", "ui": "webapp"}


def refusals(folder: str) -> list[str]:
    """One sentence per package of ``folder`` that shadows Ergon's: where it is, why it breaks, the fix."""
    sentences = []
    for name, path in shadowing_files(folder):
        base = os.path.basename(path)
        if base.startswith("__init__"):  # a package: flows/__init__.py
            what, fix = f"{name}/ in {folder} is a Python package ({name}/{base})", f"git mv {name} {RENAMES[name]}"
        else:
            what, fix = f"{base} in {folder} is a Python module", f"git mv {base} {RENAMES[name]}{base[len(name):]}"
        sentences.append(f"{what} named like Ergon's `{name}`: Python run in this folder (a Prefect worker's flow run, "
                         f"`prefect deploy`) would import it instead of Ergon and fail; rename it, e.g. `{fix}`, and "
                         f"update its imports")
    return sentences


def refuse_in_shadowed_folder(argv: list[str]) -> list[str]:
    """``argv``, unchanged, when its command may run in the current folder; else, having printed
    :func:`refusals` (one ``error:`` line each), ``SystemExit(1)``. ``ergon init`` checks the folder
    it is given itself; a command's ``--help`` is always shown."""
    from flows.cli import COMMANDS

    if not argv or argv[0] not in COMMANDS or argv[0] == "init" or "--help" in argv or "-h" in argv:
        return argv
    found = refusals(os.getcwd())
    if not found:
        return argv
    from flows.cli.output import error

    for sentence in found:
        error(sentence)
    raise SystemExit(1)

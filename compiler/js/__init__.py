"""JavaScript in Ergon: the V8 sandbox (:mod:`compiler.js.engine`) and the bundles it loads.

The checker parses Handlebars prompts and JavaScript with it, the runtime renders Handlebars and
JST prompts and runs ``runJavascriptCode`` steps with it. Importing this package starts nothing:
the sandbox process starts the first time something is parsed or evaluated.

V8 (the ``mini-racer`` package) is an optional dependency, the ``js`` extra: without it
:func:`available` is false and ``ergon check`` refuses Handlebars and JST prompt segments and
``runJavascriptCode`` steps, naming :data:`INSTALL_HINT`.
"""

from __future__ import annotations

from functools import lru_cache
from importlib.util import find_spec

#: What installs the sandbox's package (mini-racer, an optional dependency: ~80 MB of V8).
INSTALL_HINT = "pip install 'ergon[js]'"


@lru_cache(maxsize=1)
def available() -> bool:
    """Whether V8 (the ``mini-racer`` package) is installed, asked without importing it. The
    sandbox process runs with this interpreter and its path, so it finds the same packages."""
    return find_spec("py_mini_racer") is not None

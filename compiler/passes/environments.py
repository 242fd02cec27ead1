"""The `environments` pass: every model of an environment can be called as it is written.

* ``bad-value`` — an ``api_key`` that is not a reference to where the key lives
  (``secret:NAME``, an Ergon secret; ``env:VAR``, an environment variable; ``prefect-secret:NAME``,
  a Prefect Secret block; ``prefect-var:NAME``, a Prefect Variable — :mod:`compiler.secret_references`):
  every call would be refused at run time, and a key written into a definition travels wherever
  the file goes (version control, published versions, the dashboard's source view). A reference
  whose name is missing, or breaks Prefect's name rules, is the same code: it could never resolve;
* ``not-enforced`` — ``rpm`` on a model: litellm's Router, which Ergon hands the environment to,
  only weighs entries by it and sends calls beyond the limit all the same (measured: four calls
  in a row through an entry with ``rpm: 2`` all went out, with and without the Router's pre-call
  checks). A limit that is not kept is refused rather than accepted and ignored.
"""

from __future__ import annotations

from collections.abc import Iterator

from compiler import secret_references
from compiler.errors import Finding
from compiler.ir import EnvironmentDef

_LITERAL_HINT = ("store it with `ergon secrets set NAME` and write `api_key: secret:NAME`, or export it and write "
                 "`api_key: env:VAR`, or keep it in Prefect and write `api_key: prefect-secret:NAME` (a Secret "
                 "block) or `api_key: prefect-var:NAME` (a Variable)")


def check(unit, ws) -> Iterator[Finding]:  # noqa: ARG001 - every pass takes the workspace
    defn = unit.defn
    if not isinstance(defn, EnvironmentDef):
        return
    for i, entry in enumerate(defn.models):
        path = ("models", i)
        if entry.api_key is not None:
            ref = secret_references.parse(entry.api_key)
            if ref is None:
                yield Finding("bad-value", (*path, "api_key"),
                              "`api_key` must say where the key is kept, not hold the key", hint=_LITERAL_HINT)
            elif (wrong := secret_references.problem(ref)) is not None:
                yield Finding("bad-value", (*path, "api_key"), wrong.message, hint=wrong.hint)
        if entry.rpm is not None:
            yield Finding("not-enforced", (*path, "rpm"),
                          f"`rpm: {entry.rpm}` is not enforced: calls beyond it would still be sent",
                          hint="remove it, and bound the calls where they are made: `max_concurrency` on the "
                               "foreach that makes them, or a Prefect concurrency limit on the nodes' lane "
                               "(`prefect concurrency-limit create lane:NAME N`)")

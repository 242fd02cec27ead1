"""Ergon's errors: one root, one class per phase, each message saying what to do.

Every error Ergon reports to a person is an :class:`ErgonError` (defined in ``compiler.errors`` so
that the compiler's own error is one too), so a command can tell "the user's input or state is
wrong" (print the message, exit non-zero, no traceback) from "Ergon has a bug" (anything else).
Under the root, one class per phase, each defined with the code of its phase; the specific errors
subclass them:

=================== ============================== ===================================================
phase               class                          what
=================== ============================== ===================================================
compiling           ``compiler.errors.CompileError`` a definition does not check
definitions         :class:`DefinitionError`         a definition or published version is missing or refused
runs                :class:`RunError`                a run cannot start, resume, cancel; a node failed
human tasks         :class:`TaskError`               a task action is refused, or the task is gone
who acts            :class:`IdentityError`           a credential is missing or refused, a right is lacking
the store           ``flows.store.errors.StoreError`` the store refuses a change
tools               ``flows.tools.errors.ToolError`` a tool call was refused or failed
models              ``flows.llm.types.LlmError``     a model call failed or answered badly
secrets             ``flows.secrets.SecretError``    a secret or key cannot be read or opened
documents           ``flows.documents.DocumentError`` the local document store
deployments         ``flows.cli.deploy.DeployError`` a deployment cannot be made
=================== ============================== ===================================================

Some keep a built-in base beside the root (``LookupError`` for "not found", ``ValueError`` for a
refused value) so that code written against those still works.
"""

from __future__ import annotations

from compiler.errors import CompileError, ErgonError

__all__ = ["CompileError", "DefinitionError", "ErgonError", "IdentityError", "RunError", "TaskError"]


class DefinitionError(ErgonError):
    """A definition or one of its published versions cannot be found, published or used."""


class RunError(ErgonError):
    """A run cannot be started, resumed or cancelled, or it stopped (a node failed, it was cancelled)."""


class TaskError(ErgonError):
    """A human task cannot be seen, taken or answered."""


class IdentityError(ErgonError):
    """Who acts is not proven (a credential is missing or refused), or lacks the right to act."""

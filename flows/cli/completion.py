"""`ergon completion`: shell completion for bash, zsh and fish — print the script, or install it.

The scripts are cyclopts' (:meth:`cyclopts.App.generate_completion`): static, written from every
command, subcommand and option of `ergon` at the time they are made, so pressing TAB starts no
`ergon` process; where they offer nothing, the shell's file-name completion takes over (:func:`script`). Making one imports every command's module (a few seconds, once); a script made
by an older Ergon lacks the commands and options added since — installing again replaces it.

`ergon completion install` writes the script where the shell looks for completions and, unless
``--no-startup``, adds the line that loads it to the shell's start-up file — bash:
``~/.local/share/bash-completion/completions/ergon``, sourced from ``~/.bashrc``; zsh:
``~/.zsh/completions/_cyclopts_ergon`` (oh-my-zsh: its custom completions folder), that folder
put on ``fpath`` in ``~/.zshrc``; fish: ``~/.config/fish/completions/ergon.fish``, which fish
loads by itself.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path
from typing import Annotated, Literal

from cyclopts import App, Parameter

from flows.cli.output import error

Shell = Literal["bash", "zsh", "fish"]

completion_app = App(name="completion", help="Shell completion for bash, zsh and fish: print the script, or install it.")

#: What to do once the script is in place, by shell (with the start-up line added, without it).
_NEXT = {
    "bash": ("open a new shell, or run: source ~/.bashrc",
             "bash-completion (2.8 or later) loads it from there in new shells"),
    "zsh": ("open a new shell, or run: exec zsh (your ~/.zshrc must call compinit, as most do)",
            "put its folder on fpath before compinit runs in your ~/.zshrc"),
    "fish": ("fish loads it from there: open a new shell", "fish loads it from there: open a new shell"),
}


#: A zsh ``_arguments`` spec of a positional argument with a message and no action.
_ZSH_BARE_POSITIONAL = re.compile(r"^(\s*)'(\*|\d+):((?:[^':\\]|\\.)*)'(\s*\\?)$", re.MULTILINE)


def script(shell: Shell) -> str:
    """The completion script for ``shell``: cyclopts', where it completes nothing (the files and
    folders most commands take, a definition's name) left to the shell's file-name completion, as
    `ergon` had before any script — bash: ``complete -o default``; zsh: ``_files`` for a positional
    argument without choices; fish does so by itself."""
    from flows.cli import get_app

    text = get_app().generate_completion(prog_name="ergon", shell=shell)
    if shell == "bash":
        registered = "complete -F _ergon ergon"
        if registered not in text:
            raise RuntimeError("cyclopts' bash script no longer registers `complete -F _ergon ergon`")
        text = text.replace(registered, "complete -o default -F _ergon ergon")
    elif shell == "zsh":
        text = _ZSH_BARE_POSITIONAL.sub(r"\1'\2:\3:_files'\4", text)
    return text


@completion_app.command
def show(shell: Shell) -> int:
    """Print the completion script for SHELL, to load it yourself.

    ``eval "$(ergon completion show bash)"`` in ``~/.bashrc``, ``ergon completion show zsh >
    ~/.zsh/completions/_ergon`` with that folder on ``fpath``, or ``ergon completion show fish >
    ~/.config/fish/completions/ergon.fish``.

    Parameters
    ----------
    shell
        The shell the script is for: bash, zsh or fish.
    """
    sys.stdout.write(script(shell))
    return 0


@completion_app.command
def install(
    *,
    shell: Shell | None = None,
    output: Annotated[Path | None, Parameter(name=["--output", "-o"])] = None,
    startup: Annotated[bool, Parameter(negative="--no-startup")] = True,
) -> int:
    """Install the completion script where your shell loads completions from.

    Parameters
    ----------
    shell
        bash, zsh or fish (default: the shell you are running, from its environment or the
        process that started `ergon`).
    output
        Write the script to this file instead of the shell's usual place.
    startup
        Add the line that loads the script to ~/.bashrc (bash), or its folder to fpath in
        ~/.zshrc (zsh); fish needs none. With --no-startup nothing but the script is written.
    """
    from cyclopts.completion.detect import ShellDetectionError, detect_shell
    from cyclopts.completion.install import add_to_rc_file, get_default_completion_path

    if shell is None:
        try:
            detected = detect_shell()
        except ShellDetectionError:
            detected = None
        if detected not in ("bash", "zsh", "fish"):
            return error("cannot tell which shell you use", hint="name it: ergon completion install --shell bash "
                                                                  "(or zsh, fish)")
        shell = detected
    text = script(shell)
    try:
        path = (output or get_default_completion_path(shell, "ergon")).absolute()
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
        if startup and shell in ("bash", "zsh"):
            add_to_rc_file(path, "ergon", shell)  # once: a line already there is not added again
    except OSError as exc:
        return error(f"cannot write the {shell} completion: {exc.strerror or exc} ({exc.filename or output})",
                     hint="choose a writable file with --output FILE, or --no-startup to leave your dotfiles alone")
    print(f"{shell} completion installed in {path}")
    print(_NEXT[shell][0 if startup else 1])
    return 0

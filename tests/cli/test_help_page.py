"""`ergon --help` is printed by :mod:`flows.cli.help_page` without cyclopts or rich, and it is the
page cyclopts itself prints: compared at every width the module serves, plain and coloured, and
from a real process on a pipe and in a pseudo-terminal."""

from __future__ import annotations

import io

import pytest
from cli_process import clean_env, imported, in_a_terminal


def _cyclopts_page(width: int, colour: bool) -> str:
    from rich.console import Console

    from flows.cli import get_app

    buffer = io.StringIO()
    console = Console(file=buffer, width=width, force_terminal=colour, color_system="standard" if colour else None,
                      no_color=False, legacy_windows=False)
    get_app().help_print([], console=console)
    return buffer.getvalue()


def _our_page(width: int, colour: bool) -> str | None:
    from flows.cli import COMMANDS, DESCRIPTION
    from flows.cli.help_page import render

    return render({name: text for name, (_target, text) in COMMANDS.items()}, DESCRIPTION, width, colour)


@pytest.mark.parametrize("colour", [False, True], ids=["plain", "coloured"])
def test_the_page_is_cyclopts_page_at_every_width(colour: bool) -> None:
    from flows.cli.help_page import MIN_WIDTH

    for width in range(MIN_WIDTH, 201):
        assert _our_page(width, colour) == _cyclopts_page(width, colour), f"width {width}"


@pytest.mark.parametrize("argv", [["--help"], ["-h"], []], ids=["--help", "-h", "nothing"])
def test_help_on_a_pipe_imports_neither_cyclopts_nor_rich(argv: list[str]) -> None:
    out, modules = imported(argv, clean_env(COLUMNS="100"))
    assert out == _cyclopts_page(100, colour=False)
    for heavy in ("cyclopts", "rich", "markdown_it", "pygments", "attrs", "compiler", "pydantic"):
        assert heavy not in modules, f"`ergon {' '.join(argv)}` imported {heavy}"


def test_a_page_it_does_not_reproduce_is_left_to_cyclopts() -> None:
    # FORCE_COLOR is rich's to interpret: cyclopts prints, in colour, on a pipe
    out, modules = imported(["--help"], clean_env(COLUMNS="100", FORCE_COLOR="1"))
    assert "cyclopts" in modules
    assert out == _cyclopts_page(100, colour=True)


def test_in_a_terminal_the_page_is_coloured_as_cyclopts_colours_it() -> None:
    ours = in_a_terminal(["--help"], clean_env(TERM="xterm"), columns=90)
    theirs = in_a_terminal(["--help"], clean_env(TERM="xterm", TTY_COMPATIBLE="1"), columns=90)  # left to cyclopts
    assert b"\x1b[36mcheck" in ours
    assert ours == theirs

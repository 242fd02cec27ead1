"""`ergon --help` (and `ergon` alone) printed without importing cyclopts or rich.

The command list is the page a user sees most, and cyclopts renders it through rich and its
Markdown parser: about 0.15 s of imports and layout on this 2-core machine before one line is
printed. This module writes the same page — the usage line, the description, the ``Commands``
panel built from :data:`flows.cli.COMMANDS` — with the standard library alone, character for
character as cyclopts 5 and rich lay it out (``tests/cli/test_help_page.py`` compares the two at
every width this module serves, plain and coloured, and in a real terminal).

It serves only what it can reproduce exactly: output to a pipe or a file (no colour), or to a
terminal that rich would colour with the standard palette, on a UTF-8 stream at least
:data:`MIN_WIDTH` columns wide, and help texts with no Markdown but code spans (backticks). For
anything else (``NO_COLOR``, ``FORCE_COLOR``, a dumb terminal, Windows, a narrow window, other
Markdown) :func:`page` returns None and cyclopts prints the help as before.
"""

from __future__ import annotations

import re
import sys
import unicodedata

#: Below this width rich starts to squeeze the name column; cyclopts lays out narrower pages.
MIN_WIDTH = 60
#: The texts of the help and version flags, as cyclopts words them.
FLAG_HELP = {"--help (-h)": "Display this message and exit.", "--version": "Display application version."}

_BOLD, _CYAN, _CODE, _RESET = "\x1b[1m", "\x1b[36m", "\x1b[1;36;40m", "\x1b[0m"
_WORD = re.compile(r"\s*\S+\s*")
#: Markdown that rich would render as something other than plain text or a code span: a pair of
#: asterisks (emphasis; a lone one is literal), an underscore not inside a word, links, escapes,
#: HTML, headings, quotes, lists. A text with any of it is left to cyclopts.
_OTHER_MARKDOWN = re.compile(r"\*.*\*|(?<!\w)_|_(?!\w)|[\[\\<]|^\s*[#>*+-]|^\s*\d+[.)]\s", re.MULTILINE)


def _spans(text: str) -> list[tuple[str, bool]] | None:
    """The first paragraph of a help text as (text, is code) runs, its lines joined; None when it
    holds Markdown other than code spans or a character wider than one cell."""
    paragraph = " ".join(text.strip().split("\n\n")[0].split())
    if _OTHER_MARKDOWN.search(paragraph) or any(unicodedata.east_asian_width(c) in "WF" for c in paragraph):
        return None
    parts = paragraph.split("`")
    if len(parts) % 2 == 0:  # an unclosed backtick
        return None
    return [(part, i % 2 == 1) for i, part in enumerate(parts) if part]


def _wrap(spans: list[tuple[str, bool]], width: int) -> list[list[tuple[str, bool]]]:
    """The runs cut into lines as rich wraps a paragraph: greedy on words that keep their trailing
    spaces, a line's trailing spaces kept as long as they fit in ``width``."""
    text = "".join(t for t, _ in spans)
    styles = [code for t, code in spans for _ in t]
    breaks: list[int] = []
    offset = 0
    for match in _WORD.finditer(text):
        word = match.group(0)
        if width - offset >= len(word.rstrip()):
            offset += len(word)
        elif offset and match.start():
            breaks.append(match.start())
            offset = len(word)
    lines = []
    for start, end in zip([0, *breaks], [*breaks, len(text)], strict=True):
        line = text[start:end]
        if len(line) > width:  # trailing spaces past the edge are dropped
            line = line[:width] if not line[width:].strip() else line
        runs: list[tuple[str, bool]] = []
        for i, char in enumerate(line):
            code = styles[start + i]
            if runs and runs[-1][1] == code:
                runs[-1] = (runs[-1][0] + char, code)
            else:
                runs.append((char, code))
        lines.append(runs)
    return lines


def _paint(runs: list[tuple[str, bool]], colour: bool) -> str:
    return "".join(f"{_CODE}{t}{_RESET}" if code and colour else t for t, code in runs)


def render(commands: dict[str, str], description: str, width: int, colour: bool) -> str | None:
    """The page for ``commands`` (name → help text) at ``width`` columns, or None when a text
    holds something this module does not reproduce."""
    rows = {name: _spans(commands[name]) for name in sorted(commands)}
    rows.update({flag: [(text, False)] for flag, text in FLAG_HELP.items()})
    intro = _spans(description)
    if intro is None or any(spans is None for spans in rows.values()):
        return None
    name_width = max(len(name) for name in rows)
    text_width = width - 4 - name_width - 2  # "│ ", the name, two spaces, the text, " │"
    out = [f"{_BOLD}Usage: {_RESET}{_BOLD}ergon COMMAND{_RESET}" if colour else "Usage: ergon COMMAND", ""]
    intro_lines = _wrap(intro, width)
    for i, line in enumerate(intro_lines):
        pad = " " * (width - sum(len(t) for t, _ in line)) if i < len(intro_lines) - 1 else ""
        out.append((_paint(line, colour) + pad).rstrip() if i == len(intro_lines) - 1 else _paint(line, colour) + pad)
    out.append("")
    title = "╭─ Commands "
    out.append(title + "─" * (width - len(title) - 1) + "╮")
    for name, spans in rows.items():
        assert spans is not None
        for i, line in enumerate(_wrap(spans, text_width)):
            if i == 0:
                left = f"{_CYAN}{name.ljust(name_width)}{_RESET}{_CYAN}  {_RESET}" if colour else name.ljust(name_width + 2)
            else:
                left = f"{_CYAN}{' ' * (name_width + 2)}{_RESET}" if colour else " " * (name_width + 2)
            pad = " " * (text_width - sum(len(t) for t, _ in line))
            out.append(f"│ {left}{_paint(line, colour)}{pad} │")
    out.append("╰" + "─" * (width - 2) + "╯")
    return "\n".join(out) + "\n"


def page(commands: dict[str, str], description: str) -> str | None:
    """The page as it would be printed on standard output now, or None to let cyclopts print it."""
    from flows.cli import terminal

    colour = terminal.coloured(sys.stdout)
    encoding = (getattr(sys.stdout, "encoding", "") or "").lower().replace("-", "")
    if colour is None or not encoding.startswith("utf"):  # rich draws the panel in ASCII elsewhere
        return None
    columns = terminal.width()
    return render(commands, description, columns, colour) if columns >= MIN_WIDTH else None

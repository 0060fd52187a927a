"""Tables: doctor's report and fit's layouts, Rich on a terminal, aligned plain text otherwise.

Every piece of text handed to Rich — cells, titles, column headers, footers, the verdict — is
escaped and passed as a ``Text``, never as a markup string: a path or a model name holding
``[/]`` or ``[link=…]`` is printed as written, never parsed (no traceback, no injected
hyperlink or style).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from .escape import printable
from .lines import console, safe_write, use_style


def _cell(text, scrub=None) -> str:
    return printable(str(text), scrub)


COLOURS = {"OK": "green", "WARN": "yellow", "FAIL": "bold red"}


def render_diagnosis(diagnosis, stream, env: Mapping[str, str], scrub=None) -> bool:
    """Doctor's checks; False when the stream could not take them."""
    failed = diagnosis.failed
    verdict = diagnosis.verdict  # names DeepSeek-V4 only when that is the model checked
    if not use_style(stream, env):
        lines = [f"{c.status:<4}  {c.section:<10}  {_cell(c.detail, scrub)}" for c in diagnosis.lines]
        return safe_write(stream, "\n".join([*lines, verdict]) + "\n")
    try:
        from rich.table import Table
        from rich.text import Text

        table = Table(title=Text("dsv4-launch doctor"), show_lines=False)
        table.add_column("", no_wrap=True)
        table.add_column("check", no_wrap=True)
        table.add_column("detail")
        for c in diagnosis.lines:
            table.add_row(Text(c.status, style=COLOURS.get(c.status, "")), Text(_cell(c.section, scrub)),
                          Text(_cell(c.detail, scrub)))
        out = console(stream)  # forced: use_style may say yes into a pipe (FORCE_COLOR)
        out.print(table)
        out.print(Text(verdict, style="bold red" if failed else "green"))
        return True
    except (OSError, ValueError, UnicodeError):
        return False


def render_table(title: str, headers: Sequence[str], rows: Sequence[Sequence[str]], styles: Sequence[str | None],
                 stream, env: Mapping[str, str], footer: Sequence[str] = (), right: Sequence[bool] = (),
                 scrub=None) -> bool:
    """A generic table: ``styles[i]`` colours row i on a terminal (None: plain)."""
    right = list(right) or [False] * len(headers)
    if not use_style(stream, env):
        cells = [[_cell(c, scrub) for c in row] for row in rows]
        title = _cell(title, scrub)
        widths = [max([len(h), *(len(r[i]) for r in cells)]) for i, h in enumerate(headers)]

        def fmt(row):
            cells = (c.rjust(w) if right[i] else c.ljust(w) for i, (c, w) in enumerate(zip(row, widths)))
            return "  ".join(cells).rstrip()

        out = [title, fmt(headers), fmt(["-" * w for w in widths]), *(fmt(r) for r in cells),
               *(_cell(f, scrub) for f in footer)]
        return safe_write(stream, "\n".join(out) + "\n")
    try:
        from rich.table import Table
        from rich.text import Text

        table = Table(title=Text(_cell(title, scrub)), title_justify="left")
        for i, h in enumerate(headers):
            table.add_column(Text(_cell(h, scrub)), justify="right" if right[i] else "left", no_wrap=i == 0)
        for row, style in zip(rows, styles):
            table.add_row(*(Text(_cell(c, scrub)) for c in row), style=style)
        rich_console = console(stream)
        rich_console.print(table)
        for line in footer:
            rich_console.print(Text(_cell(line, scrub)))
        return True
    except (OSError, ValueError, UnicodeError):
        return False

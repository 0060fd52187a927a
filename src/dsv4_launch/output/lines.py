"""One-line messages: plain greppable lines, Rich styling on a terminal, or JSON lines.

Styling follows Rich's own Console precedence (rich/console.py: ``no_color``,
``is_dumb_terminal``, ``is_terminal``): ``NO_COLOR`` non-empty or ``TERM=dumb``/``unknown`` → plain;
else ``TTY_COMPATIBLE=0``/``1``; else ``FORCE_COLOR`` non-empty (``0`` included) → styled even into
a pipe; else styled only on a terminal. Rich is imported only when it styles something, and is
given ``Text``, never markup; every message is escaped whole (``escape.py``).
``DSV4_LAUNCH_LOG_FORMAT=json``: the log reporters (stderr) write one JSON object a line instead
(docs/output.md, "JSON logs"). Writing never raises: a full disk, a dead pipe or a closed stream
silences the reporter — reporting must never stop vLLM from starting.
"""

from __future__ import annotations

from collections.abc import Mapping

from .escape import printable

TYPE_CHECKING = False  # rich is imported only when it styles something; type checkers read this as True
if TYPE_CHECKING:
    from rich.console import Console

STYLES = {"changed": "bold green", "warning": "bold yellow", "error": "bold red"}


def use_style(stream, env: Mapping[str, str]) -> bool:
    """Style this stream? The precedence of the module docstring (Rich's)."""
    if stream is None or env.get("NO_COLOR", "") != "" or env.get("TERM", "").lower() in ("dumb", "unknown"):
        return False
    tty_compatible = env.get("TTY_COMPATIBLE", "")
    if tty_compatible in ("0", "1"):
        return tty_compatible == "1"
    if env.get("FORCE_COLOR", "") != "":
        return True
    isatty = getattr(stream, "isatty", None)
    try:
        return bool(isatty and isatty())
    except (ValueError, OSError):
        return False


def make_lenient(stream) -> None:
    """Characters the stream's encoding cannot hold (an ASCII locale, a lone surrogate from
    undecodable argv bytes) are written as backslash escapes instead of raising."""
    reconfigure = getattr(stream, "reconfigure", None)
    if reconfigure is not None:
        try:
            reconfigure(errors="backslashreplace")
        except (ValueError, OSError, AttributeError):
            pass


def safe_write(stream, text: str) -> bool:
    """Write and flush; False (and nothing raised) when the stream cannot take it."""
    if stream is None:
        return False
    try:
        stream.write(text)
        stream.flush()
        return True
    except (OSError, ValueError, AttributeError, UnicodeError):
        return False


def silence(stream) -> None:
    """Point a stream that failed at /dev/null, so Python's own flush at exit cannot print
    "Exception ignored … BrokenPipeError" (or fail again)."""
    import os

    try:
        null = os.open(os.devnull, os.O_WRONLY)
        os.dup2(null, stream.fileno())
        os.close(null)
    except (OSError, ValueError, AttributeError):
        pass


def reader_gone(stream) -> bool:
    """Whether ``stream`` is a pipe whose reader has closed it (``plan | head -1`` once ``head``
    has its line): then a failed write is the reader being satisfied, not an error. Linux and
    the BSDs report a pipe without readers as POLLERR on its writing end."""
    import os
    import select
    import stat

    try:
        fd = stream.fileno()
        if not stat.S_ISFIFO(os.fstat(fd).st_mode):
            return False
        poller = select.poll()
        poller.register(fd, select.POLLOUT)
        return any(events & select.POLLERR for _, events in poller.poll(0))
    except (OSError, ValueError, AttributeError):
        return False


def console(stream) -> Console:
    """A Rich console for a stream ``use_style`` said yes to (forced: FORCE_COLOR into a pipe)."""
    from rich.console import Console

    return Console(file=stream, highlight=False, force_terminal=True)


def json_line(level: str, logger: str, message: str, fields: Mapping[str, object] | None = None) -> str:
    """One log record as a JSON line (``message`` already masked and escaped)."""
    import json
    import time

    now = time.time()
    stamp = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(now)) + f".{int(now % 1 * 1000):03d}Z"
    record: dict[str, object] = {"time": stamp, "level": level, "logger": logger, "message": message}
    record.update((k, v) for k, v in (fields or {}).items() if v is not None)
    return json.dumps(record, ensure_ascii=True) + "\n"


class Reporter:
    """Writes one-line messages to a stream; ``quiet`` keeps only changes, warnings and errors
    (a change to the user's command is never quiet: ``DSV4_LAUNCH_QUIET=1`` hides the notes)."""

    def __init__(self, stream, env: Mapping[str, str], *, prefix: str | None, quiet: bool = False,
                 scrub=None, structured: bool | None = None):
        """``prefix``: who speaks (``dsv4-serve``, ``dsv4-launch plan``: the command's
        ``Command.prefix``), or None for a report on stdout — no default, so that no command's line
        can say another's name. ``structured``: JSON lines under DSV4_LAUNCH_LOG_FORMAT=json; by
        default the reporters with a prefix (the logs on stderr) are, a report on stdout is not."""
        from ..core.settings import read_log_format

        self.stream = stream
        self.scrub = scrub
        self.prefix = prefix
        self.quiet = quiet
        if structured is None:
            structured = prefix is not None
        self.json = structured and read_log_format(env)[0] == "json"
        self.styled = not self.json and use_style(stream, env)
        self.broken = stream is None
        self._console: Console | None = None
        make_lenient(stream)

    def _write(self, label: str | None, text: str, style: str, level: str = "info", **fields) -> None:
        if self.broken:
            return
        text = printable(text, self.scrub)
        if self.json:
            extra = {"kind": None if label in (None, "warning", "error") else label}
            extra.update((k, printable(str(v), self.scrub)) for k, v in fields.items() if v is not None)
            if not safe_write(self.stream, json_line(level, self.prefix or "dsv4-launch", text, extra)):
                self.broken = True
            return
        head = f"{self.prefix}: " if self.prefix else ""
        if not self.styled:
            if not safe_write(self.stream, head + (f"{label}: " if label else "") + text + "\n"):
                self.broken = True
            return
        try:
            rich_console = self._console
            if rich_console is None:
                rich_console = self._console = console(self.stream)
                rich_console.soft_wrap = True
            from rich.text import Text

            line = Text(head, style="bold")
            if label:
                line.append(f"{label}: ", style=style or "bold")
            line.append(text, style="" if label else style)
            rich_console.print(line)
        except (OSError, ValueError, AttributeError, UnicodeError):
            self.broken = True

    def info(self, text: str, label: str | None = None, **fields) -> None:
        if not self.quiet:
            self._write(label, text, "cyan", **fields)

    def changed(self, text: str, option: str | None = None) -> None:
        self._write("changed", text, STYLES["changed"], option=option)  # never quiet: vLLM gets another command

    def warning(self, text: str, rule: str | None = None) -> None:
        self._write("warning", text, STYLES["warning"], "warning", rule=rule)

    def error(self, text: str, rule: str | None = None) -> None:
        self._write("error", text, STYLES["error"], "error", rule=rule)

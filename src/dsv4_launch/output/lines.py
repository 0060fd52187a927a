"""One-line messages: plain greppable lines, or Rich styling on a terminal.

Plain lines are used when the stream is not a terminal (journald, pipes, files), when
``NO_COLOR`` is set to anything non-empty, or when ``TERM=dumb``. Rich is imported only when it
will style something, and is given ``Text`` objects, never markup. Every message is escaped
(``escape.py``) as a whole: nothing from outside can start a new line or send a terminal
sequence.

Writing never raises: a full disk (``2>/dev/full``), a dead log pipe or a closed stream
(``2>&-``, where Python's stream is None) silences the reporter, and the caller goes on —
reporting must never stop vLLM from starting.
"""

from __future__ import annotations

from collections.abc import Mapping

from .escape import printable

STYLES = {"changed": "bold green", "warning": "bold yellow", "error": "bold red"}


def use_style(stream, env: Mapping[str, str]) -> bool:
    if stream is None or env.get("NO_COLOR", "") != "" or env.get("TERM") == "dumb":
        return False
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


class Reporter:
    """Writes one-line messages to a stream; ``quiet`` keeps only changes, warnings and errors
    (a change to the user's command is never quiet: ``DSV4_LAUNCH_QUIET=1`` hides the notes)."""

    def __init__(self, stream, env: Mapping[str, str], *, prefix: str | None = "dsv4-serve", quiet: bool = False,
                 scrub=None):
        self.stream = stream
        self.scrub = scrub
        self.prefix = prefix
        self.quiet = quiet
        self.styled = use_style(stream, env)
        self.broken = stream is None
        self._console = None
        make_lenient(stream)

    def _write(self, label: str | None, text: str, style: str) -> None:
        if self.broken:
            return
        text = printable(text, self.scrub)
        head = f"{self.prefix}: " if self.prefix else ""
        if not self.styled:
            if not safe_write(self.stream, head + (f"{label}: " if label else "") + text + "\n"):
                self.broken = True
            return
        try:
            if self._console is None:
                from rich.console import Console

                self._console = Console(file=self.stream, highlight=False, soft_wrap=True)
            from rich.text import Text

            line = Text(head, style="bold")
            if label:
                line.append(f"{label}: ", style=style or "bold")
            line.append(text, style="" if label else style)
            self._console.print(line)
        except (OSError, ValueError, AttributeError, UnicodeError):
            self.broken = True

    def info(self, text: str, label: str | None = None) -> None:
        if not self.quiet:
            self._write(label, text, "cyan")

    def changed(self, text: str) -> None:
        self._write("changed", text, STYLES["changed"])  # never quiet: vLLM gets another command

    def warning(self, text: str) -> None:
        self._write("warning", text, STYLES["warning"])

    def error(self, text: str) -> None:
        self._write("error", text, STYLES["error"])

"""vLLM's output read back from a file or standard input, one line at a time.

Streaming and bounded: a line is read with a length limit (an overlong line keeps its first
``LINE_LIMIT`` bytes, the rest is skipped), nothing else is kept, so a log of any size is read
in linear time and constant memory; undecodable bytes become U+FFFD. What surrounds vLLM's
message is taken off, in any combination (docs/commands.md, explain's "What it reads"; each
pattern below names its source): terminal sequences and a carriage return's overwritten text
(vLLM's own multi-line records end in ``\r\n``); kubectl, docker, journald and CI prefixes;
Docker Compose's ``SERVICE-1  | `` only as the outermost prefix (vLLM's own ``word | …`` keeps it);
vLLM's process prefixes and record header (its level kept apart); a line quoted whole in
Markdown's backticks.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

LINE_LIMIT = 64 * 1024  # bytes of one line that are read

_ANSI = re.compile(r"\x1b\[[0-?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)|\x1b[@-Z\\-_]")
# The same colour codes copied in caret notation ("^[[0;36m": `cat -v`, a pasted terminal).
_CARET_ANSI = re.compile(r"\^\[\[[0-9;]{0,20}m")
_PREFIXES = (
    # journald: short (Dec 01 08:00:00) or ISO timestamp, host, unit[pid]:
    re.compile(r"(?:[A-Z][a-z]{2} [ \d]\d \d{2}:\d{2}:\d{2}|\d{4}-\d{2}-\d{2}T[\d:.,+\-Z]+) \S+ "
               r"[^\s:\[]+(?:\[\d+\])?: "),
    # kubectl --timestamps (RFC 3339, nanoseconds)
    re.compile(r"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(?:[.,]\d+)?(?:Z|[+-]\d{2}:?\d{2}) "),
    # kubectl --prefix
    re.compile(r"\[pod/[^\s\]]+/[^\s\]]+\] "),
    # vLLM's process prefix (0.8–0.10's workers: "VllmWorker rank=0 pid=…")
    re.compile(r"\([\w.\-]+(?: rank=\d+)? pid=\d+(?:, ip=[\w.:\-]+)?\) ?"),
    # a CI runner's timestamp (GitHub Actions, Buildkite): [2026-02-24T20:21:58Z]
    re.compile(r"\[\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}:\d{2}(?:[.,]\d+)?(?:Z|[+-]\d{2}:?\d{2})?\] "),
    # torch.distributed's rank prefix
    re.compile(r"\[rank\d+\]: ?"),
)
# Docker Compose's container name padded to the longest of the project's, then " | " (compose's
# formatter: "%-*s |" and a space before the line; an empty line leaves "name  |").
_COMPOSE = re.compile(r"[A-Za-z0-9][\w.\-]{0,200} +\|(?: |$)")
_HEADER = re.compile(r"(DEBUG|INFO|WARNING|WARN|ERROR|CRITICAL) \d{2}-\d{2} \d{2}:\d{2}:\d{2}(?:[.,]\d+)? "
                     r"(?:\[[^\]]{0,200}\]|[\w.\-]{1,200}:\d{1,6}\]) ?")


class LogReadError(Exception):
    """The input cannot be read at all (missing, a directory, no permission): one line."""


def clean(line: str) -> tuple[str, str | None]:
    """(vLLM's message, its log level or None) from one raw line."""
    line = line.rstrip("\n")
    if "\x1b" in line:
        line = _ANSI.sub("", line)
    if "^[[" in line:
        line = _CARET_ANSI.sub("", line)
    if "\r" in line:  # what a carriage return overwrote: the text after the last one
        line = line.rstrip("\r").rsplit("\r", 1)[-1]
    level = None
    compose = _COMPOSE.match(line) if "|" in line else None
    if compose:
        line = line[compose.end():]
    for _ in range(6):  # the prefixes nest (kubectl around journald around vLLM): peel each once
        for pattern in _PREFIXES:
            found = pattern.match(line)
            if found:
                line = line[found.end():]
                break
        else:
            header = _HEADER.match(line)
            if header:
                level = header.group(1)
                line = line[header.end():]
                continue
            break
    if line[:1] == "`" and line[-1:] == "`" and len(line) > 2:  # quoted whole in Markdown
        line = line[1:-1]
    return line, level


def _raw_lines(stream) -> Iterator[bytes]:
    while True:
        chunk = stream.readline(LINE_LIMIT)
        if not chunk:
            return
        if len(chunk) == LINE_LIMIT and not chunk.endswith(b"\n"):
            while True:  # the rest of an overlong line: skipped, in bounded pieces
                rest = stream.readline(LINE_LIMIT)
                if not rest or rest.endswith(b"\n"):
                    break
        yield chunk


def read_lines(stream) -> Iterator[tuple[str, str | None]]:
    """(message, level) per line of a binary stream."""
    for raw in _raw_lines(stream):
        yield clean(raw.decode("utf-8", "replace"))


def open_log(path: str, stdin=None):
    """The binary stream for ``path`` (``-``: ``stdin``, None: this process's). Raises LogReadError."""
    if path == "-":
        import sys

        stream = getattr(sys.stdin if stdin is None else stdin, "buffer", None)
        if stream is None:
            raise LogReadError("standard input is closed")
        return stream
    import os

    if os.path.isdir(path):
        raise LogReadError(f"{path!r} is a directory, not a log file")
    try:
        return open(path, "rb")  # noqa: SIM115 - the caller closes it
    except FileNotFoundError:
        raise LogReadError(f"{path!r}: no such file") from None
    except PermissionError:
        raise LogReadError(f"{path!r}: permission denied") from None
    except OSError as exc:
        raise LogReadError(f"{path!r}: {exc.strerror or type(exc).__name__}") from None

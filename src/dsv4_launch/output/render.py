"""The one renderer: a command's ``Result`` → standard output (text, Rich, or one JSON
document), the one error line on standard error, and the exit status.

Every command (plan, doctor, fit, explain, check, ``--version``, completion's script) computes
a ``Result`` and hands it here, so what each of them used to repeat is decided once:

* **one JSON shape**: every ``--json`` document has ``schema_version`` (``documents.dump``),
  ``exit_status`` (the command's exit status) and ``error`` — null, or the one line also said on
  standard error; a command's own keys come in between (``documents.py``);
* the output stream is made lenient (characters its encoding cannot hold become backslash
  escapes) and every line is masked and escaped (``lines.Reporter``, ``escape.printable``);
* **a stream that does not take the output**: a pipe whose reader has gone (``plan | head -1``,
  ``doctor | grep -q FAIL``) is that reader satisfied — silence, and the command's own status,
  so ``set -o pipefail`` gates still see it; any other failure (a full disk, a closed stdout) is
  one line on standard error and exit 74 (``finish``).

dsv4-serve's report before the hand-over is lines on standard error (``report.report_plan``,
shared with ``plan``), not a ``Result``: nothing is rendered to stdout there, and the hand-over
path imports nothing more (COMMON start-up budget); its help uses ``finish`` too.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

from ..core.records import Record
from .lines import Reporter, make_lenient, reader_gone, safe_write, silence

TYPE_CHECKING = False
if TYPE_CHECKING:
    from .redact import Redactor

OUTPUT_FAILED = 74  # sysexits EX_IOERR (commands/exit_codes.OUTPUT_FAILED)


class Result(Record):
    """What a command has to show (pipx's result objects): computed first, rendered here."""

    status: int  # the exit status
    prefix: str  # who speaks on standard error: "dsv4-launch plan", ...
    what: str = "the report"  # "cannot write {what} to standard output"
    error: str | None = None  # the one line on standard error (and ``error`` in the document)
    document: Mapping[str, object] | None = None  # --json: the command's own keys
    text: Callable[[object, Mapping[str, str]], bool] | None = None  # writes the text to a stream; False: it failed
    scrub: Redactor | None = None  # the run's redactor: every line and the document's values (None: URL credentials)
    plain_error: bool = False  # the error line names the command itself: written as it is (escaped)


def render(result: Result, *, as_json: bool, stdout, stderr, env: Mapping[str, str]) -> int:
    """Print ``result`` (the document with ``as_json``, else its text) and return the status."""
    from .documents import dump

    make_lenient(stdout)
    ok = True
    if as_json and result.document is not None:
        document = dict(result.document)
        document["exit_status"] = result.status  # in place where the command put them, else at the end
        document["error"] = result.error
        ok = safe_write(stdout, dump(document, result.scrub or _no_redact()) + "\n")
    elif result.text is not None:
        ok = result.text(stdout, env)
    if result.error:
        say_error(result, stderr, env)
    return finish(ok, result.status, stdout, stderr, env, result.prefix, result.what)


def say_error(result: Result, stderr, env: Mapping[str, str]) -> None:
    if result.plain_error:
        from .escape import printable

        safe_write(stderr, printable(result.error or "") + "\n")
    else:
        Reporter(stderr, env, prefix=result.prefix, scrub=result.scrub).error(result.error or "")


def finish(ok: bool, status: int, stdout, stderr, env: Mapping[str, str], prefix: str, what: str) -> int:
    """The status once the output is written (``ok``) or not: the one place for a broken stream."""
    if ok:
        return status
    closed = reader_gone(stdout)
    silence(stdout)  # so that Python's own flush at exit cannot print "Exception ignored ..."
    if closed:  # the reader has what it wanted: silence, and the command's own status
        return status
    Reporter(stderr, env, prefix=prefix).error(f"cannot write {what} to standard output")
    return OUTPUT_FAILED


def _no_redact() -> Redactor:
    from .redact import NO_REDACT

    return NO_REDACT

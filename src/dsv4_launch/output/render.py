"""The one renderer: a command's ``Result`` → standard output (text, Rich, or one JSON
document), the one error line on standard error, and the exit status.

Every command (plan, doctor, fit, explain, check, ``--version``, completion's script) computes
a ``Result`` and hands it here, so what each of them used to repeat is decided once:

* **one JSON shape**: ``schema_version``, ``exit_status``, ``error`` (``documents.py``);
* **one redactor applied to everything printed**: the run's ``Redactor`` (``Result.scrub``: built
  once in ``commands/pipeline.prepare`` for plan, doctor and fit; from the key and URL for check,
  from the log's arguments for explain) masks the document's values, the error line and the text.
  A command's text never sees the stream: ``Result.text`` is handed an ``Out``, whose every way
  to write (lines, tables, a script) masks with that redactor, then escapes — so no command can
  forget to mask, or mask with the wrong redactor;
* the output stream is made lenient (characters its encoding cannot hold become backslash
  escapes);
* **a stream that does not take the output**: a pipe whose reader has gone (``plan | head -1``,
  ``doctor | grep -q FAIL``) is that reader satisfied — silence, and the command's own status,
  so ``set -o pipefail`` gates still see it; any other failure (a full disk, a closed stdout) is
  one line on standard error and exit 74 (``finish``).

dsv4-serve's report before the hand-over is lines on standard error (``report.report_plan``,
shared with ``plan``), not a ``Result``: nothing is rendered to stdout there, and the hand-over
path imports nothing more (COMMON start-up budget); its help uses ``finish`` too.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence

from ..core.records import Record
from .escape import mask_url_credentials
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
    text: Callable[[Out], None] | None = None  # writes the text through render's ``Out`` (never the stream)
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
        out = Out(stdout, env, result.scrub)
        result.text(out)
        ok = out.ok
    if result.error:
        say_error(result, stderr, env)
    return finish(ok, result.status, stdout, stderr, env, result.prefix, result.what)


class Out:
    """The one way a command's text reaches standard output: every piece — a line, a table's
    cells, title and footer, a script — is masked by the run's redactor (``scrub``; None: URL
    credentials only) and escaped on its way; ``ok`` is False once the stream failed."""

    def __init__(self, stream, env: Mapping[str, str], scrub: Redactor | None):
        self._stream = stream
        self._env = env
        self._scrub = scrub
        self._reporter: Reporter | None = None
        self._failed = False

    @property
    def ok(self) -> bool:
        return not self._failed and not (self._reporter is not None and self._reporter.broken)

    @property
    def lines(self) -> Reporter:
        """Labelled lines (``info``, ``warning``, ``error``, ``changed``), plain or styled."""
        if self._reporter is None:
            self._reporter = Reporter(self._stream, self._env, prefix=None, scrub=self._scrub)
        return self._reporter

    def diagnosis(self, diagnosis) -> None:
        """doctor's checks as a table (``tables.render_diagnosis``)."""
        from .tables import render_diagnosis

        self._done(render_diagnosis(diagnosis, self._stream, self._env, self._scrub))

    def table(self, title: str, headers: Sequence[str], rows: Sequence[Sequence[str]], styles: Sequence[str | None],
              footer: Sequence[str] = (), right: Sequence[bool] = ()) -> None:
        """A table (``tables.render_table``)."""
        from .tables import render_table

        self._done(render_table(title, headers, rows, styles, self._stream, self._env, footer, right,
                                scrub=self._scrub))

    def verbatim(self, text: str, *, failure_is_ok: bool = False) -> None:
        """Text written as it is but masked (a shell script, lines already escaped): not escaped,
        since its newlines and quotes are its own. ``failure_is_ok``: a stream that does not take
        it is no failure (completion's candidates: the shell gets 0 and no line of ours)."""
        written = safe_write(self._stream, self._scrub(text) if self._scrub else mask_url_credentials(text))
        self._done(written or failure_is_ok)

    def _done(self, written: bool) -> None:
        self._failed = self._failed or not written


def say_error(result: Result, stderr, env: Mapping[str, str]) -> None:
    if result.plain_error:
        from .escape import printable

        safe_write(stderr, printable(result.error or "", result.scrub) + "\n")
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

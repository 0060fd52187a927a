"""Output styling: Rich on a terminal, plain lines elsewhere and with NO_COLOR."""

from __future__ import annotations

import io

import pytest

from dsv4_launch.plan import Change
from dsv4_launch.redact import Redactor
from dsv4_launch.report import Reporter


class Tty(io.StringIO):
    def isatty(self) -> bool:
        return True


CHANGE = Change("--kv-cache-dtype", None, "fp8", "because [bold]tests[/bold]", "vLLM #47174")


def test_terminal_gets_rich_styling():
    out = Tty()
    Reporter(out, {"TERM": "xterm-256color"}, Redactor()).change(CHANGE)
    text = out.getvalue()
    assert "\x1b[" in text
    # user-controlled text is not read as Rich markup
    assert "[bold]tests[/bold]" in text


@pytest.mark.parametrize("env", [{"NO_COLOR": "1"}, {"TERM": "dumb"}])
def test_no_color_and_dumb_terminals_get_plain_lines(env):
    out = Tty()
    Reporter(out, env, Redactor()).change(CHANGE)
    assert out.getvalue() == (
        "dsv4-serve: changed: --kv-cache-dtype (not set) → fp8: because [bold]tests[/bold] (vLLM #47174)\n"
    )


def test_empty_no_color_does_not_count():
    out = Tty()
    Reporter(out, {"NO_COLOR": "", "TERM": "xterm"}, Redactor()).warning("x")
    assert "\x1b[" in out.getvalue()


def test_quiet_keeps_warnings_and_errors():
    out = io.StringIO()
    r = Reporter(out, {}, Redactor(), quiet=True)
    r.info("hello")
    r.change(CHANGE)
    r.warning("careful")
    r.error("broken")
    assert out.getvalue() == "dsv4-serve: warning: careful\ndsv4-serve: error: broken\n"

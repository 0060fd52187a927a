"""Output: Rich on a terminal, plain lines elsewhere and with NO_COLOR; outside text escaped;
a broken stream never raises."""

from __future__ import annotations

import io

import pytest

from dsv4_launch.core.rules.kv_paths import Change
from dsv4_launch.output.escape import escape
from dsv4_launch.output.lines import Reporter
from dsv4_launch.output.report import describe_change


class Tty(io.StringIO):
    def isatty(self) -> bool:
        return True


CHANGE = Change("--kv-cache-dtype", None, "fp8", "because [bold]tests[/bold]", "vLLM #47174")


def test_terminal_gets_rich_styling():
    out = Tty()
    Reporter(out, {"TERM": "xterm-256color"}, prefix="dsv4-serve").changed(describe_change(CHANGE))
    text = out.getvalue()
    assert "\x1b[" in text
    # user-controlled text is not read as Rich markup
    assert "[bold]tests[/bold]" in text


@pytest.mark.parametrize("env", [{"NO_COLOR": "1"}, {"TERM": "dumb"}])
def test_no_color_and_dumb_terminals_get_plain_lines(env):
    out = Tty()
    Reporter(out, env, prefix="dsv4-serve").changed(describe_change(CHANGE))
    assert out.getvalue() == (
        "dsv4-serve: changed: --kv-cache-dtype (not set) → fp8: because [bold]tests[/bold] (vLLM #47174)\n"
    )


def test_empty_no_color_does_not_count():
    out = Tty()
    Reporter(out, {"NO_COLOR": "", "TERM": "xterm"}, prefix="dsv4-serve").warning("x")
    assert "\x1b[" in out.getvalue()


def test_quiet_keeps_changes_warnings_and_errors():
    out = io.StringIO()
    r = Reporter(out, {}, prefix="dsv4-serve", quiet=True)
    r.info("hello")
    r.changed("x")
    r.warning("careful")
    r.error("broken")
    assert out.getvalue() == "dsv4-serve: changed: x\ndsv4-serve: warning: careful\ndsv4-serve: error: broken\n"


@pytest.mark.parametrize(
    "text,expected",
    [
        ("GPU \x1b[2J", "GPU \\x1b[2J"),
        ("a\ndsv4-serve: changed: forged", "a\\ndsv4-serve: changed: forged"),
        ("tab\there\r", "tab\\there\\r"),
        ("rtl \u202eevil", "rtl \\u202eevil"),
        ("bytes \udcff\udcfe", "bytes \\xff\\xfe"),  # undecodable argv bytes (surrogateescape)
        ("nul\x00 del\x7f c1\x9b", "nul\\x00 del\\x7f c1\\x9b"),
        ("fine: ✓ → ß RTX PRO 6000", "fine: ✓ → ß RTX PRO 6000"),
    ],
)
def test_outside_text_is_escaped(text, expected):
    assert escape(text) == expected


@pytest.mark.parametrize("styled", [False, True])
def test_nothing_from_outside_can_start_a_line_or_a_terminal_sequence(styled):
    out = Tty() if styled else io.StringIO()
    Reporter(out, {"TERM": "xterm"}, prefix="dsv4-serve").warning("name \x1b]0;title\x07 and\ndsv4-serve: changed: x")
    text = out.getvalue()
    assert text.count("\n") == 1 and "\x1b]0;" not in text and "\x07" not in text


class Broken(io.StringIO):
    def __init__(self, error):
        super().__init__()
        self.error = error

    def write(self, text):
        raise self.error


@pytest.mark.parametrize("error", [OSError(28, "No space left on device"), BrokenPipeError(32, "Broken pipe"),
                                   ValueError("I/O operation on closed file")])
def test_a_broken_stream_silences_the_reporter_and_never_raises(error):
    r = Reporter(Broken(error), {}, prefix="dsv4-serve")
    r.warning("one")
    r.error("two")
    assert r.broken
    closed = Reporter(None, {}, prefix="dsv4-serve")  # `2>&-`: Python's sys.stderr is None
    closed.error("three")
    assert closed.broken


@pytest.mark.parametrize("argv", [
    [], [""], ["deepseek-ai/DeepSeek-V4-Flash", "-tp", "2"], ["--api-key", "it's"], ["a b", "c\td", "e\nf"],
    ["$HOME", "`x`", "*", "~", "!", "\\", '"q"', "'"], ["--hf-overrides", '{"a": [1, 2]}'], ["ünïcode", "日本"],
    ["-O3", "a=b", "x@y%z+w,v:u/t.s_r-q"],
])
def test_the_command_line_is_quoted_as_shlex_join_quotes_it(argv):
    import shlex

    from dsv4_launch.output.report import command_line

    assert command_line(argv) == shlex.join(["vllm", "serve", *argv])

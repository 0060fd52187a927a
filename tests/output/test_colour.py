"""Colour: NO_COLOR (no-color.org), FORCE_COLOR (force-color.org), TERM=dumb, by the precedence
Rich's own Console uses — Rich itself is the oracle for the decision (nothing faked there); the
end-to-end cases fake NVML and vLLM's entry point (conftest)."""

from __future__ import annotations

import io
import json

import pytest
from rich.console import Console

from dsv4_launch.output.lines import Reporter, use_style

ESC = "\x1b["


class Stream(io.StringIO):
    def __init__(self, tty: bool):
        super().__init__()
        self.tty = tty

    def isatty(self) -> bool:
        return self.tty


CASES = [  # env, is a terminal, styled
    ({}, True, True),
    ({}, False, False),
    ({"FORCE_COLOR": "1"}, False, True),  # CI logs
    ({"FORCE_COLOR": "0"}, False, True),  # any non-empty value forces (force-color.org; Rich agrees)
    ({"FORCE_COLOR": "true"}, False, True),
    ({"FORCE_COLOR": ""}, False, False),  # empty: as if unset
    ({"NO_COLOR": "1"}, True, False),
    ({"NO_COLOR": ""}, True, True),  # empty: as if unset (no-color.org)
    ({"NO_COLOR": "1", "FORCE_COLOR": "1"}, False, False),  # NO_COLOR wins
    ({"NO_COLOR": "0", "FORCE_COLOR": "1"}, True, False),  # any non-empty NO_COLOR
    ({"TERM": "dumb"}, True, False),
    ({"TERM": "dumb", "FORCE_COLOR": "1"}, False, False),  # a dumb terminal gets no colour in Rich either
    ({"TERM": "unknown"}, True, False),
    ({"TERM": "xterm-256color"}, True, True),
    ({"TTY_COMPATIBLE": "0", "FORCE_COLOR": "1"}, True, False),
    ({"TTY_COMPATIBLE": "1"}, False, True),
]


@pytest.mark.parametrize("env, tty, styled", CASES)
def test_precedence(env, tty, styled):
    assert use_style(Stream(tty), env) is styled


@pytest.mark.parametrize("env, tty, styled", CASES)
def test_the_decision_is_richs_own(env, tty, styled):
    """Rich colours a stream when its Console has a colour system and NO_COLOR is not set; our
    plain-or-styled decision is that one (Rich, given NO_COLOR, would still write bold: we write
    plain lines)."""
    console = Console(file=Stream(tty), _environ=env)
    assert use_style(Stream(tty), env) is (console.color_system is not None and not console.no_color)


def test_no_stream_is_never_styled():
    assert use_style(None, {"FORCE_COLOR": "1"}) is False


def test_forced_colour_into_a_pipe_writes_ansi_and_the_same_words():
    forced, plain = Stream(False), Stream(False)
    Reporter(forced, {"FORCE_COLOR": "1"}, prefix="dsv4-serve").warning("disk \x1b[2J full")
    Reporter(plain, {}, prefix="dsv4-serve").warning("disk \x1b[2J full")
    assert ESC in forced.getvalue() and ESC not in plain.getvalue()
    assert "\x1b[2J" not in forced.getvalue()  # outside text stays escaped when styled
    assert plain.getvalue() == "dsv4-serve: warning: disk \\x1b[2J full\n"
    stripped = forced.getvalue()
    while ESC in stripped:
        start = stripped.index(ESC)
        stripped = stripped[:start] + stripped[stripped.index("m", start) + 1:]
    assert stripped == plain.getvalue()


@pytest.mark.parametrize("env, coloured", [
    ({"FORCE_COLOR": "1"}, True),
    ({"FORCE_COLOR": "1", "NO_COLOR": "1"}, False),
    ({"FORCE_COLOR": "1", "TERM": "dumb"}, False),
    ({}, False),
])
def test_dsv4_serve_end_to_end(run_cli, v4_dir, env, coloured):
    done, record = run_cli("dsv4-serve", v4_dir, env=env)
    assert record["argv"][-2:] == ["--kv-cache-dtype", "fp8"]
    assert (ESC in done.stderr) is coloured
    assert "changed: --kv-cache-dtype (not set) → fp8" in done.stderr or coloured


@pytest.mark.parametrize("command", [("doctor",), ("fit", "--gpus", "2", "--gpu-memory", "96GiB")])
def test_tables_follow_force_color_into_a_pipe(run_cli, command):
    done, _ = run_cli("dsv4-launch", *command, env={"FORCE_COLOR": "1", "COLUMNS": "200"})
    assert ESC in done.stdout
    done, _ = run_cli("dsv4-launch", *command, env={"COLUMNS": "200"})
    assert ESC not in done.stdout


def test_json_is_never_coloured(run_cli, v4_dir):
    done, _ = run_cli("dsv4-launch", "plan", "--json", v4_dir, env={"FORCE_COLOR": "1"})
    assert ESC not in done.stdout and json.loads(done.stdout)["argv"][-1] == "fp8"

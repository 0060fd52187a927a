"""After ``--`` every word is an operand (POSIX), for every command: a log file named ``-file``
or ``--json``, a URL, a shell — never an option of ours, never "no such option", never help.
Before ``--`` a word that starts with ``-`` stays an option (an unknown one is refused).

Nothing faked: the door (commands/cli.py, own_options.parse) in this process; explain reads real
files in a temporary directory; check's URL is read, not asked (parse).
"""

from __future__ import annotations

import io
import json
import shutil

import pytest

from dsv4_launch.commands.cli import run_command
from dsv4_launch.commands.context import Context
from dsv4_launch.commands.own_options import COMMANDS, HelpRequested, load, parse
from tests.explain.test_explain import UPSTREAM

# the words after "--": each looks like an option, one of them our own (--json), one help
DASHED = ["-file", "--json", "-h", "--help", "--follow", "-"]


def _run(args, stdin=None):
    """(status, stdout, stderr) of ``dsv4-launch ARGS`` through the door, in this process."""
    out, err = io.StringIO(), io.StringIO()
    stdin = stdin if stdin is not None else io.TextIOWrapper(io.BytesIO(b""))
    status = run_command(args[0], args[1:], Context(env={}, stdout=out, stderr=err, stdin=stdin))
    return status, out.getvalue(), err.getvalue()


@pytest.mark.parametrize("name", [n for n in COMMANDS if n != "serve"])
@pytest.mark.parametrize("word", DASHED)
def test_after_the_double_dash_every_word_is_an_operand_for_every_command(name, word):
    command = load(name)
    own, rest = parse(command, ["--", word, "x"], env={})
    assert own == {} and rest == [word, "x"]
    if any(o.name == "--json" for o in command.options):
        own, rest = parse(command, ["--json", "--", word], env={})
        assert own == {"json": True} and rest == [word]


@pytest.mark.parametrize("name", ["explain", "check", "completion"])
def test_before_the_double_dash_an_unknown_dashed_word_is_still_an_option(name):
    with pytest.raises(Exception, match="no such option: -file"):
        parse(load(name), ["-file"], env={})
    with pytest.raises(HelpRequested):
        parse(load(name), ["-h", "--", "x"], env={})


@pytest.mark.parametrize("name", ["-file", "--json", "--follow", "-h"])
def test_explain_reads_a_log_whose_name_starts_with_a_dash(tmp_path, monkeypatch, name):
    monkeypatch.chdir(tmp_path)
    shutil.copy(UPSTREAM, tmp_path / name)
    status, out, err = _run(["explain", "--", name])
    assert (status, err) == (0, ""), err
    assert "known failure: kv-auto" in out  # text: "--json" after -- is the file, not the flag
    status, out, err = _run(["explain", "--json", "--", name])
    assert status == 0 and json.loads(out)["exit_status"] == 0, err
    status, out, err = _run(["explain", name] if name.startswith("--") else ["explain", "--", "-file", name])
    if name.startswith("--"):  # without "--" it is an option: ours (--json: standard input, empty) or no such
        assert status in (1, 2) and "known failure" not in out
    else:  # two operands: one log at most
        assert status == 2 and "expected one log file" in err


def test_explain_reads_standard_input_for_a_dash_after_the_double_dash():
    status, out, err = _run(["explain", "--", "-"], stdin=io.TextIOWrapper(io.BytesIO(UPSTREAM.read_bytes())))
    assert status == 0 and "known failure: kv-auto" in out, err


def test_explain_names_a_missing_dashed_file_as_a_file(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    status, out, err = _run(["explain", "--", "-nofile"])
    assert status == 2 and "no such option" not in err and "-nofile" in err


def test_check_takes_a_dashed_word_after_the_double_dash_as_its_url():
    """As the door reads check's arguments (commands/cli.py _run): the word after ``--`` is check's
    URL operand, never an option."""
    from dsv4_launch.commands.check import url_of

    check = load("check")
    for args, own, url in ((["--", "--timeout"], {}, "--timeout"), (["--json", "--", "-x"], {"json": True}, "-x")):
        assert check.screen(args) is None
        read, rest = parse(check, args, {})
        assert (read, url_of(rest)) == (own, url)


def test_completion_takes_a_dashed_word_after_the_double_dash_as_its_shell():
    status, out, err = _run(["completion", "--", "bash"])
    assert status == 0 and "complete" in out
    status, out, err = _run(["completion", "--", "--help"])
    assert status == 2 and "--help" in err and "Usage" not in out + err  # a shell named --help, not the help


def test_the_console_script_reads_a_dashed_log_after_the_double_dash(tmp_path):
    import subprocess
    import sys

    from tests.conftest import clean_env

    shutil.copy(UPSTREAM, tmp_path / "-file")
    done = subprocess.run([sys.executable, "-m", "dsv4_launch", "explain", "--", "-file"], env=clean_env(tmp_path),
                          cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0 and "known failure: kv-auto" in done.stdout, done.stderr

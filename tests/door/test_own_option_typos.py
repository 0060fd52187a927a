"""plan's "did you mean" never calls a vLLM option a typo (own_options.parse).

A near miss of one of plan's own options (``--jsonl`` for ``--json``) is a usage error only where
the release the arguments are for has its own recorded option table and that table does not know
it. For a release without one (a newer vLLM, an unknown one, none found) it may be a vLLM option
dsv4-launch does not know yet: handed to vLLM as written, with a warning that names the option
meant. With a known release's table, an option that table knows is vLLM's, however near ours.

Stand-in option names (``--jsonl``, ``--gpux``) are used, not real ones: what matters is
whether the table knows them. Faked: the installed vLLM (``find_vllm``/``Context.vllm``, a
boundary) and, for the known-release case, the release's table (a stand-in with the option added).
"""

from __future__ import annotations

import io
import json

import pytest

from dsv4_launch.adapters import vllm_install
from dsv4_launch.adapters.vllm_install import VllmInstall
from dsv4_launch.commands.cli import run_command
from dsv4_launch.commands.context import Context
from dsv4_launch.commands.own_options import NearMiss, UsageError, load, parse
from dsv4_launch.vllm_cli import option_table

M = "deepseek-ai/DeepSeek-V4-Flash"
# stand-ins for options a future vLLM may add, each within 0.75 of one of plan's own options
FUTURE = [("--jsonl", "--json"), ("--gpux", "--gpus"), ("--vllm-versions", "--vllm-version"),
          ("--gpu-memory-x", "--gpu-memory")]


def _installed(monkeypatch, version):
    monkeypatch.setattr(vllm_install, "find_vllm", lambda env: VllmInstall(version, version is not None))


@pytest.mark.parametrize("option,meant", FUTURE)
@pytest.mark.parametrize("version", ["0.35.0", "1.0.0", "0.33.1", None], ids=["newer", "major", "patch", "none"])
def test_a_near_miss_on_a_release_without_a_table_is_handed_over_with_a_warning(monkeypatch, version, option, meant):
    _installed(monkeypatch, version)
    assert not option_table.load_table(version).exact  # no recorded table for exactly this release
    said: list[NearMiss] = []
    own, rest = parse(load("plan"), [M, option, "1", "--json"], env={}, warnings=said)
    assert own == {"json": True} and rest == [M, option, "1"]
    assert len(said) == 1 and (said[0].option, said[0].meant) == (option, meant)
    line = said[0].warning
    assert line.startswith(f"{option}: not an option of plan (did you mean {meant}?)")
    assert ("vLLM " + version if version else "no vLLM was found") in line and "passed to vLLM as written" in line


@pytest.mark.parametrize("option,meant", FUTURE)
@pytest.mark.parametrize("version", ["0.24.0", "0.33.0", "0.33.0+cu129"])
def test_a_near_miss_the_release_s_own_table_does_not_know_is_a_usage_error(monkeypatch, version, option, meant):
    _installed(monkeypatch, version)
    with pytest.raises(UsageError, match=f"no such option: {option} \\(did you mean {meant}\\?\\)"):
        parse(load("plan"), [M, option, "1"], env={}, warnings=[])
    # --vllm-version names a recorded release: its table decides, whatever is installed
    _installed(monkeypatch, "0.35.0")
    with pytest.raises(UsageError, match="did you mean"):
        parse(load("plan"), ["--vllm-version", version.split("+")[0], M, option, "1"], env={}, warnings=[])


@pytest.mark.parametrize("option,meant", FUTURE)
@pytest.mark.parametrize("version", ["0.24.0", "0.33.0"])
def test_an_option_a_known_release_s_table_knows_is_never_a_typo(monkeypatch, version, option, meant):
    real = option_table.load_table

    def with_it(wanted):
        table = real(wanted)
        if table.vllm_version == version:
            table = table._replace(actions=(*table.actions, option_table.OptionAction("x", (option,), 1)))
        return table

    monkeypatch.setattr(option_table, "load_table", with_it)
    _installed(monkeypatch, version)
    said: list[NearMiss] = []
    assert parse(load("plan"), [M, option, "1"], env={}, warnings=said) == ({}, [M, option, "1"])
    assert said == []
    other = "0.29.0"  # another recorded release whose table does not have it: a typo there
    with pytest.raises(UsageError, match=f"did you mean {meant}"):
        parse(load("plan"), ["--vllm-version", other, M, option, "1"], env={}, warnings=said)


@pytest.mark.parametrize("command", ["plan", "doctor"])
def test_the_door_says_the_warning_and_the_command_runs_with_the_option_handed_over(command):
    """In this process through the door: the warning on stderr (control characters escaped), the
    command's document on stdout with the option in the arguments vLLM gets."""
    out = io.TextIOWrapper(io.BytesIO(), encoding="utf-8")
    err = io.StringIO()
    ctx = Context(env={"DSV4_LAUNCH_GPU_CAPABILITY": "12.0"}, stdout=out, stderr=err,
                  vllm=VllmInstall("0.35.0", True), read_runtime=lambda *a, **k: (None, "not asked"))
    status = run_command(command, ["--json", M, "-tp", "2", "--js\x07on"], ctx)
    out.flush()
    document = json.loads(out.buffer.getvalue())
    lines = err.getvalue().splitlines()
    assert lines[0].startswith(f"dsv4-launch {command}: warning: --js\\x07on: not an option of {command} "
                               "(did you mean --json?); vLLM 0.35.0 has no recorded option table here"), lines
    assert "\x07" not in err.getvalue()
    assert status == document["exit_status"] != 2
    if command == "plan":
        assert "--js\x07on" in document["argv"]

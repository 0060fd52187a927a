"""Each name said once: a command's lines carry its own prefix (``Command.prefix``: never
another command's, never ``dsv4-serve:`` on a plan/doctor/fit line), the Reporter has no default
prefix to fall back on, the door's own warnings follow DSV4_LAUNCH_LOG_FORMAT like every other
line, ``--gpus`` is the GPUs' source its declaration names, and completion offers vLLM's options
for exactly the commands declared to take them.

Through the door in this process (commands/cli.run_command). Faked: NVML (the GPU reader), the
vLLM lookup (``Context.vllm``), doctor's runtime reader, dsv4-serve's hand-over; nothing else."""

from __future__ import annotations

import io
import json

import pytest

from dsv4_launch.adapters.vllm_install import VllmInstall
from dsv4_launch.commands import PROGRAM, SERVE_PROGRAM, own_options
from dsv4_launch.commands.cli import run_command
from dsv4_launch.commands.completion import candidates
from dsv4_launch.commands.own_options import COMMANDS, GPUS, load
from dsv4_launch.core.facts import GIVEN_GPUS
from dsv4_launch.core.gpus import GpuInfo
from dsv4_launch.output.lines import Reporter
from tests.planning import M, make_context

H200 = tuple(GpuInfo(i, "NVIDIA H200", f"GPU-{i}", (9, 0), 141 * 2**30) for i in range(8))
NO_RUNTIME = {"read_runtime": lambda *a, **k: (None, "not inspected in this test")}
BAD_PREFLIGHT = {"DSV4_LAUNCH_PREFLIGHT": "maybe"}  # bad input: one error line, exit 2
# Each command with arguments it refuses as bad input (with the environment above where it reads it).
BAD_INPUT = {"plan": [M], "doctor": [M], "fit": [M], "explain": ["/nonexistent/vllm.log"],
             "check": ["--timeout", "0"], "completion": ["tcsh"]}


def _run(command, args, env=None, vllm=None):
    ctx = make_context(env=env, gpus=H200, vllm=vllm, **NO_RUNTIME, hand_over=lambda argv, vllm, env: 0)
    status = run_command(command, args, ctx)
    return status, ctx.stdout.getvalue(), ctx.stderr.getvalue().splitlines()


def test_every_command_is_covered():
    assert set(BAD_INPUT) == set(COMMANDS) - {"serve"}


@pytest.mark.parametrize("command", sorted(BAD_INPUT))
def test_a_command_s_error_line_carries_its_own_prefix(command):
    status, _, said = _run(command, BAD_INPUT[command], BAD_PREFLIGHT)
    assert status == 2 and len(said) == 1, said
    assert said[0].startswith(f"{load(command).prefix}: "), said
    assert load(command).prefix == f"{PROGRAM} {command}"


@pytest.mark.parametrize("command", ["plan", "doctor", "fit", "explain"])
def test_a_command_s_json_log_lines_name_it_as_their_logger(command):
    status, _, said = _run(command, BAD_INPUT[command], {**BAD_PREFLIGHT, "DSV4_LAUNCH_LOG_FORMAT": "json"})
    assert status == 2 and said
    assert {json.loads(line)["logger"] for line in said} == {load(command).prefix}


@pytest.mark.parametrize("command", ["plan", "doctor", "fit"])
@pytest.mark.parametrize("log_format", ["plain", "json"])
def test_the_door_s_warning_is_said_as_the_command_s_other_lines(command, log_format):
    """The near-miss warning (cli._run) is the command's line: its prefix, and a JSON log line
    under DSV4_LAUNCH_LOG_FORMAT=json (it was a plain line written past the reporter)."""
    env = {"DSV4_LAUNCH_LOG_FORMAT": "json"} if log_format == "json" else {}
    _, _, said = _run(command, [M, "--jsn", "--json"], env, VllmInstall("0.35.0", True))
    warnings = [line for line in said if "did you mean --json?" in line]
    assert len(warnings) == 1, said
    if log_format == "json":
        record = json.loads(warnings[0])
        assert (record["logger"], record["level"]) == (load(command).prefix, "warning")
        assert record["message"].startswith("--jsn: not an option of")
    else:
        assert warnings[0].startswith(f"{load(command).prefix}: warning: --jsn: not an option of {command} ")


@pytest.mark.parametrize("command", ["plan", "doctor", "fit"])
def test_no_plan_doctor_or_fit_line_speaks_as_dsv4_serve(command):
    """Text and stderr of a run that refuses (plan: dsv4-serve would not start vLLM) and one that
    passes: no line starts with another's prefix."""
    for args in ([M, "-tp", "1", "--gpus", "1xH200"], [M, "-tp", "8"]):
        _, out, said = _run(command, args, {"DSV4_LAUNCH_GPU_CAPABILITY": "9.0"})
        for line in [*out.splitlines(), *said]:
            assert not line.startswith(f"{SERVE_PROGRAM}:"), line
        assert all(line.startswith(f"{load(command).prefix}: ") for line in said), said


def test_dsv4_serve_s_lines_carry_its_prefix():
    _, _, said = _run("serve", [M, "-tp", "8"])
    assert said and all(line.startswith(f"{SERVE_PROGRAM}: ") for line in said), said


def test_the_reporter_has_no_default_prefix():
    with pytest.raises(TypeError, match="prefix"):
        Reporter(io.StringIO(), {})  # type: ignore[call-arg]
    out = io.StringIO()
    Reporter(out, {}, prefix=None).info("x", label="model")
    assert out.getvalue() == "model: x\n"  # a report on stdout: no prefix


def test_the_gpus_option_is_the_gpus_source_it_gives():
    assert GPUS.name == GIVEN_GPUS
    for given in ("8xH200", "2"):
        ctx = own_options.planning_context({"gpus": own_options._gpus(given)}, make_context(gpus=H200))
        assert ctx.read_gpus().source == GIVEN_GPUS


@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_completion_offers_vllm_s_options_for_the_commands_declared_to_take_them(command):
    """Read from each command's declaration (``vllm_args``), not a second list of names."""
    offered = candidates(PROGRAM, [command, "--max-model"], version="0.33.0")
    takes = command == "serve" or load(command).vllm_args
    assert ("--max-model-len" in offered) == takes, (command, offered)
    assert takes == (command in ("serve", "plan", "doctor", "fit"))


def test_the_readme_s_exit_codes_are_the_declared_ones():
    """README's table and commands/exit_codes.py (with the statuses fit and explain declare for
    themselves) name the same exit codes: a code added in one place is missed in the other."""
    import re
    from pathlib import Path

    from dsv4_launch.commands import exit_codes, explain, fit

    readme = (Path(__file__).parents[2] / "README.md").read_text()
    table = readme.split("## Exit codes", 1)[1].split("\n\n", 2)[1]
    said = {int(code) for row in table.splitlines()[2:] for code in re.findall(r"\d+", row.split("|")[1])}
    declared = {v for k, v in vars(exit_codes).items() if k.isupper() and isinstance(v, int)}
    declared |= {fit.NO_LAYOUT_FITS, explain.EXPLAINED, explain.NOT_FOUND, explain.BAD_INPUT}
    assert said == declared

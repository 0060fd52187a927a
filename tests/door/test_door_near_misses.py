"""A near miss of plan's, doctor's or fit's own option (``--jsn``, ``--gpu-memroy``) that the door
hands to vLLM — the release has no recorded option table here, so it may be vLLM's — is said on
stderr and listed, with the option meant, in the command's ``--json`` document (``near_misses``,
added to schema 1: tests/schemas/plan-v1.json).

Through the door in this process (commands/cli.run_command). Faked: NVML (a GPU reader) and the
vLLM lookup (``Context.vllm``: an importable 0.35.0, which has no recorded table), and doctor's
runtime reader (a child process)."""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema
import pytest

from dsv4_launch.adapters.vllm_install import VllmInstall
from dsv4_launch.commands.cli import run_command
from dsv4_launch.commands.own_options import load
from dsv4_launch.core.gpus import GpuInfo
from tests.planning import M, make_context

SCHEMAS = Path(__file__).parents[1] / "schemas"
PLAN = json.loads((SCHEMAS / "plan-v1.json").read_text())
NEAR_MISSES = {"$defs": PLAN["$defs"], "$ref": "#/$defs/near_misses"}
H200 = tuple(GpuInfo(i, "NVIDIA H200", f"GPU-{i}", (9, 0), 141 * 2**30) for i in range(8))
NEWER = VllmInstall("0.35.0", True)
NO_RUNTIME = {"read_runtime": lambda *a, **k: (None, "not inspected in this test")}
COMMANDS = ["plan", "doctor", "fit"]


def _run(command: str, args: list[str], vllm=NEWER):
    ctx = make_context(gpus=H200, vllm=vllm, **NO_RUNTIME)
    status = run_command(command, args, ctx)
    return status, json.loads(ctx.stdout.getvalue()), ctx.stderr.getvalue().splitlines()


def _plans(command: str, document: dict) -> list[dict]:
    """The plan documents in a command's document: plan's is itself, doctor's is under "plan"."""
    if command == "plan":
        return [document]
    return [document["plan"]] if command == "doctor" else []


@pytest.mark.parametrize("command", COMMANDS)
@pytest.mark.parametrize("typed, meant", [(["--jsn"], "--json"), (["--gpu-memroy", "96GiB"], "--gpu-memory"),
                                          (["--vllm-versoin=0.33.0"], "--vllm-version"), (["--gpux", "8"], "--gpus")])
def test_the_document_lists_the_near_miss_with_the_option_meant(command, typed, meant):
    status, document, said = _run(command, ["--json", M, "-tp", "8", *typed])
    option = typed[0].split("=", 1)[0]
    prefix = f"dsv4-launch {command}: warning: "
    assert [line for line in said if line.startswith(prefix)] == [prefix + document["near_misses"][0]["warning"]], said
    assert document["near_misses"] == [{"option": option, "did_you_mean": meant,
                                        "warning": document["near_misses"][0]["warning"]}]
    assert document["near_misses"][0]["warning"].startswith(f"{option}: not an option of {command} "
                                                            f"(did you mean {meant}?); vLLM 0.35.0 ")
    assert meant in {o.name for o in load(command).options}
    jsonschema.validate(document["near_misses"], NEAR_MISSES)
    for plan in _plans(command, document):
        jsonschema.validate(plan, PLAN)
        assert plan["near_misses"] == document["near_misses"]
        assert typed[0] in plan["argv"]  # handed to vLLM as written
    assert status == document["exit_status"]


@pytest.mark.parametrize("command", COMMANDS)
def test_each_near_miss_is_listed_once_in_the_order_given(command):
    _, document, said = _run(command, ["--jsn", M, "--gpu-memroy", "96GiB", "--json", "--jsn"])
    assert [m["option"] for m in document["near_misses"]] == ["--jsn", "--gpu-memroy", "--jsn"]
    assert len([line for line in said if ": warning: " in line]) == 3


@pytest.mark.parametrize("command", COMMANDS)
@pytest.mark.parametrize("vllm", [NEWER, VllmInstall("0.33.0", True)], ids=["newer", "recorded"])
def test_without_a_near_miss_the_list_is_empty(command, vllm):
    """No near miss: ``[]`` (an option vLLM's table knows, however near ours, is none)."""
    _, document, said = _run(command, ["--json", M, "-tp", "8", "--max-model-len", "4096"], vllm)
    assert document["near_misses"] == [] and not [line for line in said if ": warning: " in line]
    for plan in _plans(command, document):
        jsonschema.validate(plan, PLAN)


def test_a_recorded_release_refuses_the_near_miss_and_lists_none():
    """0.33.0's own table does not know --jsn: a usage error (exit 2), not a near miss handed over."""
    status, document, said = _run("plan", ["--json", M, "--jsn"], VllmInstall("0.33.0", True))
    assert status == 2 and "did you mean --json?" in document["error"] and "near_misses" not in document


@pytest.mark.parametrize("command", COMMANDS)
def test_a_secret_the_door_takes_for_a_near_miss_is_masked_in_the_document(command):
    """``--api-key --jsn``: the door does not know vLLM's arities and calls the key a near miss;
    the run's redactor masks it in the list as everywhere else."""
    _, document, said = _run(command, ["--json", M, "--hf-token", "--jsn"])
    text = json.dumps(document)
    assert "--jsn" not in text and "--jsn" not in "\n".join(said)
    assert document["near_misses"] and all(m["option"] == "***" for m in document["near_misses"])

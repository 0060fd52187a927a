"""One renderer for every command (output/render.py): one JSON shape, one error line, and one
place for a stream that does not take the output.

Faked: the GPUs (a GpuReport given through the Context), the vLLM lookup (a VllmInstall),
doctor's runtime reader; the streams are real pipes, /dev/full and StringIO; check asks a
closed port on 127.0.0.1 (really unreachable) or gets bad input.
"""

from __future__ import annotations

import io
import json
import os
from pathlib import Path

import jsonschema
import pytest

from dsv4_launch.adapters.vllm_install import VllmInstall
from dsv4_launch.commands import exit_codes
from dsv4_launch.commands.cli import run_command
from dsv4_launch.commands.completion import run_completion
from dsv4_launch.commands.doctor import run_doctor
from dsv4_launch.commands.explain import run_explain
from dsv4_launch.commands.fit import run_fit
from dsv4_launch.commands.plan import run_plan
from dsv4_launch.commands.version import run_version
from dsv4_launch.core.facts import GpuReport
from dsv4_launch.core.gpus import GpuInfo
from dsv4_launch.output import render
from tests.conftest import V4_CONFIG
from tests.planning import make_context

ENVELOPE = json.loads((Path(__file__).parents[1] / "schemas" / "envelope-v1.json").read_text())
RTX = tuple(GpuInfo(i, "NVIDIA RTX PRO 6000", f"GPU-{i}", (12, 0), 96 * 2**30) for i in range(2))
LOG = Path(__file__).parents[1] / "fixtures" / "logs" / "vllm-47174-journald-0.24.0.log"
NO_RUNTIME = {"read_runtime": lambda python, shapes: (None, "not inspected in this test")}
NO_GPU = {"read_gpus": lambda: GpuReport(error="NVML: no driver (faked)")}  # doctor: FAIL, exit 1
NOT_INSTALLED = VllmInstall(version=None, importable=False)  # plan: nothing to hand over to, exit 127


@pytest.fixture
def model(tmp_path) -> str:
    folder = tmp_path / "v4"
    folder.mkdir()
    (folder / "config.json").write_text(json.dumps(V4_CONFIG))
    return str(folder)


def commands(model: str, tmp_path: Path):
    """(name, run(ctx) -> status, ok_env, error_env): each command, once as it works and once
    with the input it refuses as bad (one line, exit 2)."""
    bad = {"DSV4_LAUNCH_PREFLIGHT": "maybe"}
    return [
        ("plan", lambda ctx: run_plan([model, "-tp", "2"], as_json=True, ctx=ctx), {}, bad),
        ("doctor", lambda ctx: run_doctor([model, "-tp", "2"], as_json=True, ctx=ctx._replace(**NO_RUNTIME)), {}, bad),
        ("fit", lambda ctx: run_fit([model], as_json=True, ctx=ctx), {}, bad),
        ("explain", lambda ctx: run_explain([str(LOG)] if not ctx.env else [str(tmp_path / "missing.log")],
                                            as_json=True, ctx=ctx), {}, {"x": "missing file"}),
        ("check", lambda ctx: run_command("check", ["http://127.0.0.1:1", "--timeout", "2", "--json"] if not ctx.env
                                        else ["--json", "--timeout", "0"], ctx=ctx), {}, {"x": "bad timeout"}),
    ]


@pytest.mark.parametrize("name", ["plan", "doctor", "fit", "explain", "check"])
def test_every_json_document_has_one_shape(name, model, tmp_path):
    """Worked: error null and exit_status the status; bad input: error is the very line on
    stderr, exit_status 2 — for every command, against tests/schemas/envelope-v1.json."""
    (_, run, ok_env, bad_env), = [c for c in commands(model, tmp_path) if c[0] == name]
    ctx = make_context(env=ok_env, gpus=RTX, vllm=VllmInstall(version="0.33.0", importable=True))
    status = run(ctx)
    data = json.loads(ctx.stdout.getvalue())
    jsonschema.validate(data, ENVELOPE)
    assert data["exit_status"] == status and data["error"] is None, data
    ctx = make_context(env=bad_env, gpus=RTX)
    status = run(ctx)
    data = json.loads(ctx.stdout.getvalue())
    jsonschema.validate(data, ENVELOPE)
    assert status == data["exit_status"] == exit_codes.USAGE
    said = ctx.stderr.getvalue().splitlines()
    assert len(said) == 1 and data["error"] and data["error"] in said[0], (said, data["error"])


def test_fit_json_says_the_release_planned_for(model):
    from dsv4_launch.adapters.vllm_install import assumed_vllm

    ctx = make_context(gpus=RTX, vllm=assumed_vllm("0.29.0"))
    run_fit([model], as_json=True, ctx=ctx)
    data = json.loads(ctx.stdout.getvalue())
    assert (data["vllm_version"], data["vllm_version_assumed"]) == ("0.29.0", True)
    ctx = make_context(gpus=RTX, vllm=VllmInstall(version="0.33.0", importable=True))
    run_fit([model], as_json=True, ctx=ctx)
    data = json.loads(ctx.stdout.getvalue())
    assert (data["vllm_version"], data["vllm_version_assumed"]) == ("0.33.0", False)


def _closed_pipe():
    """A text stream on a pipe whose reader has already gone (``| head -1`` once it has its line)."""
    read, write = os.pipe()
    os.close(read)
    return os.fdopen(write, "w", encoding="utf-8")


def text_commands(model: str):
    """(name, run(ctx) -> status, the status it has when its output is all read)."""
    return [
        ("plan", lambda ctx: run_plan([model, "-tp", "2"], as_json=False, ctx=ctx), exit_codes.OK),
        ("plan --json", lambda ctx: run_plan([model], as_json=True, ctx=ctx._replace(vllm=NOT_INSTALLED)),
         exit_codes.NO_VLLM),
        ("doctor", lambda ctx: run_doctor([model, "-tp", "2"], as_json=False, ctx=ctx._replace(**NO_RUNTIME, **NO_GPU)),
         exit_codes.DOCTOR_FAILED),
        ("fit", lambda ctx: run_fit([model], as_json=False, ctx=ctx), exit_codes.OK),
        ("explain", lambda ctx: run_explain([str(LOG)], as_json=False, ctx=ctx), 0),
        ("version", lambda ctx: run_version("dsv4-launch", ctx), exit_codes.OK),
        ("completion", lambda ctx: run_completion(["bash"], ctx), exit_codes.OK),
        ("check", lambda ctx: run_command("check", ["http://127.0.0.1:1", "--timeout", "2"], ctx=ctx),
         exit_codes.NOT_REACHABLE),
    ]


@pytest.mark.parametrize("index", range(8), ids=[c[0] for c in text_commands("m")])
def test_a_satisfied_reader_is_silence_and_the_commands_own_status(index, model):
    name, run, expected = text_commands(model)[index]
    ctx = make_context(gpus=RTX)
    assert run(ctx) == expected  # what it says when its output is read whole
    assert ctx.stdout.getvalue()
    stdout = _closed_pipe()
    try:
        ctx = make_context(gpus=RTX, stdout=stdout)
        assert run(ctx) == expected, name
        assert "cannot write" not in ctx.stderr.getvalue()
    finally:
        stdout.close()


@pytest.mark.parametrize("index", range(8), ids=[c[0] for c in text_commands("m")])
def test_a_full_disk_is_one_line_and_74(index, model):
    if not os.path.exists("/dev/full"):
        pytest.skip("no /dev/full here")
    name, run, _ = text_commands(model)[index]
    with open("/dev/full", "w", encoding="utf-8") as full:
        ctx = make_context(gpus=RTX, stdout=full)
        assert run(ctx) == exit_codes.OUTPUT_FAILED, name
    lines = ctx.stderr.getvalue().splitlines()
    assert lines[-1].startswith(f"dsv4-launch{'' if name in ('version',) else ' ' + name.split()[0]}: error: "
                                "cannot write ") and lines[-1].endswith(" to standard output"), lines


def test_the_renderer_speaks_the_exit_codes_of_the_commands():
    assert render.OUTPUT_FAILED == exit_codes.OUTPUT_FAILED


def test_render_sets_the_envelope_where_the_command_put_its_keys():
    out, err = io.StringIO(), io.StringIO()
    result = render.Result(3, "dsv4-launch x", document={"a": 1, "exit_status": None, "b": 2}, error="it\nbroke")
    assert render.render(result, as_json=True, stdout=out, stderr=err, env={}) == 3
    data = json.loads(out.getvalue())
    assert list(data) == ["schema_version", "a", "exit_status", "b", "error", "not_utf8"]
    assert data["exit_status"] == 3 and data["error"] == "it\nbroke"
    assert err.getvalue() == "dsv4-launch x: error: it\\nbroke\n"  # escaped: one line


def test_no_gpu_is_read_when_the_context_gives_the_report():
    calls = []

    def reader():
        calls.append(1)
        return GpuReport(gpus=RTX, source="nvml")

    ctx = make_context(gpus=reader)
    run_plan(["deepseek-ai/DeepSeek-V4-Flash", "-tp", "2"], as_json=True, ctx=ctx)
    assert calls == [1] and json.loads(ctx.stdout.getvalue())["gpus"][1]["uuid"] == "GPU-1"


@pytest.mark.parametrize("args", [
    ["plan", "--json", "--vllm-version", "9.9.9", "m"],
    ["doctor", "--vllm-version", "bogus", "--json"],
    ["fit", "--json", "--gpus", "0xH200"],
    ["fit", "--gpus", "8x\x1bH200", "--json"],
    ["fit", "--json", "--gpu-memory", "lots"],
    ["plan", "--json", "--vllm-version"],
])
def test_a_bad_own_option_of_a_json_run_prints_the_one_error_shape(args, capsys):
    """plan/doctor/fit --json with an own option they cannot take: the document every --json
    run prints on an error (it printed nothing on stdout), the same line on stderr, exit 2."""
    from dsv4_launch.commands.cli import main

    status = main(args)
    out, err = capsys.readouterr()
    document = json.loads(out)
    jsonschema.validate(document, ENVELOPE)
    assert status == exit_codes.USAGE == document["exit_status"]
    assert document["error"] and document["error"] in err and "\x1b" not in out + err

"""``dsv4-serve --version`` / ``-V`` and ``dsv4-launch --version`` / ``-V``: our version, the vLLM
that would run (version and where) and Python; exit 0; vLLM not started.

Faked: vLLM's entry point (tests/fakes/vllm_pkg, which records any start) and the `vllm` on PATH
(tests/fakes/vllm_on_path.py).
"""

from __future__ import annotations

import io
import json
import os
import sys
from pathlib import Path

import pytest

import dsv4_launch
from dsv4_launch.adapters.vllm_install import VllmInstall
from dsv4_launch.commands.context import Context
from dsv4_launch.commands.serve import run_serve
from dsv4_launch.commands.version import run_version
from tests.conftest import BIN, install_fake_vllm_executable

DATA = Path(dsv4_launch.__file__).parent / "data"


@pytest.mark.parametrize("script, flag", [("dsv4-serve", "--version"), ("dsv4-serve", "-V"),
                                          ("dsv4-launch", "--version"), ("dsv4-launch", "-V")])
def test_version_names_dsv4_launch_vllm_and_python_without_starting_vllm(run_cli, fake_vllm_path, script, flag):
    done, record = run_cli(script, flag, vllm="0.29.0")
    assert done.returncode == 0, done.stderr
    assert record is None  # the fake vLLM records every start: none
    lines = done.stdout.splitlines()
    assert lines[0] == f"dsv4-launch {dsv4_launch.__version__}"
    where = fake_vllm_path("0.29.0") / "vllm"
    assert lines[1] == f"vLLM 0.29.0 ({where}, runs in this process)"
    python = (BIN / script).read_text().splitlines()[0][2:]  # the interpreter the script runs
    assert lines[2] == f"Python {sys.version.split()[0]} ({python})"
    assert len(lines) == 3 and done.stderr == ""


def test_version_names_the_vllm_on_path_when_not_importable(run_cli, tmp_path):
    bindir = install_fake_vllm_executable(tmp_path / "other-env" / "bin")
    done, record = run_cli("dsv4-serve", "--version", vllm=None,
                           env={"PATH": f"{BIN}{os.pathsep}{bindir}{os.pathsep}/usr/bin:/bin"})
    assert done.returncode == 0 and record is None
    assert done.stdout.splitlines()[1].startswith(f"vLLM version unknown ({bindir / 'vllm'}, started in place")


def test_version_without_any_vllm_says_so(run_cli):
    done, record = run_cli("dsv4-launch", "--version", vllm=None)
    assert done.returncode == 0 and record is None
    assert done.stdout.splitlines()[1] == "vLLM: none (vLLM is not installed here)"


def test_version_with_other_arguments_is_vllms(run_cli, v4_dir):
    """Only the bare flag is ours: with a model it is an argument for `vllm serve` (which rejects
    it itself, as it would without dsv4-serve)."""
    done, record = run_cli("dsv4-serve", v4_dir, "--version")
    assert record is not None and record["argv"][:4] == ["vllm", "serve", v4_dir, "--version"]


def test_no_vllm_release_has_a_serve_version_option():
    """Why the bare flag may be ours: no recorded `vllm serve` option table has it, nor an option
    that `--version` or `-V` abbreviates."""
    tables = sorted(DATA.glob("serve-options-*.json"))
    assert len(tables) >= 12
    for table in tables:
        options = [o for a in json.loads(table.read_text())["actions"] for o in a["options"]]
        assert not [o for o in options if o.startswith("--version") or o.startswith("-V")], table.name


def test_version_on_a_full_stdout_is_one_line_and_74():
    class Full(io.StringIO):
        def write(self, _):
            raise OSError(28, "No space left on device")

    err = io.StringIO()
    code = run_version("dsv4-serve", Context(env={}, stdout=Full(), stderr=err, vllm=VllmInstall("0.33.0", True)))
    assert code == 74
    assert err.getvalue() == "dsv4-serve: error: cannot write the version to standard output\n"


def test_version_escapes_outside_text():
    out = io.StringIO()
    run_version("dsv4-launch", Context(env={}, stdout=out, stderr=io.StringIO(),
                                       vllm=VllmInstall("0.33.0\x1b[2J", False, "/x/\nvllm")))
    assert "\x1b" not in out.getvalue() and out.getvalue().count("\n") == 3
    assert "vLLM 0.33.0\\x1b[2J (/x/\\nvllm, started in place of this process)" in out.getvalue()


def test_run_serve_version_does_not_prepare_or_hand_over(monkeypatch):
    import dsv4_launch.commands.serve as serve

    monkeypatch.setattr(serve, "prepare_in", lambda *a, **k: pytest.fail("prepared"))
    monkeypatch.setattr(serve, "hand_over", lambda *a, **k: pytest.fail("handed over"))
    out = io.StringIO()
    assert run_serve(["-V"], Context(env={}, stderr=io.StringIO(), stdout=out,
                                     vllm=VllmInstall("0.24.0", True, location="/v/vllm"))) == 0
    assert out.getvalue().splitlines()[1] == "vLLM 0.24.0 (/v/vllm, runs in this process)"


def test_launch_help_lists_the_version_option(run_cli):
    done, _ = run_cli("dsv4-launch", "--help")
    assert done.returncode == 0 and "-V, --version" in done.stdout


# --- plan/doctor/fit --vllm-version X.Y.Z: plan for a release without vLLM installed ----------

FP4_INDEXER = "--attention_config.use_fp4_indexer_cache=True"  # the B200 recipe's flag (recipes#760)
SM100 = {"DSV4_LAUNCH_GPU_CAPABILITY": "10.0"}  # a CI runner: no GPU, no vLLM


def _plan(run_cli, *args, vllm=None):
    done, record = run_cli("dsv4-launch", "plan", "--json", *args, gpus=None, vllm=vllm, env=SM100)
    assert record is None
    return done, json.loads(done.stdout)


def test_b200_recipe_flag_is_refused_for_0_30_and_not_for_0_29_without_vllm(run_cli):
    """vLLM 0.30 removed use_fp4_indexer_cache (vllm/config/attention.py: 'Unexpected keyword
    argument'); 0.29 on SM 10.x accepts it. Without vLLM the release is unknown: a warning only."""
    model = "deepseek-ai/DeepSeek-V4-Flash"
    done, blind = _plan(run_cli, model, "-tp", "8", FP4_INDEXER)
    # no vLLM at all: dsv4-serve would exit 127 there, and so does plan (issue 20, class 9)
    assert done.returncode == 127 and blind["exit_status"] == 127
    assert blind["vllm_version"] is None and blind["vllm_version_assumed"] is False
    assert any("use_fp4_indexer_cache" in w for w in blind["warnings"]) and not blind["refusals"]

    done, new = _plan(run_cli, model, "-tp", "8", FP4_INDEXER, "--vllm-version", "0.30.0")
    assert done.returncode == 2 and new["exit_status"] == 2
    assert new["vllm_version"] == "0.30.0" and new["vllm_version_assumed"] is True
    assert [f["rule"] for f in new["findings"] if f["level"] == "refuse"] == ["fp4-indexer-removed"]

    done, old = _plan(run_cli, "--vllm-version=0.29.0", model, "-tp", "8", FP4_INDEXER)
    assert done.returncode == 0 and old["refusals"] == [] and old["vllm_version"] == "0.29.0"
    assert old["vllm_version_assumed"] is True
    assert "--vllm-version" not in " ".join(old["argv"])  # ours, not vLLM's


def test_assumed_release_wins_over_the_installed_one(run_cli, v4_dir):
    done, doc = _plan(run_cli, v4_dir, "--vllm-version", "0.29.0", vllm="0.33.0")
    assert done.returncode == 0 and doc["vllm_version"] == "0.29.0" and doc["vllm_version_assumed"] is True
    assert doc["argv"] == [v4_dir, "--kv-cache-dtype", "fp8"]  # 0.29 crashes on auto; 0.33 would not need it
    done, installed = _plan(run_cli, v4_dir, vllm="0.33.0")
    assert installed["vllm_version"] == "0.33.0" and installed["vllm_version_assumed"] is False


@pytest.mark.parametrize("command", ["plan", "doctor", "fit"])
@pytest.mark.parametrize("value", ["0.35.0", "latest", "0.30.1"])
def test_a_release_without_a_recorded_table_is_one_line_and_exit_2(run_cli, command, value):
    from dsv4_launch.vllm_cli.option_table import available_versions

    done, record = run_cli("dsv4-launch", command, "--vllm-version", value, gpus=None, vllm=None)
    assert done.returncode == 2 and record is None and done.stdout == ""
    assert done.stderr.count("\n") == 1 and "Traceback" not in done.stderr
    assert done.stderr.startswith(f"dsv4-launch {command}: --vllm-version {value!r}: no recorded option table")
    assert f"known: {', '.join(available_versions())}" in done.stderr


def test_doctor_and_fit_take_the_assumed_release(run_cli):
    done, _ = run_cli("dsv4-launch", "doctor", "--json", "--vllm-version", "0.30.0", "deepseek-ai/DeepSeek-V4-Flash",
                      FP4_INDEXER, gpus=None, vllm=None, env=SM100)
    doc = json.loads(done.stdout)
    assert doc["plan"]["vllm_version"] == "0.30.0" and doc["plan"]["vllm_version_assumed"] is True
    assert doc["plan"]["exit_status"] == 2
    # the machine checks are this machine's: no vLLM here, whatever was assumed for the plan
    assert [c["status"] for c in doc["checks"] if c["section"] == "vllm"] == ["FAIL"]
    done, _ = run_cli("dsv4-launch", "fit", "--vllm-version", "0.30.0", "--gpus", "8", "--gpu-memory", "180GiB",
                      gpus=None, vllm=None, env=SM100)
    assert done.returncode == 0, done.stderr


@pytest.mark.parametrize("flag", ["--version", "-V"])
def test_launch_version_with_more_after_it_is_an_error_that_echoes_nothing(flag, capsys):
    from dsv4_launch.commands.cli import main

    assert main([flag, "sk-Zq123extra"]) == 2
    captured = capsys.readouterr()
    assert captured.out == "" and "sk-Zq123extra" not in captured.err
    assert captured.err == f"dsv4-launch: {flag} takes nothing after it (see: dsv4-launch --help)\n"


def test_serve_version_with_more_after_it_goes_to_vllm_as_given():
    # `vllm serve --version extra` is vLLM's to judge (no release has --version on serve): the
    # hand-over gets exactly those words, as plain `vllm serve` would.
    handed = []
    ctx = Context(env={}, stdout=io.StringIO(), stderr=io.StringIO(), vllm=VllmInstall("0.33.0", True),
                  read_gpus=lambda: pytest.fail("no GPU is read for arguments vLLM rejects"),
                  hand_over=lambda argv, vllm, env: handed.append(list(argv)) or 0)
    assert run_serve(["--version", "extra"], ctx) == 0
    assert handed == [["--version", "extra"]] and "dsv4-launch" not in ctx.stdout.getvalue()

"""dsv4-serve, dsv4-launch and python -m dsv4_launch end to end, as subprocesses.

Faked at the boundaries only (see conftest.py): the NVIDIA driver library under the real
nvidia-ml-py, and vLLM's CLI entry point (or the `vllm` executable on PATH).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import B200, BIN, H200, RTX_PRO_6000, V4_CONFIG, clean_env, install_fake_vllm_executable

M = "deepseek-ai/DeepSeek-V4-Flash"


@pytest.fixture
def v4_dir(tmp_path) -> str:
    folder = tmp_path / "models" / "my-v4-finetune"
    folder.mkdir(parents=True)
    (folder / "config.json").write_text(json.dumps(V4_CONFIG))
    return str(folder)


def test_rewrites_on_sm120_and_hands_over(run_cli, v4_dir):
    done, record = run_cli("dsv4-serve", v4_dir, "--port", "8000")
    assert done.returncode == 0, done.stderr
    assert record["argv"] == ["vllm", "serve", v4_dir, "--port", "8000", "--kv-cache-dtype", "fp8"]
    err = done.stderr
    assert "dsv4-serve: changed: --kv-cache-dtype (not set) → fp8" in err
    assert "NVIDIA RTX PRO 6000 Blackwell Workstation Edition (SM 12.0)" in err
    assert "vLLM 0.24.0" in err and "vLLM #47174" in err and "DeepseekV4ForCausalLM" in err
    assert err.count("dsv4-serve: command: vllm serve") == 1
    assert "Traceback" not in err
    # NVML was shut down before vLLM ran; torch was never imported by us
    assert record["nvml_open"] == 0
    assert record["torch_loaded"] is False
    # the heap as vLLM freezes its own once up (adapters/handover.py): frozen before vLLM starts
    assert record["gc_frozen"] > 1000
    # and vLLM runs with its collector on (commands/collector.py pauses only plan/doctor/fit)
    assert record["gc_enabled"]


def test_the_heap_is_collected_then_frozen_before_vllm_starts(monkeypatch):
    """In process, with vLLM's entry point faked: garbage made before the hand-over (young: the
    run's own) is gone and everything else frozen when vLLM's main() runs (vllm/utils/gc_utils.py
    freeze_gc_heap); the old generation is not walked again (adapters/handover.py)."""
    import gc
    import types
    import weakref

    from dsv4_launch.adapters.handover import run_vllm_in_process

    class Node:
        pass

    garbage = Node()
    garbage.self = garbage  # a cycle: only the collector frees it
    dead = weakref.ref(garbage)
    kept = Node()
    seen = {}

    def main():
        seen.update(garbage_gone=dead() is None, frozen=gc.get_freeze_count(), argv=list(sys.argv))

    fake = types.ModuleType("vllm.entrypoints.cli.main")
    fake.main = main
    for name in ("vllm", "vllm.entrypoints", "vllm.entrypoints.cli"):
        monkeypatch.setitem(sys.modules, name, types.ModuleType(name))
    monkeypatch.setitem(sys.modules, "vllm.entrypoints.cli.main", fake)
    monkeypatch.setattr(sys, "argv", sys.argv)
    del garbage
    try:
        assert run_vllm_in_process(["m", "-tp", "2"]) == 0
    finally:
        gc.unfreeze()
    assert seen["garbage_gone"] and seen["frozen"] > 1000 and seen["argv"] == ["vllm", "serve", "m", "-tp", "2"]
    assert kept is not None


def test_in_place_replacement_keeps_the_users_spelling(run_cli, v4_dir):
    done, record = run_cli("dsv4-serve", v4_dir, "--kv_cache_dtype=auto", "-tp", "2", gpus=(RTX_PRO_6000,) * 2)
    assert record["argv"][2:] == [v4_dir, "--kv_cache_dtype=fp8", "-tp", "2"]
    assert "--kv-cache-dtype auto → fp8" in done.stderr


def test_left_alone_on_h200_with_fixed_vllm(run_cli, v4_dir):
    done, record = run_cli("dsv4-serve", v4_dir, gpus=(H200,), vllm="0.33.0")
    assert record["argv"] == ["vllm", "serve", v4_dir]
    assert "left not set: vLLM 0.33.0 resolves auto" in done.stderr
    assert "changed:" not in done.stderr


def test_flashinfer_plain_rows_on_b200_are_left_alone(run_cli, v4_dir):
    args = (v4_dir, "--attention-backend", "FLASHINFER_MLA_SPARSE_DSV4")
    done, record = run_cli("dsv4-serve", *args, gpus=(B200,))
    assert record["argv"][2:] == list(args)
    assert "plain KV rows" in done.stderr


def test_explicit_value_is_kept_and_said(run_cli, v4_dir):
    done, record = run_cli("dsv4-serve", v4_dir, "--kv-cache-dtype", "fp8_ds_mla")
    assert record["argv"][2:] == [v4_dir, "--kv-cache-dtype", "fp8_ds_mla"]
    assert "fp8_ds_mla (command line) kept" in done.stderr


def test_other_models_pass_through_without_probing(run_cli, tmp_path):
    folder = tmp_path / "llama"
    folder.mkdir()
    (folder / "config.json").write_text(json.dumps({"architectures": ["LlamaForCausalLM"]}))
    done, record = run_cli("dsv4-serve", str(folder), "--port", "8000")
    assert record["argv"][2:] == [str(folder), "--port", "8000"]
    assert not (tmp_path / "nvml.log").exists()  # NVML never initialised
    assert "changed" not in done.stderr


@pytest.mark.parametrize("behaviour,code", [("return", 0), ("exit:0", 0), ("exit:2", 2), ("exit:17", 17), ("raise", 1)])
def test_exit_status_is_vllms(run_cli, v4_dir, behaviour, code):
    done, record = run_cli("dsv4-serve", v4_dir, behaviour=behaviour)
    assert done.returncode == code
    assert record is not None
    if behaviour == "raise":
        assert "RuntimeError: fake vLLM failed during start-up" in done.stderr


@pytest.mark.parametrize("number", [98, 2])  # EADDRINUSE (vLLM's socket bind), ENOENT
def test_an_oserror_of_vllm_in_this_process_is_vllms(run_cli, v4_dir, number):
    """An OSError raised by vLLM's own start-up is vLLM's error (its traceback, exit 1), as under
    plain `vllm serve`: not a failed exec of a `vllm` script (was "cannot run None", exit 126,
    and for ENOENT a TypeError traceback of ours)."""
    done, record = run_cli("dsv4-serve", v4_dir, behaviour=f"oserror:{number}")
    assert record is not None
    assert done.returncode == 1
    assert f"Error: [Errno {number}] {os.strerror(number)}" in done.stderr  # OSError, FileNotFoundError
    assert "cannot run" not in done.stderr and "TypeError" not in done.stderr


def test_secrets_reach_vllm_but_are_never_printed(run_cli, v4_dir):
    done, record = run_cli(
        "dsv4-serve", v4_dir, "--api-key", "sk-live-123", "--hf-token=hf_abcdef",
        env={"HF_TOKEN": "hf_fromenv_999"},
    )
    assert "sk-live-123" in record["argv"] and "--hf-token=hf_abcdef" in record["argv"]
    for secret in ("sk-live-123", "hf_abcdef", "hf_fromenv_999"):
        assert secret not in done.stderr and secret not in done.stdout
    assert "--api-key '***'" in done.stderr


def test_plain_lines_when_not_a_terminal(run_cli, v4_dir):
    done, _ = run_cli("dsv4-serve", v4_dir)
    lines = [l for l in done.stderr.splitlines() if l]
    assert lines and all(l.startswith("dsv4-serve: ") for l in lines)
    assert "\x1b[" not in done.stderr


def test_quiet_keeps_only_changes_warnings_and_errors(run_cli, v4_dir):
    done, record = run_cli("dsv4-serve", v4_dir, gpus=None, env={"DSV4_LAUNCH_QUIET": "1"})
    assert record["argv"][-2:] == ["--kv-cache-dtype", "fp8"]
    assert "changed:" in done.stderr and "command:" not in done.stderr  # a change is never quiet
    assert "warning: GPUs: NVML" in done.stderr


def test_disable_switch(run_cli, v4_dir, tmp_path):
    done, record = run_cli("dsv4-serve", v4_dir, env={"DSV4_LAUNCH_DISABLE": "1"})
    assert record["argv"] == ["vllm", "serve", v4_dir]
    assert done.stderr.strip().splitlines() == [
        "dsv4-serve: DSV4_LAUNCH_DISABLE is set: arguments go to vLLM unchanged, nothing checked"
    ]
    assert not (tmp_path / "nvml.log").exists()  # not probed


def test_gpu_capability_override_without_nvml(run_cli, v4_dir, tmp_path):
    done, record = run_cli("dsv4-serve", v4_dir, gpus=None, env={"DSV4_LAUNCH_GPU_CAPABILITY": "12.0"})
    assert record["argv"][-2:] == ["--kv-cache-dtype", "fp8"]
    assert "DSV4_LAUNCH_GPU_CAPABILITY=12.0" in done.stderr
    assert not (tmp_path / "nvml.log").exists()


def test_no_nvml_is_said_and_the_safe_fix_applied(run_cli, v4_dir):
    done, record = run_cli("dsv4-serve", v4_dir, gpus=None)
    assert record["argv"][-2:] == ["--kv-cache-dtype", "fp8"]
    assert "GPU type unknown" in done.stderr
    assert "libnvidia-ml.so.1 not found" in done.stderr


def test_help_goes_straight_to_vllm(run_cli, v4_dir):
    done, record = run_cli("dsv4-serve", "--help")
    assert record["argv"] == ["vllm", "serve", "--help"]
    assert done.stderr == ""


@pytest.mark.parametrize(
    "config_text,fragment",
    [(None, "no such file"), ("a: [1, 2", "not valid YAML"), ("- a\n- b\n", "a mapping"), ("", "is empty")],
)
def test_bad_config_file_is_one_line_and_exit_2(run_cli, v4_dir, tmp_path, config_text, fragment):
    path = tmp_path / "serve.yaml"
    if config_text is not None:
        path.write_text(config_text)
    done, record = run_cli("dsv4-serve", v4_dir, "--config", str(path))
    assert done.returncode == 2
    assert record is None
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("dsv4-serve: error: --config") and fragment in lines[0]


def test_config_file_is_read_and_its_content_never_printed(run_cli, v4_dir, tmp_path):
    path = tmp_path / "serve.yaml"
    path.write_text(f"model: {v4_dir}\nkv_cache_dtype: auto\napi_key: sk-in-yaml-42\n")
    done, record = run_cli("dsv4-serve", "--config", str(path))
    assert record["argv"] == ["vllm", "serve", "--config", str(path), "--kv-cache-dtype", "fp8"]
    assert "sk-in-yaml-42" not in done.stderr


@pytest.mark.parametrize("var,value", [("DSV4_LAUNCH_GPU_CAPABILITY", "blackwell"), ("DSV4_LAUNCH_PREFLIGHT", "maybe")])
def test_bad_settings_exit_2(run_cli, v4_dir, var, value):
    done, record = run_cli("dsv4-serve", v4_dir, env={var: value})
    assert done.returncode == 2 and record is None
    assert done.stderr.startswith(f"dsv4-serve: error: {var}=") and "Traceback" not in done.stderr


@pytest.mark.parametrize("var,value,handed", [
    ("DSV4_LAUNCH_DISABLE", "maybe", "unchanged"),  # unclear off switch: off is the safe side
    ("DSV4_LAUNCH_DISABLE", "y", "unchanged"),
    ("DSV4_LAUNCH_QUIET", "2", "planned"),  # a typo in a flag never stops vLLM
    ("DSV4_LAUNCH_DEBUG", "please", "planned"),
])
def test_a_typo_in_a_flag_never_stops_vllm(run_cli, v4_dir, var, value, handed):
    done, record = run_cli("dsv4-serve", v4_dir, env={var: value})
    assert done.returncode == 0 and record is not None
    expected = [v4_dir] if handed == "unchanged" else [v4_dir, "--kv-cache-dtype", "fp8"]
    assert record["argv"][2:] == expected
    assert f"warning: {var}={value!r} is not 1 (on) or 0 (off)" in done.stderr


# --- plan ----------------------------------------------------------------------------------


def test_plan_json(run_cli, v4_dir):
    done, record = run_cli("dsv4-launch", "plan", "--json", v4_dir, "--api-key", "sk-9", "--kv-cache-dtype", "auto")
    assert done.returncode == 0, done.stderr
    assert record is None  # vLLM did not run
    plan = json.loads(done.stdout)
    assert plan["schema_version"] == 1
    assert plan["argv"] == [v4_dir, "--api-key", "***", "--kv-cache-dtype", "fp8"]
    assert plan["changes"] == [
        {"option": "--kv-cache-dtype", "before": "auto", "after": "fp8",
         "reason": plan["changes"][0]["reason"], "reference": "vLLM #47174"}
    ]
    assert [{k: v for k, v in g.items() if k != "memory_bytes"} for g in plan["gpus"]] == [
        {"index": 0, "name": "NVIDIA RTX PRO 6000 Blackwell Workstation Edition",
                             "compute_capability": "12.0", "uuid": "GPU-12000000-0000-0000-0000-000000000000"}]
    assert plan["gpu_error"] is None
    assert plan["model"] == {"name": v4_dir, "architecture": "DeepseekV4ForCausalLM",
                             "source": f"config.json in {v4_dir}"}
    assert plan["vllm_version"] == "0.24.0"
    assert plan["refusals"] == [] and isinstance(plan["warnings"], list)
    assert "sk-9" not in done.stdout + done.stderr


def test_plan_json_argv_is_what_dsv4_serve_hands_over(run_cli, v4_dir):
    args = (v4_dir, "-tp", "2", "--kv_cache_dtype=auto")
    planned, _ = run_cli("dsv4-launch", "plan", "--json", "--", *args, gpus=(RTX_PRO_6000,) * 2)
    _, record = run_cli("dsv4-serve", *args, gpus=(RTX_PRO_6000,) * 2)
    assert json.loads(planned.stdout)["argv"] == record["argv"][2:]


def test_plan_human_on_stdout(run_cli):
    done, record = run_cli("dsv4-launch", "plan", M, gpus=None, env={"DSV4_LAUNCH_GPU_CAPABILITY": "12.0"})
    assert done.returncode == 0 and record is None
    out = done.stdout
    assert "model: deepseek-ai/DeepSeek-V4-Flash: DeepseekV4ForCausalLM (from the known-checkpoint table " \
           "(deepseek-ai/DeepSeek-V4-Flash))" in out
    assert "gpus: 0: GPU 0 (SM 12.0) [DSV4_LAUNCH_GPU_CAPABILITY]" in out
    assert "command: vllm serve deepseek-ai/DeepSeek-V4-Flash --kv-cache-dtype fp8" in out
    assert "dsv4-serve:" not in out  # plan's report is its own, not dsv4-serve's log


def test_plan_says_when_only_the_name_was_recognised(run_cli):
    done, _ = run_cli("dsv4-launch", "plan", "someone/DeepSeek-V4-Flash-abliterated", gpus=None,
                      env={"DSV4_LAUNCH_GPU_CAPABILITY": "12.0"})
    assert "DeepseekV4ForCausalLM (from the name)" in done.stdout
    assert "assumed DeepseekV4ForCausalLM from the name" in done.stdout


def test_python_dash_m_and_launch_serve_are_the_same_tool(run_cli, v4_dir, tmp_path):
    _, record = run_cli("dsv4-launch", "serve", v4_dir)
    assert record["argv"] == ["vllm", "serve", v4_dir, "--kv-cache-dtype", "fp8"]
    assert record["gc_enabled"] and record["gc_frozen"] > 1000  # serve is dsv4-serve: no pause of plan's
    env = clean_env(tmp_path, DSV4_LAUNCH_GPU_CAPABILITY="12.0")
    done = subprocess.run([sys.executable, "-m", "dsv4_launch", "plan", "--json", M], env=env,
                          capture_output=True, text=True, timeout=60)
    assert json.loads(done.stdout)["argv"] == [M, "--kv-cache-dtype", "fp8"]


# --- exec fallback (vLLM installed elsewhere, e.g. dsv4-launch from pipx) -------------------


@pytest.fixture
def vllm_on_path(tmp_path) -> Path:
    return install_fake_vllm_executable(tmp_path / "other-env" / "bin")


def test_exec_fallback_keeps_the_pid(run_cli, tmp_path, v4_dir, vllm_on_path):
    record = tmp_path / "vllm-record.json"
    env = clean_env(tmp_path, FAKE_VLLM_RECORD=str(record), FAKE_VLLM_EXIT="5", DSV4_LAUNCH_GPU_CAPABILITY="12.0")
    env["PATH"] = f"{BIN}{os.pathsep}{vllm_on_path}{os.pathsep}/usr/bin:/bin"
    proc = subprocess.Popen([str(BIN / "dsv4-serve"), v4_dir], env=env, stderr=subprocess.PIPE, text=True)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 5
    data = json.loads(record.read_text())
    assert data["pid"] == proc.pid  # the same process, now running vllm
    assert data["argv"] == ["vllm", "serve", v4_dir, "--kv-cache-dtype", "fp8"]
    assert "changed: --kv-cache-dtype" in err


def test_no_vllm_anywhere_exits_127(run_cli, v4_dir):
    done, record = run_cli("dsv4-serve", v4_dir, vllm=None)
    assert done.returncode == 127 and record is None
    assert "dsv4-serve: error: vLLM is not importable here and there is no usable `vllm` on PATH" in done.stderr
    python = (BIN / "dsv4-serve").read_text().splitlines()[0][2:]  # the interpreter running dsv4-serve
    assert f"{python} -m pip install vllm" in done.stderr and "Traceback" not in done.stderr


def test_exec_loop_is_stopped(run_cli, v4_dir, vllm_on_path):
    done, _ = run_cli("dsv4-serve", v4_dir, vllm=None, env={
        "PATH": f"{BIN}{os.pathsep}{vllm_on_path}{os.pathsep}/usr/bin:/bin", "DSV4_LAUNCH_EXECED": "1"})
    assert done.returncode == 127 and "wrapper" in done.stderr


# --- pre-flight and doctor through the console scripts ---------------------------------------


def test_preflight_refusal_stops_before_vllm(run_cli, v4_dir):
    done, record = run_cli("dsv4-serve", v4_dir, "--kv-cache-dtype", "bfloat16", "--block-size", "64")
    assert done.returncode == 2 and record is None
    errors = [l for l in done.stderr.splitlines() if l.startswith("dsv4-serve: error: ")]
    assert len(errors) == 3  # two problems and the summary
    assert "--kv-cache-dtype bfloat16" in errors[0] and "--block-size 64" in errors[1]
    assert "DSV4_LAUNCH_PREFLIGHT=warn" in errors[2]
    assert "command:" not in done.stderr


def test_preflight_warn_mode_starts_anyway(run_cli, v4_dir):
    done, record = run_cli("dsv4-serve", v4_dir, "--kv-cache-dtype", "bfloat16", env={"DSV4_LAUNCH_PREFLIGHT": "warn"})
    assert done.returncode == 0 and record["argv"][2:] == [v4_dir, "--kv-cache-dtype", "bfloat16"]
    assert "dsv4-serve: warning: --kv-cache-dtype bfloat16" in done.stderr


def test_plan_json_lists_refusals(run_cli, v4_dir):
    done, _ = run_cli("dsv4-launch", "plan", "--json", v4_dir, "--block-size", "64")
    data = json.loads(done.stdout)
    # plan gates like dsv4-serve: the status it would have (2: refused), and the JSON all the same
    assert done.returncode == 2 and data["preflight"] == "refuse" and data["exit_status"] == 2
    assert len(data["refusals"]) == 1 and "No common block size" in data["refusals"][0]
    (block,) = [f for f in data["findings"] if f["rule"] == "block-size"]
    assert block["level"] == "refuse" and block["evidence"] == "confirmed" and block["certain"] is True


def test_doctor_end_to_end(run_cli, v4_dir):
    done, record = run_cli("dsv4-launch", "doctor", "--json", v4_dir)
    assert record is None
    data = json.loads(done.stdout)
    gpu = [c for c in data["checks"] if c["section"] == "gpu"]
    assert (gpu[0]["status"] == "OK"
            and "NVIDIA RTX PRO 6000 Blackwell Workstation Edition (SM 12.0)" in gpu[0]["detail"])
    # the fake vLLM package is importable but this test environment has no torch
    torch = [c for c in data["checks"] if c["section"] == "torch"]
    assert torch[0]["status"] == "FAIL" and done.returncode == 1
    done, _ = run_cli("dsv4-launch", "doctor", v4_dir)
    assert done.stdout.splitlines()[-1] == "FAIL: DeepSeek-V4 would not start here"


# --- the door: one declaration per option, typos of our own options, --gpus for plan and doctor ---


@pytest.mark.parametrize("command,args,meant", [
    ("plan", ["--jsn", M], "--json"),
    ("plan", [M, "--vllm-versoin", "0.24.0"], "--vllm-version"),
    ("plan", [M, "--vllm_version=0.24.0"], "--vllm-version"),
    ("doctor", ["--JSON"], "--json"),
    ("doctor", [M, "--gpuss", "8xH200"], "--gpus"),
    ("fit", ["--gpu-memroy", "80GiB"], "--gpu-memory"),
    ("fit", [M, "--gpus-memory=80GiB", "-tp", "2"], "--gpu-memory"),
])
def test_a_typo_of_an_own_option_is_a_usage_error(run_cli, command, args, meant):
    """Not handed to vLLM's parser as an unknown vLLM option (issue 28.3): one line that names the
    option meant, exit 2, nothing planned or run."""
    done, record = run_cli("dsv4-launch", command, *args, vllm="0.33.0")
    assert done.returncode == 2 and record is None and done.stdout == ""
    typo = next(a for a in args if a.startswith("--")).partition("=")[0]
    assert done.stderr == (f"dsv4-launch {command}: no such option: {typo} (did you mean {meant}?) "
                           f"(see: dsv4-launch {command} --help)\n")
    done, _ = run_cli("dsv4-launch", command, "--json", *args, vllm="0.33.0")
    document = json.loads(done.stdout)
    assert done.returncode == 2 and document["exit_status"] == 2 and f"did you mean {meant}?" in document["error"]


@pytest.mark.parametrize("release", ["0.24.0", "0.29.0", "0.33.0"])
def test_a_real_vllm_option_is_never_taken_for_a_typo(release):
    """Every option of the release's recorded table, its underscore spelling, its dotted form and
    argparse's abbreviations of it (allow_abbrev) are vLLM's, however near our own names."""
    from dsv4_launch.commands.own_options import load, parse
    from dsv4_launch.vllm_cli.option_table import load_table

    plan = load("plan")
    longs = [o for o in load_table(release).option_strings if o.startswith("--") and o != "--help"]  # help: ours
    for option in longs:
        for spelling in (option, option.replace("-", "_").replace("__", "--", 1), f"{option}.x", option[:-1]):
            own, rest = parse(plan, ["--vllm-version", release, M, spelling, "1"], env={})
            assert rest == [M, spelling, "1"], spelling
    # near our --gpu-memory, and an abbreviation of vLLM's --gpu-memory-utilization: vLLM's
    assert parse(plan, ["--vllm-version", release, M, "--gpu-memo", "0.9"], env={})[1] == [M, "--gpu-memo", "0.9"]


def test_the_installed_release_decides_what_is_a_typo_when_none_is_given(monkeypatch):
    """Without --vllm-version the installed vLLM's table is read (here a stand-in table in which
    --jsn is an option): a name it knows is vLLM's, the same name is a typo for another release."""
    from dsv4_launch.adapters import vllm_install
    from dsv4_launch.commands import own_options
    from dsv4_launch.vllm_cli import option_table

    real = option_table.load_table

    def stand_in(version):
        table = real(version)
        if version == "0.33.0":
            action = option_table.OptionAction("jsn", ("--jsn",), 0)
            table = table._replace(actions=(*table.actions, action))
        return table

    monkeypatch.setattr(option_table, "load_table", stand_in)
    monkeypatch.setattr(vllm_install, "find_vllm", lambda env: vllm_install.VllmInstall("0.33.0", True))
    plan = own_options.load("plan")
    assert own_options.parse(plan, [M, "--jsn"], env={}) == ({}, [M, "--jsn"])
    with pytest.raises(own_options.UsageError, match="did you mean --json"):
        own_options.parse(plan, [M, "--jsn", "--vllm-version", "0.24.0"], env={})


def test_vllms_arguments_reach_it_as_written(run_cli, v4_dir):
    """Own options are picked out by their exact names; nothing else is re-read (click would split
    `-hx` into -h and -x, and take -h for help)."""
    args = [v4_dir, "--served-model-name", "-hx", "-tp", "2", "--max_model_len=4096", "-O3"]
    done, _ = run_cli("dsv4-launch", "plan", *args[:3], "--json", *args[3:], gpus=(RTX_PRO_6000,) * 2)
    assert json.loads(done.stdout)["argv"][: len(args)] == args, done.stderr


def test_plan_and_doctor_take_gpus_presets(run_cli, tmp_path):
    """--gpus 8xH200 reaches the rules (31.2): NVML is not asked, the command line wins over
    DSV4_LAUNCH_GPU_CAPABILITY, and the plan is the preset's (SM 12.0 gets fp8, SM 9.0 not on 0.33)."""
    env = {"DSV4_LAUNCH_GPU_CAPABILITY": "10.0"}
    done, _ = run_cli("dsv4-launch", "plan", "--json", "--gpus", "8xH200", M, "-tp", "8", vllm="0.33.0", env=env)
    plan = json.loads(done.stdout)
    assert done.returncode == 0, done.stderr
    assert [(g["name"], g["compute_capability"]) for g in plan["gpus"]] == [("NVIDIA H200", "9.0")] * 8
    assert plan["gpu_source"] == "--gpus" and plan["changes"] == []
    assert not (tmp_path / "nvml.log").exists()  # a preset: the machine's GPUs are not asked
    done, _ = run_cli("dsv4-launch", "plan", "--json", M, "-tp", "2", "--gpus=2xRTXPRO6000", vllm="0.24.0", gpus=None)
    plan = json.loads(done.stdout)
    assert [c["after"] for c in plan["changes"]] == ["fp8"] and len(plan["gpus"]) == 2
    done, _ = run_cli("dsv4-launch", "doctor", "--json", "--gpus", "8xB200", M, "-tp", "8", vllm="0.33.0", gpus=None)
    doctor = json.loads(done.stdout)
    assert [g["name"] for g in doctor["plan"]["gpus"]] == ["NVIDIA B200"] * 8


def test_gpus_as_a_count_and_gpu_memory_use_this_machines_gpu(run_cli, tmp_path):
    done, _ = run_cli("dsv4-launch", "plan", "--json", M, "--gpus", "4", "--gpu-memory", "80GiB")
    plan = json.loads(done.stdout)
    assert [(g["compute_capability"], g["memory_bytes"]) for g in plan["gpus"]] == [("12.0", 80 * 2**30)] * 4
    assert (tmp_path / "nvml.log").exists()  # the kind of GPU is this machine's


@pytest.mark.parametrize("args,fragment", [
    (["--gpus", "8xfoo"], "--gpus '8xfoo': unknown GPU 'foo'"),
    (["--gpu-memory", "0.9"], "--gpu-memory-utilization is written out in full here"),
    (["--gpus"], "--gpus needs a value"),
    (["--json=yes"], "--json takes no value"),
    (["--gpus", "8x\x1b[31mH200"], "--gpus '8x\\x1b[31mH200': '\\x1b' cannot be part of a GPU count or name"),
    (["--gpus", "8xH" + "2" * 5000], "…"),
    (["--gpu-memory", "9" * 5000 + "\u202e"], "…"),
])
def test_a_bad_planning_option_is_one_line(run_cli, args, fragment):
    for command in ("plan", "doctor", "fit"):
        done, record = run_cli("dsv4-launch", command, M, *args, gpus=None)
        assert done.returncode == 2 and record is None and done.stdout == ""
        assert done.stderr.count("\n") == 1 and fragment in done.stderr, done.stderr
        assert len(done.stderr) < 600 and done.stderr[:-1].isprintable(), ascii(done.stderr)


def test_check_and_explain_refuse_what_they_do_not_declare(run_cli):
    done, _ = run_cli("dsv4-launch", "check", "--jsno")
    assert done.returncode == 2
    assert (done.stderr
            == "dsv4-launch check: no such option: --jsno (did you mean --json?) (see: dsv4-launch check --help)\n")
    done, _ = run_cli("dsv4-launch", "check", "--api-key=sk-secret-1")  # refused as a key, never echoed
    assert done.returncode == 2 and "sk-secret-1" not in done.stderr and "--api-key-env NAME" in done.stderr
    done, _ = run_cli("dsv4-launch", "explain", "--timeout", "3")
    assert done.returncode == 2 and "no such option: --timeout" in done.stderr


def test_an_unknown_command_names_the_one_meant(run_cli):
    done, _ = run_cli("dsv4-launch", "plna", M)
    assert done.returncode == 2 and "No such command 'plna'. Did you mean 'plan'?" in done.stderr


COMMAND_NAMES = ["plan", "doctor", "fit", "explain", "check", "completion"]


@pytest.mark.parametrize("command", [None, *COMMAND_NAMES])
def test_every_help_fits_in_100_columns_and_shows_each_declared_option(run_cli, command):
    from dsv4_launch.commands.own_options import load

    done, record = run_cli("dsv4-launch", *([command] if command else []), "--help", env={"COLUMNS": "250"})
    assert done.returncode == 0 and record is None and done.stderr == ""
    assert max(len(line) for line in done.stdout.splitlines()) <= 100, done.stdout
    if command:
        declared = load(command)
        assert declared.summary.split()[0] in done.stdout
        for option in declared.options:
            assert f"{option.name} {option.metavar}".strip() in done.stdout
    else:
        for name in ("serve", *COMMAND_NAMES):
            assert f"  {name} " in done.stdout


def test_dsv4_serve_help_fits_in_100_columns(run_cli):
    from dsv4_launch.core.settings import ENV_VARS

    done, _ = run_cli("dsv4-serve", "--help", vllm=None)
    assert done.returncode == 0
    assert max(len(line) for line in done.stdout.splitlines()) <= 100, done.stdout
    flat = " ".join(done.stdout.split())
    for name, effect in ENV_VARS:  # every variable and every word of its effect is still there
        assert name in flat and " ".join(effect.split()) in flat


def test_plan_loads_only_its_own_command(tmp_path):
    """The door imports the command that runs and nothing of the others, nor click."""
    env = clean_env(tmp_path, DSV4_LAUNCH_GPU_CAPABILITY="12.0")
    code = ("import io, json, sys, contextlib\nfrom dsv4_launch.commands.cli import main\n"
            "with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):\n"
            "    main(['plan', '--json', '--vllm-version', '0.24.0', 'deepseek-ai/DeepSeek-V4-Flash', "
            "'--max-model-len', '4096', '--enable-auto-tool-choice', '--tool-call-parser', 'deepseek_v4'])\n"
            "print(json.dumps(sorted(sys.modules)))")
    done = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=60)
    modules = set(json.loads(done.stdout))
    assert "dsv4_launch.commands.plan" in modules
    for name in ("click", "dsv4_launch.commands.click_app", "dsv4_launch.commands.check",
                 "dsv4_launch.commands.explain", "dsv4_launch.commands.fit", "dsv4_launch.commands.doctor",
                 "dsv4_launch.commands.completion", "difflib"):
        assert name not in modules, name


def test_a_command_click_is_asked_to_run_goes_through_the_door(capsys):
    """click_app's commands run the door they are given with the arguments as written (click
    does not re-read them); its help is the declaration's."""
    from dsv4_launch.commands.click_app import run_click

    calls = []

    def door(name, args):
        calls.append((name, list(args)))
        return 7

    assert run_click(["plan", M, "-hx", "--json", "--", "-h"], door) == 7
    assert run_click(["serve", "--help"], door) == 7  # dsv4-serve's --help is vLLM's
    assert calls == [("plan", [M, "-hx", "--json", "--", "-h"]), ("serve", ["--help"])]
    assert run_click(["fit", M, "--help"], door) == 0 and len(calls) == 2
    assert "--gpu-memory SIZE" in capsys.readouterr().out


def test_gpus_as_a_count_takes_the_kind_dsv4_launch_gpu_capability_names(run_cli, tmp_path):
    """--gpus 8 with DSV4_LAUNCH_GPU_CAPABILITY=9.0 (no NVML): 8 GPUs of SM 9.0, not 8 of an
    unknown kind nor the variable's one GPU; a bad value is still the pipeline's one line."""
    env = {"DSV4_LAUNCH_GPU_CAPABILITY": "9.0", "DSV4_LAUNCH_GPU_MEMORY": "141GiB"}
    done, _ = run_cli("dsv4-launch", "plan", "--json", "--gpus", "8", M, "-tp", "8", gpus=None, vllm="0.33.0", env=env)
    plan = json.loads(done.stdout)
    assert [(g["compute_capability"], g["memory_bytes"]) for g in plan["gpus"]] == [("9.0", 141 * 2**30)] * 8
    assert not (tmp_path / "nvml.log").exists()
    done, _ = run_cli("dsv4-launch", "plan", "--gpus", "8", M, gpus=None, env={"DSV4_LAUNCH_GPU_CAPABILITY": "hopper"})
    assert done.returncode == 2 and "DSV4_LAUNCH_GPU_CAPABILITY='hopper'" in done.stderr


@pytest.mark.parametrize("size,expected",
                         [("80GiB", 80 * 2**30), ("80GB", 80 * 10**9), ("141.5GiB", int(141.5 * 2**30)),
                                           ("97887MiB", 97887 * 2**20)])
def test_gpu_memory_with_dsv4_launch_gpu_capability_is_the_variables_gpus_memory(run_cli, size, expected):
    """--gpu-memory alone, with DSV4_LAUNCH_GPU_CAPABILITY naming the GPUs (no NVML here): the
    variable's GPUs with exactly that memory; the command line wins over DSV4_LAUNCH_GPU_MEMORY."""
    env = {"DSV4_LAUNCH_GPU_CAPABILITY": "12.0,12.0", "DSV4_LAUNCH_GPU_MEMORY": "32GiB"}
    done, _ = run_cli("dsv4-launch", "plan", "--json", "--gpu-memory", size, M, "-tp", "2", gpus=None, env=env)
    plan = json.loads(done.stdout)
    assert [(g["compute_capability"], g["memory_bytes"]) for g in plan["gpus"]] == [("12.0", expected)] * 2
    from dsv4_launch.commands.own_options import _size_text
    from dsv4_launch.core.settings import parse_size

    assert parse_size(_size_text(expected), unit_required=True) == expected

"""Never worse than plain `vllm serve`: wherever vLLM would start, dsv4-serve starts it; nothing
of ours (a broken stream, an unreadable fact, a FIFO) stops it, and every message is a word, not
a traceback. Subprocesses of the installed console scripts, with the stand-in NVML and the fake
vLLM entry point (tests/conftest.py)."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import threading

import pytest

from tests.conftest import BIN, H200, RTX_PRO_6000, clean_env, install_fake_vllm_executable

M = "deepseek-ai/DeepSeek-V4-Flash"
TWO = (RTX_PRO_6000, RTX_PRO_6000)


def shell(run_cli, tmp_path, command: str, **kw):
    """dsv4-serve run by /bin/sh with a redirection we cannot express to subprocess."""
    record = tmp_path / "vllm-record.json"
    env = clean_env(tmp_path, FAKE_VLLM_RECORD=str(record), FAKE_VLLM_BEHAVIOUR="return")
    env.update(kw)
    done = subprocess.run(["/bin/sh", "-c", command], env=env, capture_output=True, text=True, timeout=60,
                          cwd=tmp_path)
    return done, (json.loads(record.read_text()) if record.exists() else None)


@pytest.mark.parametrize("redirect", ["2>/dev/full", "2>&-", "2>&- 1>&-"])
def test_a_broken_stderr_never_stops_vllm(run_cli, fake_vllm_path, tmp_path, v4_dir, redirect):
    done, record = shell(run_cli, tmp_path, f'"{BIN}/dsv4-serve" "{v4_dir}" --port 8000 {redirect}; echo "rc=$?"',
                         PYTHONPATH=str(fake_vllm_path("0.24.0")), DSV4_LAUNCH_GPU_CAPABILITY="12.0")
    assert record is not None, done.stdout + done.stderr  # vLLM was started
    assert record["argv"] == ["vllm", "serve", v4_dir, "--port", "8000", "--kv-cache-dtype", "fp8"]
    if "1>&-" not in redirect:
        assert "rc=0" in done.stdout


def test_a_dead_log_pipe_never_stops_vllm(fake_vllm_path, tmp_path, v4_dir):
    record = tmp_path / "rec.json"
    env = clean_env(tmp_path, FAKE_VLLM_RECORD=str(record), PYTHONPATH=str(fake_vllm_path("0.24.0")),
                    DSV4_LAUNCH_GPU_CAPABILITY="12.0")
    read, write = os.pipe()
    os.close(read)  # the reader (a log shipper) is gone: every write gets EPIPE
    done = subprocess.run([str(BIN / "dsv4-serve"), v4_dir], env=env, stderr=write, stdout=subprocess.PIPE,
                          timeout=60)
    os.close(write)
    assert done.returncode == 0 and record.exists()


@pytest.mark.parametrize("command", [["plan"], ["plan", "--json"], ["doctor"], ["doctor", "--json"]])
def test_plan_and_doctor_with_a_closed_stdout_say_so_without_a_traceback(tmp_path, v4_dir, command):
    env = clean_env(tmp_path, DSV4_LAUNCH_GPU_CAPABILITY="12.0")
    done = subprocess.run(["/bin/sh", "-c", f'"{BIN}/dsv4-launch" {" ".join(command)} "{v4_dir}" >&-'],
                          env=env, capture_output=True, text=True, timeout=120)
    assert "Traceback" not in done.stderr and "Exception ignored" not in done.stderr
    assert done.returncode == 74 and "cannot write" in done.stderr


def test_a_fifo_config_is_left_to_vllm_unread(run_cli, tmp_path, v4_dir):
    fifo = tmp_path / "serve.yaml"
    os.mkfifo(fifo)
    got = {}

    def feed():  # plays vLLM's part: if dsv4-serve had read the FIFO, vLLM would block forever
        with open(fifo, "w") as handle:
            handle.write(f"model: {v4_dir}\n")
        got["fed"] = True

    threading.Thread(target=feed, daemon=True).start()
    done, record = run_cli("dsv4-serve", "--config", str(fifo), gpus=TWO, timeout=30)
    assert record["argv"] == ["vllm", "serve", "--config", str(fifo)]  # handed over unchanged
    assert "FIFO (named pipe), not a regular file" in done.stderr and "Traceback" not in done.stderr
    assert "fed" not in got  # nobody read it: it is still there for vLLM
    with open(fifo) as handle:  # drain it so the feeder thread ends
        handle.read()


def test_a_yaml_link_to_stdin_is_not_read(run_cli, tmp_path):
    link = tmp_path / "stdin.yaml"
    link.symlink_to("/dev/stdin")
    done, record = run_cli("dsv4-serve", "--config", str(link), gpus=TWO)
    assert record is not None and record["argv"][2:] == ["--config", str(link)]
    assert "not a regular file" in done.stderr


@pytest.mark.parametrize("value", ["²", "１", "0,²", "GPU-\x1b[2J"])
def test_odd_cuda_visible_devices_never_stop_vllm(run_cli, v4_dir, value):
    done, record = run_cli("dsv4-serve", v4_dir, env={"CUDA_VISIBLE_DEVICES": value}, gpus=TWO)
    assert "Traceback" not in done.stderr
    assert record is not None  # CUDA reads ASCII digits only; whatever it makes of these, vLLM decides
    if not value.startswith("0"):
        assert "matches no GPU" in done.stderr
    assert "\x1b" not in done.stderr


def test_full_width_one_is_not_gpu_one(run_cli, v4_dir):
    done, _ = run_cli("dsv4-launch", "plan", "--json", v4_dir, env={"CUDA_VISIBLE_DEVICES": "１"}, gpus=TWO)
    assert json.loads(done.stdout)["gpus"] == []


def test_non_utf8_nvidia_smi_output_and_a_hanging_one(run_cli, tmp_path, v4_dir):
    bindir = tmp_path / "smi"
    bindir.mkdir()
    smi = bindir / "nvidia-smi"
    smi.write_bytes(b"#!/bin/sh\nprintf '0, GPU-1, RTX \\377\\376 PRO, 12.0, 97887\\n'\n")
    smi.chmod(0o755)
    path = f"{BIN}{os.pathsep}{bindir}{os.pathsep}/usr/bin:/bin"
    done, _ = run_cli("dsv4-launch", "plan", "--json", v4_dir, gpus=None, env={"PATH": path})
    data = json.loads(done.stdout)
    assert data["gpus"][0]["compute_capability"] == "12.0" and "\\xff" in data["gpus"][0]["name"]


def test_a_hanging_nvidia_smi_is_said_as_a_timeout():
    from dsv4_launch.adapters import nvml

    calls = []

    class Hang:
        def __call__(self, cmd, **kw):
            calls.append(kw)
            raise subprocess.TimeoutExpired(cmd, kw.get("timeout"))

    original = subprocess.run
    try:
        subprocess.run = Hang()
        out, why = nvml._run_nvidia_smi(["sh", "-c", "sleep 60"])
    finally:
        subprocess.run = original
    assert out is None and why == "nvidia-smi timed out after 15 s" and calls[0]["timeout"] == 15


def test_help_without_vllm_is_our_usage(run_cli):
    done, _ = run_cli("dsv4-serve", "--help", vllm=None)
    assert done.returncode == 0 and done.stdout.startswith("usage: dsv4-serve")
    assert "DSV4_LAUNCH_DISABLE=1" in done.stdout and "https://docs.vllm.ai" in done.stdout
    assert "Traceback" not in done.stderr


def test_help_with_vllm_is_ours_then_vllms(run_cli):
    done, record = run_cli("dsv4-serve", "--help")
    assert done.stdout.startswith("usage: dsv4-serve") and record["argv"] == ["vllm", "serve", "--help"]


@pytest.mark.parametrize("where", ["after the model", "before the model", "last"])
def test_plans_own_options_anywhere_before_a_double_dash(run_cli, v4_dir, where):
    args = {"after the model": [v4_dir, "--json", "-tp", "2"], "before the model": ["--json", v4_dir, "-tp", "2"],
            "last": [v4_dir, "-tp", "2", "--json"]}[where]
    done, _ = run_cli("dsv4-launch", "plan", *args, gpus=TWO)
    assert json.loads(done.stdout)["argv"][:3] == [v4_dir, "-tp", "2"]


def test_after_a_double_dash_everything_is_vllms(run_cli, v4_dir):
    done, _ = run_cli("dsv4-launch", "plan", "--json", "--", v4_dir, "--json", gpus=TWO)
    assert "--json" in json.loads(done.stdout)["argv"]  # vLLM will reject it; plan says what it gets


def test_doctor_without_a_model_checks_deepseek_v4(run_cli):
    done, _ = run_cli("dsv4-launch", "doctor", "--json", gpus=TWO)
    data = json.loads(done.stdout)
    assert data["plan"]["model"]["name"] == M
    assert any("no model given: checked for deepseek-ai/DeepSeek-V4-Flash" in c["detail"] for c in data["checks"])
    assert "Qwen" not in done.stdout


def test_doctor_never_runs_its_probe_through_a_shell_wrapper(run_cli, tmp_path, v4_dir):
    bindir = tmp_path / "wrapped"
    bindir.mkdir()
    marker = tmp_path / "ran-as-shell"
    wrapper = bindir / "vllm"
    wrapper.write_text(f"#!/bin/sh\ntouch {marker}\nexec /opt/real/vllm \"$@\"\n")
    wrapper.chmod(0o755)
    path = f"{BIN}{os.pathsep}{bindir}{os.pathsep}/usr/bin:/bin"
    done, _ = run_cli("dsv4-launch", "doctor", "--json", v4_dir, vllm=None, gpus=TWO, env={"PATH": path})
    data = json.loads(done.stdout)
    torch = [c for c in data["checks"] if c["section"] == "torch"]
    assert "not by a Python interpreter" in torch[0]["detail"]
    assert not marker.exists()


def test_exec_fallback_names_a_missing_interpreter(run_cli, tmp_path, v4_dir):
    bindir = tmp_path / "moved" / "bin"
    bindir.mkdir(parents=True)
    script = bindir / "vllm"
    script.write_text("#!/gone/venv/bin/python3\nimport sys\n")
    script.chmod(0o755)
    path = f"{BIN}{os.pathsep}{bindir}{os.pathsep}/usr/bin:/bin"
    done, _ = run_cli("dsv4-serve", v4_dir, vllm=None, gpus=TWO, env={"PATH": path})
    assert done.returncode == 126
    assert "its interpreter /gone/venv/bin/python3 does not exist" in done.stderr


def test_exec_fallback_names_a_vllm_that_is_not_executable(run_cli, tmp_path, v4_dir):
    bindir = install_fake_vllm_executable(tmp_path / "venv" / "bin")
    (bindir / "vllm").chmod(stat.S_IRUSR | stat.S_IWUSR)
    path = f"{BIN}{os.pathsep}{bindir}{os.pathsep}/usr/bin:/bin"
    done, _ = run_cli("dsv4-serve", v4_dir, vllm=None, gpus=TWO, env={"PATH": path})
    assert done.returncode == 127 and f"{bindir}/vllm is not executable" in done.stderr


def test_a_model_we_cannot_read_is_said_even_when_it_is_not_deepseek(run_cli, tmp_path):
    broken = tmp_path / "broken-model"
    broken.mkdir()
    (broken / "config.json").write_bytes(b"{not json\xff")
    done, record = run_cli("dsv4-serve", str(broken))
    assert record is not None  # other models pass through
    assert "is not valid JSON" in done.stderr and "passed through unchanged" in done.stderr


def test_an_incomplete_hub_download_is_called_one(run_cli, tmp_path):
    repo = tmp_path / "home" / ".cache" / "huggingface" / "hub" / "models--org--thing"
    (repo / "refs").mkdir(parents=True)
    (repo / "refs" / "main").write_text("a" * 40)
    done, _ = run_cli("dsv4-launch", "plan", "org/thing")
    assert "only partly in the Hugging Face cache" in done.stdout and "which is missing" in done.stdout
    (repo / "refs" / "main").write_bytes(b"\xff\xfe not a commit")
    done, _ = run_cli("dsv4-launch", "plan", "org/thing")
    assert "does not hold a commit hash" in done.stdout and "Traceback" not in done.stderr
    snapshot = repo / "snapshots" / ("b" * 40)
    snapshot.mkdir(parents=True)
    (snapshot / "config.json").symlink_to("../../blobs/missing")
    (repo / "refs" / "main").write_text("b" * 40)
    done, _ = run_cli("dsv4-launch", "plan", "org/thing")
    assert "dangling link (incomplete download?)" in done.stdout


@pytest.mark.parametrize("locale", ["C.UTF-8", "en_US.UTF-8"])
def test_undecodable_argv_bytes_under_a_utf8_locale(tmp_path, v4_dir, locale):
    env = clean_env(tmp_path, DSV4_LAUNCH_GPU_CAPABILITY="12.0", LC_ALL=locale, LANG=locale, PYTHONUTF8="0")
    for command in (["plan"], ["plan", "--json"], ["doctor", "--json"]):
        done = subprocess.run([str(BIN / "dsv4-launch").encode(), *[c.encode() for c in command], v4_dir.encode(),
                               b"--served-model-name", b"na\xffme"], env=env, capture_output=True, timeout=120)
        assert b"Traceback" not in done.stderr, done.stderr
        if "--json" in command:
            data = json.loads(done.stdout)
            argv = data["plan"]["argv"] if command[0] == "doctor" else data["argv"]
            # the byte as the text \xff, never a lone surrogate (strict parsers reject those)
            assert argv[2] == "na\\xffme" and any(p.endswith("/argv/2") for p in data["not_utf8"])


# --- the hostile-input run's findings, each as a fixed case (tests/commands/test_hostile_inputs.py finds more) ----

def test_the_fix_goes_before_a_bare_double_dash():
    from tests.planning import SM120, gpus, planned

    for tokens in (["m", "--"], ["--", "m"]):
        p = planned(tokens, gpu=gpus(SM120), version="0.24.0")
        end = p.argv.index("--")
        assert p.argv[end - 2:end] == ("--kv-cache-dtype", "fp8") and p.facts.args.rejection is None


def test_a_change_vllm_would_not_read_is_dropped_with_a_warning(run_cli, v4_dir):
    # vLLM folds "-." (a dotted option) to the end, past an appended option: re-read, it would
    # be rejected, so vLLM gets the user's own arguments and a line says what to add.
    done, record = run_cli("dsv4-serve", v4_dir, "--api-key", "k", "-.", "z", gpus=TWO)
    assert record["argv"][2:] == [v4_dir, "--api-key", "k", "-.", "z"]
    assert "could not write --kv-cache-dtype fp8 where vLLM reads it" in done.stderr


def test_doctor_survives_absurd_numbers_in_config_json(run_cli, tmp_path):
    folder = tmp_path / "edge"
    folder.mkdir()
    (folder / "config.json").write_text('{"architectures": ["DeepseekV4ForCausalLM"], "num_attention_heads": 64, '
                                        '"sliding_window": ' + "9" * 4300 + "}")
    done, _ = run_cli("dsv4-launch", "doctor", "--json", str(folder), "--speculative-config.method", "dspark", gpus=TWO)
    assert "Traceback" not in done.stderr and json.loads(done.stdout)["checks"]


def test_doctor_json_error_path_is_valid_utf8(tmp_path, v4_dir):
    env = clean_env(tmp_path, DSV4_LAUNCH_GPU_CAPABILITY="12.0")
    done = subprocess.run([str(BIN / "dsv4-launch").encode(), b"doctor", b"--json", v4_dir.encode(), b"--config",
                           b"c\xff.yaml"], env=env, capture_output=True, timeout=60)
    assert done.returncode == 2 and "no such file" in json.loads(done.stdout.decode("utf-8"))["error"]


@pytest.mark.parametrize("args,secret", [
    (["--api-key", "k1", "-Zq1secret"], "Zq1secret"),  # a second value vLLM reads as an option
    (["--api-key", "--Zq2secret"], "Zq2secret"),  # a value that looks like a long option
    (["--api=Zq3 Zq4secret"], "Zq4secret"),  # an ambiguous abbreviation argparse quotes whole
    (["--api=Zq5,Zq6secret"], "Zq6secret"),
    (["--otlp-traces-endpoint", "https://user:Zq7 secret@collector:4317/v1"], "Zq7"),
    (["--otlp-traces-endpoint", "https://user:Zq8#secret@collector:4317/v1"], "Zq8"),
    (["--otlp-traces-endpoint", "https://user:Zq9/se cret@collector:4317"], "Zq9"),
    (["--kv-cache-dtype", "https://user:Zq10secret@host/x"], "Zq10secret"),  # quoted by argparse
])
def test_secrets_that_slipped_through(run_cli, v4_dir, args, secret):
    for command in (("dsv4-serve",), ("dsv4-launch", "plan"), ("dsv4-launch", "plan", "--json")):
        done, _ = run_cli(*command, v4_dir, *args, gpus=TWO)
        assert secret not in done.stdout + done.stderr, (command, done.stdout + done.stderr)


def test_a_secret_list_in_the_config_file_is_never_quoted(run_cli, tmp_path, v4_dir):
    config = tmp_path / "c.yaml"
    config.write_text("api_key: [k1, -Zq11secret]\n")
    done, _ = run_cli("dsv4-launch", "plan", "--json", v4_dir, "--config", str(config), gpus=TWO)
    assert "Zq11secret" not in done.stdout + done.stderr and json.loads(done.stdout)


def test_url_credentials_in_a_model_name_are_masked_in_every_line(run_cli):
    done, _ = run_cli("dsv4-serve", "https://user:Zq12secret@host/org/model", gpus=TWO)
    assert "Zq12secret" not in done.stderr and "https://***@host/org/model" in done.stderr


@pytest.mark.parametrize("command", [("dsv4-launch", "plan", "--json"), ("dsv4-launch", "doctor", "--json")])
def test_environment_values_never_garble_the_output(run_cli, v4_dir, command):
    # Environment values are never printed, so none is "masked" into the JSON: AWS_USE_FIPS_ENDPOINT
    # =false once turned "gpus_ambiguous": false into *** (invalid JSON).
    env = {"AWS_USE_FIPS_ENDPOINT": "false", "S3_REGION": "0", "HF_TOKEN": "hf_Zq13secret",
           "AWS_SECRET_ACCESS_KEY": "→"}
    done, _ = run_cli(*command, v4_dir, gpus=TWO, env=env)
    data = json.loads(done.stdout)
    plan = data["plan"] if "plan" in data else data
    assert plan["gpus_ambiguous"] is False and "***" not in done.stdout and "hf_Zq13secret" not in done.stdout


# A vLLM newer than every verified release (core/vllm/releases.py): each refusal that rests on
# release code is a warning naming the newest verified release; the same arguments on 0.34.0
# are refused (the control, so that the test can fail). Faked: NVML, vLLM's entry point and its
# version (a stand-in 0.35.0 install on PYTHONPATH).
NEWER = "0.35.0"
MEGA_ON_SM90 = ["--moe-backend", "deep_gemm_mega_moe", "--enable-expert-parallel"]


@pytest.mark.parametrize("gpu,args,said", [
    (H200, MEGA_ON_SM90, "DeepGEMM MegaMoE requires SM100"),
    (RTX_PRO_6000, ["--block-size", "64"], "--block-size 64"),
    (H200, ["--attention-config.indexer_kv_dtype", "mxfp4"], "indexer_kv_dtype mxfp4"),
    (RTX_PRO_6000, ["--kv-cache-dtype", "bfloat16"], "--kv-cache-dtype bfloat16"),
])
def test_a_release_newer_than_every_verified_one_is_warned_about_not_refused(run_cli, v4_dir, gpu, args, said):
    done, record = run_cli("dsv4-serve", v4_dir, *args, gpus=(gpu,), vllm="0.34.0")
    assert done.returncode == 2 and record is None and said in done.stderr, done.stderr
    done, record = run_cli("dsv4-serve", v4_dir, *args, gpus=(gpu,), vllm=NEWER)
    assert done.returncode == 0 and record is not None, done.stderr
    assert record["argv"][:3 + len(args)] == ["vllm", "serve", v4_dir, *args]  # the user's values, unchanged
    (line,) = [x for x in done.stderr.splitlines() if said in x and "Fix:" in x]
    assert f"verified up to vLLM 0.34.0; vLLM {NEWER} may differ" in line
    # plan and doctor read the same installed vLLM and judge the same way (--vllm-version takes
    # only releases whose option table is recorded)
    for command in (["plan"], ["doctor"]):
        done, _ = run_cli("dsv4-launch", *command, v4_dir, *args, gpus=(gpu,), vllm=NEWER)
        out = done.stdout + done.stderr
        assert f"vLLM {NEWER} may differ" in out and said in out, out
        assert done.returncode == 0 or command == ["doctor"], out
        done, _ = run_cli("dsv4-launch", *command, v4_dir, *args, gpus=(gpu,), vllm="0.34.0")
        assert done.returncode != 0 and "may differ" not in done.stdout + done.stderr


def test_weights_that_cannot_fit_are_refused_on_any_release(run_cli):
    # Not a fact of vLLM's code: the checkpoint's bytes against one GPU's memory.
    for version in ("0.34.0", NEWER):
        done, record = run_cli("dsv4-serve", "deepseek-ai/DeepSeek-V4-Pro", gpus=(RTX_PRO_6000,), vllm=version,
                               env={"HF_HUB_OFFLINE": "1"})
        assert done.returncode == 2 and record is None, (version, done.stderr)
        assert "weights per GPU" in done.stderr and "may differ" not in done.stderr

"""Process, streams and exit status (round three of "never worse than plain ``vllm serve``", issue
20, classes 5 and 9): the exec fallback runs a script without a shebang, help and version on a full
disk, a reader that closes the pipe, plan's status is dsv4-serve's and a change is never quiet.
Faked: ``tests/fakes/vllm_pkg`` in subprocesses, NVML (the stand-in library), and, where said, a
``vllm`` script on PATH."""

import json
import os
import subprocess

import pytest

from tests.conftest import BIN, clean_env

M = "deepseek-ai/DeepSeek-V4-Flash"


# --- class 5: process and exec fallback ---------------------------------------------------------


@pytest.mark.parametrize("body", [
    'printf "%s\\n" "$0" "$@" > "$VLLM_OUT"\nexit 7\n',
    '# a comment first\nset -e\necho started >&2\nprintf "%s\\n" "$0" "$@" > "$VLLM_OUT"; exit 7\n',
    '\nprintf "%s\\n" "$0" "$@" > "$VLLM_OUT"\nexec true 7\n' .replace("exec true 7", "exit 7"),
])
def test_exec_fallback_runs_a_script_without_a_shebang_with_sh(tmp_path, body, v4_dir):
    """A `vllm` wrapper without "#!" runs from sh/bash/env (ENOEXEC → /bin/sh, as execvp does):
    dsv4-serve runs it the same way, with the same arguments and exit status (not 126)."""
    bindir = tmp_path / "bin"
    bindir.mkdir()
    script = bindir / "vllm"
    script.write_text(body)
    script.chmod(0o755)
    out = tmp_path / "argv.txt"
    env = clean_env(tmp_path, VLLM_OUT=str(out), DSV4_LAUNCH_GPU_CAPABILITY="12.0")
    env["PATH"] = f"{bindir}{os.pathsep}{env['PATH']}"
    shell = subprocess.run(["sh", "-c", 'vllm serve "$@"', "sh", v4_dir, "--port", "8000"], env=env, timeout=30)
    expected = out.read_text()
    out.unlink()
    done = subprocess.run([str(BIN / "dsv4-serve"), v4_dir, "--port", "8000"], env=env, capture_output=True,
                          text=True, timeout=60)
    assert done.returncode == shell.returncode == 7, done.stderr
    got = out.read_text().splitlines()
    assert got[0] == str(script) and got[1:4] == ["serve", v4_dir, "--port"] == expected.splitlines()[1:4]
    assert got[4] == "8000" and got[-2:] == ["--kv-cache-dtype", "fp8"], got


@pytest.mark.parametrize("args", [["--help"], ["-h"], ["plan", "--help"], ["doctor", "-h"], ["fit", "--help"],
                                  ["--version"], ["-V"]])
def test_help_and_version_on_a_full_disk_are_one_line_and_74(tmp_path, args):
    with open("/dev/full", "w") as full:
        done = subprocess.run([str(BIN / "dsv4-launch"), *args], stdout=full, stderr=subprocess.PIPE, text=True,
                              env=clean_env(tmp_path), timeout=60)
    assert done.returncode == 74, done.stderr
    assert done.stderr.count("\n") == 1 and "Traceback" not in done.stderr, done.stderr
    assert done.stderr.startswith("dsv4-launch: error: cannot write"), done.stderr


@pytest.mark.parametrize("args", [["--help"], ["-h"], ["--version"]])
def test_dsv4_serve_help_without_vllm_on_a_full_disk(run_cli, tmp_path, args):
    with open("/dev/full", "w") as full:
        env = clean_env(tmp_path)
        done = subprocess.run([str(BIN / "dsv4-serve"), *args], stdout=full, stderr=subprocess.PIPE, text=True,
                              env=env, timeout=60)
    assert done.returncode == 74, done.stderr
    assert done.stderr.count("\n") == 1 and "Traceback" not in done.stderr, done.stderr


def _plan_into(tmp_path, stdout, args, vllm_path=None):
    env = clean_env(tmp_path, DSV4_LAUNCH_GPU_CAPABILITY="12.0")
    if vllm_path:
        env["PYTHONPATH"] = str(vllm_path)
    return subprocess.Popen([str(BIN / "dsv4-launch"), "plan", *args], stdout=stdout, stderr=subprocess.PIPE,
                            env=env, text=True)


@pytest.mark.parametrize("args", [[M], ["--json", M], [M, "-tp", "3"], [M, "--block-size", "64"]])
def test_a_reader_that_closes_the_pipe_is_silence(tmp_path, fake_vllm_path, args):
    """The reader gone before plan writes (the hardest case of ``plan | head -1``): no line, and
    the plan's own status (0, or 2 for a refusal), as if it had been read."""
    read, write = os.pipe()
    os.close(read)
    proc = _plan_into(tmp_path, write, args, fake_vllm_path("0.33.0"))
    os.close(write)
    _, err = proc.communicate(timeout=60)
    expected = _plan_into(tmp_path, subprocess.DEVNULL, args, fake_vllm_path("0.33.0"))
    expected.communicate(timeout=60)
    assert proc.returncode == expected.returncode in (0, 2), err
    assert err == "" or all(ln.startswith("dsv4-launch plan: error: pre-flight") for ln in err.splitlines()), err


def test_plan_to_head_is_silent(tmp_path, fake_vllm_path):
    env = clean_env(tmp_path, DSV4_LAUNCH_GPU_CAPABILITY="12.0", PYTHONPATH=str(fake_vllm_path("0.33.0")))
    for _ in range(5):
        done = subprocess.run(["sh", "-c", f"'{BIN / 'dsv4-launch'}' plan {M} | head -c 1 >/dev/null; "
                                           "echo \"status=${PIPESTATUS:-x}\""], env=env, capture_output=True,
                              text=True, timeout=60)
        assert done.stderr == "", done.stderr


# --- class 9: plan's status is dsv4-serve's; a change is never quiet ----------------------------


@pytest.mark.parametrize("args", [[M], ["--json", M], [M, "-tp", "2"], ["--json", "Qwen/Qwen3-8B"]])
def test_plan_without_vllm_exits_127_as_dsv4_serve_does(run_cli, args):
    # the capability override keeps NVML's memory (issue 29): a GPU large enough that no memory refusal
    # comes before the missing vLLM
    env = {"DSV4_LAUNCH_GPU_CAPABILITY": "12.0", "DSV4_LAUNCH_GPU_MEMORY": "400GiB"}
    plan, _ = run_cli("dsv4-launch", "plan", *args, vllm=None, env=env)
    serve, _ = run_cli("dsv4-serve", *[a for a in args if a != "--json"], vllm=None, env=env)
    assert plan.returncode == serve.returncode == 127, (plan.stderr, serve.stderr)
    errors = [ln for ln in plan.stderr.splitlines() if "error" in ln]
    assert len(errors) == 1 and "dsv4-serve would exit 127" in errors[0], plan.stderr
    if "--json" in args:
        doc = json.loads(plan.stdout)
        assert doc["exit_status"] == 127 and "no usable `vllm` on PATH" in doc["error"]


def test_plan_without_vllm_keeps_a_refusal_and_the_assumed_release(run_cli):
    # a GPU memory large enough that the memory rows stay out (the capability override keeps NVML's memory)
    env = {"DSV4_LAUNCH_GPU_CAPABILITY": "12.0", "DSV4_LAUNCH_GPU_MEMORY": "400GiB"}
    refused, _ = run_cli("dsv4-launch", "plan", M, "--block-size", "64", vllm=None, env=env)
    assert refused.returncode == 2, refused.stderr  # dsv4-serve refuses before it looks for vLLM
    assumed, _ = run_cli("dsv4-launch", "plan", "--vllm-version", "0.33.0", M, vllm=None, env=env)
    assert assumed.returncode == 0, assumed.stderr


@pytest.mark.parametrize("quiet", ["1", "true", "yes", "on"])
def test_quiet_never_hides_a_change(run_cli, v4_dir, quiet):
    done, record = run_cli("dsv4-serve", v4_dir, env={"DSV4_LAUNCH_QUIET": quiet})
    assert record["argv"][-2:] == ["--kv-cache-dtype", "fp8"]
    assert "dsv4-serve: changed: --kv-cache-dtype (not set) → fp8" in done.stderr, done.stderr
    assert "command:" not in done.stderr  # the notes are quiet

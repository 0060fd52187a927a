"""The deployment examples in examples/: each linted by its own tool, and the dsv4-serve command
each contains extracted and run through `dsv4-launch plan --json` with fake SM 12.0 GPUs
(stand-in NVML) and a fake vLLM 0.24.0 — an example that drifts from the tool fails here.

The linters (systemd-analyze, shellcheck, hadolint, kubernetes-validate, check-jsonschema) come
from the `test` extra and the OS; without one a test skips saying so, unless
DSV4_REQUIRE_TOOLS=1 (CI), which makes that a failure.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml

from tests.conftest import BIN, RTX_PRO_6000, clean_env, install_fake_vllm_executable

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"
M = "deepseek-ai/DeepSeek-V4-Flash"
EIGHT_GPUS = (RTX_PRO_6000,) * 8
FIX = ["--kv-cache-dtype", "fp8"]


def tool(name: str) -> str:
    path = shutil.which(name) or (str(BIN / name) if (BIN / name).exists() else None)
    if path is None:
        if os.environ.get("DSV4_REQUIRE_TOOLS") == "1":
            pytest.fail(f"{name} is required (DSV4_REQUIRE_TOOLS=1) but not installed")
        pytest.skip(f"{name} not installed: pip install -e '.[test]' (systemd-analyze: apt-get install systemd)")
    return path


def plan_json(run_cli, args: list[str], env: dict[str, str] | None = None) -> dict:
    assert args[0] == "dsv4-serve", args
    done, record = run_cli("dsv4-launch", "plan", "--json", "--", *args[1:], gpus=EIGHT_GPUS, env=env)
    assert done.returncode == 0, done.stderr
    assert record is None
    return json.loads(done.stdout)


def assert_fixed(plan: dict, argv: list[str]) -> None:
    """The example's command gets exactly one change: --kv-cache-dtype fp8 appended."""
    assert plan["argv"] == argv[1:] + FIX
    assert [(c["option"], c["before"], c["after"]) for c in plan["changes"]] == [("--kv-cache-dtype", None, "fp8")]
    assert plan["refusals"] == []


# --- systemd -----------------------------------------------------------------------------


def read_env_file(path: Path) -> dict[str, str]:
    env = {}
    for line in path.read_text().splitlines():
        line = line.strip()
        if line and not line.startswith("#"):
            key, _, value = line.partition("=")
            env[key.strip()] = value.strip()
    return env


def unit_exec_start(unit: Path, env: dict[str, str]) -> list[str]:
    """ExecStart as systemd runs it: $VAR is split on whitespace, ${VAR} kept whole."""
    (line,) = [l for l in unit.read_text().splitlines() if l.startswith("ExecStart=")]
    words = []
    for word in shlex.split(line.split("=", 1)[1]):
        m = re.fullmatch(r"\$(\w+)|\$\{(\w+)\}", word)
        if m and m.group(1):
            words += env.get(m.group(1), "").split()
        elif m:
            words.append(env.get(m.group(2), ""))
        else:
            words.append(word)
    return words


def test_systemd_unit_verifies(tmp_path):
    analyze = tool("systemd-analyze")
    unit = (EXAMPLES / "systemd" / "dsv4-serve.service").read_text()
    assert "Type=exec" in unit and "Restart=on-failure" in unit and "EnvironmentFile=" in unit
    assert "KillSignal=SIGTERM" in unit and "TimeoutStopSec=" in unit
    # verify checks that ExecStart exists: point it at this environment's dsv4-serve.
    local = tmp_path / "dsv4-serve.service"
    local.write_text(unit.replace("/usr/local/bin/dsv4-serve", str(BIN / "dsv4-serve")))
    done = subprocess.run([analyze, "verify", str(local)], capture_output=True, text=True)
    assert done.returncode == 0 and done.stdout + done.stderr == "", done.stdout + done.stderr


def test_systemd_verify_catches_a_broken_unit(tmp_path):
    analyze = tool("systemd-analyze")
    bad = tmp_path / "bad.service"
    bad.write_text((EXAMPLES / "systemd" / "dsv4-serve.service").read_text()
                   .replace("/usr/local/bin/dsv4-serve", str(BIN / "dsv4-serve")).replace("Type=exec", "Type=exce"))
    done = subprocess.run([analyze, "verify", str(bad)], capture_output=True, text=True)
    assert "Failed to parse service type" in done.stdout + done.stderr


def test_systemd_command_plans_the_fix(run_cli):
    env = read_env_file(EXAMPLES / "systemd" / "dsv4-serve.env")
    argv = unit_exec_start(EXAMPLES / "systemd" / "dsv4-serve.service", env)
    assert Path(argv[0]).name == "dsv4-serve"
    argv[0] = "dsv4-serve"
    assert argv[1] == M and "--tensor-parallel-size" in argv
    plan = plan_json(run_cli, argv, env={k: v for k, v in env.items() if k.startswith("CUDA_")})
    assert_fixed(plan, argv)
    assert [g["index"] for g in plan["gpus"]] == [0, 1]  # CUDA_VISIBLE_DEVICES=0,1 from the env file


# --- shell -------------------------------------------------------------------------------


def test_shell_snippet_passes_shellcheck():
    done = subprocess.run([tool("shellcheck"), str(EXAMPLES / "shell" / "dsv4-serve.sh")], capture_output=True, text=True)
    assert done.returncode == 0, done.stdout


@pytest.mark.parametrize(
    "line,wrap,who,argv",
    [
        (f"vllm-serve {M} -tp 2", "0", "dsv4-serve", ["vllm", "serve", M, "-tp", "2", *FIX]),
        (f"vllm serve {M} -tp 2", "1", "dsv4-serve", ["vllm", "serve", M, "-tp", "2", *FIX]),
        ("vllm --version", "1", "vllm", ["vllm", "--version"]),
        ("vllm bench serve --help", "1", "vllm", ["vllm", "bench", "serve", "--help"]),
        (f"vllm serve {M}", "0", "vllm", ["vllm", "serve", M]),  # not wrapped unless asked
    ],
)
def test_shell_snippet_routes_only_serve(tmp_path, fake_nvml_dir, fake_vllm_path, line, wrap, who, argv):
    """bash sources the snippet; `vllm` on PATH and vLLM's entry point are fakes that record."""
    bindir = install_fake_vllm_executable(tmp_path / "vllm-env" / "bin")
    record = tmp_path / "record.json"
    env = clean_env(tmp_path, FAKE_VLLM_RECORD=str(record), DSV4_WRAP_VLLM=wrap,
                    LD_LIBRARY_PATH=str(fake_nvml_dir), FAKE_NVML_GPUS=RTX_PRO_6000 + ";" + RTX_PRO_6000,
                    PYTHONPATH=str(fake_vllm_path("0.24.0")))
    env["PATH"] = f"{BIN}{os.pathsep}{bindir}{os.pathsep}/usr/bin:/bin"
    script = f"source {shlex.quote(str(EXAMPLES / 'shell' / 'dsv4-serve.sh'))}\n{line}\n"
    done = subprocess.run(["bash", "-c", script], env=env, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    data = json.loads(record.read_text())
    assert data["argv"] == argv
    assert ("dsv4-serve: command:" in done.stderr) == (who == "dsv4-serve")


# --- Docker ------------------------------------------------------------------------------


def dockerfile_command(path: Path) -> list[str]:
    entry = cmd = None
    for line in path.read_text().splitlines():
        if line.startswith("ENTRYPOINT "):
            entry = json.loads(line.split(" ", 1)[1])
        elif line.startswith("CMD "):
            cmd = json.loads(line.split(" ", 1)[1])
    assert entry and cmd, "ENTRYPOINT and CMD must be JSON (exec form)"
    return entry + cmd


def test_dockerfile_passes_hadolint():
    done = subprocess.run([tool("hadolint"), str(EXAMPLES / "docker" / "Dockerfile")], capture_output=True, text=True)
    assert done.returncode == 0, done.stdout + done.stderr


def test_dockerfile_command_plans_the_fix(run_cli):
    argv = dockerfile_command(EXAMPLES / "docker" / "Dockerfile")
    assert "FROM vllm/vllm-openai:" in (EXAMPLES / "docker" / "Dockerfile").read_text()
    assert_fixed(plan_json(run_cli, argv), argv)


def test_compose_file_is_valid_and_plans_the_fix(run_cli):
    path = EXAMPLES / "docker" / "compose.yaml"
    done = subprocess.run([tool("check-jsonschema"), "--builtin-schema", "vendor.compose-spec", str(path)],
                          capture_output=True, text=True)
    assert done.returncode == 0, done.stdout + done.stderr
    service = yaml.safe_load(path.read_text())["services"]["deepseek-v4"]
    argv = dockerfile_command(EXAMPLES / "docker" / "Dockerfile")[:1] + service["command"]
    assert_fixed(plan_json(run_cli, argv), argv)


# --- Kubernetes ----------------------------------------------------------------------------

LWS_ENV = {"LWS_GROUP_SIZE": "2", "LWS_WORKER_INDEX": "1", "LWS_LEADER_ADDRESS": "deepseek-v4-flash-0.deepseek-v4-flash"}


def container_command(container: dict, env: dict[str, str]) -> list[str]:
    """command + args with Kubernetes' $(VAR) expansion."""
    words = container["command"] + container.get("args", [])
    return [re.sub(r"\$\((\w+)\)", lambda m: env.get(m.group(1), m.group(0)), w) for w in words]


def k8s_validate():
    try:
        import kubernetes_validate
    except ImportError:
        tool("kubernetes-validate")  # skips or fails with the install hint
    return kubernetes_validate


def test_deployment_is_valid_kubernetes(run_cli):
    kv = k8s_validate()
    docs = list(yaml.safe_load_all((EXAMPLES / "kubernetes" / "deployment.yaml").read_text()))
    for doc in docs:
        kv.validate(doc, kv.latest_version(), strict=True)
    (deployment,) = [d for d in docs if d["kind"] == "Deployment"]
    (container,) = deployment["spec"]["template"]["spec"]["containers"]
    argv = container_command(container, {})
    assert_fixed(plan_json(run_cli, argv), argv)


def test_deployment_validation_catches_a_typo():
    kv = k8s_validate()
    doc = yaml.safe_load((EXAMPLES / "kubernetes" / "deployment.yaml").read_text().split("---")[0])
    doc["spec"]["template"]["spec"]["containers"][0]["argz"] = []
    with pytest.raises(kv.ValidationError):
        kv.validate(doc, kv.latest_version(), strict=True)


def lws_pod_templates(doc: dict) -> dict[str, dict]:
    template = doc["spec"]["leaderWorkerTemplate"]
    return {"leader": template["leaderTemplate"], "worker": template["workerTemplate"]}


def test_leaderworkerset_is_valid(run_cli):
    kv = k8s_validate()
    import jsonschema

    doc = yaml.safe_load((EXAMPLES / "kubernetes" / "leaderworkerset.yaml").read_text())
    schema = json.loads((Path(__file__).parent / "schemas" / "leaderworkerset-v1.json").read_text())
    jsonschema.validate(doc, schema)
    for role, template in lws_pod_templates(doc).items():
        # each pod template against Kubernetes' own PodTemplateSpec schema
        wrapped = {"apiVersion": "v1", "kind": "PodTemplate", "metadata": {"name": role}, "template": template}
        kv.validate(wrapped, kv.latest_version(), strict=True)


def test_leaderworkerset_leader_and_worker_decide_alike(run_cli):
    doc = yaml.safe_load((EXAMPLES / "kubernetes" / "leaderworkerset.yaml").read_text())
    plans = {}
    for role, template in lws_pod_templates(doc).items():
        (container,) = template["spec"]["containers"]
        argv = container_command(container, LWS_ENV)
        assert argv[0] == "dsv4-serve"
        plans[role] = plan_json(run_cli, argv)
        assert_fixed(plans[role], argv)
    assert "--headless" in plans["worker"]["argv"] and "--headless" not in plans["leader"]["argv"]
    kv = {role: plan["argv"][plan["argv"].index("--kv-cache-dtype") + 1] for role, plan in plans.items()}
    assert kv["leader"] == kv["worker"] == "fp8"


# --- --config ------------------------------------------------------------------------------


def test_config_example_plans_the_fix(run_cli):
    path = EXAMPLES / "config" / "deepseek-v4-flash.yaml"
    config = yaml.safe_load(path.read_text())
    assert config["model"] == M and "kv_cache_dtype" not in config
    argv = ["dsv4-serve", "--config", str(path)]
    plan = plan_json(run_cli, argv)
    assert_fixed(plan, argv)
    assert plan["model"]["name"] == M

"""The deployment examples in examples/: each linted by its own tool, and the dsv4-serve command
each contains extracted and run through `dsv4-launch plan --json` on its hardware — two or eight
RTX PRO 6000 (SM 12.0, 96 GB) through the stand-in NVML — with a fake vLLM of the release its
image pins (or each release CI pins, for the examples that name none). An example that drifts
from the tool, or that the tool predicts vLLM cannot start (a context that does not fit: a
crash loop under Restart=on-failure), fails here.

The linters (systemd-analyze, shellcheck, hadolint, kubernetes-validate, check-jsonschema) come
from the `test` extra and the OS, and so does dash (the POSIX sh the shell snippet is run in);
without one a test skips saying so, unless DSV4_REQUIRE_TOOLS=1 (CI), which makes that a failure.

Every tensor-parallel size anywhere in examples/ is checked against the model it serves: vLLM
splits DeepSeek-V4's attention output groups over the TP ranks (o_groups // tp), so a TP size
that does not divide o_groups crashes after the weights load.
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

from dsv4_launch.commands.context import Context
from dsv4_launch.core.vllm.releases import CI_RELEASES
from tests.conftest import BIN, H200, RTX_PRO_6000, clean_env, install_fake_vllm_executable

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
M = "deepseek-ai/DeepSeek-V4-Flash"
EIGHT_GPUS = (RTX_PRO_6000,) * 8
FIX = ["--kv-cache-dtype", "fp8"]


def tool(name: str, hint: str = "pip install -e '.[test]' (systemd-analyze: apt-get install systemd)") -> str:
    path = shutil.which(name) or (str(BIN / name) if (BIN / name).exists() else None)
    if path is None:
        if os.environ.get("DSV4_REQUIRE_TOOLS") == "1":
            pytest.fail(f"{name} is required (DSV4_REQUIRE_TOOLS=1) but not installed: {hint}")
        pytest.skip(f"{name} not installed: {hint}")
    return path


def plan_json(run_cli, args: list[str], env: dict[str, str] | None = None, gpus: tuple[str, ...] = EIGHT_GPUS,
              vllm: str = "0.24.0") -> dict:
    """`dsv4-launch plan --json` on the example's command; it must plan a start (exit 0, not 2)."""
    assert args[0] == "dsv4-serve", args
    assert_layout_fits(args)
    done, record = run_cli("dsv4-launch", "plan", "--json", "--", *args[1:], gpus=gpus, vllm=vllm, env=env)
    assert done.returncode == 0, (
        f"dsv4-launch plan exited {done.returncode} (2: dsv4-serve would refuse to start)\n"
        f"{done.stdout}{done.stderr}")
    assert record is None
    plan = json.loads(done.stdout)
    assert plan["exit_status"] == 0 and plan["refusals"] == [], plan
    return plan


def assert_fixed(plan: dict, argv: list[str]) -> None:
    """The example's command gets exactly one change: --kv-cache-dtype fp8 appended."""
    assert plan["argv"] == argv[1:] + FIX
    assert [(c["option"], c["before"], c["after"]) for c in plan["changes"]] == [("--kv-cache-dtype", None, "fp8")]
    assert plan["refusals"] == []


# --- parallel layout -----------------------------------------------------------------------

# Attention output groups (config.json `o_groups`) of the DeepSeek-V4 checkpoints the examples
# may serve. vLLM gives each tensor-parallel rank `o_groups // tensor_parallel_size` of them, so
# the TP size must divide o_groups (which divides num_attention_heads): Flash has 64 heads and
# 8 groups (TP 16 → 0 groups → ZeroDivisionError after the weights load), Pro 128 and 16.
O_GROUPS = {"deepseek-ai/DeepSeek-V4-Flash": 8, "deepseek-ai/DeepSeek-V4-Pro": 16}
MODEL_RE = re.compile(r"deepseek-ai/DeepSeek-V4-[A-Za-z0-9-]*[A-Za-z0-9]")
# --tensor-parallel-size / -tp, then its value however the file writes it: `--tensor-parallel-size 2`,
# `=2`, `"--tensor-parallel-size", "2"` (JSON), `- --tensor-parallel-size` + `- "2"` (YAML list).
TP_FLAG = re.compile(r"(?<![\w-])(?:--tensor-parallel-size|-tp)\b")
TP_VALUE = re.compile(r"""(?:=|[\s"',-]+)(\d+)\b""")
TP_KEY = re.compile(r"""^\s*tensor[_-]parallel[_-]size\s*:\s*["']?(\d+)""", re.M)


def tp_sizes_in(text: str) -> list[str | None]:
    """Every tensor-parallel size written in an example (None: one that is not a literal number)."""
    sizes = []
    for flag in TP_FLAG.finditer(text):
        value = TP_VALUE.match(text, flag.end())
        sizes.append(value.group(1) if value else None)
    return sizes + TP_KEY.findall(text)


def option_value(args: list[str], *names: str) -> str | None:
    """The value of the last `--name VALUE` / `--name=VALUE` in args."""
    found = None
    for i, arg in enumerate(args):
        for name in names:
            if arg == name and i + 1 < len(args):
                found = args[i + 1]
            elif arg.startswith(name + "="):
                found = arg.split("=", 1)[1]
    return found


def parallel_layout(argv: list[str]) -> tuple[str | None, int]:
    """(model, tensor-parallel size) of a dsv4-serve command line, its --config file included."""
    args = argv[1:]
    config_path = option_value(args, "--config")
    config = yaml.safe_load(Path(config_path).read_text()) if config_path else {}
    config = {k.replace("-", "_"): v for k, v in (config or {}).items()}
    model = args[0] if args and not args[0].startswith("-") else option_value(args, "--model") or config.get("model")
    tp = option_value(args, "--tensor-parallel-size", "-tp") or config.get("tensor_parallel_size") or 1
    return model, int(tp)


def assert_layout_fits(argv: list[str]) -> None:
    model, tp = parallel_layout(argv)
    assert model in O_GROUPS, f"{model}: unknown model, add its o_groups (config.json) to O_GROUPS"
    assert O_GROUPS[model] % tp == 0, (
        f"{model} at tensor-parallel size {tp}: vLLM gives each rank o_groups // tp = "
        f"{O_GROUPS[model]} // {tp} = {O_GROUPS[model] // tp} attention output groups; "
        f"use a TP size dividing {O_GROUPS[model]} (add GPUs with --data-parallel-size)")


EXAMPLE_FILES = sorted(p for p in EXAMPLES.rglob("*") if p.is_file())


@pytest.mark.parametrize("path", EXAMPLE_FILES, ids=lambda p: str(p.relative_to(EXAMPLES)))
def test_every_tensor_parallel_size_fits_the_model(path):
    """Commands, config keys and comments alike: every TP size in examples/ divides o_groups."""
    text = path.read_text()
    sizes = tp_sizes_in(text)
    if not sizes:
        return
    models = set(MODEL_RE.findall(text)) or set(O_GROUPS)  # no model named: must fit them all
    unknown = models - set(O_GROUPS)
    assert not unknown, f"{path}: add o_groups of {sorted(unknown)} (config.json) to O_GROUPS"
    for size in sizes:
        assert size is not None, f"{path}: a tensor-parallel size that is not a literal number"
        for model in models:
            assert O_GROUPS[model] % int(size) == 0, (
                f"{path}: {model} at tensor-parallel size {size}: o_groups // tp = "
                f"{O_GROUPS[model]} // {size} = {O_GROUPS[model] // int(size)} groups per rank")


def test_tensor_parallel_sweep_reads_every_form():
    assert tp_sizes_in("--tensor-parallel-size 2 -tp=4") == ["2", "4"]
    assert tp_sizes_in('CMD ["m", "--tensor-parallel-size", "8"]') == ["8"]
    assert tp_sizes_in('args:\n  - --tensor-parallel-size\n  - "16"\n') == ["16"]
    assert tp_sizes_in("tensor_parallel_size: 2\ntensor-parallel-size: '4'\n") == ["2", "4"]
    assert tp_sizes_in("- --tensor-parallel-size\n- $(TP)") == [None]
    assert tp_sizes_in("--data-parallel-size 2 --pipeline-parallel-size 2") == []
    seen = {str(p.relative_to(EXAMPLES)) for p in EXAMPLE_FILES if tp_sizes_in(p.read_text())}
    assert seen >= {"config/deepseek-v4-flash.yaml", "docker/Dockerfile", "docker/Dockerfile.plugin",
                    "kubernetes/deployment.yaml", "kubernetes/leaderworkerset.yaml", "shell/dsv4-serve.sh",
                    "systemd/dsv4-serve.env"}, seen


def test_o_groups_agree_with_the_checkpoint_table():
    from dsv4_launch.adapters.checkpoints import load_checkpoints

    for entry in load_checkpoints().values():
        config = entry.get("config", {})
        if entry["id"] in O_GROUPS and "o_groups" in config:
            assert config["o_groups"] == O_GROUPS[entry["id"]], entry
            assert config["num_attention_heads"] % config["o_groups"] == 0, entry


def test_layout_check_catches_tp16_on_flash(tmp_path):
    assert_layout_fits(["dsv4-serve", M, "--tensor-parallel-size", "8", "--data-parallel-size", "2"])
    with pytest.raises(AssertionError, match="0 attention output groups"):
        assert_layout_fits(["dsv4-serve", M, "-tp", "16"])
    config = tmp_path / "c.yaml"
    config.write_text(f"model: {M}\ntensor-parallel-size: 16\n")
    with pytest.raises(AssertionError, match="tensor-parallel size 16"):
        assert_layout_fits(["dsv4-serve", "--config", str(config)])
    assert_layout_fits(["dsv4-serve", "deepseek-ai/DeepSeek-V4-Pro", "--tensor-parallel-size=16"])


# --- systemd -----------------------------------------------------------------------------


UNIT = EXAMPLES / "systemd" / "dsv4-serve.service"
ENV_FILE = EXAMPLES / "systemd" / "dsv4-serve.env"


def read_env_file(path: Path) -> dict[str, str]:
    """KEY=value lines as systemd's EnvironmentFile= reads them: whitespace around the value
    stripped, and a value in double or single quotes taken without them."""
    env = {}
    for line in path.read_text().splitlines():
        line = line.strip()
        if line and not line.startswith(("#", ";")):
            key, _, value = line.partition("=")
            value = value.strip()
            if len(value) >= 2 and value[0] == value[-1] == "'":
                value = value[1:-1]
            elif len(value) >= 2 and value[0] == value[-1] == '"':
                value = re.sub(r'\\([\\"`$])', r"\1", value[1:-1])
            env[key.strip()] = value
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


def comment_above(lines: list[str], directive: str) -> str:
    """The comment lines right above a unit's `directive=` line."""
    (i,) = [n for n, l in enumerate(lines) if l.startswith(directive + "=")]
    block = []
    while i > 0 and lines[i - 1].startswith("#"):
        i -= 1
        block.insert(0, lines[i])
    return "\n".join(block)


def test_systemd_unit_says_what_to_adapt():
    """ExecStart's path and the User= are this machine's: the unit says so, and how to find them."""
    lines = UNIT.read_text().splitlines()
    header = "\n".join(lines[: lines.index("[Unit]")])
    assert "command -v dsv4-serve" in header and "User=" in header and "model cache" in header
    exec_comment = comment_above(lines, "ExecStart")
    assert "ADAPT" in exec_comment and "command -v dsv4-serve" in exec_comment, exec_comment
    user_comment = comment_above(lines, "User")
    assert "ADAPT" in user_comment and "model cache" in user_comment, user_comment


def test_systemd_env_file_reads_alike_in_sh_and_systemd(tmp_path):
    """The check sources the env file with sh: every value must come out as systemd reads it."""
    done = subprocess.run([tool("sh"), "-c", 'set -a -f; . "$1"; exec env -0', "sh", str(ENV_FILE)],
                          env=clean_env(tmp_path), capture_output=True, text=True, timeout=30)
    assert done.returncode == 0 and done.stderr == "", done.stderr
    in_sh = dict(kv.split("=", 1) for kv in done.stdout.split("\0") if kv)
    systemd = read_env_file(ENV_FILE)
    assert {k: in_sh.get(k) for k in systemd} == systemd


def unit_check_command(unit: Path) -> str:
    """The unit's `# Check:` command, with any backslash-continued comment lines after it."""
    lines = unit.read_text().splitlines()
    (i,) = [n for n, l in enumerate(lines) if l.startswith("# Check:")]
    command = lines[i].split("Check:", 1)[1].strip()
    while command.endswith("\\"):
        i += 1
        command += "\n" + lines[i].lstrip("#").strip()
    return command


def run_unit_check(tmp_path: Path, shell: str, dsv4_launch: Path, **extra: str) -> subprocess.CompletedProcess:
    """Paste the check into `shell`, reading the shipped env file where the unit reads its own,
    with `dsv4-launch` on PATH being `dsv4_launch`."""
    command = unit_check_command(UNIT)
    (env_file,) = [l.split("=", 1)[1].lstrip("-") for l in UNIT.read_text().splitlines()
                   if l.startswith("EnvironmentFile=") and l.endswith("/" + ENV_FILE.name)]
    assert env_file in command, f"the check must read the unit's EnvironmentFile {env_file}: {command}"
    command = re.sub(r"^sudo\s+(?:-u\s+\S+\s+)?", "", command)  # run it as whoever runs the tests
    bindir = tmp_path / "check-bin"
    bindir.mkdir()
    (bindir / "dsv4-launch").symlink_to(dsv4_launch)
    env = clean_env(tmp_path, **extra)
    env["PATH"] = f"{bindir}{os.pathsep}/usr/bin:/bin"
    return subprocess.run([shell, "-c", command.replace(env_file, shlex.quote(str(ENV_FILE)))], env=env,
                          capture_output=True, text=True, timeout=60, cwd=tmp_path)


@pytest.mark.parametrize("shell", ["bash", "sh", "zsh"])
def test_systemd_check_line_plans_the_units_command(tmp_path, fake_vllm_path, shell):
    """The `# Check:` line works pasted into a shell: plan exits 0 and names the env file's model."""
    path = shutil.which(shell) if shell == "zsh" else tool(shell)
    if path is None:
        pytest.skip(f"{shell} not installed (optional)")
    done = run_unit_check(tmp_path, path, BIN / "dsv4-launch", DSV4_LAUNCH_GPU_CAPABILITY="12.0",
                          PYTHONPATH=str(fake_vllm_path("0.24.0")))
    assert done.returncode == 0, f"rc {done.returncode}\n{done.stdout}{done.stderr}"
    assert read_env_file(ENV_FILE)["MODEL"] in done.stdout, done.stdout
    assert "--tensor-parallel-size 2" in done.stdout, done.stdout  # $VLLM_ARGS reached the plan


def test_systemd_check_line_splits_like_exec_start(tmp_path):
    """What the check hands dsv4-launch plan is exactly what ExecStart hands dsv4-serve, in the
    environment file's environment."""
    recorder = tmp_path / "record-argv"
    recorder.write_text('#!/bin/sh\nprintf "%s\\0" "$@" > "$ARGV_RECORD"\n'
                        'printf "%s" "$CUDA_VISIBLE_DEVICES" > "$ARGV_RECORD.cuda"\n')
    recorder.chmod(0o755)
    record = tmp_path / "argv"
    done = run_unit_check(tmp_path, "bash", recorder, ARGV_RECORD=str(record))
    assert done.returncode == 0, done.stderr
    env = read_env_file(ENV_FILE)
    assert record.read_text().split("\0")[:-1] == ["plan", *unit_exec_start(UNIT, env)[1:]]
    assert Path(f"{record}.cuda").read_text() == env["CUDA_VISIBLE_DEVICES"] == "0,1"


def test_systemd_unit_verifies(tmp_path):
    analyze = tool("systemd-analyze")
    unit = UNIT.read_text()
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
    bad.write_text(UNIT.read_text()
                   .replace("/usr/local/bin/dsv4-serve", str(BIN / "dsv4-serve")).replace("Type=exec", "Type=exce"))
    done = subprocess.run([analyze, "verify", str(bad)], capture_output=True, text=True)
    assert "Failed to parse service type" in done.stdout + done.stderr


def unit_directives(unit: Path) -> dict[str, list[str]]:
    """The [Service] section's KEY=value lines (values of repeated keys in order)."""
    found: dict[str, list[str]] = {}
    section = None
    for line in unit.read_text().splitlines():
        if line.startswith("["):
            section = line
        elif section == "[Service]" and "=" in line and not line.startswith(("#", ";")):
            key, _, value = line.partition("=")
            found.setdefault(key, []).append(value)
    return found


def exposure(unit_text: str, tmp_path: Path) -> tuple[float, str]:
    """`systemd-analyze security --offline=true` of the unit: (exposure, level word)."""
    analyze = tool("systemd-analyze")
    local = tmp_path / "dsv4-serve.service"
    local.write_text(unit_text.replace("/usr/local/bin/dsv4-serve", str(BIN / "dsv4-serve")))
    done = subprocess.run([analyze, "security", "--offline=true", str(local)], capture_output=True, text=True)
    found = re.search(r"Overall exposure level for \S+: (\d+\.\d+) (\w+)", done.stdout)
    if found is None and "--offline" in done.stderr:  # systemd < 250: no offline mode
        pytest.skip(f"systemd-analyze security cannot judge a unit file here: {done.stderr.strip()}")
    assert found, done.stdout + done.stderr
    return float(found.group(1)), found.group(2)


def test_systemd_unit_is_hardened(tmp_path):
    """systemd's own rating: the shipped unit scores "OK" (the bare unit: 9.2 UNSAFE)."""
    score, level = exposure(UNIT.read_text(), tmp_path)
    assert score <= 3.0 and level in ("OK", "SAFE"), (score, level)
    section = UNIT.read_text().split("# --- Hardening", 1)[0]
    bare, _ = exposure(section + "\n[Install]\nWantedBy=multi-user.target\n", tmp_path)
    assert bare > 9.0  # the measurement can tell the difference


# Options GPUs and vLLM need left alone, each with the reason in the unit's comments.
MUST_NOT_SET = {
    "MemoryDenyWriteExecute": "JIT",  # CUDA, Triton, torch.compile write executable code
    "PrivateDevices": "GPUs",  # would hide /dev/nvidia*
    "ProcSubset": "/proc/driver/nvidia",
    "PrivateUsers": "device nodes",
}


def test_systemd_hardening_leaves_gpus_usable_and_says_why():
    directives = unit_directives(UNIT)
    text = UNIT.read_text()
    comments = "\n".join(l for l in text.splitlines() if l.startswith("#"))
    for key, reason in MUST_NOT_SET.items():
        assert key not in directives, f"{key}= breaks vLLM on GPUs"
        assert key in comments and reason in comments, f"the unit must say why {key}= is not set ({reason})"
    # the GPUs' device nodes under a closed device policy
    assert directives["DevicePolicy"] == ["closed"] and "char-nvidia* rw" in directives["DeviceAllow"]
    # everything vLLM writes is writable: the cache directories under ProtectSystem=strict
    assert directives["ProtectSystem"] == ["strict"] and directives["StateDirectory"] == ["vllm"]
    env = read_env_file(ENV_FILE)
    assert env["HF_HOME"].startswith("/var/lib/vllm/"), "HF_HOME must lie in StateDirectory= (writable)"
    assert "/var/lib/vllm" in text.split("[Unit]", 1)[0]  # the useradd line: the home is there too
    assert directives["ProtectHome"] == ["yes"] and not env["HF_HOME"].startswith(("/home", "/root"))
    # @debug (pidfd_getfd) and @resources (sched_setaffinity) stay allowed
    (denied,) = directives["SystemCallFilter"]
    assert denied.startswith("~") and "@debug" not in denied and "@resources" not in denied, denied


def test_systemd_every_hardening_option_is_explained():
    """Each hardening directive sits under a comment that names it or its group's subject."""
    lines = UNIT.read_text().split("# --- Hardening", 1)[1].split("[Install]", 1)[0].splitlines()
    comment, unexplained = [], []
    for line in lines:
        if line.startswith("#"):
            comment.append(line)
        elif "=" in line:
            if not comment:
                unexplained.append(line)
        elif not line.strip():
            comment = []
    assert unexplained == [], f"hardening lines with no comment above them: {unexplained}"
    for key in ("NoNewPrivileges", "ProtectSystem", "PrivateTmp", "ProtectHome", "ProtectKernelTunables",
                "ProtectControlGroups", "RestrictSUIDSGID", "LockPersonality", "RestrictNamespaces",
                "DeviceAllow", "StateDirectory", "SystemCallFilter", "CapabilityBoundingSet"):
        assert key in unit_directives(UNIT), f"{key}= is missing"


def test_systemd_command_plans_the_fix(run_cli):
    env = read_env_file(ENV_FILE)
    argv = unit_exec_start(UNIT, env)
    assert Path(argv[0]).name == "dsv4-serve"
    argv[0] = "dsv4-serve"
    assert argv[1] == M and "--tensor-parallel-size" in argv
    plan = plan_json(run_cli, argv, env={k: v for k, v in env.items() if k.startswith("CUDA_")})
    assert_fixed(plan, argv)
    assert [g["index"] for g in plan["gpus"]] == [0, 1]  # CUDA_VISIBLE_DEVICES=0,1 from the env file


# --- shell -------------------------------------------------------------------------------


SNIPPET = EXAMPLES / "shell" / "dsv4-serve.sh"


def run_sourced(shell: str, line: str, env: dict[str, str]) -> subprocess.CompletedProcess:
    """Source the snippet with `.` (POSIX), then run `line` the way an interactive shell runs
    what is typed after its rc file: parsed only then (eval: zsh -c parses its whole string
    first), aliases expanded (bash does that outside interactive shells only if told)."""
    path = tool(shell, "apt-get install dash") if shell == "dash" else shutil.which(shell)
    if path is None:  # zsh is optional: the snippet is POSIX sh, proven in dash and bash
        pytest.skip(f"{shell} not installed")
    options = ["-O", "expand_aliases"] if shell == "bash" else []
    script = f'. {shlex.quote(str(SNIPPET))}\neval "$TYPED"\n'
    return subprocess.run([path, *options, "-c", script], env={**env, "TYPED": line},
                          capture_output=True, text=True, timeout=60)


def test_shell_snippet_passes_shellcheck():
    text = SNIPPET.read_text()
    assert "# shellcheck shell=sh" in text  # so shellcheck holds it to POSIX sh, not bash
    done = subprocess.run([tool("shellcheck"), str(SNIPPET)], capture_output=True, text=True)
    assert done.returncode == 0, done.stdout


def test_shell_snippet_documents_the_alias():
    """Users search for "alias": the comments say it, and give the one-line alias to copy."""
    comments = "\n".join(l for l in SNIPPET.read_text().splitlines() if l.startswith("#"))
    assert "shell alias" in comments.lower() and "alias" in comments
    assert re.search(r"^#\s+alias vllm-serve=dsv4-serve$", comments, re.M), comments
    assert re.search(r"^alias vllm-serve=dsv4-serve$", SNIPPET.read_text(), re.M)


FAKE_COMMAND = '#!/bin/sh\nprintf "%s\\0" "${0##*/}" "$@" >> "$RECORD"\nexit 3\n'


@pytest.mark.parametrize("shell", ["dash", "bash", "zsh"])
@pytest.mark.parametrize(
    "line,wrap,argv",
    [
        (f"vllm-serve {M} --served-model-name 'a b'", "0", ["dsv4-serve", M, "--served-model-name", "a b"]),
        (f"vllm-serve {M}", "1", ["dsv4-serve", M]),
        (f"vllm serve {M} --served-model-name 'a b'", "1", ["dsv4-serve", M, "--served-model-name", "a b"]),
        ("vllm --version", "1", ["vllm", "--version"]),
        ("vllm bench serve --help", "1", ["vllm", "bench", "serve", "--help"]),
        ("vllm 'serve x'", "1", ["vllm", "serve x"]),
        ("vllm", "1", ["vllm"]),
        (f"vllm serve {M}", "0", ["vllm", "serve", M]),  # not wrapped unless asked
    ],
)
def test_shell_snippet_routes_in_every_shell(tmp_path, shell, line, wrap, argv):
    """Sourced into dash, bash and zsh (`.`, POSIX): `vllm-serve` and (with DSV4_WRAP_VLLM=1)
    `vllm serve` reach dsv4-serve, everything else the real vllm — arguments intact, and the
    command's exit status comes back. Both commands are fakes that record their argv."""
    bindir = tmp_path / "bin"
    bindir.mkdir()
    for name in ("vllm", "dsv4-serve"):
        (bindir / name).write_text(FAKE_COMMAND)
        (bindir / name).chmod(0o755)
    record = tmp_path / "record"
    env = clean_env(tmp_path, RECORD=str(record), DSV4_WRAP_VLLM=wrap)
    env["PATH"] = f"{bindir}{os.pathsep}/usr/bin:/bin"
    done = run_sourced(shell, line, env)
    assert done.stderr == "" and done.returncode == 3, f"rc {done.returncode}: {done.stderr}"
    assert record.read_text().split("\0")[:-1] == argv


@pytest.mark.parametrize("shell", ["dash", "bash", "zsh"])
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
def test_shell_snippet_routes_only_serve(tmp_path, fake_nvml_dir, fake_vllm_path, shell, line, wrap, who, argv):
    """The real dsv4-serve: the shell sources the snippet; `vllm` on PATH and vLLM's entry point
    are fakes that record."""
    bindir = install_fake_vllm_executable(tmp_path / "vllm-env" / "bin")
    record = tmp_path / "record.json"
    env = clean_env(tmp_path, FAKE_VLLM_RECORD=str(record), DSV4_WRAP_VLLM=wrap,
                    LD_LIBRARY_PATH=str(fake_nvml_dir), FAKE_NVML_GPUS=RTX_PRO_6000 + ";" + RTX_PRO_6000,
                    PYTHONPATH=str(fake_vllm_path("0.24.0")))
    env["PATH"] = f"{BIN}{os.pathsep}{bindir}{os.pathsep}/usr/bin:/bin"
    done = run_sourced(shell, line, env)
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


@pytest.mark.parametrize("name", ["Dockerfile", "Dockerfile.plugin"])
def test_dockerfile_passes_hadolint(name):
    done = subprocess.run([tool("hadolint"), str(EXAMPLES / "docker" / name)], capture_output=True, text=True)
    assert done.returncode == 0, done.stdout + done.stderr


def test_the_plugin_image_keeps_vllms_entrypoint_and_checks_the_plugin_is_found(run_cli):
    text = (EXAMPLES / "docker" / "Dockerfile.plugin").read_text()
    instructions = [line.split()[0] for line in text.splitlines() if line.strip() and not line.startswith("#")]
    assert "ENTRYPOINT" not in instructions  # the stock `vllm serve` entrypoint
    assert "vllm.general_plugins" in text and "'dsv4_launch' in" in text
    # the entry point the build checks for is the one this package declares
    import importlib.metadata as md

    assert "dsv4_launch" in {e.name for e in md.entry_points(group="vllm.general_plugins")}
    cmd = json.loads(text.split("\nCMD", 1)[1].strip())
    done, _ = run_cli("dsv4-launch", "plan", "--json", *cmd, gpus=EIGHT_GPUS)
    assert done.returncode == 0, done.stdout


def test_both_images_run_the_same_command():
    """Two Dockerfiles, one command: the plugin image's CMD (for `vllm serve`) is the dsv4-serve
    image's, so their settings cannot drift apart."""
    plugin = json.loads((EXAMPLES / "docker" / "Dockerfile.plugin").read_text().split("\nCMD", 1)[1].strip())
    assert plugin == dockerfile_command(EXAMPLES / "docker" / "Dockerfile")[1:]


def test_the_ray_serve_example_installs_the_plugin_and_plans_clean(run_cli):
    import ast

    path = EXAMPLES / "ray" / "serve_deepseek_v4.py"
    tree = ast.parse(path.read_text())
    calls = {n.func.id: n for n in ast.walk(tree) if isinstance(n, ast.Call) and isinstance(n.func, ast.Name)}
    config = {k.arg: k.value for k in calls["LLMConfig"].keywords}
    runtime_env = ast.literal_eval(ast.unparse(config["runtime_env"]).replace("WHEEL", "'w'"))
    assert runtime_env == {"pip": ["w"]}  # dsv4-launch, into every replica's Python
    engine = ast.literal_eval(config["engine_kwargs"])
    model = ast.literal_eval(config["model_loading_config"])["model_source"]
    args = [model, *engine_kwargs_as_args(engine)]
    done, _ = run_cli("dsv4-launch", "plan", "--json", *args, gpus=EIGHT_GPUS)
    assert done.returncode == 0, done.stdout
    assert "from ray.serve.llm import LLMConfig, build_openai_app" in path.read_text()


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
    # one place for the command: the image's CMD (a `command:` would replace all of it)
    assert "command" not in service and service["build"]["dockerfile"] == "examples/docker/Dockerfile"
    assert service["ipc"] == "host"
    argv = compose_command(path)
    assert_fixed(plan_json(run_cli, argv), argv)


def compose_command(path: Path) -> list[str]:
    """What the compose service runs: its command, or the Dockerfile's ENTRYPOINT + CMD."""
    service = yaml.safe_load(path.read_text())["services"]["deepseek-v4"]
    image = dockerfile_command(path.parents[2] / service["build"]["dockerfile"])
    return image[:1] + service["command"] if "command" in service else image


def test_compose_healthcheck_waits_for_the_start():
    """Loading DeepSeek-V4 takes minutes: the healthcheck must not mark it unhealthy before."""
    check = yaml.safe_load((EXAMPLES / "docker" / "compose.yaml").read_text())["services"]["deepseek-v4"]["healthcheck"]
    minutes = re.fullmatch(r"(\d+)m", check["start_period"])
    assert minutes and int(minutes.group(1)) >= 20, check
    assert any("/health" in word for word in check["test"]), check


DOCKER_RUN = re.compile(r"docker run\b(?:[^\n]*\\\n)*[^\n]*")


def test_every_docker_run_shares_memory_for_tensor_parallelism():
    """vLLM's docs: `docker run` needs --ipc=host or a large --shm-size for tensor parallelism
    (PyTorch/NCCL share memory through /dev/shm, 64 MB in a container by default)."""
    seen = 0
    for path in [*EXAMPLE_FILES, EXAMPLES.parent / "README.md", *sorted((EXAMPLES.parent / "docs").glob("*.md"))]:
        for run in DOCKER_RUN.finditer(path.read_text()):
            seen += 1
            assert "--ipc=host" in run.group(0) or "--shm-size" in run.group(0), f"{path}: {run.group(0)}"
    assert seen >= 2


@pytest.mark.parametrize("name", ["Dockerfile", "Dockerfile.plugin"])
def test_docker_run_line_runs_the_images_cmd(name):
    """The comment's `docker run` passes no arguments after the image, so the CMD (the one place
    the model's settings live) is what runs; the image is the one the `docker build` line tags."""
    text = (EXAMPLES / "docker" / name).read_text()
    comment = "\n".join(l.lstrip("#").strip() for l in text.splitlines() if l.startswith("#"))
    (build,) = re.findall(r"docker build .*-t (\S+) \.", comment)
    (run,) = DOCKER_RUN.findall(comment)
    assert shlex.split(run.replace("\\\n", " "))[-1] == build, run


# --- Kubernetes ----------------------------------------------------------------------------

# What LWS injects into every pod (https://lws.sigs.k8s.io), with the worker's values; POD_IP is
# the leader's own downward-API variable.
LWS_ENV = {"LWS_GROUP_SIZE": "2", "LWS_WORKER_INDEX": "1", "LWS_NAME": "deepseek-v4-pro",
           "LWS_LEADER_ADDRESS": "deepseek-v4-pro-0.deepseek-v4-pro.default", "POD_IP": "10.0.0.10"}


LWS_FILE = EXAMPLES / "kubernetes" / "leaderworkerset.yaml"
# The hardware the LeaderWorkerSet is written for: two nodes of eight H200 (141 GB), one pod each.
LWS_GPUS = (H200,) * 8


def lws_docs() -> list[dict]:
    return [d for d in yaml.safe_load_all(LWS_FILE.read_text()) if d]


def lws_doc() -> dict:
    """The LeaderWorkerSet itself (the file also holds the leader's Service)."""
    (doc,) = [d for d in lws_docs() if d["kind"] == "LeaderWorkerSet"]
    return doc


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

    doc = lws_doc()
    schema = json.loads((Path(__file__).parents[1] / "schemas" / "leaderworkerset-v1.json").read_text())
    jsonschema.validate(doc, schema)
    for role, template in lws_pod_templates(doc).items():
        # each pod template against Kubernetes' own PodTemplateSpec schema
        wrapped = {"apiVersion": "v1", "kind": "PodTemplate", "metadata": {"name": role}, "template": template}
        kv.validate(wrapped, kv.latest_version(), strict=True)


def test_leaderworkerset_layout_fills_the_gpus():
    """TP × PP × DP spans exactly the group's GPUs, each pod's share fits its GPU limit, the
    worker's engines start after the leader's, and every $(VAR) is one the pod has."""
    doc = lws_doc()
    group = doc["spec"]["leaderWorkerTemplate"]["size"]
    worlds = set()
    for role, template in lws_pod_templates(doc).items():
        (container,) = template["spec"]["containers"]
        defined = {e["name"] for e in container.get("env", [])} | {k for k in LWS_ENV if k.startswith("LWS_")}
        used = {v for w in container["command"] + container["args"] for v in re.findall(r"\$\((\w+)\)", w)}
        assert used <= defined, f"{role}: $({sorted(used - defined)}) is not set in the pod"
        args = container_command(container, {**LWS_ENV, "LWS_WORKER_INDEX": "0" if role == "leader" else "1"})
        gpus = int(container["resources"]["limits"]["nvidia.com/gpu"])
        tp = int(option_value(args, "--tensor-parallel-size", "-tp") or 1)
        pp = int(option_value(args, "--pipeline-parallel-size", "-pp") or 1)
        dp = int(option_value(args, "--data-parallel-size", "-dp") or 1)
        nnodes = int(option_value(args, "--nnodes", "-n") or 1)
        worlds.add((tp, pp, dp, nnodes))
        if nnodes > 1:  # one engine spread over the nodes
            assert tp * pp * dp == nnodes * gpus and nnodes == group, (role, tp, pp, dp, nnodes, gpus)
        else:  # data parallel: whole engines per node
            local = int(option_value(args, "--data-parallel-size-local", "-dpl") or dp)
            assert tp * pp * local == gpus and local * group == dp, (role, tp, pp, dp, local, gpus)
            start = int(option_value(args, "--data-parallel-start-rank", "-dpr") or 0)
            assert start == (0 if role == "leader" else local), (role, start)
            assert ("--headless" in args) == (role == "worker")
    assert len(worlds) == 1, worlds  # leader and worker agree on the layout


@pytest.mark.parametrize("version,kv", [("0.24.0", "fp8"), ("0.33.0", None)])
def test_leaderworkerset_leader_and_worker_decide_alike(run_cli, version, kv):
    """On its H200s, both pods make the same KV-cache decision: fp8 appended where vLLM would
    crash on `auto` (0.24.0), left to vLLM where it resolves `auto` itself (0.33.0)."""
    plans = {}
    for role, template in lws_pod_templates(lws_doc()).items():
        (container,) = template["spec"]["containers"]
        argv = container_command(container, LWS_ENV)
        assert argv[0] == "dsv4-serve"
        plans[role] = plan_json(run_cli, argv, gpus=LWS_GPUS, vllm=version)
        if kv:
            assert_fixed(plans[role], argv)
        else:
            assert plans[role]["argv"] == argv[1:] and plans[role]["changes"] == []
    assert "--headless" in plans["worker"]["argv"] and "--headless" not in plans["leader"]["argv"]
    chosen = {role: option_value(plan["argv"], "--kv-cache-dtype") for role, plan in plans.items()}
    assert chosen["leader"] == chosen["worker"] == kv


def test_leaderworkerset_service_reaches_the_leader_only():
    """The Service selects the leader pod (LWS's name label plus the leader template's role
    label, which the worker does not have) on the port its API server listens on."""
    kv = k8s_validate()
    lws = lws_doc()
    (service,) = [d for d in lws_docs() if d["kind"] == "Service"]
    kv.validate(service, kv.latest_version(), strict=True)
    selector = service["spec"]["selector"]
    assert selector["leaderworkerset.sigs.k8s.io/name"] == lws["metadata"]["name"]
    templates = lws_pod_templates(lws)
    leader_labels = templates["leader"]["metadata"]["labels"]
    worker_labels = templates["worker"].get("metadata", {}).get("labels", {})
    own = {k: v for k, v in selector.items() if not k.startswith("leaderworkerset.sigs.k8s.io/")}
    assert own and own.items() <= leader_labels.items() and not own.items() <= worker_labels.items()
    (container,) = templates["leader"]["spec"]["containers"]
    ports = {p["name"]: p["containerPort"] for p in container["ports"]}
    (port,) = service["spec"]["ports"]
    assert str(ports[port["targetPort"]]) == option_value(container["args"], "--port")


def test_leaderworkerset_leader_has_the_api_key_from_a_secret():
    (container,) = lws_pod_templates(lws_doc())["leader"]["spec"]["containers"]
    (key,) = [e for e in container["env"] if e["name"] == "VLLM_API_KEY"]
    assert set(key) == {"name", "valueFrom"} and key["valueFrom"]["secretKeyRef"]["name"] == "vllm-api-key"
    assert "--api-key" not in container["args"]  # a key in args shows in the pod spec and `ps`


def pod_specs() -> list[tuple[str, dict, list[dict], set[str]]]:
    """(where, pod spec, the file's documents, volumes the controller adds) for every pod."""
    found = []
    docs = list(yaml.safe_load_all((EXAMPLES / "kubernetes" / "deployment.yaml").read_text()))
    for doc in docs:
        if doc["kind"] == "Deployment":
            found.append(("deployment", doc["spec"]["template"]["spec"], docs, set()))
    lws = lws_doc()
    claims = {c["metadata"]["name"] for c in lws["spec"]["leaderWorkerTemplate"].get("volumeClaimTemplates", [])}
    for role, template in lws_pod_templates(lws).items():
        found.append((f"leaderworkerset {role}", template["spec"], [lws], claims))
    return found


def test_kubernetes_pods_have_every_volume_they_mount():
    """Applied as shipped, no pod waits for a claim or a volume nobody defines: each mount is a
    pod volume or one of LeaderWorkerSet's volumeClaimTemplates, each claim a PVC in the file."""
    for where, spec, docs, added in pod_specs():
        volumes = {v["name"]: v for v in spec.get("volumes", [])}
        pvcs = {d["metadata"]["name"] for d in docs if d["kind"] == "PersistentVolumeClaim"}
        for container in spec["containers"]:
            for mount in container.get("volumeMounts", []):
                assert mount["name"] in volumes or mount["name"] in added, f"{where}: no volume {mount['name']}"
        for volume in volumes.values():
            if "persistentVolumeClaim" in volume:
                assert volume["persistentVolumeClaim"]["claimName"] in pvcs, f"{where}: claim not defined: {volume}"


def test_kubernetes_secrets_are_defined_or_marked_adapt():
    for path in sorted((EXAMPLES / "kubernetes").glob("*.yaml")):
        text = path.read_text()
        defined = {d["metadata"]["name"] for d in yaml.safe_load_all(text) if d and d.get("kind") == "Secret"}
        lines = text.splitlines()
        for i, line in enumerate(lines):
            if "secretKeyRef:" in line:
                name = re.search(r"name:\s*(\S+)", lines[i + 1]).group(1)
                assert name in defined or "ADAPT" in line, f"{path.name}: Secret {name} neither defined nor ADAPT"
                assert f"kubectl create secret generic {name}" in text, f"{path.name}: how to create {name}"


def test_kubernetes_tensor_parallel_pods_get_a_memory_backed_dev_shm():
    """vLLM's TP workers use /dev/shm (NCCL, its shared-memory queues); a container's is 64 MB."""
    for where, spec, _, _ in pod_specs():
        (container,) = spec["containers"]
        args = container_command(container, LWS_ENV)
        if int(option_value(args[1:], "--tensor-parallel-size", "-tp") or 1) == 1:
            continue
        (mount,) = [m for m in container["volumeMounts"] if m["mountPath"] == "/dev/shm"]
        (volume,) = [v for v in spec["volumes"] if v["name"] == mount["name"]]
        assert volume["emptyDir"]["medium"] == "Memory", (where, volume)


def test_kubernetes_servers_get_a_start_measured_in_minutes_then_readiness():
    """Every container that serves HTTP (not a --headless worker) has a startupProbe that lets
    vLLM load and compile for at least 20 minutes before the kubelet restarts it (readiness and
    liveness only begin after it), a readinessProbe and a livenessProbe; each probe's timeout
    leaves its command time to finish."""
    served = 0
    for where, spec, _, _ in pod_specs():
        (container,) = spec["containers"]
        if "--headless" in container.get("args", []):
            continue
        served += 1
        start, ready = container.get("startupProbe"), container.get("readinessProbe")
        assert start and ready and container.get("livenessProbe"), f"{where}: startup, readiness and liveness probes"
        budget = start.get("initialDelaySeconds", 0) + start.get("periodSeconds", 10) * start.get("failureThreshold", 3)
        assert budget >= 20 * 60, f"{where}: the startupProbe gives up after {budget} s"
        for probe in (start, ready):
            command = probe.get("exec", {}).get("command", [])
            if "--timeout" in command:
                assert int(command[command.index("--timeout") + 1]) < probe.get("timeoutSeconds", 1), (where, probe)
    assert served == 2  # the Deployment and the LWS leader


def test_leaderworkerset_volume_claims_are_valid():
    kv = k8s_validate()
    lws = lws_doc()
    claims = lws["spec"]["leaderWorkerTemplate"]["volumeClaimTemplates"]
    assert claims
    for claim in claims:
        kv.validate({"apiVersion": "v1", "kind": "PersistentVolumeClaim", **claim}, kv.latest_version(), strict=True)
    with pytest.raises(kv.ValidationError):
        kv.validate({"apiVersion": "v1", "kind": "PersistentVolumeClaim", **claims[0], "spec": {"acessModes": []}},
                    kv.latest_version(), strict=True)


def test_kubernetes_examples_say_what_to_adapt():
    for path in sorted((EXAMPLES / "kubernetes").glob("*.yaml")):
        text = path.read_text()
        header = text.split("\napiVersion:", 1)[0]
        assert "ADAPT" in header, f"{path.name}: the header must list what to adapt"
        for line in text.splitlines():
            if re.match(r"\s*image:", line):
                assert "ADAPT" in line, f"{path.name}: {line.strip()} (the registry is yours)"


# --- --config ------------------------------------------------------------------------------


def test_config_example_plans_the_fix(run_cli):
    path = EXAMPLES / "config" / "deepseek-v4-flash.yaml"
    config = yaml.safe_load(path.read_text())
    assert config["model"] == M and "kv_cache_dtype" not in config
    argv = ["dsv4-serve", "--config", str(path)]
    plan = plan_json(run_cli, argv)
    assert_fixed(plan, argv)
    assert plan["model"]["name"] == M


# --- probes: `dsv4-launch check` after the start ---------------------------------------------


def probe_commands():
    """(where, probe kind, probe, container) of every Kubernetes probe in the examples."""
    found = []
    docs = list(yaml.safe_load_all((EXAMPLES / "kubernetes" / "deployment.yaml").read_text()))
    (deployment,) = [d for d in docs if d["kind"] == "Deployment"]
    pods = [("deployment", deployment["spec"]["template"]["spec"])]
    pods.append(("lws-leader", lws_doc()["spec"]["leaderWorkerTemplate"]["leaderTemplate"]["spec"]))
    for where, pod in pods:
        for container in pod["containers"]:
            for kind in ("startupProbe", "readinessProbe", "livenessProbe"):
                found.append((where, kind, container[kind], container))
    return found


# The paths vLLM's API key guards (its AuthenticationMiddleware checks the key only on these
# prefixes): vllm/entrypoints/serve/utils/server_utils.py:41@0.24.0 ("/v1", "/v2", "/inference"),
# vllm/entrypoints/serve/middleware/authenticate.py:11@0.29.0 and @0.33.0 (and "/cohere").
# tests/vllm_real/test_probe_auth.py runs the installed release's middleware on them.
GUARDED_BY_THE_API_KEY = ("/v1", "/v2", "/inference", "/cohere")


def test_kubernetes_check_starts_and_health_keeps_ready_and_alive():
    """`dsv4-launch check` is the startupProbe (valid as written, within its timeout, an hour for
    the weights, with the key when the pod has one); readiness and liveness ask vLLM's /health
    on the API server's port, a path vLLM's API key does not guard: no key, no generation."""
    from dsv4_launch.commands.check import url_of
    from dsv4_launch.commands.own_options import load, parse

    probes = probe_commands()
    assert {(w, k) for w, k, _, _ in probes} == {(w, k) for w in ("deployment", "lws-leader")
                                                 for k in ("startupProbe", "readinessProbe", "livenessProbe")}
    for where, kind, probe, container in probes:
        ports = {p["name"]: p["containerPort"] for p in container["ports"]}
        served = int(option_value(container["args"], "--port") or 8000)
        if kind == "startupProbe":
            command = probe["exec"]["command"]
            assert command[:2] == ["dsv4-launch", "check"], (where, kind)
            # valid as written, read as the door reads it (commands/cli.py _run; exit 2 would fail every probe)
            check = load("check")
            assert check.screen(command[2:]) is None, (where, kind)
            own, rest = parse(check, command[2:], {})
            url = url_of(rest)
            assert url == f"http://127.0.0.1:{served}"
            # check's own --timeout ends it before the kubelet kills it (Python's start-up included)
            assert own["timeout"] + 5 <= probe["timeoutSeconds"], (where, kind)
            assert probe["periodSeconds"] * probe["failureThreshold"] >= 3600  # weights and compilation
            key_env = {e["name"] for e in container.get("env", [])}
            assert ("VLLM_API_KEY" in key_env) == ("--api-key-env" in command), (where, kind)
            assert "--api-key-env" in command, f"{where}: the server has no API key"
        else:
            assert set(probe) - {"periodSeconds", "timeoutSeconds", "failureThreshold", "successThreshold"} == \
                {"httpGet"}, (where, kind, probe)
            get = probe["httpGet"]
            assert get["path"] == "/health" and ports[get["port"]] == served, (where, kind, get)
            assert not get["path"].startswith(GUARDED_BY_THE_API_KEY) and "httpHeaders" not in get
            assert probe["timeoutSeconds"] < probe["periodSeconds"], (where, kind)
            if kind == "livenessProbe":  # a restart costs the weight load: not on one slow answer
                assert probe["periodSeconds"] * probe["failureThreshold"] >= 60, (where, kind)


def test_kubernetes_probe_command_passes_on_a_healthy_server_and_fails_on_a_broken_one():
    """The deployment's probe command as written, pointed at a replayed vLLM on 127.0.0.1 that
    wants the API key the pod's VLLM_API_KEY holds (the replay: tests/fakes/replay_server.py)."""
    import io

    from dsv4_launch.commands.cli import run_command
    from tests.fakes.replay_server import ReplayServer

    commands = {tuple(p["exec"]["command"]) for w, k, p, _ in probe_commands() if "exec" in p}
    (command,) = commands  # the Deployment's and the LWS leader's startupProbe: the same command
    env = {"VLLM_API_KEY": "sk-probe-0123456789"}
    for shape, expected in (("healthy", 0), ("bos-only", 1)):
        with ReplayServer(shape, api_key=env["VLLM_API_KEY"]) as server:
            out = io.StringIO()
            status = run_command("check", [*command[2:], server.url],
                                 ctx=Context(env=env, stdout=out, stderr=io.StringIO(), http_client="stdlib"))
        assert status == expected, out.getvalue()
        assert env["VLLM_API_KEY"] not in out.getvalue()


def unit_exec_start_post(unit: Path) -> list[str]:
    """ExecStartPost as systemd runs it: the "-" prefix off, $$ → $ and %% → %, then split."""
    (line,) = [l for l in unit.read_text().splitlines() if l.startswith("ExecStartPost=")]
    value = line.split("=", 1)[1]
    assert value.startswith("-/bin/sh -c '"), value  # "-": a failed check never stops vLLM
    return shlex.split(value[1:].replace("$$", "$").replace("%%", "%"))


def test_systemd_exec_start_post_waits_while_not_reachable_and_stops_on_an_answer(tmp_path):
    """The unit's ExecStartPost= loop, run by sh against replayed vLLMs on 127.0.0.1 (its
    `sleep 15` shortened, the URL added, dsv4-launch this environment's): it retries while check
    exits 3 (loading: /health 503) and ends with check's own status and report."""
    from tests.fakes.replay_server import ReplayServer

    sh = tool("sh")
    argv = unit_exec_start_post(UNIT)
    assert argv[:2] == ["/bin/sh", "-c"] and "/usr/local/bin/dsv4-launch check" in argv[2]
    assert "--api-key-env VLLM_API_KEY" in argv[2] and "-ne 3" in argv[2] and "sleep 15" in argv[2]
    for shape, ready_after, expected, says in (("healthy", 2, 0, "healthy: 4 requests answered"),
                                               ("dsml-in-content", 0, 1, "problem: tool call: tool-call markup")):
        with ReplayServer(shape, ready_after=ready_after) as server:
            script = argv[2].replace("/usr/local/bin/dsv4-launch check",
                                     f"{BIN / 'dsv4-launch'} check {server.url}").replace("sleep 15", "sleep 0.1")
            done = subprocess.run([sh, "-c", script], env=clean_env(tmp_path), capture_output=True, text=True,
                                  timeout=120)
            health = [r for r in server.requests if r["path"] == "/health"]
        assert done.returncode == expected, done.stdout + done.stderr
        assert says in done.stdout and "note: the variable named by --api-key-env is not set" in done.stdout
        assert len(health) == ready_after + 1  # retried while 503, then once more, then stopped


# --- every example on its hardware -----------------------------------------------------------

# The releases CI pins (core/vllm/releases.CI_RELEASES, read by .ci/run): what an example that
# pins no image is planned against.
PINNED = CI_RELEASES
IMAGE_TAG = re.compile(r"(?:dsv4-serve|vllm-openai(?:-dsv4)?):v(\d+\.\d+\.\d+)\b|ARG VLLM_VERSION=v(\d+\.\d+\.\d+)")


def image_version(*paths: Path) -> str:
    """The vLLM release the example's image is built from; every tag in these files agrees."""
    tags = {a or b for path in paths for a, b in IMAGE_TAG.findall(path.read_text())}
    assert len(tags) == 1, f"{[str(p) for p in paths]}: images of different vLLM releases: {sorted(tags)}"
    return tags.pop()


def k8s_env(container: dict) -> dict[str, str]:
    return {e["name"]: e["value"] for e in container.get("env", []) if "value" in e}


def world_size(argv: list[str]) -> int:
    args = argv[1:]
    tp = int(option_value(args, "--tensor-parallel-size", "-tp") or parallel_layout(argv)[1])
    pp = int(option_value(args, "--pipeline-parallel-size", "-pp") or 1)
    dp = int(option_value(args, "--data-parallel-size-local", "-dpl") or option_value(args, "--data-parallel-size",
                                                                                        "-dp") or 1)
    return tp * pp * dp


def ray_command() -> list[str]:
    import ast

    tree = ast.parse((EXAMPLES / "ray" / "serve_deepseek_v4.py").read_text())
    (call,) = [n for n in ast.walk(tree) if isinstance(n, ast.Call) and getattr(n.func, "id", None) == "LLMConfig"]
    config = {k.arg: k.value for k in call.keywords}
    argv = ["dsv4-serve", ast.literal_eval(config["model_loading_config"])["model_source"]]
    return argv + engine_kwargs_as_args(ast.literal_eval(config["engine_kwargs"]))


def engine_kwargs_as_args(engine: dict) -> list[str]:
    """Engine keyword arguments as `vllm serve` options: True is the bare flag (as vLLM's parser
    turns `--enable-auto-tool-choice` into True), anything else `--name value`."""
    args: list[str] = []
    for key, value in engine.items():
        flag = f"--{key.replace('_', '-')}"
        args += [flag] if value is True else [flag, str(value)]
    return args


def shell_commands() -> list[list[str]]:
    """The `vllm-serve …` command lines the snippet's comments show."""
    text = re.sub(r"\\\n#\s*", " ", SNIPPET.read_text())  # a command continued on the next comment line
    found = re.findall(r"^#\s+vllm-serve (.+)$", text, re.M)
    assert found, "the shell snippet shows no vllm-serve command"
    return [["dsv4-serve", *shlex.split(line)] for line in found]


def example_commands() -> list[tuple[str, list[str], dict[str, str], int | None, tuple[str, ...]]]:
    """(name, dsv4-serve argv, environment, GPUs the example declares (None: it does not), vLLM
    releases) for every command in examples/."""
    docker = EXAMPLES / "docker"
    kube = EXAMPLES / "kubernetes"
    image = image_version(docker / "Dockerfile", docker / "Dockerfile.plugin", docker / "compose.yaml",
                          kube / "deployment.yaml", kube / "leaderworkerset.yaml")
    commands = []
    env = read_env_file(ENV_FILE)
    commands.append(("systemd", ["dsv4-serve", *unit_exec_start(UNIT, env)[1:]], env,
                     len(env["CUDA_VISIBLE_DEVICES"].split(",")), PINNED))
    commands.append(("docker/Dockerfile", dockerfile_command(docker / "Dockerfile"), {}, None, (image,)))
    plugin_cmd = json.loads((docker / "Dockerfile.plugin").read_text().split("\nCMD", 1)[1].strip())
    commands.append(("docker/Dockerfile.plugin", ["dsv4-serve", *plugin_cmd], {}, None, (image,)))
    service = yaml.safe_load((docker / "compose.yaml").read_text())["services"]["deepseek-v4"]
    count = service["deploy"]["resources"]["reservations"]["devices"][0]["count"]
    commands.append(("docker/compose.yaml", compose_command(docker / "compose.yaml"),
                     {k: str(v) for k, v in service.get("environment", {}).items()}, count, (image,)))
    docs = list(yaml.safe_load_all((kube / "deployment.yaml").read_text()))
    (deployment,) = [d for d in docs if d["kind"] == "Deployment"]
    (container,) = deployment["spec"]["template"]["spec"]["containers"]
    commands.append(("kubernetes/deployment.yaml", container_command(container, {}), k8s_env(container),
                     int(container["resources"]["limits"]["nvidia.com/gpu"]), (image,)))
    lws = lws_doc()
    for role, template in lws_pod_templates(lws).items():
        (container,) = template["spec"]["containers"]
        commands.append((f"kubernetes/leaderworkerset.yaml:{role}", container_command(container, LWS_ENV),
                         k8s_env(container), int(container["resources"]["limits"]["nvidia.com/gpu"]), (image,)))
    commands.append(("ray", ray_command(), {}, None, PINNED))
    config = EXAMPLES / "config" / "deepseek-v4-flash.yaml"
    commands.append(("config", ["dsv4-serve", "--config", str(config)], {}, None, PINNED))
    for argv in shell_commands():
        commands.append(("shell", argv, {}, None, PINNED))
    return commands


def memory_rule_ids() -> set[str]:
    from dsv4_launch.core.rules import memory as rules_memory

    return {r.id for r in rules_memory.ROWS} | {"think-max-short"}


def example_hardware(name: str) -> str:
    """The GPU an example is written for: the LeaderWorkerSet's nodes have H200s, the others
    two 96 GB RTX PRO 6000."""
    return H200 if name.startswith("kubernetes/leaderworkerset.yaml") else RTX_PRO_6000


def example_cases():
    for name, argv, env, gpus, versions in example_commands():
        for version in versions:
            yield pytest.param(argv, env, gpus, version, version == versions[-1], example_hardware(name),
                               id=f"{name}@{version}")


@pytest.mark.parametrize("argv,env,declared,version,newest,gpu", list(example_cases()))
def test_every_example_plans_clean_on_its_hardware(run_cli, argv, env, declared, version, newest, gpu):
    """Each command on the GPUs it is written for (as many as it declares, else its
    TP × PP × local DP): no refusal, no memory or context warning (a start vLLM would abort after
    loading the weights, which Restart=on-failure would repeat) on every release it may meet, and
    no warning at all on its image's release (or, pinning none, the newest)."""
    gpus = world_size(argv)
    assert declared in (None, gpus), f"the example declares {declared} GPUs, its layout uses {gpus}"
    plan = plan_json(run_cli, argv, env=env, gpus=(gpu,) * gpus, vllm=version)
    assert plan["vllm_version"] == version
    memory = memory_rule_ids()
    warned = [f for f in plan["findings"] if f["level"] != "info"]
    about_memory = [f["text"] for f in warned if f["rule"] in memory or "max-model-len" in f["text"]]
    assert about_memory == [], "\n".join(["memory/context warnings:", *about_memory, "plan memory: "
                                          + json.dumps(plan.get("memory"))])
    if newest:
        assert plan["warnings"] == [], plan["warnings"]


# --- the recipes' chat flags -----------------------------------------------------------------

# vllm-project/recipes, models/deepseek-ai/DeepSeek-V4-Flash.yaml and -Pro.yaml: the tool_calling
# feature (`--tokenizer-mode deepseek_v4 --tool-call-parser deepseek_v4 --enable-auto-tool-choice`)
# and the reasoning one (`--reasoning-parser deepseek_v4`), in every generated command of both.
# The parsers are the API server's options; the tokenizer mode is the model's (every engine).
RECIPE_ENGINE_FLAGS = {"--tokenizer-mode": "deepseek_v4"}
RECIPE_SERVER_FLAGS = {"--tool-call-parser": "deepseek_v4", "--reasoning-parser": "deepseek_v4"}


@pytest.mark.parametrize("name,argv", [pytest.param(n, a, id=n) for n, a, *_ in example_commands()])
def test_every_example_passes_the_recipes_chat_flags(name, argv):
    """Without the parsers, tool calls stay DSML text in `content` and `check`'s tool-call step
    finds no tool parser: every example that serves HTTP passes the recipes' flags (a --config
    file as keys), the --headless worker, which has no API server, the tokenizer mode."""
    args = argv[1:]
    config_path = option_value(args, "--config")
    if config_path:
        config = {k.replace("_", "-"): v for k, v in yaml.safe_load(Path(config_path).read_text()).items()}
        args = [*args]
        for key, value in config.items():
            args += [f"--{key}"] if value is True else [f"--{key}", str(value)]
    server = "--headless" not in args
    wanted = {**RECIPE_ENGINE_FLAGS, **(RECIPE_SERVER_FLAGS if server else {})}
    assert {flag: option_value(args, flag) for flag in wanted} == wanted, name
    assert ("--enable-auto-tool-choice" in args) == server, name


def test_the_chat_flags_sweep_reads_what_vllm_reads():
    """The shell snippet's command continues over two comment lines; its flags are read."""
    (argv,) = shell_commands()
    assert option_value(argv, "--tool-call-parser") == "deepseek_v4" and "--enable-auto-tool-choice" in argv
    assert engine_kwargs_as_args({"enable_auto_tool_choice": True, "tool_call_parser": "deepseek_v4", "x": 2}) == [
        "--enable-auto-tool-choice", "--tool-call-parser", "deepseek_v4", "--x", "2"]


# --- the memory paragraph, once --------------------------------------------------------------

DEPLOYMENT_DOC = EXAMPLES.parent / "docs" / "deployment.md"


def test_the_memory_reasoning_lives_in_docs_once():
    """Why --max-model-len 65536 with --max-num-batched-tokens 2048 on two 96 GB GPUs is said in
    docs/deployment.md ("Memory"); the examples that use it point there instead of carrying a
    copy of their own (five copies drifted apart)."""
    doc = DEPLOYMENT_DOC.read_text()
    assert "\n## Memory\n" in doc and "dsv4-launch fit" in doc.split("\n## Memory\n", 1)[1]
    pointing = 0
    for path in EXAMPLE_FILES:
        text = path.read_text()
        assert "in-flight tokens" not in text and "GiB for one request" not in text, f"{path}: a copy"
        if "65536" in text and "2048" in text:
            assert 'docs/deployment.md ("Memory")' in text.replace("\n# ", " ").replace("\n#", " "), path
            pointing += 1
    assert pointing >= 5


# --- Ray: the wheel ---------------------------------------------------------------------------

RAY_EXAMPLE = EXAMPLES / "ray" / "serve_deepseek_v4.py"


def ray_find_wheel():
    """The example's find_wheel, run without Ray (the module imports ray.serve.llm)."""
    import ast

    tree = ast.parse(RAY_EXAMPLE.read_text())
    (node,) = [n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == "find_wheel"]
    scope: dict = {"glob": __import__("glob"), "os": os}
    exec(compile(ast.Module(body=[node], type_ignores=[]), str(RAY_EXAMPLE), "exec"), scope)
    return scope["find_wheel"]


def test_ray_example_finds_its_wheel(tmp_path):
    find_wheel = ray_find_wheel()
    assert "0.1.0" not in RAY_EXAMPLE.read_text()  # no version written into the example
    given = "https://wheels.example/dsv4_launch-9.9-py3-none-any.whl"
    assert find_wheel({"DSV4_LAUNCH_WHEEL": given}) == given
    folder = tmp_path / "wheels [shared]"  # glob characters in the folder's name are literal
    folder.mkdir()
    with pytest.raises(SystemExit, match=r"no dsv4_launch-\*\.whl in .*wheels \[shared\].*pip wheel --no-deps"):
        find_wheel({"DSV4_LAUNCH_WHEEL_DIR": str(folder)})
    (folder / "dsv4_launch-0.2.0-py3-none-any.whl").write_bytes(b"")
    (folder / "other-1.0-py3-none-any.whl").write_bytes(b"")
    assert find_wheel({"DSV4_LAUNCH_WHEEL_DIR": str(folder)}) == str(folder / "dsv4_launch-0.2.0-py3-none-any.whl")
    (folder / "dsv4_launch-0.3.0-py3-none-any.whl").write_bytes(b"")
    with pytest.raises(SystemExit,
                       match=r"2 wheels \(dsv4_launch-0\.2\.0.*, dsv4_launch-0\.3\.0.*\).*DSV4_LAUNCH_WHEEL"):
        find_wheel({"DSV4_LAUNCH_WHEEL_DIR": str(folder)})


# --- Docker: the build context and an offline install ------------------------------------------

DOCKERIGNORE = EXAMPLES.parent / ".dockerignore"


def docker_pattern(pattern: str) -> re.Pattern:
    """A .dockerignore pattern as Docker matches it (Go's filepath.Match, plus `**` for any
    number of directories), the path relative to the context, `/`-separated."""
    out, i = "", 0
    pattern = pattern.strip("/")
    while i < len(pattern):
        if pattern.startswith("**/", i):
            out, i = out + "(?:.*/)?", i + 3
        elif pattern.startswith("**", i):
            out, i = out + ".*", i + 2
        elif pattern[i] == "*":
            out, i = out + "[^/]*", i + 1
        elif pattern[i] == "?":
            out, i = out + "[^/]", i + 1
        elif pattern[i] == "[":
            end = pattern.index("]", i)
            out, i = out + "[" + pattern[i + 1:end].replace("!", "^", 1) + "]", end + 1
        else:
            out, i = out + re.escape(pattern[i]), i + 1
    return re.compile(out + r"\Z")


def docker_excludes(path: str, lines: list[str]) -> bool:
    """Whether Docker leaves `path` out of the build context: the last pattern matching the path
    or one of its parent directories decides; `!` includes again."""
    parts = path.split("/")
    prefixes = ["/".join(parts[:n]) for n in range(1, len(parts) + 1)]
    excluded = False
    for line in lines:
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        negate = line.startswith("!")
        compiled = docker_pattern(line[1:] if negate else line)
        if any(compiled.match(prefix) for prefix in prefixes):
            excluded = not negate
    return excluded


def test_dockerignore_matcher_reads_patterns_as_docker_does():
    lines = ["*", "!src", "**/__pycache__", "!src/keep/__pycache__"]
    assert docker_excludes(".venv/bin/python", lines) and not docker_excludes("src/a.py", lines)
    assert docker_excludes("src/x/__pycache__/a.pyc", lines) and not docker_excludes("src/keep/__pycache__/a", lines)
    assert not docker_excludes("a.txt", ["*.py"]) and docker_excludes("b.py", ["*.py"])
    assert not docker_excludes("d/b.py", ["*.py"])  # `*` stays within one directory, as in Docker


def test_dockerignore_keeps_the_build_context_to_what_the_images_copy():
    """After the quick start the repository holds a .venv of hundreds of MB, .git, caches: none
    of it goes to the Docker daemon; everything the Dockerfiles COPY does."""
    lines = DOCKERIGNORE.read_text().splitlines()
    for left_out in (".venv/lib/python3.11/site-packages/torch/__init__.py", ".git/objects/ab/cdef", ".git",
                     ".pytest_cache/v/cache/nodeids", ".mypy_cache/3.11/x.json", ".ruff_cache/0.6/x",
                     "src/dsv4_launch/__pycache__/cli.cpython-311.pyc", "src/dsv4_launch.egg-info/PKG-INFO",
                     "tests/conftest.py", "benchmarks/results/latest.json", "dist/dsv4_launch-0.1.0.tar.gz",
                     "venv/bin/python", "build/lib/dsv4_launch/__init__.py"):
        assert docker_excludes(left_out, lines), left_out
    copied = set()
    for name in ("Dockerfile", "Dockerfile.plugin"):
        for line in (EXAMPLES / "docker" / name).read_text().splitlines():
            if line.startswith("COPY "):
                copied.update(line.split()[1:-1])
    assert copied == {"pyproject.toml", "README.md", "LICENSE", "src"}, copied
    root = EXAMPLES.parent
    for source in copied:
        files = [p for p in (root / source).rglob("*") if p.is_file()] if (root / source).is_dir() else [root / source]
        kept = [p for p in files if "__pycache__" not in p.parts and not str(p).endswith(".pyc")
                and ".egg-info" not in str(p)]
        for path in kept:
            assert not docker_excludes(str(path.relative_to(root)), lines), path
    assert not docker_excludes("src/dsv4_launch/data/checkpoints/deepseek-v4-flash.json", lines)


@pytest.mark.parametrize("name", ["Dockerfile", "Dockerfile.plugin"])
def test_the_images_install_without_network(name):
    """pip builds dsv4-launch with the image's own setuptools (--no-build-isolation: no download
    of the build requirement), which vLLM itself requires at the version pyproject.toml needs."""
    text = (EXAMPLES / "docker" / name).read_text()
    (install,) = [line for line in text.splitlines() if "pip install" in line and not line.startswith("#")]
    assert "--no-build-isolation" in install and "/opt/dsv4-launch" in install
    build_system = (EXAMPLES.parent / "pyproject.toml").read_text().split("[build-system]", 1)[1].split("\n[", 1)[0]
    assert re.search(r'^requires = \["setuptools>=77"\]$', build_system, re.M), build_system  # what the image has
    assert "setuptools >= 77" in (EXAMPLES / "docker" / "Dockerfile").read_text()


@pytest.mark.parametrize("version", ["0.29.0", "0.33.0"])
def test_the_defaults_the_memory_section_warns_about_do_not_fit(run_cli, version):
    """docs/deployment.md ("Memory"): on two 96 GB GPUs at TP 2, vLLM's defaults (8,192 batched
    tokens, the full context) draw a memory warning from plan on the releases it names (0.29.0
    on; 0.24.0 counts less for the tokens in flight); the examples' settings do not."""
    base = ["dsv4-launch", "plan", "--json", M, "-tp", "2"]
    done, _ = run_cli(*base, gpus=(RTX_PRO_6000,) * 2, vllm=version)
    plan = json.loads(done.stdout)
    memory = memory_rule_ids()
    assert [f for f in plan["findings"] if f["rule"] in memory or "max-model-len" in f["text"]], plan["findings"]
    done, _ = run_cli(*base, "--max-num-batched-tokens", "2048", "--max-model-len", "65536",
                      gpus=(RTX_PRO_6000,) * 2, vllm=version)
    plan = json.loads(done.stdout)
    assert not [f for f in plan["findings"] if f["rule"] in memory or "max-model-len" in f["text"]], plan["findings"]


# --- safe by default (issue 41 item 6) ---------------------------------------------------------

LOOPBACK = ("127.0.0.1", "localhost", "::1")


def listens_beyond_loopback(argv: list[str]) -> bool:
    """vLLM's --host: every interface when it is not given (uvicorn's host None)."""
    return option_value(argv, "--host") not in LOOPBACK


def exec_start_pre(unit: Path) -> str:
    (line,) = [l for l in unit.read_text().splitlines() if l.startswith("ExecStartPre=")]
    return line.split("=", 1)[1].replace("$$", "$")


def unit_requires_the_key(unit: Path, tmp_path: Path) -> bool:
    """A required EnvironmentFile= (no "-": a missing file stops the start) that the install
    steps fill with VLLM_API_KEY, and an ExecStartPre= that stops the start (a failure, with a
    line for the journal) when it is unset or empty and lets it go on when set — run here."""
    text = unit.read_text()
    files = [l.split("=", 1)[1] for l in text.splitlines() if l.startswith("EnvironmentFile=")]
    key_files = [f for f in files if not f.startswith("-") and re.search(rf"VLLM_API_KEY=[^\n]*> {re.escape(f)}", text)]
    if not key_files or "ExecStartPre=" not in text:
        return False
    sh = tool("sh")
    argv = shlex.split(exec_start_pre(unit))
    runs = {key: subprocess.run([sh, *argv[1:]] if argv[0] == "/bin/sh" else argv, capture_output=True, text=True,
                                env={**clean_env(tmp_path), **({"VLLM_API_KEY": key} if key is not None else {})})
            for key in (None, "", "k3y")}
    return (runs[None].returncode != 0 and runs[""].returncode != 0 and "VLLM_API_KEY" in runs[""].stderr
            and runs["k3y"].returncode == 0)


def docker_run_has_a_key_or_loopback(run: str) -> bool:
    words = shlex.split(run.replace("\\\n", " "))
    return (any(w == "--env-file" or w.startswith("--env-file=") for w in words)
            or any(w.startswith("VLLM_API_KEY") for w in words)
            or all(w.startswith(LOOPBACK) for i, w in enumerate(words) if i and words[i - 1] in ("-p", "--publish")))


def compose_requires_the_key(service: dict) -> bool:
    """VLLM_API_KEY from the environment with compose's ${VAR:?…}: compose refuses to start
    while it is unset or empty."""
    value = str((service.get("environment") or {}).get("VLLM_API_KEY", ""))
    return re.fullmatch(r"\$\{VLLM_API_KEY:\?[^}]*\}", value) is not None


def k8s_key_from_a_secret(container: dict) -> bool:
    keys = [e for e in container.get("env", []) if e["name"] == "VLLM_API_KEY"]
    return any(not e.get("valueFrom", {}).get("secretKeyRef", {}).get("optional", False)
               and "secretKeyRef" in e.get("valueFrom", {}) for e in keys)


def test_no_example_listens_beyond_loopback_without_an_api_key(tmp_path):
    checked = []
    # Docker: the image's CMD, each `docker run` line, compose
    for name in ("Dockerfile", "Dockerfile.plugin"):
        path = EXAMPLES / "docker" / name
        cmd = next(json.loads(l[4:]) for l in path.read_text().splitlines() if l.startswith("CMD "))
        if listens_beyond_loopback(cmd):
            runs = DOCKER_RUN.findall("\n".join(l.lstrip("#").strip() for l in path.read_text().splitlines()))
            assert runs and all(docker_run_has_a_key_or_loopback(r) for r in runs), (name, runs)
            checked.append(name)
    compose = EXAMPLES / "docker" / "compose.yaml"
    if listens_beyond_loopback(compose_command(compose)):
        service = yaml.safe_load(compose.read_text())["services"]["deepseek-v4"]
        published = [str(p) for p in service.get("ports", [])]
        assert compose_requires_the_key(service) or all(p.startswith(LOOPBACK) for p in published), service
        checked.append("compose")
    # systemd
    if listens_beyond_loopback(unit_exec_start(UNIT, read_env_file(ENV_FILE))):
        assert unit_requires_the_key(UNIT, tmp_path), "the unit listens beyond loopback without a required key"
        checked.append("systemd")
    # Kubernetes: every container that serves HTTP
    for where, spec, _, _ in pod_specs():
        (container,) = spec["containers"]
        argv = container_command(container, LWS_ENV)
        if "--headless" not in argv and listens_beyond_loopback(argv):
            assert k8s_key_from_a_secret(container), where
            checked.append(where)
    # the --config file and the shell snippet's command lines: this machine only
    config = yaml.safe_load((EXAMPLES / "config" / "deepseek-v4-flash.yaml").read_text())
    assert str(config.get("host")) in LOOPBACK, config.get("host")
    for argv in shell_commands():
        assert not listens_beyond_loopback(argv), argv
    assert len(checked) == 6, checked  # two images, compose, systemd, the Deployment, the LWS leader


def test_the_key_checks_catch_an_example_without_a_key(tmp_path):
    service = yaml.safe_load((EXAMPLES / "docker" / "compose.yaml").read_text())["services"]["deepseek-v4"]
    assert compose_requires_the_key(service)
    assert not compose_requires_the_key({**service, "environment": {"VLLM_API_KEY": "${VLLM_API_KEY}"}})
    assert not compose_requires_the_key({**service, "environment": {"HF_HOME": "/x"}})
    assert not docker_run_has_a_key_or_loopback("docker run --gpus all --ipc=host -p 8000:8000 img")
    assert docker_run_has_a_key_or_loopback("docker run --gpus all --ipc=host -p 127.0.0.1:8000:8000 img")
    unit = UNIT.read_text()
    for broken in (unit.replace("EnvironmentFile=/etc/dsv4-serve/api-key.env",
                                "EnvironmentFile=-/etc/dsv4-serve/api-key.env"),
                   unit.replace("test -n", "test -z"),
                   "\n".join(l for l in unit.splitlines() if not l.startswith("ExecStartPre="))):
        path = tmp_path / "broken.service"
        path.write_text(broken)
        assert not unit_requires_the_key(path, tmp_path)
    (container,) = lws_pod_templates(lws_doc())["leader"]["spec"]["containers"]
    assert k8s_key_from_a_secret(container)
    assert not k8s_key_from_a_secret({**container, "env": [e for e in container["env"] if e["name"] != "VLLM_API_KEY"]})


def test_compose_restarts_the_server():
    service = yaml.safe_load((EXAMPLES / "docker" / "compose.yaml").read_text())["services"]["deepseek-v4"]
    assert (service.get("restart") in ("always", "unless-stopped")
            or str(service.get("restart")).startswith("on-failure"))


def all_containers(spec: dict) -> list[dict]:
    return [*spec.get("initContainers", []), *spec["containers"]]


def test_kubernetes_pods_are_guaranteed():
    """Every container (init containers too: the pod's QoS class counts them) requests CPU and
    memory equal to its limits — Guaranteed, the last class the kubelet evicts — and asks for
    its GPUs in both."""
    for where, spec, _, _ in pod_specs():
        for container in all_containers(spec):
            resources = container.get("resources", {})
            requests, limits = resources.get("requests", {}), resources.get("limits", {})
            for kind in ("cpu", "memory"):
                assert kind in requests and requests[kind] == limits.get(kind), (where, container["name"], resources)
            assert requests.get("nvidia.com/gpu") == limits.get("nvidia.com/gpu"), (where, container["name"])


def test_the_shared_memory_volume_fits_in_the_memory_limit():
    """/dev/shm as an emptyDir of medium Memory counts against the container's memory limit."""
    units = {"Gi": 2**30, "Mi": 2**20}

    def size(text: str) -> int:
        return int(text[:-2]) * units[text[-2:]]

    for where, spec, _, _ in pod_specs():
        (container,) = spec["containers"]
        (mount,) = [m for m in container["volumeMounts"] if m["mountPath"] == "/dev/shm"]
        (volume,) = [v for v in spec["volumes"] if v["name"] == mount["name"]]
        assert volume["emptyDir"]["medium"] == "Memory"
        assert size(volume["emptyDir"]["sizeLimit"]) < size(container["resources"]["limits"]["memory"]) // 4, where


def lws_template_texts() -> dict[str, str]:
    """The leader's and the worker's template as written, comments included."""
    text = LWS_FILE.read_text()
    leader, _, rest = text.partition("    workerTemplate:")
    return {"leader": leader.split("    leaderTemplate:", 1)[1], "worker": rest.split("volumeClaimTemplates:", 1)[0]}


RDMA_LINE = re.compile(
    r"^(\s*)# ((?:- name: |  value: )\S.*|securityContext:.*|  capabilities:.*|    add: .*|rdma/.*)$",
                       re.M)


def test_leaderworkerset_sets_up_rdma_for_cross_node_expert_parallelism():
    """Expert parallelism across the two nodes goes through NCCL: each template names the RDMA
    devices, the interfaces of NCCL's and Gloo's bootstrap, an RDMA resource and IPC_LOCK —
    commented, the names being the cluster's — and uncommented they are a valid pod template
    whose vLLM container gets them."""
    kv = k8s_validate()
    names = ("NCCL_IB_HCA", "NCCL_SOCKET_IFNAME", "GLOO_SOCKET_IFNAME")
    for role, text in lws_template_texts().items():
        for needed in (*names, "IPC_LOCK", "rdma/"):
            assert needed in text, (role, needed)
    uncommented = RDMA_LINE.sub(lambda m: m.group(1) + m.group(2), LWS_FILE.read_text())
    (doc,) = [d for d in yaml.safe_load_all(uncommented) if d and d["kind"] == "LeaderWorkerSet"]
    for role, template in lws_pod_templates(doc).items():
        kv.validate({"apiVersion": "v1", "kind": "PodTemplate", "metadata": {"name": role}, "template": template},
                    kv.latest_version(), strict=True)
        (container,) = template["spec"]["containers"]
        assert set(names) <= {e["name"] for e in container["env"]}, role
        assert "IPC_LOCK" in container["securityContext"]["capabilities"]["add"], role
        assert any(r.startswith("rdma/") for r in container["resources"]["limits"]), role


def test_kubernetes_pods_download_the_weights_before_the_startup_budget():
    """~865 GB per LeaderWorkerSet pod, ~160 GB for the Deployment's, on the first start: an init
    container downloads the model vLLM serves into the same HF_HOME on the same volume, before
    vLLM's container — and so before its startupProbe's budget — starts."""
    for role, spec, _, _ in pod_specs():
        (container,) = spec["containers"]
        model = container["args"][0]
        downloads = [c for c in spec.get("initContainers",
                                         []) if f"snapshot_download('{model}'" in " ".join(c["command"])]
        assert downloads, f"{role}: no init container downloads {model}"
        (init,) = downloads
        assert k8s_env(init).get("HF_HOME") == k8s_env(container)["HF_HOME"], role
        home = k8s_env(container)["HF_HOME"]
        volume = next(m["name"] for m in container["volumeMounts"] if home.startswith(m["mountPath"] + "/"))
        assert any(m["name"] == volume and home.startswith(m["mountPath"] + "/") for m in init["volumeMounts"]), role
        assert init["image"] == container["image"], role

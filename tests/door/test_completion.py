"""Shell completion: ``dsv4-launch completion bash|zsh|fish`` prints scripts the shells accept,
and the helper behind them completes vLLM's ``serve`` options from the recorded option table of
the installed (or given) release. The shells are real; vLLM is the fake package (conftest), only
its version matters here."""

from __future__ import annotations

import io
import os
import shlex
import shutil
import subprocess

import pytest

from dsv4_launch.commands.completion import SHELLS, candidates, run_completion
from dsv4_launch.commands.context import Context
from dsv4_launch.vllm_cli.option_table import available_versions, load_table
from tests.conftest import clean_env


def _shell(name: str) -> str:
    path = shutil.which(name)
    if path is None:
        if os.environ.get("DSV4_REQUIRE_TOOLS") == "1" and name != "fish":
            pytest.fail(f"{name} is required (DSV4_REQUIRE_TOOLS=1) but not installed (apt-get install {name})")
        pytest.skip(f"{name} is not installed here (apt-get install {name}); its script is not checked")
    return path


def _script(run_cli, shell: str) -> str:
    done, _ = run_cli("dsv4-launch", "completion", shell)
    assert done.returncode == 0 and done.stderr == "", done.stderr
    return done.stdout


@pytest.mark.parametrize("shell, check", [("bash", ["-n"]), ("zsh", ["-n"]), ("fish", ["--no-execute"])])
def test_scripts_are_valid_for_their_shell(run_cli, tmp_path, shell, check):
    script = _script(run_cli, shell)
    assert "dsv4-serve" in script and "dsv4-launch completion --complete" in script
    path = tmp_path / f"completion.{shell}"
    path.write_text(script)
    done = subprocess.run([_shell(shell), *check, str(path)], capture_output=True, text=True, timeout=30)
    assert done.returncode == 0, done.stderr


def _bash_complete(tmp_path, run_cli, *words: str, cword: int | None = None, vllm_dir=None) -> list[str]:
    script = tmp_path / "completion.bash"
    script.write_text(_script(run_cli, "bash"))
    array = " ".join(f"'{w}'" for w in words)
    cword = len(words) - 1 if cword is None else cword
    code = (f"source {script}\nCOMP_WORDS=({array})\nCOMP_CWORD={cword}\n_dsv4_launch_complete\n"
            'printf "%s\\n" "${COMPREPLY[@]}"\n')
    env = clean_env(tmp_path)
    if vllm_dir is not None:
        env["PYTHONPATH"] = str(vllm_dir)
    done = subprocess.run([_shell("bash"), "-c", code], capture_output=True, text=True, env=env, timeout=60)
    assert done.returncode == 0, done.stderr
    return [line for line in done.stdout.splitlines() if line]


def test_bash_completes_dsv4_serve_options(run_cli, tmp_path):
    assert "--kv-cache-dtype" in _bash_complete(tmp_path, run_cli, "dsv4-serve", "--kv-ca")


def test_bash_completes_a_value_after_an_equals_sign(run_cli, tmp_path, fake_vllm_path):
    """bash splits `--kv-cache-dtype=fp` into three words; only the value is replaced."""
    got = _bash_complete(tmp_path, run_cli, "dsv4-serve", "--kv-cache-dtype", "=", "fp",
                         vllm_dir=fake_vllm_path("0.33.0"))
    assert got and all(v.startswith("fp") for v in got)
    assert set(got) == {v for v in load_table("0.33.0").accepted_values["kv_cache_dtype"] if v.startswith("fp")}


def test_bash_completes_dsv4_launch_commands(run_cli, tmp_path):
    got = _bash_complete(tmp_path, run_cli, "dsv4-launch", "")
    assert {"serve", "plan", "doctor", "fit", "completion"} <= set(got)


def test_zsh_script_loads_and_registers_both_commands(run_cli, tmp_path):
    script = tmp_path / "_dsv4-launch"
    script.write_text(_script(run_cli, "zsh"))
    code = (f"autoload -U compinit && compinit -u -d {tmp_path}/zcompdump; source {script}; "
            "print -r -- $_comps[dsv4-launch] $_comps[dsv4-serve]")
    done = subprocess.run([_shell("zsh"), "-fc", code], capture_output=True, text=True, timeout=60,
                          env=clean_env(tmp_path))
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["_dsv4_launch", "_dsv4_launch"]


def test_helper_returns_kv_cache_dtype_for_kv_ca():
    for version in available_versions():
        got = candidates("dsv4-serve", ["--kv-ca"], version=version)
        assert "--kv-cache-dtype" in got and all(c.startswith("--kv-ca") for c in got)


def test_options_are_the_releases_own():
    """An option only newer releases have is offered for them, not for older ones."""
    old, new = available_versions()[0], available_versions()[-1]
    added = sorted(set(load_table(new).option_strings) - set(load_table(old).option_strings))
    assert added
    option = added[0]
    assert option in candidates("dsv4-serve", [option], version=new)
    assert option not in candidates("dsv4-serve", [option], version=old)
    # an unrecorded release: the nearest recorded table (the newest at or below it)
    assert candidates("dsv4-serve", ["--"], version="0.99.0") == candidates("dsv4-serve", ["--"], version=new)
    assert candidates("dsv4-serve", ["--"], version="0.29.5") == candidates("dsv4-serve", ["--"], version="0.29.0")


@pytest.mark.parametrize("version", ["0.24.0", "0.33.0"])
def test_the_installed_release_decides(run_cli, version):
    done, record = run_cli("dsv4-launch", "completion", "--complete", "dsv4-serve", "--", "--", vllm=version)
    assert done.returncode == 0 and record is None
    assert set(done.stdout.split()) == {o for o in load_table(version).option_strings if o.startswith("--")} | {
        "--version"}


def test_launch_commands_own_options_and_values():
    assert candidates("dsv4-launch", ["completion", "z"]) == ["zsh"]
    assert "--json" in candidates("dsv4-launch", ["plan", "--js"], version="0.33.0")
    assert "--json" not in candidates("dsv4-launch", ["plan", "--", "--js"], version="0.33.0")
    assert candidates("dsv4-launch", ["fit", "--vllm-version", ""]) == available_versions()
    assert candidates("dsv4-launch", ["plan", "--vllm-version=0.2"]) == [
        f"--vllm-version={v}" for v in available_versions() if v.startswith("0.2")]
    # the release given with --vllm-version is the table used
    new_only = sorted(set(load_table("0.33.0").option_strings) - set(load_table("0.24.0").option_strings))[0]
    assert new_only not in candidates("dsv4-launch", ["plan", "--vllm-version", "0.24.0", new_only])
    assert candidates("dsv4-launch", ["-"]) == ["--help", "--version", "-V", "-h"]
    assert candidates("dsv4-serve", ["-V"]) == ["-V"] and candidates("dsv4-serve", ["m", "-V"], version="0.33.0") == []


def test_helper_never_fails_into_the_prompt():
    out = io.StringIO()
    assert run_completion(["--complete", "dsv4-launch", "--", "plan", "\udcff", "--kv-cache-dtype", "="],
                          Context(stdout=out)) == 0
    assert run_completion(["--complete", "nonsense", "--"], Context(stdout=io.StringIO())) == 0


@pytest.mark.parametrize("args", [[], ["tcsh"], ["bash", "zsh"]])
def test_a_wrong_shell_is_one_line_and_exit_2(args):
    err = io.StringIO()
    assert run_completion(args, Context(stdout=io.StringIO(), stderr=err)) == 2
    assert err.getvalue().count("\n") == 1 and all(s in err.getvalue() for s in SHELLS)


def test_completion_help_says_how_to_install_each(run_cli):
    done, _ = run_cli("dsv4-launch", "completion", "--help")
    assert done.returncode == 0
    for where in ("bash-completion/completions", "fpath", "fish/completions"):
        assert where in done.stdout


def test_fish_completes_dsv4_serve_options(run_cli, tmp_path):
    fish = _shell("fish")
    script = tmp_path / "dsv4-launch.fish"
    script.write_text(_script(run_cli, "fish"))
    done = subprocess.run([fish, "--no-config", "-c", f"source {script}; complete -C 'dsv4-serve --kv-ca'"],
                          capture_output=True, text=True, env=clean_env(tmp_path), timeout=60)
    assert done.returncode == 0, done.stderr
    assert "--kv-cache-dtype" in [line.split("\t")[0] for line in done.stdout.splitlines()]


# --- what people type most: --gpus presets, model ids, the parsers' values (issue 31.3) ----------


def _complete_in(shell: str, tmp_path, run_cli, words: list[str], env: dict[str, str] | None = None) -> list[str]:
    """What the real ``shell`` offers for the last of ``words`` (``words[0]`` the program), with the
    script ``dsv4-launch completion SHELL`` prints. zsh: ``compadd`` is stood in for by a function
    that prints what it is given (it only works inside a completion widget)."""
    script = tmp_path / f"completion.{shell}"
    script.write_text(_script(run_cli, shell))
    full_env = {**clean_env(tmp_path), **(env or {})}
    quoted = " ".join("'" + w.replace("'", "'\\''") + "'" for w in words)
    if shell == "bash":
        code = (f"source {script}\nCOMP_WORDS=({quoted})\nCOMP_CWORD={len(words) - 1}\n_dsv4_launch_complete\n"
                'printf "%s\\n" "${COMPREPLY[@]}"\n')
        cmd = [_shell("bash"), "-c", code]
    elif shell == "zsh":
        code = (f"autoload -U compinit && compinit -u -d {tmp_path}/zcompdump; source {script}\n"
                "compadd() { while [[ $1 != -- ]]; do shift; done; shift; print -rl -- \"$@\" }\n"
                "_files() { print -r -- FILES }\n"
                f"words=({quoted}); CURRENT={len(words)}; _dsv4_launch\n")
        cmd = [_shell("zsh"), "-fc", code]
    else:
        line = " ".join(words)
        cmd = [_shell("fish"), "--no-config", "-c", f"source {script}; complete -C {shlex.quote(line)}"]
    done = subprocess.run(cmd, capture_output=True, text=True, env=full_env, timeout=60)
    assert done.returncode == 0, done.stderr
    return [line.split("\t")[0] for line in done.stdout.splitlines() if line]


@pytest.mark.parametrize("shell", SHELLS)
def test_gpus_presets_are_offered(run_cli, tmp_path, shell):
    got = _complete_in(shell, tmp_path, run_cli, ["dsv4-launch", "plan", "--gpus", "8xH"])
    assert set(got) == {"8xH200", "8xH100", "8xH20", "8xH20-3E"}
    assert "2xRTXPRO6000" in candidates("dsv4-launch", ["doctor", "--gpus", "2"])
    assert "--gpus=8xB200" in candidates("dsv4-launch", ["fit", "--gpus=8"], version="0.33.0")


@pytest.mark.parametrize("shell", SHELLS)
def test_model_ids_from_the_table_and_the_hugging_face_cache(run_cli, tmp_path, shell):
    cache = tmp_path / "hub-cache"
    for folder in ("models--acme--DeepSeek-V4-Flash-ft", "datasets--acme--data", "models--acme--Other", "version.txt"):
        (cache / folder).mkdir(parents=True)
    env = {"HF_HUB_CACHE": str(cache)}
    assert set(_complete_in(shell, tmp_path, run_cli, ["dsv4-serve", "acme/"], env)) == {
        "acme/DeepSeek-V4-Flash-ft", "acme/Other"}
    got = _complete_in(shell, tmp_path, run_cli, ["dsv4-launch", "plan", "--json", "deepseek-ai/DeepSeek-V4-P"], env)
    assert set(got) == {"deepseek-ai/DeepSeek-V4-Pro", "deepseek-ai/DeepSeek-V4-Pro-0813",
                        "deepseek-ai/DeepSeek-V4-Pro-Base", "deepseek-ai/DeepSeek-V4-Pro-DSpark"}


def test_the_hugging_face_cache_is_found_as_huggingface_hub_finds_it(tmp_path, monkeypatch):
    from dsv4_launch.commands.completion import model_ids

    home = tmp_path / "hf-home"
    (home / "hub" / "models--org--from-hf-home").mkdir(parents=True)
    assert "org/from-hf-home" in model_ids({"HF_HOME": str(home), "HOME": str(tmp_path)})
    assert "org/from-hf-home" not in model_ids({"HF_HOME": str(home), "HF_HUB_CACHE": str(tmp_path / "none"),
                                                "HOME": str(tmp_path)})
    (tmp_path / ".cache" / "huggingface" / "hub" / "models--org--default").mkdir(parents=True)
    assert "org/default" in model_ids({"HOME": str(tmp_path)})
    # a missing cache is no candidates from it, never an error
    assert model_ids({"HF_HUB_CACHE": str(tmp_path / "missing")})[0] == "deepseek-ai/DeepSeek-V4-Flash"


def test_a_model_is_offered_only_where_the_model_goes():
    assert candidates("dsv4-serve", ["deepseek-ai/DeepSeek-V4-Flash", "deep"], version="0.33.0") == []
    assert candidates("dsv4-serve", ["-tp", "2", "deepseek-ai/DeepSeek-V4-F"], version="0.33.0") == [
        "deepseek-ai/DeepSeek-V4-Flash", "deepseek-ai/DeepSeek-V4-Flash-0731", "deepseek-ai/DeepSeek-V4-Flash-Base",
        "deepseek-ai/DeepSeek-V4-Flash-DSpark", "deepseek-ai/DeepSeek-V4-Flash-Vision-Exp"]
    assert "deepseek-ai/DeepSeek-V4-Pro" in candidates("dsv4-serve", ["--model", "deepseek-ai/"], version="0.33.0")
    assert candidates("dsv4-launch", ["plan", "--vllm-version", "0.24.0", "deepseek-ai/DeepSeek-V4.1"]) == [
        "deepseek-ai/DeepSeek-V4.1-Flash"]
    # a value of an own option is not the model, and no model is offered as one
    assert candidates("dsv4-launch", ["fit", "--gpu-memory", "80GiB", "deepseek-ai/DeepSeek-V4.1"],
                      version="0.33.0") == ["deepseek-ai/DeepSeek-V4.1-Flash"]
    assert candidates("dsv4-launch", ["doctor", "--gpu-memory", "deep"], version="0.33.0") == []


@pytest.mark.parametrize("shell", SHELLS)
def test_the_parsers_values_are_offered(run_cli, tmp_path, shell, fake_vllm_path):
    env = {"PYTHONPATH": str(fake_vllm_path("0.33.0"))}
    got = _complete_in(shell, tmp_path, run_cli, ["dsv4-serve", "m", "--tool-call-parser", "deepseek_v4"], env)
    assert set(got) == {"deepseek_v4", "deepseek_v41"}
    got = _complete_in(shell, tmp_path, run_cli, ["dsv4-launch", "plan", "m", "--reasoning-parser", "deepseek_"], env)
    assert set(got) == {"deepseek_v4", "deepseek_v41", "deepseek_v3", "deepseek_r1"}


def test_a_parser_is_offered_for_the_releases_that_have_it():
    """deepseek_v41 is registered from 0.30.0 on (vllm/tool_parsers/__init__.py:45@0.30.0)."""
    for prog, words in (("dsv4-serve", ["m", "--tool-call-parser", "deepseek_v4"]),
                        ("dsv4-serve", ["m", "--reasoning-parser=deepseek_v4"])):
        old = candidates(prog, words, version="0.29.0")
        new = candidates(prog, words, version="0.30.0")
        assert [c.rpartition("=")[2] for c in old] == ["deepseek_v4"]
        assert [c.rpartition("=")[2] for c in new] == ["deepseek_v4", "deepseek_v41"]


def test_each_declared_option_is_offered_where_it_is_declared():
    """Completion reads the commands' one declaration (own_options.Command): every option a
    command declares is offered for it, and no other command's."""
    from dsv4_launch.commands.own_options import COMMANDS, load

    declared = {name: {o.name for o in load(name).options} for name in COMMANDS if name != "serve"}
    for name, options in declared.items():
        offered = set(candidates("dsv4-launch", [name, "--"], version="0.33.0"))
        assert options <= offered, (name, options - offered)
        others = set().union(*(o for n, o in declared.items() if n != name)) - options
        assert not (others & offered) - set(load_table("0.33.0").option_strings), (name, others & offered)


# Folder names a shared Hugging Face cache can hold (any byte but "/" and NUL): each would put a
# command, a glob or a split on the user's line if offered as it is (issue 41).
HOSTILE_FOLDERS = ["models--acme--x$(touch PWNED)", "models--acme--x;touch PWNED", "models--acme--x`touch PWNED`",
                   "models--acme--x\ntouch PWNED", "models--acme--x'q", 'models--acme--x"q', "models--acme--x y",
                   "models--acme--x&&touch PWNED", "models--acme--x|touch PWNED", "models--acme--x*",
                   "models--acme--x>PWNED", "models--acme--x{a,b}", "models---rf--x", "models--acme--x\\y",
                   "models--acme--x$HOME", "models--acme--x..y", "models--acme--x#c", "models--acme--Modèle"]


@pytest.mark.parametrize("shell", SHELLS)
def test_cache_names_a_shell_would_run_or_split_are_not_offered(run_cli, tmp_path, shell):
    cache = tmp_path / "hub-cache"
    for folder in [*HOSTILE_FOLDERS, "models--acme--Model_v2.1", "models--acme--x-ok"]:
        (cache / folder).mkdir(parents=True)
    env = {"HF_HUB_CACHE": str(cache)}
    got = _complete_in(shell, tmp_path, run_cli, ["dsv4-serve", "acme/"], env)
    assert set(got) == {"acme/Model_v2.1", "acme/x-ok"}, got
    got = _complete_in(shell, tmp_path, run_cli, ["dsv4-serve", "-"], env) + \
        _complete_in(shell, tmp_path, run_cli, ["dsv4-serve", ""], env)
    assert not any(g.startswith(("-rf", "acme/x$", "acme/x;")) for g in got)
    # what is offered is inert in that shell: read back as a word, it is itself and runs nothing
    for word in ("acme/Model_v2.1", "acme/x-ok"):
        code = f"printf '%s\\n' {word}"
        done = subprocess.run([_shell(shell), "-c" if shell != "zsh" else "-fc", code], capture_output=True,
                              text=True, cwd=tmp_path, env=clean_env(tmp_path), timeout=30)
        assert done.returncode == 0 and done.stdout == f"{word}\n", (shell, done.stdout, done.stderr)
    assert not (tmp_path / "PWNED").exists()


def test_only_repo_ids_huggingface_hub_accepts_come_from_the_cache(tmp_path):
    from dsv4_launch.commands.completion import model_ids

    for folder in [*HOSTILE_FOLDERS, "models--acme--ok.v1_2-3"]:
        (tmp_path / folder).mkdir()
    got = [m for m in model_ids({"HF_HUB_CACHE": str(tmp_path)}) if m.startswith(("acme/", "-rf"))]
    assert got == ["acme/ok.v1_2-3"]
    try:
        from huggingface_hub.utils import HFValidationError, validate_repo_id
    except ImportError:
        return  # the rule is huggingface_hub's (utils/_validators.py); checked where it is installed
    validate_repo_id("acme/ok.v1_2-3")
    for folder in HOSTILE_FOLDERS:
        with pytest.raises(HFValidationError):
            validate_repo_id(folder.removeprefix("models--").replace("--", "/", 1))

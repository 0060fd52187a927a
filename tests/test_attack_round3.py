"""Round three of "never worse than plain ``vllm serve``" (issue 20): one section per attack
class, each with several inputs. What is faked: the vLLM install (``VllmInstall`` in-process,
``tests/fakes/vllm_pkg`` with a dist-info of the wanted version in subprocesses), NVML (the
stand-in library), and, where said, a ``vllm`` script on PATH."""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys

import pytest

from dsv4_launch.adapters.vllm_install import VllmInstall
from dsv4_launch.commands.context import Context
from dsv4_launch.commands.plan import run_plan
from dsv4_launch.core.credentials import is_credential_name
from dsv4_launch.output.redact import masked_argv
from dsv4_launch.vllm_cli.option_table import load_table
from dsv4_launch.vllm_cli.serve_args import read_serve_args
from tests.conftest import BIN, clean_env
from tests.scaling import SCALE, LineCounter, assert_linear_count

M = "deepseek-ai/DeepSeek-V4-Flash"
NEWER = VllmInstall("0.35.0", True)  # a release the option tables do not record


def _streams():
    return (io.TextIOWrapper(io.BytesIO(), encoding="utf-8", errors="surrogateescape", write_through=True),
            io.TextIOWrapper(io.BytesIO(), encoding="utf-8", errors="backslashreplace", write_through=True))


def _plan(argv, env=None, vllm=NEWER, as_json=False):
    out, err = _streams()
    rc = run_plan(list(argv), as_json=as_json, ctx=Context(env={"DSV4_LAUNCH_GPU_CAPABILITY": "12.0", **(env or {})}, stdout=out, stderr=err, vllm=vllm))
    return rc, out.buffer.getvalue().decode(), err.buffer.getvalue().decode()


# --- class 2: secrets where the tables do not know the release or the option ------------------

CREDENTIAL_CASES = [
    ["--ssl-keyfile-password", "Zqhunter2secret"],
    ["--ssl-keyfile-password=Zqhunter2secret"],
    ["--foo-auth-token=Zqabc123secret"],
    ["--foo-auth-token", "Zqabc123secret"],
    ["--api-keyy", "Zqsekrit9secret"],
    ["--api_keyy", "Zqsekrit9secret"],
    ["--apikey", "Zqsekrit9secret"],
    ["--hf-tokenn", "Zqsekrit9secret"],
    ["--oauth-client-secret", "Zqsekrit9secret"],
    ["--session-cookie", "Zqsekrit9secret"],
    ["--db-passwd", "Zqsekrit9secret"],
    ["--speculative-config.hf_token", "Zqsekrit9secret"],
    ["--api-key", "-sk.live-Zq4f9asecret"],
    ["--api-key", "--s_k.live-Zq4f9asecret"],
    ["--api-key=-sk.live-Zq4f9asecret"],
]


@pytest.mark.parametrize("version", [NEWER, VllmInstall(None, True), VllmInstall("0.33.0", True)],
                         ids=["0.35.0", "unknown", "0.33.0"])
@pytest.mark.parametrize("case", CREDENTIAL_CASES, ids=lambda c: c[0][:28])
def test_credential_named_options_are_masked_everywhere(case, version):
    secret = next(t for t in case if "Zq" in t).split("=", 1)[-1]
    core = secret[secret.index("Zq"):]
    argv = [M, *case, "--port", "8000"]
    for as_json in (False, True):
        rc, out, err = _plan(argv, vllm=version, as_json=as_json)
        assert core not in out and core not in err, (out, err)
        assert secret.split(".")[0] not in out + err or secret.split(".")[0] in ("--s_k", "-sk"), (out, err)
        if as_json:
            assert "***" in " ".join(json.loads(out)["argv"])


@pytest.mark.parametrize("name", ["--ssl-keyfile", "--ssl-certfile", "--ssl-ca-certs", "--api-key-file", "--token-path",
                                  "--max-num-batched-tokens", "--tokenizer", "--long-prefill-token-threshold",
                                  "--secrets-dir", "--hf-config-path", "--passthrough", "--compass", "--enable-bypass"])
def test_paths_and_counts_are_not_credentials(name):
    assert not is_credential_name(name)
    shown = masked_argv([M, name, "/etc/x.pem"], read_serve_args([M, name, "/etc/x.pem"], load_table("0.35.0")).secrets)
    assert shown[2] == "/etc/x.pem"


@pytest.mark.parametrize("name", ["--ssl-keyfile-password", "--api-keyy", "--x-auth", "--authtoken", "--passphrase",
                                  "--client-credentials", "--bearer", "--my_secret.value", "--kv-token-file-password",
                                  "--db-pass", "--redis_pw", "--wifi-psk", "--jwt", "--private-key-pem"])
def test_credential_words(name):
    assert is_credential_name(name)


def test_known_release_keeps_its_table():
    # 0.33.0 is recorded: --ssl-keyfile is a path there, shown; --api-key masked by position.
    args = read_serve_args([M, "--ssl-keyfile", "/k.pem", "--api-key", "a", "b"], load_table("0.33.0"))
    assert masked_argv(args.tokens, args.secrets) == [M, "--ssl-keyfile", "/k.pem", "--api-key", "***", "***"]


def test_serve_with_a_newer_vllm_masks_the_hand_over_line(run_cli, v4_dir):
    done, record = run_cli("dsv4-serve", v4_dir, "--ssl-keyfile-password", "Zqhunter2secret", "--foo-auth-token=Zqtok99",
                           vllm="0.35.0", env={"DSV4_LAUNCH_GPU_CAPABILITY": "12.0"})
    assert done.returncode == 0, done.stderr
    assert "Zqhunter2" not in done.stderr and "Zqtok99" not in done.stderr, done.stderr
    assert "command: vllm serve" in done.stderr
    assert record["argv"][2:5] == [v4_dir, "--ssl-keyfile-password", "Zqhunter2secret"]  # vLLM gets it unchanged


# --- class 3: code from the environment -----------------------------------------------------

PLANTED = ["json.py", "torch.py", "importlib.py", "flashinfer.py", "sitecustomize.py", "usercustomize.py"]


@pytest.mark.parametrize("pythonpath", [None, ".", "", ":", "./"])
def test_runtime_probe_imports_nothing_from_the_working_directory(tmp_path, monkeypatch, pythonpath):
    """A model repository (the working directory) holding modules named like the ones the probe
    imports: none of them runs (each would write a marker file)."""
    from dsv4_launch.adapters.runtime_probe import read_runtime

    planted = tmp_path / "model-repo"
    planted.mkdir()
    marker = tmp_path / "executed"
    for name in PLANTED:
        (planted / name).write_text(f"open({str(marker)!r}, 'a').write({name!r} + '\\n')\n")
    monkeypatch.chdir(planted)
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTHON")}
    if pythonpath is not None:
        env["PYTHONPATH"] = pythonpath
    env["PYTHONSTARTUP"] = str(planted / "json.py")
    result, error = read_runtime(sys.executable, env=env, timeout=60)
    assert error is None and result["python"], error
    assert not marker.exists(), marker.read_text()


def test_runtime_probe_keeps_pythonpath(tmp_path):
    """PYTHONPATH still counts (vLLM will see it): a package found only through it is seen."""
    from dsv4_launch.adapters.runtime_probe import read_runtime

    site = tmp_path / "site"
    (site / "vllm-9.9.9.dist-info").mkdir(parents=True)
    (site / "vllm-9.9.9.dist-info" / "METADATA").write_text("Metadata-Version: 2.1\nName: vllm\nVersion: 9.9.9\n")
    env = {**{k: v for k, v in os.environ.items() if not k.startswith("PYTHON")}, "PYTHONPATH": str(site)}
    result, error = read_runtime(sys.executable, env=env, timeout=60)
    assert error is None and result["vllm"]["version"] == "9.9.9", (result, error)


# --- class 8: cost as an attack (YAML aliases) -------------------------------------------------


def _bomb(kind: str, width: int = 9, depth: int = 9) -> str:
    names = "abcdefghijklmnop"[:depth]
    if kind == "list":
        lines = ["a: &a [" + ",".join(["x"] * width) + "]"]
        lines += [f"{n}: &{n} [" + ",".join([f"*{p}"] * width) + "]" for p, n in zip(names, names[1:])]
    elif kind == "dict":
        lines = ["a: &a {" + ",".join(f"k{i}: x" for i in range(width)) + "}"]
        lines += [f"{n}: &{n} {{" + ",".join(f"k{i}: *{p}" for i in range(width)) + "}" for p, n in zip(names, names[1:])]
    elif kind == "strings":  # few aliases of one long string
        lines = ["a: &a " + "y" * 100_000, "b: &b [" + ",".join(["*a"] * 200) + "]",
                 "c: [" + ",".join(["*b"] * 200) + "]"]
    else:  # block style, and the bomb under an option vLLM has
        lines = ["a: &a", *[f"  - x{i}" for i in range(width)]]
        lines += [f"{n}: &{n}\n" + "\n".join([f"  - *{p}"] * width) for p, n in zip(names, names[1:])]
        lines += [f"served-model-name: *{names[-1]}"]
    return "\n".join(lines) + "\n"


def yaml_work_bound(text: str) -> int:
    """The lines of adapters/config_file.py that reading ``text`` may run: linear in the file
    (a plain file of small entries runs ~4 a character), whatever its aliases expand to."""
    return 20 * len(text) + 2000


@pytest.mark.parametrize("kind", ["list", "dict", "strings", "block"])
def test_yaml_alias_bomb_is_left_to_vllm_quickly(tmp_path, kind, v4_dir):
    """Counted, not timed (tests/scaling.py): the bomb is read and measured in work linear in
    its ~300 bytes (an expansion would run ~10⁸ lines: stopped at the bound), then left to vLLM."""
    from dsv4_launch.adapters import config_file
    from dsv4_launch.vllm_cli.serve_args import ConfigNotRead

    path = tmp_path / "bomb.yaml"
    text = _bomb(kind)
    path.write_text(text)
    with LineCounter(config_file, limit=yaml_work_bound(text)):
        with pytest.raises(ConfigNotRead, match="aliases expand"):
            config_file.load_config_file(str(path))
    with LineCounter(config_file, limit=yaml_work_bound(text)):
        rc, out, err = _plan([v4_dir, "--config", str(path)], as_json=True, vllm=VllmInstall("0.33.0", True))
    assert rc == 0, (out, err)  # never a refusal: vLLM reads the file itself
    doc = json.loads(out)
    assert any("aliases expand" in w for w in doc["warnings"]), doc["warnings"]
    assert doc["argv"][-2:] == ["--config", str(path)]


def test_yaml_alias_bomb_small_memory(tmp_path, fake_vllm_path, v4_dir):
    """The 307-byte bomb under a 600 MiB address-space limit (main peaked at gigabytes)."""
    import resource

    path = tmp_path / "bomb.yaml"
    path.write_text(_bomb("list"))
    assert len(path.read_bytes()) < 320

    def limit():
        resource.setrlimit(resource.RLIMIT_AS, (600 * 2**20, 600 * 2**20))

    done = subprocess.run([str(BIN / "dsv4-launch"), "plan", "--json", v4_dir, "--config", str(path)],
                          env=clean_env(tmp_path, DSV4_LAUNCH_GPU_CAPABILITY="12.0",
                                        PYTHONPATH=str(fake_vllm_path("0.33.0"))), capture_output=True,
                          timeout=30, preexec_fn=limit)
    assert done.returncode == 0, done.stderr[-2000:]
    assert "aliases expand" in json.loads(done.stdout)["warnings"][-1] or any(
        "aliases expand" in w for w in json.loads(done.stdout)["warnings"])


@pytest.mark.parametrize("text", ["a: &a [x, y]\nb: [*a, *a, *a]\n", "port: 8000\nx: &x {a: 1}\ny: *x\n",
                                  "served-model-name: [" + ",".join(f"n{i}" for i in range(5000)) + "]\n"])
def test_ordinary_aliases_and_long_lists_are_still_read(tmp_path, text):
    from dsv4_launch.adapters.config_file import load_config_file

    path = tmp_path / "c.yaml"
    path.write_text(text)
    assert isinstance(load_config_file(str(path)), dict)


# --- class 4: terminal and JSON integrity ------------------------------------------------------


class _Tty(io.StringIO):
    def isatty(self):
        return True


@pytest.mark.parametrize("text", ["[/]", "[link=https://evil.example]click[/link]", "[bold red]x", "[/bold]",
                                  ":smiley: [", "\\[x]", "[on #ff0000]"])
def test_rich_tables_print_outside_text_as_written(text):
    from dsv4_launch.output.tables import render_table

    stream = _Tty()
    ok = render_table(f"fit for /models/{text}", [f"h{text}", "b"], [[f"cell {text}", "1"]], [None], stream, {},
                      footer=[f"foot {text}"])
    out = stream.getvalue()
    assert ok, out
    assert "\x1b]8;" not in out  # no OSC 8 hyperlink
    assert out.count(text) >= 3 or text.startswith(":"), out  # title, cell and footer as written


@pytest.mark.parametrize("text", ["[/]", "[link=https://evil.example]x[/link]"])
def test_fit_on_a_terminal_with_markup_in_the_model_path(tmp_path, text):
    from dsv4_launch.commands.fit import run_fit

    folder = tmp_path / f"m{text}"
    folder.mkdir(parents=True)
    (folder / "config.json").write_text(json.dumps({"architectures": ["DeepseekV4ForCausalLM"],
                                                    "model_type": "deepseek_v4", "num_attention_heads": 64}))
    out, err = _Tty(), io.StringIO()
    rc = run_fit([str(folder)], as_json=False, ctx=Context(env={"DSV4_LAUNCH_GPU_CAPABILITY": "12.0",
                                                    "DSV4_LAUNCH_GPU_MEMORY": "96GiB"}, stdout=out, stderr=err, vllm=VllmInstall("0.33.0", True)))
    assert "Traceback" not in err.getvalue() and "\x1b]8;" not in out.getvalue(), err.getvalue()
    assert rc in (0, 2), err.getvalue()


HOSTILE_JSON_TEXT = ["\u202egnp.exe", "\x9b31m", "\x85line", "\u2028", "\x1b[31m", "é密🔑", "\ufeff"]


@pytest.mark.parametrize("raw", [b"mod\xff", b"\xc3", b"ok\xed\xa0\x80", b"a\x80b\xfe", "密".encode()[:2]])
@pytest.mark.parametrize("encoding", ["ascii", "utf-8", "latin-1"])
def test_json_is_ascii_and_valid_for_strict_parsers(tmp_path, fake_vllm_path, raw, encoding):
    """Undecodable argv bytes and C1/bidi characters: an ASCII document that a strict parser (no
    lone surrogates) accepts, with ``not_utf8`` saying which strings held undecodable bytes."""
    name = os.fsdecode(raw)
    argv = [str(BIN / "dsv4-launch"), "plan", "--json", name, "--served-model-name", *HOSTILE_JSON_TEXT]
    done = subprocess.run([os.fsencode(a) for a in argv], capture_output=True, timeout=60,
                          env=clean_env(tmp_path, PYTHONIOENCODING=encoding, DSV4_LAUNCH_GPU_CAPABILITY="12.0",
                                        PYTHONPATH=str(fake_vllm_path("0.33.0"))))
    assert done.returncode in (0, 2), done.stderr
    text = done.stdout.decode("ascii")  # ASCII only
    doc = json.loads(text)
    _strict(doc)
    assert "/argv/0" in doc["not_utf8"]
    assert doc["argv"][2:] == HOSTILE_JSON_TEXT  # the valid text survives, as \\u escapes
    assert doc["argv"][0] == "".join(f"\\x{b:02x}" if b >= 0x80 else chr(b) for b in raw)


def _strict(value):
    """What a strict JSON parser insists on: every string is valid Unicode (no lone surrogate)."""
    if isinstance(value, str):
        value.encode("utf-8")
    elif isinstance(value, dict):
        for k, v in value.items():
            _strict(k)
            _strict(v)
    elif isinstance(value, list):
        for v in value:
            _strict(v)


def test_json_of_ordinary_input_has_an_empty_not_utf8():
    rc, out, _ = _plan([M, "--port", "8000"], as_json=True)
    doc = json.loads(out)
    assert doc["not_utf8"] == [] and out.isascii()


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


# --- class 6: the environment as huggingface_hub reads it --------------------------------------

# huggingface_hub/constants.py (2.4.0): HF_HUB_OFFLINE = _is_true(HF_HUB_OFFLINE or TRANSFORMERS_OFFLINE),
# _is_true(v) = v.upper() in {"1", "ON", "YES", "TRUE"}. tests/vllm_real/test_hf_env.py asks the real one.
OFFLINE_CASES = [
    ({"HF_HUB_OFFLINE": "1"}, True), ({"HF_HUB_OFFLINE": "true"}, True), ({"HF_HUB_OFFLINE": "On"}, True),
    ({"HF_HUB_OFFLINE": "YES"}, True), ({"HF_HUB_OFFLINE": " 1"}, False), ({"HF_HUB_OFFLINE": "y"}, False),
    ({"HF_HUB_OFFLINE": "0"}, False), ({"TRANSFORMERS_OFFLINE": "1"}, True), ({"TRANSFORMERS_OFFLINE": "yes"}, True),
    ({"HF_HUB_OFFLINE": "", "TRANSFORMERS_OFFLINE": "1"}, True),
    ({"HF_HUB_OFFLINE": "0", "TRANSFORMERS_OFFLINE": "1"}, False), ({}, False), ({"HF_HUB_OFFLINE": "2"}, False),
]


@pytest.mark.parametrize("env,expected", OFFLINE_CASES)
def test_offline_mode_as_huggingface_hub_reads_it(env, expected):
    from dsv4_launch.adapters.model_files import hf_offline

    assert hf_offline(env) is expected


def _cache_cases(tmp_path):
    home = str(tmp_path / "home")
    return [
        ({"HOME": home}, f"{home}/.cache/huggingface/hub"),
        ({"HOME": home, "HF_HOME": "~/hf"}, f"{home}/hf/hub"),
        ({"HOME": home, "HF_HOME": "$HOME/hf2"}, f"{home}/hf2/hub"),
        ({"HOME": home, "HF_HOME": "${BASE}/hf3", "BASE": "/srv"}, "/srv/hf3/hub"),
        ({"HOME": home, "HF_HOME": "$UNSET_VAR/x"}, "$UNSET_VAR/x/hub"),
        ({"HOME": home, "HF_HUB_CACHE": "~/c1", "HF_HOME": "/ignored"}, f"{home}/c1"),
        ({"HOME": home, "HUGGINGFACE_HUB_CACHE": "$HOME/c2", "HF_HOME": "/ignored"}, f"{home}/c2"),
        ({"HOME": home, "HF_HUB_CACHE": "/c3", "HUGGINGFACE_HUB_CACHE": "/c4"}, "/c3"),
        ({"HOME": home, "XDG_CACHE_HOME": "~/xdg"}, f"{home}/xdg/huggingface/hub"),
        ({"HOME": home, "XDG_CACHE_HOME": "$HOME/xdg2", "HF_HOME": "$HOME/hf4"}, f"{home}/hf4/hub"),
        ({"HOME": home, "HF_HOME": "$V", "V": "~/tilde-in-var"}, f"{home}/tilde-in-var/hub"),
    ]


def test_hub_cache_expands_as_huggingface_hub_does(tmp_path):
    from dsv4_launch.adapters.model_files import hub_cache

    for env, expected in _cache_cases(tmp_path):
        assert hub_cache(env) == expected, env


@pytest.mark.parametrize("var,value", [("HF_HOME", "~/hfhome"), ("HF_HOME", "$HOME/hfhome"),
                                       ("HF_HOME", "${HOME}/hfhome"), ("HF_HUB_CACHE", "~/hfhome/hub"),
                                       ("HUGGINGFACE_HUB_CACHE", "$HOME/hfhome/hub"),
                                       ("XDG_CACHE_HOME", "~/xdgc")])
def test_the_cached_model_is_found_through_an_expanded_variable(tmp_path, var, value):
    """A config.json in the cache a ``~``/``$HOME`` variable names is read (on main the model was
    taken from the known-checkpoint table instead, since the literal path does not exist)."""
    home = tmp_path / "home"
    base = home / ("xdgc/huggingface" if var == "XDG_CACHE_HOME" else "hfhome")
    commit = "0123456789abcdef0123456789abcdef01234567"
    repo = base / "hub" / "models--org--my-v4"
    (repo / "refs").mkdir(parents=True)
    (repo / "refs" / "main").write_text(commit)
    (repo / "snapshots" / commit).mkdir(parents=True)
    (repo / "snapshots" / commit / "config.json").write_text(json.dumps(
        {"architectures": ["DeepseekV4ForCausalLM"], "model_type": "deepseek_v4", "num_attention_heads": 64}))
    rc, out, _ = _plan(["org/my-v4"], env={"HOME": str(home), var: value}, as_json=True,
                       vllm=VllmInstall("0.33.0", True))
    doc = json.loads(out)
    assert doc["model"]["architecture"] == "DeepseekV4ForCausalLM", doc["model"]
    assert "Hugging Face cache" in doc["model"]["source"], doc["model"]


@pytest.mark.parametrize("env", [{"TRANSFORMERS_OFFLINE": "1"}, {"HF_HUB_OFFLINE": "TRUE"}, {"HF_HUB_OFFLINE": "on"}])
def test_offline_weights_are_judged_with_every_spelling(env, monkeypatch):
    """gather reads offline mode through model_files.hf_offline: TRANSFORMERS_OFFLINE counts."""
    from dsv4_launch.adapters import gather

    seen = {}

    def fake_read_weights(directory, local, known):
        seen["local"] = local
        return None

    monkeypatch.setattr(gather, "read_weights", fake_read_weights)
    from types import SimpleNamespace

    gather._weights(SimpleNamespace(model="org/x"), SimpleNamespace(directory=None), env)
    assert seen["local"] is True
    gather._weights(SimpleNamespace(model="org/x"), SimpleNamespace(directory=None), {"HF_HUB_OFFLINE": " 1"})
    assert seen["local"] is False


@pytest.mark.parametrize("vllm", [NEWER, VllmInstall("0.33.0", True)], ids=["0.35.0", "0.33.0"])
def test_a_secret_quoted_by_a_warning_is_masked(vllm):
    """The masking reaches every line, not only argv: a warning built from an unknown option's
    spelling (``--Zqsecret…`` right after --api-key, where vLLM's reading makes it an option)."""
    for as_json in (False, True):
        rc, out, err = _plan([M, "--api-key", "--Zqsecretvalue99", "--port", "1"], vllm=vllm, as_json=as_json)
        assert "Zqsecretvalue99" not in out + err, (out, err)


@pytest.mark.parametrize("text", ["{" * 5000, "[" * 5000, "a: " + "[" * 3000 + "\n", "- " * 2000 + "x\n"])
def test_yaml_nested_past_the_c_loaders_limit_costs_nothing(tmp_path, text, monkeypatch):
    """vLLM's pure-Python reader dies on these (RecursionError); asking it costs ~2 s a time, so
    it is never asked (counted: no call), and the C loader's answer decides."""
    import yaml

    from dsv4_launch.adapters.config_file import load_config_file
    from dsv4_launch.vllm_cli.serve_args import ConfigFileError

    asked = []
    monkeypatch.setattr(yaml, "safe_load", lambda *a, **k: asked.append(a) or pytest.fail("the pure-Python loader"))
    path = tmp_path / "deep.yaml"
    path.write_text(text)
    with pytest.raises(ConfigFileError, match="nested too deeply|not valid YAML"):
        load_config_file(str(path))
    assert asked == []


@pytest.mark.parametrize("spelling", [["--model=~/v4"], ["~/v4"], ["--model", "~/v4"]])
def test_an_unexpanded_tilde_in_the_model_is_not_the_home_directory(tmp_path, spelling):
    """vLLM tests ``Path(model).exists()`` (repo_utils.file_or_path_exists): a literal ``~/v4`` is
    not $HOME/v4 for it, so its config.json is not read here either (main read it)."""
    home = tmp_path / "home"
    (home / "v4").mkdir(parents=True)
    (home / "v4" / "config.json").write_text(json.dumps(
        {"architectures": ["DeepseekV4ForCausalLM"], "model_type": "deepseek_v4", "num_attention_heads": 64}))
    rc, out, _ = _plan(spelling, env={"HOME": str(home)}, as_json=True, vllm=VllmInstall("0.33.0", True))
    doc = json.loads(out)
    assert doc["model"]["architecture"] is None, doc["model"]


def _unknown_credentials(n: int) -> list[str]:
    return [M, *[f"--unk{i}-token=Zqv{i}secret" for i in range(n)]]


def test_thousands_of_unknown_credential_options_are_linear():
    """3,000 unknown credential-named options on an unrecorded release: masked, named in the
    warning, and read by work linear in their number (a per-pair secret search was quadratic:
    4.5 s for 3,000). Counted, not timed (tests/scaling.py): the lines of dsv4-launch's own code
    that run for 200 and for 800 (a count needs no large input). Time would measure argparse
    too, whose own cost is quadratic in the number of options before Python 3.13 (vLLM's parser
    pays it as well)."""
    import dsv4_launch

    table = load_table("0.35.0")
    args = read_serve_args(_unknown_credentials(3000), table)
    assert len(args.unknown_options) == 3000 and len(args.secrets.spans) == 3000
    assert_linear_count(dsv4_launch, _unknown_credentials, lambda argv: read_serve_args(argv, table), 800 // SCALE)

"""A ``--config`` file's secrets and the environment's, in every channel, also where no parse has
run (issue 27 item 3's remainder, a hostile pass):

* the file's credential values when vLLM's YAML reader fails on the file itself (``api_key:
  !!int SECRET``: its message quotes the value);
* the credentials of URLs inside the file's values (``model: https://user:PASS@host/…``), also a
  password a line-level pattern cannot delimit (blanks, ``@``, ``#`` in it);
* a usage error (read before the pipeline) that quotes the environment's credentials
  (``HF_TOKEN``, ``VLLM_API_KEY``) or the ``--config`` file's: the same redactor as the pipeline's;
* a weak value (``api_key: "ab"``, ``hf_token: 12345``, ``true``) is masked beside its key, never
  in every line.

Faked at the boundaries only: NVML (the GPU reader), the vLLM lookup, doctor's runtime reader,
dsv4-serve's hand-over (recorded, vLLM is not run). The config files are real files read by the
real reader.
"""

from __future__ import annotations

import json
import re

import pytest

from dsv4_launch.commands.cli import run_command
from dsv4_launch.commands.serve import run_serve
from tests.planning import make_context

M = "deepseek-ai/DeepSeek-V4-Flash"
S = "Zq9SECRETzz"
COMMANDS = ["serve", "plan", "plan --json", "doctor", "doctor --json"]


@pytest.fixture(autouse=True)
def _wide(monkeypatch):
    monkeypatch.setenv("COLUMNS", "1000")  # Rich wraps at the console's width


def _run(command: str, args: list[str], env: dict[str, str] | None = None) -> tuple[int, str, object]:
    name, *own = command.split()
    env = {"DSV4_LAUNCH_GPU_CAPABILITY": "9.0", "HOME": "/nonexistent", "NO_COLOR": "1", **(env or {})}
    ctx = make_context(env=env, read_runtime=lambda python, shapes: (None, "not inspected"),
                       hand_over=lambda argv, vllm, env: 0)
    status = run_serve([*own, *args], ctx) if name == "serve" else run_command(name, [*own, *args], ctx)
    text = re.sub(r"\x1b\[[0-9;]*m", "", ctx.stdout.getvalue() + ctx.stderr.getvalue())
    if "--json" in own:
        json.loads(ctx.stdout.getvalue())
    assert "Traceback" not in text
    return status, text, ctx


# --- vLLM's YAML reader fails on the file: its message quotes a credential's value ---------------

@pytest.mark.parametrize("command", COMMANDS)
@pytest.mark.parametrize("text", [
    f"api_key: !!int {S}\n",  # int(): "invalid literal for int() with base 10: 'Zq9…'"
    f"hf_overrides:\n  nested:\n    hf_token: !!float {S}\n",  # float(): "could not convert string to float: 'Zq9…'"
    f"model: {M}\nkv_transfer_config: {{kv_connector: x, auth_token: !!int {S}}}\n",
    f"db_password:\n  - !!int {S}\n",
    # PyYAML quotes the value as its constructor changed it: without "_", lower-cased, a part of it
    "api_key: !!int Zq9_SECRET_zz\n",
    "api_key: !!int 0xZq9SECRETzz\n",
    "api_key: !!int 12:Zq9SECRETzz\n",
    "api_key: !!float Zq9_SECRETzz\n",
])
def test_a_credential_quoted_by_the_yaml_reader_s_error_is_masked(tmp_path, command, text):
    config = tmp_path / "serve.yaml"
    config.write_text(text)
    status, shown, _ = _run(command, [M, "--config", str(config)])
    assert status == 2 and "YAML reader fails on it" in shown, shown
    assert "zq9secret" not in shown.lower().replace("_", ""), shown
    assert "***" in shown


def test_a_yaml_error_quoting_a_value_of_no_credential_still_says_it(tmp_path):
    # the message is kept: only the credentials' values are masked
    config = tmp_path / "serve.yaml"
    config.write_text("max_model_len: !!int lots\napi_key: !!str fine-key-1\n")
    status, shown, _ = _run("plan", [M, "--config", str(config)])
    assert status == 2 and "'lots'" in shown, shown


# --- URL credentials inside the file's values --------------------------------------------------

ODD = "Zq9@SEC RET#x"  # a password no line-level pattern can delimit: "@", a blank, "#"


@pytest.mark.parametrize("command", COMMANDS)
@pytest.mark.parametrize("where", ["model", "otlp endpoint in a list", "nested in hf_overrides"])
def test_a_url_s_credentials_in_the_config_file_are_masked(tmp_path, command, where):
    url = f"https://user:{ODD}@example.com/m"
    text = {
        "model": f'model: "{url}"\n',
        "otlp endpoint in a list": f'model: {M}\nmax_model_len: "{url}"\n',  # a rule quotes the value
        "nested in hf_overrides": f'model: {M}\nhf_overrides: {{a: ["{url}"]}}\nmax_model_len: "{url}"\n',
    }[where]
    config = tmp_path / "serve.yaml"
    config.write_text(text)
    status, shown, _ = _run(command, ["--config", str(config)])
    for part in ("SEC", "RET#x", "Zq9"):
        assert part not in shown, shown
    assert "***" in shown, shown


# --- a usage error, read before the pipeline: the same redactor --------------------------------

ENV_CREDENTIALS = {"HF_TOKEN": S, "VLLM_API_KEY": S, "MY_DB_PASSWORD": S}


@pytest.mark.parametrize("variable", list(ENV_CREDENTIALS))
@pytest.mark.parametrize("as_json", [False, True])
@pytest.mark.parametrize("args", [
    ["plan", "--gpu-memory", S, M],  # our own option's bad value, quoted
    ["fit", "--gpus", S],
    ["doctor", "--gpu-memory=" + S],
    ["plan", "--vllm-version", S, M],
])
def test_a_usage_error_masks_the_environment_s_credentials(variable, as_json, args):
    command, *rest = args
    status, shown, ctx = _run(command + (" --json" if as_json else ""), rest, {variable: S})
    assert status == 2, shown
    assert S not in shown, shown
    assert "***" in shown, shown


def test_a_usage_error_keeps_a_value_that_is_no_credential_of_the_environment():
    # PWD, a path, a number: not credentials; the value quoted stays as the user wrote it
    status, shown, _ = _run("plan", ["--gpu-memory", "lots", M], {"PWD": "lots", "HF_TOKEN_PATH": "lots"})
    assert status == 2 and "lots" in shown, shown


@pytest.mark.parametrize("as_json", [False, True])
def test_a_usage_error_masks_the_config_file_s_credentials(tmp_path, as_json):
    config = tmp_path / "serve.yaml"
    config.write_text(f"api_key: {S}\nhf_overrides: {{token: Zq8OTHERzz}}\n")
    for quoted in (S, "Zq8OTHERzz"):
        status, shown, _ = _run("plan" + (" --json" if as_json else ""),
                                ["--gpu-memory", quoted, M, "--config", str(config)])
        assert status == 2, shown
        assert quoted not in shown, shown


def test_a_near_miss_warning_masks_the_environment_s_credentials():
    # --gpu-memry: a near miss of our own option, said and handed over; its value is the token
    status, shown, _ = _run("plan", ["--gpu-memry", S, M], {"VLLM_API_KEY": S})
    assert S not in shown, shown


# --- weak values: masked beside their key, never everywhere ------------------------------------

@pytest.mark.parametrize("command", COMMANDS)
@pytest.mark.parametrize(("weak", "written"), [("ab", '"ab"'), ("12345", "12345"), ("true", '"true"')])
def test_a_weak_config_credential_is_masked_beside_its_key_only(tmp_path, command, weak, written):
    config = tmp_path / "serve.yaml"
    config.write_text(f"api_key: {written}\nhf_token: {written}\n")
    status, shown, _ = _run(command, [M, "--config", str(config), "--max-model-len", "12345"])
    if command != "doctor":  # doctor's text shows no length
        assert "12345" in shown  # --max-model-len's own value, not the credential: shown as given
    for line in shown.splitlines():
        assert not re.search(rf"(api.key|hf.token)\W+{weak}\b", line, re.I), line


# --- a secret option the file spells as vLLM's parser reads it (an abbreviation) ---------------

@pytest.mark.parametrize("command", COMMANDS)
@pytest.mark.parametrize("text", [
    f"api-k: {S}\n",  # argparse gives --api-k to --api-key: the file's value is the API key
    f"api_ke: [{S}, Zq8OTHERzz]\n",
    f"hf-tok: {S}\n",
    f"waterm: {S}\n",
])
def test_a_secret_option_the_file_abbreviates_is_masked_where_a_message_quotes_it(tmp_path, command, text):
    config = tmp_path / "serve.yaml"
    config.write_text(text)
    status, shown, _ = _run(command, [M, "--config", str(config), "--max-model-len", S])
    assert S not in shown, shown
    if command != "doctor":  # doctor's text quotes neither
        assert "***" in shown, shown

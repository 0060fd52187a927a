"""The one redactor, applied by ``render`` (issue 27 item 3): for every command, every output mode
(plain lines, Rich styling, JSON log lines on stderr, the ``--json`` document) and every channel
(standard output, the lines on standard error, the one error line of bad input), a secret given
to the run never appears — generated over commands × modes × the ways a secret arrives (vLLM's
``--api-key``, a URL's password, a token in ``--hf-overrides`` and in another JSON option, a
credential in the environment), each also quoted by another message (``--max-model-len S``,
whose rule quotes the value), so the test fails if any line is printed unmasked.

A command's text never sees the stream (``render.Out``): the class is closed by construction,
and this test is its proof over every command. Faked at the boundaries only: NVML (the GPU
reader), the vLLM lookup, doctor's runtime reader, dsv4-serve's hand-over (recorded, vLLM not
run), check's HTTP request (a server that echoes the key back). explain reads a log file written
to a temporary directory.
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

# How a secret reaches the run: (argv, env).
KINDS = {
    "api-key": (["--api-key", S], {}),
    "url password": (["--otlp-traces-endpoint", f"https://user:{S}@otel.example:4317"], {}),
    "url query token": (["--otlp-traces-endpoint", f"https://otel.example:4317/v1?access_token={S}"], {}),
    "hf-overrides token": (["--hf-overrides", json.dumps({"hf_token": S})], {}),
    "json option token": (["--speculative-config", json.dumps({"method": "mtp", "hf_token": S})], {}),
    "env credential": ([], {"HF_TOKEN": S}),
}
ECHO = ["--max-model-len", S]  # a rule's message quotes the value: it must show as ***
# Output modes: the environment that selects them.
MODES = {
    "plain": {"NO_COLOR": "1"},
    "styled": {"FORCE_COLOR": "1"},
    "json log lines": {"DSV4_LAUNCH_LOG_FORMAT": "json", "NO_COLOR": "1"},
}


@pytest.fixture(autouse=True)
def _wide(monkeypatch):
    # Rich wraps at the console's width: a secret wrapped in two would escape the search
    monkeypatch.setenv("COLUMNS", "1000")


def _runtime(python, shapes):
    return None, "not inspected"


def _env(kind: str, mode: str) -> dict[str, str]:
    return {"DSV4_LAUNCH_GPU_CAPABILITY": "9.0", "HOME": "/nonexistent", **MODES[mode], **KINDS[kind][1]}


def _shown(ctx) -> str:
    return re.sub(r"\x1b\[[0-9;]*m", "", ctx.stdout.getvalue() + ctx.stderr.getvalue())


def _run(name: str, args: list[str], env: dict[str, str], **fields) -> tuple[int, str, object]:
    ctx = make_context(env=env, read_runtime=_runtime, hand_over=lambda argv, vllm, env: 0, **fields)
    status = run_serve(args, ctx) if name == "serve" else run_command(name, args, ctx)
    return status, _shown(ctx), ctx


def _assert_masked(text: str, *, echoed: bool = True) -> None:
    assert S not in text, text
    assert "Traceback" not in text
    if echoed:
        assert "***" in text, text  # the message that quoted it is there, masked


@pytest.mark.parametrize("mode", list(MODES))
@pytest.mark.parametrize("kind", list(KINDS))
@pytest.mark.parametrize("command", ["serve", "plan", "plan --json", "doctor", "doctor --json", "fit", "fit --json"])
def test_no_command_prints_a_secret_in_any_mode(command, kind, mode):
    name, *own = command.split()
    status, text, ctx = _run(name, [*own, M, *KINDS[kind][0], *ECHO], _env(kind, mode))
    if own:
        json.loads(ctx.stdout.getvalue())
    _assert_masked(text, echoed=name != "fit")  # fit prints no rule's message
    if name != "fit":
        assert "--max-model-len ***" in text


@pytest.mark.parametrize("mode", list(MODES))
@pytest.mark.parametrize("kind", list(KINDS))
@pytest.mark.parametrize("command", ["plan", "doctor", "fit"])
@pytest.mark.parametrize("as_json", [False, True])
def test_a_usage_error_that_quotes_the_secret_masks_it(command, kind, mode, as_json):
    # our own option's bad value is quoted in the one error line; the same text is the secret
    own = ["--json"] if as_json else []
    status, text, ctx = _run(command, [*own, "--gpu-memory", S, M, *KINDS[kind][0]], _env(kind, mode))
    assert status == 2
    if as_json:
        assert json.loads(ctx.stdout.getvalue())["error"]
    # read before the pipeline, masked by the pipeline's masks: the environment's credentials too
    _assert_masked(text)


LOG_ARGS = {
    "api-key": {"api_key": [S]},
    "url password": {"otlp_traces_endpoint": f"https://user:{S}@otel.example:4317"},
    "hf-overrides token": {"hf_overrides": {"hf_token": S}},
}


@pytest.mark.parametrize("mode", list(MODES))
@pytest.mark.parametrize("kind", list(LOG_ARGS))
@pytest.mark.parametrize("as_json", [False, True])
def test_explain_never_prints_a_secret_of_the_logged_arguments(tmp_path, kind, mode, as_json):
    args = {"model_tag": M, "model": M, **LOG_ARGS[kind], "max_model_len": 4096}
    log = tmp_path / "vllm.log"
    log.write_text("\n".join([
        "INFO 12-01 07:00:00 [__init__.py:100] vLLM API server version 0.33.0",
        f"INFO 12-01 07:00:01 [api_utils.py:273] non-default args: {args!r}",
        f"ERROR 12-01 07:00:02 [core.py:700] ValueError: could not read {S} from the endpoint",
        "RuntimeError: Engine core initialization failed. See root cause above.",
    ]) + "\n")
    status, text, ctx = _run("explain", [*(["--json"] if as_json else []), str(log)], _env(kind, mode))
    if as_json:
        json.loads(ctx.stdout.getvalue())
    _assert_masked(text)


@pytest.mark.parametrize("mode", list(MODES))
@pytest.mark.parametrize("kind", ["api key from the environment", "url password", "a credential of the environment"])
@pytest.mark.parametrize("as_json", [False, True])
def test_check_never_prints_the_key_a_server_echoes(kind, mode, as_json):
    from dsv4_launch.core.check import judge

    def fetch(method, base, path, **kwargs):  # the server: HTTP 500 quoting the credential
        return judge.Exchange(500, f"invalid credential {S} for {path}".encode(), 0.01)

    # the last: not sent (no --api-key-env), but the server beside us reads the same VLLM_API_KEY
    env = {**MODES[mode], "K": S} if kind != "a credential of the environment" else {**MODES[mode], "VLLM_API_KEY": S}
    url = "http://127.0.0.1:9" if not kind.startswith("url") else f"http://user:{S}@127.0.0.1:9"
    args = [*(["--json"] if as_json else []), *(["--api-key-env", "K"] if "K" in env else []), url]
    status, text, ctx = _run("check", args, env, fetch=fetch, http_client="stdlib")
    if as_json:
        json.loads(ctx.stdout.getvalue())
    _assert_masked(text)


@pytest.mark.parametrize("order", ["url first", "url last"])
@pytest.mark.parametrize("as_json", [False, True])
def test_check_s_bad_input_line_masks_the_url_s_password(order, as_json):
    # a bad --timeout is quoted in the line; the same text is the URL's password
    args = ["--timeout", S, f"http://user:{S}@127.0.0.1:9"]
    if order == "url first":
        args = [args[2], *args[:2]]
    status, text, ctx = _run("check", [*(["--json"] if as_json else []), *args], {"NO_COLOR": "1"})
    assert status == 2
    _assert_masked(text)


@pytest.mark.parametrize("args", [
    ["--api-key-env", "K", "--timeout", S],  # our own option's bad value: the key --api-key-env names
    ["--api-key-env", "K", "--json", "--timeout=" + S],
    ["--api-key-env", "K", "ftp://user@" + S],  # check's bad input: the URL quoted
])
def test_check_s_usage_error_masks_the_key_its_variable_holds(args):
    status, text, ctx = _run("check", args, {"NO_COLOR": "1", "K": S})
    assert status == 2
    assert S not in text, text


@pytest.mark.parametrize(("name", "args"), [
    ("explain", ["/nonexistent/" + S]),  # explain's bad input quotes the file's name
    ("explain", ["a", S]),
    ("completion", [S]),
    ("check", ["http://127.0.0.1:9", S]),
    ("check", [f"ftp://{S}"]),
])
def test_a_command_s_bad_input_masks_the_environment_s_credentials(name, args):
    status, text, ctx = _run(name, args, {"NO_COLOR": "1", "HF_TOKEN": S})
    assert status == 2
    assert S not in text, text


def test_completion_s_error_line_masks_a_url_s_password():
    status, text, ctx = _run("completion", ["bash", "zsh", f"https://user:{S}@example.com/x"], {"NO_COLOR": "1"})
    assert status == 2
    _assert_masked(text)


def test_a_command_s_text_never_gets_the_stream():
    # the contract that closes the class: Result.text is handed render's Out, which masks
    import io

    from dsv4_launch.output.redact import Redactor
    from dsv4_launch.output.render import Out, Result, render

    seen = []

    def text(out):
        seen.append(out)
        out.lines.info(f"quoting {S}", label="note")
        out.table(f"title {S}", ["a"], [[S]], [None], [f"footer {S}"])
        out.verbatim(f"raw {S}\n")

    stdout, stderr = io.StringIO(), io.StringIO()
    render(Result(0, "x", text=text, scrub=Redactor([S]), error=f"error {S}"), as_json=False, stdout=stdout,
           stderr=stderr, env={"NO_COLOR": "1"})
    assert isinstance(seen[0], Out) and not hasattr(seen[0], "write")
    shown = stdout.getvalue() + stderr.getvalue()
    assert S not in shown and shown.count("***") == 6, shown


@pytest.mark.parametrize("as_json", [False, True])
@pytest.mark.parametrize(("weak", "echo"), [("4096", ["--max-model-len", "4096"]), ("true", ["--enforce-eager"]),
                                            ("8", ["-tp", "8"])])
def test_a_weak_config_credential_does_not_mask_the_same_text_elsewhere(tmp_path, weak, echo, as_json):
    # {"password": "true"} in a --config file: "true" is masked in its key's place, not in every line
    config = tmp_path / "serve.yaml"
    config.write_text(f'password: "{weak}"\nhf_overrides:\n  token: {weak}\napi_key: Zq9SECRETzz\n')
    status, text, ctx = _run("plan", [*(["--json"] if as_json else []), M, "--config", str(config), *echo],
                             {"DSV4_LAUNCH_GPU_CAPABILITY": "9.0", "NO_COLOR": "1", "HOME": "/nonexistent"})
    assert S not in text
    shown = json.loads(ctx.stdout.getvalue())["argv"] if as_json else text.split("command: ", 1)[1].split()
    assert " ".join(echo) in " ".join(shown), shown

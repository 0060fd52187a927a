"""One redactor per run (issue 27 item 3, issue 28's attack): built in ``pipeline.prepare`` and
carried on ``Prepared``, it masks every channel of every command — text on stdout, the JSON
document's values, the lines on stderr — also where a secret's text appears in another message
(doctor built its own scrubber without the secrets and printed ``--api-key``'s value in three
fields when ``--max-model-len`` had the same text).

Faked: NVML (the GPU reader), the vLLM lookup (``VllmInstall``), doctor's runtime reader and
dsv4-serve's hand-over (recorded, vLLM is not run). Everything else is the real pipeline."""

from __future__ import annotations

import json

import pytest

from dsv4_launch.commands.doctor import run_doctor
from dsv4_launch.commands.fit import run_fit
from dsv4_launch.commands.pipeline import PLAN, prepare
from dsv4_launch.commands.plan import run_plan
from dsv4_launch.commands.serve import run_serve
from dsv4_launch.output.redact import NO_REDACT, Redactor
from tests.planning import make_context

M = "deepseek-ai/DeepSeek-V4-Flash"
S = "Zq9SECRETzz"  # the secret: also given as --max-model-len, whose rule quotes the value

# Every way a secret reaches the arguments (each also quoted by another message).
SOURCES = {
    "api-key": ["--api-key", S],
    "api-key=": ["--api-key=" + S],
    "hf-token": ["--hf-token", S],
    "unknown credential option": ["--my-db-pass", S],
    "dotted sub-key": ["--hf-overrides.hf_token", S],
    "json speculative-config": ["--speculative-config", json.dumps({"method": "mtp", "hf_token": S})],
    "json hf-overrides nested": ["--hf-overrides", json.dumps({"a": {"b": {"api_key": [S]}}})],
    "json compilation-config=": ["--compilation-config=" + json.dumps({"password": S})],
    "json chat-template kwargs": ["--default-chat-template-kwargs", json.dumps({"auth": {"token": S}})],
    "url password": ["--otlp-traces-endpoint", f"https://user:{S}@otel.example:4317"],
}
# Where the same text appears again: a rule's message (max-model-len-invalid quotes the value;
# fit prints no rule's message, only that nothing of the secret shows).
ECHOES = {
    "max-model-len": ["--max-model-len", S],
    "served name": ["--max-model-len", S, "--served-model-name", S],
}


def _env():
    return {"DSV4_LAUNCH_GPU_CAPABILITY": "9.0", "HOME": "/nonexistent"}


def _runtime(python, shapes):
    return None, "not inspected"


def _commands():
    def serve(argv):
        ctx = make_context(env=_env(), hand_over=lambda argv, vllm, env: 0)
        status = run_serve(argv, ctx)
        return status, ctx.stdout.getvalue(), ctx.stderr.getvalue()

    def with_json(run, **extra):
        def command(argv, as_json):
            ctx = make_context(env=_env(), read_runtime=_runtime)
            status = run(argv, as_json=as_json, ctx=ctx, **extra)
            out = ctx.stdout.getvalue()
            if as_json:
                json.loads(out)
            return status, out, ctx.stderr.getvalue()
        return command

    plan, doctor, fit = with_json(run_plan), with_json(run_doctor), with_json(run_fit)
    return {
        "serve": serve,
        "plan text": lambda argv: plan(argv, False), "plan json": lambda argv: plan(argv, True),
        "doctor text": lambda argv: doctor(argv, False), "doctor json": lambda argv: doctor(argv, True),
        "fit text": lambda argv: fit(argv, False), "fit json": lambda argv: fit(argv, True),
    }


COMMANDS = _commands()


@pytest.mark.parametrize("echo", list(ECHOES))
@pytest.mark.parametrize("source", list(SOURCES))
@pytest.mark.parametrize("command", list(COMMANDS))
def test_no_channel_of_any_command_prints_a_secret_another_message_quotes(command, source, echo):
    argv = [M, *SOURCES[source], *ECHOES[echo]]
    status, out, err = COMMANDS[command](argv)
    assert S not in out and S not in err, (out, err)
    if not command.startswith("fit") and source != "unknown credential option":  # that one: vLLM 0.33.0 rejects it
        assert "--max-model-len ***" in out + err  # the message that quoted it is there, masked
    assert "Traceback" not in err


def test_the_doctor_leak_of_review_4():
    # review 4 §3: doctor --json printed the value in checks[].detail, plan.warnings, plan.findings
    ctx = make_context(env=_env(), read_runtime=_runtime)
    run_doctor([M, "--max-model-len", S, "--api-key", S], as_json=True, ctx=ctx)
    document = json.loads(ctx.stdout.getvalue())
    assert S not in json.dumps(document)
    details = [c["detail"] for c in document["checks"]]
    assert any("--max-model-len ***" in d for d in details)
    assert any("--max-model-len ***" in w for w in document["plan"]["warnings"])
    assert document["plan"]["argv"][-2:] == ["--api-key", "***"]


def test_the_redactor_is_built_once_in_prepare_from_the_argv_handed_over():
    prepared = prepare([M, "--api-key", S, "--max-model-len", "x"], _env(), PLAN)
    assert isinstance(prepared.redact, Redactor) and prepared.redact is not NO_REDACT
    assert prepared.redact(f"a line quoting {S}") == "a line quoting ***"
    assert prepared.redact.shown_argv[1:3] == ["--api-key", "***"]


def test_a_config_file_s_credential_is_masked_where_another_message_quotes_it(tmp_path):
    config = tmp_path / "serve.yaml"
    config.write_text(f"api_key: {S}\nhf_overrides:\n  nested:\n    hf_token: Zq8OTHERzz\nmax_model_len: {S}\n")
    for as_json in (False, True):
        ctx = make_context(env=_env())
        run_plan([M, "--config", str(config), "--block-size", "Zq8OTHERzz"], as_json=as_json, ctx=ctx)
        text = ctx.stdout.getvalue() + ctx.stderr.getvalue()
        assert S not in text and "Zq8OTHERzz" not in text, text
        assert "***" in text


@pytest.mark.parametrize("argv", [
    [M, "--speculative-config", '{"hf_token": "Zq9SECRETzz"'],  # not JSON: vLLM rejects it
    [M, "--hf-overrides", "{'api_key': 'Zq9SECRETzz'}"],  # Python's quotes: not JSON either
    [M, "--hf-overrides={\"x\": 1, \"token\": \"Zq9SECRETzz\"} trailing"],
])
def test_a_credential_in_json_vllm_rejects_is_masked_in_its_error_line(argv):
    for as_json in (False, True):
        ctx = make_context(env=_env())
        run_plan(argv, as_json=as_json, ctx=ctx)
        text = ctx.stdout.getvalue() + ctx.stderr.getvalue()
        assert S not in text, text


@pytest.mark.parametrize(("value", "kept"), [
    ('{"method": "mtp", "num_speculative_tokens": 2}', '{"method": "mtp", "num_speculative_tokens": 2}'),
    ('{"token_ids": [1, 2], "max_tokens": 8}', '{"token_ids": [1, 2], "max_tokens": 8}'),
    ('{"hf_token": "Zq9SECRETzz", "method": "mtp"}', '{"hf_token": "***", "method": "mtp"}'),
    ('{"a": {"password": 12345678}}', '{"a": {"password": ***}}'),
])
def test_the_argv_shown_masks_only_the_credential_values_of_a_json_value(value, kept):
    prepared = prepare([M, "--speculative-config", value], _env(), PLAN)
    assert prepared.redact.shown_argv[2] == kept


def test_a_secret_cut_short_by_an_excerpt_is_masked():
    redact = Redactor(["sk-live-Zq9abcdefghijklmnop"])
    assert redact("server said: invalid key sk-live-Zq9abcd…") == "server said: invalid key ***…"
    assert redact("a line… with sk-l… cut") == "a line… with ***… cut"  # 4 characters and more
    assert redact("a line… with sk-… cut") == "a line… with sk-… cut"  # 3 give nothing away
    assert redact("no cut: sk-live-Zq9abcdefghijklmnop") == "no cut: ***"


# --- check: a server that echoes the key back; what the judge quotes is cut ---------------------

KEY = "sk-live-Zq7a9c1e5b2d4680fedcba98"


def _echoing(body_for):
    """A stand-in for one HTTP request (the boundary check talks through): /health answers HTTP
    500 with the body ``body_for(path)`` gives."""
    from dsv4_launch.core.check import judge

    def fetch(method, base, path, **kwargs):
        body, truncated = body_for(path)
        return judge.Exchange(500, body, 0.01, truncated=truncated)
    return fetch


def _check(fetch, *, as_json):
    import io

    from dsv4_launch.commands.cli import run_command
    from dsv4_launch.commands.context import Context

    out, err = io.StringIO(), io.StringIO()
    args = ["--api-key-env", "K", "http://127.0.0.1:9"] + (["--json"] if as_json else [])
    run_command("check", args, ctx=Context(env={"K": KEY}, stdout=out, stderr=err, fetch=fetch, http_client="stdlib"))
    return out.getvalue() + err.getvalue()


# Where the echoed key stands: across the 300-character cut of an error message, across it in a
# plain body, in \u-escaped JSON, at the end of a body the client cut at its size limit.
@pytest.mark.parametrize("offset", [280, 285, 290, 295, 299, 150, 0])
@pytest.mark.parametrize("shape", ["json message", "json string error", "plain", "escaped", "cut by the client"])
@pytest.mark.parametrize("as_json", [False, True])
def test_check_never_prints_part_of_a_key_the_server_echoes(offset, shape, as_json):
    pad = "x" * offset + " "
    escaped = "".join(f"\\u{ord(c):04x}" for c in KEY)
    bodies = {
        "json message": (json.dumps({"error": {"message": pad + "invalid key " + KEY + " rejected"}}).encode(), False),
        "json string error": (json.dumps({"error": pad + KEY}).encode(), False),
        "plain": ((pad + "Bearer " + KEY + " is not valid").encode(), False),
        "escaped": (('{"error": {"message": "' + pad + escaped + '"}}').encode(), False),
        "cut by the client": ((pad + "Bearer " + KEY[:offset % 17 + 5]).encode(), True),
    }
    text = _check(_echoing(lambda path: bodies[shape]), as_json=as_json)
    for n in range(5, len(KEY) + 1):  # no piece of the key's start of 5 characters or more
        assert KEY[:n] not in text, (n, text)
    assert KEY[-8:] not in text


@pytest.mark.parametrize("at", range(140, 160))
def test_a_secret_cut_by_clip_leaves_no_piece_of_its_start(at):
    # outside text is cut with core/credentials.clip (exceptions' messages, answers): the cut is
    # marked, and the redactor masks the secret's start right before the mark
    from dsv4_launch.core.credentials import clip

    shown = Redactor([KEY])(clip("x" * at + " " + KEY + " more", 160))
    assert not any(KEY[:n] in shown for n in range(5, len(KEY) + 1)), shown

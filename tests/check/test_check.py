"""``dsv4-launch check`` against a real HTTP server on 127.0.0.1 that replays DeepSeek-V4-shaped
OpenAI answers (``tests/fakes/replay_server.py``).

Faked: the server behind the socket (the model and vLLM's API server: its answers follow vLLM's
code, cited there). Real: the sockets, HTTP, and the client — the standard library's
``http.client`` here; httpx where it is importable (``client`` fixture; vLLM brings httpx, and
``tests/vllm_real/test_check_httpx.py`` runs these same tests with it in CI's vLLM venvs).
Every address is 127.0.0.1.
"""

from __future__ import annotations

import io
import json
import subprocess
import sys
import time

import pytest

from dsv4_launch.commands import exit_codes
from dsv4_launch.commands.check import DEFAULT_URL, url_of
from dsv4_launch.commands.cli import run_command
from dsv4_launch.commands.context import Context
from dsv4_launch.commands.own_options import UsageError, load
from dsv4_launch.commands.own_options import parse as parse_options
from dsv4_launch.core.check import judge as sc
from tests.conftest import clean_env
from tests.fakes.replay_server import BOS, COUNT, SHAPES, DeadPort, ReplayServer

KEY = "sk-replay-7f3a9c1e5b2d4680"  # a key that must never be printed
BROKEN = {  # shape -> the finding's code that names it
    "bos-only": "special-tokens-only",
    "bos-text": "special-tokens-only",
    "repeated-token": "repeated-token",
    "repeated-text": "repeated-token",
    "empty": "empty-output",
    "dsml-in-content": "markup-in-content",
    "v3-markup-in-content": "markup-in-content",
    "function-calls-in-content": "markup-in-content",
    "think-in-content": "reasoning-in-content",
    "answer-in-reasoning": "answer-in-reasoning",
    "answer-in-reasoning-content": "answer-in-reasoning",
    "wrong-answer": "wrong-answer",
    "wrong-count": "wrong-answer",
}


def _has_httpx() -> bool:
    import importlib.util

    return importlib.util.find_spec("httpx") is not None


# httpx only where it is installed (one skip below says when it is not, rather than 31): CI's
# vLLM venvs run these tests with httpx (tests/vllm_real/test_check_httpx.py).
@pytest.fixture(params=["stdlib", "httpx"] if _has_httpx() else ["stdlib"])
def client(request):
    return request.param


def check(*args, client="stdlib", env=None, fetch=None):
    """(exit status, stdout, stderr) of ``dsv4-launch check ARGS``, in this process."""
    out, err = io.StringIO(), io.StringIO()
    status = run_command("check", list(args),
                         ctx=Context(env={} if env is None else env, stdout=out, stderr=err, http_client=client,
                                               fetch=fetch))
    return status, out.getvalue(), err.getvalue()


class Requests:
    """The real HTTP client (adapters/http_client.request), each request's path, the time it was
    given (``timeout``) and what came of it noted."""

    def __init__(self) -> None:
        self.made: list[tuple[str, float, str | None]] = []  # (path, timeout given, kind of failure or None)

    def __call__(self, method, base, path, **kw):
        from dsv4_launch.adapters.http_client import request

        answer = request(method, base, path, **kw)
        self.made.append((path, kw["timeout"], answer.kind))
        return answer


def check_json(*args, **kw):
    status, out, err = check(*args, "--json", **kw)
    doc = json.loads(out)
    assert doc["schema_version"] == 1 and doc["exit_status"] == status
    return status, doc, err


def codes(doc) -> dict[str, str]:
    return {f["code"]: f["level"] for f in doc["findings"]}


# --- healthy, and what is asked ---------------------------------------------------------------

def test_healthy_server_passes_text_and_json(client):
    with ReplayServer("healthy") as s:
        status, out, err = check(s.url, "--timeout", "10", client=client)
        assert status == exit_codes.OK, out + err
        assert "ok: /health: 200" in out
        assert "ok: /v1/models: deepseek-v4-flash (max_model_len 65536)" in out
        assert f"ok: chat: '{COUNT}' (16 tokens in " in out and "tokens/s" in out
        assert 'ok: tool call: get_weather({"city": "Paris"})' in out
        assert out.splitlines()[-1].startswith("healthy: 4 requests answered")
        assert err == ""
        status, doc, _ = check_json(s.url, client=client)
    assert status == 0 and doc["status"] == "healthy" and doc["model"] == "deepseek-v4-flash"
    assert doc["client"] == client
    assert [st["step"] for st in doc["steps"]] == ["health", "models", "chat", "tools"]
    assert all(st["http_status"] == 200 for st in doc["steps"])
    assert doc["chat"]["content"] == COUNT and doc["chat"]["completion_tokens"] == 16
    assert doc["chat"]["tokens_per_second"] > 0
    assert doc["tool_call"]["tool_calls"] == [{"name": "get_weather", "arguments": '{"city": "Paris"}'}]


def test_the_probe_is_short_deterministic_and_asks_only_the_given_server(client):
    with ReplayServer("healthy") as s:
        assert check(s.url, client=client)[0] == 0
        seen = list(s.requests)
    assert [(r["method"], r["path"]) for r in seen] == [
        ("GET", "/health"), ("GET", "/v1/models"), ("POST", "/v1/chat/completions"), ("POST", "/v1/chat/completions")]
    chat, tools = seen[2]["body"], seen[3]["body"]
    assert chat["temperature"] == 0 and chat["max_tokens"] == 16 and chat["model"] == "deepseek-v4-flash"
    assert chat["chat_template_kwargs"] == {"thinking": False} and chat["return_token_ids"] is True
    assert "tools" not in chat
    assert tools["tool_choice"] == "auto" and [t["function"]["name"] for t in tools["tools"]] == ["get_weather"]
    assert all(r["headers"]["Host"] == f"127.0.0.1:{s.port}" for r in seen)
    assert all("Authorization" not in r["headers"] for r in seen)  # no key given, none sent


def test_no_tool_parser_is_said_not_failed(client):
    with ReplayServer("no-tool-parser") as s:
        status, out, _ = check(s.url, client=client)
        assert status == 0, out
        assert "note: tool call: the server has no tool parser" in out
        assert "--tool-call-parser deepseek_v4" in out
        status, doc, _ = check_json(s.url, client=client)
    assert status == 0 and codes(doc)["no-tool-parser"] == "note"


def test_thinking_that_ignores_the_request_is_a_warning(client):
    with ReplayServer("thinking-ignored") as s:
        status, out, _ = check(s.url, client=client)
    assert status == 0
    assert "warning: chat: all 16 tokens went to `reasoning`" in out


# --- each broken shape ------------------------------------------------------------------------

@pytest.mark.parametrize("shape", sorted(BROKEN))
def test_each_broken_shape_is_named(shape, client):
    with ReplayServer(shape) as s:
        status, out, _ = check(s.url, client=client)
        jstatus, doc, _ = check_json(s.url, client=client)
    assert status == jstatus == exit_codes.CHECK_PROBLEM, out
    assert codes(doc)[BROKEN[shape]] == "fail"
    assert doc["status"] == "problem"
    fail = [f for f in doc["findings"] if f["level"] == "fail"]
    assert len(fail) == 1, fail  # the shape, and nothing else
    assert f"problem: {fail[0]['text']}" in out
    assert out.splitlines()[-1] == "problem: 1 problem found (exit 1)"


def test_every_broken_shape_of_the_replay_is_tested():
    assert set(BROKEN) | {"healthy", "no-tool-parser", "thinking-ignored"} == set(SHAPES)


def test_the_messages_name_the_fix_and_reference():
    with ReplayServer("dsml-in-content") as s:
        _, out, _ = check(s.url)
    assert "--enable-auto-tool-choice --tool-call-parser deepseek_v4 (vLLM #40801, #54686)" in out
    with ReplayServer("bos-only") as s:
        _, out, _ = check(s.url)
    assert "16 tokens generated and none of them is text (token id 0 ×16)" in out and "vLLM #55486" in out
    with ReplayServer("answer-in-reasoning-content") as s:
        _, out, _ = check(s.url)
    assert "the whole answer is in `reasoning_content`" in out and "vLLM #48645" in out


# --- time: slow, silent, dead, loading --------------------------------------------------------

# Timeouts are judged by what each request was given and what came of it (the real client
# against the real local server), not by how long the check took: on a loaded machine that is
# longer, never shorter, so only lower bounds on time are kept.

def test_a_slow_server_within_the_timeout_passes(client):
    with ReplayServer("healthy", delay=0.3) as s:
        start = time.monotonic()
        status, out, _ = check(s.url, "--timeout", "10", client=client)
    assert status == 0, out  # within --timeout 10: had it taken longer, it would say not-reachable
    assert time.monotonic() - start >= 4 * 0.3  # the server's four answers each took their 0.3 s


def test_a_slow_server_beyond_the_timeout_is_not_reachable_in_time(client):
    """The whole check is bounded by --timeout, not each request: each request is given what
    is left (at least the 0.6 s its predecessor waited less than the one before), the one the
    deadline cuts ends in a timeout, and nothing is asked after it."""
    requests = Requests()
    with ReplayServer("healthy", delay=0.6) as s:
        status, doc, _ = check_json(s.url, "--timeout", "1.5", client=client, fetch=requests)
    assert status == exit_codes.NOT_REACHABLE
    assert doc["status"] == "not-reachable" and codes(doc).get("timeout") == "unreachable"
    given = [timeout for _, timeout, _ in requests.made]
    assert given[0] <= 1.5 and all(later <= earlier - 0.6 for earlier, later in zip(given, given[1:])), given
    assert [kind for _, _, kind in requests.made][-1] == "timeout" and len(requests.made) <= 3, requests.made
    # no request asked twice behind the client's back (the last may end before the server reads it)
    assert len(s.requests) <= len(requests.made)


def test_a_server_that_never_answers_ends_in_the_timeout(client):
    requests = Requests()
    with ReplayServer("healthy", never_answer=True) as s:
        start = time.monotonic()
        status, out, _ = check(s.url, "--timeout", "1", client=client, fetch=requests)
        took = time.monotonic() - start
    assert status == exit_codes.NOT_REACHABLE, out
    assert took >= 0.9  # it waited for the answer
    assert [(path, kind) for path, _, kind in requests.made] == [("/health", "timeout")]  # one request, no retry
    assert requests.made[0][1] <= 1.0  # given the whole check's time, no more
    assert "not reachable: /health: no answer within 1.0 s" in out
    assert out.splitlines()[-1].startswith("not-reachable: the server did not answer (exit 3")


def test_a_dead_port_is_not_reachable(client):
    with DeadPort() as dead:
        status, out, _ = check(dead.url, client=client)
        jstatus, doc, _ = check_json(dead.url, client=client)
    assert status == jstatus == exit_codes.NOT_REACHABLE
    assert "connection refused" in out
    assert codes(doc) == {"refused": "unreachable"} and doc["model"] is None


def test_503_while_loading_is_not_ready(client):
    with ReplayServer("healthy", loading=True) as s:
        status, doc, _ = check_json(s.url, client=client)
        asked = [r["path"] for r in s.requests]
    assert status == exit_codes.NOT_REACHABLE and codes(doc) == {"not-ready": "unreachable"}
    assert asked == ["/health"]  # nothing more is asked of a server that is not ready


# --- the API key -------------------------------------------------------------------------------

def test_401_without_the_key_says_how_to_give_it(client):
    with ReplayServer("healthy", api_key=KEY) as s:
        status, out, _ = check(s.url, client=client)
    assert status == exit_codes.CHECK_PROBLEM
    assert "problem: /v1/models: HTTP 401: the server wants an API key: give the name of the environment " \
           "variable that holds it, --api-key-env VLLM_API_KEY" in out


def test_the_key_from_the_environment_is_sent_and_never_printed(client):
    env = {"MY_KEY": KEY}
    with ReplayServer("healthy", api_key=KEY, echo_auth=True) as s:  # the server echoes the header back
        status, out, err = check(s.url, "--api-key-env", "MY_KEY", client=client, env=env)
        jstatus, doc, jerr = check_json(s.url, "--api-key-env", "MY_KEY", client=client, env=env)
        sent = {r["headers"].get("Authorization") for r in s.requests}
    assert status == jstatus == 0, out
    assert sent == {f"Bearer {KEY}"}
    assert "Bearer ***" in out and "Bearer ***" in doc["chat"]["content"]
    for text in (out, err, json.dumps(doc), jerr):
        assert KEY not in text and KEY[:12] not in text


def test_a_wrong_or_missing_key_variable_is_said(client):
    with ReplayServer("healthy", api_key=KEY) as s:
        status, out, _ = check(s.url, "--api-key-env", "MY_KEY", client=client, env={"MY_KEY": "sk-wrong-one"})
        assert status == 1 and "the server refused the API key from $MY_KEY" in out
        assert "sk-wrong-one" not in out
        status, out, _ = check(s.url, "--api-key-env", "EMPTY_KEY", client=client, env={"EMPTY_KEY": ""})
        assert status == 1 and "note: $EMPTY_KEY is empty: no API key sent" in out
        assert "the server wants an API key, and $EMPTY_KEY is not set" in out
        status, out, _ = check(s.url, "--api-key-env", "UNSET_KEY", client=client)
    assert status == 1
    assert "note: the variable named by --api-key-env is not set (its name is not shown: it may be the key " \
           "itself): no API key sent" in out
    assert "the server wants an API key, and the variable named by --api-key-env is not set" in out
    assert "UNSET_KEY" not in out


# Keys shaped like a variable's name (what a shell gives for "$KEY" left unexported is the key).
NAME_SHAPED_KEYS = ["hf_AbCdEfGhIjKlMnOpQrStUvWxYz012345", "sk_live_51HxYzAbCdEf0123456789",
                    "deadbeef0123456789abcdef01234567", "f00dcafe99aa", "ghp_0123456789abcdefABCDEF0123456789abcd",
                    "AKIAIOSFODNN7EXAMPLE", "my_secret_pass_2024"]


@pytest.mark.parametrize("key", NAME_SHAPED_KEYS)
def test_a_key_given_as_the_variables_name_is_never_printed(key):
    with ReplayServer("healthy", api_key="sk-the-real-one") as s:
        for env in ({}, {"OTHER": "x"}):
            status, out, err = check(s.url, "--api-key-env", key, env=env)
            jstatus, doc, jerr = check_json(s.url, "--api-key-env", key, env=env)
            assert status == jstatus == exit_codes.CHECK_PROBLEM, out + err
            assert "the variable named by --api-key-env is not set" in out
            assert "the variable named by --api-key-env is not set" in json.dumps(doc)
            for text in (out, err, json.dumps(doc), jerr):
                assert key not in text and key[:8] not in text, text


@pytest.mark.parametrize("argv", [
    ["--api-key", KEY], [f"--api-key={KEY}"], ["--api_key", KEY], ["--token", KEY],
    ["--header", f"Authorization: {KEY}"],
    ["http://127.0.0.1:9", "--password", KEY], ["--api-key-env", KEY],  # the key itself given as the name
])
def test_a_secret_on_the_command_line_is_refused_without_echoing_it(argv):
    status, out, err = check(*argv)
    assert status == exit_codes.USAGE and out == ""
    assert len(err.splitlines()) == 1 and "--api-key-env" in err
    assert KEY not in err and KEY[3:15] not in err
    status, out, err = check(*argv, "--json")
    assert status == 2 and KEY not in out + err
    assert json.loads(out)["status"] == "bad-input"


def test_url_credentials_are_used_and_masked(client):
    with ReplayServer("healthy", echo_auth=True) as s:
        url = s.url.replace("http://", "http://probe:pw-5ecret-99@")
        status, out, err = check(url, client=client)
        jstatus, doc, _ = check_json(url, client=client)
        sent = {r["headers"].get("Authorization") for r in s.requests}
    assert status == jstatus == 0, out
    assert sent == {"Basic cHJvYmU6cHctNWVjcmV0LTk5"}  # base64 of probe:pw-5ecret-99
    assert f"check: http://***@127.0.0.1:{s.port}" in out
    for text in (out, err, json.dumps(doc)):
        assert "pw-5ecret-99" not in text and "cHJvYmU6cHctNWVjcmV0LTk5" not in text


# --- redirects, size, hostile text -------------------------------------------------------------

def test_a_redirect_to_another_host_is_not_followed_and_the_key_not_sent(client):
    with ReplayServer("healthy") as elsewhere, ReplayServer("healthy", redirect_to=elsewhere.url) as s:
        status, out, _ = check(s.url, "--api-key-env", "K", env={"K": KEY}, client=client)
        assert elsewhere.requests == []  # another port is another origin: never contacted
    assert status == exit_codes.CHECK_PROBLEM
    assert f"redirected to another host (http://127.0.0.1:{elsewhere.port}/health): not followed" in out
    assert KEY not in out


def test_redirects_to_the_same_server_are_bounded(client):
    with ReplayServer("healthy") as s:
        s.redirect_to = s.url  # every path redirects to itself
        status, out, _ = check(s.url, client=client)
        asked = len(s.requests)
    assert status == exit_codes.CHECK_PROBLEM and "more than 3 redirects" in out
    assert asked == 4


def test_a_huge_answer_is_cut_and_said(client):
    with ReplayServer("healthy", huge=True) as s:
        status, out, _ = check(s.url, client=client)
    assert status == exit_codes.CHECK_PROBLEM
    assert "/v1/models: the answer is larger than the size limit" in out


def _gzip(data: bytes) -> bytes:
    import gzip

    return gzip.compress(data, mtime=0)


def _deflate(data: bytes) -> bytes:
    import zlib

    return zlib.compress(data)


def _raw_deflate(data: bytes) -> bytes:
    import zlib

    packer = zlib.compressobj(wbits=-zlib.MAX_WBITS)
    return packer.compress(data) + packer.flush()


@pytest.mark.parametrize("encode", [(("gzip",), _gzip), (("x-gzip",), _gzip), (("deflate",), _deflate),
                                    (("deflate",), _raw_deflate), (("identity",), bytes), (("GZIP",), _gzip)])
def test_one_layer_of_encoding_is_read(client, encode):
    with ReplayServer("healthy", encode=encode) as s:
        status, out, err = check(s.url, client=client)
    assert status == exit_codes.OK, out + err
    assert f"ok: chat: '{COUNT}'" in out


@pytest.mark.parametrize("codings", [("gzip, gzip",), ("gzip", "gzip"), ("deflate", "gzip"), ("gzip,deflate",)])
def test_nested_encodings_are_a_bad_answer_never_decoded(client, codings):
    def twice(data: bytes) -> bytes:
        return _gzip(_gzip(data))

    with ReplayServer("healthy", encode=(codings, twice)) as s:
        status, out, _ = check(s.url, client=client)
    assert status == exit_codes.CHECK_PROBLEM
    assert "problem: /v1/models: the answer has 2 layers of Content-Encoding" in out
    assert "not decoded" in out


@pytest.mark.parametrize("coding", ["br", "zstd", "compress"])
def test_an_encoding_not_read_is_said(client, coding):
    with ReplayServer("healthy", encode=((coding,), bytes)) as s:
        status, out, _ = check(s.url, client=client)
    assert status == exit_codes.CHECK_PROBLEM
    assert f"the answer's Content-Encoding '{coding}' is not one this check reads" in out


def test_a_body_that_does_not_decode_is_said(client):
    with ReplayServer("healthy", encode=(("gzip",), lambda data: b"\x1f\x8b\x08\x00not gzip at all")) as s:
        status, out, _ = check(s.url, client=client)
    assert status == exit_codes.CHECK_PROBLEM and "the answer's compressed body does not decode" in out


@pytest.mark.parametrize("inflated", [64 << 20, 256 << 20])
def test_a_gzip_bomb_is_cut_before_it_inflates(client, inflated):
    """A small body that inflates to ``inflated`` bytes: memory stays within a few times the 1 MiB
    limit (before: httpx inflated each chunk whole, nested layers without end)."""
    import tracemalloc
    import zlib

    packer = zlib.compressobj(9, zlib.DEFLATED, 16 + zlib.MAX_WBITS)
    zeros = b" " * (1 << 20)
    bomb = packer.compress(b'{"object": "list", "data": [') + b"".join(
        packer.compress(zeros) for _ in range(inflated >> 20)) + packer.compress(b"]}") + packer.flush()
    assert len(bomb) < inflated / 500

    def encode(path):
        return (("gzip",), lambda data: bomb) if path == "/v1/models" else None

    with ReplayServer("healthy", encode=encode) as s:
        tracemalloc.start()
        try:
            status, out, _ = check(s.url, client=client)
            peak = tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()
    assert status == exit_codes.CHECK_PROBLEM
    assert "/v1/models: the answer is larger than the size limit" in out
    assert peak < 16 << 20, peak


def test_a_body_without_length_over_the_limit_is_cut(client):
    with ReplayServer("healthy", huge=True, no_length=True) as s:
        status, out, _ = check(s.url, client=client)
    assert status == exit_codes.CHECK_PROBLEM
    assert "/v1/models: the answer is larger than the size limit" in out
    with ReplayServer("healthy", no_length=True) as s:  # and one within it is read whole
        status, out, _ = check(s.url, client=client)
    assert status == exit_codes.OK, out


@pytest.mark.parametrize("shape", ["wrong-answer", "wrong-count"])
def test_a_fluent_answer_that_is_not_the_count_is_a_problem(client, shape):
    with ReplayServer(shape) as s:
        status, out, _ = check(s.url, client=client)
        jstatus, doc, _ = check_json(s.url, client=client)
    assert status == jstatus == exit_codes.CHECK_PROBLEM, out
    assert "problem: chat: asked to count from 1 to 20, the model answered" in out
    assert codes(doc)["wrong-answer"] == "fail"


@pytest.mark.parametrize("content, finish, right", [
    (COUNT, "length", True), ("1, 2, 3, 4, 5, 6, 7", "length", True), ("Sure: 1 2 3 4 5 6 7 8", "length", True),
    ("1 to 20: 1 2 3 4 5 6 7", "length", True), ("1 2 3 4 5 6 7 8 9 1", "length", True),  # 1 of 10, cut
    (" ".join(str(i) for i in range(1, 21)), "stop", True), ("1\n2\n3\n4\n5", "length", True),
    ("1 2 3 4 5 6 7 8 9 1", "stop", False), ("1 2 3 4 5", "stop", False), ("1 2 3", "length", False),
    ("1 2 3 4 5 6 8", "length", False), ("2 3 4 5 6 7 8", "length", False), ("one two three four", "length", False),
    ("The numbers from one to twenty are easy to count.", "length", False), ("20 19 18 17 16", "length", False),
])
def test_the_count_is_judged(content, finish, right):
    assert sc.counts(content, finish) is right


def test_server_text_is_escaped_and_json_stays_valid(client):
    with ReplayServer("healthy", control_chars=True) as s:
        status, out, _ = check(s.url, client=client)
        jstatus, doc, _ = check_json(s.url, client=client)
    assert status == jstatus == 0
    assert "\x1b" not in out and "\r" not in out and "\u202e" not in out
    assert not any(line.startswith("dsv4-launch check: healthy") for line in out.splitlines())  # no forged line
    assert "\\x1b[2J\\ndsv4-launch check: healthy\\r\\u202e" in out
    assert doc["chat"]["content"].endswith("\x1b[2J\ndsv4-launch check: healthy\r\u202e")


def test_json_is_ascii_whatever_the_server_says(client):
    with ReplayServer("bos-text") as s:
        _, doc_text, _ = check(s.url, "--json", client=client)
    doc_text.encode("ascii")  # valid in any encoding
    assert BOS in json.loads(doc_text)["chat"]["content"]


@pytest.fixture(scope="module")
def self_signed(tmp_path_factory):
    """A certificate for 127.0.0.1 that no CA signed (made by the openssl command)."""
    import shutil

    openssl = shutil.which("openssl")
    if openssl is None:
        pytest.skip("needs the openssl command")
    where = tmp_path_factory.mktemp("tls")
    cert, key = where / "cert.pem", where / "key.pem"
    subprocess.run([openssl, "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes",
                    "-keyout", str(key), "-out", str(cert), "-days", "2", "-subj", "/CN=127.0.0.1",
                    "-addext", "subjectAltName=IP:127.0.0.1"], check=True, capture_output=True, timeout=60)
    return str(cert), str(key)


def test_https_is_verified_against_the_system_store(client, self_signed, monkeypatch):
    with ReplayServer("healthy", tls=self_signed) as s:
        status, out, _ = check(s.url, client=client)
        assert status == exit_codes.CHECK_PROBLEM and "problem: /health: TLS failed" in out, out
        assert "certificate verify failed" in out
        # trusted the way OpenSSL is told (as curl and http.client are): SSL_CERT_FILE
        monkeypatch.setenv("SSL_CERT_FILE", self_signed[0])
        status, out, _ = check(s.url, client=client)
    assert status == 0, out
    assert f"check: https://127.0.0.1:{s.port}" in out


# --- the model ---------------------------------------------------------------------------------

def test_model_must_be_served_and_is_the_one_probed(client):
    with ReplayServer("healthy", models=("other-model", "deepseek-v4-flash")) as s:
        status, out, _ = check(s.url, "--model", "deepseek-v4-flash", client=client)
        assert status == 0 and "also served: 1 more" in out
        assert {r["body"]["model"] for r in s.requests if r["body"]} == {"deepseek-v4-flash"}
        status, out, _ = check(s.url, "--model", "deepseek-v4-pro", client=client)
    assert status == exit_codes.CHECK_PROBLEM
    assert "'deepseek-v4-pro' is not served here; served: other-model, deepseek-v4-flash" in out


def test_without_model_the_first_served_is_probed():
    with ReplayServer("healthy", models=("first", "second")) as s:
        status, doc, _ = check_json(s.url)
        assert {r["body"]["model"] for r in s.requests if r["body"]} == {"first"}
    assert status == 0 and doc["model"] == "first"


def test_an_openai_base_url_with_v1_is_taken_to_the_root():
    with ReplayServer("healthy") as s:
        status, out, _ = check(s.url + "/v1/")
        assert [r["path"] for r in s.requests][:2] == ["/health", "/v1/models"]
    assert status == 0 and "the URL's /v1 was taken off" in out


# --- bad input ----------------------------------------------------------------------------------

@pytest.mark.parametrize("argv", [
    ["ftp://127.0.0.1:8000"], ["http://127.0.0.1:99999"], ["http://127.0.0.1:8000/?x=1"], ["http://"],
    ["http://127.0.0.1:80 00"], ["http://127.0.0.1:8000\x1b[2J"], ["http://127.0.0.1:0"],
    ["--timeout", "0"], ["--timeout", "-1"], ["--timeout", "nan"], ["--timeout", "inf"], ["--timeout", "abc"],
    ["--timeout", "99999"], ["--timeout"], ["--model", ""], ["--frobnicate"], ["--json=yes"],
    ["http://127.0.0.1:1", "http://127.0.0.1:2"],
])
def test_bad_input_is_one_line_and_exit_2(argv):
    status, out, err = check(*argv)
    assert status == exit_codes.USAGE and out == "", (out, err)
    assert len(err.splitlines()) == 1 and err.startswith("dsv4-launch check: ")
    assert "\x1b" not in err


def test_bad_input_with_json_is_valid_json():
    status, doc, err = check_json("--timeout", "nan")
    assert status == 2 and doc["status"] == "bad-input" and "--timeout" in doc["error"]


def parse(args: list[str]) -> tuple[dict, str]:
    """check's arguments read as the door reads them (commands/cli.py ``_run``): the screen for a
    key on the command line, the declared options, then check's one URL. Raises UsageError."""
    command = load("check")
    refused = command.screen(args)
    if refused:
        raise UsageError(refused)
    own, rest = parse_options(command, args, {})
    return own, url_of(rest)


def test_defaults():
    own, url = parse([])
    assert url == DEFAULT_URL == "http://127.0.0.1:8000" and own == {}
    own, url = parse(["127.0.0.1:8001", "--json", "--timeout=2.5", "--model", "m"])
    assert (url, own) == ("127.0.0.1:8001", {"json": True, "timeout": 2.5, "model": "m"})
    assert sc.parse_base_url("127.0.0.1:8001").url("/health") == "http://127.0.0.1:8001/health"
    assert sc.parse_base_url("https://[::1]/prefix/").url("/health") == "https://[::1]:443/prefix/health"
    with pytest.raises(UsageError):
        parse(["--no-such"])


# --- the clients --------------------------------------------------------------------------------

def test_the_standard_library_is_the_fallback_when_httpx_does_not_import(monkeypatch):
    # Faked: httpx's absence (sys.modules["httpx"] = None makes `import httpx` raise ImportError).
    from dsv4_launch.adapters import http_client

    monkeypatch.setitem(sys.modules, "httpx", None)
    assert http_client.default_client() == "stdlib"
    with ReplayServer("healthy") as s:
        out, err = io.StringIO(), io.StringIO()
        # client chosen by itself
        status = run_command("check", [s.url, "--json"], ctx=Context(env={}, stdout=out, stderr=err))
    assert status == 0 and json.loads(out.getvalue())["client"] == "stdlib"


def test_httpx_is_chosen_where_it_imports():
    pytest.importorskip("httpx", reason="httpx is not installed here: the client tests ran with the standard "
                                        "library only (tests/vllm_real/test_check_httpx.py runs them with httpx)")
    from dsv4_launch.adapters import http_client

    assert http_client.default_client() == "httpx"


# --- the judging, case by case (pure) ------------------------------------------------------------

@pytest.mark.parametrize("text,ids,expected", [
    ("!!!!!!!!", None, "'!'"), ("the the the the ", None, "'the '"), ("", [7, 7, 7, 7], "token id 7 ×4"),
    (COUNT, list(range(16)), None), ("Paris", None, None), ("ababab", None, None), ("1 1 2 1 1 2", None, None),
])
def test_repeated_unit(text, ids, expected):
    assert sc.repeated_unit(text, ids) == expected


def test_markup_and_special_tokens():
    assert sc.markup_in("a <｜DSML｜invoke name=\"x\">") == "｜DSML｜"
    assert sc.markup_in("<｜tool▁call▁begin｜>") == "<｜tool▁call▁begin｜>"
    assert sc.markup_in("<function_calls>") == "<function_calls>"
    assert sc.markup_in("The weather in Paris is sunny.") is None
    assert sc.only_special_tokens(BOS * 3 + " \n")
    assert not sc.only_special_tokens(BOS + "Paris") and not sc.only_special_tokens("")


def test_tool_arguments_that_are_not_json_fail():
    from tests.fakes.replay_server import completion

    call = {"id": "c", "type": "function", "function": {"name": "get_weather", "arguments": "{city: Paris"}}
    body = json.dumps(completion(None, finish="tool_calls", tool_calls=[call])).encode()
    found, _ = sc.judge_tools(sc.Exchange(200, body, 0.1))
    assert [(f.level, f.code) for f in found] == [("fail", "tool-arguments")]


def test_a_problem_outranks_a_later_timeout():
    found = [sc.Finding("chat", sc.FAIL, "repeated-token", "x"), sc.Finding("tools", sc.UNREACHABLE, "timeout", "y")]
    assert sc.verdict(found) == sc.PROBLEM
    assert sc.verdict(found[1:]) == sc.NOT_REACHABLE and sc.verdict([]) == sc.HEALTHY


# --- the command line, end to end ----------------------------------------------------------------

def test_the_console_script_runs_check_with_its_exit_codes(tmp_path):
    env = clean_env(tmp_path)
    with ReplayServer("healthy") as s:
        done = subprocess.run([sys.executable, "-m", "dsv4_launch", "check", s.url, "--timeout", "10"],
                              env=env, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert "healthy: 4 requests answered" in done.stdout
    with DeadPort() as dead:
        done = subprocess.run([sys.executable, "-m", "dsv4_launch", "check", dead.url, "--json"],
                              env=env, capture_output=True, text=True, timeout=60)
    assert done.returncode == 3 and json.loads(done.stdout)["status"] == "not-reachable"
    done = subprocess.run([sys.executable, "-m", "dsv4_launch", "check", "--help"], env=env,
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0
    for line in ("0  healthy", "1  a problem found", "2  bad input", "3  not reachable"):
        assert line in done.stdout
    done = subprocess.run([sys.executable, "-m", "dsv4_launch", "--help"], env=env, capture_output=True, text=True,
                          timeout=60)
    assert "check" in done.stdout


def test_check_stays_off_the_dsv4_serve_path(run_cli):
    from tests.conftest import RTX_PRO_6000

    done, record = run_cli("dsv4-serve", "deepseek-ai/DeepSeek-V4-Flash", "-tp", "2", gpus=(RTX_PRO_6000,) * 2)
    assert done.returncode == 0, done.stderr
    mods = set(record["modules"])
    assert "dsv4_launch.commands.serve" in mods  # the record is of the hand-over itself
    for name in ("dsv4_launch.commands.check", "dsv4_launch.adapters.http_client", "dsv4_launch.core.check.judge",
                 "httpx", "http.client"):
        assert name not in mods


# --- README's examples are the real output ------------------------------------------------------

README = __import__("pathlib").Path(__file__).resolve().parents[2] / "docs" / "commands.md"  # check's section
README_RUNS = {  # the docs' command -> the replayed server it was run against (its section says so)
    "    $ dsv4-launch check --api-key-env VLLM_API_KEY\n": ("healthy", True),
    "    $ dsv4-launch check http://127.0.0.1:8000\n": ("dsml-in-content", False),
}


def _timeless(lines: list[str]) -> list[str]:
    """Times and rates vary run to run, and so do the port and the client installed."""
    import re

    out = []
    for line in lines:
        line = re.sub(r"127\.0\.0\.1:\d+", "127.0.0.1:PORT", line)
        line = re.sub(r"\d+ ms\b", "N ms", line)
        line = re.sub(r"\d+\.\d+ (s\b|tokens/s)", r"N \1", line)
        out.append(re.sub(r"\((timeout \d+ s), (httpx|stdlib)\)", r"(\1, CLIENT)", line))
    return out


@pytest.mark.parametrize("command", sorted(README_RUNS))
def test_readme_check_examples_are_the_real_output(command):
    text = README.read_text()
    start = text.index(command) + len(command)
    shown = [line[4:] for line in text[start:text.index("\n\n", start)].splitlines()]
    shape, keyed = README_RUNS[command]
    args = command.split("$ dsv4-launch check")[1].split()
    env = {"VLLM_API_KEY": KEY} if keyed else {}
    with ReplayServer(shape, api_key=KEY if keyed else None) as s:
        urls = [a for a in args if a.startswith("http")]
        args = [a for a in args if a not in urls] + [s.url]
        status, out, _ = check(*args, env=env)
    assert status == (0 if shape == "healthy" else 1)
    assert _timeless(out.splitlines()) == _timeless(shown), "README's check example is stale: paste the new output"


# --- hostile answers: never a traceback ---------------------------------------------------------

def _json_values():
    from hypothesis import strategies as st

    leaf = st.none() | st.booleans() | st.integers(-3, 10**6) | st.floats(allow_nan=False) | st.text(max_size=40)
    return st.recursive(leaf, lambda kids: st.lists(kids, max_size=4) | st.dictionaries(
        st.sampled_from(["choices", "message", "content", "reasoning", "reasoning_content", "tool_calls",
                         "function", "name", "arguments", "usage", "completion_tokens", "token_ids", "data", "id",
                         "max_model_len", "error", "message", "finish_reason", "x"]), kids, max_size=6), max_leaves=30)


def _paths(doc, at=()):
    yield at
    if isinstance(doc, dict):
        for k, v in doc.items():
            yield from _paths(v, (*at, k))
    elif isinstance(doc, list):
        for i, v in enumerate(doc):
            yield from _paths(v, (*at, i))


def _replaced(doc, path, value):
    if not path:
        return value
    doc = json.loads(json.dumps(doc))
    node = doc
    for step in path[:-1]:
        node = node[step]
    node[path[-1]] = value
    return doc


HOSTILE_VALUES = (None, 0, 5, -1, 1e308, True, "", "x", "\x1b[2J", [], [1], [None], {}, {"a": 1}, [{"function": 5}])


def _judge_all(status: int, body: bytes) -> None:
    ex = sc.Exchange(status, body, 0.2)
    found = [*sc.judge_health(ex), *sc.judge_models(ex, None)[0], *sc.judge_models(ex, "a")[0],
             *sc.judge_chat(ex)[0], *sc.judge_tools(ex)[0]]
    assert found and all(f.level in (sc.OK, sc.NOTE, sc.WARN, sc.FAIL, sc.UNREACHABLE) for f in found)
    sc.verdict(found)


def test_every_part_of_every_answer_replaced_is_judged_without_raising():
    """Each replayed answer with each one of its parts (every key and index, at any depth)
    replaced by each of a set of wrong JSON values: the judges return findings, never raise."""
    from tests.fakes.replay_server import error_body, models_body

    bodies = [b for pair in SHAPES.values() for _, b in pair] + [models_body("a", "b"), error_body("x")]
    seen = 0
    for doc in bodies:
        for path in _paths(doc):
            for value in HOSTILE_VALUES:
                _judge_all(200, json.dumps(_replaced(doc, path, value)).encode())
                seen += 1
    assert seen > 3000


def test_any_answer_is_judged_without_raising():
    """Every replayed answer (and vLLM's model list and error shapes) with any of its parts
    replaced by any JSON value, or by bytes that are not JSON: the judges return findings."""
    from hypothesis import given, settings
    from hypothesis import strategies as st

    from tests.fakes.replay_server import error_body, models_body

    bodies = [b for pair in SHAPES.values() for _, b in pair] + [models_body("a", "b"), error_body("x"),
                                                                 {"error": "Unauthorized"}]
    value = _json_values()

    @st.composite
    def hostile(draw):
        doc = draw(st.sampled_from(bodies))
        for _ in range(draw(st.integers(1, 3))):
            path = draw(st.sampled_from(list(_paths(doc))))
            doc = _replaced(doc, path, draw(value))
        return doc

    @settings(max_examples=500, deadline=None)
    @given(doc=hostile() | value, status=st.sampled_from([200, 200, 200, 400, 401, 503]), raw=st.binary(max_size=30))
    def judge(doc, status, raw):
        for body in (json.dumps(doc).encode(), raw):
            ex = sc.Exchange(status, body, 0.2)
            found = [*sc.judge_health(ex), *sc.judge_models(ex, None)[0], *sc.judge_models(ex, "a")[0],
                     *sc.judge_chat(ex)[0], *sc.judge_tools(ex)[0]]
            assert found and all(f.level in (sc.OK, sc.NOTE, sc.WARN, sc.FAIL, sc.UNREACHABLE) for f in found)
            sc.verdict(found)

    judge()


def test_an_internal_error_is_one_line_not_a_traceback(monkeypatch):
    def broken(*args, **kwargs):
        raise RuntimeError(f"boom {KEY}")

    out, err = io.StringIO(), io.StringIO()
    status = run_command("check", ["--api-key-env", "K"],
                         ctx=Context(env={"K": KEY}, stdout=out, stderr=err, fetch=broken))
    assert status == 1 and "Traceback" not in err.getvalue() + out.getvalue()
    # each step's own finding (the steps that need no earlier answer still run), the key masked
    assert "problem: GET /health: internal error: RuntimeError: boom ***" in out.getvalue()
    assert "problem: GET /v1/models: internal error: RuntimeError: boom ***" in out.getvalue()
    with pytest.raises(RuntimeError):
        run_command("check", [], ctx=Context(env={"DSV4_LAUNCH_DEBUG": "1"}, stdout=io.StringIO(), stderr=io.StringIO(),
                                             fetch=broken))


@pytest.mark.parametrize("word", ["sk-abc123", "sk-proj-Zq9xY8", "hf_AbCdEf123456", "ghp_Zq12345678", "my_key_9",
                                  "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxIn0.sig", "Zq9x" * 9])
def test_a_key_given_as_the_url_is_refused_without_being_echoed(word):
    for args in ([word], [word, "--json"]):
        status, out, err = check(*args)
        assert status == exit_codes.USAGE and word not in out + err, (out, err)
        assert "expected a URL such as http://127.0.0.1:8000" in err and len(err.splitlines()) == 1


@pytest.mark.parametrize("word", ["vllm", "vllm-svc", "vllm-deployment-7d9f8b6c5d-x2k4j", "localhost", "gpu-node-3"])
def test_a_bare_host_name_is_still_a_host(word):
    assert parse([word]) == ({}, word)


def test_json_says_an_interrupt_in_the_one_error_shape():
    def broken(*args, **kwargs):
        raise KeyboardInterrupt(f"boom {KEY}")

    out, err = io.StringIO(), io.StringIO()
    got = run_command("check", ["--json", "--api-key-env", "K"],
                      ctx=Context(env={"K": KEY}, stdout=out, stderr=err, fetch=broken))
    doc = json.loads(out.getvalue())
    assert got == 130 == doc["exit_status"] and KEY not in out.getvalue() + err.getvalue()
    assert doc["error"] and err.getvalue() == f"dsv4-launch check: error: {doc['error']}\n"


def test_json_says_an_internal_error_as_findings_with_a_documented_status():
    def broken(*args, **kwargs):
        raise RuntimeError(f"boom {KEY}")

    out, err = io.StringIO(), io.StringIO()
    got = run_command("check", ["--json", "--api-key-env", "K"],
                      ctx=Context(env={"K": KEY}, stdout=out, stderr=err, fetch=broken))
    doc = json.loads(out.getvalue())
    assert got == 1 == doc["exit_status"] and doc["status"] == "problem" and KEY not in out.getvalue() + err.getvalue()
    assert [f["code"] for f in doc["findings"]] == ["internal-error", "internal-error"] and doc["error"] is None

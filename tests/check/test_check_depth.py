"""`check` against answers nested too deeply to read, and against something unforeseen inside a
step (issue 28's attack: deeply nested JSON ended the whole check in `internal error:
RecursionError` before the chat and tool steps); and its one verdict line (issue 31 item 4).

Faked: the HTTP exchange (``Context.fetch``: the answers a server would give, as bytes) — the
judging, the report and the document are the real ones. Over real sockets: tests/check/test_check.py.
"""

from __future__ import annotations

import io
import json

import pytest

from dsv4_launch.commands.cli import run_command
from dsv4_launch.commands.context import Context
from dsv4_launch.core.check import judge as sc
from tests.fakes.replay_server import HEALTHY_CHAT, MODEL, completion, models_body, tool_call_completion

STATUSES = {"healthy", "problem", "not-reachable", "bad-input", "interrupted"}  # README's, and an interrupt
KEY = "sk-live-Zq9xY8wV7uT6"


def nested(depth: int, inner: str = "1") -> str:
    return "[" * depth + inner + "]" * depth


def deep_object(depth: int) -> str:
    return '{"a":' * depth + "1" + "}" * depth


def answers(**replaced):
    """A healthy server's answers (step → (status, body bytes)); ``replaced`` gives other bodies."""
    bodies = {"health": (200, b""), "models": (200, json.dumps(models_body()).encode()),
              "chat": (200, json.dumps(HEALTHY_CHAT).encode()),
              "tools": (200, json.dumps(tool_call_completion()).encode())}
    bodies.update(replaced)
    return bodies


def fake_fetch(bodies, asked):
    def fetch(method, base, path, *, headers, body, timeout, client, clock):
        step = {"/health": "health", "/v1/models": "models"}.get(path) or ("tools" if b'"tools"' in body else "chat")
        asked.append(step)
        answer = bodies[step]
        if isinstance(answer, BaseException):
            raise answer
        status, raw = answer
        return sc.Exchange(status, raw, 0.05)
    return fetch


def run(bodies, *args, env=None):
    asked: list[str] = []
    out, err = io.StringIO(), io.StringIO()
    status = run_command("check", ["--json", *args], ctx=Context(env=env or {}, stdout=out, stderr=err,
                                                     fetch=fake_fetch(bodies, asked), http_client="stdlib"))
    doc = json.loads(out.getvalue())
    assert doc["status"] in STATUSES and doc["exit_status"] == status
    return status, doc, asked, err.getvalue()


def codes(doc):
    return {(f["step"], f["code"]): f["level"] for f in doc["findings"]}


@pytest.mark.parametrize("depth", [65, 1000, 100_000])
@pytest.mark.parametrize("make", [nested, deep_object], ids=["arrays", "objects"])
def test_a_deeply_nested_chat_answer_is_a_finding_and_the_tool_step_still_runs(depth, make):
    status, doc, asked, err = run(answers(chat=(200, make(depth).encode())))
    assert asked == ["health", "models", "chat", "tools"] and status == 1 and doc["status"] == "problem"
    (chat,) = [f for f in doc["findings"] if f["step"] == "chat"]
    assert chat["code"] == "bad-response" and "nested more than 64 levels deep" in chat["text"]
    assert codes(doc)[("tools", "tool-call")] == "ok" and "RecursionError" not in json.dumps(doc) + err


@pytest.mark.parametrize("where", ["models", "tools"])
def test_deep_nesting_in_any_answer_is_that_steps_finding(where):
    deep = (200, ('{"data": ' + nested(5000) + "}").encode())
    status, doc, asked, _ = run(answers(**{where: deep}))
    assert status == 1 and codes(doc)[(where, "bad-response")] == "fail"
    assert any("nested more than 64 levels" in f["text"] for f in doc["findings"] if f["step"] == where)


def test_deep_tool_arguments_are_a_finding():
    call = {"id": "c", "type": "function", "function": {"name": "get_weather", "arguments": deep_object(3000)}}
    body = completion(None, tokens=24, finish="tool_calls", tool_calls=[call])
    status, doc, _, _ = run(answers(tools=(200, json.dumps(body).encode())))
    assert status == 1 and codes(doc)[("tools", "tool-arguments")] == "fail"


def test_an_error_body_nested_deeply_is_quoted_as_text():
    status, doc, _, _ = run(answers(models=(500, nested(10_000).encode())))
    assert status == 1 and codes(doc)[("models", "models-status")] == "fail"


@pytest.mark.parametrize("text,deep", [
    (nested(64), False), (nested(65), True), ('"' + "[" * 500 + '"', False),  # brackets in a string are text
    ('["\\"' + "[" * 100 + '"]', False), (json.dumps({"a": ["[{" * 80]}), False), ("[" * 65, True),
    ("[]" * 5000, False),
])
def test_nesting_is_measured_outside_strings(text, deep):
    assert sc.nested_too_deep(text) is deep
    value, why = sc.parse_json(text)
    assert (why == sc.TOO_DEEP) is deep


def test_an_unforeseen_error_in_one_step_is_its_finding_and_the_others_run(monkeypatch):
    def broken(*args, **kwargs):
        raise RuntimeError(f"boom {KEY}")

    monkeypatch.setattr(sc, "judge_chat", broken)
    status, doc, asked, err = run(answers(), "--api-key-env", "K", env={"K": KEY})
    assert asked == ["health", "models", "chat", "tools"] and status == 1 and doc["status"] == "problem"
    assert codes(doc)[("chat", "internal-error")] == "fail" and codes(doc)[("tools", "tool-call")] == "ok"
    assert KEY not in json.dumps(doc) + err and doc["error"] is None


def test_a_request_that_raises_is_its_steps_finding_and_with_a_model_the_rest_still_run():
    bodies = answers(models=RuntimeError("socket trouble"))
    status, doc, asked, _ = run(bodies, "--model", MODEL)
    assert asked == ["health", "models", "chat", "tools"] and status == 1
    assert codes(doc)[("models", "internal-error")] == "fail" and codes(doc)[("chat", "chat")] == "ok"
    status, doc, asked, _ = run(bodies)  # no model to ask for: the chat steps cannot run
    assert asked == ["health", "models"] and status == 1 and doc["status"] == "problem"


# --- the verdict line -----------------------------------------------------------------------


def _text(bodies):
    out = io.StringIO()
    status = run_command("check", [],
                         ctx=Context(env={}, stdout=out, stderr=io.StringIO(), fetch=fake_fetch(bodies, [])))
    return status, out.getvalue().splitlines()


def test_the_verdict_line_counts_the_warnings():
    thinking = completion("", reasoning="Okay, the user wants me to count", finish="length")
    status, lines = _text(answers(chat=(200, json.dumps(thinking).encode())))
    assert status == 0 and sum("warning:" in line for line in lines) == 1
    assert (lines[-1].startswith("healthy: 4 requests answered in")
            and "no problem, 1 warning above (exit 0)" in lines[-1])
    assert "nothing wrong found" not in "\n".join(lines)
    status, lines = _text(answers())
    assert status == 0 and lines[-1].endswith("nothing wrong found (exit 0)")


def test_the_problem_line_counts_warnings_too():
    thinking = completion("", reasoning="Okay, the user wants me to count", finish="length")
    bad_tool = completion("<｜DSML｜tool_calls>", tokens=40, finish="stop")
    status, lines = _text(answers(chat=(200, json.dumps(thinking).encode()),
                                  tools=(200, json.dumps(bad_tool).encode())))
    assert status == 1 and lines[-1].startswith("problem: 1 problem found, 1 warning above (exit 1)"), lines[-1]

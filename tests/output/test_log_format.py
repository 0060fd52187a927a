"""DSV4_LAUNCH_LOG_FORMAT=json: one JSON object per line on stderr for everything dsv4-serve (and
the commands' logs) print before the hand-over; secrets masked, ASCII only. Faked: NVML and
vLLM's entry point (conftest)."""

from __future__ import annotations

import io
import json
import re

import pytest

from dsv4_launch.core.settings import read_settings
from dsv4_launch.output.lines import Reporter
from tests.conftest import B200

JSON_LOGS = {"DSV4_LAUNCH_LOG_FORMAT": "json"}
STAMP = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z")


def records(stderr: str) -> list[dict]:
    lines = stderr.splitlines()
    assert lines, "nothing logged"
    out = []
    for line in lines:
        assert line.isascii(), line
        record = json.loads(line)  # every line is one object
        assert isinstance(record, dict)
        assert set(record) >= {"time", "level", "logger", "message"}
        assert STAMP.fullmatch(record["time"]) and record["level"] in ("info", "warning", "error")
        out.append(record)
    return out


def test_dsv4_serve_logs_json_lines_and_hands_over(run_cli, v4_dir):
    done, record = run_cli("dsv4-serve", v4_dir, "--api-key", "sk-live-json-1", "-tp", "1", env=JSON_LOGS)
    assert done.returncode == 0 and record["argv"][-2:] == ["--kv-cache-dtype", "fp8"]
    logs = records(done.stderr)
    assert {r["logger"] for r in logs} == {"dsv4-serve"}
    change = [r for r in logs if r.get("kind") == "changed"]
    assert len(change) == 1 and change[0]["option"] == "--kv-cache-dtype" and change[0]["level"] == "info"
    assert change[0]["message"].startswith("--kv-cache-dtype (not set) \u2192 fp8: ")  # ASCII on the wire
    command = [r for r in logs if r.get("kind") == "command"]
    assert command and command[0]["message"].endswith("--api-key '***' -tp 1 --kv-cache-dtype fp8")
    assert "sk-live-json-1" not in done.stderr and "sk-live-json-1" in record["argv"]


def test_refusal_carries_its_rule_id_and_exit_2(run_cli, v4_dir):
    done, record = run_cli("dsv4-serve", v4_dir, "--kv-cache-dtype", "bfloat16", env=JSON_LOGS)
    assert done.returncode == 2 and record is None
    errors = [r for r in records(done.stderr) if r["level"] == "error"]
    assert errors[0]["rule"] == "kv-not-fp8" and errors[0]["message"].startswith("pre-flight: ")
    assert "rule" not in errors[-1]  # the closing 'not starting vLLM' line is no rule's


def test_warnings_carry_their_rule_id(run_cli, v4_dir):
    done, record = run_cli("dsv4-serve", v4_dir, "--attention-backend", "TRITON_MLA", gpus=(B200,), env=JSON_LOGS)
    assert record is not None
    warnings = [r for r in records(done.stderr) if r["level"] == "warning"]
    assert "backend-ignored" in [w.get("rule") for w in warnings]


def test_outside_text_is_escaped_and_masked_in_the_message(run_cli, tmp_path):
    model = tmp_path / "m\u00e9\x1b[2Jodel\nforged"
    model.mkdir()
    done, record = run_cli("dsv4-serve", str(model), "--hf-token", "hf_secret_json",
                           "--served-model-name", "https://user:pw@host/x", env=JSON_LOGS)
    assert record is not None
    logs = records(done.stderr)
    text = " ".join(r["message"] for r in logs)
    assert "\x1b" not in text and "\n" not in text and "\\x1b[2J" in text and "\\nforged" in text
    assert "hf_secret_json" not in done.stderr and "user:pw" not in done.stderr


def test_no_vllm_error_is_a_json_line(run_cli, v4_dir):
    done, _ = run_cli("dsv4-serve", v4_dir, vllm=None, env=JSON_LOGS)
    assert done.returncode == 127
    last = records(done.stderr)[-1]
    assert last["level"] == "error" and "no usable `vllm` on PATH" in last["message"]


def test_bad_settings_error_is_a_json_line(run_cli, v4_dir):
    done, record = run_cli("dsv4-serve", v4_dir, env={**JSON_LOGS, "DSV4_LAUNCH_PREFLIGHT": "bogus"})
    assert done.returncode == 2 and record is None
    assert [r["level"] for r in records(done.stderr)] == ["error"]


def test_quiet_keeps_only_what_quiet_keeps(run_cli, v4_dir):
    done, _ = run_cli("dsv4-serve", v4_dir, env={**JSON_LOGS, "DSV4_LAUNCH_QUIET": "1"})
    plain, _ = run_cli("dsv4-serve", v4_dir, env={"DSV4_LAUNCH_QUIET": "1"})
    assert len(records(done.stderr)) == len(plain.stderr.splitlines())


@pytest.mark.parametrize("value", ["JSON", " json "])
def test_value_is_read_leniently(value):
    out = io.StringIO()
    Reporter(out, {"DSV4_LAUNCH_LOG_FORMAT": value}, prefix="dsv4-serve").info("hello")
    assert json.loads(out.getvalue())["message"] == "hello"


def test_unknown_value_is_a_warning_and_text(run_cli, v4_dir):
    """Like an unclear on/off flag, and unlike DSV4_LAUNCH_PREFLIGHT: how lines look never stops
    vLLM from starting."""
    assert read_settings({"DSV4_LAUNCH_LOG_FORMAT": "xml"}).warnings == (
        "DSV4_LAUNCH_LOG_FORMAT='xml' is not text or json; plain text lines are written",)
    done, record = run_cli("dsv4-serve", v4_dir, env={"DSV4_LAUNCH_LOG_FORMAT": "xml"})
    assert done.returncode == 0 and record is not None
    assert "dsv4-serve: warning: DSV4_LAUNCH_LOG_FORMAT='xml' is not text or json" in done.stderr
    assert all(line.startswith("dsv4-serve: ") for line in done.stderr.splitlines())


def test_plan_report_on_stdout_stays_text_its_errors_are_json(run_cli, v4_dir):
    done, _ = run_cli("dsv4-launch", "plan", v4_dir, env=JSON_LOGS)
    assert done.stdout.splitlines()[0].startswith("model: ") and done.stderr == ""
    done, _ = run_cli("dsv4-launch", "plan", v4_dir, env={**JSON_LOGS, "DSV4_LAUNCH_GPU_MEMORY": "lots"})
    assert done.returncode == 2
    assert [r["logger"] for r in records(done.stderr)] == ["dsv4-launch plan"]


def test_text_is_the_default():
    out = io.StringIO()
    Reporter(out, {}, prefix="dsv4-serve").changed("x", option="--kv-cache-dtype")
    assert out.getvalue() == "dsv4-serve: changed: x\n"

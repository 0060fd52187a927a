"""Mask first, then cut (issue 27 item 3.2): every place that cuts outside text for a message — an
exception's message, a child's last line — masks what it can first (the run's secrets where it
knows them, URL credentials always) and cuts with ``core/credentials.clip``, whose ``…`` lets the
run's redactor mask the start of a secret the cut left. A secret straddling the cut, at every
position of the cut inside it, leaves no piece of 5 characters or more.

Faked at the boundaries: the YAML and JSON readers and vLLM's argument reading (stand-ins that
raise an error quoting the secret: their real messages quote no value we could place), vLLM's
logger (captured). The runtime probe's child is a real process: a small script in place of
vLLM's Python.
"""

from __future__ import annotations

import json
import logging
import stat

import pytest

from dsv4_launch.core.facts import SecretSpans
from dsv4_launch.output.redact import Redactor

S = "Zq9SECRETzz4f9a0c2e"  # the run's secret: an --api-key, an HF_TOKEN
P = "pAss9word77"  # a URL's password the run does not know
RUN = Redactor.for_argv(["m", "--api-key", S], SecretSpans(frozenset({(2, "whole")})))


def _leaks(text: str, secret: str) -> list[str]:
    return [secret[:n] for n in range(5, len(secret) + 1) if secret[:n] in text] + \
        [secret[-n:] for n in range(5, len(secret) + 1) if secret[-n:] in text]


def _messages(limit: int, secret: str, before: str = "", after: str = " and more text after it") -> list[str]:
    """A message with ``secret`` placed so that a cut at ``limit`` falls at each position in it."""
    return [f"{'x' * (limit - k)} {before}{secret}{after}" for k in range(len(before) + len(secret) + 3)]


def _url(secret: str) -> tuple[str, str]:
    return "https://user:", f"{secret}@mirror.example/models"


# --- each cut site, as a function of the message it cuts: the text it prints --------------------

def _yaml_reader(monkeypatch, tmp_path, message: str) -> str:
    import yaml

    from dsv4_launch.adapters.config_file import load_config_file
    from dsv4_launch.vllm_cli.serve_args import ConfigFileError

    def failing(*args, **kwargs):
        raise ValueError(message)

    monkeypatch.setattr(yaml, "load", failing)
    monkeypatch.setattr(yaml, "safe_load", failing)
    path = tmp_path / "serve.yaml"
    path.write_text("a: 1\n")
    with pytest.raises(ConfigFileError) as info:
        load_config_file(str(path))
    return str(info.value)


def _json_reader(monkeypatch, tmp_path, message: str) -> str:
    from dsv4_launch.adapters import model_files

    path = tmp_path / "config.json"
    path.write_text("{}")

    def failing(*args, **kwargs):
        raise ValueError(message)

    monkeypatch.setattr(model_files.json, "loads", failing)
    value, why = model_files.read_json_file(str(path))
    assert value is None and why
    return why


def _config_to_args(monkeypatch, tmp_path, message: str) -> str:
    from dsv4_launch.vllm_cli import serve_args
    from dsv4_launch.vllm_cli.option_table import load_table

    def failing(config):
        raise ValueError(message)

    monkeypatch.setattr(serve_args, "config_to_args", failing)
    with pytest.raises(serve_args.ConfigFileError) as info:
        serve_args.read_serve_args(["m", "--config", "c.yaml"], load_table("0.33.0"), lambda p: {"password": S})
    return str(info.value)


def _argument_reading(monkeypatch, tmp_path, message: str) -> str:
    from dsv4_launch.vllm_cli import serve_args
    from dsv4_launch.vllm_cli.option_table import load_table

    def failing(*args, **kwargs):
        raise ValueError(message)

    monkeypatch.setattr(serve_args, "_parse", failing)
    return serve_args.read_serve_args(["m", "--api-key", S], load_table("0.33.0"), lambda p: {}).rejection or ""


def _probe_child(monkeypatch, tmp_path, message: str, *, torch_error: bool) -> str:
    import sys

    from dsv4_launch.adapters.runtime_probe import read_runtime

    child = tmp_path / "child.py"
    if torch_error:  # the child answers, with torch's import error in its report
        child.write_text(f"print({json.dumps({'python': '3.11', 'torch_error': 'ImportError: ' + message})!r})\n")
    else:  # the child dies: its last line on stderr
        child.write_text(f"import sys\nsys.stderr.write({message!r} + '\\n')\nsys.exit(1)\n")
    script = tmp_path / "python"  # in place of vLLM's Python: runs the child whatever it is asked
    script.write_text(f"#!/bin/sh\nexec {sys.executable} {child}\n")
    script.chmod(script.stat().st_mode | stat.S_IEXEC)
    result, why = read_runtime(str(script), timeout=30)
    return result["torch_error"] if torch_error else why


def _plugin_register(monkeypatch, tmp_path, message: str) -> str:
    from dsv4_launch import plugin
    from dsv4_launch.plugin import kv_patch

    def failing():
        raise RuntimeError(message)

    monkeypatch.setattr(kv_patch, "install", failing)
    monkeypatch.setattr(plugin, "_failed", [])
    monkeypatch.setenv("HF_TOKEN", S)
    monkeypatch.delenv("DSV4_LAUNCH_DISABLE", raising=False)
    records: list[str] = []

    class Keep(logging.Handler):
        def emit(self, record):
            records.append(record.getMessage())

    logger = logging.getLogger(plugin.LOGGER)
    handler = Keep()
    logger.addHandler(handler)
    try:
        plugin.register()
    finally:
        logger.removeHandler(handler)
    assert records
    return "\n".join(records)


def _plugin_engine_check(monkeypatch, tmp_path, message: str) -> str:
    # the plugin could not check an engine: the exception's message, with the engine's hf_token
    from types import SimpleNamespace

    from dsv4_launch.plugin import kv_patch

    token = kv_patch._engine_args.set(SimpleNamespace(hf_token=S))
    try:
        return kv_patch._shown(RuntimeError(message))
    finally:
        kv_patch._engine_args.reset(token)


def _command(name: str, args: list[str]) -> str:
    from dsv4_launch.commands.cli import run_command
    from tests.planning import make_context

    ctx = make_context(env={"DSV4_LAUNCH_GPU_CAPABILITY": "9.0", "NO_COLOR": "1", "HOME": "/nonexistent"})
    run_command(name, args, ctx)
    return ctx.stdout.getvalue() + ctx.stderr.getvalue()


def _usage_error(monkeypatch, tmp_path, message: str) -> str:
    # our own option's bad value, quoted (cut at 60) in the one error line
    text = _command("plan", ["--gpu-memory", message, "deepseek-ai/DeepSeek-V4-Flash", "--api-key", S])
    assert "--gpu-memory" in text
    return text


def _rule_message(monkeypatch, tmp_path, message: str) -> str:
    # a rule quotes the value it judged (cut at 40): max-model-len-invalid
    text = _command("plan", ["deepseek-ai/DeepSeek-V4-Flash", "--max-model-len", message, "--api-key", S])
    assert "--max-model-len " in text
    return text


SITES = {  # name: (the site, its limit, whether the site itself knows the run's secret S)
    "config file: YAML reader": (_yaml_reader, 120, False),
    "config.json: JSON reader": (_json_reader, 120, False),
    "config file: vLLM's config_to_args": (_config_to_args, 120, True),
    "vLLM's argument reading": (_argument_reading, 160, True),
    "runtime probe: child's last line": (lambda m, t, msg: _probe_child(m, t, msg, torch_error=False), 200, False),
    "runtime probe: torch's error": (lambda m, t, msg: _probe_child(m, t, msg, torch_error=True), 200, False),
    "plugin: register() failed": (_plugin_register, 200, True),
    "plugin: an engine not checked": (_plugin_engine_check, 200, True),
    "usage error: our option's value": (_usage_error, 60, True),
    "a rule's message: the value judged": (_rule_message, 40, True),
}


@pytest.mark.parametrize("site", list(SITES))
def test_a_run_s_secret_straddling_the_cut_leaves_no_piece(monkeypatch, tmp_path, site):
    make, limit, knows = SITES[site]
    for message in _messages(limit, S):
        text = make(monkeypatch, tmp_path, message)
        shown = text if knows else RUN(text)  # what render prints: the run's redactor after the site
        assert not _leaks(shown, S), (message, text, shown)


@pytest.mark.parametrize("site", list(SITES))
def test_a_url_s_password_straddling_the_cut_leaves_no_piece(monkeypatch, tmp_path, site):
    make, limit, _ = SITES[site]
    before, after = _url(P)
    for message in _messages(limit, before + P, after=after[len(P):]):
        text = make(monkeypatch, tmp_path, message)
        assert not _leaks(RUN(text), P), (message, text)


def test_clip_marks_the_cut_and_a_short_secret_s_start_is_masked_too():
    from dsv4_launch.core.credentials import clip, excerpt

    assert clip("abcdef", 4) == "abc…" and clip("abc", 4) == "abc"
    assert excerpt(f"see https://u:{P}@host/x for it", 20).startswith("see https://***@hos")
    short = Redactor(["hunt3r2"])  # 7 characters: its first 4 before a cut are masked
    assert short("x" * 10 + " hunt3…") == "x" * 10 + " ***…"

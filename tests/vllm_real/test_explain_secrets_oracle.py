"""No credential in what `explain` prints, on the lines the installed vLLM itself writes (marker
``vllm_real``).

The installed vLLM writes them: its real ``serve`` parser reads ``--api-key K1 K2 --hf-token T``
(``--api-key`` takes several keys), its own ``log_non_default_args`` logs the arguments (in clear
before 0.29: vllm/entrypoints/serve/utils/api_utils.py:273@0.24.0; masked from 0.29:
:286@0.29.0, vllm/entrypoints/common/startup.py:96@0.33.0), its ``jsonify_non_default_args``
makes the Rust frontend's ``--args-json`` (logged whole before 0.29: vllm/v1/utils.py:383@0.24.0),
and its pydantic config rejects a credential's key it does not know, printing the value on the
line after the key's location. The lines go through ``dsv4-launch explain`` the way vLLM's
logger writes them (a header on every line). And the other way: the messages the installed vLLM
logs and raises (its source's logger calls and ``raise`` statements) are not masked more by the
per-line detectors of what explain prints (key bodies, URL passwords) than by the masker tuned
on them. Nothing is faked.
"""

from __future__ import annotations

import io
import json
import logging
import traceback

import pytest

from dsv4_launch.commands.context import Context
from dsv4_launch.commands.explain import run_explain
from dsv4_launch.core.explain.masking import mask_line, mask_secrets_in_text
from dsv4_launch.core.versions import is_older

from .conftest import real_parse, vllm_symbol

M = "deepseek-ai/DeepSeek-V4-Flash"
K1, K2, T = "ZqKeyOne4f9a0c2e", "ZqKeyTwo7d1b3a5c", "ZqTokenx9y8z7w6v"
_FP8 = "DeepseekV4 fp8_ds_mla layout only supports fp8 kv-cache, got"


def _explain(tmp_path, info: list[str], errors: list[str]) -> list[str]:
    lines = [f"(APIServer pid=1) INFO 12-01 08:00:00 [api_utils.py:273] {line}" for line in info]
    lines += [f"(EngineCore_DP0 pid=7) ERROR 12-01 08:00:01 [core.py:1231] {line}"
              for line in ["EngineCore failed to start.", *errors]]
    path = tmp_path / "vllm.log"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    printed = []
    for as_json in (False, True):
        out, err = io.StringIO(), io.StringIO()
        run_explain([str(path)], as_json=as_json, ctx=Context(env={}, stdout=out, stderr=err))
        printed.append(out.getvalue() + err.getvalue())
        if as_json:
            json.loads(out.getvalue())
    return printed


def _startup_module(version: str) -> str:
    return ("vllm.entrypoints.serve.utils.api_utils"
            if is_older(version, "0.33.0") else "vllm.entrypoints.common.startup")


def test_vllms_own_argument_lines_print_no_key(real_vllm, tmp_path):
    top, _serve, version = real_vllm
    outcome, args = real_parse(top, [M, "--api-key", K1, K2, "--hf-token", T, "--max-model-len", "32768"])
    assert outcome == "ok", args
    assert args.api_key == [K1, K2]  # vLLM's parser: --api-key takes every word up to the next option
    module = _startup_module(version)
    log_non_default_args = vllm_symbol(module, "log_non_default_args")
    jsonify_non_default_args = vllm_symbol(module, "jsonify_non_default_args")
    records: list[logging.LogRecord] = []
    handler = logging.Handler()
    handler.emit = records.append
    logger = vllm_symbol(module, "logger")
    level = logger.level
    logger.addHandler(handler)
    logger.setLevel(logging.INFO)  # the "vllm" logger's level may be WARNING here (0.33.0's is)
    try:
        log_non_default_args(args)
    finally:
        logger.removeHandler(handler)
        logger.setLevel(level)
    logged = next(r.getMessage() for r in records if r.getMessage().startswith("non-default args:"))
    if is_older(version, "0.29.0"):
        assert K1 in logged and K2 in logged and T in logged  # the shape explain must mask: in clear
    # what 0.24–0.28 log before starting the Rust frontend (the whole --args-json)
    frontend = "Launching Rust frontend: vllm-rs frontend --listen-fd 5 --args-json " + json.dumps(
        jsonify_non_default_args(args), sort_keys=True)
    assert K1 in frontend and K2 in frontend
    argv = f"+ exec vllm serve {M} --api-key {K1} {K2} --hf-token {T} --max-model-len 32768"
    for line in (logged, frontend, argv):
        masked = mask_line(line)
        assert not any(s in masked for s in (K1, K2, T)), masked
    printed = _explain(tmp_path, [f"vLLM server version {version}, serving model {M}", logged],
                       [f"ValueError: {logged}", f"RuntimeError: {frontend}", f"OSError: {argv}"])
    for text in printed:
        assert not any(s in text for s in (K1, K2, T)), text
    # and the arguments are still read back: the corrected command masks the keys
    printed = _explain(tmp_path, [f"vLLM server version {version}, serving model {M}", logged],
                       ["Traceback (most recent call last):", f"AssertionError: {_FP8} auto"])
    if is_older(version, "0.30.0"):
        assert "--api-key '***'" in printed[0] or "--api-key ***" in printed[0], printed[0]


def test_a_credential_key_vllms_config_does_not_know_prints_no_value(real_vllm, tmp_path):
    KVTransferConfig = vllm_symbol("vllm.config", "KVTransferConfig")
    try:
        KVTransferConfig(kv_connector="LMCacheConnectorV1", kv_role="kv_both", token=T)
    except Exception:  # noqa: BLE001 - what vLLM raises is the oracle
        text = traceback.format_exc()
    else:
        pytest.fail("vLLM's KVTransferConfig accepted an unknown key: update this oracle")
    lines = text.rstrip("\n").split("\n")
    at = next(i for i, line in enumerate(lines) if line == "token")  # pydantic: the location alone
    assert T in lines[at + 1]  # and the value on the next line: what explain must mask
    for printed in _explain(tmp_path, [], lines[-4:]) + _explain(tmp_path, [], lines):
        assert T not in printed, printed


_LOG_CALLS = frozenset({"debug", "info", "warning", "error", "exception", "critical", "warning_once", "info_once",
                        "debug_once", "warn"})
_PRINTED_DIRS = ("v1", "entrypoints", "engine", "config", "distributed", "executor", "models",
                 "model_executor/model_loader",
                 "transformers_utils")


def _printed_messages(root) -> list[str]:
    """The lines of the string constants in the installed vLLM's logger calls and raise
    statements (f-strings' constant parts), in the folders that log at start-up."""
    import ast

    lines: list[str] = []
    for folder in _PRINTED_DIRS:
        for path in sorted((root / folder).glob("**/*.py")):
            try:
                tree = ast.parse(path.read_text(encoding="utf-8", errors="replace"))
            except SyntaxError:
                continue
            for node in ast.walk(tree):
                call = node.exc if isinstance(node, ast.Raise) else node
                if not isinstance(call, ast.Call):
                    continue
                if isinstance(node, ast.Call) and not (isinstance(call.func, ast.Attribute)
                                                       and call.func.attr in _LOG_CALLS):
                    continue
                for arg in call.args[:1]:
                    for const in ast.walk(arg):
                        if isinstance(const, ast.Constant) and isinstance(const.value, str):
                            lines += const.value.splitlines()
    return lines


def test_vllms_own_messages_are_not_masked_more_by_the_line_detectors(real_vllm):
    import pathlib

    import vllm

    lines = _printed_messages(pathlib.Path(vllm.__file__).parent)
    assert len(lines) > 3000  # the folders moved: update _PRINTED_DIRS
    more = [line for line in lines if mask_line(line) != mask_secrets_in_text(line)]
    assert more == []
    changed = [line for line in lines if mask_line(line) != line]
    assert len(changed) < len(lines) / 200, changed  # and few of them are masked at all

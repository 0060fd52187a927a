"""vLLM's own parser writes the argument error; explain must not print the key it quotes.

The spellings a careless user types for a secret option (misspelt, one dash, a look-alike dash,
glued on, a misspelt `=` form): vLLM's real parser refuses each, and its real message, read by
explain, never shows the key (text and --json). Before the hostile pass, several printed it.
"""

from __future__ import annotations

import contextlib
import io

import pytest

from dsv4_launch.commands.context import Context
from dsv4_launch.commands.explain import run_explain

from .conftest import real_parse

M = "deepseek-ai/DeepSeek-V4-Flash"
K = "Zq81xPLAINkey0042"


@pytest.mark.rule("vllm-argument-error")
@pytest.mark.parametrize("spelling", [["--api-kye", K], ["--api-kye=" + K], ["-api-key", K], ["\u2014api-key", K],
                                      ["--hf-tokn", K], ["--api-key" + K], ["--apikey", K, "--max-model-len", "4096"]])
@pytest.mark.parametrize("as_json", [True, False])
def test_vllms_own_argument_error_for_a_misspelt_secret_option_never_prints_the_key(tmp_path, real_vllm, spelling,
                                                                                      as_json):
    top, _, version = real_vllm
    err = io.StringIO()
    with contextlib.redirect_stderr(err):
        status, _ = real_parse(top, [M, *spelling])
    assert status == "reject" and ": error: " in err.getvalue() and K in err.getvalue()
    log = tmp_path / "args.log"
    log.write_text(f"vLLM server version {version}, serving model {M}\n" + err.getvalue(), encoding="utf-8")
    out = io.StringIO()
    run_explain([str(log)], as_json=as_json, ctx=Context(env={}, stdout=out, stderr=io.StringIO()))
    assert "vllm-argument-error" in out.getvalue() and K not in out.getvalue()

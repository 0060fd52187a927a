"""mask_line reads a secret option's name as explain reads vLLM's ``unrecognized arguments``: a
word that names ``--api-key``/``--hf-token`` misspelt, with one dash or a look-alike, abbreviated
or glued masks its value wherever a log line quotes it (a root cause quoting a command, a JSON
argv, argparse's own messages), and every real option of vLLM's recorded parsers keeps its value
(hostile finding 1)."""

from __future__ import annotations

import pytest

from dsv4_launch.core.credentials import SECRET_OPTIONS, is_credential_name, secret_option_name
from dsv4_launch.core.explain.masking import mask_line, mask_lines
from dsv4_launch.vllm_cli.option_table import available_versions, load_table
from tests.scaling import SCALE, assert_linear

S = "ZqS3cr3tV4lue9"
SPELLINGS = ["--api-kye", "--hf-tokn", "-api-key", "-hf-token", "\u2014api-key", "\u2010\u2010hf-token",
             "\u2212api-key",
             "--apikey", "--api_kye", "--aip-key", "--hf-tokem", "--API-KYE", "--a", "--hf"]
SHAPES = [
    "ERROR 05-12 10:00:01 [api_server.py:12] failed: vllm serve deepseek-ai/DeepSeek-V4 {opt} {s} --port 8000",
    '{{"args": ["serve", "deepseek-ai/DeepSeek-V4", "{opt}", "{s}", "--port", "8000"]}}',
    "vllm serve: error: unrecognized arguments: {opt} {s} --port 8000",
    "argv: ['vllm', 'serve', 'm', '{opt}', '{s}', '--port', '8000']",
    "launching with {opt}={s} --port 8000",
]


@pytest.mark.parametrize("opt", SPELLINGS)
@pytest.mark.parametrize("shape", SHAPES)
def test_a_misspelt_secret_option_masks_its_value_in_every_line_shape(opt, shape):
    out = mask_line(shape.format(opt=opt, s=S))
    assert S not in out
    assert opt in out and "8000" in out  # the option's name and the rest of the line are shown


@pytest.mark.parametrize("opt", ["--api-kye", "--aip-key", "--api_keys", "-apikey", "\u2014api-ky"])
@pytest.mark.parametrize("shape", ["vllm serve: error: unrecognized arguments: {opt} {s}1 {s}2 --port 8000",
                                   '["{opt}", "{s}1", "{s}2", "--port", "8000"]'])
def test_every_key_after_a_misspelt_api_key_is_masked_up_to_the_next_option(opt, shape):
    # --api-key takes every word up to the next option: so may the one the user misspelt
    out = mask_line(shape.format(opt=opt, s=S))
    assert S not in out and opt in out and "--port" in out and "8000" in out


@pytest.mark.parametrize("opt", ["--api-key", "-api-key", "\u2014hf-token", "--hf_token"])
@pytest.mark.parametrize("shape", ["vllm serve m {opt}{s} --port 8000", '["--port", "1", "{opt}{s}"]'])
def test_a_value_glued_to_a_secret_option_is_masked_and_the_name_kept(opt, shape):
    out = mask_line(shape.format(opt=opt, s=S))
    assert S not in out and opt + "***" in out


@pytest.mark.parametrize("line", [
    "vllm serve: error: argument --api-key: invalid int value: '{s}'",
    "vllm serve: error: argument --hf-token: invalid choice: '{s}' (choose from 'a', 'b')",
    "vllm serve: error: argument -a/--api-key: invalid str value: \"{s}\"",
    "vllm serve: error: argument \u2014api-key: invalid value: '{s}'",
])
def test_argparse_s_message_about_a_secret_option_s_value_masks_it(line):
    out = mask_line(line.format(s=S))
    assert S not in out and out.startswith("vllm serve: error: argument ")


def test_argparse_s_message_about_another_option_is_kept():
    for line in ["vllm serve: error: argument --max-model-len: invalid int value: 'ZqS3cr3tV4lue9'",
                 "vllm serve: error: argument --kv-cache-dtype: invalid choice: 'fp9' (choose from 'auto', 'fp8')"]:
        assert mask_line(line) == line


def _plain_options() -> list[str]:
    """Every option string of every recorded parser that names no credential."""
    found = {o for v in available_versions() for o in load_table(v).option_strings}
    return sorted(o for o in found if o.startswith("--") and o[2:] not in SECRET_OPTIONS and not is_credential_name(o))


def test_the_recorded_parsers_have_many_plain_options():
    options = _plain_options()
    assert len(options) > 300 and "--model" in options and "--watermark" not in SECRET_OPTIONS


def test_every_plain_option_of_vllm_keeps_its_value():
    # the near-name rule must not reach vLLM's own options (--model, --watermark, --hf-overrides,
    # --tokenizer, --weight-transfer-config...): their values stay
    changed = []
    for option in _plain_options():
        for line in (f"vllm serve m {option} value_of_it --port 8000", f'["{option}", "value_of_it", "--port"]'):
            if mask_line(line) != line:
                changed.append(line)
    assert changed == []


@pytest.mark.parametrize("name", ["api-kye", "hf-tokn", "apikey", "aip-key", "a", "hf"])
def test_the_shared_rule_names_near_misses(name):
    assert secret_option_name(name)[0] and secret_option_name(name, ("api-key", "hf-token"))[0]


@pytest.mark.parametrize("name", ["model", "tokenizer", "max-tokens", "hf-overrides", "port", "api-server-count"])
def test_the_shared_rule_leaves_ordinary_option_names_for_word_valued_secrets(name):
    assert not secret_option_name(name, ("api-key", "hf-token"))[0]


def test_lines_printed_together_mask_a_misspelt_option_s_value():
    lines = ["Traceback (most recent call last):", f"  cmd = 'vllm serve m --api-kye {S} --port 8000'", "ValueError: x"]
    out = mask_lines(lines)
    assert S not in "\n".join(out) and out[0] == lines[0] and out[2] == lines[2]


@pytest.mark.parametrize("make", [
    lambda n: " ".join(f"--api-k{i}y K{i}" for i in range(n)),  # distinct near names: one difflib each
    lambda n: "--api-key" + "x" * (40 * n),  # one long glued word
    lambda n: "--api-kye " * n,
    lambda n: "argument --api-key: " + "'k' " * n,
    lambda n: "argument " + "--api-key/" * n + ": 'k'",
], ids=["distinct", "glued", "repeated", "argparse-quotes", "argparse-names"])
def test_near_names_are_masked_in_linear_time(make):
    assert_linear(make, mask_line, 2000 // SCALE)

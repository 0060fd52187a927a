"""Secrets never appear in anything printed: values of secret options are found by position,
as vLLM's parser assigns them (every spelling, abbreviation, `=` form, repeat, dotted form),
and credentials in URLs are masked in every string. Pure: the replica parser, no vLLM."""

from __future__ import annotations

import pytest

from dsv4_launch.output.escape import mask_url_credentials
from dsv4_launch.output.redact import MASK, masked_argv
from dsv4_launch.vllm_cli.option_table import load_table
from dsv4_launch.vllm_cli.secrets import conservative_spans
from dsv4_launch.vllm_cli.serve_args import read_serve_args

M = "deepseek-ai/DeepSeek-V4-Flash"


def shown(tokens, version="0.33.0", config=None):
    args = read_serve_args(tokens, load_table(version), lambda p: config or {})
    return masked_argv(tokens, args.secrets)


CASES = [
    ([M, "--api-key", "sk-1", "sk-2", "--port", "8000"], [M, "--api-key", MASK, MASK, "--port", "8000"]),
    ([M, "--api-key=sk-1"], [M, f"--api-key={MASK}"]),
    ([M, "--api_key", "sk-1"], [M, "--api_key", MASK]),
    ([M, "--api-k", "sk-1"], [M, "--api-k", MASK]),  # unique abbreviation
    ([M, "--api", "sk-1"], [M, "--api", MASK]),  # ambiguous: vLLM refuses it, we still hide it
    ([M, "--hf-token", "hf_abc"], [M, "--hf-token", MASK]),
    ([M, "--hf-token", "--port", "1"], [M, "--hf-token", "--port", "1"]),  # no value given
    ([M, "--hf-token"], [M, "--hf-token"]),
    ([M, "--hf_token=hf_abc", "-tp", "2"], [M, f"--hf_token={MASK}", "-tp", "2"]),
    ([M, "--kv-transfer-config", '{"secret": "x"}'], [M, "--kv-transfer-config", MASK]),
    ([M, "--kv-transfer-config.kv_connector_extra_config.token", "tok"],
     [M, "--kv-transfer-config.kv_connector_extra_config.token", MASK]),
    ([M, "--kv_transfer_config.token=tok"], [M, f"--kv_transfer_config.token={MASK}"]),
    ([M, "--ec-transfer-config", "{}"], [M, "--ec-transfer-config", MASK]),
    ([M, "--model-loader-extra-config", "{}"], [M, "--model-loader-extra-config", MASK]),
    ([M, "--additional-config", "{}"], [M, "--additional-config", MASK]),
    ([M, "--watermark-config", "{}"], [M, "--watermark-config", MASK]),
    # values that look like options: by position, not by text
    ([M, "--api-key", "-k x", "--port", "8000"], [M, "--api-key", MASK, "--port", "8000"]),  # vLLM takes it
    ([M, "--api-key=-Abc_9"], [M, f"--api-key={MASK}"]),
    ([M, "--api-key", "-Abc_9"], [M, "--api-key", MASK]),  # vLLM rejects; still hidden
    (["--api-key", "k1", "k2", M], ["--api-key", MASK, MASK, MASK]),  # greedy nargs=+: the "model" too
    ([M, "--api-key", "a", "--api-key", "b"], [M, "--api-key", MASK, "--api-key", MASK]),  # repeats
    (["--model=" + M, "--hf-token", "T"], ["--model=" + M, "--hf-token", MASK]),
    # not secrets: paths and look-alike names stay visible
    ([M, "--ssl-keyfile", "/etc/key.pem"], [M, "--ssl-keyfile", "/etc/key.pem"]),
    ([M, "--hf-config-path", "/cfg"], [M, "--hf-config-path", "/cfg"]),
    ([M, "--config", "serve.yaml"], [M, "--config", "serve.yaml"]),
    ([M, "--api-server-count", "2"], [M, "--api-server-count", "2"]),
    # credentials in URLs, in any option
    ([M, "--otlp-traces-endpoint", "https://user:PASS@otel:4317"], [M, "--otlp-traces-endpoint", "https://***@otel:4317"]),
]


@pytest.mark.parametrize("tokens,expected", CASES)
@pytest.mark.parametrize("version", ["0.24.0", "0.33.0"])
def test_argv_redaction(tokens, expected, version):
    assert shown(tokens, version) == expected


def test_a_secret_option_from_the_config_file_leaves_the_command_line_alone():
    # vLLM reads api-key from the YAML; the command line names only the file.
    assert shown([M, "--config", "c.yaml", "--port", "1"], config={"api_key": "sk-yaml"}) == \
        [M, "--config", "c.yaml", "--port", "1"]


def test_stray_words_after_the_yaml_secret_are_the_secrets_too():
    # The YAML's `api-key: [k]` lands right after the model; argparse's greedy nargs='+' then
    # takes the command line's stray word as a second key: vLLM's reading, so masked.
    assert shown([M, "extra", "--config", "c.yaml"], config={"api-key": ["k"]}) == [M, MASK, "--config", "c.yaml"]


def test_without_a_parse_everything_that_may_be_a_value_is_masked():
    options = load_table("0.33.0").option_strings
    spans = conservative_spans([M, "--api-keyy", "oops", "-tp", "2", "--my-token=abc"], options)
    assert masked_argv([M, "--api-keyy", "oops", "-tp", "2", "--my-token=abc"], spans) == \
        [M, "--api-keyy", MASK, "-tp", "2", f"--my-token={MASK}"]


@pytest.mark.parametrize(
    "text,expected",
    [
        ("https://user:PASS@host:1/x", "https://***@host:1/x"),
        ("redis://:pw@cache:6379/0", "redis://***@cache:6379/0"),
        ("http://TOKEN@github.com/o/r", "http://***@github.com/o/r"),
        ("https://host/a@b", "https://host/a@b"),  # an @ in the path is not a credential
        ("user@example.com", "user@example.com"),
        ("no url here", "no url here"),
    ],
)
def test_url_credentials(text, expected):
    assert mask_url_credentials(text) == expected

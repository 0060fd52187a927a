"""Secrets never appear in anything printed (facts §4)."""

from __future__ import annotations

import pytest

from dsv4_launch.option_table import load_table
from dsv4_launch.redact import MASK, Redactor, is_secret_env

T = load_table("0.33.0")
M = "deepseek-ai/DeepSeek-V4-Flash"


@pytest.mark.parametrize(
    "tokens,expected",
    [
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
        # not secrets: paths and look-alike names stay visible
        ([M, "--ssl-keyfile", "/etc/key.pem"], [M, "--ssl-keyfile", "/etc/key.pem"]),
        ([M, "--hf-config-path", "/cfg"], [M, "--hf-config-path", "/cfg"]),
        ([M, "--config", "serve.yaml"], [M, "--config", "serve.yaml"]),
        ([M, "--api-server-count", "2"], [M, "--api-server-count", "2"]),
    ],
)
def test_argv_redaction(tokens, expected):
    assert Redactor().argv(tokens, T) == expected


def test_secrets_are_scrubbed_from_any_other_text():
    r = Redactor()
    r.argv([M, "--api=sk-verysecret"], T)
    assert "sk-verysecret" not in r.text("ambiguous option: --api=sk-verysecret could match --api-key")


def test_environment_secrets_are_remembered():
    r = Redactor()
    r.remember_env({"HF_TOKEN": "hf_secretvalue", "AWS_SECRET_ACCESS_KEY": "aws123", "PATH": "/usr/bin"})
    assert r.text("hf_secretvalue aws123 /usr/bin") == f"{MASK} {MASK} /usr/bin"


@pytest.mark.parametrize(
    "name,secret",
    [("HF_TOKEN", True), ("HUGGING_FACE_HUB_TOKEN", True), ("VLLM_API_KEY", True), ("S3_ENDPOINT", True),
     ("AWS_ACCESS_KEY_ID", True), ("MODELSCOPE_API_TOKEN", True), ("OPENAI_API_KEY", True),
     ("HF_HOME", False), ("CUDA_VISIBLE_DEVICES", False)],
)
def test_secret_env_names(name, secret):
    assert is_secret_env(name) is secret

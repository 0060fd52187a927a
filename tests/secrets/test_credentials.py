"""The one credential vocabulary (core/credentials.py): which names hold a credential — for argv
option names, config and JSON keys, environment names and a log's keys alike — and which values
are shaped like one. Pure functions: nothing is faked."""

from __future__ import annotations

import json
import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dsv4_launch.core.credentials import (
    HINT_SHORT,
    HINT_WORDS,
    NAME_HINT,
    env_credentials,
    hint_pattern,
    is_credential_name,
    looks_like_credential_value,
    name_words,
)
from dsv4_launch.vllm_cli.option_table import DATA

# Names that hold a credential, in every place a name comes from: argv (with dashes), config and
# JSON keys, environment names, a log's keys; issue 30's leaks (DB_PASS, GITHUB_PAT, redis_pass,
# --db-pass, *_pat, passwd, pwd) among them.
CREDENTIALS = [
    # argv (round three's credential words, tests/secrets/test_secret_unrecorded.py)
    "--api-key", "--hf-token", "--ssl-keyfile-password", "--api-keyy", "--api_keyy", "--apikey", "--hf-tokenn",
    "--oauth-client-secret", "--session-cookie", "--db-passwd", "--speculative-config.hf_token", "--x-auth",
    "--authtoken", "--passphrase", "--client-credentials", "--bearer", "--my_secret.value", "--kv-token-file-password",
    "--db-pass", "--redis_pw", "--wifi-psk", "--jwt", "--private-key-pem", "--foo-auth-token",
    "--hf-overrides.hf_token",
    # keys (explain's: tests/secrets/test_explain_secrets.py)
    "api_key", "hf_token", "X-Amz-Signature", "sig", "jwt", "passphrase", "db_passphrase", "weight_key",
    "auth_token_secret", "api_keys", "apiKeys", "passwords", "hf_tokens", "access_keys", "auth_tokens", "privatekeys",
    "'api_key'", '"password"', "apiKey", "hfToken", "accessToken", "clientSecret",
    # issue 30's leak list and their kin
    "DB_PASS", "GITHUB_PAT", "redis_pass", "db-pass", "my_pat", "gitlab_pat", "passwd", "pwd", "MYSQL_PWD",
    "PGPASSWORD", "dbPass", "dbPW", "redis-pw", "totp_otp", "REDIS_PASSWORD", "AWS_SECRET_ACCESS_KEY",
    "HUGGING_FACE_HUB_TOKEN", "VLLM_API_KEY", "OPENAI_API_KEY", "cookies", "session_cookie", "Authorization",
    "proxy-authorization", "bearer_token", "refresh_token", "client_secret", "signing_key", "secret",
    # the short words as a name's last word, wherever the name comes from
    "admin_pass", "SMTP_PASS", "--proxy-pass", "userPass", "mqtt_pw", "ADMIN_PW", "pw", "pass", "pat", "ado_pat",
    "gh-pat", "--wifi-psk", "MFA_OTP", "user_and_key", "key_and_value",
]
# Names that do not: counts and ids of tokens, tokenizers, the KV cache's keys, paths to secrets,
# a compiler pass, English words that contain a credential word, vLLM's options and config keys.
ORDINARY = [
    "tokenspeed_mla_min_split_kv", "encoder_cudagraph_token_budgets", "num_experts_per_token", "token_speed",
    "max_num_batched_tokens", "--max-num-batched-tokens", "tokenizer_mode", "--tokenizer", "num_tokens", "key_cache",
    "key_caches", "prompt_token_ids", "eos_token_id", "long_prefill_token_threshold", "--long-prefill-token-threshold",
    "--long-prefill-token-threshold-adaptive", "--return-tokens-as-token-ids", "max_token_num", "token_suffix",
    "key_fp8", "ray_workers_use_nsight", "pass_config", "keys", "tokens", "missing_keys", "unexpected_keys",
    "max_tokens", "hotkeys", "api_keys_ids", "--ssl-keyfile", "--ssl-certfile", "--ssl-ca-certs", "--api-key-file",
    "--token-path", "HF_TOKEN_PATH", "--secrets-dir", "--hf-config-path", "--passthrough", "--compass",
    "--enable-bypass", "hybrid_override_pattern", "path", "patch_size", "num_patches", "author", "keyword",
    "keyboard", "monkey", "keypoints", "TOKENIZERS_PARALLELISM", "detokenize", "kv_cache_dtype", "model", "",
    "--", "-", "token_type_ids", "key_scale", "skip_tokenizer_init", "compilation_config.pass_config.fuse_norm_quant",
    # the short words before another word, or in another sense (vLLM 0.33's own identifiers), and
    # random text whose hump split makes one (explain read a key's text as a name: c35cc77)
    "pass_context", "pass_weight", "pass_hidden_states_to_model", "pw_conv", "pw_down", "ext_pw_out_channel",
    "run_pw_graph", "pat_str", "_HEADER_PAT", "regex_pat", "ActivationQuantFusionPass", "InductorPass",
    "QKNormRoPEFusionPass", "VllmIRLoweringPass", "forward_pass", "first_pass", "expert_load_pass", "k_pass",
    "only_one_forward_pass", "Zq0PwA00", "Zq0PassA9", "aB3PatX7", "xOtp9Q", "psk_mode", "otp_length",
    # a pair: a measure and the key it was read under (vLLM's ModelArchitectureConfig)
    "derived_max_model_len_and_key", "max_len_or_key",
]


@pytest.mark.parametrize("name", CREDENTIALS)
def test_a_credential_s_name(name):
    assert is_credential_name(name)


@pytest.mark.parametrize("name", ORDINARY)
def test_an_ordinary_name(name):
    assert not is_credential_name(name)


def _recorded_options() -> set[str]:
    import os

    names = set()
    for file in os.listdir(DATA):
        if file.startswith("serve-options-") and file.endswith(".json"):
            with open(os.path.join(DATA, file), encoding="utf-8") as handle:
                names |= {o for a in json.load(handle)["actions"] for o in a["options"] if o.startswith("--")}
    return names


def test_of_every_recorded_vllm_option_only_the_credential_ones_are_credentials():
    # every option of every recorded release: only these names are a credential's (the flag
    # --allow-credentials takes no value, so nothing of it is hidden)
    flagged = {o for o in _recorded_options() if is_credential_name(o)}
    assert flagged == {"--api-key", "--hf-token", "--allow-credentials", "--no-allow-credentials"}


def test_words_split_at_humps_and_every_separator():
    assert name_words("--ssl_keyfile-Password") == ["ssl", "keyfile", "password"]
    assert name_words("'apiKey'") == ["api", "key"]
    assert name_words("X-Amz-Signature") == ["x", "amz", "signature"]
    assert name_words("db.pass+") == ["db", "pass"]


_WORD = st.sampled_from(["api", "hf", "db", "redis", "key", "token", "pass", "pw", "pat", "otp", "psk", "path",
                         "file", "num", "ids", "tokens", "keys", "secret", "auth", "config", "x", "Pass", "PAT",
                         "Key", "passwd", "pwd", "cookie", "sig", "jwt", "monkey", "keyy", "2", "é", "密"])
_SEP = st.sampled_from(["_", "-", ".", "", " ", "+", "é", ":"])


@settings(max_examples=600, deadline=None)
@given(st.lists(_WORD, min_size=1, max_size=5), st.lists(_SEP, min_size=5, max_size=5),
       st.sampled_from(["", "--", "'"]))
def test_the_fast_gate_finds_every_credential_name(words, seps, lead):
    # NAME_HINT is what a scanner looks for before it reads names: it must not skip one
    name = lead + words[0] + "".join(sep + word for sep, word in zip(seps, words[1:]))
    if is_credential_name(name):
        assert re.search(NAME_HINT, name), name


@pytest.mark.parametrize("name", CREDENTIALS)
def test_the_fast_gate_finds_each_listed_name(name):
    assert re.search(NAME_HINT, name)


@settings(max_examples=400, deadline=None)
@given(st.lists(_WORD, min_size=1, max_size=5), st.lists(_SEP, min_size=5, max_size=5))
def test_the_environment_s_gate_finds_every_credential_name(words, seps):
    # env_credentials reads a variable only when one of the vocabulary's words is in its name (its
    # own str.find gate, not NAME_HINT): it must not skip one, wherever the name stands among others
    name = words[0] + "".join(sep + word for sep, word in zip(seps, words[1:]))
    if is_credential_name(name) and name not in ("PWD", "OLDPWD"):
        env = {"PATH": "/usr/bin", name: "Zq8sEcReT1234", "HOME": "/root"}
        assert env_credentials(env) == ["Zq8sEcReT1234"], name


@pytest.mark.parametrize(("value", "shaped"), [
    ("ZqSECRET5", True), ("dXNlcjpwYXNzd29yZA==", True), ("Zqabcdef", True), ("abc12345", True), ("hunter22", True),
    ("ids", False), ("budget", False), ("IDs", False), ("8192", False), ("128000", False), ("threshold=0", False),
    ("(skip_leading_tokens=0)", False), ("authentication", False), ("<|image_pad|>", False), ("a b c d e f", False),
])
def test_the_shape_of_a_credential_value(value, shaped):
    assert looks_like_credential_value(value) is shaped


_PLAIN_HINT = "(?i:" + "|".join(HINT_WORDS) + ")|(?i:" + "|".join(HINT_SHORT) + ")(?![a-z])"


@settings(max_examples=800, deadline=None)
@given(st.text(st.sampled_from("aAbBcCdDeEhHiIjJkKoOpPsStTwWyYrRlL_-. 1é"), max_size=24))
def test_the_fast_gate_finds_what_a_plain_alternation_of_its_words_finds(text):
    # hint_pattern is written for speed (one character class first): it finds exactly the words
    assert bool(re.search(NAME_HINT, text)) is bool(re.search(_PLAIN_HINT, text))


@pytest.mark.parametrize(("text", "found"), [
    ("GITHUB_PAT=x", True), ("path=/x", False), ("patch", False), ("dbPw", True), ("PATH", True), ("--api-key", True),
    ("[[[]]]", False), ("KEY", True), ("compat", True), ("otp", True), ("otpx", False),
])
def test_the_fast_gate_on_examples(text, found):
    assert bool(re.search(hint_pattern(HINT_WORDS, HINT_SHORT), text)) is found


@pytest.mark.parametrize(("line", "shown"), [
    # issue 30's leaks: explain's log masker reads names with the same vocabulary as argv
    ("export GITHUB_PAT=Zq9abc123def", "export GITHUB_PAT=***"), ("DB_PASS=Zq9hunter2", "DB_PASS=***"),
    ("redis_pass: Zq9s3cret", "redis_pass: ***"), ("--db-pass Zq9s3cret --port 1", "--db-pass *** --port 1"),
    ("my_pat=Zq9abcdef1", "my_pat=***"), ("dbPw=Zq9abcdef1", "dbPw=***"),
    # and leaves these alone
    ("key_cache: torch.Size([1, 2])", "key_cache: torch.Size([1, 2])"), ("num_tokens=8192", "num_tokens=8192"),
    ("path=/models/v4", "path=/models/v4"),
    ("pass_config={'fuse_norm_quant': True}", "pass_config={'fuse_norm_quant': True}"),
])
def test_the_log_masker_reads_names_with_the_same_vocabulary(line, shown):
    from dsv4_launch.core.explain.masking import mask_secrets_in_text

    assert mask_secrets_in_text(line) == shown


@settings(max_examples=300, deadline=None)
@given(st.dictionaries(st.lists(_WORD, min_size=1, max_size=3).map("_".join), st.sampled_from(
    ["Zq9SECRETzz", "true", "8", "/home/me", "ab", "hunter22", "~/.key"]), max_size=12))
def test_env_credentials_reads_each_name_as_env_credential_does(env):
    # the joined search that picks the names to read must not skip one (dsv4-serve's start reads it)
    from dsv4_launch.core.credentials import env_credential, env_credentials

    assert sorted(env_credentials(env)) == sorted(v for n, v in env.items() if env_credential(n, v))

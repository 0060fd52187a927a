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
        # a credential in the query or the fragment: by its parameter's name
        ("https://otel/v1?access_token=Zq9&x=1", "https://otel/v1?access_token=***&x=1"),
        ("s3 https://b.s3.amazonaws.com/m?X-Amz-Credential=AK%2F1&X-Amz-Signature=ab12&X-Amz-Expires=60 ok",
         "s3 https://b.s3.amazonaws.com/m?X-Amz-Credential=***&X-Amz-Signature=***&X-Amz-Expires=60 ok"),
        ('{"url": "https://h/x?sig=Zq9SIGzz"}', '{"url": "https://h/x?sig=***"}'),
        ("https://app/cb#access_token=Zq9&state=1", "https://app/cb#access_token=***&state=1"),
        ("https://h/x?key=K1;token=T2 and ?token=plain", "https://h/x?key=***;token=*** and ?token=plain"),
        # not credentials: other parameters, a count, a query with no URL around it
        ("https://hf.co/m?revision=main&max_tokens=8", "https://hf.co/m?revision=main&max_tokens=8"),
        ("https://h/x?token_count=3", "https://h/x?token_count=3"),
    ],
)
def test_url_credentials(text, expected):
    assert mask_url_credentials(text) == expected


@pytest.mark.parametrize("version", ["0.24.0", "0.33.0"])
def test_a_url_s_query_credential_is_masked_in_the_argv_and_wherever_a_line_quotes_it(version):
    from dsv4_launch.output.redact import Redactor

    url = "https://otel.example/v1?x=1&access_token=Zq9SECRETzz"
    tokens = [M, "--otlp-traces-endpoint", url, "--hf-overrides", '{"base": "https://h/m?sig=Zq8SIGzz"}']
    args = read_serve_args(tokens, load_table(version), lambda p: {})
    redact = Redactor.for_argv(tokens, args.secrets)
    assert redact.shown_argv == [M, "--otlp-traces-endpoint", "https://otel.example/v1?x=1&access_token=***",
                                 "--hf-overrides", '{"base": "https://h/m?sig=***"}']
    # an exception's message quoting the token alone
    assert redact("invalid token 'Zq9SECRETzz'; bad signature Zq8SIGzz") == "invalid token '***'; bad signature ***"


# --- over-masking: a weak value found only by its key's name is masked in its key's place -------

@pytest.mark.parametrize(("value", "everywhere"), [
    ("true", False), ("False", False), ("none", False), ("disabled", False), ("8", False), ("0.5", False),
    ("12345678", False), ("1e9", False), ("ab", False), ("abc", False),
    ("hunter2", True), ("Zq9SECRETzz", True), ("changeme", True), ("sk-1234", True),
])
def test_which_values_found_by_a_key_s_name_are_masked_everywhere(value, everywhere):
    from dsv4_launch.core.credentials import masked_everywhere

    assert masked_everywhere(value) is everywhere


@pytest.mark.parametrize("weak", ["true", "8", "no", "ab", "0.5"])
def test_a_weak_config_value_is_masked_in_its_key_s_place_only(weak):
    from dsv4_launch.core.facts import SecretSpans
    from dsv4_launch.output.redact import Redactor

    redact = Redactor.for_argv([M], SecretSpans(), more=[weak])  # a --config file's {"password": weak}
    for line in (f"password: {weak}", f'"password": "{weak}"', f"password={weak}", f"'db_pass': ['{weak}']",
                 f"--db-pass {weak}", f"{{'hf_token': {weak}}}"):
        assert weak not in redact(line).replace("password", "").replace("db_pass", "").replace("db-pass", ""), line
        assert MASK in redact(line)
    for line in (f"enable_thinking: {weak}", f"the value is {weak}", f'"trust_remote_code": {weak}',
                 f"password {weak}", f"tp={weak}"):
        assert redact(line) == line  # not its key's place: kept


def test_a_weak_json_value_is_masked_in_place_in_the_argv_shown():
    from dsv4_launch.core.facts import SecretSpans
    from dsv4_launch.output.redact import Redactor

    value = '{"password": "true", "enable": true, "n": 8, "hf_token": 8}'
    redact = Redactor.for_argv([M, "--hf-overrides", value], SecretSpans())
    assert redact.shown_argv[2] == '{"password": "***", "enable": true, "n": 8, "hf_token": ***}'
    assert redact("trust_remote_code is true, n=8") == "trust_remote_code is true, n=8"
    assert redact(f"--hf-overrides {value}") == f'--hf-overrides {redact.shown_argv[2]}'


@pytest.mark.parametrize(("value", "shown"), [
    # every item of a credential's list, every leaf of a credential's object — not only the first
    ('{"hf_token": ["ab", "cd"]}', '{"hf_token": ["***", "***"]}'),
    ('{"api_keys": [12, 34, 56]}', '{"api_keys": [***, ***, ***]}'),
    ('{"auth": {"user": "u1", "pw": "p2"}, "n": "u1"}', '{"auth": {"user": "***", "pw": "***"}, "n": "u1"}'),
    ('{"a": {"token": [["x1"], {"k": "y2"}]}, "b": ["x1", "y2"]}',
     '{"a": {"token": [["***"], {"k": "***"}]}, "b": ["x1", "y2"]}'),
    # not a credential's: kept
    ('{"token": true, "n": 8}', '{"token": true, "n": 8}'),
])
def test_a_weak_json_value_in_a_credential_s_list_or_object_is_masked_in_place(value, shown):
    from dsv4_launch.core.facts import SecretSpans
    from dsv4_launch.output.redact import Redactor

    redact = Redactor.for_argv([M, "--speculative-config", value], SecretSpans())
    assert redact.shown_argv[2] == shown
    assert redact(f"speculative config {value!r}") == f"speculative config {shown!r}"  # a message quoting it


@pytest.mark.parametrize(("env", "masked"), [
    ({"HF_TOKEN": "hf_Zq9abcdEFGH"}, "hf_Zq9abcdEFGH"),
    ({"DB_PASS": "hunter22"}, "hunter22"),
    ({"GITHUB_PAT": "ghp_Zq9SECRET"}, "ghp_Zq9SECRET"),
    ({"VLLM_API_KEY": "sk-Zq9SECRET"}, "sk-Zq9SECRET"),
])
def test_an_environment_credential_is_masked_wherever_a_line_quotes_it(env, masked):
    from dsv4_launch.core.facts import SecretSpans
    from dsv4_launch.output.redact import Redactor

    assert Redactor.for_argv([M], SecretSpans(), env=env)(f"a line quoting {masked}.") == "a line quoting ***."


@pytest.mark.parametrize(("env", "line", "shown"), [
    # a URL's credentials in any variable (a proxy's, a database's), whatever its name
    ({"HTTPS_PROXY": "http://user:Zq9@SEC RET@proxy:3128"}, "via http://user:Zq9@SEC RET@proxy:3128: 407",
     "via http://***@proxy:3128: 407"),
    ({"DATABASE_URL": "postgres://u:hunter22@db/x"}, "auth failed for 'hunter22'", "auth failed for '***'"),
    ({"OTEL_ENDPOINT": "https://otel/v1?access_token=Zq9SECRETzz"}, "token Zq9SECRETzz refused", "token *** refused"),
    # a URL without credentials: nothing to mask
    ({"HF_ENDPOINT": "https://hf-mirror.com"}, "from https://hf-mirror.com/x", "from https://hf-mirror.com/x"),
])
def test_a_url_s_credentials_in_the_environment_are_masked_wherever_a_line_quotes_them(env, line, shown):
    from dsv4_launch.output.redact import Redactor

    assert Redactor.for_argv([M], env=env)(line) == shown
    assert Redactor.for_log((), lambda text: text, env)(line) == shown


@pytest.mark.parametrize("env", [
    {"PWD": "/home/me/models"}, {"OLDPWD": "/home/me/models"}, {"SSH_AUTH_SOCK": "/tmp/ssh-x/agent.1"},
    {"HF_HUB_DISABLE_IMPLICIT_TOKEN": "1"}, {"HF_TOKEN_PATH": "models"}, {"VLLM_API_KEY": "true"},
    {"PATH": "models"}, {"TOKENIZERS_PARALLELISM": "models"},
])
def test_an_environment_value_that_is_no_credential_is_not_masked(env):
    from dsv4_launch.core.facts import SecretSpans
    from dsv4_launch.output.redact import Redactor

    line = "weights in /home/me/models, models 1 true"
    assert Redactor.for_argv([M], SecretSpans(), env=env)(line) == line

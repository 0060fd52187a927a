"""Secrets where the option tables do not know the release or the option (round three of "never worse
than plain ``vllm serve``", issue 20, class 2): credential-named options masked everywhere, a
secret quoted by a warning, thousands of unknown credential options in linear work. Faked: the
vLLM install (``VllmInstall`` in-process)."""

import json

import pytest

from dsv4_launch.adapters.vllm_install import VllmInstall
from dsv4_launch.core.credentials import is_credential_name
from dsv4_launch.output.redact import masked_argv
from dsv4_launch.vllm_cli.option_table import load_table
from dsv4_launch.vllm_cli.serve_args import read_serve_args
from tests.planning import plan_on_bytes
from tests.scaling import SCALE, assert_linear_count

M = "deepseek-ai/DeepSeek-V4-Flash"
NEWER = VllmInstall("0.35.0", True)  # a release the option tables do not record


def _plan(argv, env=None, vllm=NEWER, as_json=False):
    return plan_on_bytes(argv, env, vllm, as_json)


# --- class 2: secrets where the tables do not know the release or the option ------------------

CREDENTIAL_CASES = [
    ["--ssl-keyfile-password", "Zqhunter2secret"],
    ["--ssl-keyfile-password=Zqhunter2secret"],
    ["--foo-auth-token=Zqabc123secret"],
    ["--foo-auth-token", "Zqabc123secret"],
    ["--api-keyy", "Zqsekrit9secret"],
    ["--api_keyy", "Zqsekrit9secret"],
    ["--apikey", "Zqsekrit9secret"],
    ["--hf-tokenn", "Zqsekrit9secret"],
    ["--oauth-client-secret", "Zqsekrit9secret"],
    ["--session-cookie", "Zqsekrit9secret"],
    ["--db-passwd", "Zqsekrit9secret"],
    ["--speculative-config.hf_token", "Zqsekrit9secret"],
    ["--api-key", "-sk.live-Zq4f9asecret"],
    ["--api-key", "--s_k.live-Zq4f9asecret"],
    ["--api-key=-sk.live-Zq4f9asecret"],
]


@pytest.mark.parametrize("version", [NEWER, VllmInstall(None, True), VllmInstall("0.33.0", True)],
                         ids=["0.35.0", "unknown", "0.33.0"])
@pytest.mark.parametrize("case", CREDENTIAL_CASES, ids=lambda c: c[0][:28])
def test_credential_named_options_are_masked_everywhere(case, version):
    secret = next(t for t in case if "Zq" in t).split("=", 1)[-1]
    core = secret[secret.index("Zq"):]
    argv = [M, *case, "--port", "8000"]
    for as_json in (False, True):
        rc, out, err = _plan(argv, vllm=version, as_json=as_json)
        assert core not in out and core not in err, (out, err)
        assert secret.split(".")[0] not in out + err or secret.split(".")[0] in ("--s_k", "-sk"), (out, err)
        if as_json:
            assert "***" in " ".join(json.loads(out)["argv"])


@pytest.mark.parametrize("name", ["--ssl-keyfile", "--ssl-certfile", "--ssl-ca-certs", "--api-key-file", "--token-path",
                                  "--max-num-batched-tokens", "--tokenizer", "--long-prefill-token-threshold",
                                  "--secrets-dir", "--hf-config-path", "--passthrough", "--compass", "--enable-bypass"])
def test_paths_and_counts_are_not_credentials(name):
    assert not is_credential_name(name)
    shown = masked_argv([M, name, "/etc/x.pem"], read_serve_args([M, name, "/etc/x.pem"], load_table("0.35.0")).secrets)
    assert shown[2] == "/etc/x.pem"


@pytest.mark.parametrize("name", ["--ssl-keyfile-password", "--api-keyy", "--x-auth", "--authtoken", "--passphrase",
                                  "--client-credentials", "--bearer", "--my_secret.value", "--kv-token-file-password",
                                  "--db-pass", "--redis_pw", "--wifi-psk", "--jwt", "--private-key-pem"])
def test_credential_words(name):
    assert is_credential_name(name)


def test_known_release_keeps_its_table():
    # 0.33.0 is recorded: --ssl-keyfile is a path there, shown; --api-key masked by position.
    args = read_serve_args([M, "--ssl-keyfile", "/k.pem", "--api-key", "a", "b"], load_table("0.33.0"))
    assert masked_argv(args.tokens, args.secrets) == [M, "--ssl-keyfile", "/k.pem", "--api-key", "***", "***"]


def test_serve_with_a_newer_vllm_masks_the_hand_over_line(run_cli, v4_dir):
    done, record = run_cli("dsv4-serve", v4_dir, "--ssl-keyfile-password", "Zqhunter2secret",
                           "--foo-auth-token=Zqtok99",
                           vllm="0.35.0", env={"DSV4_LAUNCH_GPU_CAPABILITY": "12.0"})
    assert done.returncode == 0, done.stderr
    assert "Zqhunter2" not in done.stderr and "Zqtok99" not in done.stderr, done.stderr
    assert "command: vllm serve" in done.stderr
    assert record["argv"][2:5] == [v4_dir, "--ssl-keyfile-password", "Zqhunter2secret"]  # vLLM gets it unchanged


@pytest.mark.parametrize("vllm", [NEWER, VllmInstall("0.33.0", True)], ids=["0.35.0", "0.33.0"])
def test_a_secret_quoted_by_a_warning_is_masked(vllm):
    """The masking reaches every line, not only argv: a warning built from an unknown option's
    spelling (``--Zqsecret…`` right after --api-key, where vLLM's reading makes it an option)."""
    for as_json in (False, True):
        rc, out, err = _plan([M, "--api-key", "--Zqsecretvalue99", "--port", "1"], vllm=vllm, as_json=as_json)
        assert "Zqsecretvalue99" not in out + err, (out, err)


def _unknown_credentials(n: int) -> list[str]:
    return [M, *[f"--unk{i}-token=Zqv{i}secret" for i in range(n)]]


def test_thousands_of_unknown_credential_options_are_linear():
    """3,000 unknown credential-named options on an unrecorded release: masked, named in the
    warning, and read by work linear in their number (a per-pair secret search was quadratic:
    4.5 s for 3,000). Counted, not timed (tests/scaling.py): the lines of dsv4-launch's own code
    that run for 200 and for 800 (a count needs no large input). Time would measure argparse
    too, whose own cost is quadratic in the number of options before Python 3.13 (vLLM's parser
    pays it as well)."""
    import dsv4_launch

    table = load_table("0.35.0")
    args = read_serve_args(_unknown_credentials(3000), table)
    assert len(args.unknown_options) == 3000 and len(args.secrets.spans) == 3000
    assert_linear_count(dsv4_launch, _unknown_credentials, lambda argv: read_serve_args(argv, table), 800 // SCALE)

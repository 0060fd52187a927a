"""Secrets by every spelling a parser (or the user's keyboard) could make of a secret option
(issue 41 item 2): a word is masked when any parse vLLM's argparse could make of the argv could
put it in a secret option — abbreviations of any length, ambiguous ones included (``--a KEY``,
``--h KEY``: refused by argparse, but the key the user meant), one-dash forms (``-api-key``) and
look-alike dashes (em and en dash, minus sign, non-breaking hyphen: ``—api-key``).

The spellings come from the recorded option tables (every prefix of every secret option they
hold), never from a list here. What vLLM's own parser does with each is checked in
tests/vllm_real/test_secret_spelling_oracle.py. Pure: no vLLM, nothing faked but the
commands' boundaries (tests/secrets/test_secret_channels.py's)."""

from __future__ import annotations

import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from dsv4_launch.core.credentials import is_credential_name
from dsv4_launch.output.redact import MASK, masked_argv
from dsv4_launch.vllm_cli.option_table import available_versions, load_table
from dsv4_launch.vllm_cli.secrets import DASHES, SECRET_OPTIONS
from dsv4_launch.vllm_cli.serve_args import read_serve_args

M = "deepseek-ai/DeepSeek-V4-Flash"
S = "Zq81secretvalue"
VERSIONS = ["0.24.0", "0.33.0", None]  # None: a release the tables do not record (not exact)
LOOK_ALIKES = DASHES[1:]  # every dash but ASCII's


def _secret_options(version) -> list[str]:
    """The secret options the table holds (without their dashes)."""
    return sorted(o[2:] for o in load_table(version).option_strings if o.startswith("--") and o[2:] in SECRET_OPTIONS)


def _read(tokens, version):
    return read_serve_args(tokens, load_table(version), lambda p: {})


def _leaks(tokens, version) -> list[str]:
    """Every text a command prints of ``tokens``' reading that holds the secret: the argv shown,
    vLLM's rejection, the unknown options named."""
    args = _read(tokens, version)
    texts = [*masked_argv(tokens, args.secrets), args.rejection or "", *args.unknown_options]
    return [t for t in texts if "Zq81" in t]


@st.composite
def spelling(draw, version):
    """(tokens): a secret option of the table, spelt as a parser or a keyboard may spell it, with
    the secret after it (as the next word or after "="), among a model and other options."""
    option = draw(st.sampled_from(_secret_options(version)))
    prefix = option[: draw(st.integers(1, len(option)))]
    # a prefix that is another option's whole name is that option (--watermark, a number, in 0.33)
    assume(prefix == option or "--" + prefix not in load_table(version).option_strings)
    inner = draw(st.sampled_from(["-", "_", *LOOK_ALIKES]))  # vLLM's "_" for "-", or a look-alike dash
    prefix = prefix.replace("-", inner)
    dashes = draw(st.sampled_from(["--", "-", "-" + "\u2014", *LOOK_ALIKES, *(c + c for c in LOOK_ALIKES)]))
    word = dashes + prefix
    # argparse gives a one-dash word that alone starts a short option to it (-e is -ep): no secret
    shorts = [o for o in load_table(version).option_strings if not o.startswith("--")]
    assume(dashes != "-" or len([o for o in shorts if o.startswith(word)]) != 1)
    pair = [f"{word}={S}"] if draw(st.booleans()) else [word, S]
    before = draw(st.sampled_from([[], ["--port", "8000"], ["-tp", "2"], ["--enforce-eager"]]))
    after = draw(st.sampled_from([[], ["--max-model-len", "4096"], ["x"], ["-q", "fp8"]]))
    return [M, *before, *pair, *after]


@pytest.mark.parametrize("version", VERSIONS)
@settings(max_examples=400, deadline=None, derandomize=True, database=None)
@given(data=st.data())
def test_no_spelling_of_a_secret_option_shows_its_value(version, data):
    tokens = data.draw(spelling(version))
    assert not _leaks(tokens, version), tokens


@pytest.mark.parametrize("version", VERSIONS)
@pytest.mark.parametrize("tokens,expected", [
    # the issue's cases: ambiguous one-letter abbreviations, one dash, look-alike dashes
    ([M, "--a", S], [M, "--a", MASK]),
    ([M, "--h", S], [M, "--h", MASK]),
    ([M, "--a=" + S], [M, f"--a={MASK}"]),
    ([M, "--api", S], [M, "--api", MASK]),
    ([M, "-api-key", S, "--port", "8000"], [M, "-api-key", MASK, "--port", "8000"]),
    ([M, "-hf-token=" + S], [M, f"-hf-token={MASK}"]),
    ([M, "\u2014api-key", S, "-tp", "2"], [M, "\u2014api-key", MASK, "-tp", "2"]),
    ([M, "\u2013hf-token", S], [M, "\u2013hf-token", MASK]),
    ([M, "\u2212\u2212api-key", S], [M, "\u2212\u2212api-key", MASK]),
    ([M, "\u2011\u2011api_key=" + S], [M, f"\u2011\u2011api_key={MASK}"]),
    ([M, "-\u2014hf", S], [M, "-\u2014hf", MASK]),
    ([M, "\u2014my-db-password", S], [M, "\u2014my-db-password", MASK]),  # unknown, a credential's name
    ([M, "--api\u2010k", S], [M, "--api\u2010k", MASK]),  # a look-alike inside the name
    # ... and in the "=" form: argparse reads no secret option there (the parse placed nothing),
    # on a release the tables do not record as on one they do
    ([M, "--api\u2010key=" + S], [M, f"--api\u2010key={MASK}"]),
    ([M, "--api\u2010=" + S, "-tp", "2"], [M, f"--api\u2010={MASK}", "-tp", "2"]),
    ([M, "--hf\u2010token=" + S], [M, f"--hf\u2010token={MASK}"]),
    ([M, "--hf\u2212token=" + S, "--port", "8000"], [M, f"--hf\u2212token={MASK}", "--port", "8000"]),
])
def test_the_issues_spellings_are_masked(tokens, expected, version):
    assert masked_argv(tokens, _read(tokens, version).secrets) == expected


@pytest.mark.parametrize("version", VERSIONS)
@pytest.mark.parametrize("tokens", [
    [M, "--max-model", "4096"],  # a unique abbreviation: that option's own value
    [M, "-tp", "2", "--port", "8000"],
    [M, "-qfp8", "--max-num-seqs", "8"],
    [M, "-O3", "--port", "8000"],
    [M, "-as", "4"],  # argparse: -asc (--api-server-count) alone starts so
    [M, "--served-model-name", "-mymodel"],  # one dash, but no secret option's or credential's name
    [M, "\u2014port", "8000"],  # a look-alike dash before a non-secret option
])
def test_spellings_of_other_options_keep_their_values(tokens, version):
    assert masked_argv(tokens, _read(tokens, version).secrets) == tokens


@pytest.mark.parametrize("version", VERSIONS)
@pytest.mark.parametrize("dash", LOOK_ALIKES)
@pytest.mark.parametrize("word", ["speculative{d}config.hf_token", "speculative-config.api{d}key",
                                  "hf-overrides.password", "compilation{d}config.secret", "kv-transfer-config.token"])
def test_a_look_alike_dotted_option_of_a_known_root_masks_a_credential_key(word, dash, version):
    # argparse reads no option in "‐‐speculative-config.hf_token=KEY"; read with two dashes its root
    # is a known option that is no secret, but its dotted key is a credential's name: as with "--"
    word = word.format(d=dash)
    for tokens in ([M, f"{dash}{dash}{word}={S}"], [M, f"{dash}{dash}{word}", S, "-tp", "2"], [M, f"{dash}{word}={S}"]):
        assert not _leaks(tokens, version), tokens


@pytest.mark.parametrize("spelling", ["--a", "-api-key", "\u2014api-key", "--h",
                                      "\u2010\u2010speculative-config.hf_token"])
@pytest.mark.parametrize("command", ["serve", "plan text", "plan json", "doctor text", "doctor json"])
def test_every_channel_masks_a_misspelt_secret_option(spelling, command):
    from tests.secrets.test_secret_channels import COMMANDS

    key = "Zq9SECRETzz"
    status, out, err = COMMANDS[command]([M, spelling, key, "--max-model-len", key])
    assert key not in out and key not in err, (out, err)
    assert "Traceback" not in err


@pytest.mark.parametrize("version", available_versions())
def test_every_credential_named_option_of_a_table_is_a_secret_option(version):
    # the vocabulary names the table's secret options: one that takes a value and has a
    # credential's name must be masked by position (a flag such as --allow-credentials has none)
    for action in load_table(version).actions:
        for option in action.options:
            if option.startswith("--") and action.nargs != 0 and is_credential_name(option):
                assert option[2:] in SECRET_OPTIONS, option

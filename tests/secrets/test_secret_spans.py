"""Where secrets may sit in an argv vLLM rejects (``secrets.conservative_spans``): conservative
about the words of a secret option or of an option whose name looks like a credential (an
unknown option's arity is unknown), exact about the words an option of its own owns.

The oracle is the stdlib's argparse, which vLLM's parser is: a parser with the recorded
options of a few kinds plus the unknown ones as a newer release might define them (any
arity). Every word argparse gives to the credential option must be masked; no word it gives to
another option, nor that option's name, may be. Pure: no vLLM, nothing faked."""

from __future__ import annotations

import argparse

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dsv4_launch.output.redact import MASK, masked_argv
from dsv4_launch.vllm_cli.option_table import load_table
from dsv4_launch.vllm_cli.secrets import conservative_spans
from dsv4_launch.vllm_cli.serve_args import read_serve_args

M = "deepseek-ai/DeepSeek-V4-Flash"
VERSIONS = ["0.24.0", "0.33.0", None]  # None: a release the tables do not record (not exact)


def shown(tokens, version):
    """What plan/serve print of ``tokens``: the parse's spans (conservative where vLLM rejects)."""
    return masked_argv(tokens, read_serve_args(tokens, load_table(version), lambda p: {}).secrets)


S = "Zq81secretvalue"
SHAPES = [
    # the review's case: the credential option's values end at the next option of its own
    (["--my-secret-thing", S, "--vllm-version", "0.33.0", M],
     ["--my-secret-thing", MASK, "--vllm-version", "0.33.0", M]),
    ([M, "--my-secret-thing", S, "--vllm-version=0.33.0", "--port", "8000"],
     [M, "--my-secret-thing", MASK, "--vllm-version=0.33.0", "--port", "8000"]),
    ([M, "--db-password", S, "p2", "--bogus-opt", "7", "--max-model-len", "4096"],
     [M, "--db-password", MASK, MASK, "--bogus-opt", "7", "--max-model-len", "4096"]),
    # known options, in every spelling, own their words
    (["--my-secret-thing", S, "--max-model", "4096", M], ["--my-secret-thing", MASK, "--max-model", "4096", M]),
    (["--my-secret-thing", S, "--max_model_len=4096", M], ["--my-secret-thing", MASK, "--max_model_len=4096", M]),
    (["--my-secret-thing", S, "-tp", "8", M], ["--my-secret-thing", MASK, "-tp", "8", M]),
    (["--my-secret-thing", S, "-tp=8", M], ["--my-secret-thing", MASK, "-tp=8", M]),
    (["--my-secret-thing", S, "-qfp8", M], ["--my-secret-thing", MASK, "-qfp8", M]),  # argparse: -q fp8
    (["--my-secret-thing", S, "-O3", M], ["--my-secret-thing", MASK, "-O3", M]),  # vLLM: --optimization-level 3
    (["--my-secret-thing", S, "--speculative-config.method", "mtp", M],
     ["--my-secret-thing", MASK, "--speculative-config.method", "mtp", M]),
    # conservative: its own words (any arity), and whatever may be one more value
    (["--my-secret-thing", "a", "b"], ["--my-secret-thing", MASK, MASK]),
    (["--my-secret-thing", S, "--Zq81x", "k3", "--port", "1"], ["--my-secret-thing", MASK, MASK, MASK, "--port", "1"]),
    (["--my-secret-thing", S, "-Abc_9", "k2"], ["--my-secret-thing", MASK, MASK, MASK]),
    (["--my-secret-thing", S, "--a b"], ["--my-secret-thing", MASK, MASK]),  # a blank: argparse's value
    (["--my-secret-thing", S, "-5"], ["--my-secret-thing", MASK, MASK]),  # a negative number: a value
    (["--my-secret-thing", S, "-tp8", "k2"], ["--my-secret-thing", MASK, MASK, MASK]),  # no such option
    (["--my-secret-thing", S, "--Vllm-Version", "x"], ["--my-secret-thing", MASK, MASK, MASK]),  # not a name's shape
    (["--my-secret-thing", S, "--s.k", "x"], ["--my-secret-thing", MASK, MASK, MASK]),  # dotted: swallows "x"
    # the word right after it is the value the user meant, whatever it looks like
    (["--my-secret-thing", "--vllm-version", "0.33.0", M], ["--my-secret-thing", MASK, "0.33.0", M]),
    (["--my-secret-thing", "--Zq81x", "k2"], ["--my-secret-thing", MASK, MASK]),
    # a later credential option masks its own words in turn
    (["--my-secret-thing", S, "--other-token", "T2", M], ["--my-secret-thing", MASK, MASK, MASK, MASK]),
    ([M, "--my-secret-thing", S, "--api-key", "K", "--port", "8000"],
     [M, "--my-secret-thing", MASK, "--api-key", MASK, "--port", "8000"]),
    ([M, "--api-key", "K", "--vllm-version", "0.33.0"], [M, "--api-key", MASK, "--vllm-version", "0.33.0"]),
    ([M, "--api-key", "K", "--", "x"], [M, "--api-key", MASK, "--", "x"]),
]


@pytest.mark.parametrize("tokens,expected", SHAPES)
@pytest.mark.parametrize("version", VERSIONS)
def test_credential_values_end_at_an_option_of_its_own(tokens, expected, version):
    assert shown(tokens, version) == expected


# --- the argparse oracle ------------------------------------------------------------------------


class _Rejected(Exception):
    pass


class _Parser(argparse.ArgumentParser):
    def error(self, message):  # argparse would exit; the case is then vLLM's rejection
        raise _Rejected(message)


def _oracle(arity) -> _Parser:
    """vLLM's parser as a newer release with ``--my-secret-thing`` (of ``arity``) and
    ``--vllm-version`` might build it: a few recorded options of each kind besides."""
    parser = _Parser(add_help=False, allow_abbrev=True)
    parser.add_argument("model_tag", nargs="?")
    parser.add_argument("--my-secret-thing", nargs=arity)
    parser.add_argument("--vllm-version", nargs=1)
    parser.add_argument("--max-model-len")
    parser.add_argument("--tensor-parallel-size", "-tp")
    parser.add_argument("--enforce-eager", action="store_true")
    parser.add_argument("--port")
    return parser


VALUES = st.text("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789.,:/", min_size=1, max_size=6)


@st.composite
def argv_case(draw):
    """(tokens, arity): a credential option with some words, among options of each kind."""
    arity = draw(st.sampled_from([None, "?", "*", "+", 2, 3]))
    n = 0

    def word():
        nonlocal n
        n += 1
        return f"w{n}" + draw(VALUES)  # unique, so each position is known by its text

    own = ["--my-secret-thing", *[word() for _ in range(draw(st.integers(0, 3)))]]
    pieces = [own]
    for kind in draw(st.lists(st.sampled_from(["vv", "vv=", "len", "len_", "tp", "tp=", "eager", "port", "stray"]),
                              max_size=4)):
        pieces.append({"vv": ["--vllm-version", word()], "vv=": ["--vllm-version=" + word()],
                       "len": ["--max-model-len", word()], "len_": ["--max_model_len", word()],
                       "tp": ["-tp", word()], "tp=": ["-tp=" + word()], "eager": ["--enforce-eager"],
                       "port": ["--port", word()], "stray": [word()]}[kind])
    order = draw(st.permutations(pieces))
    model = draw(st.sampled_from([[M], []]))
    return [*model, *[t for piece in order for t in piece]], arity


def _normalised(tokens):  # vLLM's step 4 (``_`` → ``-`` in the name), which our stdlib parser lacks
    return [t.replace("_", "-", 3) if t.startswith("--") else t for t in tokens]


@pytest.mark.parametrize("version", ["0.33.0", None])
@settings(max_examples=300, deadline=None, derandomize=True, database=None)
@given(case=argv_case())
def test_masking_matches_what_argparse_gives_each_option(version, case):
    tokens, arity = case
    try:
        parsed, _extra = _oracle(arity).parse_known_args(_normalised(tokens))
    except _Rejected:
        return  # argparse gives nothing to anyone
    spans = conservative_spans(tokens, load_table(version).option_strings, exact=version is not None)
    masked = {i for i, _ in spans.spans}
    position = {t: i for i, t in enumerate(tokens)}
    secret = parsed.my_secret_thing
    for value in secret if isinstance(secret, list) else [secret] if secret else []:
        assert position[value] in masked, (tokens, arity, value, sorted(masked))
    for name in ("vllm_version", "max_model_len", "tensor_parallel_size", "port"):
        value = getattr(parsed, name)
        for v in value if isinstance(value, list) else [value] if value else []:
            i = position.get(v)
            if i is None:  # given with "=": the token holds the option's name too
                i = next(j for j, t in enumerate(tokens) if t.endswith("=" + v))
            assert i not in masked, (tokens, arity, name, v, sorted(masked))
    for i, t in enumerate(tokens):
        if t in ("--vllm-version", "--max-model-len", "--max_model_len", "-tp", "--enforce-eager", "--port") \
                and i != tokens.index("--my-secret-thing") + 1:
            assert i not in masked, (tokens, t)


@pytest.mark.parametrize("version", VERSIONS)
def test_the_rejection_names_the_later_option_and_hides_only_the_secret(version):
    tokens = [M, "--my-secret-thing", S, "--vllm-version", "0.33.0", "--bogus", "7"]
    args = read_serve_args(tokens, load_table(version), lambda p: {})
    text = " ".join([args.rejection or "", *args.unknown_options])
    assert S not in text and "Zq81" not in text
    assert "--vllm-version" in text or version is None, text  # None: unknown options pass, no rejection
    assert (masked_argv(tokens, args.secrets)
            == [M, "--my-secret-thing", MASK, "--vllm-version", "0.33.0", "--bogus", "7"])


# --- an ambiguous abbreviation names no option: judged by its name ------------------------------


@pytest.mark.parametrize("version", ["0.33.0", "0.24.0", None])
@pytest.mark.parametrize("tokens,expected", [
    ([M, "--token", S], [M, "--token", MASK]),  # could match --tokenizer, --tokens-only: vLLM refuses it
    ([M, "--key", "k0", "--token", S], [M, "--key", MASK, MASK, MASK]),
    ([M, "--token=" + S, "--port", "1"], [M, f"--token={MASK}", "--port", "1"]),
    ([M, "--tokenizer-m", "auto"], [M, "--tokenizer-m", "auto"]),  # unique: --tokenizer-mode's own value
    ([M, "--max-model", "4096"], [M, "--max-model", "4096"]),
])
def test_an_ambiguous_abbreviation_with_a_credentials_name_is_masked(tokens, expected, version):
    assert shown(tokens, version) == expected


# --- spans follow the edited argv ---------------------------------------------------------------


@pytest.mark.parametrize("tokens", [
    [M, "--api-key", S, "--", "--speculative-config.key", "Zq81other"],
    [M, "--speculative-config.key", S, "--key", "k0", "--", "--speculative-config.key", "Zq81other"],
    [M, "--api-key", S, "--kv-cache-dtype", "auto", "--", "x"],
    [M, "--kv-cache-dtype=auto", "--hf-token", S],
    [M, "--hf-token", S, "--api-key=Zq81other"],
    ["--api-key", S, "Zq81other", M, "--"],
])
@pytest.mark.parametrize("version", ["0.33.0", None])
def test_spans_follow_the_inserted_or_rewritten_option(tokens, version):
    from dsv4_launch.vllm_cli.secrets import follow_edit
    from dsv4_launch.vllm_cli.serve_args import set_option

    args = read_serve_args(tokens, load_table(version), lambda p: {})
    after = set_option(tokens, "--kv-cache-dtype", "fp8")
    moved = follow_edit(args.secrets, tokens, after)
    shown_after = masked_argv(after, moved)
    assert not any("Zq81" in t for t in shown_after), shown_after
    # exactly the user's masking, with the change: nothing else hidden
    expected = masked_argv(tokens, args.secrets)
    assert [t for t in shown_after if t not in ("--kv-cache-dtype", "fp8", "--kv-cache-dtype=fp8")] == \
        [t for t in expected if t not in ("--kv-cache-dtype", "auto", "--kv-cache-dtype=auto")]


def test_an_edit_of_another_shape_keeps_every_position_masked():
    from dsv4_launch.core.facts import SecretSpans
    from dsv4_launch.vllm_cli.secrets import WHOLE, follow_edit

    spans = SecretSpans(frozenset({(2, WHOLE)}))
    moved = follow_edit(spans, ["a", "b", "s", "c"], ["x", "a", "y", "b", "s", "c"])
    assert {(2, WHOLE), (4, WHOLE)} <= moved.spans


@pytest.mark.parametrize("tail", [["--", "--speculative-config.key", "Zq81other"],
                                  ["--speculative-config.key", "Zq81other", "--"]])
def test_the_prepared_argv_masks_by_the_moved_positions(v4_dir, tail):
    """Through the pipeline (faked: the vLLM install — a release the tables do not record, whose
    parse lets the unknown options pass —, a capability instead of NVML): the change goes in
    before the bare ``--``; what is shown of the edited argv still hides the secrets."""
    from dsv4_launch.adapters.vllm_install import VllmInstall
    from dsv4_launch.commands.pipeline import PLAN, prepare

    argv = [v4_dir, "--api-key", S, *tail]
    prepared = prepare(argv, {"DSV4_LAUNCH_GPU_CAPABILITY": "12.0"}, PLAN, vllm=VllmInstall("0.35.0", True))
    assert "--kv-cache-dtype" in prepared.argv and prepared.argv.index("--kv-cache-dtype") < prepared.argv.index("--")
    out = masked_argv(prepared.argv, prepared.secrets)
    assert not any("Zq81" in t for t in out), out
    assert out[out.index("--kv-cache-dtype"):out.index("--") + 1] == ["--kv-cache-dtype", "fp8", "--"], out


@pytest.mark.parametrize("version", VERSIONS)
@pytest.mark.parametrize("tokens,expected", [
    ([M, "--", "--api-key=" + S], [M, "--", f"--api-key={MASK}"]),  # argparse: a positional; still the user's key
    ([M, "--", "--api-key", S, "x"], [M, "--", "--api-key", MASK, MASK]),
    ([M, "--", "--keyy", S, "--api-key=" + S, "--speculative-config.key", S],
     [M, "--", "--keyy", MASK, f"--api-key={MASK}", "--speculative-config.key", MASK]),
])
def test_secret_options_after_a_bare_separator_are_masked_too(tokens, expected, version):
    assert shown(tokens, version) == expected


@pytest.mark.parametrize("version", ["0.24.0", "0.33.0"])
def test_a_word_glued_to_the_help_flag_is_no_options_value(version):
    # argparse: "-hZq…" is -h with an explicit argument it refuses; -q/-n/-r take theirs
    assert shown([M, "--my-secret-thing", S, "-hZq81x", "k2"], version) == [M, "--my-secret-thing", MASK, MASK, MASK]
    assert shown([M, "--my-secret-thing", S, "-n2", "k2"], version) == [M, "--my-secret-thing", MASK, "-n2", "k2"]

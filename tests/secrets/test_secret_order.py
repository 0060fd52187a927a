"""Secrets in messages, in every form a message may quote them, whatever ran before.

The hunt (brief L, item 2): tests/commands/test_hostile_inputs.py once printed part of a secret
('-Zq000001=' as '-Zq000001' inside "unrecognized arguments: …") only when run after
tests/explain/test_explain.py. No state of ours leaked: Hypothesis (6.1xx) mixes string constants
of the local modules already imported (``sys.modules``) into what it generates, so which test
files are collected changes the derandomized examples, and only one order drew that case. The
cause was ours and deterministic: the scrub masked a secret's text as written, while the
message quoted what argparse and our "unrecognized arguments" line make of it (the name before
its ``=``). Here the class is drawn explicitly — secrets with every edge the hostile generator
uses, placed in a ``--config`` file, after secret options and after credential-looking ones —
and the same corpus is run twice around the other users of the caches (the log scanner
behind ``explain``, other tables), with equal results. Pure: the replica parser; no vLLM."""

from __future__ import annotations

import itertools
import json

import pytest

from dsv4_launch.core.explain.scanner import parse_args_text
from dsv4_launch.output.redact import MASK, Redactor, masked_argv
from dsv4_launch.vllm_cli.option_table import load_table
from dsv4_launch.vllm_cli.secrets import mask_secrets, secret_forms, secret_words
from dsv4_launch.vllm_cli.serve_args import read_serve_args
from tests.hostile_strategies import SECRET_EDGES

M = "deepseek-ai/DeepSeek-V4-Flash"
CORE = "Zq000001"
SECRETS = sorted({a + CORE + b for a, b in itertools.product(SECRET_EDGES, SECRET_EDGES)})


def _placements(secret: str):
    """(argv, config file mapping) pairs that hand ``secret`` to vLLM."""
    yield [M, "--config", "c.yaml"], {"hf_token": [secret]}
    yield [M, "--config", "c.yaml"], {"api_key": ["Zq000000", secret]}
    yield [M, "--config", "c.yaml"], {"api-key": secret, "port": 8000}
    yield [M, "--api-key", secret, "--port", "8000"], {}
    yield [M, "--api-key", "k1", secret], {}
    yield [M, "--api-keyy", secret, "--max-model-len", "4096"], {}
    yield [M, "--my-token", "k1", secret, "-tp", "2"], {}


def _printed(version: str) -> list[str]:
    """Everything the reading of each placement would let us print, scrubbed as printed."""
    table = load_table(version)
    out = []
    for secret in SECRETS:
        for argv, config in _placements(secret):
            args = read_serve_args(argv, table, lambda path, c=config: c)
            scrub = Redactor.for_argv(argv, args.secrets)
            texts = [args.rejection or "", *args.unknown_options, *args.warnings, *masked_argv(argv, args.secrets)]
            out.append("\n".join(scrub(t) for t in texts))
    return out


def _leaks(printed: list[str]) -> list[str]:
    return [text for text in printed if CORE in text]


@pytest.mark.parametrize("version", ["0.24.0", "0.33.0"])
def test_no_form_of_a_secret_is_printed_and_nothing_depends_on_what_ran_before(version):
    first = _printed(version)
    # what other tests do in between: the log scanner behind explain, another release's table
    parse_args_text("model='m', api_key=['-Zq000001=', 'x'], hf_token='ab', port=8000", 1)
    load_table("0.29.0")
    read_serve_args([M, "--api-key", "-Zq000001=", "--bogus"], load_table("0.29.0"), lambda p: {})
    second = _printed(version)
    assert not _leaks(first), _leaks(first)[:3]
    assert first == second


def test_the_hostile_case_itself():
    args = read_serve_args([M, "--config", "c.yaml"], load_table("0.24.0"),
                           lambda p: {"api_key": ["Zq000000", "-Zq000001="]})
    assert args.rejection == "unrecognized arguments: ***", args.rejection


@pytest.mark.parametrize("secret", ["-Zq000001=", "--Zq_01.x=y", "a'b\"c\\Zq01", "é\u00a0Zq01\x1b", "密🔑Zq01"])
def test_every_quoted_form_is_masked(secret):
    scrub = Redactor([secret])
    for text in (secret, repr(secret), json.dumps(secret), json.dumps(secret, ensure_ascii=False),
                 repr(json.dumps(secret)), f"unrecognized arguments: {secret.split('=', 1)[0]}"):
        assert "Zq01" not in scrub(f"x {text} y"), (text, scrub(f"x {text} y"))


def test_a_name_like_secret_masks_its_normalised_name():
    assert {"--zq-01", "--zq_01", "x"} <= set(secret_words("--zq_01=x"))
    assert "--zq_01" not in secret_forms("--zq_01=x")  # a word of its own only


@pytest.mark.parametrize("secret,message,shown", [
    ("--po=Zq01x", "ambiguous option: --po could match --port, --pooler-config",
     "ambiguous option: *** could match --port, --pooler-config"),  # the option names stay whole
    # a secret that is itself "--option=value" hides that option's name too (the name is its head)
    ("--port=Zq01x", "argument --port: invalid int value: 'Zq01x'", "argument ***: invalid int value: '***'"),
    ("-qZq01x", "argument -q/--quantization: invalid choice: 'Zq01x'",
     "argument -q/--quantization: invalid choice: '***'"),  # argparse reads -q Zq01x
    ("-Zq000001=", "unrecognized arguments: -Zq000001", "unrecognized arguments: ***"),
    ("--Zq_01.a=b", "unrecognized arguments: --Zq-01.a", "unrecognized arguments: ***"),
])
def test_the_parts_argparse_quotes_are_masked_as_words(secret, message, shown):
    assert Redactor([secret])(message) == shown


# --- short secrets (item 3) ------------------------------------------------------------------


@pytest.mark.parametrize("secret", ["a", "k", "8", "ab", "-k", "é"])
def test_a_short_secret_is_masked_where_it_stands_as_its_own_word(secret):
    scrub = Redactor([secret])
    for template in ("unrecognized arguments: {}", "unrecognized arguments: --x, {}, 2 other words",
                     "invalid choice: '{}'", '"{}"', "--api-key={}", "({})", "{}", "[{}]", "value {}."):
        assert scrub(template.format(secret)) == template.format(MASK), (template, scrub(template.format(secret)))


@pytest.mark.parametrize("secret,text", [("a", "a plan for a GPU"), ("8", "8xH200, fp8, 18 GiB"),
                                         ("ab", "tab abc cab"), ("-k", "--kv-cache-dtype"), ("ab", "ab-c")])
def test_a_short_secret_inside_a_longer_word_is_left_alone(secret, text):
    words = [w for w in text.replace(",", " ").split() if w == secret]
    assert mask_secrets(text, [secret]).count(MASK) == len(words)


@pytest.mark.parametrize("version", ["0.24.0", "0.33.0", None])
@pytest.mark.parametrize("secret", ["a", "-k", "ab", "-"])
def test_a_short_secret_in_argv_and_in_the_rejection(version, secret):
    for argv in ([M, "--api-key", secret], [M, "--api-key=" + secret], [M, "--api-keyy", secret, "--port", "1"],
                 [M, "--my-token", "k1", secret]):
        args = read_serve_args(argv, load_table(version), lambda p: {})
        shown = masked_argv(argv, args.secrets)
        assert secret not in shown, (argv, shown)
        scrub = Redactor.for_argv(argv, args.secrets)
        message = scrub(" ".join([args.rejection or "", *args.unknown_options]))
        assert secret not in message.split() and f"{secret}," not in message, (argv, message)

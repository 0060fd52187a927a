"""Round three's class, back in round four (issue 28): a secret that starts with "-" and holds a
"." (``--api-key -abc.def``) is what vLLM's pre-processing reads as a dotted option: ``-abc``
becomes an option of its own and ``{"def": …}`` its JSON value, and argparse's "unrecognized
arguments: -abc" quoted the part before the ".". A generator over the secret's shape (leading
dashes, dots, ``=``, quotes, blanks, unicode) × where it stands in the argv × what is printed
(plan's text and document, dsv4-serve's lines; the error lines the replica of vLLM's argparse
builds) — and, under ``vllm_real``, the error line vLLM's own argparse prints
(tests/vllm_real/test_secret_dotted_oracle.py).

Faked: NVML (DSV4_LAUNCH_GPU_CAPABILITY), the vLLM lookup (``VllmInstall``) and dsv4-serve's
hand-over (recorded)."""

from __future__ import annotations

import io
import json

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import tests.hostile_strategies as hs
from dsv4_launch.adapters.vllm_install import VllmInstall
from dsv4_launch.commands.context import Context
from dsv4_launch.commands.pipeline import PLAN, prepare
from dsv4_launch.commands.plan import run_plan
from dsv4_launch.commands.serve import run_serve
from dsv4_launch.output.redact import Redactor
from dsv4_launch.vllm_cli.option_table import load_table
from dsv4_launch.vllm_cli.secrets import mask_secrets, masks_of, secret_words
from dsv4_launch.vllm_cli.serve_args import read_serve_args

M = "deepseek-ai/DeepSeek-V4-Flash"
ENV = {"DSV4_LAUNCH_GPU_CAPABILITY": "9.0", "HOME": "/nonexistent"}
RELEASES = ["0.24.0", "0.29.0", "0.33.0", "0.35.0"]  # 0.35.0: a release the tables do not record


def _printed(argv, version):
    texts = []
    for as_json in (False, True):
        out, err = io.StringIO(), io.StringIO()
        run_plan(list(argv), as_json=as_json, ctx=Context(env=ENV, stdout=out, stderr=err,
                                                         vllm=VllmInstall(version, True)))
        if as_json:
            json.loads(out.getvalue())
        texts += [out.getvalue(), err.getvalue()]
    out, err = io.StringIO(), io.StringIO()
    run_serve(list(argv), Context(env=ENV, stdout=out, stderr=err, vllm=VllmInstall(version, True),
                                  hand_over=lambda argv, vllm, env: 0))
    return "\n".join([*texts, out.getvalue(), err.getvalue()])


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_a_dash_dot_secret_is_never_printed_in_part(data):
    secret, cores = data.draw(hs.dotted_secret(), label="secret")
    placement = data.draw(hs.dotted_placement(secret), label="placement")
    after = data.draw(st.sampled_from([[], ["--max-model-len", "4096"], ["-tp", "2"], ["x"]]), label="after")
    argv = [M, *placement, *after]
    version = data.draw(st.sampled_from(RELEASES), label="vLLM")
    printed = _printed(argv, version)
    for core in cores:
        assert core not in printed, (argv, printed)


@pytest.mark.parametrize("argv", [
    [M, "--api-key", "-abcZqsecret.def.ghi", "--port", "1"],  # issue 28's report: "unrecognized arguments: -abc"
    [M, "--api-key", "--abcZqsecret.def", "--port", "1"],
    [M, "--api-key", "-a_bZqsecret.def+", "--port", "1"],
    [M, "--hf-token", "-abcZqsecret.d", "-tp", "2"],
    [M, "--api-key", "k0", "-abcZqsecret.def", "--port", "1"],
])
@pytest.mark.parametrize("version", RELEASES)
def test_the_part_before_the_dot_is_masked_in_the_parser_s_error_line(argv, version):
    args = read_serve_args(argv, load_table(version))
    printed = _printed(argv, version)
    assert "abcZqsecret" not in printed and "bZqsecret" not in printed, printed
    if args.rejection:
        assert "Zqsecret" not in args.rejection


@pytest.mark.parametrize(("secret", "word"), [
    ("-abc.def.ghi", "-abc"), ("--abc.def", "--abc"), ("--a_b.c", "--a-b"), ("-abc.def+", "-abc"),
    ("-abc.def=x", "-abc"), ("-abc.defgh", "defgh"),
])
def test_the_words_argparse_may_quote_of_a_dotted_secret(secret, word):
    assert word in secret_words(secret)
    assert Redactor([secret])(f"error: unrecognized arguments: {word} '{{\"x\": 1}}'").startswith(
        "error: unrecognized arguments: ***")


def test_a_short_dotted_part_is_not_a_word_of_its_own():
    # "-x.a": "a" would mask every "a" that stands alone in every line
    assert "a" not in secret_words("-x.a")
    prepared = prepare([M, "--api-key", "-x.a", "--port", "1"], ENV, PLAN)
    assert prepared.redact("a line with a word") == "a line with a word"


@pytest.mark.parametrize("secret", ["--Zq_secret.x=1", "--Zq01=8", "-Zq01=ab"])
def test_a_short_value_after_a_secrets_equals_sign_is_masked_where_argparse_quotes_it_only(secret):
    """One or two characters after the "=" of a secret that looks like an option: masked in
    argparse's own message, which quotes them alone, and not as a word of every line — where
    they masked every "1" of a plan ("GPU ***", "--max-model-len ***,048,576")."""
    value = secret.rpartition("=")[2]
    prepared = prepare([M, "--api-key", secret, "-tp", "2"], ENV, PLAN)
    line = f"gpus: 0: H200; {value}: H200; --max-model-len {value},048,576"
    assert prepared.redact(line) == line
    assert prepared.redact(f"x {secret} y") == "x *** y"
    # argparse's messages are masked with the short value too (serve_args._scrubbed's masks_of)
    message = f"argument {secret.partition('=')[0]}: invalid int value: '{value}'"
    assert mask_secrets(message, *masks_of([secret])) == "argument ***: invalid int value: '***'"

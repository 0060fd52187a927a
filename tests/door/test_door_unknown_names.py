"""The unknown options' names, without any that is part of a secret (vllm_cli/serve_args.py
``_unknown_names``): the same answer as a search of every name in every secret, and cost linear
in the names and the secrets — also for thousands of both (thousands of ``--api-key`` values and
thousands of unknown options on a release without a recorded table). Nothing is faked."""

from __future__ import annotations

import random

import pytest

from dsv4_launch.vllm_cli import serve_args
from tests.scaling import SCALE, assert_linear


def _spelt(secret: str) -> str:
    """A ``--`` secret as vLLM's pre-processing spells an option (argparse_utils.py, step 4 of
    serve_args): ``_`` → ``-`` in the name, up to its first ``.``."""
    if not secret.startswith("--"):
        return secret
    key, eq, value = secret.partition("=")
    head, dot, tail = key.partition(".")
    return head.replace("_", "-") + dot + tail + eq + value


def _by_definition(unknown, secrets):
    """An unknown option's name is reported unless it is part of a secret value, as written or
    as vLLM spells it."""
    names = (u.split("=", 1)[0] for u in unknown)
    return tuple(dict.fromkeys(n for n in names if not any(n in s or n in _spelt(s) for s in secrets)))


def _random_case(rnd: random.Random, count: int, alphabet: str = "-ab=é_"):
    unknown = ["-" + "".join(rnd.choice(alphabet) for _ in range(rnd.randint(0, 6))) for _ in range(count)]
    secrets = ["".join(rnd.choice(alphabet) for _ in range(rnd.randint(0, 40))) for _ in range(rnd.randint(0, 9))]
    return unknown, secrets


@pytest.mark.parametrize("seed", range(4))
def test_few_names_answer_as_the_definition(seed):
    rnd = random.Random(seed)
    for _ in range(500):
        unknown, secrets = _random_case(rnd, rnd.randint(0, 12))
        assert serve_args._unknown_names(unknown, secrets) == _by_definition(unknown, secrets), (unknown, secrets)


@pytest.mark.parametrize("seed", range(3))
def test_many_names_answer_as_the_definition(seed):
    """Past FEW_NAMES and CHEAP_SEARCH the one pass over the secrets answers: the same names, in
    the same order, as the search of each name in each secret."""
    rnd = random.Random(seed)
    count = serve_args.FEW_NAMES + 200
    unknown, _ = _random_case(rnd, count, "-abcdefgh=_")
    unknown += [f"--opt-{i}={i}" for i in range(count)]
    secrets = [f"tok{i}--opt-{i * 7}-x" for i in range(2 * count)] + [
        "".join(rnd.choice("-abcdefgh") for _ in range(400))
                                                                   for _ in range(50)]
    assert len(set(unknown)) * len("\x00".join(secrets)) > serve_args.CHEAP_SEARCH  # the one pass answers
    got = serve_args._unknown_names(unknown, secrets)
    assert got == _by_definition(unknown, secrets)
    assert 0 < len(got) < len(dict.fromkeys(u.split("=", 1)[0] for u in unknown))  # some withheld, some said


@pytest.mark.parametrize("secret", ["--Zq_secret", "--Zq_sec_ret", "--Zq_secret=x", "--Zq_secret.sub=1"])
def test_a_secret_is_withheld_as_vllm_spells_it_too(secret):
    """vLLM's step 4 spells ``--Zq_secret`` as ``--Zq-secret``: the unknown option argparse then
    names is that spelling, still the secret (the value of a credential-named option on a release
    without a recorded table): not listed among the unknown options."""
    from dsv4_launch.vllm_cli.option_table import load_table

    args = serve_args.read_serve_args(["deepseek-ai/DeepSeek-V4-Flash", "--other-x", "1", "--my-token", secret],
                                      load_table("0.35.0"))
    assert args.rejection is None and "--my-token" in args.unknown_options
    assert not [name for name in args.unknown_options if name.startswith("--Zq")], args.unknown_options
    assert "--other-x" in args.unknown_options  # not a secret: listed


@pytest.mark.parametrize("words, text, expected", [
    (["he", "she", "his", "hers"], "ushers", {"he", "she", "hers"}),  # overlapping, one a suffix of another
    (["a", "aa", "aaa", "b"], "aa", {"a", "aa"}),
    (["--x", "x", "-"], "a\x00--x", {"--x", "x", "-"}),  # words with different first characters
    (["--x"], "", set()),
    (["é=", "=é"], "a=é=", {"é=", "=é"}),
])
def test_the_one_pass_finds_exactly_the_words_that_occur(words, text, expected):
    assert serve_args._occurring(words, text) == expected
    assert expected == {w for w in words if w in text}


def _names_and_secrets(n: int):
    """n unknown options, n secrets; half the names are inside a secret."""
    return ([f"--unk{i}-token=Zqv{i}" for i in range(n)],
            [f"Zq-{i}-secret--unk{2 * i}-token" for i in range(n)])


def _unknown(case):
    return serve_args._unknown_names(*case)


N = serve_args.FEW_NAMES + 100


def test_thousands_of_names_and_secrets_cost_linear_time():
    names, secrets = _names_and_secrets(SCALE * N)
    assert len(_unknown((names, secrets))) == SCALE * N // 2
    assert_linear(_names_and_secrets, _unknown, N)


# The search of each name in all the secrets joined (the code before this test), compiled as
# serve_args.py's own: C's substring search, linear per name, names × secrets in all.
_SEARCH_PER_NAME = '''
def _unknown_names(unknown, secrets):
    blob = "\\x00".join(secrets)
    names = (u.split("=", 1)[0] for u in unknown)
    return tuple(dict.fromkeys(name for name in names if name not in blob))
'''


def test_the_growth_test_fails_on_a_search_per_name(monkeypatch):
    space: dict = {}
    exec(compile(_SEARCH_PER_NAME, serve_args.__file__, "exec"), space)
    monkeypatch.setattr(serve_args, "_unknown_names", space["_unknown_names"])
    with pytest.raises(AssertionError, match="quadratic"):
        test_thousands_of_names_and_secrets_cost_linear_time()

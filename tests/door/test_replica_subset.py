"""The replica parser built with only the needed options (serve_args.needed_actions)
reads every argv as the full replica does, on every recorded table (tests/door/test_serve_args.py
checks two), and read_serve_args as a whole — values, cli_values, model, rejection text,
unknown options, secrets — is the same with either parser, also with a --config file's tokens,
dotted options folded at the end, -O forms, underscores and tokens after '--'. Nothing faked:
the full parser is serve_args._build_replica(table), the one used before the subset."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dsv4_launch.vllm_cli import serve_args as sa
from dsv4_launch.vllm_cli.option_table import available_versions, load_table

TABLES = {v: load_table(v) for v in available_versions()}
_FULL: dict[str, sa._ReplicaParser] = {}


def _full(table):
    version = next(v for v, t in TABLES.items() if t is table)
    if version not in _FULL:
        _FULL[version] = sa._build_replica(table)
    parser = _FULL[version]
    parser.secret_values = []
    return parser


def _both(tokens, table, config=None):
    load = (lambda path: config) if config is not None else (lambda path: {})
    sa._REPLICAS.clear()
    subset = sa.read_serve_args(tokens, table, load)
    real = sa._replica
    sa._replica = lambda table, tokens=(): _full(table)
    try:
        full = sa.read_serve_args(tokens, table, load)
    finally:
        sa._replica = real
        sa._REPLICAS.clear()
    return subset, full


FIXED = [
    ["m", "-tp", "2", "-dpa", "-dpl", "1"], ["m", "-dp=2", "-dpn", "1", "-dpx"], ["m", "-d", "1"], ["m", "-dp"],
    ["m", "-a", "x"], ["m", "-as", "x"], ["m", "-ascx"], ["m", "-h5"], ["m", "-hq"], ["m", "-qh"],
    ["m", "-nr"], ["m", "-rn", "1"], ["m", "-n=1", "-r="], ["m", "-q=", "x"], ["m", "-=", "-==", "-==x"],
    ["m", "--api", "sk-Zq01"], ["m", "--api-k=sk-Zq02"], ["m", "--api_key", "sk-Zq03", "--max_model_len=4k"],
    ["m", "--speculative-config.method", "mtp", "--speculative_config.num_speculative_tokens=2", "--spec", "{}"],
    ["m", "--", "-tp", "2"], ["m", "-tp", "--", "2"], ["m", "--api-key", "--", "--port"], ["m", "-", "-tp", "2"],
    ["m", "-O3", "-O", "2", "-O=1", "-Ox"], ["m", "--kv", "fp8", "--kv-c=auto"], ["m", "-1", "-.5", "-1e3"],
    ["m", "--x y", "-x y", "- x"], ["m", "--hf-token"], ["m", "--hf-token", "--port", "1"], ["m", "--he"],
    ["--model", "m", "--served-model-name", "a"], ["m", "--config", "c.yaml", "--port", "2"],
]


@pytest.mark.parametrize("version", sorted(TABLES))
@pytest.mark.parametrize("tokens", FIXED)
def test_fixed_argvs_read_alike(version, tokens):
    config = {"tensor_parallel_size": 2, "api_key": "sk-FILE", "kv-cache-dtype": "fp8",
              "speculative_config": {"method": "mtp"}, "enable_prefix_caching": True, "port": [1, 2]}
    subset, full = _both(tokens, TABLES[version], config)
    assert subset == full


_STRINGS = sorted({o for t in TABLES.values() for a in t.actions for o in a.options})
_TOKEN = st.one_of(
    st.sampled_from(_STRINGS),
    st.tuples(st.sampled_from(_STRINGS), st.integers(1, 14)).map(lambda p: p[0][: p[1]]),
    st.tuples(st.sampled_from(_STRINGS), st.integers(2, 14), st.sampled_from(["", "1", "-2", "q", "=x", "a=b"]))
    .map(lambda p: p[0][: p[1]] + "=" + p[2]),
    st.tuples(st.sampled_from([o for o in _STRINGS if not o.startswith("--")]), st.text("qnrh15=-x", max_size=3))
    .map("".join),
    st.sampled_from(["--", "-", "-O3", "-O", "3", "fp8", "auto", "sk-Zq09", "-1", "--config", "c.yaml",
                     "--speculative-config.method", "--a.b=1", "--x.y+", "a,b", "--api_key", "--kv_cache_dtype"]),
    st.text(alphabet="-_abcdehknpqrtx=.019", max_size=10),
)


@settings(max_examples=250, deadline=None)
@given(version=st.sampled_from(sorted(TABLES)), tokens=st.lists(_TOKEN, max_size=9),
       model_first=st.booleans(), with_config=st.booleans())
def test_generated_argvs_read_alike(version, tokens, model_first, with_config):
    config = {"tensor_parallel_size": 2, "api_key": "sk-FILE", "model": "mm"} if with_config else None
    try:
        subset, full = _both(["m", *tokens] if model_first else tokens, TABLES[version], config)
    except sa.ConfigFileError:
        return  # both raise it before any parser is built (the parse comes after the file is read)
    assert subset == full

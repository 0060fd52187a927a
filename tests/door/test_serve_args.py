"""Reading ``vllm serve`` arguments the way vLLM does (facts §4). Pure: no vLLM, no files.

The same cases run against the real vLLM parser in tests/vllm_real/test_parser_oracle.py.
"""

from __future__ import annotations

import pytest

from dsv4_launch.vllm_cli.option_table import available_versions, load_table
from dsv4_launch.vllm_cli.secrets import option_name
from dsv4_launch.vllm_cli.serve_args import ConfigFileError, config_to_args, read_serve_args

TABLES = [load_table(v) for v in available_versions()]
M = "deepseek-ai/DeepSeek-V4-Flash"


def read(tokens, table=None, configs=None):
    configs = configs or {}

    def load(path):
        if path not in configs:
            raise ConfigFileError(f"--config {path}: no such file")
        return configs[path]

    return read_serve_args(tokens, table or TABLES[0], load)


# (tokens, expected model, expected kv-cache-dtype (None = vLLM default "auto"))
SPELLINGS = [
    ([M], M, None),
    ([M, "--kv-cache-dtype", "auto"], M, "auto"),
    ([M, "--kv-cache-dtype", "fp8"], M, "fp8"),
    ([M, "--kv-cache-dtype=fp8"], M, "fp8"),
    ([M, "--kv_cache_dtype", "fp8"], M, "fp8"),
    ([M, "--kv_cache_dtype=fp8"], M, "fp8"),
    ([M, "--kv-cache_dtype=fp8_ds_mla"], M, "fp8_ds_mla"),
    # last occurrence wins
    ([M, "--kv-cache-dtype", "fp8", "--kv-cache-dtype", "auto"], M, "auto"),
    ([M, "--kv-cache-dtype", "auto", "--kv_cache_dtype=fp8"], M, "fp8"),
    # the option may come before the positional
    (["--kv-cache-dtype", "fp8", M], M, "fp8"),
    # look-alikes that are other options
    ([M, "--kv-cache-dtype-skip-layers", "0", "1"], M, None),
    ([M, "--kv_cache_dtype_skip_layers=3"], M, None),
    ([M, "--speculative-config.kv_cache_dtype", "fp8"], M, None),
    ([M, "--speculative_config.kv_cache_dtype=fp8"], M, None),
    ([M, "--speculative-config", '{"kv_cache_dtype": "fp8"}'], M, None),
    # --model forms, moved to the positional slot by vLLM
    (["--model", M, "--kv-cache-dtype", "fp8"], M, "fp8"),
    (["--model=" + M], M, None),
    (["-tp", "2", "--model", M], M, None),
    # flags and options before the positional
    (["--enforce-eager", M], M, None),
    (["-tp", "2", M, "--port", "8000"], M, None),
    (["--tensor_parallel_size=2", M], M, None),
    (["-O3", M], M, None),
    # nargs="+" swallows what follows, as in argparse: the model is not positional here
    (["--api-key", "k1", "k2", M], "Qwen/Qwen3-0.6B", None),
    ([M, "--api-key", "k1", "k2", "--kv-cache-dtype", "fp8"], M, "fp8"),
    # nargs="?": --hf-token takes the next word if there is one
    (["--hf-token", M], "Qwen/Qwen3-0.6B", None),
    ([M, "--hf-token"], M, None),
    # a unique abbreviation of another option is that option
    ([M, "--enable-prefix-cach"], M, None),
    # no model at all: vLLM's default
    ([], "Qwen/Qwen3-0.6B", None),
]


@pytest.mark.parametrize("table", TABLES, ids=lambda t: f"vllm-{t.vllm_version}")
@pytest.mark.parametrize("tokens,model,kv", SPELLINGS, ids=lambda x: repr(x)[:60])
def test_spellings(tokens, model, kv, table):
    args = read(tokens, table)
    assert args.rejection is None
    assert args.model == model
    assert args.value("kv_cache_dtype") == kv


@pytest.mark.parametrize("table", TABLES, ids=lambda t: f"vllm-{t.vllm_version}")
@pytest.mark.parametrize(
    "tokens,fragment",
    [
        # every prefix of --kv-cache-dtype is ambiguous with --kv-cache-dtype-skip-layers
        ([M, "--kv-cache-dt", "fp8"], "ambiguous option"),
        ([M, "--kv-cache", "fp8"], "ambiguous option"),
        ([M, "--kv-cache-dtype"], "expected one argument"),
        ([M, "--model", "other"], "unrecognized arguments"),
        ([M, "--", "x"], "unrecognized arguments"),
        (["--served-model-name", "x", M], "first positional"),
        ([M, "--no-such-option", "1"], "unrecognized arguments"),
        (["--model"], "--model needs a value"),
    ],
)
def test_arguments_vllm_rejects(tokens, fragment, table):
    args = read(tokens, table)
    assert args.rejection is not None and fragment in args.rejection


def test_kv_cache_dtype_choices_follow_the_vllm_version():
    # 0.24 validates the value at parse time (argparse choices); 0.33 accepts any string.
    old, new = load_table("0.24.0"), load_table("0.33.0")
    assert "invalid choice" in read([M, "--kv-cache-dtype", "FP8"], old).rejection
    assert read([M, "--kv-cache-dtype", "FP8"], new).value("kv_cache_dtype") == "FP8"


def test_values_are_case_sensitive():
    args = read([M, "--kv-cache-dtype", "Auto"], load_table("0.33.0"))
    assert args.value("kv_cache_dtype") == "Auto"


def test_dotted_kv_cache_dtype_becomes_a_json_value_at_the_end():
    # vLLM folds --kv-cache-dtype.x into '--kv-cache-dtype {"x": ...}' appended last.
    args = read([M, "--kv-cache-dtype.x", "1", "--kv-cache-dtype", "auto"], load_table("0.33.0"))
    assert args.value("kv_cache_dtype") == '{"x": 1}'


def test_enable_disable_spellings_of_0_33():
    table = load_table("0.33.0")
    assert read([M, "--disable-prefix-caching"], table).value("enable_prefix_caching") is False
    assert read([M, "--no-enable-prefix-caching"], table).value("enable_prefix_caching") is False
    assert read([M, "--enable-prefix-caching"], table).value("enable_prefix_caching") is True
    assert "unrecognized" in read([M, "--disable-prefix-caching"], load_table("0.24.0")).rejection


def test_help_is_not_parsed():
    for tokens in ([M, "--help"], ["-h"], ["--help=ModelConfig"]):
        assert read(tokens).help_requested


# --- --config YAML -----------------------------------------------------------------------


@pytest.mark.parametrize("table", TABLES, ids=lambda t: f"vllm-{t.vllm_version}")
@pytest.mark.parametrize(
    "tokens,config,model,kv,source",
    [
        ([M, "--config", "c.yaml"], {"kv_cache_dtype": "fp8"}, M, "fp8", "config file"),
        ([M, "--config", "c.yaml"], {"kv-cache-dtype": "auto"}, M, "auto", "config file"),
        # the command line beats the file, wherever it stands
        ([M, "--config", "c.yaml", "--kv-cache-dtype", "auto"], {"kv_cache_dtype": "fp8"}, M, "auto", "command line"),
        ([M, "--kv-cache-dtype", "auto", "--config", "c.yaml"], {"kv_cache_dtype": "fp8"}, M, "auto", "command line"),
        # model from the file, and the positional beating it
        (["--config", "c.yaml"], {"model": M}, M, None, None),
        (["--config", "c.yaml", "--port", "8000"], {"model": M, "kv_cache_dtype": "fp8"}, M, "fp8", "config file"),
        (["other/model", "--config", "c.yaml"], {"model": M}, "other/model", None, None),
        # a nested mapping becomes JSON; the speculative dtype is not the main one
        ([M, "--config", "c.yaml"], {"speculative_config": {"kv_cache_dtype": "fp8"}}, M, None, None),
        # false booleans are dropped, true ones become flags, lists become nargs values
        ([M, "--config", "c.yaml"], {"enforce_eager": False, "kv_cache_dtype_skip_layers": ["0", "1"]}, M, None, None),
    ],
)
def test_config_file(tokens, config, model, kv, source, table):
    args = read(tokens, table, {"c.yaml": config})
    assert args.rejection is None
    assert args.config_path == "c.yaml"
    assert args.model == model
    assert args.value("kv_cache_dtype") == kv
    assert args.source("kv_cache_dtype") == source


def test_config_with_equals_is_ignored_and_warned_about():
    args = read([M, "--config=c.yaml"], configs={"c.yaml": {"kv_cache_dtype": "fp8"}})
    assert args.config_path is None
    assert args.value("kv_cache_dtype") is None
    assert any("never read" in w for w in args.warnings)


def test_model_from_config_needs_a_model_somewhere():
    # vLLM checks the first token: a positional after an option does not count.
    args = read(["--port", "8000", M, "--config", "c.yaml"], configs={"c.yaml": {"port": 1}})
    assert args.rejection and "no model" in args.rejection


@pytest.mark.parametrize(
    "tokens,fragment",
    [
        ([M, "--config"], "needs a file name"),
        ([M, "--config", "a.yaml", "--config", "b.yaml"], "more than once"),
        ([M, "--config", "settings.json"], ".yaml/.yml"),
        ([M, "--config", "missing.yaml"], "no such file"),
    ],
)
def test_config_file_errors(tokens, fragment):
    with pytest.raises(ConfigFileError) as err:
        read(tokens, configs={"a.yaml": {}, "b.yaml": {}})
    assert fragment in str(err.value)


def test_config_to_args_mirrors_vllm_load_config_file():
    assert config_to_args(
        {"port": 8000, "enforce_eager": True, "trust_remote_code": False, "ignore_patterns": ["a", "b"],
         "empty": [], "hf_overrides": {"x": 1}, "none": None}
    ) == ["--port", "8000", "--enforce_eager", "--ignore_patterns", "a", "b",
          "--hf_overrides", '{"x": 1}', "--none", "None"]


@pytest.mark.parametrize(
    "token,name",
    [
        ("--kv-cache-dtype", "kv-cache-dtype"),
        ("--kv_cache_dtype=auto", "kv-cache-dtype"),
        ("--speculative_config.kv_cache_dtype", "speculative-config.kv_cache_dtype"),
        ("-tp", None),
        ("--", None),
        ("model", None),
    ],
)
def test_option_name(token, name):
    assert option_name(token) == name


def test_unknown_option_with_an_older_table_is_reported_not_rejected():
    # A vLLM newer than every table may have options we do not know: say so, do not refuse.
    table = load_table("99.0.0")
    assert not table.exact
    args = read([M, "--brand-new-flag", "--kv-cache-dtype", "fp8"], table)
    assert args.rejection is None
    assert args.unknown_options == ("--brand-new-flag",)
    assert args.value("kv_cache_dtype") == "fp8"


def test_rejection_quotes_option_names_not_values():
    # "--api-kee" is a typo for --api-key: the word after it may be the key itself.
    args = read([M, "--api-kee", "sk-secret-123"], load_table("0.33.0"))
    assert args.rejection == "unrecognized arguments: --api-kee, 1 other word"


# --- the replica parser holds only the options a parse can reach --------------------------------

from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from dsv4_launch.vllm_cli import serve_args as _sa  # noqa: E402

_TABLES = {v: load_table(v) for v in ("0.24.0", "0.33.0")}


def _outcome(parser, tokens):
    """What argparse makes of ``tokens`` with ``parser``: values given, extras, secret values;
    or the error text."""
    parser.secret_values = []
    try:
        namespace, extras = parser.parse_known_args(list(tokens))
    except Exception as exc:  # argparse's ArgumentError or the replica's rejection
        return type(exc).__name__, str(exc)
    given_values = {k: v for k, v in vars(namespace).items() if v is not None}
    return given_values, extras, list(parser.secret_values)


def _same_as_full_parser(version, tokens):
    table = _TABLES[version]
    try:
        processed = _sa._fold_dotted(_sa._normalise(list(tokens)))
    except (_sa._ParseRejected, *_sa._VLLM_FAILURES):
        return  # vLLM's pre-processing rejects them: no parser is reached
    subset = _sa._build_replica(table, _sa.needed_actions(table, processed))
    assert _outcome(subset, processed) == _outcome(_sa._build_replica(table), processed), tokens


@pytest.mark.parametrize("version", sorted(_TABLES))
@pytest.mark.parametrize("tokens", [
    ["m", "-tp", "2"], ["m", "-tp2"], ["m", "-tp=2"], ["m", "-O3"], ["m", "-O", "3"], ["m", "-O=3"],
    ["m", "--max"], ["m", "--max-model", "4096"], ["m", "--max-model-len=4k"], ["m", "--kv", "fp8"],
    ["m", "--kv-cache-dtype", "nope"], ["m", "--api-key", "-secret", "--port", "1"], ["m", "--api-key"],
    ["m", "--tensor-parallel-size", "-1"], ["m", "-1"], ["m", "--", "--port", "2"], ["m", "-"],
    ["m", "--enable-expert", "--no-enable-prefix-caching"], ["m", "--speculative-config.method", "mtp"],
    ["--model", "m", "--port"], ["m", "--p", "1"], ["m", "-pp", "2", "-dp", "4"], ["m", "--x=1", "-q"],
    ["m", "--served-model-name", "a", "b", "--api-key", "k1", "k2"], ["m", "--hf-overrides", "{}"],
    ["m", "-qn"], ["m", "-q5"], ["m", "-r5"], ["m", "-nq", "x"], ["m", "-n1"], ["m", "-rq"], ["m", "-q=fp8"],
])
def test_a_replica_of_the_needed_options_parses_as_the_full_one(version, tokens):
    _same_as_full_parser(version, tokens)


_STRINGS = sorted({*_TABLES["0.33.0"].option_strings, *_TABLES["0.24.0"].option_strings})
_TOKEN = st.one_of(
    st.sampled_from(_STRINGS),
    st.tuples(st.sampled_from(_STRINGS), st.integers(2, 12)).map(lambda p: p[0][: p[1]]),  # abbreviations
    st.tuples(st.sampled_from(_STRINGS), st.sampled_from(["1", "fp8", "", "-2", "a=b"])).map("=".join),
    st.sampled_from(["-O3", "-Ofoo", "-tp4", "-xyz", "-1", "-2.5", "--", "-", "fp8", "auto", "8", "-k",
                     "-qn", "-q5", "-r1", "-nq", "-rqn"]),  # two-character options run together
    st.text(alphabet="-abcdefghijklmnopqrstuvwxyz=._0123456789", max_size=12),
)


@settings(max_examples=300, deadline=None)
@given(version=st.sampled_from(sorted(_TABLES)), tokens=st.lists(_TOKEN, max_size=8))
def test_replica_subset_matches_the_full_parser_on_generated_argvs(version, tokens):
    _same_as_full_parser(version, ["m", *tokens])


@pytest.mark.parametrize("exact", [True, False])
def test_a_bare_double_dash_is_named_but_never_an_unknown_option(exact):
    """argparse leaves a second '--' (or one after the positional) among the extras; it is no
    option a newer vLLM could know, so it is never listed as one — and it is quoted as itself."""
    table = load_table("0.33.0")._replace(exact=exact)
    lenient = read_serve_args(["m", "-tp", "2", "--", "--port", "1"], table)
    assert "--" not in lenient.unknown_options
    rejected = read_serve_args(["m", "--", "--"], table)
    assert rejected.rejection == "unrecognized arguments: --"
    assert "--" not in (rejected.unknown_options or ())
    # in argparse's order, as vLLM 0.33.0 prints it ("unrecognized arguments: -- --api-key=…")
    ordered = read_serve_args(["m", "-tp", "2", "--", "--api-key=Zq0000SECRETX"], load_table("0.33.0"))
    assert ordered.rejection == "unrecognized arguments: --, --api-key"


# Two --config files: vLLM's only guard is `assert args.count("--config") <= 1`
# (vllm/utils/argparse_utils.py _pull_args_from_config, 0.24.0 … 0.33.0); under -O it is skipped and
# vLLM reads the first file, the later `--config FILE` an ordinary option never read.
@pytest.mark.parametrize("tokens, model, kv", [
    ([M, "--config", "a.yaml", "--config", "b.yaml"], M, "fp8"),
    ([M, "--config", "a.yaml", "-tp", "2", "--config", "b.yaml", "--config", "c.yaml"], M, "fp8"),
    (["--config", "b.yaml", "--config", "a.yaml"], "other/model", "auto"),
    ([M, "--config", "a.yaml", "--config", "missing.yaml"], M, "fp8"),  # the second is never opened
])
@pytest.mark.parametrize("table", TABLES, ids=lambda t: f"vllm-{t.vllm_version}")
def test_two_config_files_under_optimize_are_a_warning_and_the_first_is_read(tokens, model, kv, table):
    configs = {"a.yaml": {"kv_cache_dtype": "fp8"}, "b.yaml": {"model": "other/model", "kv_cache_dtype": "auto"},
               "c.yaml": {}}
    with pytest.raises(ConfigFileError, match="more than once"):
        read(tokens, table, configs)

    def load(path):
        if path not in configs:
            raise ConfigFileError(f"--config {path}: no such file")
        return configs[path]

    args = read_serve_args(tokens, table, load, optimized="PYTHONOPTIMIZE is set")
    assert args.rejection is None and args.model == model and args.value("kv_cache_dtype") == kv
    assert args.config_path == tokens[tokens.index("--config") + 1]
    assert any("--config is given more than once: vLLM checks this only with an assert, which Python skips "
               "under -O (PYTHONOPTIMIZE is set), and then reads the first file" in w for w in args.warnings)


@pytest.mark.parametrize("flag, env, why", [
    (0, {}, None), (0, {"PYTHONOPTIMIZE": "0"}, None), (0, {"PYTHONOPTIMIZE": ""}, None),
    (0, {"PYTHONOPTIMIZE": "1"}, "PYTHONOPTIMIZE is set"), (0, {"PYTHONOPTIMIZE": "yes"}, "PYTHONOPTIMIZE is set"),
    (1, {}, "Python runs with -O"), (2, {"PYTHONOPTIMIZE": "0"}, "Python runs with -O"),
])
def test_optimized_is_the_environment_or_this_interpreters_flag(monkeypatch, flag, env, why):
    # Faked: this interpreter's flags (sys.flags.optimize), at the boundary gather reads it.
    import sys
    import types

    from dsv4_launch.adapters import gather

    monkeypatch.setattr(gather, "sys", types.SimpleNamespace(flags=types.SimpleNamespace(optimize=flag)))
    assert gather.optimized(env) == why
    assert sys.flags.optimize == 0


def test_two_config_files_under_python_O_start_with_the_first(tmp_path):
    """A real ``python -O``: plan reads two --config files as vLLM under -O does (and refuses without -O)."""
    import subprocess
    import sys

    from tests.conftest import clean_env

    (tmp_path / "a.yaml").write_text(f"model: {M}\nkv-cache-dtype: fp8\n")
    (tmp_path / "b.yaml").write_text("model: other/model\n")
    code = ("import sys; from dsv4_launch.adapters.gather import read_args; "
            "from dsv4_launch.vllm_cli.option_table import load_table; "
            "a = read_args(['--config', 'a.yaml', '--config', 'b.yaml'], load_table('0.33.0'), {}); "
            "print(a.model, a.value('kv_cache_dtype'), '|'.join(a.warnings))")
    env = clean_env(tmp_path)
    env.pop("PYTHONOPTIMIZE", None)
    run = subprocess.run([sys.executable, "-O", "-c", code], cwd=tmp_path, env=env, capture_output=True, text=True,
                         timeout=120)
    assert run.returncode == 0, run.stderr
    assert run.stdout.startswith(f"{M} fp8 ") and "Python runs with -O" in run.stdout
    run = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, env=env, capture_output=True, text=True,
                         timeout=120)
    assert run.returncode != 0 and "ConfigFileError: --config is given more than once" in run.stderr


# --- an option placed before the model -------------------------------------------------------

def _new_value_options(old: str, new: str) -> list[str]:
    """The options ``new``'s recorded table adds to ``old``'s that take a value (their first spelling)."""
    before = {o for a in load_table(old).actions for o in a.options}
    return [a.options[0] for a in load_table(new).actions
            if a.nargs not in (0, "?") and not set(a.options) & before]


def test_every_option_034_adds_that_takes_a_value_leaves_the_model_after_it():
    added = _new_value_options("0.33.0", "0.34.0")
    assert "--max-num-inflight-kv-loads" in added and "--cache-aware-admission-window" in added
    for option in added:
        args = read_serve_args([option, "4", M], load_table("0.34.0"))
        assert (args.model, args.value("model_tag"), args.rejection, args.model_doubt) == (M, M, None, ""), option
        assert read_serve_args([option, "4", M], load_table("0.33.0")).rejection  # 0.33.0 has no such option


@pytest.mark.parametrize("tokens, doubt", [
    (["--from-the-future", "4", M], "--from-the-future"),  # read as model "4": M would be the model
    (["--from-the-future", M, "-tp", "2"], "--from-the-future"),  # a flag, or M is its value
    ([M, "--from-the-future", "4"], ""),  # the model first: read for sure
    (["--from-the-future=4", M], ""),  # the value joined to it
    (["--model", M, "--from-the-future", "4"], ""),
])
def test_an_unknown_option_before_the_model_leaves_the_model_in_doubt(tokens, doubt):
    # A release newer than every recorded table: the newest table, not exact; an option it lacks
    # may take a value, and then the word after it is that value, not the model.
    args = read_serve_args(tokens, load_table("9.0.0"))
    assert args.rejection is None and args.unknown_options == ("--from-the-future",)
    assert args.model_doubt == doubt

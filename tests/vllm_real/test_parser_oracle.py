"""Differential test: our reading of `vllm serve` arguments vs vLLM's real parser.

For every case of the spelling table and for hundreds of generated argument vectors, the
effective --kv-cache-dtype and model we compute equal what vLLM parses, or both reject.
"""

from __future__ import annotations

import json

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dsv4_launch.adapters.config_file import load_config_file
from dsv4_launch.vllm_cli.option_table import load_table
from dsv4_launch.vllm_cli.serve_args import ConfigFileError, read_serve_args

from .conftest import real_parse

M = "deepseek-ai/DeepSeek-V4-Flash"
M2 = "local/other-model"
M3 = "org/model-from-yaml"

YAMLS = {
    "kv-auto.yaml": "kv_cache_dtype: auto\n",
    "kv-fp8.yaml": "kv-cache-dtype: fp8\n",
    "model.yaml": f"model: {M3}\n",
    "model-kv.yml": f"model: {M3}\nkv_cache_dtype: bfloat16\n",
    "flags.yaml": "enforce_eager: true\ntensor_parallel_size: 2\nenable_prefix_caching: false\n",
    "spec.yaml": "speculative_config:\n  kv_cache_dtype: fp8\n",
    "skip.yaml": "kv_cache_dtype_skip_layers: ['0', '1']\nmodel: " + M3 + "\n",
}


@pytest.fixture(scope="module")
def yaml_dir(tmp_path_factory):
    folder = tmp_path_factory.mktemp("yaml")
    for name, text in YAMLS.items():
        (folder / name).write_text(text)
    (folder / "bad.json").write_text("{}")
    (folder / "broken.yaml").write_text("a: [1\n")
    return folder


def ours(tokens, version):
    table = load_table(version)
    try:
        args = read_serve_args(tokens, table, load_config_file)
    except ConfigFileError as exc:
        return "reject", str(exc)
    if args.rejection:
        return "reject", args.rejection
    return "ok", (args.model, args.value("kv_cache_dtype") or "auto")


def compare(top, version, tokens):
    real_status, real = real_parse(top, tokens)
    our_status, our = ours(tokens, version)
    assert our_status == real_status, f"{tokens}: vLLM {real_status} {real!r}, ours {our_status} {our!r}"
    if real_status == "ok":
        model = real.model_tag if real.model_tag is not None else real.model
        assert our == (model, real.kv_cache_dtype), f"{tokens}: vLLM {(model, real.kv_cache_dtype)}"


def spelling_cases():
    from tests.door.test_serve_args import SPELLINGS

    return [tokens for tokens, _, _ in SPELLINGS]


REJECTED = [
    [M, "--kv-cache-dt", "fp8"],
    [M, "--kv-cache", "fp8"],
    [M, "--kv-cache-dtype"],
    [M, "--model", "other"],
    [M, "--", "x"],
    [M, "--"],
    ["--served-model-name", "x", M],
    [M, "--no-such-option", "1"],
    [M, "--kv-cache-dtype", "fp8", "--kv-cache-dtype.x", "1"],
]


@pytest.mark.parametrize("tokens", spelling_cases() + REJECTED, ids=lambda t: " ".join(t)[:70])
def test_spelling_table(real_vllm, tokens):
    top, _, version = real_vllm
    compare(top, version, tokens)


@pytest.mark.parametrize(
    "tokens",
    [
        [M, "--config", "{d}/kv-auto.yaml"],
        [M, "--config", "{d}/kv-fp8.yaml"],
        [M, "--config", "{d}/kv-fp8.yaml", "--kv-cache-dtype", "auto"],
        [M, "--kv_cache_dtype=auto", "--config", "{d}/kv-fp8.yaml"],
        ["--config", "{d}/model.yaml"],
        ["--config", "{d}/model-kv.yml", "--port", "8001"],
        [M2, "--config", "{d}/model.yaml"],
        ["--config", "{d}/model.yaml", M2],
        ["--port", "8001", M2, "--config", "{d}/kv-auto.yaml"],
        [M, "--config", "{d}/flags.yaml"],
        [M, "--config", "{d}/spec.yaml"],
        ["--config", "{d}/skip.yaml"],
        [M, "--config={d}/kv-fp8.yaml"],
        [M, "--config", "{d}/bad.json"],
        [M, "--config", "{d}/broken.yaml"],
        [M, "--config", "{d}/missing.yaml"],
        [M, "--config", "{d}/kv-auto.yaml", "--config", "{d}/kv-fp8.yaml"],
        [M, "--config"],
        ["--served-model-name", "x", "--config", "{d}/model.yaml"],
    ],
    ids=lambda t: " ".join(t).replace("{d}/", "")[:70],
)
def test_config_files(real_vllm, yaml_dir, tokens):
    top, _, version = real_vllm
    compare(top, version, [t.replace("{d}", str(yaml_dir)) for t in tokens])


# --- generated argument vectors ----------------------------------------------------------

KV = st.sampled_from(["auto", "fp8", "fp8_e4m3", "bfloat16", "fp8_ds_mla"])


def spelled(name: str):
    """The option name as a user may write it: dashes, underscores, or a mix."""
    return st.sampled_from([name, name.replace("-", "_"), name.replace("-", "_", 1)])


def option(name: str, values):
    """--name value or --name=value."""
    return st.tuples(spelled(name), values, st.booleans()).map(
        lambda t: [f"--{t[0]}={t[1]}"] if t[2] else [f"--{t[0]}", t[1]]
    )


def pieces(yaml_dir):
    configs = st.sampled_from(sorted(YAMLS))
    return st.one_of(
        option("kv-cache-dtype", KV),
        option("kv-cache-dtype", KV),  # twice as likely: repeats matter
        option("kv-cache-dtype-skip-layers", st.sampled_from(["0", "auto", "fp8"])),
        option("speculative-config.kv_cache_dtype", KV),
        st.just(["--speculative-config", json.dumps({"kv_cache_dtype": "fp8"})]),
        st.sampled_from([["-tp", "2"], ["--tensor-parallel-size=2"], ["--tensor_parallel_size", "4"]]),
        st.sampled_from([["--enforce-eager"], ["--enable-prefix-caching"], ["--trust-remote-code"], ["-O3"]]),
        option("port", st.sampled_from(["8001", "9000"])),
        st.sampled_from([["--api-key", "k1"], ["--api-key", "k1", "k2"], ["--api-key=k1"]]),
        st.sampled_from([["--hf-token"], ["--hf-token", "hf_x"], ["--hf-token=hf_y"]]),
        option("model", st.just(M2)),
        option("served-model-name", st.just("ds")),
        st.sampled_from([["--kv-cache-dt", "fp8"], ["--enforce-eag"], ["--max-model-l", "4096"]]),
        configs.map(lambda name: ["--config", str(yaml_dir / name)]),
        configs.map(lambda name: [f"--config={yaml_dir / name}"]),
    )


@settings(max_examples=600, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(data=st.data())
def test_generated_argument_vectors(real_vllm, yaml_dir, data):
    top, _, version = real_vllm
    parts = data.draw(st.lists(pieces(yaml_dir), max_size=6), label="options")
    tokens = [t for part in parts for t in part]
    where = data.draw(st.one_of(st.none(), st.integers(0, len(parts))), label="positional at")
    if where is not None:
        head = [t for part in parts[:where] for t in part]
        tokens = head + [M] + tokens[len(head):]
    compare(top, version, tokens)


def test_replica_table_is_the_live_parser(real_vllm):
    """The packaged option table for this vLLM is what its parser really has."""
    _, serve, version = real_vllm
    table = load_table(version)
    assert table.exact, f"no option table recorded for vLLM {version}: run tools/gen_vllm_options.py"
    live = {}
    for option, action in serve._option_string_actions.items():
        nargs = 0 if action.nargs == 0 or type(action).__name__ == "_HelpAction" else (
            1 if action.nargs is None else action.nargs)
        live[option] = (action.dest, nargs)
    recorded = {o: (a.dest, a.nargs) for a in table.actions for o in a.options}
    assert recorded == live


# vLLM's only guard against two --config files is `assert args.count("--config") <= 1`
# (utils/argparse_utils.py _pull_args_from_config): under `python -O` it is skipped. Asked of the
# real parser in one `python -O` child (vLLM imports once): it reads the first file, and so does our
# reading (a warning).
OPTIMIZED_CHILD = """
import importlib.metadata, json, sys
sys.path.insert(0, sys.argv[1])
from vllm_serve_parser import make_serve_parser
from dsv4_launch.adapters.gather import read_args
from dsv4_launch.vllm_cli.option_table import load_table
top, _ = make_serve_parser()
table = load_table(importlib.metadata.version("vllm"))
for tokens in json.loads(sys.argv[2]):
    real = top.parse_args(["serve", *tokens])
    mine = read_args(tokens, table, {})
    print(json.dumps({"flag": sys.flags.optimize,
                      "real": [real.model_tag if real.model_tag is not None else real.model, real.kv_cache_dtype],
                      "ours": [mine.model, mine.value("kv_cache_dtype") or "auto"], "warnings": list(mine.warnings)}))
"""
TWO_CONFIGS = [
    [M, "--config", "{d}/kv-fp8.yaml", "--config", "{d}/kv-auto.yaml"],
    ["--config", "{d}/model-kv.yml", "--config", "{d}/model.yaml", "--port", "8001"],
    [M, "--config", "{d}/kv-auto.yaml", "--config", "{d}/missing.yaml"],
]


def test_two_config_files_under_python_O_as_vllm_reads_them(real_vllm, yaml_dir):
    import os
    import subprocess
    import sys

    from .conftest import TOOLS

    argvs = [[t.replace("{d}", str(yaml_dir)) for t in tokens] for tokens in TWO_CONFIGS]
    done = subprocess.run([sys.executable, "-O", "-c", OPTIMIZED_CHILD, str(TOOLS), json.dumps(argvs)],
                          capture_output=True, text=True, timeout=600, env={**os.environ, "VLLM_TARGET_DEVICE": "cpu"})
    assert done.returncode == 0, done.stderr[-2000:]
    lines = [json.loads(line) for line in done.stdout.splitlines() if line.startswith('{"flag"')]
    assert len(lines) == len(argvs)
    for argv, got in zip(argvs, lines):
        assert got["flag"] == 1 and got["ours"] == got["real"], (argv, got)
        assert any("--config is given more than once" in w and "Python runs with -O" in w for w in got["warnings"])
        top, _, version = real_vllm
        compare(top, version, argv)  # without -O: vLLM's assert, and our refusal


def test_every_option_this_release_adds_that_takes_a_value_leaves_the_model_after_it(real_vllm):
    """``OPT VALUE MODEL`` for each option this release's table adds to the previous recorded one
    (0.34.0: --max-num-inflight-kv-loads, --cache-aware-admission-window, …): vLLM's parser and
    ours both read MODEL, not VALUE."""
    from dsv4_launch.core.versions import parse_version
    from dsv4_launch.vllm_cli.option_table import available_versions

    top, serve, version = real_vllm
    table = load_table(version)
    older = [v for v in available_versions() if parse_version(v) < parse_version(table.vllm_version)]
    if not table.exact or not older:
        pytest.skip(f"no recorded table before vLLM {version}'s own")
    before = {o for a in load_table(older[-1]).actions for o in a.options}
    added = [a for a in serve._actions if a.option_strings and not set(a.option_strings) & before
             and a.nargs not in (0, "?") and type(a).__name__ != "_HelpAction"]
    for action in added:
        option = action.option_strings[0]
        # a value vLLM takes for it, the model first (a choice, a number, a JSON object, a word)
        values = [str(c) for c in action.choices or ()] + ["4", "{}", "x"]
        value = next((v for v in values if real_parse(top, [M, option, v])[0] == "ok"), None)
        assert value is not None, option
        outcome, namespace = real_parse(top, [option, value, M])
        assert outcome == "ok" and namespace.model_tag == M, (option, namespace)
        ours = read_serve_args([option, value, M], table)
        assert (ours.model, ours.model_doubt, ours.rejection) == (M, "", None), option

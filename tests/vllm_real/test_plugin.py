"""The vLLM plugin against the real vLLM, on the CPU: discovered and loaded by vLLM's own
``load_general_plugins()``, and ``EngineArgs(...).create_engine_config()`` — the path of
``vllm serve``, ``LLM()`` and Ray Serve's engines — yields ``cache_config.cache_dtype == "fp8"``
exactly where dsv4-serve would have rewritten the argument.

Also: the plugin's change (INFO) and what dsv4-serve would refuse (WARNING) read from the
output of a real vLLM process, in vLLM's own log format; and the plugin reading vLLM's real
``EngineArgs`` (from vLLM's parser and ``from_cli_args``) plans every case of the rule matrix as
dsv4-serve does from the same argv.

Faked: only the GPU type (DSV4_LAUNCH_GPU_CAPABILITY; the CPU platform builds the config), and
the model is a small DeepSeek-V4 config.json on disk (no weights are loaded by a config).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from dsv4_launch.core.versions import is_older

from .conftest import parse_fresh

V4_CONFIG = {"architectures": ["DeepseekV4ForCausalLM"], "model_type": "deepseek_v4", "num_attention_heads": 64,
             "o_groups": 8, "hidden_size": 1024, "num_hidden_layers": 2, "vocab_size": 1024,
             "max_position_embeddings": 4096, "torch_dtype": "bfloat16", "num_key_value_heads": 1,
             "head_dim": 512, "sliding_window": 128, "compress_ratios": [0, 4]}
LLAMA_CONFIG = {"architectures": ["LlamaForCausalLM"], "model_type": "llama", "hidden_size": 256,
                "intermediate_size": 512, "num_attention_heads": 4, "num_hidden_layers": 2, "vocab_size": 1024,
                "max_position_embeddings": 2048, "torch_dtype": "bfloat16"}


@pytest.fixture(scope="module")
def models(tmp_path_factory):
    root = tmp_path_factory.mktemp("models")
    made = {}
    for name, config in (("v4", V4_CONFIG), ("llama", LLAMA_CONFIG)):
        (root / name).mkdir()
        (root / name / "config.json").write_text(json.dumps(config))
        made[name] = str(root / name)
    return made


@pytest.fixture(scope="module")
def plugin(real_vllm):
    """Load plugins the way vLLM does; the patch must then be in place."""
    import vllm.engine.arg_utils as arg_utils
    from vllm.plugins import load_general_plugins

    load_general_plugins()
    assert getattr(arg_utils.resolve_kv_cache_dtype_string, "_dsv4_launch_patched", False), \
        "vLLM did not load the dsv4_launch plugin (is dsv4-launch installed in this environment?)"
    return real_vllm[2]


def engine_dtype(model, monkeypatch, capability, **kwargs):
    from vllm.engine.arg_utils import EngineArgs

    monkeypatch.setenv("DSV4_LAUNCH_GPU_CAPABILITY", capability)
    config = EngineArgs(model=model, skip_tokenizer_init=True, **kwargs).create_engine_config()
    return config.cache_config.cache_dtype


def expected_default(version, capability):
    """What dsv4-serve would hand vLLM for no --kv-cache-dtype: fp8 on SM 12.x always (the
    layout's only dtype), on SM 9.x/10.x before 0.30 (the crash); otherwise left alone."""
    return "fp8" if capability.startswith("12") or is_older(version, "0.30.0") else "auto"


@pytest.mark.parametrize("capability", ["12.0", "9.0", "10.0"])
def test_llm_path_engine_args(plugin, models, monkeypatch, capability):
    assert engine_dtype(models["v4"], monkeypatch, capability) == expected_default(plugin, capability)


@pytest.mark.parametrize("capability", ["12.0", "9.0"])
def test_vllm_serve_path_real_cli(plugin, real_vllm, models, monkeypatch, capability):
    from vllm.engine.arg_utils import AsyncEngineArgs

    top, _, version = real_vllm
    namespace = parse_fresh(top, [models["v4"], "--skip-tokenizer-init"])  # vLLM writes into its configs
    namespace.model = namespace.model_tag  # what `vllm serve` does before it builds the engine
    monkeypatch.setenv("DSV4_LAUNCH_GPU_CAPABILITY", capability)
    config = AsyncEngineArgs.from_cli_args(namespace).create_engine_config()
    assert config.cache_config.cache_dtype == expected_default(version, capability)


@pytest.mark.parametrize(
    "model,kwargs,capability",
    [
        ("v4", {"kv_cache_dtype": "fp8_ds_mla"}, "12.0"),  # explicit values are never changed
        ("v4", {"kv_cache_dtype": "fp8"}, "12.0"),  # what dsv4-serve already wrote: a no-op
        ("llama", {}, "12.0"),  # other models
        ("v4", {"attention_backend": "FLASHINFER_MLA_SPARSE_DSV4"}, "10.0"),  # plain rows: auto is bf16
    ],
)
def test_left_alone(plugin, models, monkeypatch, model, kwargs, capability):
    expected = kwargs.get("kv_cache_dtype", "auto")
    assert engine_dtype(models[model], monkeypatch, capability, **kwargs) == expected


def test_off_switch_at_decision_time(plugin, models, monkeypatch):
    monkeypatch.setenv("DSV4_LAUNCH_DISABLE", "1")
    assert engine_dtype(models["v4"], monkeypatch, "12.0") == "auto"


def test_loading_twice_is_harmless(plugin, models, monkeypatch):
    import vllm.engine.arg_utils as arg_utils

    from dsv4_launch.plugin import register

    before = arg_utils.resolve_kv_cache_dtype_string
    register()
    register()
    assert arg_utils.resolve_kv_cache_dtype_string is before
    assert engine_dtype(models["v4"], monkeypatch, "12.0") == "fp8"


def fresh(code: str, **env) -> subprocess.CompletedProcess:
    full = {**os.environ, "VLLM_TARGET_DEVICE": "cpu", **env}
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=full, timeout=600)


DISCOVER = """
import json
from vllm.plugins import load_plugins_by_group
import vllm.engine.arg_utils as a
loaded = load_plugins_by_group("vllm.general_plugins")
for f in loaded.values(): f()
print(json.dumps({"names": sorted(loaded),
                  "patched": getattr(a.resolve_kv_cache_dtype_string, "_dsv4_launch_patched", False)}))
"""


def test_vllm_discovers_it_and_vllm_plugins_turns_it_off(real_vllm):
    on = json.loads(fresh(DISCOVER).stdout.strip().splitlines()[-1])
    assert "dsv4_launch" in on["names"] and on["patched"] is True
    off = json.loads(fresh(DISCOVER, VLLM_PLUGINS="some_other_plugin").stdout.strip().splitlines()[-1])
    assert "dsv4_launch" not in off["names"] and off["patched"] is False
    disabled = json.loads(fresh(DISCOVER, DSV4_LAUNCH_DISABLE="1").stdout.strip().splitlines()[-1])
    assert "dsv4_launch" in disabled["names"] and disabled["patched"] is False


LOADED = """
import json, sys
import vllm.engine.arg_utils
before = set(sys.modules)
import importlib
importlib.import_module("dsv4_launch.plugin").register()
print(json.dumps(sorted(set(sys.modules) - before)))
"""


def test_loading_imports_only_the_patch_and_its_settings(real_vllm):
    # vLLM loads the plugin in every process; what loading adds must stay a handful of small
    # modules: the facts (NVML, config files, the rules) are gathered only when vLLM resolves
    # the dtype. (The cost in milliseconds is the benchmark's: timings do not belong in tests.)
    added = json.loads(fresh(LOADED).stdout.strip().splitlines()[-1])
    ours = {m for m in added if m.startswith("dsv4_launch")}
    assert ours <= {"dsv4_launch", "dsv4_launch.plugin", "dsv4_launch.plugin.kv_patch", "dsv4_launch.core",
                    "dsv4_launch.core.records", "dsv4_launch.core.gpus", "dsv4_launch.core.settings",
                    # the release table: data, no imports
                    "dsv4_launch.core.vllm", "dsv4_launch.core.vllm.releases"}, ours
    assert "dsv4_launch.plugin.kv_patch" in ours  # it did load and patch
    assert not set(added) - ours, set(added) - ours  # nothing else: no pynvml, yaml, rich, click, json readers


# --- The plugin says its change and findings in vLLM's own log ---------------------------

LOGGED = """
import os, sys
import vllm.platforms as platforms
from vllm.platforms.cpu import CpuPlatform
platforms._current_platform = CpuPlatform()  # no GPU here: the CPU platform builds the config
from vllm.engine.arg_utils import EngineArgs
from vllm.plugins import load_general_plugins
load_general_plugins()
config = EngineArgs(model=sys.argv[1], skip_tokenizer_init=True, block_size=int(sys.argv[2])).create_engine_config()
print("DTYPE", config.cache_config.cache_dtype)
"""


def _vllm_line(output: str, level: str, text: str) -> str:
    """The one line of vLLM's output holding ``text``; it must be in vLLM's format: the level,
    a date, a time and [file:line] before the message (vllm/logger.py _FORMAT)."""
    import re

    lines = [x for x in output.splitlines() if text in x]
    assert len(lines) == 1, (text, output[-3000:])
    assert re.search(rf"{level} \d\d-\d\d \d\d:\d\d:\d\d(\.\d+)? \[kv_patch\.py:\d+\] dsv4-launch: ",
                     lines[0]), lines[0]
    return lines[0]


def test_the_change_and_a_would_refuse_are_in_vllms_own_log(real_vllm, models):
    # --block-size 64 on SM 12.x: dsv4-serve refuses (block-size row); the plugin cannot stop
    # vLLM, so vLLM's log gets a WARNING naming that, and the KV change at INFO. Read from the
    # real process's output, as a user sees it (vLLM's handler writes to stdout).
    done = subprocess.run([sys.executable, "-c", LOGGED, models["v4"], "64"], capture_output=True, text=True,
                          env={**os.environ, "VLLM_TARGET_DEVICE": "cpu", "DSV4_LAUNCH_GPU_CAPABILITY": "12.0"},
                          timeout=600)
    output = done.stdout + done.stderr
    assert "DTYPE fp8" in done.stdout, output[-3000:]
    _vllm_line(output, "INFO", "dsv4-launch: changed: --kv-cache-dtype auto → fp8")
    line = _vllm_line(output, "WARNING", "dsv4-serve would refuse to start this")
    assert "--block-size 64" in line


# --- The plugin reads vLLM's real EngineArgs as dsv4-serve reads the argv ----------------

def _matrix():
    from tests.rules.test_rules import CASES

    return [pytest.param(case, id=f"{rule}-{way}")
            for rule, pair in CASES.items() for way, case in zip(("trips", "passes"), pair)]


@pytest.mark.parametrize("case", _matrix())
def test_the_real_engine_args_give_the_same_plan(real_vllm, case):
    """Every case of the rule matrix through vLLM's own parser and ``EngineArgs.from_cli_args``
    (what `vllm serve` hands the engine), read by the plugin, against the replica's reading of
    the same argv's engine options: the same changes, warnings, refusals and findings. Arguments the real
    parser rejects never reach an engine; dsv4-serve must not start those either."""
    from vllm.engine.arg_utils import AsyncEngineArgs

    from dsv4_launch.core.rules.plan import make_plan
    from dsv4_launch.vllm_cli.engine_args import read_engine_args
    from dsv4_launch.vllm_cli.option_table import load_table
    from dsv4_launch.vllm_cli.serve_args import read_serve_args
    from tests.rules.test_rules import judge

    top, _, installed = real_vllm
    tokens, kw = case
    table = load_table(installed)
    serve_args = read_serve_args(tokens, table, lambda p: {})
    try:
        namespace = parse_fresh(top, tokens)
        namespace.model = namespace.model_tag  # what `vllm serve` does before it builds the engine
        engine = AsyncEngineArgs.from_cli_args(namespace)
    except (SystemExit, Exception) as exc:  # vLLM itself stops here: judged for this very release
        _, facts = judge((tokens, {**kw, "version": installed}))
        refused = serve_args.rejection or make_plan(facts._replace(args=serve_args)).refusals
        assert refused, f"vLLM {installed} rejects {tokens} ({exc!r}) but dsv4-serve would start it"
        return
    assert not serve_args.rejection, serve_args.rejection
    _, facts = judge((tokens, {**kw, "version": installed}))  # the plugin plans for the vLLM it runs in
    # The API server's own options (--tool-call-parser, --default-chat-template-kwargs, …) are
    # not EngineArgs fields: they never reach an engine, so the plugin cannot see them, and
    # rows on them are dsv4-serve's alone. Everything the engine carries must agree.
    fields = set(type(engine).__dataclass_fields__)
    seen = {k: v for k, v in serve_args.values.items() if k in fields or k == "model_tag"}
    serve_plan = make_plan(facts._replace(args=serve_args._replace(values=seen, cli_values=seen)))
    plugin_plan = make_plan(facts._replace(args=read_engine_args(engine, table)))

    def said(plan):
        changes = tuple(c._replace(before=None) if c.before == "auto" else c for c in plan.changes)
        return changes, plan.warnings, plan.refusals, sorted((f.rule, f.level, f.text) for f in plan.findings)

    assert said(plugin_plan) == said(serve_plan)


# --- Loaded or not, vLLM is the same apart from the one documented change --------------------

STATE = """
import json, logging, os, re, sys, warnings
import vllm.platforms as platforms
from vllm.platforms.cpu import CpuPlatform
platforms._current_platform = CpuPlatform()
from vllm.engine.arg_utils import EngineArgs
from vllm.plugins import load_general_plugins

env, modules = dict(os.environ), set(sys.modules)
load_general_plugins()
by_loading = set(sys.modules) - modules
shown = lambda x: re.sub(r" at 0x[0-9a-f]+", "", repr(x))
engines = {}
for name, model, kw in json.loads(sys.argv[1]):
    args = EngineArgs(model=model, skip_tokenizer_init=True, **kw)
    config = args.create_engine_config()
    engines[name] = {"args": shown(vars(args)), **{k: shown(getattr(config, k))
                     for k in type(config).__dataclass_fields__ if k != "instance_id"}}
loggers = {name: [lg.level, lg.propagate, lg.disabled,
                  [(type(h).__name__, h.level, shown(h.formatter and h.formatter._fmt)) for h in lg.handlers],
                  [type(f).__name__ for f in lg.filters]]
           for name, lg in [("", logging.getLogger()), *logging.Logger.manager.loggerDict.items()]
           if isinstance(lg, logging.Logger)}
print(json.dumps({"env": {k: v for k, v in os.environ.items() if env.get(k) != v},
                  "env_gone": sorted(set(env) - set(os.environ)),
                  "filters": [shown(f) for f in warnings.filters],
                  "by_loading": sorted(m for m in by_loading if not m.startswith("dsv4_launch")),
                  "modules": sorted(m for m in sys.modules if not m.startswith("dsv4_launch")),
                  "loggers": loggers, "engines": engines}))
"""


def test_vllm_is_left_as_it_was_but_for_the_kv_dtype(real_vllm, models, tmp_path):
    """The same vLLM code path — load the general plugins, build three engines' configs — with
    dsv4_launch allowed and left out by vLLM's own allow-list (VLLM_PLUGINS, the other installed
    plugins still loaded): the same environment, warnings filters, loggers (handlers, levels,
    formats), modules outside dsv4_launch, EngineArgs and every part of the VllmConfig, except the
    one documented change (cache_dtype auto → fp8 for DeepSeek-V4 on SM 12.x) and the plugin's own
    logger, a child of vLLM's without handlers of its own."""
    from importlib.metadata import entry_points

    others = [e.name for e in entry_points(group="vllm.general_plugins") if e.name != "dsv4_launch"]
    cases = [("llama", models["llama"], {}), ("explicit", models["v4"], {"kv_cache_dtype": "fp8"}),
             ("changed", models["v4"], {})]

    def state(allowed):
        # Each run its own empty vLLM cache: vLLM's model registry imports a model class on a cache
        # miss only (modelinfos), so two runs sharing one would import different modules.
        env = {**os.environ, "VLLM_TARGET_DEVICE": "cpu", "DSV4_LAUNCH_GPU_CAPABILITY": "12.0",
               "VLLM_PLUGINS": ",".join(allowed) or "none", "VLLM_CACHE_ROOT": str(tmp_path / str(len(allowed)))}
        done = subprocess.run([sys.executable, "-c", STATE, json.dumps(cases)], capture_output=True, text=True,
                              env=env, timeout=600)
        assert done.returncode == 0, (done.stdout + done.stderr)[-3000:]
        return json.loads(done.stdout.strip().splitlines()[-1])

    without, with_it = state(others), state([*others, "dsv4_launch"])
    # (vLLM's CPU platform sets thread settings in the environment itself: the same either way)
    assert with_it["env"] == without["env"] and with_it["env_gone"] == without["env_gone"]
    assert with_it["filters"] == without["filters"]  # (vLLM's imports add some: the same either way)
    assert with_it["by_loading"] == without["by_loading"]
    assert with_it["modules"] == without["modules"]
    own = with_it["loggers"].pop("vllm.dsv4_launch")
    assert own == [0, True, False, [], []]  # NOTSET, propagates to vLLM's handler, nothing of its own
    assert with_it["loggers"] == without["loggers"]
    changed = with_it["engines"]["changed"]
    assert ("cache_dtype='fp8'" in changed["cache_config"]
            and "cache_dtype='auto'" in without["engines"]["changed"]["cache_config"])
    changed["cache_config"] = changed["cache_config"].replace("cache_dtype='fp8'", "cache_dtype='auto'")
    for name, _, _ in cases:
        for part, text in without["engines"][name].items():
            assert with_it["engines"][name][part] == text, (name, part)

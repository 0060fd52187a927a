"""Rule rows of issue 19 judged by the installed vLLM's own code, on the CPU (marker ``rule``).

- The hybrid KV-cache manager off: the release's own promotion (``unify_hybrid_kv_cache_specs``)
  fed DeepSeek-V4-shaped cache specs of the release's own classes — the promotion that raises
  TypeError from 0.31 on. Faked: nothing but the choice of the two specs' field values.
- DeepSeek-V4.1's KV resolver (0.30+), called with both layouts and every value.
- The DeepSeek sparse indexer's dtype check (0.28+), called with the release's AttentionConfig.
- The tool and reasoning parser registries: which names are DeepSeek-V4's parser.

Each test asserts that dsv4-launch's row says what that code does on this release.
"""

from __future__ import annotations

import importlib
from types import SimpleNamespace as NS

import pytest

from dsv4_launch.core.gpus import GpuInfo, GpuSelection
from tests.conftest import V4_CONFIG as V4
from tests.planning import V41, planned

M = "deepseek-ai/DeepSeek-V4-Flash"
SM120 = GpuSelection((GpuInfo(0, "NVIDIA RTX PRO 6000", "GPU-0", (12, 0)),))
SM100 = GpuSelection((GpuInfo(0, "NVIDIA B200", "GPU-0", (10, 0)),))
LMCACHE = ["--kv-transfer-config", '{"kv_connector": "LMCacheConnectorV1", "kv_role": "kv_both"}']
# a MultiConnector with a child without hybrid support: vLLM turns HMA off for it too
# (which connector vLLM builds from which options: tests/vllm_real/test_connector_oracle.py)
MULTI_LMCACHE = ["--kv-transfer-config", '{"kv_connector": "MultiConnector", "kv_role": "kv_both", '
                 '"kv_connector_extra_config": {"connectors": [{"kv_connector": "NixlConnector", "kv_role": '
                 '"kv_both"}, {"kv_connector": "LMCacheConnectorV1", "kv_role": "kv_both"}]}}']


def rules_for(tokens, version, gpu=SM120, config=V4):
    plan = planned(tokens, gpu=gpu, version=version, config=config).plan
    return {f.rule: f for f in plan.findings}, plan


def _promotion_fails() -> str | None:
    """The TypeError text when this vLLM's own promotion (``unify_hybrid_kv_cache_specs``, what
    ``get_kv_cache_groups`` calls with the hybrid manager off) meets DeepSeek-V4's two kinds of
    cache spec, else None (promoted). The specs are the release's own classes with the fields
    DeepSeek-V4 sets (attention.py / sparse_swa.py get_kv_cache_spec): the compressed MLA cache
    (block 256, one state per 4 tokens) and the sliding-window MLA cache (block 64, window 128);
    a field this release lacks is left out."""
    import dataclasses

    import torch

    interface = importlib.import_module("vllm.v1.kv_cache_interface")
    try:  # 0.33 moved the planner out of kv_cache_utils
        planner = importlib.import_module("vllm.v1.core.kv_cache_planning")
    except ImportError:
        planner = importlib.import_module("vllm.v1.core.kv_cache_utils")

    def spec(cls, **fields):
        known = {f.name for f in dataclasses.fields(cls)}
        return cls(**{k: v for k, v in fields.items() if k in known})

    common = dict(num_kv_heads=1, max_tp_shards=1, head_size=512, dtype=torch.uint8, alignment=576,
                  cache_dtype_str="fp8_ds_mla", model_version="deepseek_v4")
    specs = {
        "model.layers.2.attn": spec(interface.MLAAttentionSpec, block_size=256, tokens_per_state=4, compress_ratio=4,
                                    **common),
        "model.layers.2.attn.swa_cache": spec(interface.SlidingWindowMLASpec, block_size=64, sliding_window=128,
                                              **common),
    }
    try:
        planner.unify_hybrid_kv_cache_specs(specs)
    except TypeError as exc:
        return str(exc)
    assert all(type(s) is interface.MLAAttentionSpec for s in specs.values()), specs  # promoted
    return None


@pytest.mark.rule("hma-disabled")
@pytest.mark.rule("connector-turns-hma-off")
@pytest.mark.rule("hma-off-full-attention")
@pytest.mark.parametrize("tokens", [["--disable-hybrid-kv-cache-manager"], LMCACHE, MULTI_LMCACHE])
def test_hma_off_promotion(real_vllm, tokens):
    _, _, version = real_vllm
    error = _promotion_fails()
    found, plan = rules_for([M, *tokens], version)
    refusals = {r for r in ("hma-disabled", "connector-turns-hma-off") if r in found}
    if error is not None:
        assert "bounded_replay" in error, error
        assert len(refusals) == 1 and found[refusals.pop()].level == "refuse", found
        assert "hma-off-full-attention" not in found
    else:  # promoted to full attention: vLLM starts, with far less KV room
        assert not refusals and found["hma-off-full-attention"].level == "warn"
        assert plan.refusals == ()


V41_VALUES = ["auto", "fp8", "fp8_e4m3", "fp8_e5m2", "fp8_inc", "fp8_per_token_head", "fp8_ds_mla", "nvfp4_ds_mla",
              "bfloat16", "float16"]


@pytest.mark.rule("v41-kv")
@pytest.mark.rule("v41-ds-mla-on-plain-rows")
@pytest.mark.parametrize("value", V41_VALUES)
def test_v41_kv_resolver(real_vllm, value):
    _, _, version = real_vllm
    try:
        attention = importlib.import_module("vllm.models.deepseek_v41.attention")
    except ImportError:  # no DeepSeek-V4.1 before 0.30: the rows are out of range
        found, _ = rules_for([M, "--kv-cache-dtype", value], version, config=V41)
        assert not {"v41-kv", "v41-ds-mla-on-plain-rows"} & set(found)
        return
    from dsv4_launch.vllm_cli.option_table import load_table

    if value not in load_table(version).accepted_values.get("kv_cache_dtype", ()):
        pytest.skip(f"{value} is not a --kv-cache-dtype of vLLM {version}")

    def fails(packed: bool) -> bool:
        try:
            attention._resolve_dsv4_kv_cache_dtype(packed, value, None)
        except ValueError:
            return True
        return False

    # packed record: the default path on every GPU family
    found, _ = rules_for([M, "--kv-cache-dtype", value], version, config=V41)
    assert ("v41-kv" in found and found["v41-kv"].level == "refuse") is fails(True), (value, found.get("v41-kv"))
    # plain rows: the FlashInfer DSv4/DSv41 backend off SM 12.x
    found, _ = rules_for([M, "--attention-backend", "FLASHINFER_MLA_SPARSE_DSV41", "--kv-cache-dtype", value], version,
                         gpu=SM100, config=V41)
    assert "v41-kv" not in found
    assert ("v41-ds-mla-on-plain-rows" in found) is fails(False), (value, found)


@pytest.mark.rule("indexer-dtype-unsupported")
@pytest.mark.parametrize("value", ["bf16", "nvfp4", "fp8"])
def test_indexer_dtype_check(real_vllm, value):
    _, _, version = real_vllm
    indexer = importlib.import_module("vllm.v1.attention.backends.mla.indexer")
    found, _ = rules_for([M, "--attention-config.indexer_kv_dtype", value], version)
    check = getattr(indexer, "dsa_indexer_uses_fp4", None)
    if check is None:  # 0.24–0.27: DeepSeek-V4 does not read indexer_kv_dtype
        assert "indexer-dtype-unsupported" not in found
        return
    from vllm.config.attention import AttentionConfig

    config = NS(attention_config=AttentionConfig(indexer_kv_dtype=value), model_config=None)
    try:
        check(config)
        raised = None
    except ValueError as exc:
        raised = str(exc)
    if raised is not None:
        assert "not supported by the DeepSeek sparse indexer" in raised, raised
        assert found["indexer-dtype-unsupported"].level == "refuse"
    else:
        assert "indexer-dtype-unsupported" not in found


def _registry(module: str, manager: str) -> dict:
    importlib.import_module(module)
    owner = importlib.import_module(module)
    return dict(getattr(owner, manager).lazy_parsers)


@pytest.mark.rule("v4-wrong-parsers")
@pytest.mark.rule("v4-parsers-on-v41")
@pytest.mark.parametrize("dest,module,manager", [
    ("--tool-call-parser", "vllm.tool_parsers", "ToolParserManager"),
    ("--reasoning-parser", "vllm.reasoning", "ReasoningParserManager"),
])
def test_parser_registry(real_vllm, dest, module, manager):
    """Every parser name this release registers: the row warns for DeepSeek-V4 exactly when the
    name is not registered as deepseek_v4's own parser (module and class)."""
    _, _, version = real_vllm
    lazy = _registry(module, manager)
    assert "deepseek_v4" in lazy
    for name in sorted(lazy):
        found, _ = rules_for([M, dest, name], version)
        same = lazy[name] == lazy["deepseek_v4"]
        assert ("v4-wrong-parsers" not in found) is same, (name, lazy[name])
    # DeepSeek-V4.1: its own parsers exist where the row applies, and the V4 one is told apart
    found, _ = rules_for([M, dest, "deepseek_v4"], version, config=V41)
    if "deepseek_v41" in lazy:
        assert lazy["deepseek_v41"] != lazy["deepseek_v4"] and "v4-parsers-on-v41" in found
    else:
        assert "v4-parsers-on-v41" not in found


@pytest.mark.rule("v2-runner-env-not-int")
@pytest.mark.parametrize("value", ["0", " 0 ", "1", "false", "true", "yes"])
def test_v2_runner_variable_parse(real_vllm, value):
    """vLLM's own reader of VLLM_USE_V2_MODEL_RUNNER (envs.maybe_convert_bool): the row warns
    exactly where it raises, and DSpark is refused exactly where it reads False."""
    _, _, version = real_vllm
    envs = importlib.import_module("vllm.envs")
    try:
        read = envs.maybe_convert_bool(value)
    except ValueError:
        read = "raises"
    if "VLLM_USE_V2_MODEL_RUNNER" not in getattr(envs, "environment_variables", {"VLLM_USE_V2_MODEL_RUNNER": None}):
        read = "not read"  # 0.34: no V1 runner; validate_environ judges it (test_runner_env_oracle.py)
    env = {"VLLM_USE_V2_MODEL_RUNNER": value}
    plan = planned([M, "--speculative-config", '{"method": "dspark", "num_speculative_tokens": 5}'], gpu=SM120,
                   version=version, config={**V4, "dspark_target_layer_ids": [1], "dspark_block_size": 5},
                   env=env).plan
    found = {f.rule: f for f in plan.findings}
    assert ("v2-runner-env-not-int" in found) is (read == "raises"), (value, read)
    from dsv4_launch.core.versions import VersionRange

    v1_refused = VersionRange(since="0.29.0").contains(version) is True  # dspark-v1-runner's range
    assert ("dspark-v1-runner" in found) is (read is False and v1_refused), (value, read)


class _Unset:
    """A config part this test does not set: every attribute is another one, false, unequal,
    never greater or smaller, and calling it gives one (vLLM's checks then see 'not used')."""

    def __getattr__(self, name):
        return _Unset()

    def __call__(self, *args, **kwargs):
        return _Unset()

    def __bool__(self):
        return False

    def __eq__(self, other):
        return False

    __hash__ = object.__hash__

    def __lt__(self, other):
        return False

    __gt__ = __le__ = __ge__ = __lt__

    def __iter__(self):
        return iter(())


@pytest.mark.rule("dspark-v2-unsupported")
@pytest.mark.parametrize("flag", ["--enable-dbo", "--enable-elastic-ep", "--logits-processors=my.mod:Proc",
                                  "--kv-sharing-fast-prefill"])
def test_dspark_falls_back_to_v1(real_vllm, flag, monkeypatch):
    """vLLM's own lists of what each model runner lacks (VllmConfig._get_v2/_v1_model_runner_
    unsupported_features), called on a stand-in config with DSpark and one feature set (the
    rest _Unset): the row refuses exactly where V2 lacks the feature (so V1 is used, and V1
    lacks DSpark)."""
    _, _, version = real_vllm
    monkeypatch.delenv("VLLM_USE_V2_MODEL_RUNNER", raising=False)
    from vllm.config import VllmConfig

    v2_lacks = getattr(VllmConfig, "_get_v2_model_runner_unsupported_features", None)
    found, _ = rules_for([M, "--speculative-config", '{"method": "dspark", "num_speculative_tokens": 5}', flag],
                         version, config={**V4, "dspark_target_layer_ids": [1], "dspark_block_size": 5})
    if v2_lacks is None:  # before 0.29: DSpark forces the V2 runner itself; from 0.34 there is no V1 runner
        assert "dspark-v2-unsupported" not in found
        return
    class Set(_Unset):  # a part that is there (true), with the attributes given
        def __bool__(self):
            return True

    def part(**attrs):
        made = Set()
        made.__dict__.update(attrs)
        return made

    dbo, elastic, logits = flag == "--enable-dbo", flag == "--enable-elastic-ep", flag.startswith("--logits")
    config = part(
        speculative_config=part(method="dspark", parallel_drafting=False, use_heterogeneous_vocab=False),
        parallel_config=part(enable_dbo=dbo, use_ubatching=dbo, enable_elastic_ep=elastic, pipeline_parallel_size=1,
                             tensor_parallel_size=1, decode_context_parallel_size=1, prefill_context_parallel_size=1,
                             distributed_executor_backend=None),
        model_config=part(logits_processors=["my.mod:Proc"] if logits else None),
        cache_config=part(kv_sharing_fast_prefill=flag == "--kv-sharing-fast-prefill"),
        lora_config=None,
    )
    for name in ("_get_dbo_unsupported_features",):
        method = getattr(VllmConfig, name, None)
        if method is not None:
            config.__dict__[name] = (lambda m: lambda: m(config))(method)
    v1_lacks = VllmConfig._get_v1_model_runner_unsupported_features(config) \
        if hasattr(VllmConfig, "_get_v1_model_runner_unsupported_features") else []
    if "dspark speculative decoding" not in v1_lacks:  # this release's V1 runner does not refuse DSpark
        assert "dspark-v2-unsupported" not in found
        return
    lacks = v2_lacks(config)
    assert ("dspark-v2-unsupported" in found and found["dspark-v2-unsupported"].level == "refuse") is bool(lacks), \
        (flag, lacks)

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
@pytest.mark.parametrize("tokens", [["--disable-hybrid-kv-cache-manager"], LMCACHE,
                                    ["--kv-offloading-backend", "lmcache"]])
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

    if value not in load_table(version).values.get("kv_cache_dtype", ()):
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

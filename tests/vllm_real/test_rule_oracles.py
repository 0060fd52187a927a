"""Rule rows judged by the installed vLLM's own code, on the CPU (marker ``rule``: the release
matrix, docs/release-matrix.md, reads these outcomes per release).

Each test asks vLLM's code whether the configuration fails, and asserts that dsv4-launch's
row says the same for this release: refused (or warned) exactly where vLLM's code fails.
"""

from __future__ import annotations

import importlib

import pytest

from dsv4_launch.core.gpus import GpuInfo, GpuSelection
from tests.conftest import V4_CONFIG as V4
from tests.planning import planned

from .conftest import real_parse

M = "deepseek-ai/DeepSeek-V4-Flash"
SM120 = GpuSelection((GpuInfo(0, "NVIDIA RTX PRO 6000", "GPU-0", (12, 0)),))
SM100 = GpuSelection((GpuInfo(0, "NVIDIA B200", "GPU-0", (10, 0)),))


def rules_for(tokens, version, gpu=SM120):
    plan = planned(tokens, gpu=gpu, version=version, config=V4).plan
    return {f.rule: f for f in plan.findings}, plan


@pytest.mark.rule("kv-invalid")
@pytest.mark.parametrize("value", ["fp9", "Auto"])
def test_invalid_kv_dtype(real_vllm, value):
    """vLLM rejects it itself (argparse choices up to 0.32, pydantic in 0.33): a warning, never
    a refusal with another reason."""
    top, _, version = real_vllm
    status, _ = real_parse(top, [M, "--kv-cache-dtype", value])
    found, plan = rules_for([M, "--kv-cache-dtype", value], version)
    if status == "reject":  # argparse: the replica rejects too, and says vLLM will
        assert any("invalid choice" in w for w in plan.warnings)
    else:
        from vllm.config import CacheConfig

        with pytest.raises(Exception, match="kv_cache_dtype|cache_dtype"):
            CacheConfig(cache_dtype=value)
        assert found["kv-invalid"].level == "warn"
    assert plan.refusals == ()


@pytest.mark.rule("fp4-indexer-removed")
@pytest.mark.parametrize("tokens", [["--attention_config.use_fp4_indexer_cache=True"],
                                    ["--attention-config", '{"use_fp4_indexer_cache": true}']])
def test_fp4_indexer_flag(real_vllm, tokens):
    top, _, version = real_vllm
    status, why = real_parse(top, [M, *tokens])
    found, plan = rules_for([M, *tokens], version, gpu=SM100)
    if status == "reject":  # ≥ 0.30: the option is gone, on every GPU
        assert found["fp4-indexer-removed"].level == "refuse", why
    else:  # ≤ 0.29: a real option on SM 10.x
        assert "fp4-indexer-removed" not in found and plan.refusals == ()


@pytest.mark.rule("block-size")
@pytest.mark.parametrize("size,fails", [(64, True), (128, True), (384, True), (256, False), (512, False)])
def test_block_size(real_vllm, size, fails):
    _, _, version = real_vllm
    utils = importlib.import_module("vllm.v1.worker.utils")
    flashmla = importlib.import_module("vllm.models.deepseek_v4.nvidia.flashmla")
    backend = flashmla.DeepseekV4FlashMLAAttention.backend_cls
    raised = False
    try:
        utils.select_common_block_size(size, [backend])
    except ValueError as exc:
        raised = "No common block size" in str(exc)
    found, _ = rules_for([M, "--block-size", str(size)], version)
    assert raised is fails
    assert ("block-size" in found) is fails

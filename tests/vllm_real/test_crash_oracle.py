"""The crash itself as oracle: vLLM's own DeepSeek-V4 KV-cache code judges what we hand over.

`_resolve_dsv4_kv_cache_dtype` (vllm/models/deepseek_v4/attention.py) is where vLLM 0.24 dies
with "fp8_ds_mla layout only supports fp8 kv-cache, got auto" (vLLM #47174), and the SM 12.x
branch of `DeepseekV4FlashInferMLASparseBackend.supports_combination`
(vllm/models/deepseek_v4/nvidia/flashinfer_sparse.py) accepts only fp8 variants.
"""

from __future__ import annotations

import pytest

from dsv4_launch.core.gpus import GpuInfo, GpuSelection
from dsv4_launch.core.versions import is_older
from tests.planning import planned

from .conftest import real_parse, vllm_symbol

M = "deepseek-ai/DeepSeek-V4-Flash"
V4 = {"architectures": ["DeepseekV4ForCausalLM"]}


@pytest.fixture(scope="module")
def resolver(real_vllm):
    return vllm_symbol("vllm.models.deepseek_v4.attention", "_resolve_dsv4_kv_cache_dtype")


@pytest.fixture(scope="module")
def backend(real_vllm):
    return vllm_symbol("vllm.models.deepseek_v4.nvidia.flashinfer_sparse", "DeepseekV4FlashInferMLASparseBackend")


def handed_kv_dtype(real_vllm, tokens):
    """What vLLM parses from the argv dsv4-serve hands over on an SM 12.0 GPU."""
    top, _, version = real_vllm
    gpus = GpuSelection((GpuInfo(0, "NVIDIA RTX PRO 6000", "GPU-0", (12, 0)),))
    planned_argv = planned(tokens, gpu=gpus, version=version, config=V4).argv
    status, namespace = real_parse(top, list(planned_argv))
    assert status == "ok"
    return namespace.kv_cache_dtype


def supports(backend, kv):
    import torch
    from vllm.platforms.interface import DeviceCapability

    return backend.supports_combination(
        head_size=512, dtype=torch.bfloat16, kv_cache_dtype=kv, block_size=256, use_mla=True,
        has_sink=True, use_sparse=True, use_mm_prefix=False, device_capability=DeviceCapability(12, 0),
    )


@pytest.mark.parametrize("tokens", [[M], [M, "--kv-cache-dtype", "auto"], [M, "--kv_cache_dtype=auto"]])
def test_what_we_hand_over_is_accepted(real_vllm, resolver, backend, tokens):
    import torch

    kv = handed_kv_dtype(real_vllm, tokens)
    assert resolver(True, kv, None) == ("fp8_ds_mla", torch.uint8)
    reason = supports(backend, kv)
    # None, or only the FlashInfer-API check that follows the dtype check
    assert reason is None or "kv_cache_dtype" not in reason, reason


@pytest.mark.rule("kv-not-fp8")
@pytest.mark.parametrize("kv", ["bfloat16", "float16"])
def test_an_explicit_non_fp8_dtype_fails_in_vllm_and_is_refused(real_vllm, resolver, kv):
    _, _, version = real_vllm
    with pytest.raises((AssertionError, ValueError), match="fp8_ds_mla layout only supports fp8 kv-cache"):
        resolver(True, kv, None)
    gpus = GpuSelection((GpuInfo(0, "NVIDIA RTX PRO 6000", "GPU-0", (12, 0)),))
    assert any(f.rule == "kv-not-fp8" for f in planned([M, "--kv-cache-dtype", kv], gpu=gpus, version=version,
                                                        config=V4).plan.findings)


def test_the_users_auto_is_the_crash(real_vllm, resolver, backend):
    import torch

    _, _, version = real_vllm
    if is_older(version, "0.30.0"):
        with pytest.raises(AssertionError, match="DeepseekV4 fp8_ds_mla layout only supports fp8 kv-cache, got auto"):
            resolver(True, "auto", None)
    else:
        # vLLM #45091 (0.30.0): auto resolves to fp8_ds_mla by itself
        assert resolver(True, "auto", None) == ("fp8_ds_mla", torch.uint8)
    assert supports(backend, "auto") == "kv_cache_dtype not supported"

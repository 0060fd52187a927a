"""DeepSeek-V4's KV caches built by the installed vLLM's own classes, and planned by its own
planner, on the CPU: the oracle for core/memory/kv_plan.py (tests/vllm_real/test_kv_oracle.py).

Each cache spec comes from the release's own ``get_kv_cache_spec`` (DeepseekV4Attention,
DeepseekV4IndexerCache, CompressorStateCache, DeepseekV4SWACache), called on a stand-in
``self`` holding just the attributes those methods read (the layers themselves need CUDA
kernels to build). The admission check is the release's own ``get_kv_cache_configs``, fed a
stand-in ``VllmConfig`` (a namespace with the fields the planner reads: max_model_len,
max_num_batched_tokens, max_in_flight_tokens, block size 256, the fp8_ds_mla dtype, and the
BLHNC layout DeepSeek-V4's indexer resolves to). What is faked: those two stand-ins; what runs
is vLLM's code.
"""

from __future__ import annotations

import inspect
import re
from types import SimpleNamespace as NS

import torch
from vllm.models.deepseek_v4 import attention as A
from vllm.models.deepseek_v4 import compressor as C
from vllm.v1.attention.backends.mla.sparse_swa import DeepseekV4SWACache

try:  # 0.33 moved the planner out of kv_cache_utils
    import vllm.v1.core.kv_cache_planning as P
except ImportError:  # 0.24–0.32
    import vllm.v1.core.kv_cache_utils as P


def knows_method(method: str) -> bool:
    """The release's SpeculativeConfig has ``use_<method>`` (DSpark: 0.25+)."""
    from vllm.config.speculative import SpeculativeConfig

    return hasattr(SpeculativeConfig, f"use_{method}")


def speculative(method: str, k: int, nextn: int):
    """A stand-in ``SpeculativeConfig`` whose questions the planner asks (use_eagle,
    use_multi_module_mtp, use_eagle_block_drop …) are answered by the release's own methods,
    bound to the fields they read (method, num_speculative_tokens, the draft's hf_config)."""
    import types

    from vllm.config.speculative import SpeculativeConfig

    spec = NS(method=method, num_speculative_tokens=k, disable_eagle_block_drop=False,
              disable_lookahead_block_hashes=False, parallel_drafting=False,
              index_share_for_mtp_iteration=None,  # 0.34: the user's override, unset
              # n_predict: what vLLM sets on DeepSeek-V4's draft config (config/speculative.py:863-871@0.34.0)
              draft_model_config=NS(hf_config=NS(num_nextn_predict_layers=nextn, n_predict=nextn,
                                                 model_type="deepseek_v4")))
    for name, fn in vars(SpeculativeConfig).items():
        if name.startswith("use_") or name.startswith("needs_") or name in ("uses_draft_model", "num_mtp_modules"):
            if callable(fn):
                setattr(spec, name, types.MethodType(fn, spec))
    prop = vars(SpeculativeConfig).get("speculator_config")
    if isinstance(prop, property):  # 0.34: per-method facts (num_lookahead_tokens) live in the release's class
        spec.custom_method = None
        spec.speculator_config = prop.fget(spec)
    return spec


def config(max_model_len: int, mnbt: int, in_flight: int, pp: int = 1, spec=None):
    cache = NS(block_size=256, cache_dtype="fp8_ds_mla", num_gpu_blocks_override=None, kv_cache_memory_bytes=None,
               enable_prefix_caching=True, prefix_cache_retention_interval=None,
               # 0.34: how the memory handed to the planner is measured; the planner reads it only
               # for its texts (vllm/v1/core/kv_cache_planning.py:70,1450@0.34.0)
               enable_extensible_kv_cache=False)
    try:
        from vllm.v1.kv_cache_layout import KVCacheLayout  # 0.29+: resolved by the engine core

        cache.get_resolved_kv_cache_layout = lambda: KVCacheLayout.BLHNC
        cache.kv_cache_layout = "BLHNC"
    except ImportError:
        pass
    cfg = NS(cache_config=cache,
             model_config=NS(max_model_len=max_model_len, original_max_model_len=max_model_len,
                             hf_config=NS(model_type="deepseek_v4"),
                             supports_kv_cache_grouping=False),  # DeepSeek-V4 does not implement it (0.33)
             scheduler_config=NS(max_num_batched_tokens=mnbt, disable_hybrid_kv_cache_manager=False,
                                 max_num_seqs=256),
             parallel_config=NS(decode_context_parallel_size=1, pipeline_parallel_size=pp, tensor_parallel_size=1,
                                prefill_context_parallel_size=1),
             speculative_config=spec, max_in_flight_tokens=in_flight, num_prefill_lookahead_tokens=0,
             num_speculative_tokens=spec.num_speculative_tokens if spec else 0, diffusion_config=None,
             attention_config=NS(hisparse_config=None), kv_transfer_config=None)
    from vllm.config import VllmConfig

    lookahead = getattr(VllmConfig, "num_prefill_lookahead_tokens", None)
    if isinstance(lookahead, property):  # 0.31+: the release's own property, on this stand-in
        cfg.num_prefill_lookahead_tokens = lookahead.fget(cfg)
    return cfg


def draft_specs(cfg, first: int, count: int) -> dict:
    """The draft's layers (MTP, DSpark): DeepseekV4DecoderLayers numbered from num_hidden_layers
    up, so compress_ratio 1 (attention.py's ``layer_id < config.num_hidden_layers`` test, which
    runs in __init__ and so cannot run here: the stand-in states it). The release's own
    DeepseekV4Attention.get_kv_cache_spec must answer None for them, and their SWA cache is
    built as the target's; 0.33's runners flag them ``is_draft`` (attn_utils.py:150@0.33)."""
    import dataclasses

    cc = cfg.cache_config
    out = {}
    for i in range(first, first + count):
        p = f"model.layers.{i}.attn"
        ns = NS(compress_ratio=1, kv_cache_dtype="fp8_ds_mla", head_dim=512, kv_cache_torch_dtype=torch.uint8)
        assert A.DeepseekV4Attention.get_kv_cache_spec(ns, cfg) is None
        ns = NS(block_size=64, head_dim=512, window_size=128, dtype=torch.uint8, cache_config=cc, bounded_replay=False,
                packed_bytes_per_token=584, packed_page_alignment=576, packed_block_stride_alignment=None)
        spec = DeepseekV4SWACache.get_kv_cache_spec(ns, cfg)
        if any(f.name == "is_draft" for f in dataclasses.fields(spec)):
            spec = dataclasses.replace(spec, is_draft=True)
        out[p + ".swa_cache"] = spec
    return out


def stage_specs(ratios, cfg, indexer_bytes: int, pp: int, stage: int) -> dict:
    """One PP stage's layer → KVCacheSpec, in the order the layers register them."""
    from vllm.distributed.utils import get_pp_indices

    low, high = get_pp_indices(len(ratios), stage, pp)
    cc = cfg.cache_config
    out = {}
    for i in range(low, high):
        ratio, p = ratios[i], f"model.layers.{i}.attn"
        if ratio == 4:
            ns = NS(block_size=256, head_dim=indexer_bytes, dtype=torch.uint8, cache_config=cc, compress_ratio=4)
            out[p + ".indexer.k_cache"] = A.DeepseekV4IndexerCache.get_kv_cache_spec(ns, cfg)
            ns = NS(state_dim=2 * 2 * 128, dtype=torch.float32, block_size=4, sliding_window=8)
            out[p + ".indexer.compressor.state_cache"] = C.CompressorStateCache.get_kv_cache_spec(ns, cfg)
        # DeepseekV4Attention builds its SWA cache with the class defaults (0.33: block 64, 584-byte
        # states, 576-byte pages, no bounded replay)
        ns = NS(block_size=64, head_dim=512, window_size=128, dtype=torch.uint8, cache_config=cc, bounded_replay=False,
                packed_bytes_per_token=584, packed_page_alignment=576, packed_block_stride_alignment=None)
        out[p + ".swa_cache"] = DeepseekV4SWACache.get_kv_cache_spec(ns, cfg)
        ns = NS(compress_ratio=ratio, kv_cache_dtype="fp8_ds_mla", head_dim=512, kv_cache_torch_dtype=torch.uint8)
        spec = A.DeepseekV4Attention.get_kv_cache_spec(ns, cfg)
        if spec is not None:
            out[p] = spec
        if ratio > 1:
            coff = 1 + (ratio == 4)
            ns = NS(state_dim=2 * coff * 512, dtype=torch.float32, block_size=4 if ratio == 4 else 8,
                    sliding_window=coff * ratio)
            out[p + ".compressor.state_cache"] = C.CompressorStateCache.get_kv_cache_spec(ns, cfg)
    return out


def _groups(ratios, cfg, indexer_bytes, pp, draft=0):
    """Per-stage specs and the whole model's groups, as the engine core forms them."""
    stages = [stage_specs(ratios, cfg, indexer_bytes, pp, s) for s in range(pp)]
    stages[-1].update(draft_specs(cfg, len(ratios), draft))  # the drafter runs on the last PP rank
    if hasattr(P, "get_global_kv_cache_groups"):  # 0.33: merges, tags the windows and groups itself
        return stages, P.get_global_kv_cache_groups(cfg, stages)
    _retain(cfg, stages)
    merged = {}
    for d in stages:
        merged.update(d)
    return stages, P.get_kv_cache_groups(cfg, merged)


def _call(fn, *args):
    if list(inspect.signature(fn).parameters)[0] == "builder":  # 0.33: the platforms' default builder
        return fn(P.DefaultKVCacheConfigBuilder(), *args)
    return fn(*args)


def _retain(cfg, stages) -> None:
    """0.28–0.32: get_kv_cache_configs tags every sliding-window spec with
    ``extra_retained_tokens`` before grouping (kv_cache_utils.py:2269@0.29); the same tagging,
    by the release's own formula (read from its source), so that ``need`` sees it too (and
    get_kv_cache_configs, tagging again, gets the same value)."""
    import dataclasses

    from vllm.v1.kv_cache_interface import SlidingWindowSpec

    spec = cfg.speculative_config
    if spec is None or not any(f.name == "extra_retained_tokens" for f in dataclasses.fields(SlidingWindowSpec)):
        return
    if "num_prefill_lookahead_tokens" in inspect.getsource(P.get_kv_cache_configs):  # 0.31+
        extra = max(0, cfg.num_prefill_lookahead_tokens - 1)
    else:  # 0.28–0.30
        extra = spec.num_speculative_tokens - 1 if spec.use_multi_module_mtp() else 0
    for d in stages:
        for name, s in list(d.items()):
            if isinstance(s, SlidingWindowSpec):
                d[name] = dataclasses.replace(s, extra_retained_tokens=extra)


def need(ratios, length, mnbt, in_flight, pp=1, indexer_bytes=132, spec=None, draft=0) -> list[int]:
    """Per PP stage: the bytes one request of ``length`` needs (vLLM's _max_memory_usage_bytes_from_groups)."""
    cfg = config(length, mnbt, in_flight, pp, spec)
    stages, groups = _groups(ratios, cfg, indexer_bytes, pp, draft)
    out = []
    for spec_ in stages:
        projected = P._project_kv_cache_groups_to_worker(groups, spec_)
        out.append(_call(P._max_memory_usage_bytes_from_groups, cfg, projected))
    return out


def admits(ratios, available, length, mnbt, in_flight, pp=1, indexer_bytes=132, spec=None, draft=0):
    """vLLM's own admission (get_kv_cache_configs): None when one request of ``length`` fits in
    ``available`` bytes on every stage, else the longest length vLLM says would (0: none)."""
    cfg = config(length, mnbt, in_flight, pp, spec)
    stages, groups = _groups(ratios, cfg, indexer_bytes, pp, draft)
    try:
        if "global_kv_cache_groups" in inspect.signature(P.get_kv_cache_configs).parameters:
            P.get_kv_cache_configs(cfg, stages, [available] * pp, groups)
        else:
            P.get_kv_cache_configs(cfg, stages, [available] * pp)
    except ValueError as exc:
        found = re.search(r"estimated maximum model length is (\d+)", str(exc))
        if found:
            return int(found.group(1))
        if "To serve at least one request" in str(exc) or "No available memory" in str(exc):
            return 0
        raise
    return None

"""vLLM's memory budget before the KV cache, term by term, per release and runner (pure).

What the worker subtracts from ``requested = ceil(total × gpu_memory_utilization)`` before the
KV cache (``Worker.determine_available_memory``):

* **0.24–0.26**: ``non_kv_cache_memory = non_torch_increase + torch_peak_increase +
  weights_memory`` (``v1/worker/gpu_worker.py:459-463@0.24``), then the CUDA-graph estimate
  (``:467-471,489-493@0.24``);
* **0.27–0.33**: ``non_kv_cache_memory = total_consumed + transient_peak_headroom`` — what the
  free memory fell by since the worker started (weights, buffers, non-torch memory) plus the
  profile run's transient peak (``utils/mem_utils.py:323-326@0.27``, ``:318-321@0.33``), then the
  CUDA-graph estimate (``gpu_worker.py:535-563@0.28``, ``:719-757@0.33``).

Either way the same four terms: the weights with what the model allocates as it loads
(``core/memory/weights.py``), the **activation peak** of the profile run, the **non-torch
memory** (NCCL and all-reduce buffers, cuBLAS workspaces) and the **CUDA-graph estimate**.

The CUDA-graph estimate is exactly zero where vLLM does not take it (each cited in
``graph_term``); where it does, it is profiled on the GPU and can only be carried as a band.
The activation peak and the non-torch memory cannot be derived from code either: each is a
band (low–high) whose ends say what they rest on. Every answer about the KV cache is judged at
both ends (``core/memory/estimate.py``): *fits* only at the pessimistic end, *does not fit*
never from a band.
"""

from __future__ import annotations

from ..facts import Facts, json_option
from ..records import Record
from ..versions import VersionRange

GiB = 2**30
MiB = 2**20

# The V2 model runner's profile_cudagraph_memory returns 0 before 0.29
# (v1/worker/gpu/model_runner.py:684-686@0.24, :843-845@0.28); from 0.29 it profiles
# (:896-898@0.29 → cudagraph_utils._profile_cudagraph_memory, :1069@0.33).
V2_PROFILES_GRAPHS = VersionRange(since="0.29.0")

# Fitted and evidence bands (docs/memory.md "What is left for the KV cache").
# The activation peak per batched token: 0.64 MiB measured for V4-Flash at TP 1 (GB10: 5.30 GiB at
# 8,224 batched tokens, 1.39 GiB at 2,048; MiaAI-Lab/DeepSeek-v4-Flash-One-DGX-Spark#3), ±10 % for
# the fit (−3 % / −8 % at the two points).
ACTIVATION_PER_TOKEN = int(0.64 * MiB)
ACTIVATION_FIT_ERROR = 0.10
# The share of the per-token peak that is per-rank work (the attention heads, the MoE's
# intermediate): not derivable; the optimistic end takes half, the pessimistic end none. At the
# optimistic end TP splits that half, and under DP + EP it is taken as dispatched away from the
# rank (the recipes below start only if it is).
TP_SPLIT_SHARE = 0.5
# The optimistic end for a wider model is not scaled up by its hidden size: V4-Pro at DP 8 + EP on
# 8 × H200 with --gpu-memory-utilization 0.95 and --max-model-len 200000 is reported to start
# (vllm-project/recipes DeepSeek-V4-Pro.yaml hopper override; recipes#381, #832), which a peak
# scaled by 7168/4096 would leave no room for.
GRAPH_LOW, GRAPH_HIGH = int(0.5 * GiB), int(2.0 * GiB)  # profiled on the GPU: 1.5 GiB fitted, "≈ 1–2 GiB" worked
NON_TORCH_LOW, NON_TORCH_HIGH = 0, int(0.5 * GiB)  # one GPU; with TP/PP the communicators' buffers
NON_TORCH_HIGH_PARALLEL = int(1.0 * GiB)
SAMPLER_COPIES_LOW, SAMPLER_COPIES_HIGH = 2, 4  # [max_num_seqs, vocab] fp32 tensors alive at once
FLASH_HIDDEN = 4096


class Term(Record):
    """One term of the budget in bytes: ``low`` (the optimistic end), ``high`` (the pessimistic
    end), and what it rests on."""

    low: int
    high: int
    basis: str

    @property
    def mid(self) -> int:
        return (self.low + self.high) // 2

    @property
    def exact(self) -> bool:
        return self.low == self.high


def _zero(basis: str) -> Term:
    return Term(0, 0, basis)


def _cudagraph_mode(facts: Facts) -> str | None:
    """``--compilation-config``'s ``cudagraph_mode`` as given (upper case), or None."""
    config = json_option(facts.args, "compilation_config") or {}
    mode = config.get("cudagraph_mode")
    if isinstance(mode, str):
        return mode.strip().upper()
    if type(mode) is int:  # CUDAGraphMode's values: NONE 0, PIECEWISE 1, FULL 2
        return {0: "NONE", 1: "PIECEWISE", 2: "FULL"}.get(mode, str(mode))
    return None


def _compilation_mode_none(facts: Facts) -> bool:
    config = json_option(facts.args, "compilation_config") or {}
    mode = config.get("mode", config.get("level"))
    return mode == 0 or (isinstance(mode, str) and mode.strip().upper() in ("0", "NONE"))


def graph_env_off(facts: Facts) -> bool | None:
    """``VLLM_MEMORY_PROFILER_ESTIMATE_CUDAGRAPHS`` as vLLM reads it: ``bool(int(value))``,
    default 1 (``envs.py:1894-1896@0.24``, the same through 0.33). True: set to 0 (the estimate
    is profiled but not subtracted); None: a value ``int`` cannot read (vLLM fails on it)."""
    raw = facts.rule_env.get("VLLM_MEMORY_PROFILER_ESTIMATE_CUDAGRAPHS")
    if raw is None:
        return False
    try:
        return int(raw) == 0
    except ValueError:
        return None


def graph_term(facts: Facts, v2: bool) -> Term:
    """The CUDA-graph estimate vLLM subtracts before the KV cache, for the runner it picks."""
    if facts.args.value("enforce_eager") is True:
        return _zero("--enforce-eager sets cudagraph_mode NONE (config/vllm.py:1370-1376@0.29), and "
                     "vLLM profiles no graphs then (v1/worker/gpu_worker.py:448-453@0.24, :708-717@0.33)")
    mode = _cudagraph_mode(facts)
    if mode == "NONE":
        return _zero("cudagraph_mode NONE: vLLM profiles no graphs (v1/worker/gpu_worker.py:448-453@0.24, "
                     ":528-532@0.28, :708-717@0.33)")
    if mode is None and str(facts.args.value("optimization_level")).strip() == "0":
        return _zero("-O0 defaults cudagraph_mode to NONE (config/vllm.py:210@0.24, :255@0.29): no graphs profiled")
    if graph_env_off(facts):
        return _zero("VLLM_MEMORY_PROFILER_ESTIMATE_CUDAGRAPHS=0: the estimate is not subtracted "
                     "(v1/worker/gpu_worker.py:467-471@0.24, :720-724@0.33)")
    if v2 and V2_PROFILES_GRAPHS.contains(facts.vllm_version) is False:
        return _zero("the V2 model runner's profile_cudagraph_memory returns 0 before 0.29 "
                     "(v1/worker/gpu/model_runner.py:684-686@0.24, :843-845@0.28)")
    if mode is None and _compilation_mode_none(facts):
        # cudagraph_mode defaults to one that needs piecewise compilation, which mode NONE turns
        # off (config/vllm.py:1470-1480@0.29), unless VLLM_USE_BREAKABLE_CUDAGRAPH: 0 or the band.
        return Term(0, GRAPH_HIGH, "compilation mode NONE without a cudagraph_mode: vLLM likely captures no "
                    "graphs (config/vllm.py:1470-1480@0.29); up to the profiled band otherwise")
    runner = "V2" if v2 else "V1"
    return Term(GRAPH_LOW, GRAPH_HIGH, f"profiled by vLLM on the GPU ({runner} runner's profile_cudagraph_memory); "
                "not derivable: 0.5–2.0 GiB around the 1.5 GiB fitted")


def _number(facts: Facts, key: str, default: int) -> int:
    n = facts.model.number(key)
    return n if n and n > 0 else default


def activation_term(facts: Facts, tp: int, mnbt: int, max_num_seqs: int | None, dp_ep: bool = False) -> Term:
    """The profile run's activation peak per GPU (``torch_peak_increase`` /
    ``transient_peak_headroom``): the larger of the dummy forward over ``mnbt`` batched tokens
    and the dummy sampler over ``max_num_seqs`` rows of logits (``_dummy_run`` then
    ``_dummy_sampler_run``: the forward's activations are freed between them).

    The forward: 0.64 MiB per batched token, measured for V4-Flash at TP 1 (±10 %). The
    optimistic end lets TP split half of it (DP + EP: takes that half away), and does not scale
    it up for a wider model (the V4-Pro recipe that starts on 8 × H200 rests on that); the
    pessimistic end splits none and scales it by the hidden size (V4-Pro: 7,168 / 4,096). The
    dummy run splits ``mnbt`` over up to ``max_num_seqs`` requests, so the indexer's and
    compressor's per-request buffers stay small and the peak stays linear in the batched tokens
    (the two GB10 points agree).

    The sampler: ``[max_num_seqs, vocab]`` fp32 logits (the LM head gathers the whole vocabulary
    on every TP rank) and 2–4 tensors of that size alive at once (probabilities, the top-k/top-p
    mask)."""
    hidden = _number(facts, "hidden_size", FLASH_HIDDEN)
    wider = max(hidden / FLASH_HIDDEN, 1.0)
    split = (1 - TP_SPLIT_SHARE) if dp_ep else (1 - TP_SPLIT_SHARE + TP_SPLIT_SHARE / max(tp, 1))
    per_low = ACTIVATION_PER_TOKEN * (1 - ACTIVATION_FIT_ERROR) * split
    per_high = ACTIVATION_PER_TOKEN * (1 + ACTIVATION_FIT_ERROR) * wider
    forward_low, forward_high = int(per_low * mnbt), int(per_high * mnbt)
    vocab = _number(facts, "vocab_size", 129_280)
    seqs = max_num_seqs or 0
    sampler_low, sampler_high = seqs * vocab * 4 * SAMPLER_COPIES_LOW, seqs * vocab * 4 * SAMPLER_COPIES_HIGH
    basis = (f"the larger of the forward over {mnbt:,} batched tokens (0.64 MiB per token measured for V4-Flash at "
             f"TP 1, ±10 %; ×{split:.2f} per rank at the low end, ×{wider:.2f} for the hidden size at the high "
             "end) and "
             f"the sampler's [{seqs:,}, {vocab:,}] fp32 logits ×{SAMPLER_COPIES_LOW}–{SAMPLER_COPIES_HIGH}")
    return Term(max(forward_low, sampler_low), max(forward_high, sampler_high), basis)


def non_torch_term(tp: int, pp: int) -> Term:
    """Memory outside torch's allocator that grows while the worker starts (NCCL communicators,
    the custom all-reduce buffers, cuBLAS/cuDNN workspaces): ``non_torch_increase``
    (``utils/mem_utils.py:306@0.24``), inside ``total_consumed`` from 0.27. Not derivable; a
    band, wider where there are communicators."""
    high = NON_TORCH_HIGH_PARALLEL if tp * pp > 1 else NON_TORCH_HIGH
    return Term(NON_TORCH_LOW, high, "NCCL and all-reduce buffers, library workspaces: not derivable, "
                f"0–{high / GiB:.1f} GiB")

"""Will it fit? DeepSeek-V4's weights and KV cache against the GPUs' memory (pure estimates).

Weights: the checkpoint's bytes (``model.safetensors.index.json`` ``metadata.total_size``, else
the known-checkpoint table), split as vLLM splits them: a replicated part every rank holds
(the ``disable_tp``/``ReplicatedLinear`` tensors of ``deepseek_v4/attention.py``, plus what the
load itself costs), the rest over tensor × pipeline parallel ranks — experts also over the
data-parallel ranks when expert parallel is on. Options that move weights off the GPU count
as vLLM counts them (``--cpu-offload-gb`` GiB per GPU; the prefetch offloader's groups).

KV cache per token, fp8_ds_mla (``get_kv_cache_spec``): a 584-byte compressed state per
``compress_ratio`` tokens on CSA (ratio 4) and HCA (ratio 128) layers, plus the 132-byte FP8
indexer state per 4 tokens on CSA layers (68 bytes MXFP4 on SM 10.x from 0.27), each page of
256 tokens padded to a multiple of 576 bytes; every TP rank holds all of it, pipeline stages
their own layers. vLLM refuses to start unless *one* request of
``max_model_len`` fits, counting a per-request reserve for the sliding-window and compressor
groups that grows with ``--max-num-batched-tokens``.

Constants fitted to the logs quoted in the reference notes are named below; tests/
test_memory.py checks the estimate against every one of them with the tolerance README states.
"""

from __future__ import annotations

from .facts import Facts, as_bool, as_human_int, as_int, json_option
from .records import record
from .versions import VersionRange

GiB = 2**30
MiB = 2**20

# KV bytes per compressed state (fp8_ds_mla: 448 FP8 NoPE + 128 bf16 RoPE + 8 scale) and per
# indexer state (128 FP8 + 4 fp32 scale; MXFP4: 64 + 4).
STATE_BYTES = 584
INDEXER_BYTES = {"fp8": 132, "mxfp4": 68}
CSA_RATIO = 4

# Fitted constants (docs/memory.md): the load costs this much beyond the replicated tensors
# (TP 2/4/8 logs of DeepSeek-V4-Flash: 1.7–2.2 GiB held by every rank, 1.23 GiB of tensors);
# the sliding-window/compressor reserve of one request per batched token and a fixed part
# (vllm#44376, #52732, MiaAI-Lab…#3); the activation peak of the profiling run per batched
# token (GB10: 5.30 GiB at 8224, 1.39 GiB at 2048); CUDA graphs.
LOAD_OVERHEAD = int(0.47 * GiB)
REPLICATED_SHARE = 0.0083  # of the total, when the table has no replicated figure
RESERVE_PER_BATCHED_TOKEN = int(0.70 * MiB)
RESERVE_FIXED = int(0.33 * GiB)
ACTIVATION_PER_BATCHED_TOKEN = int(0.64 * MiB)
CUDA_GRAPHS = int(1.5 * GiB)
EXPERT_SHARE = 0.93  # of the weights, in DeepSeek-V4's MoE experts (non-expert ≈ 10–13 GB of 160)
DEFAULT_GPU_MEMORY_UTILIZATION = 0.92  # vLLM's default in 0.24–0.33 (config/cache.py)
KV_BLOCK = 256  # DeepSeek-V4's kernel block size
KV_ALIGNMENT = 576  # fp8_ds_mla pages are padded to multiples of this (_apply_alignment_padding)
DSV4_MAX_MODEL_LEN = 1_048_576  # max_position_embeddings: vLLM's default --max-model-len


def gib_text(n: int | None, unknown: str = "unknown") -> str:
    """``96.0 GiB``: a byte count as every message writes it; ``unknown`` for None."""
    return unknown if n is None else f"{n / GiB:.1f} GiB"


@record
class WeightFacts:
    """What is known about the checkpoint's bytes (gathered by adapters/model_weights.py)."""

    total_bytes: int | None = None
    source: str | None = None  # "model.safetensors.index.json", "the known-checkpoint table (…)"
    exact: bool = False  # from the index (or a measured table figure), not a rounded GB figure
    replicated_bytes: int | None = None  # the tensors every TP rank holds (table)
    shards_total: int = 0
    shards_missing: int = 0
    missing_bytes: int | None = None  # about how much of the checkpoint is not on disk
    local: bool = False  # a local directory (or HF_HUB_OFFLINE): vLLM will not download


@record
class Layout:
    tp: int = 1
    pp: int = 1
    dp: int = 1
    expert_parallel: bool = False

    @property
    def gpus(self) -> int:
        return self.tp * self.pp * self.dp

    def words(self) -> str:
        parts = [f"TP {self.tp}"]
        if self.pp > 1:
            parts.append(f"PP {self.pp}")
        if self.dp > 1:
            parts.append(f"DP {self.dp}" + (" + EP" if self.expert_parallel else ""))
        return " × ".join(parts)


@record
class Estimate:
    layout: Layout
    weights_bytes_per_gpu: int | None
    gpu_memory_bytes: int | None
    budget_bytes: int | None  # what vLLM may use of one GPU
    kv_bytes_per_token: int | None
    reserve_bytes: int | None  # per request, besides its tokens
    kv_available_bytes: int | None  # per GPU, after weights, activations, graphs
    max_model_len: int | None  # what vLLM will try (the flag, else max_position_embeddings)
    max_model_len_fits: int | None  # the longest one request that fits (0: none)
    fits: bool | None  # weights within the budget; None: unknown
    max_num_batched_tokens: int | None = None
    offloaded_bytes: int = 0
    uncertain: str | None = None  # why a "does not fit" would not be certain

    def concurrency(self, length: int) -> int | None:
        """Requests of ``length`` tokens that fit at once (an estimate)."""
        if self.kv_available_bytes is None or self.kv_bytes_per_token is None or self.reserve_bytes is None:
            return None
        per = self.kv_bytes_per_token * length + self.reserve_bytes
        return max(self.kv_available_bytes // per, 0)


def _padded_per_token(state_bytes: int, ratio: int) -> float:
    """Bytes per token of one cache group: a block of 256 tokens holds 256/ratio states, and
    its page is padded to a multiple of 576 bytes."""
    per_block = -(-(KV_BLOCK // ratio) * state_bytes // KV_ALIGNMENT) * KV_ALIGNMENT
    return per_block / KV_BLOCK


def kv_bytes_per_token(config, indexer: str = "fp8", pp: int = 1) -> int | None:
    """fp8_ds_mla KV bytes one token costs on one GPU (all layers / pipeline stages), pages
    padded as vLLM pads them (V4-Flash: 3,915 B/token; 3,584 with the MXFP4 indexer)."""
    ratios = config.get("compress_ratios") if config else None
    layers = config.get("num_hidden_layers") if config else None
    if not isinstance(ratios, list) or not ratios:
        return None
    if type(layers) is int and 0 < layers <= len(ratios):
        ratios = ratios[:layers]  # the rest belong to the MTP/draft layers
    total = 0.0
    for ratio in ratios:
        if type(ratio) is not int or ratio <= 0:
            continue  # sliding-window-only layers: a fixed window per request, no per-token cost
        total += _padded_per_token(STATE_BYTES, ratio)
        if ratio == CSA_RATIO:
            total += _padded_per_token(INDEXER_BYTES[indexer], ratio)
    return int(round(total / max(pp, 1)))


def default_max_num_batched_tokens(gpu_memory: int | None, gpu_name: str | None, capability,
                                   vllm_version: str | None) -> int | None:
    """vLLM's default for `vllm serve` (``_set_default_max_num_seqs_and_batched_tokens_args``)."""
    if gpu_memory is None:
        return None
    name = (gpu_name or "").lower()
    if VersionRange(since="0.28.0").contains(vllm_version) is not False and gpu_memory >= 160 * GiB:
        return 16384
    gb10 = capability == (12, 1) and VersionRange(since="0.33.0").contains(vllm_version) is not False
    if gpu_memory >= 70 * GiB and "a100" not in name and not gb10:
        return 8192
    return 2048


def layout_of(facts: Facts) -> Layout:
    def size(dest):
        n = as_int(facts.args.value(dest))
        return n if n and n > 0 else 1

    return Layout(size("tensor_parallel_size"), size("pipeline_parallel_size"), size("data_parallel_size"),
                  facts.args.value("enable_expert_parallel") is True)


def estimate(facts: Facts, weights: WeightFacts | None, layout: Layout | None = None,
             gpu_memory: int | None = None) -> Estimate:
    """The memory picture for one layout (default: the arguments'), per GPU."""
    layout = layout or layout_of(facts)
    args = facts.args
    gpus = facts.known_gpus or list(facts.all_gpus)
    if gpu_memory is None:
        sizes = [g.memory_total_bytes for g in gpus if g.memory_total_bytes]
        gpu_memory = min(sizes) if sizes else None
    first = gpus[0] if gpus else None

    per_gpu = None
    offloaded = 0
    uncertain = None
    if weights and weights.total_bytes:
        total = weights.total_bytes
        replicated = (weights.replicated_bytes or int(total * REPLICATED_SHARE)) + LOAD_OVERHEAD
        split = layout.tp * layout.pp
        if layout.expert_parallel and layout.dp > 1:
            experts = int((total - replicated) * EXPERT_SHARE)
            dense = total - replicated - experts
            per_gpu = replicated + dense // split + experts // (split * layout.dp)
        else:
            per_gpu = replicated + (total - replicated) // split
        offload_gb = _number(args.value("cpu_offload_gb"))
        if offload_gb:
            offloaded = min(int(offload_gb * GiB), per_gpu)
            per_gpu -= offloaded
        group = as_int(args.value("offload_group_size")) or 0
        n = as_int(args.value("offload_num_in_group")) or 0
        if group > 0 and n > 0:
            moved = int(per_gpu * min(n, group) / group)
            offloaded += moved
            per_gpu -= moved
            uncertain = "the prefetch offloader moves whole layers; the weights left on the GPU are estimated"
        if not weights.exact:
            uncertain = uncertain or f"the checkpoint's size is a rounded figure ({weights.source})"
        if args.value("quantization") not in (None, "None"):
            uncertain = uncertain or "--quantization changes the weights' size when vLLM loads them"

    gmu = _number(args.value("gpu_memory_utilization")) or DEFAULT_GPU_MEMORY_UTILIZATION
    kv_memory = as_human_int(args.value("kv_cache_memory_bytes"))
    budget = int(gpu_memory * gmu) if gpu_memory else None
    fits = None
    if per_gpu is not None and gpu_memory:
        fits = per_gpu + (kv_memory or 0) <= (gpu_memory if kv_memory else budget)

    # The 68-byte MXFP4 indexer state exists from 0.27 (before, it allocated FP8's 132 bytes).
    mxfp4 = _mxfp4_indexer(args) and VersionRange(since="0.27.0").contains(facts.vllm_version) is not False
    family_indexer = "mxfp4" if mxfp4 else "fp8"
    per_token = kv_bytes_per_token(facts.model.config, family_indexer, layout.pp)
    mnbt = as_int(args.value("max_num_batched_tokens")) or default_max_num_batched_tokens(
        gpu_memory, first.name if first else None, first.capability if first else None, facts.vllm_version)
    reserve = RESERVE_FIXED + RESERVE_PER_BATCHED_TOKEN * mnbt if mnbt else None
    activations = ACTIVATION_PER_BATCHED_TOKEN * mnbt if mnbt else None
    graphs = 0 if args.value("enforce_eager") is True else CUDA_GRAPHS
    available = None
    if kv_memory:
        available = kv_memory
    elif budget is not None and per_gpu is not None and activations is not None:
        available = max(budget - per_gpu - activations - graphs, 0)
    requested = max_model_len_tried(facts)
    longest = None
    if available is not None and per_token and reserve is not None:
        longest = max((available - reserve) // per_token, 0)
        cap = facts.model.number("max_position_embeddings")
        if cap and not facts.args.value("hf_overrides"):
            longest = min(longest, cap)  # vLLM does not go past the model's own limit
    return Estimate(layout, per_gpu, gpu_memory, budget, per_token, reserve, available, requested, longest,
                    fits, mnbt, offloaded, uncertain)


def max_model_len_tried(facts: Facts) -> int | None:
    """What vLLM will try: the flag (None for ``auto``/-1: vLLM fits it to memory itself), else
    the model's ``max_position_embeddings``."""
    value = facts.args.value("max_model_len")
    if value == -1 or isinstance(value, str) and value.strip().lower() in ("auto", "-1"):  # -1: EngineArgs
        return None
    n = as_human_int(value)
    if n and n > 0:
        return n
    return facts.model.number("max_position_embeddings") or DSV4_MAX_MODEL_LEN


def _number(value) -> float | None:
    try:
        n = float(value)
    except (TypeError, ValueError):
        return None
    return n if n == n and 0 <= n < 1e6 else None  # not NaN, not absurd


def _mxfp4_indexer(args) -> bool:
    config = json_option(args, "attention_config") or {}
    return config.get("indexer_kv_dtype") == "mxfp4" or as_bool(config.get("use_fp4_indexer_cache"))


def summary(facts: Facts) -> dict | None:
    """``plan --json``'s ``memory`` object (null fields where unknown); None for other models.

    ``fits`` is false exactly when the weights refusal (rules_memory ``weights-exceed-memory``)
    holds, true when the estimate fits, null when it cannot tell.
    """
    from .rules_memory import weights_exceed_budget

    if not facts.model.is_dsv4_family:
        return None
    weights = facts.memory
    e = estimate(facts, weights)
    refused = weights_exceed_budget(facts, None) is not None
    fits = False if refused else (True if e.fits else None)
    return {
        "layout": e.layout.words(),
        "weights_bytes": weights.total_bytes if weights else None,
        "weights_bytes_per_gpu": e.weights_bytes_per_gpu,
        "gpu_memory_bytes": e.gpu_memory_bytes,
        "budget_bytes": e.budget_bytes,
        "kv_bytes_per_token": e.kv_bytes_per_token,
        "kv_available_bytes": e.kv_available_bytes,
        "max_model_len": e.max_model_len,
        "max_model_len_fits": e.max_model_len_fits,
        "max_num_batched_tokens": e.max_num_batched_tokens,
        "fits": fits,
        "source": weights.source if weights else None,
        "estimate": True,
    }


def summary_line(data: dict | None) -> str | None:
    """One line for ``plan``'s text: the same numbers as the JSON."""
    if data is None:
        return None
    def gib(key):
        return gib_text(data.get(key))

    parts = [f"{data['layout']}: weights {gib('weights_bytes_per_gpu')} per GPU"]
    if data.get("budget_bytes") is not None:
        parts[0] += f" of {gib('budget_bytes')} usable ({gib('gpu_memory_bytes')} GPU)"
    if data.get("kv_bytes_per_token"):
        parts.append(f"KV {data['kv_bytes_per_token'] / 1000:.2f} kB/token")
    if data.get("kv_available_bytes") is not None:
        parts.append(f"{gib('kv_available_bytes')} left for it")
    if data.get("fits") is False:
        parts.append("the weights do not fit")
    elif data.get("max_model_len_fits") is not None:
        parts.append(f"one request up to ~{data['max_model_len_fits']:,} tokens" if data["max_model_len_fits"]
                     else "no room for one request")
    parts.append(f"weights from {data['source']}" if data.get("source") else "checkpoint size unknown")
    return "; ".join(parts) + " (estimate)"

"""Will it fit? DeepSeek-V4's weights and KV cache against the GPUs vLLM will use (pure).

Two questions, with different certainty (docs/memory.md says what comes from which vLLM code):
do the weights fit — a certain *lower bound* against the budget, the only thing here that can
refuse (``weights_lower_bound``) — and does one request of ``max_model_len`` fit in the KV
cache left: vLLM's own accounting (``kv_plan.py``, settled per release by ``vllm_config.py``)
against its budget term by term (``budget.py``), so a warning, never a refusal. The GPUs that
count are the first TP × PP × DP of the visible set in CUDA's order (``used_gpus``).
tests/memory/test_memory.py checks the estimate against every logged data point,
tests/vllm_real/test_kv_oracle.py the KV accounting against vLLM's planner on every CI release.
"""

from __future__ import annotations

from collections.abc import Callable

from ..facts import Facts, WeightFacts, as_bool, as_human_int, as_int, json_option
from ..gpus import GpuInfo
from ..model import V4, V41
from ..records import Record
from .activation import activation_term, length_breaks, peak_by_length, spec_scratch_term
from .budget import (
    GRAPH_HIGH,
    GRAPH_LOW,
    NON_TORCH_HIGH,
    NON_TORCH_HIGH_PARALLEL,
    UNKNOWN_KIND_HIGH,
    Term,
    graph_term,
    moe_padding_term,
    non_torch_term,
    unknown_kind_term,
)
from .kv_plan import StagePlan, pp_partition, stage_plans
from .vllm_config import (
    DSPARK_DEFAULT_LAYERS,
    DSV4_MAX_MODEL_LEN,
    EXTENSIBLE_KV_CACHE,
    MXFP4_INDEXER_STATE,
    RETAINED_FOR_MULTI_MTP,
    UNKNOWN,
    GiB,
    concurrency_counted,
    default_max_num_batched_tokens,
    default_max_num_seqs,
    in_flight_tokens,
    kv_family,
    max_model_len_tried,
    speculative_method,
    v2_runner,
)
from .weights import DRAFT

MiB = 2**20


# Fitted constants (docs/memory.md): the load costs this much beyond the tensors (TP 2/4/8 logs
# of DeepSeek-V4-Flash: 1.7–2.2 GiB held by every rank, 1.23 GiB of replicated tensors). The
# activation peak is core/memory/activation.py's; the CUDA-graph estimate and the non-torch memory are
# bands: core/memory/budget.py.
LOAD_OVERHEAD = int(0.47 * GiB)
REPLICATED_SHARE = 0.0083  # of the total, when neither the table nor the shapes give it
TALLY_AGREES = 0.05  # the tally is used for the estimate only where it is this close to the checkpoint's size
CHECKED_TALLY_ERROR = 0.005  # a tally within this of the exact size counts as checked (core/memory/weights.py)
EXPERT_SHARE = 0.93  # DeepSeek-V4-Flash's experts, when the shapes are unknown (estimate only)
DEFAULT_GPU_MEMORY_UTILIZATION = 0.92  # vLLM's default in 0.24–0.33 (config/cache.py)
BATCHED_DP_MOE_TOKENS = 256  # SchedulerConfig.DEFAULT_MAX_NUM_BATCHED_TOKENS_FOR_BATCHED_DP
BATCHED_DP_BACKENDS = ("deepep_low_latency", "nixl_ep")  # ParallelConfig.use_batched_dp_moe


def gib_text(n: int | None, unknown: str = "unknown") -> str:
    """``96.0 GiB``: a byte count as every message writes it; ``unknown`` for None."""
    return unknown if n is None else f"{n / GiB:.1f} GiB"


class Layout(Record):
    tp: int = 1
    pp: int = 1
    dp: int = 1
    expert_parallel: bool = False

    @property
    def gpus(self) -> int:
        return self.tp * self.pp * self.dp

    def words(self) -> str:
        parts = [f"{k} {n}" for k, n in (("TP", self.tp), ("PP", self.pp), ("DP", self.dp)) if k == "TP" or n > 1]
        return " × ".join(parts) + (" + EP" if self.expert_parallel else "")


class Estimate(Record):
    layout: Layout
    weights_bytes_per_gpu: int | None = None  # the estimate (the most loaded GPU)
    gpu_memory_bytes: int | None = None  # the smallest GPU vLLM will use (the most favourable choice)
    budget_bytes: int | None = None  # what vLLM may use of it
    kv_bytes_per_token: int | None = None  # one more token of a long request, on the busiest stage
    kv_available_bytes: int | None = None  # per GPU, after weights, activations, graphs
    max_model_len: int | None = None  # what vLLM will try (the flag, else max_position_embeddings)
    max_model_len_fits: int | None = None  # the longest one request vLLM admits on the estimate (0: none)
    fits: bool | None = None  # weights within the budget; None: unknown
    max_num_batched_tokens: int | None = None
    offloaded_bytes: int = 0
    uncertain: str | None = None  # why a "does not fit" would not be certain
    weights_lower_bytes: int | None = None  # the certain lower bound of the weights per GPU
    in_flight_tokens: int | None = None  # tokens a window cache must hold besides its window
    need_bytes: int | None = None  # KV one request of max_model_len needs (vLLM's accounting)
    stages: tuple[StagePlan, ...] = ()
    gpu_memory_least_bytes: int | None = None  # CUDA's order unknown: the smallest GPU it could pick
    # The bands (core/memory/budget.py): "low" is the pessimistic end of what is left (every term
    # at its high end), "high" the optimistic one; the plain fields above are their middle.
    kv_available_low: int | None = None
    kv_available_high: int | None = None
    max_model_len_fits_low: int | None = None
    max_model_len_fits_high: int | None = None
    terms: tuple[tuple[str, Term], ...] = ()  # (a name of TERMS, its band), in TERMS' order
    runner: str | None = None  # "V1" / "V2": the model runner vLLM picks (its graph accounting differs)
    max_num_seqs: int | None = None
    concurrency_counted: bool = False  # the release's own "Maximum concurrency" count is modelled

    def term(self, name: str) -> Term | None:
        return next((t for n, t in self.terms if n == name), None)

    def request_bytes(self, length: int) -> int | None:
        """KV bytes one request of ``length`` tokens needs on the busiest stage."""
        if not self.stages or self.in_flight_tokens is None:
            return None
        return max(s.need(length, self.in_flight_tokens) for s in self.stages)

    def concurrency(self, length: int, available: int | None = None) -> int | None:
        """Requests of ``length`` tokens that fit at once in one engine: vLLM's "Maximum
        concurrency" rounded down, at the middle of the bands unless ``available`` is given; counted
        as the release counts it where modelled (``concurrency_counted``: the pool's blocks over a
        request's, kv_plan.StagePlan.concurrency_blocks — up to ~12 % above available / need on
        0.24–0.26), else available / need."""
        per = self.request_bytes(length)
        available = self.kv_available_bytes if available is None else available
        if available is None or not per:
            return None
        if not self.concurrency_counted or self.in_flight_tokens is None:
            return max(available // per, 0)
        counts = []
        for stage in self.stages:
            block, blocks = stage.concurrency_blocks(length, self.in_flight_tokens)
            if block <= 0 or blocks <= 0:
                return max(available // per, 0)
            counts.append((max(available, 0) // block) // blocks)
        return min(counts)

    def concurrency_band(self, length: int) -> tuple[int | None, int | None]:
        """vLLM's "Maximum concurrency" at ``length`` at the pessimistic and optimistic ends."""
        return self.concurrency(length, self.kv_available_low), self.concurrency(length, self.kv_available_high)


MAX_PARALLEL = 2**31  # vLLM reads these with int(): a huge size is huge, never 1


def _size(facts: Facts, dest: str) -> int:
    value = facts.args.value(dest)
    n = as_int(value)
    if n is None and isinstance(value, str) and value.strip().isascii() and value.strip().isdigit():
        n = MAX_PARALLEL  # longer than as_int reads: at least this many
    return min(n, MAX_PARALLEL) if n and n > 0 else 1


def layout_of(facts: Facts) -> Layout:
    return Layout(_size(facts, "tensor_parallel_size"), _size(facts, "pipeline_parallel_size"),
                  _size(facts, "data_parallel_size"), facts.args.value("enable_expert_parallel") is True)


def used_gpus(facts: Facts, count: int) -> tuple[list[GpuInfo], bool]:
    """The GPUs vLLM's first ``count`` devices are, most favourable first; and whether that is
    exactly them (False: CUDA's order is unknown, these are the largest that could be)."""
    gpus = list(facts.all_gpus)
    selection = facts.gpus.selection
    if selection is not None and not selection.ambiguous and selection.order_known:
        return gpus[:count], True
    known = sorted(gpus, key=lambda g: g.memory_total_bytes or 0, reverse=True)
    chosen = known[:count]
    sizes = {g.memory_total_bytes for g in gpus}
    return chosen, len(sizes) <= 1 and len({g.capability for g in gpus}) <= 1


def _number(value) -> float | None:
    try:
        n = float(value)
    except (TypeError, ValueError):
        return None
    return n if n == n and 0 <= n < 1e6 else None  # not NaN, not absurd


def gpu_memory_utilization(facts: Facts) -> float | None:
    """``--gpu-memory-utilization`` as vLLM reads it (default 0.92; from 0.34 1.0 where the
    extensible KV cache may be on: the larger, so that no refusal rests on the smaller); None
    when vLLM rejects the value itself (CacheConfig: 0 < x ≤ 1)."""
    args = facts.args
    raw = args.value("gpu_memory_utilization")
    if raw is None:
        chosen = args.value("enable_extensible_kv_cache")
        off = ((chosen is not None and not as_bool(chosen)) or args.value("kv_cache_memory_bytes") is not None
               or args.value("num_gpu_blocks_override") is not None or as_bool(args.value("enable_elastic_ep")))
        return 1.0 if EXTENSIBLE_KV_CACHE.contains(facts.vllm_version) and not off else DEFAULT_GPU_MEMORY_UTILIZATION
    n = _number(raw)
    return n if n is not None and 0 < n <= 1 else None


def _mxfp4_indexer(args) -> bool:
    config = json_option(args, "attention_config") or {}
    return config.get("indexer_kv_dtype") == "mxfp4" or as_bool(config.get("use_fp4_indexer_cache"))


def _ratios(facts: Facts) -> list[int] | None:
    return backbone_ratios(facts.model.config or {})


def backbone_ratios(config) -> list[int] | None:
    """``compress_ratios`` of the backbone layers (V4.1 nests them in ``text_config``): the first
    ``num_hidden_layers`` entries, a non-integer read as a sliding-window-only layer."""
    text = config.get("text_config")
    if isinstance(text, dict) and "compress_ratios" in text:
        config = text
    ratios = config.get("compress_ratios")
    if not isinstance(ratios, list) or not ratios:
        return None
    layers = config.get("num_hidden_layers")
    if type(layers) is int and 0 < layers <= len(ratios):
        ratios = ratios[:layers]  # the rest belong to the MTP/draft layers
    return [r if type(r) is int else 0 for r in ratios]


def draft_kv(facts: Facts) -> tuple[int, int]:
    """(the speculative draft's layers that get KV caches, the ``extra_retained_tokens`` of every
    sliding-window cache): MTP's ``num_nextn_predict_layers``, DSpark's ``n_mtp_layers`` or 3;
    multi-module MTP retains ``num_speculative_tokens − 1`` more from 0.28 (docs/memory.md, the
    draft's caches). Other methods: (0, 0) — an EAGLE or draft model's layers are not modelled."""
    method = speculative_method(facts)
    if method not in ("mtp", "dspark"):
        return 0, 0
    spec = json_option(facts.args, "speculative_config") or {}
    if method == "dspark":
        n = facts.model.number("n_mtp_layers")
        return (n if n and n > 0 else DSPARK_DEFAULT_LAYERS), 0
    nextn = _nextn(facts)
    k = spec.get("num_speculative_tokens")
    k = k if type(k) is int and k > 0 else nextn  # vLLM's default: n_predict
    multi = min(nextn, k) > 1 and RETAINED_FOR_MULTI_MTP.contains(facts.vllm_version) is not False
    return nextn, (k - 1 if multi else 0)


def batched_tokens(facts: Facts, gpu: GpuInfo | None, gpu_memory: int | None, max_model_len: int | None,
                   layout: Layout) -> int | None:
    """``max_num_batched_tokens`` as ``_set_default_max_num_seqs_and_batched_tokens_args`` sets it:
    the flag, else the default for the GPU (256 for batched DP MoE all2all), doubled by
    ``--performance-mode throughput``, at least ``max_model_len`` without chunked prefill."""
    given = as_int(facts.args.value("max_num_batched_tokens"))
    if given and given > 0:
        return given
    mnbt: int | None = BATCHED_DP_MOE_TOKENS
    if not (facts.args.value("all2all_backend") in BATCHED_DP_BACKENDS and layout.expert_parallel
            and layout.dp > 1):
        mnbt = default_max_num_batched_tokens(gpu_memory, gpu.name if gpu else None,
                                              gpu.capability if gpu else None, facts.vllm_version)
    if mnbt is None:
        return None
    if facts.args.value("performance_mode") == "throughput":
        mnbt *= 2
    if facts.args.value("enable_chunked_prefill") is False and max_model_len:
        mnbt = max(max_model_len, mnbt)
    return mnbt


def _nextn(facts: Facts) -> int:
    n = facts.model.number("num_nextn_predict_layers")
    return n if n and n > 0 else 0


def _own_draft(facts: Facts) -> str | None:
    """The draft module the checkpoint carries: ``dspark`` (``dspark_target_layer_ids``), ``mtp``
    (``num_nextn_predict_layers`` > 0) or None — as core/memory/weights.py tallies it. V4.1 keeps them
    under ``text_config`` (vLLM's DeepseekV41Config flattens it; its only draft is DSpark)."""
    targets = facts.model.field("dspark_target_layer_ids")
    if isinstance(targets, list) and targets:
        return "dspark"
    return "mtp" if _nextn(facts) else None


def _unbuilt_draft(facts: Facts) -> str | None:
    """The checkpoint's own draft module (``_own_draft``) when vLLM does not build it, or None:
    vLLM builds it only for its own method (``mtp``: every ``*_mtp`` name, or ``dspark``)."""
    own = _own_draft(facts)
    return None if own is None or own == speculative_method(facts) else own


def _known_method(facts: Facts) -> str | None:
    """``speculative_method``, None where only the draft's config.json can name it (no draft of ours)."""
    method = speculative_method(facts)
    return None if method == UNKNOWN else method


MTP_SHARE_MARGIN = 1.02  # without shapes: a draft module is taken as its layers' share + 2 %


def _skipped_draft_bytes(facts: Facts, weights: WeightFacts, layout: Layout) -> int | None:
    """At most what the checkpoint's own draft module weighs when vLLM does not build it, or 0
    when it does; None where that cannot be bounded. The target maps every ``mtp.`` tensor to
    None, the DSpark module's too (dspark.py:445@0.33); a drafter of another kind is not the
    module, so all of it counts as skipped. With checked shapes the module's own bytes plus what
    the tally does not explain, else its layers' share + 2 % (docs/memory.md, the lower bound)."""
    own = _unbuilt_draft(facts)
    if own is None:
        return 0
    total = weights.total_bytes or 0
    split = _shape_split(facts, weights, layout)
    if split is not None and split.checked:
        draft = split.bytes_of(DRAFT)
        return min((draft.checkpoint_bytes if draft else 0) + max(total - split.checkpoint_bytes, 0), total)
    layers = facts.model.number("num_hidden_layers")
    n = _draft_layers(facts, own)
    return None if not layers or n <= 0 else min(int(total * n * MTP_SHARE_MARGIN) // (layers + n), total)


def _draft_layers(facts: Facts, own: str) -> int:
    """The decoder layers of the checkpoint's own draft module (MTP's or DSpark's: ``draft_kv``)."""
    return _nextn(facts) if own == "mtp" else (facts.model.number("n_mtp_layers") or DSPARK_DEFAULT_LAYERS)


def _draft_share(facts: Facts, total: int) -> int:
    """The estimate without a tally: the unbuilt draft module (``_unbuilt_draft``) at its layers'
    share of the checkpoint (``_draft_layers``), taken off what is spread."""
    own = _unbuilt_draft(facts)
    if own is None:
        return 0
    layers = facts.model.number("num_hidden_layers")
    n = _draft_layers(facts, own)
    return total * n // (layers + n) if layers and n > 0 else 0


def engram_tables_off_the_gpu(facts: Facts) -> bool:
    """DeepSeek-V4.1's Engram tables (``engram_layer_ids``) may be in pinned host memory, vLLM's
    default (docs/memory.md; pinned: models/deepseek_v41/nvidia/engram.py:279-297@0.30.0); only
    ``--engram-config '{"cpu_offload": false}'`` puts them on the GPUs for certain. A V4.1 whose
    config.json does not say is taken to have them, as every V4.1 checkpoint does."""
    layers = facts.model.field("engram_layer_ids")
    if layers is None and facts.model.family == V41:
        layers = ["unknown"]
    if not layers:  # as vLLM asks: bool(hf_text_config.engram_layer_ids) (config/engram.py model_has_engram_layers)
        return False
    return (json_option(facts.args, "engram_config") or {}).get("cpu_offload") is not False


def host_tables_bytes(facts: Facts) -> int | None:
    """The Engram tables' bytes vLLM keeps in host memory (``engram_tables_off_the_gpu``), or None."""
    return _engram_table_bytes(facts) if engram_tables_off_the_gpu(facts) else None


def _engram_table_bytes(facts: Facts) -> int | None:
    """The Engram tables' bytes: per table ``rows × engram_head_dim`` FP8 values and one E8M0 scale
    per 32 (``ParallelEngramEmbedding``: block_size 32, common/engram.py:650-700@0.30.0; the
    checkpoint's ``layers.N.engram.embed.weight``/``.scale``: V4.1-Flash 2 × ~384M rows × 264 B =
    188.8 GiB). None where config.json does not give them."""
    rows, dim = facts.model.field("engram_num_embeddings"), facts.model.field("engram_head_dim")
    if not (isinstance(rows, list) and rows and all(type(n) is int and n > 0 for n in rows)
            and type(dim) is int and dim > 0):
        return None
    return sum(rows) * (dim + dim // 32)


def weights_lower_bound(facts: Facts, weights: WeightFacts | None, layout: Layout,
                        mnbt: int | None = None) -> int | None:
    """The fewest bytes of weights the busiest GPU can hold, for certain, or None (docs/memory.md,
    "The refusal's lower bound"): the exact size less the unbuilt draft (``_skipped_draft_bytes``)
    over every GPU, or a checked tally's busiest GPU (``_busiest``), less offloading; None while
    V4.1's Engram tables may be in host memory (the checkpoint's size counts them)."""
    if not weights or not weights.total_bytes or engram_tables_off_the_gpu(facts):
        return None
    found = None
    if weights.exact:
        skipped = _skipped_draft_bytes(facts, weights, layout)
        if skipped is not None:
            found = (weights.total_bytes - skipped) // layout.gpus
    split = _shape_split(facts, weights, layout) if (weights.exact or weights.published) else None
    if split is not None and split.checked:  # within CHECKED_TALLY_ERROR of a published size
        tally = _busiest(facts, split, mnbt, 1 - CHECKED_TALLY_ERROR)
        if tally is None:
            tally = int(split.per_gpu_bytes * (1 - CHECKED_TALLY_ERROR))
        found = max(found or 0, tally)
    if found is None:
        return None
    offload = _number(facts.args.value("cpu_offload_gb"))
    if offload:
        found -= min(int(offload * GiB), found)
    return found


def _weights_estimate(facts: Facts, weights: WeightFacts, layout: Layout,
                      mnbt: int | None) -> tuple[int | None, int, str | None]:
    """(per GPU, offloaded, uncertain): the estimate of what the busiest GPU holds; None where
    DeepSeek-V4.1's Engram tables may be in host memory and config.json does not give their size."""
    args = facts.args
    total = weights.total_bytes or 0
    engram = None
    if engram_tables_off_the_gpu(facts):
        engram = _engram_table_bytes(facts)
        if engram is None:
            return None, 0, None
        total = max(total - engram, 0)
    split = _shape_split(facts, weights, layout)
    if split is not None and split.deviation is not None and abs(split.deviation) <= TALLY_AGREES:
        busiest = _busiest(facts, split, mnbt)
        per_gpu = split.per_gpu_bytes + LOAD_OVERHEAD if busiest is None else busiest
    else:
        total -= _draft_share(facts, total)
        replicated = (weights.replicated_bytes or int(total * REPLICATED_SHARE)) + LOAD_OVERHEAD
        tp_pp = layout.tp * layout.pp
        if layout.dp > 1:  # experts over DP × TP (EP), or the MoE tensor-parallel over DP × TP
            experts = int((total - replicated) * EXPERT_SHARE)
            dense = total - replicated - experts
            per_gpu = replicated + dense // tp_pp + experts // (tp_pp * layout.dp)
        else:
            per_gpu = replicated + (total - replicated) // tp_pp
    offloaded = 0
    uncertain = None
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
    if engram:
        uncertain = uncertain or (f"the Engram tables ({gib_text(engram)}) are left in host memory, where vLLM "
                                  "keeps them unless --engram-config sets cpu_offload false")
    return per_gpu, offloaded, uncertain


_MEMO_KEPT = 4  # the arguments' picture stays while a fix search estimates a few other facts
_SPLIT_MEMO: list = []  # the last (config, inputs, split)s: the estimate, the lower bound and a fix search's
# re-plans (other arguments, the same split) share them


def _shape_split(facts: Facts, weights: WeightFacts, layout: Layout):
    """The checkpoint by tensor class, split as vLLM splits it (``core/memory/weights.py``), checked
    against the checkpoint's exact size where there is one; None where config.json does not
    give the shapes. Computed once for the same config and the same inputs of the split."""
    from .weights import split_weights

    config = facts.model.config or {}
    partition = _partition(facts, layout.pp)
    key = (layout.tp, layout.pp, layout.dp, layout.expert_parallel, _known_method(facts), weights.total_bytes,
           facts.vllm_version, _mega_moe(facts), tuple(partition) if partition else None)
    for c, k, split in _SPLIT_MEMO:
        if c is config and k == key:
            return split
    split = split_weights(config, layout.tp, layout.pp, layout.dp, layout.expert_parallel, key[4],
                          weights.total_bytes, vllm_version=facts.vllm_version, mega_moe=key[7],
                          pp_partition=partition)
    _SPLIT_MEMO[:] = [(config, key, split), *_SPLIT_MEMO[: _MEMO_KEPT - 1]]
    return split


def _partition(facts: Facts, pp: int) -> list[int] | None:
    """``VLLM_PP_LAYER_PARTITION`` where it is one vLLM accepts for this model and PP size."""
    layers = facts.model.number("num_hidden_layers")
    return pp_partition(facts.rule_env.get("VLLM_PP_LAYER_PARTITION"), layers, pp) if layers and pp > 1 else None


def _mega_moe(facts: Facts) -> bool:
    backend = facts.args.value("moe_backend") or (json_option(facts.args, "kernel_config") or {}).get("moe_backend")
    return isinstance(backend, str) and "mega_moe" in backend


def _buffers(facts: Facts, mnbt: int | None, last_stage: bool = True) -> int | None:
    """What one GPU of a stage allocates with the model besides its weights
    (``core/weights.load_buffers``: the RoPE caches, the top-k buffer, on the last stage the
    target's hidden-state buffer for the drafter), for the method vLLM settles on."""
    from .weights import load_buffers

    return load_buffers(facts.model.config or {}, mnbt, _known_method(facts), facts.vllm_version, last_stage)


def _busiest(facts: Facts, split, mnbt: int | None, keep: float = 1.0) -> int | None:
    """The busiest GPU by the tally: every pipeline stage's bytes (× ``keep``) plus the buffers
    that stage allocates — the drafter and the hidden-state buffer it reads are on the last
    stage only (gpu_model_runner.py:547@0.24, gpu/model_runner.py:301@0.33). None where the
    buffers cannot be read."""
    common = _buffers(facts, mnbt, last_stage=False)
    last = _buffers(facts, mnbt, last_stage=True)
    if common is None or last is None:
        return None
    stages = split.stages
    return max(int(b * keep) + (last if i == len(stages) - 1 else common) for i, b in enumerate(stages))


_MEMO: list = []  # the last (facts, weights, layout, gpu_memory, estimate)s: plan, its rows and the summary share them


def estimate(facts: Facts, weights: WeightFacts | None, layout: Layout | None = None,
             gpu_memory: int | None = None) -> Estimate:
    """The memory picture for one layout (default: the arguments'), per GPU. Computed once for
    the same facts and weights (the objects themselves: records are immutable; the last few
    kept, so a fix search's other facts do not push out the plan's own)."""
    for f, w, lay, mem, result in _MEMO:
        if f is facts and w is weights and lay == layout and mem == gpu_memory:
            return result
    result = _estimate(facts, weights, layout, gpu_memory)
    _MEMO[:] = [(facts, weights, layout, gpu_memory, result), *_MEMO[: _MEMO_KEPT - 1]]
    return result


class Setting(Record):
    """What the terms of one estimate read: the layout and the settings vLLM settles on."""

    layout: Layout
    mnbt: int
    seqs: int | None  # max_num_seqs
    length: int  # the --max-model-len the activation peak is sized by (vLLM's, else the model's cap)
    capability: tuple[int, int] | None  # the GPUs' where exactly known
    v2: bool  # the V2 model runner
    gpus: tuple[GpuInfo, ...] = ()  # the GPUs the layout uses (used_gpus)


def _activations(facts: Facts, s: Setting) -> Term:
    lay = s.layout
    return activation_term(facts, lay.tp, s.mnbt, s.seqs, lay.dp > 1 and lay.expert_parallel, pp=lay.pp, dp=lay.dp,
                           expert_parallel=lay.expert_parallel, max_model_len=s.length, capability=s.capability)


class BudgetTerm(Record):
    """One term vLLM subtracts from the budget before the KV cache (core/memory/budget.py)."""

    name: str  # as Estimate.terms, plan --json's memory.terms, fit's legend and docs/memory.md name it
    decides: str  # the facts and release ranges that decide it
    formula: str  # its formula, or its band
    source: str  # the vLLM code it rests on
    test: str  # its own test (tests/memory/test_memory_terms.py holds every term to one)
    build: Callable[[Facts, Setting], Term]


TERMS: tuple[BudgetTerm, ...] = (
    BudgetTerm("activations", "the model's shapes, TP/PP/DP/EP, --max-num-batched-tokens, --max-num-seqs, "
               "--max-model-len, the attention/MoE backends and the release (activation.py's ranges)",
               "the profile run's peak, term by term where the code sizes it, a band for the rest",
               "v1/worker/gpu_worker.py determine_available_memory (torch_peak_increase / transient_peak_headroom)",
               "tests/memory/test_activation.py::test_the_peak_is_the_forward_or_the_sampler_with_the_workspace_held",
               _activations),
    BudgetTerm("cuda graphs", "--enforce-eager, cudagraph_mode, -O0, VLLM_MEMORY_PROFILER_ESTIMATE_CUDAGRAPHS, "
               "the runner (V2 profiles graphs from 0.29: V2_PROFILES_GRAPHS)",
               f"0 where vLLM takes none, else profiled on the GPU: {GRAPH_LOW / GiB:.1f}–{GRAPH_HIGH / GiB:.1f} GiB",
               "v1/worker/gpu_worker.py determine_available_memory (the CUDA-graph estimate)",
               "tests/memory/test_memory_budget.py::test_no_graph_term_where_vllm_subtracts_none",
               lambda facts, s: graph_term(facts, s.v2)),
    BudgetTerm("non-torch", "TP × PP (communicators)",
               f"not derivable: 0–{NON_TORCH_HIGH / GiB:.1f} GiB, "
               f"0–{NON_TORCH_HIGH_PARALLEL / GiB:.1f} GiB with TP/PP",
               "utils/mem_utils.py non_torch_increase (inside total_consumed from 0.27)",
               "tests/memory/test_memory_terms.py::test_the_non_torch_band_is_wider_with_communicators",
               lambda facts, s: non_torch_term(s.layout.tp, s.layout.pp)),
    BudgetTerm("moe padding", "the experts' dtype and shapes, TP × DP without EP, the GPU's kind, the release "
               "(TRTLLM_ROWS_256, B12X_MOE in weights.py)",
               "each rank's MXFP4 expert slice rounded up to the kernel's rows: exact where the kernel is known, "
               "a band where vLLM picks it at start",
               "fused_moe/oracle/mxfp4.py mxfp4_round_up_hidden_size_and_intermediate_size",
               "tests/memory/test_memory_calibration.py::test_pro_at_tp_8_on_sm_10_before_0_27_pads_its_experts_a_third",
               lambda facts, s: moe_padding_term(facts, s.layout.tp, s.layout.pp, s.layout.dp,
                                                 s.layout.expert_parallel, s.capability, draft_kv(facts)[0])),
    BudgetTerm("unknown gpu kind", "whether a preset names the GPUs' kind (presets.py)",
               f"0 for a preset's kind, else 0–{UNKNOWN_KIND_HIGH / GiB:.1f} GiB (its overheads not known)",
               "none: the overheads measured on the preset kinds do not carry over",
               "tests/memory/test_memory_calibration.py::test_a_gpu_of_unknown_kind_widens_the_band_instead_of_fitting",
               lambda facts, s: unknown_kind_term(s.gpus)),
    BudgetTerm("spec sampler scratch", "--speculative-config's num_speculative_tokens, --max-num-seqs, "
               "--max-num-batched-tokens, the runner, --gpu-memory-utilization",
               "the rows a full verification step samples beyond the profile's, × vocab × 6–28 B, less the "
               "headroom vLLM leaves outside its budget (allocated after the KV cache: vLLM does not subtract it)",
               "v1/worker/gpu_model_runner.py _dummy_sampler_run (V1), v1/worker/gpu/model_runner.py (V2)",
               "tests/memory/test_memory_calibration.py::test_verifying_many_drafts_at_many_sequences_outgrows_the_headroom",
               lambda facts, s: spec_scratch_term(facts, s.mnbt, s.seqs, s.v2, s.gpus,
                                                  gpu_memory_utilization(facts))),
)


def _gpu_memory(facts: Facts, chosen: list[GpuInfo], exact: bool) -> tuple[int | None, int | None, str | None]:
    """(the smallest of the GPUs vLLM will use, the smallest it could pick where CUDA's order is
    unknown, why that makes the estimate uncertain)."""
    sizes = [g.memory_total_bytes for g in chosen if g.memory_total_bytes]
    memory = min(sizes) if sizes and len(sizes) == len(chosen) else None
    if exact or not memory:
        return memory, None, None
    every = sorted(g.memory_total_bytes or 0 for g in facts.all_gpus)
    return (memory, every[0] if every and every[0] < memory else None,
            "CUDA's device order over GPUs that differ is unknown (set CUDA_DEVICE_ORDER=PCI_BUS_ID)")


def _kv_stages(facts: Facts, layout: Layout, mnbt: int | None) -> tuple[tuple[StagePlan, ...], int | None]:
    """DeepSeek-V4's caches per pipeline stage as the release plans them, and the in-flight tokens
    (V4.1's caches are its own: not modelled)."""
    ratios = _ratios(facts) if facts.model.family == V4 else None
    if not ratios:
        return (), None
    mxfp4 = _mxfp4_indexer(facts.args) and MXFP4_INDEXER_STATE.contains(facts.vllm_version) is not False
    draft, retained = draft_kv(facts)
    stages = tuple(stage_plans(ratios, kv_family(facts.vllm_version), layout.pp, "mxfp4" if mxfp4 else "fp8",
                               _partition(facts, layout.pp), draft, retained))
    return stages, (in_flight_tokens(facts, mnbt, layout.pp, layout.gpus) if mnbt else None)


def _estimate(facts: Facts, weights: WeightFacts | None, layout: Layout | None,
              gpu_memory: int | None) -> Estimate:
    layout = layout or layout_of(facts)
    args = facts.args
    chosen, exact_gpus = used_gpus(facts, layout.gpus)
    first = chosen[0] if chosen else None
    least = uncertain = None
    if gpu_memory is None:
        gpu_memory, least, uncertain = _gpu_memory(facts, chosen, exact_gpus)
    requested = max_model_len_tried(facts)
    mnbt = batched_tokens(facts, first, gpu_memory, requested, layout)
    per_gpu, offloaded, lower = None, 0, None
    if weights and weights.total_bytes:
        per_gpu, offloaded, why = _weights_estimate(facts, weights, layout, mnbt)
        uncertain = uncertain or why
        lower = weights_lower_bound(facts, weights, layout, mnbt)
    kv_memory = as_human_int(args.value("kv_cache_memory_bytes"))
    budget = int(gpu_memory * (gpu_memory_utilization(facts) or DEFAULT_GPU_MEMORY_UTILIZATION)) if gpu_memory else None
    fits = None
    if per_gpu is not None and gpu_memory and budget is not None:
        fits = per_gpu + (kv_memory or 0) <= (gpu_memory if kv_memory else budget)
    stages, in_flight = _kv_stages(facts, layout, mnbt)
    cap = facts.model.number("max_position_embeddings") or DSV4_MAX_MODEL_LEN
    if args.value("hf_overrides"):
        cap = max(cap, requested or 0)
    v2 = v2_runner(facts, speculative_method(facts), layout.pp)
    seqs = as_int(args.value("max_num_seqs"))
    if not (seqs and seqs > 0):
        seqs = default_max_num_seqs(gpu_memory, first.name if first else None, first.capability if first else None,
                                    facts.vllm_version)
    setting = Setting(layout, mnbt or 0, seqs, requested or cap, first.capability if first and exact_gpus else None, v2,
                      tuple(chosen))
    terms = tuple((t.name, t.build(facts, setting)) for t in TERMS) if mnbt else ()
    e = Estimate(layout, per_gpu, gpu_memory, budget, max_model_len=requested, fits=fits, max_num_batched_tokens=mnbt,
                 offloaded_bytes=offloaded, uncertain=uncertain, weights_lower_bytes=lower, in_flight_tokens=in_flight,
                 stages=stages, gpu_memory_least_bytes=least, terms=terms, runner="V2" if v2 else "V1",
                 max_num_seqs=seqs, concurrency_counted=concurrency_counted(facts.vllm_version),
                 kv_bytes_per_token=int(round(max(s.bytes_per_token for s in stages))) if stages else None)
    return _longest(facts, _available(facts, e), setting, cap)


def _available(facts: Facts, e: Estimate) -> Estimate:
    """What is left for the KV cache: the budget less the weights and every term, at the middle and
    both ends (the weights' lower bound at the optimistic one); what the flags fix it to, where they do."""
    blocks = as_int(facts.args.value("num_gpu_blocks_override"))
    kv_memory = as_human_int(facts.args.value("kv_cache_memory_bytes"))
    if blocks and blocks > 0 and e.stages:
        available = low = high = blocks * max(s.unit for s in e.stages)
    elif kv_memory:
        available = low = high = kv_memory
    elif e.budget_bytes is not None and e.weights_bytes_per_gpu is not None and e.terms:
        budget, per_gpu, lower = e.budget_bytes, e.weights_bytes_per_gpu, e.weights_lower_bytes
        least_weights = min(per_gpu, lower) if lower is not None else per_gpu
        available = max(budget - per_gpu - sum(t.mid for _, t in e.terms), 0)
        low = max(budget - per_gpu - sum(t.high for _, t in e.terms), 0)
        high = max(budget - least_weights - sum(t.low for _, t in e.terms), 0)
    else:
        return e
    return e._replace(kv_available_bytes=available, kv_available_low=low, kv_available_high=high)


def _longest(facts: Facts, e: Estimate, setting: Setting, cap: int) -> Estimate:
    """The longest single request vLLM admits at the middle and both ends, and what one request of
    ``max_model_len`` needs. Where the activation peak is sized by ``--max-model-len`` (vLLM's own
    length is not fixed by the flags), each length is judged with the peak at that length."""
    stages, in_flight = e.stages, e.in_flight_tokens
    if not stages or in_flight is None:
        return e
    need = max(s.need(e.max_model_len or cap, in_flight) for s in stages)
    e = e._replace(need_bytes=need)
    if e.kv_available_bytes is None:
        return e

    def at(available: int | None) -> int | None:
        return None if available is None else min(s.longest(available, in_flight, cap) for s in stages)

    ends = {"mid": at(e.kv_available_bytes), "low": at(e.kv_available_low), "high": at(e.kv_available_high)}
    args = facts.args
    fixed = ((as_int(args.value("num_gpu_blocks_override")) or 0) > 0
             or as_human_int(args.value("kv_cache_memory_bytes")))
    if e.terms and e.max_model_len is not None and not fixed and e.budget_bytes is not None:
        # The activation peak reserves workspaces sized by --max-model-len (core/memory/activation.py):
        # a shorter length leaves more for the KV cache. What vLLM admits at a length L is judged
        # with the peak at L, so the longest admitted is where that holds (the length below).
        per_gpu, lower = e.weights_bytes_per_gpu or 0, e.weights_lower_bytes
        lay = setting.layout
        peak_at = peak_by_length(facts, lay.tp, setting.mnbt, setting.seqs, lay.dp > 1 and lay.expert_parallel,
                                 pp=lay.pp, dp=lay.dp, expert_parallel=lay.expert_parallel,
                                 capability=setting.capability)
        others = [t for n, t in e.terms if n != "activations"]
        # What each end spends besides the peak, and the peak's share: the low end counts the
        # terms' high ends, the high end their low ends (and the least weights).
        besides = {"low": per_gpu + sum(t.high for t in others), "mid": per_gpu + sum(t.mid for t in others),
                   "high": (min(per_gpu, lower) if lower is not None else per_gpu) + sum(t.low for t in others)}
        share = {"low": lambda low, high: high, "mid": lambda low, high: (low + high) // 2,
                 "high": lambda low, high: low}
        budget, breaks = e.budget_bytes, length_breaks(facts)

        def admitted(end: str) -> int:
            def left(n: int) -> int:
                return max(budget - besides[end] - share[end](*peak_at(n)), 0)

            return _longest_at_own_length(cap, lambda n: min(s.longest(left(n), in_flight, cap) for s in stages),
                                          breaks)

        ends = {end: None if found is None else admitted(end) for end, found in ends.items()}
    return e._replace(max_model_len_fits=ends["mid"], max_model_len_fits_low=ends["low"],
                      max_model_len_fits_high=ends["high"])


def _longest_at_own_length(cap: int, longest_at, breaks: tuple[int, ...] = ()) -> int:
    """The longest length L ≤ ``cap`` with L ≤ ``longest_at(L)``: what is admitted when the budget
    itself depends on L. ``longest_at`` does not grow within a segment between ``breaks`` (across
    one it may jump: the indexer's factor, core/memory/activation.py), so each segment is searched
    on its own, the highest first. In a segment every probe narrows both ends: where
    ``longest_at(m) ≥ m`` nothing above ``longest_at(m)`` is admitted, else everything up to it
    is. The peak barely moves with the length, so the top is tried first: a few probes where a
    bisection took ~15–20, and at most two more than a bisection after that."""
    seen: dict[int, int] = {}

    def at(n: int) -> int:
        if n not in seen:
            seen[n] = longest_at(n)
        return seen[n]

    best = 0
    edges = [0, *sorted(b for b in breaks if 0 < b < cap), cap]
    for a, b in reversed(list(zip(edges, edges[1:]))):
        if best >= b:
            break
        a += 1
        low = min(at(b), b)  # admitted: longest_at(low) ≥ longest_at(b) ≥ low
        if low < a:
            if at(a) < a:
                continue
            low = a
        # nothing above longest_at(low) is admitted, nor b unless low is b
        high = min(at(low), b if low == b else b - 1)
        probe = high
        while low < high:
            value = at(probe)
            if value >= probe:
                low, high = probe, min(high, value)
            else:
                low, high = max(low, value), probe - 1
            probe = (low + high + 1) // 2
        best = max(best, low)
    return best


def args_move_weights(facts: Facts) -> bool:
    """Options whose effect on the weights' bytes on the GPU is not a plain subtraction."""
    args = facts.args
    return (args.value("quantization") not in (None, "None")
            or bool(as_int(args.value("offload_group_size"))) or args.value("load_format") == "dummy")


def kv_bytes_per_token(config, indexer: str = "fp8", pp: int = 1, vllm_version: str | None = None) -> int | None:
    """KV bytes one more token costs on the busiest pipeline stage, as the release charges it
    (V4-Flash: 3,915 B/token from 0.29, 4,108.5 before: the layer-tuple padding)."""
    ratios = backbone_ratios(config or {})
    if ratios is None:
        return None
    stages = stage_plans(ratios, kv_family(vllm_version), pp, indexer)
    return int(round(max(s.bytes_per_token for s in stages))) if stages else None

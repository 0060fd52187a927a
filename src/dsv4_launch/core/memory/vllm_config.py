"""What vLLM settles per release from the arguments, before any memory is counted (pure).

The speculative method ``SpeculativeConfig`` settles on, whether the V2 model runner runs,
whether async scheduling is on and how many tokens are in flight, the batch defaults for the GPU,
the ``--max-model-len`` vLLM will try, and the KV planner family — each as the release's own code
decides it, cited ``file:line@release``. The release bounds here are the per-release vLLM facts
the memory model rests on (``tools/new_release.py`` lists those whose cited files changed).
``estimate.py`` counts the memory from these answers.
"""

from __future__ import annotations

from ..facts import Facts, as_bool, as_human_int, as_int, json_option, vllm_env_bool
from ..vllm.facts import fact
from .kv_plan import PACKED, TUPLES, TUPLES_SLAB

GiB = 2**30

# Per-release facts of vLLM the estimate depends on (each cited in docs/memory.md).
PACKED_PLANNER = fact("packed-kv-planner").range
# The tuple planner's groups laid out in one dense block slab and counted per group's blocks by "Maximum
# concurrency" (v1/core/kv_cache_utils.py:937,1283@0.27.0, :917@0.28.0; kv_plan.TUPLES_SLAB); 0.29 packs.
SLAB_POOL = fact("slab-pool").range
# The releases whose "Maximum concurrency" count kv_plan.StagePlan.concurrency_blocks reproduces to vLLM's
# float (tests/vllm_real/test_concurrency_oracle.py: 0.24.0–0.33.0, by each release's own code); a later
# release is counted as the newest one counts (fit says so: not verified there); before 0.24 not at all.
CONCURRENCY_COUNTED = fact("concurrency-counted").range


def concurrency_counted(vllm_version: str | None) -> bool:
    """Whether the release's own "Maximum concurrency" count is modelled (unknown: the newest's)."""
    return CONCURRENCY_COUNTED.contains(vllm_version) is not False


# The default --gpu-memory-utilization is 1.0 with the extensible KV cache, on by default on CUDA unless
# --kv-cache-memory-bytes, --num-gpu-blocks-override or elastic EP turn it off
EXTENSIBLE_KV_CACHE = fact("extensible-kv-cache").range
IN_FLIGHT_TOKENS = fact("in-flight-tokens").range  # VllmConfig.max_in_flight_tokens
# How VllmConfig.__post_init__ resolves async scheduling when --async-scheduling is not given
# (the `async_scheduling is None` branch: config/vllm.py:1059@0.26, :1185@0.28, :1576@0.31, :1685@0.33):
ASYNC_WITH_DRAFT_MODEL = fact("async-with-draft-model").range  # method draft_model keeps it on
ASYNC_OFF_WITH_PP_ON_V1 = fact("async-off-with-pp-on-v1").range  # PP > 1 on the V1 runner turns it off
ASYNC_SPEC_ON_V1_ONLY = fact("async-spec-on-v1-only").range  # the speculative conditions bind the V1 runner only
RAY_V1_EXECUTOR = fact("ray-v1-executor").range  # VLLM_USE_RAY_V2_EXECUTOR_BACKEND=0: RayDistributedExecutor, no async
# Speculative methods that keep async scheduling on (EagleModelTypes, NgramGPUTypes, dspark;
# config/speculative.py:63@0.26)
ASYNC_METHODS = frozenset({"eagle", "eagle3", "extract_hidden_states", "mtp", "dflash", "ngram_gpu", "dspark"})
# The V2 model runner's speculative methods (config/vllm.py _get_v2_model_runner_unsupported_features): until
# 0.29 the ones it takes, from 0.30 the ones it refuses (True: takes); the V1 runner runs the others.
V2_METHODS = tuple((r, *value) for r, value in fact("v2-runner-spec-methods").by_release)
V2_EAGLE3_PP = fact("v2-eagle3-pp").range  # EAGLE3 with PP > 1 is V1's
MXFP4_INDEXER_STATE = fact("mxfp4-indexer-state").range  # 68-byte MXFP4 indexer states
V2_RUNNER_FOR_DSV4 = fact("v2-runner-for-dsv4").range  # DeepseekV4ForCausalLM in the V2 runner's defaults
LARGE_GPU_BATCH = fact("large-gpu-batch").range  # 16384 batched tokens on ≥ 160 GiB GPUs
RETAINED_FOR_MULTI_MTP = fact("retained-for-multi-mtp").range  # SlidingWindowSpec.extra_retained_tokens
# DSparkDeepseekV4Model: n_mtp_layers or 3 (models/deepseek_v4/nvidia/dspark.py:106@0.33, :69@0.25)
DSPARK_DEFAULT_LAYERS = 3
GB10_BATCH = fact("gb10-batch").range  # GB10 (SM 12.1) gets the small-GPU default


DSV4_MAX_MODEL_LEN = 1_048_576  # max_position_embeddings: vLLM's default --max-model-len


def default_max_num_seqs(gpu_memory: int | None, gpu_name: str | None, capability,
                         vllm_version: str | None) -> int | None:
    """vLLM's default ``max_num_seqs`` for `vllm serve` (``get_batch_defaults``): 1024 on GPUs of
    ≥ 70 GiB that are not A100 (nor GB10 from 0.33), else 256 (engine/arg_utils.py:2698-2726@0.29)."""
    if gpu_memory is None:
        return None
    gb10 = capability == (12, 1) and GB10_BATCH.contains(vllm_version) is not False
    return 1024 if gpu_memory >= 70 * GiB and "a100" not in (gpu_name or "").lower() and not gb10 else 256


def default_max_num_batched_tokens(gpu_memory: int | None, gpu_name: str | None, capability,
                                   vllm_version: str | None) -> int | None:
    """vLLM's default for `vllm serve` (``get_batch_defaults``, OPENAI_API_SERVER)."""
    if gpu_memory is None:
        return None
    name = (gpu_name or "").lower()
    if LARGE_GPU_BATCH.contains(vllm_version) is not False and gpu_memory >= 160 * GiB:
        return 16384
    gb10 = capability == (12, 1) and GB10_BATCH.contains(vllm_version) is not False
    return 8192 if gpu_memory >= 70 * GiB and "a100" not in name and not gb10 else 2048


def kv_family(vllm_version: str | None) -> str:
    """The planner the release has (unknown: the newest's)."""
    if PACKED_PLANNER.contains(vllm_version) is not False:
        return PACKED
    return TUPLES_SLAB if SLAB_POOL.contains(vllm_version) else TUPLES


def in_flight_tokens(facts: Facts, mnbt: int, pp: int, world: int = 1) -> int:
    """``VllmConfig.max_in_flight_tokens``: before 0.26 the batched tokens alone; from 0.26
    ``max_concurrent_batches × max_num_batched_tokens`` (config/vllm.py:512@0.26, :588@0.33) —
    with async scheduling PP + 1 batches on the V2 runner, 2 (PP 1) or PP on V1; without it, PP.
    Whether async scheduling is on is ``async_scheduling``'s answer (``world``: TP × PP × DP)."""
    version = facts.vllm_version
    if IN_FLIGHT_TOKENS.contains(version) is False:
        return mnbt
    method = speculative_method(facts)
    v2 = v2_runner(facts, method, pp)
    if async_scheduling(facts, method, v2, pp, world) is False:
        return pp * mnbt
    return (pp + 1) * mnbt if v2 else (2 if pp <= 1 else pp) * mnbt


UNKNOWN = "?"  # a speculative method only the draft model's own config.json can tell


def speculative_method(facts: Facts) -> str | None:
    """The method ``SpeculativeConfig.__post_init__`` settles on (config/speculative.py:1236@0.33,
    :676@0.26): None without speculative decoding; ``UNKNOWN`` where it depends on the draft
    model's config.json (vLLM reads its architecture and model_type)."""
    spec = json_option(facts.args, "speculative_config")
    if not spec:
        return None
    method, model = spec.get("method"), spec.get("model")
    model = model if isinstance(model, str) else None
    if method is None:
        if model in ("ngram", "[ngram]"):
            return "ngram"
        if model is not None and _custom_proposer_path(model):
            return "custom_class"
        method = "draft_model"
    if not isinstance(method, str):
        return UNKNOWN
    if method == "[ngram]":
        return "ngram"
    if method.endswith("_mtp"):
        return "mtp"  # every MTPModelTypes name but "mtp" itself is deprecated for it
    if model is None or method in ("eagle", "eagle3", "dflash", "dspark", "ngram", "ngram_gpu", "suffix",
                                   "custom_class", "extract_hidden_states"):
        return method
    name = model.lower()  # the automatic detection, by the draft model's name first
    for word, detected in (("eagle-", "eagle"), ("eagle3", "eagle3"), ("dflash", "dflash"), ("dspark", "dspark")):
        if word in name:
            return detected
    return UNKNOWN if method == "draft_model" else method  # by its config: medusa, mlp_speculator, mtp …


def _custom_proposer_path(model: str) -> bool:
    """``SpeculativeConfig._is_custom_proposer_path`` (config/speculative.py:655@0.26)."""
    if model.startswith(("http://", "https://", "file://")) or "/" in model:
        return False
    parts = model.split(".")
    return len(parts) >= 2 and all(part.isidentifier() for part in parts)


def v2_runner(facts: Facts, method: str | None, pp: int) -> bool:
    """``VllmConfig.use_v2_model_runner`` for DeepSeek-V4: VLLM_USE_V2_MODEL_RUNNER when set; the
    V2 runner by default from 0.28 (DSpark from 0.26), unless the speculative method is one it
    does not run (``V2_METHODS``), or EAGLE3 with PP before 0.30. Its other refusals
    (dual batch overlap, elastic EP, logits processors, ...) are not modelled here."""
    version = facts.vllm_version
    env = vllm_env_bool(facts.rule_env.get("VLLM_USE_V2_MODEL_RUNNER"))
    if isinstance(env, bool):
        return env
    if method == "dspark":
        return True  # 0.26-0.28 ask for the V2 runner for DSpark first; 0.29+ take it
    if V2_RUNNER_FOR_DSV4.contains(version) is False:
        return False
    if method is None or method == UNKNOWN:
        return True
    for releases, takes, methods in V2_METHODS:
        # the release's row; an unknown release: the newest's
        if releases.contains(version) or (releases.contains(version) is None and releases.before is None):
            if (method in methods) != takes:
                return False
    spec = json_option(facts.args, "speculative_config") or {}
    if as_bool(spec.get("parallel_drafting")) and method not in ("dflash", "dspark"):
        return False
    return not (method == "eagle3" and pp > 1 and V2_EAGLE3_PP.contains(version))


def async_scheduling(facts: Facts, method: str | None, v2: bool, pp: int, world: int = 1) -> bool | None:
    """``scheduler_config.async_scheduling`` after ``VllmConfig.__post_init__``: the flag when
    given (on with an incompatible option, vLLM refuses the configuration instead); otherwise on
    unless the runner is pooling, the speculative method or ``disable_padded_drafter_batch``
    rules it out (from 0.33 only on the V1 runner), the executor cannot (Ray's V1 executor,
    ``VLLM_USE_RAY_V2_EXECUTOR_BACKEND=0`` before 0.33) or, from 0.31, PP > 1 on the V1 runner.
    None: unknown (a draft model whose method only its config tells, a custom executor); the
    in-flight tokens then count it on. ROCm's DeepEP DBO condition does not apply to NVIDIA GPUs."""
    given = facts.args.value("async_scheduling")
    if isinstance(given, bool):
        return given
    version = facts.vllm_version
    runner, convert = facts.args.value("runner"), facts.args.value("convert")
    if runner == "pooling" or (runner in (None, "auto") and convert not in (None, "auto", "none")):
        return False
    executor = _executor_async(facts, world)
    if executor is False:
        return False
    if method is not None and not (v2 and ASYNC_SPEC_ON_V1_ONLY.contains(version) is not False):
        if method == UNKNOWN:
            return None
        keeps = method in ASYNC_METHODS or (method == "draft_model" and ASYNC_WITH_DRAFT_MODEL.contains(version)
                                            is not False)
        if not keeps:
            return False
        spec = json_option(facts.args, "speculative_config") or {}
        if as_bool(spec.get("disable_padded_drafter_batch")):
            return False
    if pp > 1 and not v2 and ASYNC_OFF_WITH_PP_ON_V1.contains(version) is not False:
        return False
    return None if executor is None else True


def _executor_async(facts: Facts, world: int) -> bool | None:
    """``Executor.get_class(...).supports_async_scheduling()`` for the backend ParallelConfig
    picks: uni, mp, external_launcher and Ray's V2 executor do; Ray's V1 executor does not;
    a custom class: unknown."""
    backend = facts.args.value("distributed_executor_backend")
    if backend is None and world > 1 and facts.args.value("data_parallel_backend") == "ray" \
            and not ((as_int(facts.args.value("nnodes")) or 1) > 1):
        backend = "ray"  # config/parallel.py:907@0.26 (after --nnodes > 1, which picks mp)
    if backend in (None, "mp", "uni", "external_launcher"):
        return True
    if backend == "ray":
        v2 = vllm_env_bool(facts.rule_env.get("VLLM_USE_RAY_V2_EXECUTOR_BACKEND"))
        return not (v2 is False and RAY_V1_EXECUTOR.contains(facts.vllm_version) is not False)
    return None


def max_model_len_tried(facts: Facts) -> int | None:
    """What vLLM will try: the flag (None for ``auto``/-1: vLLM fits it to memory itself), else
    the model's ``max_position_embeddings``."""
    value = facts.args.value("max_model_len")
    if isinstance(value, str) and value.strip().lower() in ("auto", "-1"):
        return None
    if value == -1:
        return None
    n = as_human_int(value)
    if n and n > 0:
        return n
    return facts.model.number("max_position_embeddings") or DSV4_MAX_MODEL_LEN

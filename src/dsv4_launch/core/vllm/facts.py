"""What dsv4-launch believes about vLLM's code, release by release: one table, cited and checked.

A ``Fact`` is an id, its value per release range (``by_release``: most facts are one range whose
value is ``True``, "this holds in these releases"; a table fact has a value per range), the vLLM
lines it rests on (``cites``) and the oracle test that runs that code where one exists. Rows,
signatures, memory constants and completion name a fact (``vllm=fact("v41-kv").range``) instead
of writing a range; a release change is one edited fact.

A citation is written ``"vllm/config/vllm.py:3336@0.33.0 Model Runner V1 does not support"``: the
file, the line, the release it was read in, and its anchor, a fragment of that line as vLLM
writes it. tests/vllm_real/test_citations.py checks every citation whose release is the
installed vLLM's: the anchor is on the cited line or within ``WINDOW`` lines of it (a line number
alone passes by accident, a fragment found anywhere in the file too). Every open-ended fact cites
the newest release CI pins (tests/releases/test_vllm_facts.py), so each is checked on every change;
citations at other releases are checked where a venv of that release runs the test.
``tools/new_release.py`` lists the open-ended facts whose cited lines a new release changed.
"""

from __future__ import annotations

from ..records import Record
from ..versions import VersionRange

TYPE_CHECKING = False  # typing is not imported at run time (start-up)
if TYPE_CHECKING:
    from typing import Any

WINDOW = 2  # lines either side of a citation's line where its anchor may sit (a statement's lines)


class Cite(Record):
    path: str  # vllm/config/vllm.py
    line: int
    release: str  # 0.33.0
    anchor: str  # a fragment of the line, as written there

    @classmethod
    def parse(cls, text: str) -> Cite:
        """``"path:line@release anchor"`` → a Cite; ValueError for another shape."""
        where, _, anchor = text.partition(" ")
        place, _, release = where.rpartition("@")
        path, _, line = place.rpartition(":")
        if not (path and line.isdigit() and release and anchor.strip()):
            raise ValueError(f"not a citation 'path:line@release anchor': {text!r}")
        return cls(path, int(line), release, anchor.strip())

    def __str__(self) -> str:
        return f"{self.path}:{self.line}@{self.release} {self.anchor}"


class Fact(Record):
    id: str
    by_release: tuple[tuple[VersionRange, Any], ...]
    cites: tuple[Cite, ...] = ()
    oracle: str | None = None  # tests/vllm_real/<file>::<test> that runs the cited code

    @property
    def range(self) -> VersionRange:
        """The releases a one-range fact holds in; ValueError for a table fact."""
        if len(self.by_release) != 1:
            raise ValueError(f"fact {self.id!r} has {len(self.by_release)} ranges: use .at(version)")
        return self.by_release[0][0]

    def at(self, version: str | None) -> Any:
        """The value in ``version``'s range; None outside every range or for an unreadable version."""
        return next((value for r, value in self.by_release if r.contains(version) is True), None)

    @property
    def open_ended(self) -> bool:
        """True when a range has no end: the next vLLM release may change it."""
        return any(r.before is None for r, _ in self.by_release)


def _f(id: str, since: str | None = None, before: str | None = None, *cites: str, oracle: str | None = None) -> Fact:
    return Fact(id, ((VersionRange(since, before), True),), tuple(map(Cite.parse, cites)), oracle)


def _table(id: str, rows: tuple[tuple[VersionRange, Any], ...], *cites: str, oracle: str | None = None) -> Fact:
    return Fact(id, rows, tuple(map(Cite.parse, cites)), oracle)


FACTS: tuple[Fact, ...] = (
    # --- rules: the KV cache and attention (core/rules/kv.py, kv_paths.py) ----------------------
    _f("dsv4-kv-auto-crash", None, "0.30.0",
       "vllm/models/deepseek_v4/attention.py:79@0.24.0 assert kv_cache_dtype.startswith(\"fp8\"), (",
       "vllm/models/deepseek_v4/attention.py:105@0.29.0 assert kv_cache_dtype.startswith(\"fp8\"), ("),
    _f("dsv4-kv-check-asserts", None, "0.30.0",
       "vllm/models/deepseek_v4/attention.py:79@0.24.0 assert kv_cache_dtype.startswith(\"fp8\"), (",
       "vllm/models/deepseek_v4/attention.py:105@0.29.0 assert kv_cache_dtype.startswith(\"fp8\"), ("),
    _f("v41-kv", "0.30.0", None,
       "vllm/models/deepseek_v41/attention.py:225@0.34.0 DeepseekV4 packed KV layouts only support fp8 kv-cache"),
    _f("v41-packed-strict", "0.31.0", None,
       'vllm/models/deepseek_v41/attention.py:223@0.34.0 elif not kv_cache_dtype.endswith("_ds_mla"):'),
    _f("v41-plain-rows-checked", "0.31.0", None,
       'vllm/models/deepseek_v41/attention.py:233@0.34.0 if kv_cache_dtype.endswith("_ds_mla"):'),
    _f("nvfp4-mla-exact", None, "0.28.0",
       "vllm/config/vllm.py:2164@0.24.0 if self.cache_config.cache_dtype == \"nvfp4\" and self.model_config.use_mla:"),
    _f("nvfp4-mla-prefix", None, "0.30.0",  # then also not *_ds_mla (config/vllm.py:3184@0.30.0)
       "vllm/config/vllm.py:2825@0.29.0 self.cache_config.cache_dtype.startswith(\"nvfp4\")"),
    _f("kv-dtype-by-pydantic", "0.33.0", None,
       'vllm/config/cache.py:503@0.34.0 @field_validator("cache_dtype", mode="after")'),
    _f("v41-pcp-not-flashmla", "0.33.0", None,
       "vllm/models/deepseek_v41/nvidia/model.py:221@0.34.0 DeepSeek-V4.1 PCP requires FlashMLA sparse attention."),
    _f("block-size-v41", "0.30.0", None, "vllm/v1/worker/utils.py:548@0.34.0 No common block size for"),
    _f("indexer-kv-dtype-read", "0.28.0", None,
       'vllm/config/attention.py:101@0.34.0 indexer_kv_dtype: IndexerKVDType | str = "auto"'),
    _f("indexer-fp4-asserts", before="0.28.0"),
    _f("fp4-indexer-off-sm10", "0.24.0", "0.30.0"),
    _f("fp4-indexer-removed", "0.30.0", None, "vllm/config/attention.py:40@0.34.0 class AttentionConfig:"),
    _f("mxfp4-indexer-off-sm10", "0.28.0", None,
       "vllm/v1/attention/backends/mla/indexer.py:103@0.34.0 "
       "indexer_kv_dtype='mxfp4' requires Blackwell datacenter GPUs"),
    _f("indexer-dtype-unsupported", "0.28.0", None,
       "vllm/v1/attention/backends/mla/indexer.py:72@0.34.0 is not supported by the DeepSeek"),
    _f("indexer-dtype-ignored", "0.24.0", "0.28.0"),
    _f("moriio-supports-hma", "0.30.0", None,  # :192@0.29 without SupportsHMA
       "vllm/distributed/kv_transfer/kv_connector/v1/moriio/moriio_connector.py:278@0.34.0 "
       "class MoRIIOConnector(KVConnectorBase_V1, SupportsHMA):"),
    # the promotion of the sliding-window specs (the hybrid KV manager off) raises TypeError on
    # bounded_replay (hma-disabled, connector-turns-hma-off); 0.34 drops it (hma-off-full-attention warns)
    _f("hma-promotion-raises", "0.31.0", "0.34.0",
       "vllm/v1/core/kv_cache_planning.py:744@0.33.0 def _promote_local_kv_cache_specs(",
       "vllm/v1/attention/backends/mla/sparse_swa.py:89@0.33.0 bounded_replay: bool = False,",
       "vllm/config/vllm.py:2267@0.33.0 Turning off hybrid kv cache manager because",
       "vllm/v1/core/kv_cache_planning.py:845@0.34.0 drop=(\"extra_retained_tokens\", \"bounded_replay\"),"),
    _f("vision-no-compress-ratios", "0.30.0", None,
       "vllm/v1/core/kv_cache_planning.py:125@0.34.0 To serve at least one request with the model's max seq len"),
    # --- explain's signatures: the releases that print a message (core/explain/signatures.py) ---
    _f("dsv4-kv-check-raises", "0.30.0", None,
       "vllm/models/deepseek_v4/attention.py:114@0.34.0 DeepseekV4 fp8_ds_mla layout only supports fp8"),
    _f("kv-dtype-by-argparse", before="0.33.0"),
    _f("v41-kv-as-v4", "0.30.0", "0.31.0"),  # 0.30.0's V4.1 resolver prints V4's text
    _f("v41-model", "0.30.0", None,
       "vllm/models/deepseek_v41/nvidia/model.py:230@0.34.0 is not a DeepSeek V4.1 attention backend"),
    _f("mega-moe-draft-without-ep", before="0.30.0"),
    _f("fp4-indexer-off-sm10-asserts", "0.24.0", "0.28.0",
       "vllm/v1/attention/backends/mla/indexer.py:261@0.24.0 use_fp4_indexer_cache requires Blackwell datacenter GPUs"),
    _f("fp4-indexer-off-sm10-raises", "0.28.0", "0.30.0"),
    _f("max-model-len-old-wording", before="0.24.0"),
    _f("flashinfer-sm120-decode-api", before="0.28.0"),
    _f("dspark-kv-shape", before="0.25.0"),
    _f("dspark-no-d2t", before="0.28.0"),
    _f("mega-moe-norm-topk", "0.31.0", None,
       "vllm/models/deepseek_v4/nvidia/model.py:261@0.34.0 "
       "DeepSeek V4 MegaMoE requires normalized top-k probabilities."),
    _f("vllm-too-old-for-dsv4", before="0.24.0"),
    # FlashMLA's sparse prefill handed an empty chunk: reported against 0.26.0 only (vllm#49883, #52339)
    _f("flashmla-sparse-prefill-empty-chunk", "0.26.0", "0.27.0"),
    # --- completion: the parsers vLLM registers for DeepSeek (commands/completion.py) -----------
    _table("tool-parser-names", (
        (VersionRange("0.24.0", "0.30.0"), ("deepseek_v4", "deepseek_v3", "deepseek_v31", "deepseek_v32")),
        (VersionRange("0.30.0"), ("deepseek_v4", "deepseek_v41", "deepseek_v3", "deepseek_v31", "deepseek_v32"))),
        "vllm/tool_parsers/__init__.py:37@0.24.0 \"deepseek_v4\": (",
        "vllm/tool_parsers/__init__.py:41@0.29.0 \"deepseek_v4\": (",
        'vllm/tool_parsers/__init__.py:41@0.34.0 "deepseek_v4": (',
        'vllm/tool_parsers/__init__.py:45@0.34.0 "deepseek_v41": (',
        oracle="tests/vllm_real/test_completion_values_oracle.py"),
    _table("reasoning-parser-names", (
        (VersionRange("0.24.0", "0.30.0"), ("deepseek_v4", "deepseek_v3", "deepseek_r1")),
        (VersionRange("0.30.0"), ("deepseek_v4", "deepseek_v41", "deepseek_v3", "deepseek_r1"))),
        "vllm/reasoning/__init__.py:31@0.24.0 \"deepseek_v4\": (",
        "vllm/reasoning/__init__.py:31@0.29.0 \"deepseek_v4\": (",
        'vllm/reasoning/__init__.py:31@0.34.0 "deepseek_v4": (',
        'vllm/reasoning/__init__.py:35@0.34.0 "deepseek_v41": (',
        oracle="tests/vllm_real/test_completion_values_oracle.py"),
    # --- rules: memory, recipes, releases (core/rules/memory.py, recipe.py, releases.py, doctor_rows.py)
    _f("missing-shards-raise", "0.26.0", None,
       "vllm/model_executor/model_loader/weight_utils.py:609@0.33.0 missing_files = weight_files_in_index - ",
       "vllm/model_executor/model_loader/weight_utils.py:639@0.34.0 missing_files = weight_files_in_index -"),
    _f("shards-missing-silent", before="0.26.0"),
    _f("mega-moe-sm-checked-at-build", "0.33.0", None,
       "vllm/model_executor/layers/fused_moe/deep_gemm_mega_moe.py:291@0.34.0 "
       "check_deep_gemm_mega_moe_supported(device, hidden_size, intermediate_size)"),
    _f("v3-reasoning-is-v4", None, "0.25.0", "vllm/reasoning/__init__.py:32@0.24.0 \"deepseek_v3_reasoning_parser\","),
    _f("v4-parsers-on-v41", "0.30.0", None, 'vllm/tool_parsers/__init__.py:45@0.34.0 "deepseek_v41": ('),
    _f("deep-gemm-read-at-warmup", before="0.29.0"),  # kernel_warmup.py:60@0.24 … :152@0.28
    # Model Runner V1 is removed in 0.34: VLLM_USE_V2_MODEL_RUNNER other than 1 is refused
    _f("v1-runner-exists", before="0.34.0"),
    _f("v1-runner-removed", "0.34.0", None,
       "vllm/platforms/interface.py:1485@0.34.0 Model Runner V1 has been removed. Unset this variable."),
    _f("pp-partition-negative", "0.34.0", None,
       "vllm/distributed/utils.py:238@0.34.0 Negative layer count in {partition_list_str=}"),
    _f("wo-a-divides", "0.34.0", None,
       "vllm/models/deepseek_v4/common/grouped_wo_a.py:26@0.34.0 self.n_local_groups = divide(n_groups, self.tp_size)"),
    _f("pp-partition-v41", "0.30.0", None,
       "vllm/models/deepseek_v41/nvidia/model.py:842@0.34.0 "
       "self.start_layer, self.end_layer, self.layers = make_layers("),
    _f("sm12-0.26-garbage", "0.26.0", "0.27.0"),
    _f("sm12-0.27", "0.27.0", "0.28.0"),
    _f("sm12-before-0.24", before="0.24.0"),
    _f("sm12-deepgemm-warmup", "0.24.0", "0.24.1"),
    _f("sm10-0.28-v2-runner", "0.28.0", "0.28.1"),
    _f("h20-0.27.1", "0.27.1", "0.27.2"),
    _f("vision-before-0.30", before="0.30.0"),
    _f("compressed-tensors-scale-names", before="0.27.0"),
    _f("flashinfer-sm120-shape", "0.28.0", None, "vllm/models/deepseek_v4/nvidia/flashinfer_sparse.py:90@0.34.0 "
       "def required_sm120_sparse_topk(vllm_config: VllmConfig, window_size: int) -> int:"),
    # --- rules: speculative decoding (core/rules/speculative.py) ---------------------------------
    # the V2 model runner's fallbacks (_get_v2_model_runner_unsupported_features, config/vllm.py)
    # 0.34: one (V2) runner, DBO's limits are its own (_get_dbo_unsupported_features): no fallback
    _f("v2-unsupported-dbo", "0.29.0", "0.34.0", "vllm/config/vllm.py:3233@0.33.0 return [\"dual batch overlap\"]"),
    _f("v2-unsupported-elastic-ep", "0.29.0", "0.32.0"),
    _f("v2-unsupported-logits-processors", "0.29.0", "0.31.0"),
    _f("v2-unsupported-kv-sharing-fast-prefill", "0.29.0", "0.30.0"),  # config/vllm.py:2608-2610@0.29
    _f("dspark-before-0.25", before="0.25.0"),
    _f("dspark-without-module", "0.25.0", None,
       "vllm/models/deepseek_v4/nvidia/dspark.py:100@0.34.0 "
       "self.target_layer_ids = tuple(config.dspark_target_layer_ids)"),
    _f("dspark-pp", "0.25.0", "0.30.0", "vllm/v1/worker/gpu/spec_decode/dspark/utils.py:80@0.29.0 "
       "raise NotImplementedError(\"DSpark does not support pipeline parallelism.\")"),
    _f("dspark-k-below-block", "0.26.0", "0.28.0"),
    _f("dspark-v1-runner", "0.29.0", "0.34.0",
       "vllm/config/vllm.py:3113@0.33.0 unsupported.append(\"dspark speculative decoding\")"),
    _f("dspark-v2-unsupported", "0.29.0", "0.34.0",
       "vllm/config/vllm.py:3053@0.33.0 def _get_v2_model_runner_unsupported_features(self) -> list[str]:"),
    _f("draft-kv-not-fp8", "0.26.0", None,
       "vllm/models/deepseek_v4/attention.py:95@0.34.0 def _resolve_dsv4_kv_cache_dtype("),
    _f("mtp-on-dspark-checkpoint", "0.25.0", None,
       "vllm/models/deepseek_v4/nvidia/mtp.py:215@0.34.0 self.num_mtp_layers = config.num_nextn_predict_layers"),
    _f("dspark-kv-offload", "0.25.0", None, "vllm/v1/kv_offload/cpu/manager.py:242@0.34.0 not found in cache"),
    _f("dspark-kv-offload-reported", "0.28.0", "0.28.1"),  # the release of the report
    # --- memory: the estimate's per-release terms (core/memory/*.py) ------------------------------
    _f("packed-kv-planner", "0.29.0", None,
       "vllm/v1/core/kv_cache_planning.py:958@0.34.0 def _get_packed_kv_cache_groups("),
    _f("slab-pool", "0.27.0", "0.29.0"),  # the tuple planner's slab; 0.29 packs
    _f("concurrency-counted", "0.24.0", None,
       "vllm/v1/core/kv_cache_utils.py:1170@0.34.0 Maximum concurrency for %s tokens per request",
       oracle="tests/vllm_real/test_concurrency_oracle.py"),
    # 0.34's extensible KV cache: the default --gpu-memory-utilization is 1.0 where it is on
    _f("extensible-kv-cache", "0.34.0", None, "vllm/config/cache.py:500@0.34.0 if self.enable_extensible_kv_cache:"),
    _f("in-flight-tokens", "0.26.0", None, "vllm/config/vllm.py:569@0.34.0 def max_in_flight_tokens(self) -> int:"),
    # the V1 runner's async conditions end with the V1 runner (v1-runner-exists); from 0.34 the
    # default is on but for pooling, an executor without async, ROCm's DeepEP DBO
    _f("async-with-draft-model", "0.28.0", "0.34.0",
       "vllm/config/vllm.py:1658@0.33.0 and spec_config.method not in (\"draft_model\", \"dspark\", \"dflash\")"),
    _f("async-off-with-pp-on-v1", "0.31.0", "0.34.0",
       "vllm/config/vllm.py:1666@0.33.0 v1_async_sched_incompat = \"pipeline parallelism\""),
    _f("async-spec-on-v1-only", "0.33.0", None, "vllm/config/vllm.py:1653@0.33.0 if not self.use_v2_model_runner:",
       "vllm/config/vllm.py:1610@0.34.0 elif self.scheduler_config.async_scheduling is None:"),
    _f("ray-v1-executor", before="0.33.0"),  # RayDistributedExecutor, no async (v1/executor/abstract.py:78@0.32)
    # the V2 model runner's speculative methods: (True: the ones it takes | False: the ones it refuses, methods)
    _table("v2-runner-spec-methods", (
        (VersionRange(before="0.29.0"), (True, frozenset({"eagle", "eagle3", "mtp", "dflash", "dspark"}))),
        (VersionRange("0.29.0", "0.30.0"), (True, frozenset({"eagle", "eagle3", "mtp", "dflash", "dspark",
                                                              "extract_hidden_states"}))),
        (VersionRange("0.30.0", "0.31.0"), (False, frozenset({"ngram", "ngram_gpu", "draft_model", "suffix", "medusa",
                                                               "mlp_speculator", "custom_class"}))),
        (VersionRange("0.31.0", "0.32.0"), (False, frozenset({"ngram", "ngram_gpu", "suffix", "medusa",
                                                               "mlp_speculator", "custom_class"}))),
        (VersionRange("0.32.0", "0.33.0"), (False, frozenset({"suffix", "medusa", "mlp_speculator", "custom_class"}))),
        (VersionRange("0.33.0", "0.34.0"), (False, frozenset({"suffix", "custom_class"}))),
        (VersionRange("0.34.0"), (False, frozenset()))),  # no V1 runner left
        "vllm/config/vllm.py:3067@0.33.0 if speculative_config.method in (\"suffix\", \"custom_class\"):",
        "vllm/config/vllm.py:3123@0.34.0 def _get_model_runner_unsupported_features(self) -> list[str]:"),
    _f("v2-eagle3-pp", before="0.30.0"),  # EAGLE3 with PP > 1 is V1's (config/vllm.py:2586@0.29)
    _f("mxfp4-indexer-state", "0.27.0", None,
       "vllm/models/deepseek_v4/attention.py:979@0.34.0 head_dim bytes = 64 packed values + 4 UE8M0 scales = 68."),
    _f("v2-runner-for-dsv4", "0.28.0", None, 'vllm/config/vllm.py:105@0.34.0 "DeepseekV4ForCausalLM",'),
    _f("large-gpu-batch", "0.28.0", None, "vllm/engine/arg_utils.py:3010@0.34.0 if device_memory >= 160 * GiB_bytes:"),
    _f("retained-for-multi-mtp", "0.28.0", None,
       "vllm/v1/kv_cache_interface.py:922@0.34.0 extra_retained_tokens: int = 0"),
    _f("gb10-batch", "0.33.0", None,
       "vllm/engine/arg_utils.py:3000@0.34.0 is_gb10 = current_platform.is_device_capability((12, 1))"),
    _f("combined-indices", "0.27.0", None,
       "vllm/models/deepseek_v4/nvidia/flashmla.py:118@0.34.0 combined_topk = round_up("),
    _f("sequence-parallel", "0.27.0", None,
       "vllm/models/deepseek_v4/nvidia/model.py:985@0.34.0 hidden_states = sp_shard(hidden_states)"),
    # from 0.34 V4.1's _use_sequence_parallel has no pipeline_parallel_size == 1 (V4's keeps it)
    _f("v41-sequence-parallel-any-pp", "0.34.0", None,
       "vllm/models/deepseek_v41/nvidia/model.py:277@0.34.0 parallel_config.enable_expert_parallel",
       "vllm/models/deepseek_v4/nvidia/model.py:580@0.34.0 parallel_config.pipeline_parallel_size == 1"),
    _f("indexer-factor", "0.32.0", None, "vllm/v1/attention/backends/mla/indexer.py:892@0.34.0 "
       "factor = vllm_config.attention_config.sparse_mla_prefill_workspace_factor"),
    # from 0.34 the indexer's profile logits are the larger of the prefill budget and the decode rows'
    _f("indexer-decode-logits", "0.34.0", None,
       "vllm/model_executor/layers/sparse_attn_indexer.py:659@0.34.0 * round_up(max_model_len, row_align)",
       "vllm/model_executor/layers/sparse_attn_indexer.py:642@0.34.0 "
       "split_kv = 384 if current_platform.is_device_capability_family(100) else 256"),
    # FlashInfer's EP megakernel MoE backends, per release
    _table("flashinfer-mega-moe-backends", (
        (VersionRange("0.29.0", "0.32.0"), ("flashinfer_moe_ep_mega_deep_gemm", "flashinfer_moe_ep_mega_cutedsl")),
        (VersionRange("0.32.0"), ("flashinfer_moe_ep_mega_deep_gemm", "flashinfer_moe_ep_cutedsl"))),
        'vllm/config/kernel.py:149@0.34.0 FLASHINFER_MOE_EP_CUTEDSL = "flashinfer_moe_ep_cutedsl"',
        'vllm/config/kernel.py:150@0.34.0 FLASHINFER_MOE_EP_DEEP_GEMM = "flashinfer_moe_ep_mega_deep_gemm"'),
    _f("v2-profiles-graphs", "0.29.0", None,
       "vllm/v1/worker/gpu/model_runner.py:1128@0.34.0 return _profile_cudagraph_memory(self)"),
    _f("sequence-parallel-shared", "0.27.0", None,
       "vllm/models/deepseek_v4/nvidia/model.py:334@0.34.0 is_sequence_parallel=use_sequence_parallel,"),
    _f("hidden-buffer-always", before="0.27.0"),
    # from 0.34 DSpark drafts from the target's aux hidden states: no _mtp_hidden_buffer for it
    _f("dspark-no-hidden-buffer", "0.34.0", None,
       "vllm/models/deepseek_v4/common/spec_decode.py:15@0.34.0 and not spec_config.use_dspark()",
       "vllm/models/deepseek_v4/nvidia/model.py:915@0.34.0 needs_mtp_hidden_buffer(spec_config)"),
    _f("dspark-topk-buffer", "0.27.0", None,
       "vllm/models/deepseek_v4/nvidia/dspark.py:125@0.34.0 self.topk_indices_buffer = torch.empty("),
    # the MXFP4 MoE kernel's rounding of each rank's expert slice (core/memory/weights.py expert_padding)
    _f("mxfp4-trtllm-rows-256", None, "0.27.0"),
    # the MXFP4 kernel DeepSeek-V4's experts get on SM 9.0 with moe_backend auto: TRTLLM (family 100) and
    # DeepGEMM FP4 (100/120) refuse the device, so Marlin; from 0.32 Humming ahead of Marlin on SM 9.0
    # (humming-kernels a requirement of the wheel)
    _table("dsv4-mxfp4-moe-sm90", ((VersionRange("0.24.0", "0.32.0"), "marlin"), (VersionRange("0.32.0"), "humming")),
           "vllm/model_executor/layers/quantization/mxfp4.py:481@0.24.0 select_deepseek_v4_mxfp4_moe_backend(moe)",
           "vllm/model_executor/layers/fused_moe/oracle/mxfp4.py:342@0.24.0 Mxfp4MoeBackend.MARLIN,",
           "vllm/model_executor/layers/fused_moe/oracle/mxfp4.py:363@0.29.0 Mxfp4MoeBackend.MARLIN,",
           "vllm/model_executor/layers/fused_moe/oracle/mxfp4.py:390@0.31.0 return _AVAILABLE_BACKENDS",
           "vllm/model_executor/layers/fused_moe/oracle/mxfp4.py:449@0.32.0 "
           "return prioritize_humming(_AVAILABLE_BACKENDS)",
           "vllm/model_executor/layers/fused_moe/oracle/mxfp4.py:485@0.34.0 "
           "return prioritize_humming(_AVAILABLE_BACKENDS)",
           "vllm/model_executor/layers/quantization/utils/humming/priority.py:11@0.34.0 "
           "_HUMMING_PREFERRED_CAPABILITIES = frozenset({90})",
           "vllm/model_executor/layers/fused_moe/experts/trtllm_mxfp4_moe.py:125@0.34.0 "
           "is_device_capability_family(100) and has_flashinfer()",
           "vllm/model_executor/layers/fused_moe/experts/deep_gemm_moe.py:479@0.34.0 "
           "or current_platform.is_device_capability_family(120)",
           oracle="tests/vllm_real/test_activation_oracle.py"),
    # the default all2all: every DP rank's tokens all-gathered into each rank's modular MoE kernel
    _f("all2all-default-allgather", "0.24.0", None,
       'vllm/config/parallel.py:229@0.34.0 all2all_backend: All2AllBackend = "allgather_reducescatter"'),
    # Humming under EP: grouped gemm, every buffer M × topk rows (fused_humming_moe.get_buffer_metas)
    _f("humming-moe-workspaces", "0.32.0", None,
       "vllm/model_executor/layers/fused_moe/experts/fused_humming_moe.py:490@0.32.0 input_shape_m = M * topk",
       'vllm/model_executor/layers/fused_moe/experts/fused_humming_moe.py:120@0.34.0 gemm_type = "grouped_contiguous"',
       "vllm/model_executor/layers/fused_moe/experts/fused_humming_moe.py:492@0.34.0 input_shape_m = M * topk",
       "vllm/model_executor/layers/fused_moe/experts/fused_humming_moe.py:518@0.34.0 "
       '"shape": (real_shape_m, gate_up_dim),',
       oracle="tests/vllm_real/test_activation_oracle.py"),
    _f("b12x-moe-exact-dimensions", "0.29.0", None,
       "vllm/model_executor/layers/fused_moe/oracle/mxfp4.py:833@0.34.0 b12x plans for the exact model dimensions"),
)
_BY_ID = {f.id: f for f in FACTS}


def fact(id: str) -> Fact:
    """The fact ``id``; KeyError (at import, for a module naming one) when there is none."""
    return _BY_ID[id]

"""What vLLM prints when a rule row's condition fails, per release, and how a log is read for it.

A ``Signature`` is a row too: the rule id it belongs to (a ``Rule`` of a ``core/rules/`` topic
module or ``doctor_rows.py``, or ``kv-auto``, the KV rule of ``kv.py``), the
exception vLLM raises, a pattern for its message, the releases that print it and the vLLM line
that raises it, release by release (``file:line@version``; the ranges are the releases whose
source has that line).

The log is read by ``scanner.py``; credentials in the lines it keeps are masked by
``masking.py``. Pure: no I/O.
"""

from __future__ import annotations

from collections.abc import Mapping

from ..records import Record
from ..versions import ANY_VERSION, VersionRange
from ..vllm.facts import fact

KV_AUTO = "kv-auto"  # the KV rule (core/rules/kv_paths.py: KvPath.rule), not a Rule row


class Signature(Record):
    rule: str  # the rule id this failure belongs to
    exception: str  # what vLLM raises ("AssertionError", "ValueError", "pydantic ValidationError", …)
    pattern: str  # regular expression searched in one log line (prefixes stripped)
    source: str  # the raising line per release: "path:line@version, :line@version–version, …"
    vllm: VersionRange = ANY_VERSION  # the releases that print it
    # A regular expression that must also appear on this line or on one of the ``context_lines``
    # lines before it (a traceback's frames, the start of a multi-line pydantic message).
    context: str | None = None
    context_lines: int = 0
    # Words for the row's fix placeholders where no plan can fill them ({sizes}, {fix}, …). The
    # pattern's named groups fill ``{name}`` in these words (and in ``text``) with the log's values;
    # of alternatives (a tuple), the first whose every ``{name}`` the log gives.
    fill: Mapping[str, str | tuple[str, ...]] | None = None
    # A failure with no rule row (nothing at launch decides it: a kernel's, a library's, an old
    # release's): the signature's own words — title, effect, fix, reference, evidence.
    text: Mapping[str, str] | None = None
    # A regular expression that must NOT appear on this line or the ``context_lines`` before it
    # (a more specific signature's context owns those lines).
    not_context: str | None = None
    # vLLM's logged arguments (its "non-default args" line: dest → value, a dotted dest reads into
    # a dict, ``...`` is "set to anything") the signature needs to be named: without that line, or
    # with other values, it is not. ``not_args``: named only when the log does NOT show these (the
    # row's fix is already applied, so something else failed).
    args: Mapping[str, object] | None = None
    not_args: Mapping[str, object] | None = None
    # The same text has another cause on other releases: never named for a log whose release is
    # outside ``vllm`` (a log naming no release still is).
    release_only: bool = False
    # The GPU families (compute capability majors) the failure means this on: not named for a log
    # whose GPU (read from it) is of another family (a log naming none still is).
    gpu_majors: tuple[int, ...] | None = None


_ATT = "vllm/models/deepseek_v4/attention.py"
_NV = "vllm/models/deepseek_v4/nvidia/model.py"
_IDX = "vllm/v1/attention/backends/mla/indexer.py"
_KVU = "vllm/v1/core/kv_cache_utils.py"
_FI = "vllm/models/deepseek_v4/nvidia/flashinfer_sparse.py"

_DEEPGEMM_TEXT = {
    "title": "DeepGEMM has no kernel for this GPU",
    "effect": "DeepGEMM (the DeepSeek kernels vLLM uses for FP8 GEMMs, the mHC pre-norm and the indexer) is built for "
              "SM 9.0 and SM 10.x; on other GPUs (SM 12.x: RTX PRO 6000, RTX 5090, GB10) its kernels assert or fail "
              "to load",
    "fix": "VLLM_USE_DEEP_GEMM=0 (and VLLM_USE_DEEP_GEMM_E8M0=0): vLLM then takes its Triton/CUTLASS paths "
           "(vllm/utils/deep_gemm.py is_deep_gemm_supported reads it: :110@0.29.0, :118@0.33.0); on SM 12.x use vLLM "
           "0.24.0 or later, which has an SM 12.x DeepSeek-V4 path",
    "reference": "DeepGEMM#317, DeepGEMM#305, timothystewart6/vllm-gb10#27, vllm#40778",
    "evidence": "reported"}
_FLASHINFER_SM120_TEXT = {
    "title": "FlashInfer has no SM 12.x sparse-MLA kernel for this shape",
    "effect": "FlashInfer's SM120/SM121 sparse-MLA kernels exist for a fixed set of (heads per GPU, top-k); the DSpark "
              "draft asks top-k 192 or 256, other tensor-parallel sizes other head counts, DeepSeek-V4.1 top-k 1152, "
              "and such a call has no kernel",
    "fix": "a FlashInfer with the missing instance (top-k 256: flashinfer#3817 and #3834; 192 and 256: "
           "flashinfer#4380); which vLLM release pins one is not verified here; until then run without the DSpark "
           "--speculative-config, "
           "or with another --tensor-parallel-size",
    "reference": "flashinfer#3828, flashinfer#4336, flashinfer#4380, vllm#50720, vllm#56837",
    "evidence": "reported"}
_MAX_LEN_FIX = ("--max-model-len at most the estimated maximum the message names, --max-model-len auto, or more "
                "memory for the KV cache (--gpu-memory-utilization, more GPUs)")
_TOO_OLD_TEXT = {
    "title": "a vLLM without DeepSeek-V4",
    "effect": "this vLLM (or the transformers it reads the config with) does not know deepseek_v4: no architecture, "
              "config or parser for it",
    "fix": "vLLM 0.24.0 or later (it registers DeepSeek-V4's architectures, config and deepseek_v4 parsers; earlier "
           "releases are not checked here, and 0.19.1 has none: vllm#40954)",
    "reference": "vllm/transformers_utils/config.py@0.24.0, vllm#40954",
    "evidence": "cited"}

SIGNATURES: tuple[Signature, ...] = (
    # --- the KV cache ------------------------------------------------------------------------
    *(Signature(
        rule=rule, exception="AssertionError", pattern=rf"DeepseekV4 fp8_ds_mla layout only supports fp8 kv-cache, "
        rf"got {got}", source=f"{_ATT}:79@0.24.0, :83@0.25.0–0.26.0, :105@0.27.0–0.27.1, :106@0.28.0, :105@0.29.0",
        vllm=f.range) for rule, got, f in (
        (KV_AUTO, r"auto\b", fact("dsv4-kv-auto-crash")),
        ("kv-not-fp8", r"(?!auto\b)\w+", fact("dsv4-kv-check-asserts")))),
    Signature(
        rule="kv-not-fp8", exception="ValueError",
        pattern=r"DeepseekV4 fp8_ds_mla layout only supports fp8 kv-cache, got (?!auto\b)\w+\. Please set",
        source=f"{_ATT}:112@0.30.0, :111@0.31.0–0.32.0, :112@0.33.0", vllm=fact("dsv4-kv-check-raises").range),
    Signature(
        rule="kv-invalid", exception="argparse error (exit 2)", pattern=r"argument --kv-cache-dtype: invalid choice: ",
        source="vllm/config/cache.py CacheDType (argparse choices)@0.24.0–0.32.0",
        vllm=fact("kv-dtype-by-argparse").range),
    Signature(
        rule="kv-invalid", exception="pydantic ValidationError",
        pattern=r"Invalid kv_cache_dtype: '[^']*'\. Valid values are",
        source="vllm/config/cache.py:473@0.33.0", vllm=fact("kv-dtype-by-pydantic").range),
    Signature(
        rule="nvfp4-on-mla", exception="pydantic ValidationError (ValueError)",
        pattern=r"nvfp4 KV cache is not supported with MLA",
        source="vllm/config/vllm.py:2165@0.24.0, :2206@0.25.0–0.25.1, :2285@0.26.0, :2316@0.27.0–0.27.1, "
        ":2536@0.28.0, :2828@0.29.0, :3188@0.30.0, :3424@0.31.0, :3296@0.32.0, :3432@0.33.0"),
    # V4.1's resolver: in 0.30 the same text as V4's (told apart by its traceback frames, or the
    # plan on the logged arguments), from 0.31 its own.
    Signature(
        rule="v41-kv", exception="ValueError",
        pattern=r"DeepseekV4 fp8_ds_mla layout only supports fp8 kv-cache, got (?!auto\b)\w+\. Please set",
        context=r"deepseek_v41", context_lines=40,
        source="vllm/models/deepseek_v41/attention.py:141@0.30.0", vllm=fact("v41-kv-as-v4").range),
    Signature(
        rule="v41-kv", exception="ValueError",
        pattern=r"DeepseekV4 packed KV layouts only support fp8 kv-cache, got \w+",
        source="vllm/models/deepseek_v41/attention.py:151@0.31.0, :154@0.32.0, :163@0.33.0",
        vllm=fact("v41-packed-strict").range),
    # --- attention backends --------------------------------------------------------------------
    Signature(
        rule="backend-not-dsv4", exception="ValueError", pattern=r"\S+ is not a DeepSeek V4 attention backend",
        fill={"use": "FLASHINFER_MLA_SPARSE_DSV4 (what the message names)", "name": "DeepSeek-V4"},
        source=f"{_NV}:752@0.24.0, :773@0.25.0–0.25.1, :774@0.26.0, :785@0.27.0–0.27.1, :784@0.28.0, "
        ":1035@0.29.0, :1100@0.30.0, :1160@0.31.0, :1027@0.32.0, :551@0.33.0"),
    Signature(
        rule="backend-not-dsv4", exception="ValueError", pattern=r"\S+ is not a DeepSeek V4\.1 attention backend",
        source="vllm/models/deepseek_v41/nvidia/model.py:131@0.30.0, :205@0.31.0, :212@0.32.0, :227@0.33.0",
        vllm=fact("v41-model").range,
        fill={"use": "FLASHINFER_MLA_SPARSE_DSV41 (what the message names)", "name": "DeepSeek-V4.1"}),
    Signature(
        rule="v41-pcp-not-flashmla", exception="NotImplementedError",
        pattern=r"DeepSeek-V4\.1 PCP requires FlashMLA sparse attention",
        source="vllm/models/deepseek_v41/nvidia/model.py:218@0.33.0", vllm=fact("v41-pcp-not-flashmla").range,
        fill={"pcp": "> 1", "backend": "(not FlashMLA sparse)"}),
    Signature(
        rule="v41-ds-mla-on-plain-rows", exception="ValueError",
        pattern=r"\w+ is a packed FlashMLA DeepSeek V4\.1 KV cache format; the selected backend stores plain KV rows",
        source="vllm/models/deepseek_v41/attention.py:161@0.31.0, :164@0.32.0, :173@0.33.0",
        vllm=fact("v41-plain-rows-checked").range),
    # --- MegaMoE and the indexer cache ---------------------------------------------------------
    Signature(
        rule="mega-moe-needs-ep", exception="NotImplementedError",
        pattern=r"DeepSeek V4 MegaMoE currently requires expert parallel",
        source=f"{_NV}:506@0.24.0, :527@0.25.0–0.25.1, :528@0.26.0, :537@0.27.0–0.27.1, :545@0.28.0, "
        ":765@0.29.0, :798@0.30.0, :814@0.31.0, :688@0.32.0, :232@0.33.0",
        not_args={"enable_expert_parallel": True},  # the row's fix is already there: see the next one
    ),
    # The same refusal with --enable-expert-parallel set, raised for the draft model (source, text;
    # vllm#55914: DeepSeek-V4-Pro-0813, TP8 + EP, MegaMoE, DSpark).
    Signature(
        rule="mega-moe-draft-without-ep", exception="NotImplementedError",
        pattern=r"DeepSeek V4 MegaMoE currently requires expert parallel",
        source=f"{_NV}:506@0.24.0, :527@0.25.0–0.25.1, :528@0.26.0, :537@0.27.0–0.27.1, :545@0.28.0, "
        ":765@0.29.0 (raised for the draft model: vllm/config/speculative.py create_draft_parallel_config "
        "copies enable_expert_parallel from :1757@0.30.0); vllm#55914", vllm=fact("mega-moe-draft-without-ep").range,
        args={"enable_expert_parallel": True, "speculative_config": ...},
        text={"title": "MegaMoE with --enable-expert-parallel and a speculative draft model before vLLM 0.30.0",
              "effect": "--enable-expert-parallel is set (the log's arguments), but before 0.30.0 vLLM builds the "
                        "draft model (DSpark, MTP) with a parallel config that drops it, and the draft's MegaMoE "
                        "layer refuses",
              "fix": "vLLM 0.30.0 or later (the draft keeps expert parallelism: vllm#55914); on this release drop "
                     "--moe-backend deep_gemm_mega_moe or the --speculative-config",
              "reference": "vllm#55914; vllm/config/speculative.py create_draft_parallel_config@0.30.0",
              "evidence": "cited"}),
    Signature(
        rule="mega-moe-fp4", exception="NotImplementedError", pattern=r"DeepSeek V4 MegaMoE only supports fp4 experts",
        source=f"{_NV}:526@0.24.0, :547@0.25.0–0.25.1, :548@0.26.0, :557@0.27.0–0.27.1, :565@0.28.0, "
        ":785@0.29.0, :824@0.30.0, :844@0.31.0, :718@0.32.0, :262@0.33.0"),
    Signature(
        rule="mega-moe-not-sm100", exception="NotImplementedError", pattern=r"DeepGEMM MegaMoE requires SM100 GPUs",
        source=f"{_NV}:301@0.24.0, :309@0.25.0–0.25.1, :310@0.26.0, :317@0.27.0–0.27.1, :318@0.28.0, "
        ":335@0.29.0, :338@0.30.0, :369@0.31.0, vllm/model_executor/layers/fused_moe/deep_gemm_mega_moe.py"
        ":460@0.32.0, :201@0.33.0"),
    Signature(
        rule="fp4-indexer-off-sm10", exception="AssertionError",
        pattern=r"use_fp4_indexer_cache requires Blackwell datacenter GPUs",
        source=f"{_IDX}:257@0.24.0, :278@0.25.0–0.25.1, :286@0.26.0, :498@0.27.0–0.27.1",
        vllm=fact("fp4-indexer-off-sm10-asserts").range,
        fill={"fix": "drop --attention_config.use_fp4_indexer_cache (an SM 10.x-only option)"}),
    # 0.28–0.29: use_fp4_indexer_cache=True is an alias of indexer_kv_dtype mxfp4, and both print
    # the same ValueError; the arguments in the log (or the plan on them) tell the two apart.
    Signature(
        rule="fp4-indexer-off-sm10", exception="ValueError",
        pattern=r"indexer_kv_dtype='mxfp4' requires Blackwell datacenter GPUs",
        source=f"{_IDX}:58@0.28.0–0.29.0 (use_fp4_indexer_cache=True sets indexer_kv_dtype='mxfp4': "
        "vllm/config/attention.py:125@0.28.0, :121@0.29.0)", vllm=fact("fp4-indexer-off-sm10-raises").range,
        fill={"fix": "drop --attention_config.use_fp4_indexer_cache (an SM 10.x-only option)"}),
    Signature(
        rule="mxfp4-indexer-off-sm10", exception="ValueError",
        pattern=r"indexer_kv_dtype='mxfp4' requires Blackwell datacenter GPUs",
        source=f"{_IDX}:58@0.28.0–0.29.0, :68@0.30.0–0.31.0, :91@0.32.0, :95@0.33.0",
        vllm=fact("mxfp4-indexer-off-sm10").range),
    Signature(
        rule="fp4-indexer-removed", exception="pydantic ValidationError (extra forbidden)",
        pattern=r"Unexpected keyword argument|Extra inputs are not permitted"
        r"|unexpected_keyword_argument|extra_forbidden", context=r"\buse_fp4_indexer_cache\b", context_lines=3,
        source="vllm/config/attention.py AttentionConfig@0.30.0–0.33.0 (no use_fp4_indexer_cache field; "
        "@config: extra='forbid', vllm/config/utils.py)", vllm=fact("fp4-indexer-removed").range,
        fill={"fix": "drop use_fp4_indexer_cache from --attention-config (on SM 10.x with vLLM ≥ 0.28: "
              "--attention-config.indexer_kv_dtype mxfp4 turns the FP4 indexer cache on)"}),
    Signature(
        rule="indexer-dtype-unsupported", exception="ValueError",
        pattern=r"indexer_kv_dtype='\w+' is not supported by the DeepSeek sparse indexer",
        source=f"{_IDX}:52@0.28.0–0.29.0, :62@0.30.0–0.31.0, :63@0.32.0, :64@0.33.0",
        vllm=fact("indexer-dtype-unsupported").range),
    # --- tensor parallelism, GPUs, block size --------------------------------------------------
    Signature(
        rule="tp-heads", exception="pydantic ValidationError (ValueError)",
        pattern=r"Total number of attention heads \(\d+\) must be divisible by tensor parallel size",
        source="vllm/config/model.py:1166@0.24.0, :1213@0.25.0–0.25.1, :1231@0.26.0, :1316@0.27.0–0.27.1, "
        ":1368@0.28.0, :1414@0.29.0, :1427@0.30.0, :1505@0.31.0, :1547@0.32.0, :1560@0.33.0",
        fill={"sizes": "one that divides the model's attention heads"}),
    Signature(
        rule="tp-o-groups", exception="ZeroDivisionError", pattern=r"^ZeroDivisionError\b",
        context=r"deepgemm_post_process_fp8_weight_block|r = wq\.size\(0\) // g|_o_proj|n_local_groups",
        context_lines=40,
        source="vllm/model_executor/layers/quantization/utils/fp8_utils.py:1120@0.24.0–0.25.1, :1121@0.26.0, "
        ":1117@0.27.0–0.27.1, :1118@0.28.0, :1122@0.29.0, :1134@0.30.0, :1137@0.31.0, :1221@0.32.0–0.33.0 "
        "(after the load); vllm/models/deepseek_v4/nvidia/flashmla.py:50@0.24.0–0.26.0, :51@0.27.0–0.27.1, "
        ":69@0.28.0–0.33.0 (_o_proj, first forward)",
        fill={"dp": "a tensor-parallel size no larger than the model's o_groups",
              "sizes": "1, 2, 4, 8 for DeepSeek-V4-Flash"}),
    Signature(
        rule="tp-o-groups", exception="AssertionError", pattern=r"(?P<groups>\d+) is not divisible by (?P<tp>\d+)",
        context=r"grouped_wo_a\.py|n_local_groups = divide\(n_groups", context_lines=12,
        source="vllm/distributed/utils.py:54@0.34.0 (ensure_divisibility, from "
        "vllm/models/deepseek_v4/common/grouped_wo_a.py:26@0.34.0, DeepseekV4GroupedWoA.__init__)",
        vllm=fact("wo-a-divides").range,
        fill={"dp": "a tensor-parallel size no larger than the model's o_groups ({groups})",
              "sizes": "one that divides {groups}"}),
    Signature(
        rule="tp-pp-gpus", exception="pydantic ValidationError (ValueError)",
        pattern=r"World size \(\d+\) is larger than the number of available GPUs",
        source="vllm/config/parallel.py:888@0.24.0–0.25.1, :900@0.26.0, :928@0.27.0–0.28.0, :960@0.29.0, "
        ":983@0.30.0, :1006@0.31.0, :1052@0.32.0, :1071@0.33.0"),
    Signature(
        rule="pp-layer-partition-invalid", exception="ValueError",
        pattern=r"Invalid partition string: |len\(partitions\)=\d+ does not match pp_size=\d+"
        r"|sum\(partitions\)=-?\d+ does not match num_hidden_layers=\d+"
        r"|Negative layer count in partition_list_str=",
        source="vllm/distributed/utils.py:131@0.24.0, :149@0.25.0–0.30.0, :150@0.31.0, :147@0.32.0, :219@0.33.0, "
        ":232@0.34.0 (get_pp_indices; its count and sum checks follow within five lines, 0.34's negative-count "
        "check within seven)",
        fill={"fix": "unset VLLM_PP_LAYER_PARTITION, or give one comma-separated layer count per pipeline stage "
                     "adding up to the model's num_hidden_layers (43 for DeepSeek-V4-Flash, 61 for DeepSeek-V4-Pro)"}),
    Signature(
        rule="block-size", exception="ValueError", pattern=r"No common block size for \d+",
        source="vllm/v1/worker/utils.py:328@0.24.0–0.25.1, :348@0.26.0, :332@0.27.0–0.27.1, :367@0.28.0, "
        ":376@0.29.0, :386@0.30.0–0.31.0, :554@0.32.0–0.33.0", fill={"suggested": "a multiple of 256 (256)"}),
    Signature(
        rule="block-size-v41", exception="ValueError", pattern=r"No common block size for \d+",
        source="vllm/v1/worker/utils.py:386@0.30.0–0.31.0, :554@0.32.0–0.33.0 (vllm/models/deepseek_v41/"
        "sparse_mla.py:90@0.30.0)", vllm=fact("block-size-v41").range,
        fill={"suggested": "a multiple of 128 (64 on SM 9.x)"}),
    # --- speculative decoding --------------------------------------------------------------------
    Signature(
        rule="dspark-before-0.25", exception="pydantic ValidationError (literal_error)",
        pattern=r"input_value='dspark'", context=r"SpeculativeConfig|literal_error|Input should be", context_lines=3,
        source="vllm/config/speculative.py SpeculativeMethod@0.24.0 (no 'dspark')",
        vllm=fact("dspark-before-0.25").range),
    Signature(
        rule="dspark-without-module", exception="AttributeError", pattern=r"has no attribute 'dspark_target_layer_ids'",
        source="vllm/models/deepseek_v4/nvidia/dspark.py:67@0.25.0, :100@0.33.0",
        vllm=fact("dspark-without-module").range),
    Signature(
        rule="dspark-pp", exception="NotImplementedError", pattern=r"DSpark does not support pipeline parallelism",
        source="vllm/v1/worker/gpu/spec_decode/dspark/utils.py:36@0.25.0–0.25.1, :46@0.26.0, "
        ":50@0.27.0–0.27.1, :56@0.28.0, :80@0.29.0", vllm=fact("dspark-pp").range),
    # The same refusal in the model-config words when the DSpark draft is checked first (vllm#52761:
    # 0.27.1, PP 3): a message any model without SupportsPP prints, so only with the log's
    # arguments showing DSpark and a pipeline-parallel size (non-default args lists it only when > 1).
    Signature(
        rule="dspark-pp", exception="ValueError", pattern=r"Pipeline parallelism is not supported for this model",
        source="vllm/config/model.py:1227@0.25.0, :1245@0.26.0, :1330@0.27.0, :1382@0.28.0, :1428@0.29.0 "
        "(verify_with_parallel_config, for the DSpark draft); vllm#52761", vllm=fact("dspark-pp").range,
        args={"pipeline_parallel_size": ..., "speculative_config.method": "dspark"}),
    Signature(
        rule="dspark-k-below-block", exception="ValueError",
        pattern=r"DSpark requires num_speculative_tokens >= dspark_block_size",
        source="vllm/config/speculative.py:1020@0.26.0, :1051@0.27.0–0.27.1", vllm=fact("dspark-k-below-block").range,
        fill={"block": "the checkpoint's dspark_block_size"}),
    Signature(
        rule="dspark-v1-runner", exception="ValueError",
        pattern=r"Model Runner V1 does not support: .*dspark speculative decoding",
        source="vllm/config/vllm.py:2738@0.29.0 (:2624 adds 'dspark speculative decoding'), :3093@0.30.0, "
        ":3329@0.31.0, :3201@0.32.0, :3335@0.33.0", vllm=fact("dspark-v1-runner").range),
    # The same refusal when a setting the V2 runner does not support makes vLLM fall back to V1.
    Signature(
        rule="dspark-v2-unsupported", exception="ValueError",
        pattern=r"Model Runner V1 does not support: .*dspark speculative decoding",
        source="vllm/config/vllm.py:2738@0.29.0, :3093@0.30.0, :3329@0.31.0, :3201@0.32.0, :3335@0.33.0",
        vllm=fact("dspark-v2-unsupported").range,
        fill={"used": "--enable-dbo, elastic EP or the other setting the V2 model runner does not support"}),
    # --- vision, hybrid KV manager -------------------------------------------------------------
    Signature(
        rule="vision-before-0.30", exception="ValueError",
        pattern=r"There is no module or parameter named '[^']*vision",
        source="vllm/model_executor/models/utils.py:341@0.24.0, :387@0.25.0–0.25.1, :390@0.26.0–0.27.1, "
        ":389@0.28.0, :412@0.29.0", vllm=fact("vision-before-0.30").range),
    *(Signature(
        rule=rule, exception="TypeError", vllm=fact("hma-promotion-raises").range,
        pattern=r"(?:\w+\.)?__init__\(\) got an unexpected keyword argument 'bounded_replay'",
        source=f"{_KVU}:1887@0.31.0, :1746@0.32.0, vllm/v1/core/kv_cache_planning.py:800@0.33.0 ({why}); "
        "0.34 drops bounded_replay in the promotion, kv_cache_planning.py:845@0.34.0") for rule, why in (
        ("hma-disabled", "replace_as; SlidingWindowMLASpec.bounded_replay, vllm/v1/kv_cache_interface.py:937@0.31.0, "
         ":1015@0.33.0"),
        ("connector-turns-hma-off", "HMA turned off by vllm/config/vllm.py for a connector without SupportsHMA"))),
    Signature(
        rule="connector-hma-forced", exception="ValueError",
        pattern=r"Connector \S+ does not support HMA but HMA is enabled",
        source="vllm/distributed/kv_transfer/kv_connector/factory.py:57@0.24.0–0.33.0"),
    # --- memory ----------------------------------------------------------------------------------
    Signature(
        rule="weights-exceed-memory", exception="ValueError", pattern=r"No available memory for the cache blocks",
        source=f"{_KVU}:740@0.24.0–0.25.1, :758@0.26.0–0.27.1, :738@0.28.0, :859@0.29.0, :879@0.30.0, "
        ":905@0.31.0, :1010@0.32.0, vllm/v1/core/kv_cache_planning.py:57@0.33.0", fill={"more": "enough"}),
    Signature(
        rule="weights-exceed-memory", exception="torch.OutOfMemoryError",
        pattern=r"(?:torch\.)?(?:cuda\.)?OutOfMemoryError: CUDA out of memory",
        context=r"load_weights|load_model|model_loader|weight_loader", context_lines=60,
        source="torch's allocator, during vLLM's weight load (vllm/model_executor/model_loader/)",
        fill={"more": "enough"}),
    Signature(
        rule="max-model-len-too-long", exception="ValueError",
        pattern=r"To serve at least one request with the model's max seq len \(\d+\)"
        r"(?:.*?the estimated maximum model length is (?P<estimate>\d+))?",  # vLLM's estimate, quoted in the fix
        source=f"{_KVU}:760@0.24.0–0.25.1, :778@0.26.0–0.27.1, :758@0.28.0, :879@0.29.0, :899@0.30.0, "
        ":925@0.31.0, :1030@0.32.0, vllm/v1/core/kv_cache_planning.py:77@0.33.0",
        fill={"fix": (f"--max-model-len {{estimate}} (vLLM's estimate on this line) or less; {_MAX_LEN_FIX}",
                      _MAX_LEN_FIX)}),
    # The wording before 0.24 (V0 and early V1 engines; not in 0.24.0–0.33.0): the length and the
    # tokens the KV cache holds, without an estimate.
    Signature(
        rule="max-model-len-too-long", exception="ValueError",
        pattern=r"The model's max seq len \(\d+\) is larger than the maximum number of tokens that can be "
        r"stored in KV cache",
        source="vllm/v1/core/kv_cache_utils.py and vllm/worker/ before 0.24 (the older wording; field corpus: "
        "opea-project/GenAIExamples#1762)", vllm=fact("max-model-len-old-wording").range,
        fill={"fix": "--max-model-len at most the KV-cache tokens the message names, --max-model-len auto, or more "
              "memory for the KV cache (--gpu-memory-utilization, more GPUs)"}),
    Signature(
        rule="shards-missing", exception="ValueError",
        pattern=r"Following weights were not initialized from checkpoint",
        source="vllm/model_executor/model_loader/default_loader.py:467@0.24.0–0.30.0, :521@0.31.0, "
        ":564@0.32.0, :569@0.33.0", fill={"where": "the model's directory (or the Hugging Face cache)"}),
    # --- doctor rows (this machine's FlashInfer) -----------------------------------------------
    *(Signature(
        rule=rule, exception="RuntimeError", vllm=fact("flashinfer-sm120-decode-api").range,
        pattern=r"FLASHINFER_MLA_SPARSE_DSV4 on SM120 requires FlashInfer's sparse MLA decode API",
        source=f"{_FI}:563@0.24.0, :582@0.25.0–0.26.0, :579@0.27.0–0.27.1{note}") for rule, note in (
        ("flashinfer-missing", " (has_flashinfer_sparse_mla_sm120() is False without FlashInfer)"),
        ("flashinfer-sm120-api", ""))),
    Signature(
        rule="flashinfer-sm120-shape", exception="RuntimeError",
        pattern=r"FLASHINFER_MLA_SPARSE_DSV4 on SM120 requires a FlashInfer DSV4 sparse MLA decode specialization",
        source=f"{_FI}:594@0.28.0, :573@0.29.0, :606@0.30.0, :664@0.31.0–0.33.0",
        vllm=fact("flashinfer-sm120-shape").range),
    # --- reported (kernel) failures: warning rows, the text from the upstream reports ------------
    Signature(
        rule="sm12-0.24-deepgemm", exception="RuntimeError (DeepGEMM assertion)",
        pattern=r"layout\.hpp:\d+\).*Unknown recipe|Unknown recipe.*layout\.hpp",
        source="DeepGEMM csrc layout.hpp:76 via vLLM 0.24.0's FP8 warm-up (vLLM #47130, #47266)",
        vllm=fact("sm12-deepgemm-warmup").range),
    Signature(
        rule="sm12-0.27", exception="RuntimeError (DeepGEMM assertion)", pattern=r"Unknown SF transformation",
        source="DeepGEMM, from process_weights_after_loading in vLLM 0.27.x (vLLM #51758)",
        vllm=fact("sm12-0.27").range, fill={"before": "0.28.0"}),
    # --- failures no rule row decides: the signature's own words (``text``) ---------------------
    # The field corpus (tests/fixtures/logs/field/MANIFEST.json) holds a real log of each.
    *(Signature(
        rule="deepgemm-not-for-this-gpu", exception="RuntimeError (DeepGEMM assertion / CUDA driver error)",
        pattern=pattern, source=source, text=_DEEPGEMM_TEXT) for pattern, source in (
        (r"Assertion error \([^)]*csrc/apis/[\w./]+\.hpp:\d+\): Unsupported architecture",
         "DeepGEMM csrc/apis/hyperconnection.hpp:56 (tf32_hc_prenorm_gemm), csrc/apis/attention.hpp:211 "
         "(paged_mqa_logits): DeepGEMM#317; vllm#40778 (vLLM), sglang#25877"),
        (r"jit/handle\.hpp:\d+\): 200 \(CUDA_ERROR_INVALID_IMAGE",
         "DeepGEMM jit/handle.hpp:141 (a JIT kernel image the GPU cannot load): timothystewart6/vllm-gb10#27"),
        (r"Assertion error \([^)]*layout\.hpp:\d+\): not disable_ue8m0_cast",
         "DeepGEMM csrc/apis/layout.hpp:49 (scale-factor layout, E8M0 off): timothystewart6/vllm-gb10#27"),
    )),
    *(Signature(
        rule="flashinfer-sm120-no-kernel", exception=exception, pattern=pattern, source=source,
        text=_FLASHINFER_SM120_TEXT) for exception, pattern, source in (
        ("tvm.error.InternalError (FlashInfer check)",
         r"Decode \(num_tokens <= 64\) must go through\b",
         "FlashInfer csrc/sparse_mla_sm120.cu:261 (TVM_FFI_ICHECK_GT(num_tokens, 64)): flashinfer#3828, #3817, "
         "#3988 (vLLM 0.25.0), sglang#33943"),
        ("tvm.error.InternalError (FlashInfer check)",
         r"Unsupported sparse-MLA prefill configuration\b",
         "FlashInfer csrc/sparse_mla_sm120_prefill.cu dispatch_dsv4_single: flashinfer#3828, sglang#33134"),
        ("ValueError (FlashInfer)", r"SM120 sparse-MLA has no decode kernel for this shape",
         "FlashInfer flashinfer/mla/_sparse_mla_sm120.py _paged_attention (flashinfer#4380's check): vllm#56837"),
    )),
    Signature(
        rule="dspark-kv-shape", exception="RuntimeError (FlashMLA check)",
        pattern=r"kv must have shape \(num_blocks, page_block_size, h_kv, bytes_per_token\)",
        source="FlashMLA's sparse decode check; vllm#47648 (nightly 0.23.1rc1.dev803, 8 × H200, DSpark); fixed by "
        "vllm#47716: vllm/v1/attention/backends/mla/sparse_swa.py:96@0.25.0 passes kv_quant_mode (absent in 0.24.0)",
        vllm=fact("dspark-kv-shape").range,
        text={"title": "DeepSeek-V4 DSpark: the sliding-window KV cache reshaped with the wrong width "
                       "(fixed in vLLM 0.25.0)",
              "effect": "nightlies before 0.25.0 built the DSpark sliding-window cache with 512 instead of 584 bytes "
                        "per token (no kv_quant_mode for fp8_ds_mla), and FlashMLA rejects it at the first decode",
              "fix": "vLLM 0.25.0 or later, the first release with DSpark (it has the fix, vllm#47716); on 0.25.0 or "
                     "later this message has another cause: run `dsv4-launch doctor` and report it",
              "reference": "vllm#47648, vllm#47716", "evidence": "cited"}),
    Signature(
        rule="dspark-no-d2t", exception="AttributeError",
        pattern=r"'DSparkDeepseekV4ForCausalLM' object has no attribute 'draft_id_to_target_id'",
        source="vllm/v1/worker/gpu/spec_decode/dspark/speculator.py:86@0.25.0, :84@0.26.0, :85@0.27.0 reads it "
        "(vllm#47418); set on CUDA by "
        "vllm#47429 before 0.25.0 (vllm/models/deepseek_v4/nvidia/dspark.py:273@0.25.0), on ROCm by vllm#51145 "
        "(vllm/models/deepseek_v4/amd/dspark.py:294@0.28.0; absent in 0.26.0)", vllm=fact("dspark-no-d2t").range,
        text={"title": "DeepSeek-V4 DSpark draft model without draft_id_to_target_id "
                       "(fixed in vLLM 0.25.0, ROCm 0.28.0)",
              "effect": "the DSpark speculator reads draft_id_to_target_id, which the DeepSeek-V4 DSpark draft class "
                        "did not define (CUDA: nightlies before 0.25.0; ROCm: 0.25.0–0.26.0, 0.27 not checked)",
              "fix": "vLLM 0.28.0 or later on ROCm, 0.25.0 or later on CUDA (no setting avoids it)",
              "reference": "vllm#47418, vllm#47429, vllm#51145", "evidence": "cited"}),
    Signature(
        rule="tp-fp8-block", exception="ValueError",
        pattern=r"Weight (?:input_size_per_partition|output_partition_size) = (?P<size>\d+) is not divisible by",
        source="vllm/model_executor/layers/quantization/utils/fp8_utils.py:1223@0.24.0–0.25.0, :1224@0.26.0, "
        ":1220@0.27.0, :1221@0.28.0, :1225@0.29.0, :1237@0.30.0, :1240@0.31.0, :1324@0.32.0–0.33.0 "
        "(validate_fp8_block_shape); vllm#42384 (DeepSeek-V4-Pro, TP 16)",
        text={"title": "tensor parallelism splits an FP8 block-quantized weight below its block",
              "effect": "each GPU's share of a block-quantized FP8 weight must be a multiple of the block (128); "
                        "this one gets {size} (DeepSeek-V4-Pro's 3072-wide expert dimension at TP 16 gives 192)",
              "fix": "a --tensor-parallel-size that leaves a multiple of 128 per GPU (DeepSeek-V4-Pro: 8 or less), "
                     "with --data-parallel-size or --pipeline-parallel-size across the nodes",
              "reference": "vllm#42384, vllm#40955, vllm-project/recipes#567", "evidence": "cited"}),
    Signature(
        rule="gpu-memory-not-free", exception="ValueError",
        pattern=r"Free memory on device (?:\S+ )?\((?P<free>[\d.]+)/(?P<total>[\d.]+) GiB\) on startup is less than "
        r"(?:desired GPU memory utilization|the engine's budget)[^(]*\((?P<gmu>[\d.]+), (?P<wanted>[\d.]+) GiB\)",
        source="vllm/v1/worker/utils.py:415@0.24.0–0.25.0, :435@0.26.0, :419@0.27.0, :454@0.28.0, :526@0.29.0, "
        ":544@0.30.0, :548@0.31.0, :762@0.32.0–0.33.0 (request_memory; 0.32 adds the engine's-budget form at :741)",
        text={"title": "less GPU memory free at start than --gpu-memory-utilization asks",
              "effect": "vLLM asks {wanted} GiB ({gmu} of the GPU) but {free} of {total} GiB are free: another "
                        "process (or a previous vLLM still exiting) holds the rest",
              "fix": "free the GPU (nvidia-smi lists who holds it) or set --gpu-memory-utilization below "
                     "{free}/{total}; `dsv4-launch fit` says what the model needs at that value",
              "reference": "vllm/v1/worker/utils.py request_memory", "evidence": "cited"}),
    Signature(
        rule="cuda-oom", exception="torch.OutOfMemoryError",
        pattern=r"OutOfMemoryError: CUDA out of memory\. Tried to allocate (?P<tried>[\d.]+ [KMGT]?i?B)\. GPU "
        r"(?P<gpu>\d+) has a total capacity of (?P<total>[\d.]+ [KMGT]?i?B) of which "
        r"(?P<free>[\d.]+ [KMGT]?i?B) is free",
        not_context=r"load_weights|load_model|model_loader|weight_loader", context_lines=60,
        source="torch's CUDA caching allocator, anywhere in vLLM's start-up (field corpus: sglang#23602, "
        "kvcache-ai/ktransformers#1998) "
        "(the weight load is weights-exceed-memory's)",
        text={"title": "CUDA out of memory during start-up",
              "effect": "torch could not allocate {tried} on GPU {gpu}: {free} free of {total}",
              "fix": "run `dsv4-launch fit` with the same arguments: it sizes weights, KV cache and activations "
                     "per GPU of {total}; then lower --max-model-len, --max-num-batched-tokens or "
                     "--gpu-memory-utilization, or add GPUs",
              "reference": "dsv4-launch fit", "evidence": "reported"}),
    # --- from the code audit (shared/reference/vllm-dsv4-audit-4.md §3): vLLM's own messages ----------------
    Signature(
        rule="hybrid-kv-forced", exception="ValueError",
        pattern=r"Hybrid KV cache manager was explicitly enabled but is not supported in this configuration",
        source="vllm/config/vllm.py:1524@0.24.0, :1558@0.25.0, :1628@0.26.0, :1667@0.27.0, :1778@0.28.0, "
        ":1840@0.29.0, :2041@0.30.0, :2279@0.31.0, :2198@0.32.0, :2285@0.33.0",
        text={"title": "the hybrid KV cache manager forced on where vLLM must turn it off",
              "effect": "--enable-hybrid-kv-cache-manager (--no-disable-hybrid-kv-cache-manager) asks for the hybrid "
                        "manager, and this configuration needs it off (a platform without it, or chunked local "
                        "attention: vllm/config/vllm.py's HMA rules)",
              "fix": "drop --enable-hybrid-kv-cache-manager / --no-disable-hybrid-kv-cache-manager and let vLLM decide",
              "reference": "vllm/config/vllm.py (disable_hybrid_kv_cache_manager is False)", "evidence": "cited"}),
    Signature(
        rule="v2-runner-unsupported", exception="ValueError",
        pattern=r"Model Runner V2 does not yet support: (?P<features>.+)$",
        source="vllm/config/vllm.py:2099@0.24.0, :2144@0.25.0, :2223@0.26.0, :2262@0.27.0, :2485@0.28.0, "
        ":2731@0.29.0, :3086@0.30.0, :3322@0.31.0, :3194@0.32.0, :3328@0.33.0 (_validate_v2_model_runner)",
        vllm=fact("v1-runner-exists").range,  # 0.34 has one runner: the text is gone
        text={"title": "the V2 model runner forced on with features it does not support",
              "effect": "VLLM_USE_V2_MODEL_RUNNER=1 forces the V2 model runner, which does not support: {features}",
              "fix": "drop what the message names ({features}), or unset VLLM_USE_V2_MODEL_RUNNER so vLLM picks the "
                     "runner (not with DSpark, which needs V2: see dspark-v1-runner)",
              "reference": "vllm/config/vllm.py _validate_v2_model_runner", "evidence": "cited"}),
    *(Signature(
        rule="mega-moe-routing", exception="NotImplementedError", pattern=pattern, source=source, vllm=vllm,
        text={"title": "MegaMoE with a checkpoint whose routing it does not support",
              "effect": "DeepGEMM MegaMoE implements sqrtsoftplus scoring with normalized top-k probabilities only; "
                        "this checkpoint's config (scoring_func, norm_topk_prob) asks otherwise",
              "fix": "drop --moe-backend deep_gemm_mega_moe (vLLM's default MoE backend supports this routing)",
              "reference": "vllm/models/deepseek_v4/nvidia/model.py (DeepseekV4MoE)", "evidence": "cited"},
    ) for pattern, source, vllm in (
        (r"DeepSeek V4 MegaMoE currently supports sqrtsoftplus routing only",
         f"{_NV}:522@0.24.0, :543@0.25.0, :544@0.26.0, :553@0.27.0, :561@0.28.0, :781@0.29.0, :820@0.30.0, "
         ":836@0.31.0, :710@0.32.0, :254@0.33.0", ANY_VERSION),
        (r"DeepSeek V4 MegaMoE requires normalized top-k probabilities",
         f"{_NV}:840@0.31.0, :714@0.32.0, :258@0.33.0", fact("mega-moe-norm-topk").range),
    )),
    Signature(
        rule="memory-changed-while-profiling", exception="AssertionError",
        pattern=r"Error in memory profiling\. Initial free memory (?P<before>[\d.]+) GiB, current free memory "
        r"(?P<after>[\d.]+) GiB",
        source="vllm/v1/worker/gpu_worker.py:480@0.24.0, :510@0.25.0, :532@0.26.0, :535@0.27.0, :550@0.28.0, "
        ":585@0.29.0, :600@0.30.0, :652@0.31.0, :719@0.32.0, :732@0.33.0 (an assert: gone under python -O)",
        text={"title": "another process freed GPU memory while vLLM was profiling",
              "effect": "free GPU memory rose from {before} to {after} GiB during vLLM's start-up profiling, so its "
                        "KV-cache budget would be wrong: another process on the same GPU released memory",
              "fix": "start vLLM when nothing else allocates or frees memory on its GPUs (another vLLM exiting, a "
                     "notebook, a second container)",
              "reference": "vllm/v1/worker/gpu_worker.py determine_available_memory", "evidence": "cited"}),
    # the int() of vLLM's envs.py on a value that is not a number (rows: core/rules/)
    Signature(
        rule="deep-gemm-env-not-int", exception="ValueError",
        pattern=r"invalid literal for int\(\) with base 10: ", context=r"[\"']VLLM_USE_DEEP_GEMM[\"']", context_lines=4,
        source="vllm/envs.py:1434@0.24.0, :1600@0.33.0 (bool(int(os.getenv('VLLM_USE_DEEP_GEMM', '1'))))",
        fill={"fix": "VLLM_USE_DEEP_GEMM=0 (DeepGEMM off; the only working value on SM 12.x with vLLM 0.24.0) or 1 "
              "(on, the default), or unset it"}),
    Signature(
        rule="v2-runner-env-not-int", exception="ValueError",
        pattern=r"invalid literal for int\(\) with base 10: ", context=r"[\"']VLLM_USE_V2_MODEL_RUNNER[\"']",
        context_lines=6,
        source="vllm/envs.py:1830@0.24.0, :2149@0.33.0 (maybe_convert_bool: bool(int(value)))",
        vllm=fact("v1-runner-exists").range,  # 0.34 no longer parses it (envs.py), validate_environ refuses it
    ),
    Signature(
        rule="v1-runner-removed", exception="ValueError",
        pattern=r"VLLM_USE_V2_MODEL_RUNNER=(?P<value>.*) is no longer supported: Model Runner V1 has been removed",
        source="vllm/platforms/interface.py:1483@0.34.0 (validate_environ)", vllm=fact("v1-runner-removed").range),
    *(Signature(
        rule="vllm-too-old-for-dsv4", exception=exception, pattern=pattern, source=source, text=_TOO_OLD_TEXT,
        vllm=fact("vllm-too-old-for-dsv4").range) for exception, pattern, source in (
        ("KeyError", r"invalid tool call parser: deepseek_v4\b",
         "vllm/entrypoints/openai/api_server.py:505@0.24.0 (the check; 0.24.0 and later register deepseek_v4); "
         "vllm-project/vllm-ascend#8997"),
        ("ValueError (transformers)", r"model type `deepseek_v4` but Transformers does not recognize this architecture",
         "transformers' AutoConfig; vLLM registers deepseek_v4's config itself from 0.24.0 "
         "(vllm/transformers_utils/config.py:86@0.24.0, :93@0.32.0); vllm#40954, swiss-ai/model-launch#138"),
        ("ValueError", r"Model architectures \['DeepseekV4\w*ForCausalLM'\] are not supported for now",
         "vllm/model_executor/models/registry.py:1062@0.24.0 (the check)"),
    )),
    # --- round two (issue 40): the field's texts ----------------------------------------------------
    # 0.26.0's FlashMLA sparse prefill given an empty chunk (globalDim (512, 64, 0): the TMA
    # descriptor's gmem_address 0): reported against 0.26.0 only (works on 0.25.x); the kernel's
    # assertion has other causes elsewhere, so only for a log of 0.26.x or one naming no release.
    *(Signature(
        rule="flashmla-sparse-prefill-0.26", exception="RuntimeError (FlashMLA assertion)", pattern=pattern,
        source="FlashMLA csrc/sm90/prefill/sparse/instantiations/../phase1.cuh:614 via "
        "vllm/third_party/flashmla/flash_mla_interface.py:217 (sparse_prefill_fwd) from "
        "vllm/models/deepseek_v4/nvidia/flashmla.py:339@0.26.0 (_forward_prefill); "
        "vllm#49883, #49922, #52339, #54179, #51486",
        vllm=fact("flashmla-sparse-prefill-empty-chunk").range, release_only=True,
        text={"title": "FlashMLA's sparse prefill crashes on vLLM 0.26.0 (an empty prefill chunk)",
              "effect": "vLLM 0.26.0 hands FlashMLA's SM 9.0 sparse prefill an empty chunk (long prompts, chunked "
                        "prefill, DSpark, KV connectors) and its TMA descriptor cannot be built: every worker asserts",
              "fix": "vLLM 0.25.x (the reports: the same setup works there); on 0.26.0 no setting is confirmed to "
                     "avoid it",
              "reference": "vllm#49883, vllm#49922, vllm#52339, vllm#54179", "evidence": "reported"}) for pattern in (
        r"phase1\.cuh:\d+\): Assertion `res == CUresult::CUDA_SUCCESS` failed",
        r"Assertion `res == CUresult::CUDA_SUCCESS` failed \([^)]*phase1\.cuh:\d+\)",
    )),
    # vLLM's own argument parser refusing the command line (argparse: exit 2). The message is the
    # cause; commands/explain.py adds the nearest option of the release's recorded table.
    Signature(
        rule="vllm-argument-error", exception="argparse error (exit 2)",
        pattern=r"^(?:vllm(?: serve)?|serve|api_server\.py|(?:__)?main(?:__)?\.py): error: "
        r"(?!argument --kv-cache-dtype: invalid choice)"
        r"(?P<message>.+)$",  # kv-invalid's own line excepted
        source="vllm/utils/argparse_utils.py:113@0.24.0, :156@0.33.0–0.34.0 (FlexibleArgumentParser, an argparse "
        "ArgumentParser: 'PROG: error: MESSAGE', exit 2; its own error() at :182@0.33.0)",
        text={"title": "vLLM refused its command line",
              "effect": "vLLM's argument parser stopped before anything started: {message}",
              "fix": "{suggestion}",
              "reference": "`vllm serve --help` of this release; `dsv4-launch plan` checks a command against the "
                           "release's recorded options", "evidence": "cited"}),
    # transformers' message with the backticks a forum or a copy stripped
    Signature(
        rule="vllm-too-old-for-dsv4", exception="ValueError (transformers)",
        pattern=r"model type '?deepseek_v4'? but Transformers does not recognize this architecture",
        source="transformers' AutoConfig (the backticks stripped by the page it was copied from); vllm-ascend#8722",
        vllm=fact("vllm-too-old-for-dsv4").range, text=_TOO_OLD_TEXT),
    # FlashInfer's SM120 check in other words: the check's own text (a reporter's copy wraps its
    # message), and the frame of the check where an excerpt ends on it
    *(Signature(
        rule="flashinfer-sm120-no-kernel", exception="tvm.error.InternalError (FlashInfer check)", pattern=pattern,
        source=source, text=_FLASHINFER_SM120_TEXT) for pattern, source in (
        (r"Check failed: num_tokens > 64 \(\d+ vs\. 64\)",
         "FlashInfer csrc/sparse_mla_sm120.cu:261 (TVM_FFI_ICHECK_GT(num_tokens, 64)): vllm#50720 (0.26.0, GB10)"),
        (r'sparse_mla_sm120\.cu", line \d+, in void flashinfer::sparse_mla_sm120::SparseMlaSm120PagedAttention\b',
         "FlashInfer csrc/sparse_mla_sm120.cu:261, the check's frame: flashinfer#3988 (vLLM 0.25.0)"),
    )),
    # CUDA-graph capture crashes
    Signature(
        rule="cudagraph-c128a-assert", exception="AssertionError",
        pattern=r"^AssertionError$", context=r"in _build_c128a_metadata\b", context_lines=3,
        source="vllm/models/deepseek_v4/sparse_mla.py:260@0.33.0–0.34.0 (_build_c128a_metadata, reached from "
        "build_for_cudagraph_capture; absent in 0.24.0); eugr/spark-vllm-docker#400",
        text={"title": "DeepSeek-V4's c128a sparse-MLA metadata assert during CUDA-graph capture",
              "effect": "building the c128a (compress-ratio 128) attention metadata for a CUDA-graph capture size, the "
                        "top-k width is smaller than the capture's longest sequence needs, and vLLM's assert stops the "
                        "start-up (reported on 2 × GB10)",
              "fix": "--enforce-eager (no CUDA graphs: the thread's workaround, slower); or a smaller "
                     "--max-cudagraph-capture-size",
              "reference": "eugr/spark-vllm-docker#400", "evidence": "reported"}),
    Signature(
        rule="cudagraph-paged-mqa-oob", exception="CUDA error (illegal memory access)",
        pattern=r"illegal memory access", context=r"get_paged_mqa_logits_metadata", context_lines=6,
        source="DeepGEMM get_paged_mqa_logits_metadata (vllm/utils/deep_gemm.py:544@0.24.0, :707@0.33.0) from the "
        "indexer's metadata builder (vllm/v1/attention/backends/mla/indexer.py:617@0.24.0) during CUDA-graph capture; "
        "the out-of-bounds read: DeepGEMM#399; vllm#51181, #51970, #51499",
        text={"title": "DeepGEMM's paged-MQA metadata kernel reads out of bounds during CUDA-graph capture",
              "effect": "the dummy batch of a FULL CUDA-graph capture has all-zero context lengths, and DeepGEMM's "
                        "get_paged_mqa_logits_metadata reads past its input (SM 9.x: H100, H200, H20, GH200; 0.26–0.27 "
                        "reports)",
              "fix": "--compilation-config '{{\"cudagraph_mode\": \"FULL_DECODE_ONLY\"}}' (or PIECEWISE: the threads' "
                     "workarounds), or a DeepGEMM with DeepGEMM#399",
              "reference": "vllm#51181, vllm#51970, vllm#51499, DeepGEMM#399", "evidence": "reported"}),
    # FlashMLA forced on SM 12.x (the pre-flight's flashmla-on-sm12): FlashMLA's own check (the
    # same words on older GPUs have another fix: gpu_majors)
    Signature(
        rule="flashmla-on-sm12", exception="RuntimeError (FlashMLA check)",
        pattern=r"Sparse Attention Forward Kernel is only supported on SM90a and SM100f architectures",
        source="FlashMLA csrc/api/sparse_fwd.h:112-115@9241ae3 (TORCH_CHECK(is_sm90a || is_sm100f)), reached from "
        "vllm/third_party/flashmla/flash_mla_interface.py:217 (flash_mla_sparse_fwd); no field log yet",
        gpu_majors=(12,), fill={"backend": "FLASHMLA_SPARSE (FlashMLA)", "gpus": "SM 12.x"}))

# Rows whose failure prints nothing a log can be matched on, each with why (tests hold every
# other refusing row to at least one signature).
NO_SIGNATURE = {
    "indexer-dtype-ignored": "silently ignored: vLLM prints nothing",
    "backend-ignored": "silently ignored: vLLM prints nothing",
    "attention-env-ignored": "read nowhere: vLLM logs only 'Unknown vLLM environment variable'",
    "flashinfer-dsv4-on-sm9": "a kernel failure whose text is not known from vLLM's code",
    "fp8-ds-mla-on-plain-rows": "a silent layout mismatch: nothing is raised",
    "gpu-too-old": "a kernel failure whose text depends on the kernel and the GPU",
    "sm12-before-0.24": "outside the releases dsv4-launch knows",
    "sm10-0.28-v2-runner": "silent: only BOS tokens are generated (`dsv4-launch check` finds it)",
    "h20-0.27.1": "a CUDA illegal address in graph capture, not specific to this cause",
    "gb10-stock": "unverified support, no single failure text",
    "mixed-gpus": "no single failure text",
    "mtp-on-dspark-checkpoint": "boots: more KV memory per token, nothing is raised",
    "tokenizer-without-template": "the error comes per chat request from the tokenizer, not at start",
    "v4-parsers-on-v41": "silent: tool calls are not parsed",
    "think-max-short": "silent: the reasoning is cut short",
    "weights-tight": "an estimate: the failure, if any, is weights-exceed-memory's",
    "flashinfer-pin": "pip only warns; any failure is a kernel's"}


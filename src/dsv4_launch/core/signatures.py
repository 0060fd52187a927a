"""What vLLM prints when a rule row's condition fails, per release, and how a log is read for it.

A ``Signature`` is a row too: the rule id it belongs to (a ``Rule`` of a ``rules_*.py``
topic module or ``doctor_rules.py``, or ``kv-auto``, the KV rule of ``kv.py``), the
exception vLLM raises, a pattern for its message, the releases that print it and the vLLM line
that raises it, release by release (``file:line@version``; the ranges are the releases whose
source has that line). ``Scanner`` reads a log line by line (the reader strips the journald,
kubectl and vLLM prefixes first) and keeps only a bounded window, so any log is read in linear
time and bounded memory: the signatures that match, the vLLM version, the ``non-default
args`` vLLM logs at start, the GPU where the log names it, and the last exception lines (the
root cause, for failures no signature knows).

Credentials in the lines explain prints: ``mask_secrets_in_text`` masks a line (the key formats,
a credential word's phrasing, ``--option value`` — every word up to the next option after
``--api-key``, as vLLM's parser reads it —, ``name: value``, a config dump's line to its end);
``LineMasker``, fed every line by the scanner, masks what spans lines (a private key's block,
a YAML/JSON/pprint value over several lines, an argv one item a line, pydantic's location then
``input_value``), so the lines kept are kept masked. Left alone, on evidence: a lowercase word
after ``secret``, ``credential``, ``api key``, ``token``, ``bearer``, ``HF_TOKEN`` and the other
credential words but a password's (``secret dragon`` is shown): in the string literals of vLLM
0.24.0, 0.29.0, 0.33.0 and of the packages its install brings (huggingface_hub, transformers,
openai, ray, httpx, …) those words are followed by a lowercase word 521 times, all prose
("credential chain", "secret value", "api key obtained"); after ``password`` 64 times, in the
words of ``_PROSE_AFTER_PASSWORD``; after ``passphrase``, ``passwd`` and ``pwd`` only in psutil's
"pwd module". So after those four any other lowercase word is masked (``passphrase
swordfish``); after every credential word a value shaped like a credential is. In the middle of
a line ``name = value`` masks one word (the line goes on: "token = X (see the docs)"), and
after ``name:`` or ``name = `` a word of ``_NOT_VALUES`` is read as prose ("password: correct";
right after ``name=`` only the words that say there is no value are: ``_NO_VALUE``).

Pure: no I/O; the reading is ``adapters/log_reader.py``'s, the printing ``commands/explain.py``'s.
"""

from __future__ import annotations

import ast
import re
from collections import deque
from collections.abc import Iterable, Mapping

from .records import Record
from .versions import ANY_VERSION, VersionRange

KV_AUTO = "kv-auto"  # the KV rule (core/kv.py: KvPath.rule), not a Rule row


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
    # Words for the row's fix placeholders where no plan can fill them ({sizes}, {fix}, …).
    fill: Mapping[str, str] | None = None


_ATT = "vllm/models/deepseek_v4/attention.py"
_NV = "vllm/models/deepseek_v4/nvidia/model.py"
_IDX = "vllm/v1/attention/backends/mla/indexer.py"
_KVU = "vllm/v1/core/kv_cache_utils.py"
_FI = "vllm/models/deepseek_v4/nvidia/flashinfer_sparse.py"

BEFORE_030 = VersionRange(before="0.30.0")
SINCE_030 = VersionRange(since="0.30.0")

SIGNATURES: tuple[Signature, ...] = (
    # --- the KV cache ------------------------------------------------------------------------
    Signature(
        rule=KV_AUTO, exception="AssertionError",
        pattern=r"DeepseekV4 fp8_ds_mla layout only supports fp8 kv-cache, got auto\b",
        source=f"{_ATT}:79@0.24.0, :83@0.25.0–0.26.0, :105@0.27.0–0.27.1, :106@0.28.0, :105@0.29.0",
        vllm=BEFORE_030,
    ),
    Signature(
        rule="kv-not-fp8", exception="AssertionError",
        pattern=r"DeepseekV4 fp8_ds_mla layout only supports fp8 kv-cache, got (?!auto\b)\w+",
        source=f"{_ATT}:79@0.24.0, :83@0.25.0–0.26.0, :105@0.27.0–0.27.1, :106@0.28.0, :105@0.29.0",
        vllm=BEFORE_030,
    ),
    Signature(
        rule="kv-not-fp8", exception="ValueError",
        pattern=r"DeepseekV4 fp8_ds_mla layout only supports fp8 kv-cache, got (?!auto\b)\w+\. Please set",
        source=f"{_ATT}:112@0.30.0, :111@0.31.0–0.32.0, :112@0.33.0",
        vllm=SINCE_030,
    ),
    Signature(
        rule="kv-invalid", exception="argparse error (exit 2)",
        pattern=r"argument --kv-cache-dtype: invalid choice: ",
        source="vllm/config/cache.py CacheDType (argparse choices)@0.24.0–0.32.0",
        vllm=VersionRange(before="0.33.0"),
    ),
    Signature(
        rule="kv-invalid", exception="pydantic ValidationError",
        pattern=r"Invalid kv_cache_dtype: '[^']*'\. Valid values are",
        source="vllm/config/cache.py:473@0.33.0",
        vllm=VersionRange(since="0.33.0"),
    ),
    Signature(
        rule="nvfp4-on-mla", exception="pydantic ValidationError (ValueError)",
        pattern=r"nvfp4 KV cache is not supported with MLA",
        source="vllm/config/vllm.py:2165@0.24.0, :2206@0.25.0–0.25.1, :2285@0.26.0, :2316@0.27.0–0.27.1, "
        ":2536@0.28.0, :2828@0.29.0, :3188@0.30.0, :3424@0.31.0, :3296@0.32.0, :3432@0.33.0",
    ),
    # V4.1's resolver: in 0.30 the same text as V4's (told apart by its traceback frames, or the
    # plan on the logged arguments), from 0.31 its own.
    Signature(
        rule="v41-kv", exception="ValueError",
        pattern=r"DeepseekV4 fp8_ds_mla layout only supports fp8 kv-cache, got (?!auto\b)\w+\. Please set",
        context=r"deepseek_v41", context_lines=40,
        source="vllm/models/deepseek_v41/attention.py:141@0.30.0",
        vllm=VersionRange(since="0.30.0", before="0.31.0"),
    ),
    Signature(
        rule="v41-kv", exception="ValueError",
        pattern=r"DeepseekV4 packed KV layouts only support fp8 kv-cache, got \w+",
        source="vllm/models/deepseek_v41/attention.py:151@0.31.0, :154@0.32.0, :163@0.33.0",
        vllm=VersionRange(since="0.31.0"),
    ),
    # --- attention backends --------------------------------------------------------------------
    Signature(
        rule="backend-not-dsv4", exception="ValueError",
        pattern=r"\S+ is not a DeepSeek V4 attention backend",
        fill={"use": "FLASHINFER_MLA_SPARSE_DSV4 (what the message names)", "name": "DeepSeek-V4"},
        source=f"{_NV}:752@0.24.0, :773@0.25.0–0.25.1, :774@0.26.0, :785@0.27.0–0.27.1, :784@0.28.0, "
        ":1035@0.29.0, :1100@0.30.0, :1160@0.31.0, :1027@0.32.0, :551@0.33.0",
    ),
    Signature(
        rule="backend-not-dsv4", exception="ValueError",
        pattern=r"\S+ is not a DeepSeek V4\.1 attention backend",
        source="vllm/models/deepseek_v41/nvidia/model.py:131@0.30.0, :205@0.31.0, :212@0.32.0, :227@0.33.0",
        vllm=SINCE_030,
        fill={"use": "FLASHINFER_MLA_SPARSE_DSV41 (what the message names)", "name": "DeepSeek-V4.1"},
    ),
    Signature(
        rule="v41-ds-mla-on-plain-rows", exception="ValueError",
        pattern=r"\w+ is a packed FlashMLA DeepSeek V4\.1 KV cache format; the selected backend stores plain KV rows",
        source="vllm/models/deepseek_v41/attention.py:161@0.31.0, :164@0.32.0, :173@0.33.0",
        vllm=VersionRange(since="0.31.0"),
    ),
    # --- MegaMoE and the indexer cache ---------------------------------------------------------
    Signature(
        rule="mega-moe-needs-ep", exception="NotImplementedError",
        pattern=r"DeepSeek V4 MegaMoE currently requires expert parallel",
        source=f"{_NV}:506@0.24.0, :527@0.25.0–0.25.1, :528@0.26.0, :537@0.27.0–0.27.1, :545@0.28.0, "
        ":765@0.29.0, :798@0.30.0, :814@0.31.0, :688@0.32.0, :232@0.33.0",
    ),
    Signature(
        rule="mega-moe-fp4", exception="NotImplementedError",
        pattern=r"DeepSeek V4 MegaMoE only supports fp4 experts",
        source=f"{_NV}:526@0.24.0, :547@0.25.0–0.25.1, :548@0.26.0, :557@0.27.0–0.27.1, :565@0.28.0, "
        ":785@0.29.0, :824@0.30.0, :844@0.31.0, :718@0.32.0, :262@0.33.0",
    ),
    Signature(
        rule="mega-moe-not-sm100", exception="NotImplementedError",
        pattern=r"DeepGEMM MegaMoE requires SM100 GPUs",
        source=f"{_NV}:301@0.24.0, :309@0.25.0–0.25.1, :310@0.26.0, :317@0.27.0–0.27.1, :318@0.28.0, "
        ":335@0.29.0, :338@0.30.0, :369@0.31.0, vllm/model_executor/layers/fused_moe/deep_gemm_mega_moe.py"
        ":460@0.32.0, :201@0.33.0",
    ),
    Signature(
        rule="fp4-indexer-off-sm10", exception="AssertionError",
        pattern=r"use_fp4_indexer_cache requires Blackwell datacenter GPUs",
        source=f"{_IDX}:257@0.24.0, :278@0.25.0–0.25.1, :286@0.26.0, :498@0.27.0–0.27.1",
        vllm=VersionRange(since="0.24.0", before="0.28.0"),
        fill={"fix": "drop --attention_config.use_fp4_indexer_cache (an SM 10.x-only option)"},
    ),
    # 0.28–0.29: use_fp4_indexer_cache=True is an alias of indexer_kv_dtype mxfp4, and both print
    # the same ValueError; the arguments in the log (or the plan on them) tell the two apart.
    Signature(
        rule="fp4-indexer-off-sm10", exception="ValueError",
        pattern=r"indexer_kv_dtype='mxfp4' requires Blackwell datacenter GPUs",
        source=f"{_IDX}:58@0.28.0–0.29.0 (use_fp4_indexer_cache=True sets indexer_kv_dtype='mxfp4': "
        "vllm/config/attention.py:125@0.28.0, :121@0.29.0)",
        vllm=VersionRange(since="0.28.0", before="0.30.0"),
        fill={"fix": "drop --attention_config.use_fp4_indexer_cache (an SM 10.x-only option)"},
    ),
    Signature(
        rule="mxfp4-indexer-off-sm10", exception="ValueError",
        pattern=r"indexer_kv_dtype='mxfp4' requires Blackwell datacenter GPUs",
        source=f"{_IDX}:58@0.28.0–0.29.0, :68@0.30.0–0.31.0, :91@0.32.0, :95@0.33.0",
        vllm=VersionRange(since="0.28.0"),
    ),
    Signature(
        rule="fp4-indexer-removed", exception="pydantic ValidationError (extra forbidden)",
        pattern=r"Unexpected keyword argument|Extra inputs are not permitted|unexpected_keyword_argument|extra_forbidden",
        context=r"\buse_fp4_indexer_cache\b", context_lines=3,
        source="vllm/config/attention.py AttentionConfig@0.30.0–0.33.0 (no use_fp4_indexer_cache field; "
        "@config: extra='forbid', vllm/config/utils.py)",
        vllm=SINCE_030,
        fill={"fix": "drop use_fp4_indexer_cache from --attention-config (on SM 10.x with vLLM ≥ 0.28: "
              "--attention-config.indexer_kv_dtype mxfp4 turns the FP4 indexer cache on)"},
    ),
    Signature(
        rule="indexer-dtype-unsupported", exception="ValueError",
        pattern=r"indexer_kv_dtype='\w+' is not supported by the DeepSeek sparse indexer",
        source=f"{_IDX}:52@0.28.0–0.29.0, :62@0.30.0–0.31.0, :63@0.32.0, :64@0.33.0",
        vllm=VersionRange(since="0.28.0"),
    ),
    # --- tensor parallelism, GPUs, block size --------------------------------------------------
    Signature(
        rule="tp-heads", exception="pydantic ValidationError (ValueError)",
        pattern=r"Total number of attention heads \(\d+\) must be divisible by tensor parallel size",
        source="vllm/config/model.py:1166@0.24.0, :1213@0.25.0–0.25.1, :1231@0.26.0, :1316@0.27.0–0.27.1, "
        ":1368@0.28.0, :1414@0.29.0, :1427@0.30.0, :1505@0.31.0, :1547@0.32.0, :1560@0.33.0",
        fill={"sizes": "one that divides the model's attention heads"},
    ),
    Signature(
        rule="tp-o-groups", exception="ZeroDivisionError",
        pattern=r"^ZeroDivisionError\b",
        context=r"deepgemm_post_process_fp8_weight_block|r = wq\.size\(0\) // g|_o_proj|n_local_groups",
        context_lines=40,
        source="vllm/model_executor/layers/quantization/utils/fp8_utils.py:1120@0.24.0–0.25.1, :1121@0.26.0, "
        ":1117@0.27.0–0.27.1, :1118@0.28.0, :1122@0.29.0, :1134@0.30.0, :1137@0.31.0, :1221@0.32.0–0.33.0 "
        "(after the load); vllm/models/deepseek_v4/nvidia/flashmla.py:50@0.24.0–0.26.0, :51@0.27.0–0.27.1, "
        ":69@0.28.0–0.33.0 (_o_proj, first forward)",
        fill={"dp": "a tensor-parallel size no larger than the model's o_groups",
              "sizes": "1, 2, 4, 8 for DeepSeek-V4-Flash"},
    ),
    Signature(
        rule="tp-pp-gpus", exception="pydantic ValidationError (ValueError)",
        pattern=r"World size \(\d+\) is larger than the number of available GPUs",
        source="vllm/config/parallel.py:888@0.24.0–0.25.1, :900@0.26.0, :928@0.27.0–0.28.0, :960@0.29.0, "
        ":983@0.30.0, :1006@0.31.0, :1052@0.32.0, :1071@0.33.0",
    ),
    Signature(
        rule="pp-layer-partition-invalid", exception="ValueError",
        pattern=r"Invalid partition string: |len\(partitions\)=\d+ does not match pp_size=\d+"
        r"|sum\(partitions\)=-?\d+ does not match num_hidden_layers=\d+",
        source="vllm/distributed/utils.py:131@0.24.0, :149@0.25.0–0.30.0, :150@0.31.0, :147@0.32.0, :219@0.33.0 "
        "(get_pp_indices; its count and sum checks follow within five lines)",
        fill={"fix": "unset VLLM_PP_LAYER_PARTITION, or give one comma-separated layer count per pipeline stage "
                     "adding up to the model's num_hidden_layers (43 for DeepSeek-V4-Flash, 61 for DeepSeek-V4-Pro)"},
    ),
    Signature(
        rule="block-size", exception="ValueError",
        pattern=r"No common block size for \d+",
        source="vllm/v1/worker/utils.py:328@0.24.0–0.25.1, :348@0.26.0, :332@0.27.0–0.27.1, :367@0.28.0, "
        ":376@0.29.0, :386@0.30.0–0.31.0, :554@0.32.0–0.33.0",
        fill={"suggested": "a multiple of 256 (256)"},
    ),
    Signature(
        rule="block-size-v41", exception="ValueError",
        pattern=r"No common block size for \d+",
        source="vllm/v1/worker/utils.py:386@0.30.0–0.31.0, :554@0.32.0–0.33.0 (vllm/models/deepseek_v41/"
        "sparse_mla.py:90@0.30.0)",
        vllm=SINCE_030,
        fill={"suggested": "a multiple of 128 (64 on SM 9.x)"},
    ),
    # --- speculative decoding --------------------------------------------------------------------
    Signature(
        rule="dspark-before-0.25", exception="pydantic ValidationError (literal_error)",
        pattern=r"input_value='dspark'",
        context=r"SpeculativeConfig|literal_error|Input should be", context_lines=3,
        source="vllm/config/speculative.py SpeculativeMethod@0.24.0 (no 'dspark')",
        vllm=VersionRange(before="0.25.0"),
    ),
    Signature(
        rule="dspark-without-module", exception="AttributeError",
        pattern=r"has no attribute 'dspark_target_layer_ids'",
        source="vllm/models/deepseek_v4/nvidia/dspark.py:67@0.25.0, :100@0.33.0",
        vllm=VersionRange(since="0.25.0"),
    ),
    Signature(
        rule="dspark-pp", exception="NotImplementedError",
        pattern=r"DSpark does not support pipeline parallelism",
        source="vllm/v1/worker/gpu/spec_decode/dspark/utils.py:36@0.25.0–0.25.1, :46@0.26.0, "
        ":50@0.27.0–0.27.1, :56@0.28.0, :80@0.29.0",
        vllm=VersionRange(since="0.25.0", before="0.30.0"),
    ),
    Signature(
        rule="dspark-k-below-block", exception="ValueError",
        pattern=r"DSpark requires num_speculative_tokens >= dspark_block_size",
        source="vllm/config/speculative.py:1020@0.26.0, :1051@0.27.0–0.27.1",
        vllm=VersionRange(since="0.26.0", before="0.28.0"),
        fill={"block": "the checkpoint's dspark_block_size"},
    ),
    Signature(
        rule="dspark-v1-runner", exception="ValueError",
        pattern=r"Model Runner V1 does not support: .*dspark speculative decoding",
        source="vllm/config/vllm.py:2738@0.29.0 (:2624 adds 'dspark speculative decoding'), :3093@0.30.0, "
        ":3329@0.31.0, :3201@0.32.0, :3335@0.33.0",
        vllm=VersionRange(since="0.29.0"),
    ),
    # The same refusal when a setting the V2 runner does not support makes vLLM fall back to V1.
    Signature(
        rule="dspark-v2-unsupported", exception="ValueError",
        pattern=r"Model Runner V1 does not support: .*dspark speculative decoding",
        source="vllm/config/vllm.py:2738@0.29.0, :3093@0.30.0, :3329@0.31.0, :3201@0.32.0, :3335@0.33.0",
        vllm=VersionRange(since="0.29.0"),
        fill={"used": "--enable-dbo, elastic EP or the other setting the V2 model runner does not support"},
    ),
    # --- vision, hybrid KV manager -------------------------------------------------------------
    Signature(
        rule="vision-before-0.30", exception="ValueError",
        pattern=r"There is no module or parameter named '[^']*vision",
        source="vllm/model_executor/models/utils.py:341@0.24.0, :387@0.25.0–0.25.1, :390@0.26.0–0.27.1, "
        ":389@0.28.0, :412@0.29.0",
        vllm=BEFORE_030,
    ),
    Signature(
        rule="hma-disabled", exception="TypeError",
        pattern=r"(?:\w+\.)?__init__\(\) got an unexpected keyword argument 'bounded_replay'",
        source=f"{_KVU}:1887@0.31.0, :1746@0.32.0, vllm/v1/core/kv_cache_planning.py:800@0.33.0 (replace_as; "
        "SlidingWindowMLASpec.bounded_replay, vllm/v1/kv_cache_interface.py:937@0.31.0, :1015@0.33.0)",
        vllm=VersionRange(since="0.31.0"),
    ),
    Signature(
        rule="connector-turns-hma-off", exception="TypeError",
        pattern=r"(?:\w+\.)?__init__\(\) got an unexpected keyword argument 'bounded_replay'",
        source=f"{_KVU}:1887@0.31.0, :1746@0.32.0, vllm/v1/core/kv_cache_planning.py:800@0.33.0 (HMA turned "
        "off by vllm/config/vllm.py for a connector without SupportsHMA)",
        vllm=VersionRange(since="0.31.0"),
    ),
    Signature(
        rule="connector-hma-forced", exception="ValueError",
        pattern=r"Connector \S+ does not support HMA but HMA is enabled",
        source="vllm/distributed/kv_transfer/kv_connector/factory.py:57@0.24.0–0.33.0",
    ),
    # --- memory ----------------------------------------------------------------------------------
    Signature(
        rule="weights-exceed-memory", exception="ValueError",
        pattern=r"No available memory for the cache blocks",
        source=f"{_KVU}:740@0.24.0–0.25.1, :758@0.26.0–0.27.1, :738@0.28.0, :859@0.29.0, :879@0.30.0, "
        ":905@0.31.0, :1010@0.32.0, vllm/v1/core/kv_cache_planning.py:57@0.33.0",
        fill={"more": "enough"},
    ),
    Signature(
        rule="weights-exceed-memory", exception="torch.OutOfMemoryError",
        pattern=r"(?:torch\.)?(?:cuda\.)?OutOfMemoryError: CUDA out of memory",
        context=r"load_weights|load_model|model_loader|weight_loader", context_lines=60,
        source="torch's allocator, during vLLM's weight load (vllm/model_executor/model_loader/)",
        fill={"more": "enough"},
    ),
    Signature(
        rule="max-model-len-too-long", exception="ValueError",
        pattern=r"To serve at least one request with the model's max seq len \(\d+\)",
        source=f"{_KVU}:760@0.24.0–0.25.1, :778@0.26.0–0.27.1, :758@0.28.0, :879@0.29.0, :899@0.30.0, "
        ":925@0.31.0, :1030@0.32.0, vllm/v1/core/kv_cache_planning.py:77@0.33.0",
        fill={"fix": "--max-model-len at most the estimated maximum the message names, --max-model-len auto, or "
              "more memory for the KV cache (--gpu-memory-utilization, more GPUs)"},
    ),
    Signature(
        rule="shards-missing", exception="ValueError",
        pattern=r"Following weights were not initialized from checkpoint",
        source="vllm/model_executor/model_loader/default_loader.py:467@0.24.0–0.30.0, :521@0.31.0, "
        ":564@0.32.0, :569@0.33.0",
        fill={"where": "the model's directory (or the Hugging Face cache)"},
    ),
    # --- doctor rows (this machine's FlashInfer) -----------------------------------------------
    Signature(
        rule="flashinfer-missing", exception="RuntimeError",
        pattern=r"FLASHINFER_MLA_SPARSE_DSV4 on SM120 requires FlashInfer's sparse MLA decode API",
        source=f"{_FI}:563@0.24.0, :582@0.25.0–0.26.0, :579@0.27.0–0.27.1 (has_flashinfer_sparse_mla_sm120() "
        "is False without FlashInfer)",
        vllm=VersionRange(before="0.28.0"),
    ),
    Signature(
        rule="flashinfer-sm120-api", exception="RuntimeError",
        pattern=r"FLASHINFER_MLA_SPARSE_DSV4 on SM120 requires FlashInfer's sparse MLA decode API",
        source=f"{_FI}:563@0.24.0, :582@0.25.0–0.26.0, :579@0.27.0–0.27.1",
        vllm=VersionRange(before="0.28.0"),
    ),
    Signature(
        rule="flashinfer-sm120-shape", exception="RuntimeError",
        pattern=r"FLASHINFER_MLA_SPARSE_DSV4 on SM120 requires a FlashInfer DSV4 sparse MLA decode specialization",
        source=f"{_FI}:594@0.28.0, :573@0.29.0, :606@0.30.0, :664@0.31.0–0.33.0",
        vllm=VersionRange(since="0.28.0"),
    ),
    # --- reported (kernel) failures: warning rows, the text from the upstream reports ------------
    Signature(
        rule="sm12-0.24-deepgemm", exception="RuntimeError (DeepGEMM assertion)",
        pattern=r"layout\.hpp:\d+\).*Unknown recipe|Unknown recipe.*layout\.hpp",
        source="DeepGEMM csrc layout.hpp:76 via vLLM 0.24.0's FP8 warm-up (vLLM #47130, #47266)",
        vllm=VersionRange(since="0.24.0", before="0.24.1"),
    ),
    Signature(
        rule="sm12-0.27", exception="RuntimeError (DeepGEMM assertion)",
        pattern=r"Unknown SF transformation",
        source="DeepGEMM, from process_weights_after_loading in vLLM 0.27.x (vLLM #51758)",
        vllm=VersionRange(since="0.27.0", before="0.28.0"),
        fill={"before": "0.28.0"},
    ),
)

# Rows whose failure prints nothing a log can be matched on, each with why (tests hold every
# other refusing row to at least one signature).
NO_SIGNATURE = {
    "indexer-dtype-ignored": "silently ignored: vLLM prints nothing",
    "backend-ignored": "silently ignored: vLLM prints nothing",
    "attention-env-ignored": "read nowhere: vLLM logs only 'Unknown vLLM environment variable'",
    "flashmla-on-sm12": "a kernel failure (no sm_120 kernels) whose text is not known from vLLM's code",
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
    "flashinfer-pin": "pip only warns; any failure is a kernel's",
}


def signatures_for(rule_id: str) -> tuple[Signature, ...]:
    return tuple(s for s in SIGNATURES if s.rule == rule_id)


# --- reading facts from vLLM's log lines -----------------------------------------------------

_VERSION_PATTERNS = (
    r"vLLM server version (\S+?),? serving model",
    r"vLLM API server version (\S+)",
    r"Initializing a V1 LLM engine \(v([^)\s]+)\) with config",
    r"█\s+version\s+(\S+)",
)
_VERSION_TEXT = r"\d+\.\d+(?:\.\d+)?[\w.+\-]{0,30}"
_ARGS = r"non-default args: (\{.*)$"
# GPUs where a log names them with their compute capability: dsv4-launch's own lines
# ("NVIDIA RTX PRO 6000 … (SM 12.0)") and torch's capability warning.
_GPU_PATTERNS = (
    r"on ((?:NVIDIA )?[\w][\w \-]{1,80}?) \(SM (\d+)\.(\d+)\)",
    r"Found GPU\d+ (.+?) which is of cuda capability (\d+)\.(\d+)",
)
_EXCEPTION = r"^(?:[A-Za-z_]\w*\.)*([A-Z]\w*(?:Error|Exception|Exit)|KeyboardInterrupt)(?::\s?(.*))?$"
_ARGPARSE_ERROR = r"^(?:vllm )?serve: error: "
# vLLM's own lines that point above them at the real cause.
_POINTER = r"See root cause above|See stack trace for root cause|Engine core initialization failed|" \
    r"EngineCore failed to start|WorkerProc failed to start|Frontend process failed during engine core initialization"

ARGS_TEXT_LIMIT = 200_000  # characters of a "non-default args" line that are parsed
MAX_MATCHES = 64  # distinct (signature, line text) pairs kept
ROOT_CAUSE_LINES = 3

# Name parts that make a key or option name a credential's (``api_key``, ``hf_token``,
# ``auth-token``, ``db.password``, ``X-Amz-Signature``, ``sig``, ``jwt``); whole parts only, so
# ``max_num_batched_tokens``, ``tokenizer_mode`` and ``ray_workers_use_nsight`` are not.
SECRET_PARTS = frozenset({"key", "apikey", "token", "secret", "secrets", "password", "passwd", "pwd", "credential",
                          "credentials", "auth", "authorization", "bearer", "passphrase", "jwt", "signature", "sig",
                          "cookie"})
SECRET_VALUE_DESTS = frozenset({"api_key", "hf_token", "watermark_config"})  # vLLM's own list, 0.30+
MASK = "***"


_SECRET_ENDINGS = ("token", "secret", "password", "passwd", "passphrase", "credential", "credentials")
_KEY_WORDS = frozenset({"apikey", "accesskey", "secretkey", "privatekey", "authkey", "sessionkey", "masterkey",
                        "signingkey", "clientkey"})  # "key" glued to a word: not monkey or hockey


# A word after "token"/"key" that makes the name a count, an id or a setting of the vocabulary or
# of a kernel, not a credential: prompt_token_ids, eos_token_id, long_prefill_token_threshold,
# max_token_num, token_suffix, min_token_prob, key_fp8.
_MEASURE_PARTS = frozenset({"id", "ids", "num", "nums", "count", "counts", "len", "lens", "length", "lengths",
                            "budget", "threshold", "thresholds", "prob", "probs", "logprob", "logprobs", "suffix",
                            "prefix", "index", "indices", "idx", "pos", "position", "positions", "limit", "limits",
                            "size", "sizes", "type", "types", "level", "rate", "usage", "mode", "dtype", "fp8",
                            "bits", "scale", "scales", "dim", "dims", "shape", "offset", "offsets"})


# Plurals, a list of credentials ("api_keys: [k1, k2]", "passwords", "hf_tokens"): only after the
# words that make the singular one (the bare "keys" and "tokens" are a checkpoint's and a count's).
_PLURAL_TOKENS_AFTER = frozenset({"hf", "api", "auth", "access", "bearer", "refresh", "session"})


def _plural_secret(before: str, part: str) -> bool:
    if part in ("passwords", "passphrases", "passwds") or (part.endswith("keys") and part[:-1] in _KEY_WORDS):
        return True
    return (part == "keys" and before + "key" in _KEY_WORDS) or (part == "tokens" and before in _PLURAL_TOKENS_AFTER)


def is_secret_key(key: str) -> bool:
    """A name that holds a credential: a word of it (split at ``_ - .``, blanks and camelCase)
    is one of SECRET_PARTS, a glued ``…key`` (``apikey``), or ends in token/secret/password
    (``hftoken``) — unless the word after it makes the name a count or an id (``_MEASURE_PARTS``:
    ``prompt_token_ids``, ``long_prefill_token_threshold``)."""
    words = re.sub(r"(?<=[a-z0-9])(?=[A-Z])", "_", key.strip("'\"")).lower()
    parts = [part for part in re.split(r"[_\-.\s]+", words) if part]
    return any((part in SECRET_PARTS or part in _KEY_WORDS or (len(part) > 5 and part.endswith(_SECRET_ENDINGS))
                or _plural_secret(parts[i - 1] if i else "", part))
               and (i + 1 == len(parts) or parts[i + 1] not in _MEASURE_PARTS)
               for i, part in enumerate(parts))


# --- credentials in free text (explain prints vLLM's log lines) --------------------------------
# The well-known key formats wherever they stand (_KEY_FORMATS); then three readings of the same
# text, whose spans are masked together: a credential word and the value its phrasing gives it
# (_phrase_spans: "token 'X'", "the password is X", "passphrase X", "Bearer X", "Authorization:
# Token X", "HF_TOKEN X", "Cookie: …"); ``--option value`` (_OPTION_VALUE); ``name: value`` /
# ``name=value`` of a credential's name: dicts, JSON, query strings, headers (_NAMED_VALUE). "token" is the commonest
# word of an LLM's log ("token ids", "Image token '<|image_pad|>'"), so after the bare word a value
# is masked only where it has a credential's shape; after password/secret/api key/… any value but
# an ordinary word.

# A private key's armor: PEM (RSA, EC, DSA, OPENSSH, ENCRYPTED, plain PKCS#8), PGP's "PRIVATE KEY
# BLOCK", RFC 4716's "---- BEGIN SSH2 ENCRYPTED PRIVATE KEY ----". Public keys and certificates
# are not secrets and are shown.
_PEM_LABEL = r"[A-Z0-9 ]{0,40}PRIVATE KEY(?: BLOCK)?"
_PEM_BEGIN = rf"-{{4,5}} ?BEGIN {_PEM_LABEL} ?-{{4,5}}"
_PEM_END = rf"-{{4,5}} ?END {_PEM_LABEL} ?-{{4,5}}"
# Key formats by their prefixes and shapes: Hugging Face, OpenAI/Anthropic/OpenRouter (sk-…), Stripe,
# AWS access key ids, GitHub, GitLab, Slack, Google API keys, npm, PyPI, JWTs, PEM private keys.
_KEY_FORMATS = (
    r"(?<![A-Za-z0-9_])hf_[A-Za-z0-9]{20,}"
    r"|(?<![A-Za-z0-9_-])sk-[A-Za-z0-9_-]{16,}"
    r"|(?<![A-Za-z0-9_])[rs]k_(?:live|test)_[A-Za-z0-9]{16,}"
    r"|(?<![A-Za-z0-9])(?:AKIA|ASIA|ABIA|ACCA|AGPA|AIDA|AIPA|ANPA|ANVA|APKA|AROA|ASCA)[A-Z0-9]{16}(?![A-Za-z0-9])"
    r"|(?<![A-Za-z0-9_])gh[oprsu]_[A-Za-z0-9]{30,}"
    r"|(?<![A-Za-z0-9_])github_pat_[A-Za-z0-9_]{30,}"
    r"|(?<![A-Za-z0-9_-])glpat-[A-Za-z0-9_-]{20,}"
    r"|(?<![A-Za-z0-9_-])xox[abeoprs]-[A-Za-z0-9-]{10,}"
    r"|(?<![A-Za-z0-9_-])xapp-[A-Za-z0-9-]{10,}"
    r"|(?<![A-Za-z0-9_-])AIza[A-Za-z0-9_-]{35}"
    r"|(?<![A-Za-z0-9_])npm_[A-Za-z0-9]{36}"
    r"|(?<![A-Za-z0-9_-])pypi-[A-Za-z0-9_-]{50,}"
    r"|(?<![A-Za-z0-9_-])eyJ[A-Za-z0-9_-]{5,}\.[A-Za-z0-9_-]{5,}\.[A-Za-z0-9_-]*"
    rf"|{_PEM_BEGIN}(?s:.*?{_PEM_END}|.*)"
)
# A credential word in prose. Compounds first (the longest reading wins): "secret key X" is the key's.
_ENV_WORD = r"[A-Z][A-Z0-9]*(?:_[A-Z0-9]+)*_(?:KEY|TOKEN|SECRET|PASSWORD|PASSWD|PASSPHRASE|CREDENTIALS?)"
_STRONG_WORD = (
    r"(?:api|access|secret|private|auth|signing|session|client|master|encryption)[ _-]?keys?"
    r"|(?:access|auth|api|bearer|refresh|session|oauth|hf|github|user|slack)[ _-]?tokens?"
    r"|client[ _-]?secrets?|apikeys?|pass(?:word|wd|phrase)s?|pwd|secrets?|credentials?|jwts?|bearer"
)
_CREDENTIAL_WORD = (rf"(?<![\w-])(?:(?P<env>{_ENV_WORD})|(?i:(?P<strong>{_STRONG_WORD}))|(?i:(?P<loose>tokens?|basic)))"
                    r"(?![\w-])")
_QUOTED = r"'(?:[^'\\]|\\.)*'|\"(?:[^\"\\]|\\.)*\"|`[^`]*`"
_BARE = r"[^\s'\"`,;]+"
# What follows the word: a quoted value; "is"/"was" and a value; "provided:" and a value; a value.
_AFTER_WORD = (
    rf"\s+(?P<quoted>{_QUOTED})"
    rf"|\s+(?i:is|was)\s+(?i:set\s+to\s+)?(?P<is>{_QUOTED}|{_BARE})"
    rf"|\s+(?i:provided|given|supplied|used|passed|specified|received|sent|value)\s*[:=]\s*(?P<given>{_QUOTED}|{_BARE})"
    rf"|[ \t]+(?P<bare>{_BARE})"
)
# Words that end a phrase, not a credential: "the password is not set", "HF_TOKEN environment variable".
_NOT_VALUES = frozenset("""
    not no none null nil empty blank missing required needed mandatory optional invalid incorrect wrong bad expired
    revoked disabled enabled locked malformed truncated unset set too very a an the being also only now still either
    neither stored saved read used given provided specified supplied correct valid present absent unknown
    unavailable available deprecated ignored hidden masked redacted changed reset updated configured defined loaded
    found rejected denied accepted ok okay in on at from for to of by with without and or but if when that this it
    its is was are were be been has have had must should can could will would may might does did do environment env
    variable var file longer shorter less more than same different unsupported supported case sensitive encrypted
    encoded
""".split())
# The words of _NOT_VALUES that are a setting's value, not a credential: after "name=" only these.
_NO_VALUE = frozenset("none null nil empty blank missing unset disabled enabled hidden masked redacted not no".split())
# "Authorization: Token X", "Proxy-Authorization: Digest X": the scheme is named by _NAMED_VALUE's pass.
_AUTH_HEADER = r"(?i:\b(?:proxy-)?authori[sz]ation)['\"]?\s*[:=]\s*['\"]?[A-Za-z][\w-]*[ \t]+([^\s'\",}]+)"
_COOKIE = r"(?i:\b(?:set-)?cookie\s*[:=]\s*)(.+)"  # to the end of the line

# A value after a name in free text: 'api_key': ['sk-…'], token=abc, "password": "…", sig=…&,
# token%3D… (URL-encoded), credentials={"key": "…"} (an opening bracket: the value runs to its
# closing one).
_NAMED_VALUE = (
    r"(['\"]?(?<![\w.\-])([\w.\-]+)['\"]?\s*(?:[:=]|%3[ADad])\s*)"  # a name starts a word: linear
    r"('(?:[^'\\]|\\.)*'|\"(?:[^\"\\]|\\.)*\"|(?:[A-Za-z_][\w.]*)?[\[{(]|[^\s,})\]]+)"
)
_OPTION_VALUE = r"((?<![\w\-])--([A-Za-z][\w\-]*)(?:=|\s+))(\S+)"
# A fast test before the passes: every word above contains one of these (tests/test_explain_secrets.py).
_HINT = r"(?i)key|token|secret|pass|pwd|credential|auth|bearer|basic|cookie|sig|jwt|--[ah]"  # --api-k, --hf
_EXCEPTION_NAME = r"(?:Error|Exception|Warning|Exit)$"  # KeyError: 'model.layers.0' is vLLM's, not a key


def _credential_name(name: str) -> bool:
    """A name whose value is a credential's (``is_secret_key``), not an exception's
    (``KeyError``, ``TokenizerError``: what follows is vLLM's message)."""
    return is_secret_key(name) and not re.search(_EXCEPTION_NAME, name)


_KEEP = ("None", "True", "False", "null", "true", "false", MASK, f"'{MASK}'", f'"{MASK}"', f"['{MASK}']",
         "|", ">", "|-", ">-", "|+", ">+")  # the last: YAML's block indicators (the value is on the lines below)


def _closing(text: str, start: int) -> int:
    """The end of the bracketed value opening at ``start`` (quotes respected), or of ``text``."""
    end, _ = _depth_after(text, start, 0)
    return len(text) if end == -1 else end


def _named_spans(text: str) -> list[tuple[int, int]]:
    """Where the value of every ``name: value`` / ``--name value`` whose name is a credential's
    stands. A name that is not one (``ValueError:``, ``KeyError:``) never swallows what follows:
    the search resumes inside its value, so ``ValueError: HF_TOKEN=x`` still masks x."""
    compiled = re.compile(_NAMED_VALUE)
    spans, pos = [], 0
    while (m := compiled.search(text, pos)) is not None:
        name, pos = m.group(2), m.start(3)  # not a credential's name: the search resumes inside its value
        if _credential_name(name):
            # an opening bracket: to its closing one (looked for only here, so the scan stays linear)
            bracket = m.group(3)[-1] in "[{("
            end = _closing(text, m.end(3) - 1) if bracket else m.end(3)
            quote = m.group(1)[:1]
            if not bracket and quote in ("'", '"') and m.group(1).count(quote) == 1 and m.group(3)[:1] not in "'\"" \
                    and quote in text[m.start(3):end]:
                end = text.index(quote, m.start(3), end)  # 'name=value' quoted whole: the value ends at its quote
            value = text[m.start(3):end]
            # prose ("HF_TOKEN: not set", "--seed-token to enable"); right after a bare "=" a word is
            # a value ("password=correct") unless it says there is none ("auth=disabled")
            prose = _NO_VALUE if m.group(1).rstrip("'\"").endswith(("=", "%3D", "%3d")) else _NOT_VALUES
            if value not in _KEEP and value.rstrip(".,;:!?").lower() not in prose:
                spans.append((m.start(3), end))
                pos = end
    return spans


# vLLM's --api-key takes every word up to the next option (nargs "+"; vLLM's own redaction of an
# argv masks each: vllm/snapshot/runtime.py:847@0.33.0, :775@0.31.0, also for the abbreviations
# argparse accepts); --hf-token takes one.
_MULTI_VALUED = "api-key"
# The words after a value, up to one starting with "-" (or argparse usage's "[-": "[--hf-token").
_MORE_WORDS = r"(?:[ \t]+(?!-|\[-)\S+)*"


def _option_of(name: str) -> str:
    """Which of vLLM's credential options ``--name`` is (``api-key``, ``hf-token``) as its parser
    reads it (``_`` for ``-``, an abbreviation), ``secret`` for another credential's name, or ""."""
    norm = name.replace("_", "-").lower()
    if _MULTI_VALUED.startswith(norm):
        return _MULTI_VALUED
    if "hf-token".startswith(norm):
        return "hf-token"
    return "secret" if _credential_name(name) else ""


def _option_spans(text: str) -> list[tuple[int, int]]:
    """Where the value of every credential ``--option`` stands: one word (``--hf-token X``,
    ``--name=X``), every word up to the next option after ``--api-key`` (``--api-key k1 k2
    --port 8000``); in a quoted argv item (``'--api-key=k1'``) the value ends at its quote."""
    compiled = re.compile(_OPTION_VALUE)
    spans, pos = [], 0
    while (m := compiled.search(text, pos)) is not None:
        pos = m.start(3)  # not a credential's option: the search resumes inside its value
        option = _option_of(m.group(2))
        if not option:
            continue
        end = m.end(3)
        quote = text[m.start() - 1: m.start()]
        close = text.find(quote, m.start(3), end) if quote in ("'", '"') else -1
        value = text[m.start(3):end if close == -1 else close]  # its first word ("--seed-token to enable")
        if option == _MULTI_VALUED and not m.group(1).endswith("="):  # every word up to the next option
            more = re.compile(_MORE_WORDS).match(text, end)
            end = more.end() if more else end
        after = m.start(3)
        if text[after] == "[":  # a list (['k1', 'k2']): to its closing bracket, its items' quotes inside
            after = _closing(text, after)
            end = max(end, after)
        if quote in ("'", '"'):  # a quoted item or string ('--api-key=k1', '--api-key k1 k2'): to its quote
            close = text.find(quote, after, end)
            end = close if close != -1 else end
        if not value or value.rstrip(".,;:!?").lower() in _NOT_VALUES or \
                all(word in _KEEP for word in text[m.start(3):end].split()):  # "--seed-token to enable"
            continue
        spans.append((m.start(3), end))
        pos = end
    return spans


# An argv as a list ('--api-key', 'k1', 'k2', '--port'; JSON's "--api-key", "k1"): the items after
# a credential option's.
_QUOTED_OPTION = r"""(['"])--([A-Za-z][\w.\-]{0,200})\1"""
_NEXT_ITEM = r"""\s*,\s*('(?:[^'\\]|\\.)*'|"(?:[^"\\]|\\.)*")"""


def _argv_item_spans(text: str) -> list[tuple[int, int]]:
    spans, pos = [], 0
    option_re, item_re = re.compile(_QUOTED_OPTION), re.compile(_NEXT_ITEM)
    while (m := option_re.search(text, pos)) is not None:
        pos = m.end()
        option = _option_of(m.group(2))
        if not option:
            continue
        first = last = None
        while (item := item_re.match(text, pos)) is not None and not item.group(1)[1:].startswith("-"):
            first = item.start(1) if first is None else first
            last, pos = item.end(1), item.end()
            if option != _MULTI_VALUED:
                break
        if first is not None and last is not None and text[first:last] not in _KEEP:
            spans.append((first, last))
    return spans


# A config dump's line (YAML, INI, .env, TOML without quotes): "password = correct horse battery
# staple", "  api_key: k1 k2", "export HF_TOKEN=…": the value is the rest of the line. Kept only
# when every word of it says there is none ("password: not set"). In the middle of a line a
# value is one word (the line goes on after it: "ValueError: token = X (see the docs)").
_CONFIG_LINE = r"""[ \t]*(?:-[ \t]+|export[ \t]+)?(['"]?)(\w[\w.\-]{0,200})\1[ \t]*[:=][ \t]*(?=[^\s'"\[{(`])"""


# A name/value pair (Kubernetes' env, a JSON list of settings): {"name": "HF_TOKEN", "value": "…"}.
_PAIR = (r"""(['"]?)\bname\1[ \t]*[:=][ \t]*(['"]?)([\w.\-]{1,200})\2[ \t]*,[ \t]*(['"]?)value\4[ \t]*[:=][ \t]*"""
         r"""('(?:[^'\\]|\\.)*'|"(?:[^"\\]|\\.)*"|[^\s,})\]]+)""")


def _pair_spans(text: str) -> list[tuple[int, int]]:
    return [m.span(5) for m in re.finditer(_PAIR, text) if is_secret_key(m.group(3)) and m.group(5) not in _KEEP]


def _config_line_spans(text: str) -> list[tuple[int, int]]:
    m = re.compile(_CONFIG_LINE).match(text)
    if m is None or not _credential_name(m.group(2)):
        return []
    value = text[m.end():].partition("\n")[0].rstrip()  # one line (a caller may pass several)
    words = value.split()
    if value in _KEEP or re.fullmatch(r"[|>][-+0-9]{0,2}", value) or \
            all(w in _KEEP or w.rstrip(".,;:!?").lower() in _NOT_VALUES for w in words):  # YAML's "|": below
        return []
    return [(m.end(), m.end() + len(value))]


def looks_like_credential(value: str) -> bool:
    """A word shaped like a generated credential: 8 characters or more of a token's alphabet
    (letters, digits, ``+/_.~-``, base64's closing ``=``), with letters and digits or both cases
    ("ZqSECRET5", "dXNlcjpwYXNz"); not "ids", "budget", "IDs", "8192", "threshold=0"."""
    value = value.rstrip(".,;:!?)]}")
    return (len(value) >= 8 and re.fullmatch(r"[A-Za-z0-9+/_.~-]+={0,2}", value) is not None
            and (any(c.isalpha() for c in value) and any(c.isdigit() for c in value)
                 or any(c.isupper() for c in value) and any(c.islower() for c in value)))


def _vocabulary_token(value: str) -> bool:
    """A quoted token of a vocabulary, not a credential: ``<|image_pad|>``, ``[CLS]``, ``▁``."""
    return (len(value) <= 2 or not value.strip() or value[0] + value[-1] in ("<>", "[]")
            or value.startswith(("▁", "Ġ", "Ċ")))


# The words that follow "password" in prose, from vLLM's and its dependencies' own messages (string
# literals of vLLM 0.24.0, 0.29.0, 0.33.0 and the packages its 0.33.0 install brings: huggingface_hub,
# transformers, openai, ray, httpx, aiohttp, …; "password must", "password prompt", "password
# encoding", "password replacement", "password interactively"), with PostgreSQL's "password
# authentication failed". After "passphrase", "passwd" and "pwd" those sources have no prose word
# at all ("pwd module", psutil's, is the one). Any other lowercase word after these four is a
# value: "passphrase swordfish", "wrong password hunter".
_PASSWORD_WORDS = ("password", "passwords", "passphrase", "passphrases", "passwd", "pwd")
_PROSE_AFTER_PASSWORD = frozenset("""
    must prompt prompts encoding replacement interactively part type value values credentials authentication
    auth protected protection required reset hash hashing policy manager field mismatch length change changes
    login based grant flow module rejected defined will too file files
""".split())


def _phrase_value_shown(kind: str, how: str, value: str, head: str = "") -> bool:
    """Whether the value a credential word's phrasing gives it stays (it is not a credential)."""
    quoted = value[:1] in "'\"`" and len(value) >= 2 and value[-1] == value[0]
    inner = value[1:-1] if quoted else value
    if inner in _KEEP or value in _KEEP or not any(c.isalnum() for c in inner):
        return True
    if kind == "loose":  # "token", "basic": ordinary words of a log
        return _vocabulary_token(inner) if quoted else not looks_like_credential(inner)
    if quoted or how == "given":
        return False
    word = inner.strip("([{<>}]).,;:!?").lower()
    if word in _NOT_VALUES:
        return True
    # "password authentication failed", "credentials verify", "FP8_PER_CHANNEL_PER_TOKEN currently":
    # without "is" or a quote, a lowercase word is prose — except after a password's words, where
    # only the prose words their messages use are (_PROSE_AFTER_PASSWORD).
    if how != "bare" or re.fullmatch(r"[a-z]+", inner.rstrip(".,;:!?")) is None:
        return False
    return head.lower() not in _PASSWORD_WORDS or word in _PROSE_AFTER_PASSWORD


def _phrase_spans(text: str) -> list[tuple[int, int]]:
    """Where the value a credential word's phrasing gives it stands, and an Authorization
    header's credential and a cookie header's value."""
    spans: list[tuple[int, int]] = []
    after = re.compile(_AFTER_WORD)
    for m in re.finditer(_CREDENTIAL_WORD, text):
        kind = next(k for k in ("env", "strong", "loose") if m.group(k) is not None)
        found = after.match(text, m.end())
        if found is None:
            continue
        how = next(k for k in ("quoted", "is", "given", "bare") if found.group(k) is not None)
        if not _phrase_value_shown(kind, how, found.group(how), m.group(kind)):
            spans.append(found.span(how))
    for pattern in (_AUTH_HEADER, _COOKIE):
        spans += [m.span(1) for m in re.finditer(pattern, text) if m.group(1).strip() not in _KEEP]
    return spans


def _masked(text: str, spans: list[tuple[int, int]]) -> str:
    """``text`` with each span (overlapping ones joined) as one ``***``."""
    out, pos = [], 0
    for start, end in sorted(spans):
        if start >= pos:
            out += [text[pos:start], MASK]
            pos = end
        elif end > pos:  # overlapping spans: the mask covers both
            pos = end
    out.append(text[pos:])
    return "".join(out)


# pydantic's error shows a long input_value cut in its middle (its first 25 characters, "...", its
# last 24: "input_value={'auth_...3cr3tV4lue9ZqAbCdEfGh'}]"), so a credential's tail can stand with
# its name cut off. In a container's value cut so, a word of the tail shaped like a credential is
# masked (a plain value is its location's, which the line state reads).
_TRUNCATED = r"input_value=(?:[A-Za-z_][\w.]{0,60})?[\[{(].{0,40}?\.\.\.(.{1,40}?), input_type="


def _truncated_spans(text: str) -> list[tuple[int, int]]:
    spans = []
    for m in re.finditer(_TRUNCATED, text):
        spans += [(m.start(1) + w.start(), m.start(1) + w.end())
                  for w in re.finditer(r"[A-Za-z0-9+/_.~=-]+", m.group(1)) if looks_like_credential(w.group())]
    return spans


def mask_secrets_in_text(text: str) -> str:
    """``text`` with every credential masked: the well-known key formats (``hf_…``, ``sk-…``,
    ``AKIA…``, ``ghp_…``, JWTs, …) anywhere; the value a credential word's phrasing gives it
    (``token 'X'``, ``the password is X``, ``Bearer X``, ``Cookie: …``); the value of every
    credential-named ``--option``, key, header or query parameter (``'api_key': [...]``,
    ``token=…``, ``&sig=…``, ``credentials={...}``). Conservative: a log line is outside text of
    unknown shape."""
    text = re.sub(_KEY_FORMATS, MASK, text)
    cut = _truncated_spans(text) if "..." in text and "input_value=" in text else []
    if not re.search(_HINT, text):
        return _masked(text, cut) if cut else text
    # Every pass reads the same text, so none hides a name or a value from another: in "token
    # 'hf_token': 'X'" the phrase masks 'hf_token' and the name still masks 'X'.
    spans = (_phrase_spans(text) + _option_spans(text) + _argv_item_spans(text) + _named_spans(text)
             + _config_line_spans(text) + _pair_spans(text) + cut)
    return _masked(text, spans) if spans else text


# --- credentials across lines: what one line's masking cannot see ----------------------------------
# Masking is per line; a credential that spans lines is followed by ``LineMasker``, fed every line
# of the log in order (the scanner's), which gives each line as it may be shown:
# * a private key's armor (_PEM_BEGIN … _PEM_END): every line from BEGIN to END (the text before
#   BEGIN and after END kept). An END at the start of a line with no BEGIN before it means the log
#   (a ``tail``, a scrollback) starts inside the block: the lines before it are masked back to the
#   last known end (``Scanner`` rewrites the lines it keeps). A block never closed masks to the end
#   of the log: a key's body has no shape to trust for where it ends (base64, "Proc-Type:",
#   "DEK-Info:", PGP's "Version:" and blank lines, a wrap of any width), and an END lost to the
#   reader's 64 KiB line limit or to a cut log would otherwise print the rest of the key; the
#   signatures still match those lines (the failure is named), only their text is not shown;
# * a credential's name alone on its line (YAML ``api_key:``, ``password: |2``, ``token:  # c``):
#   the lines below it indented deeper, or its ``- `` items, are its value;
# * a credential's bracketed value left open (``"api_key": [`` of an indented JSON, pprint's
#   wrapped ``{'api_key': ['k1',``): to its closing bracket, on lines that continue it (indented or
#   a closing bracket; any other line means the value was cut);
# * a credential option alone on its line (kubectl describe's ``Args:``, a YAML ``- --api-key``,
#   a JSON array's ``"--api-key",``): its value on the next line, every one up to the next option
#   for ``--api-key``;
# * a line of a key's base64 body alone, indented or not (``_key_body``: the log cut on both sides
#   of a block), and the base64 lines that go on it (``_key_tail``: its shorter last line, PGP's
#   checksum) — not inside a certificate's or a public key's block, which are shown;
# * pydantic's error for a credential's field: its location alone on a line
#   (``kv_transfer_config.token``: a key a config with extra='forbid' does not know), then the
#   message with ``input_value=…`` on the next: that value (a list's index after the name,
#   ``api_key.0``, and an indented location too);
# * a name/value pair over two lines (Kubernetes' ``- name: HF_TOKEN`` then ``value: …``): the value.
# A traceback's source line (after its ``  File`` line) is code: it opens no state but a private
# key's and a dict literal's (``{'api_key': [``), so ``    key = (`` does not mask the frames below.
# Each line is read once, in linear time; a line outside every state costs a substring test.

_PUBLIC_BEGIN = r"-{4,5} ?BEGIN [A-Z0-9 ]{0,40}(?:CERTIFICATE|PUBLIC KEY)"
_PEM_MARKS = rf"(?P<begin>{_PEM_BEGIN})|(?P<end>{_PEM_END})"
# YAML's block indicators take an indentation digit before or after the chomping sign ("|2",
# "|-2", ">2+"); a comment may follow ("api_key:  # from the vault").
_NAME_ALONE = (r"""([ \t]*)(-[ \t]+)?(['"]?)([\w.\-]{1,200})\3[ \t]*:[ \t]*(?:[|>](?:[1-9][-+]?|[-+][1-9]?)?)?"""
               r"""[ \t]*(?:(?<=[ \t:|>+\-0-9])#.*)?""")
_OPTION_ALONE = r"""[ \t]*(?:-[ \t]+)?(['"]?)--([A-Za-z][\w.\-]{0,200})\1,?[ \t]*"""
_OPENERS = "[{("
_PAIR_NAME = r"""[ \t]*(?:-[ \t]+)?\{?[ \t]*(['"]?)name\1[ \t]*:[ \t]*(['"]?)([\w.\-]{1,200})\2[ \t]*,?[ \t]*"""
_PAIR_VALUE = r"""[ \t]*(['"]?)value\1[ \t]*:[ \t]*"""
_LOCATION = r"[\w\-]{1,100}(?:\.[\w\-`]{1,100}){0,20}"  # pydantic's "a.b.0.c" (loc_str)
_INPUT_VALUE = r"input_value=(.*?)(?:, input_type=\w+\]?$|$)"
_OPEN_TAILS = ":|>-+,[{( \t"  # how a line that leaves a value open ends (a PEM marker has "--")


def _depth_after(text: str, start: int, depth: int) -> tuple[int, int]:
    """(where the bracket open at ``depth`` before ``start`` closes, or -1; the depth at the end
    of ``text``), quotes respected within the line."""
    quote, i, n = "", start, len(text)
    while i < n:
        ch = text[i]
        if quote:
            if ch == "\\":
                i += 1
            elif ch == quote:
                quote = ""
        elif ch in "'\"":
            quote = ch
        elif ch in _OPENERS:
            depth += 1
        elif ch in "]})":
            depth -= 1
            if depth == 0:
                return i + 1, 0
        i += 1
    return -1, depth


def _open_value(text: str, quoted: bool = False) -> int:
    """The depth a credential's bracketed value is left open at the end of ``text`` (0: none);
    ``quoted``: only a quoted name's bare bracket (a dict's literal key, ``'api_key': [``)."""
    compiled = re.compile(_NAMED_VALUE)
    pos = 0
    while (m := compiled.search(text, pos)) is not None:
        pos = m.start(3)
        if m.group(3)[-1] in _OPENERS and _credential_name(m.group(2)) \
                and (not quoted or m.group(1)[:1] in "'\"" and len(m.group(3)) == 1):  # not "'x': getattr("
            end, depth = _depth_after(text, m.end(3) - 1, 0)
            if end == -1:
                return depth
            pos = end
    return 0


def _key_body(text: str) -> bool:
    """A line of a key's base64 body (PEM's 64 columns, OpenSSH's 70, PGP's 64-76): 48 to 80
    characters of base64 with upper and lower case letters and digits."""
    return (48 <= len(text) <= 82 and re.fullmatch(r"[A-Za-z0-9+/]{48,80}={0,2}", text) is not None
            and any(c.isupper() for c in text) and any(c.islower() for c in text) and any(c.isdigit() for c in text))


def _key_tail(text: str) -> bool:
    """A line that may go on a key's base64 body (its last, shorter line; a log cut in the middle of
    one; PGP's checksum ``=ZqCk``): base64 with a digit, ``+``, ``/`` or ``=``, or 16 characters or
    more ("Traceback" is a word)."""
    return (0 < len(text) <= 82 and re.fullmatch(r"=?[A-Za-z0-9+/]+={0,2}", text) is not None
            and (len(text) >= 16 or any(c in "0123456789+/=" for c in text)))


def _indent(text: str) -> int:
    return len(text) - len(text.lstrip(" \t"))


class LineMasker:
    """``feed(line)`` per line of a log, in order: (the line as it may be shown, whether an END
    of a private key's block with no BEGIN before it was read — the lines before it were in the
    block); ``closed``: whether that line closed a block."""

    def __init__(self) -> None:
        self._kind = ""  # "", "pem", "public", "body", "yaml", "bracket", "loc", "pair", "argv"
        self._indent = 0
        self._depth = 0
        self._multi = False
        self.closed = False  # the last line fed closed a private key's block

    @property
    def open(self) -> bool:
        """Whether a credential's value goes on to the next line."""
        return bool(self._kind)

    def feed(self, text: str, source: bool = False) -> tuple[str, bool]:
        """``source``: the line is a traceback's source line (after its ``  File "…"`` line): code,
        not a value logged, so it opens no state but a private key's and a dict literal's
        (``    key = (`` would mask the frames below it)."""
        kind = self._kind
        self.closed = False
        if kind == "pem" or "--" in text:
            shown, orphan = self._pem(text)
            if shown is not None:
                return shown, orphan
        if kind == "body":  # after a line of a key's body alone: its short last line, PGP's "=ZqCk" checksum
            word = text.strip(" \t") if text[:1] in " \t" else text
            if _key_tail(word):
                return text[:_indent(text)] + MASK, False
            self._kind = kind = ""
        if kind == "public":  # a certificate's or a public key's body (base64 only): not a secret, shown
            if "END" in text or re.fullmatch(r"[A-Za-z0-9+/=]*", text.strip()):
                self._kind = "public" if "END" not in text else ""
                return text, False
            self._kind = kind = ""  # not a body line: the block was cut
        if kind == "yaml":
            stripped = text.lstrip(" \t")
            at = len(text) - len(stripped)
            if not stripped:
                return text, False
            if at > self._indent or (at == self._indent and (stripped == "-" or stripped.startswith("- "))):
                return text[:at] + MASK, False
            self._kind = ""
        elif kind == "bracket":
            at = _indent(text)
            if at or text[:1] in "]})":
                end, self._depth = _depth_after(text, at, self._depth)
                if end == -1:
                    return (text[:at] + MASK if text.strip() else text), False
                self._kind = ""
                return text[:at] + MASK + text[end:], False
            self._kind = ""
        elif kind == "loc":
            self._kind = ""
            found = re.compile(_INPUT_VALUE).search(text) if "input_value=" in text else None
            if found is not None:
                return text[:found.start(1)] + MASK + text[found.end(1):], False
        elif kind == "pair":
            self._kind = ""
            found = re.compile(_PAIR_VALUE).match(text) if "value" in text else None
            if found is not None and text[found.end():].strip() and text[found.end():].strip() not in _KEEP:
                return text[:found.end()] + MASK, False
        elif kind == "argv":
            stripped = text.strip()
            item = (stripped[2:] if stripped.startswith("- ") else stripped).strip(",").strip("'\"")
            if not stripped:
                return text, False
            # at the line's start an item is one word (one argv item a line: printf '%s\n' "$@"); a
            # line with a blank there is the log going on
            if item and not item.startswith("-") and item not in "]})" and \
                    (_indent(text) or stripped[:1] in "-'\"" or not any(c in stripped for c in " \t")):
                if not self._multi:
                    self._kind = ""
                return text[:_indent(text)] + MASK, False
            self._kind = ""
        word = text.strip(" \t") if text[:1] in " \t" else text  # indented too (a YAML "key: |" block)
        if " " not in word and _key_body(word):  # a log cut on both sides of a key: its BEGIN and END lost
            self._kind = "body"
            return text[:_indent(text)] + MASK, False
        self._open(text, source)
        return text, False

    def _pem(self, text: str) -> tuple[str | None, bool]:
        """The line with what of it is in a private key's block masked (None: no block here)."""
        inside = self._kind == "pem"
        marks = list(re.compile(_PEM_MARKS).finditer(text)) if "BEGIN" in text or "END" in text else []
        if not inside and not marks:
            return None, False
        out, pos, orphan = ([MASK] if inside else []), 0, False
        for mark in marks:
            if mark.group("begin"):
                if not inside:
                    out += [text[pos:mark.start()], MASK]
                    inside = True
            elif inside:
                inside, pos, self.closed = False, mark.end(), True
            elif not text[:mark.start()].strip():  # an END that starts its line: the block began before the log
                out, pos, orphan = [MASK], mark.end(), True
        self._kind = "pem" if inside else ""
        if inside:
            return ("".join(out) if text.strip() else text), orphan
        return "".join(out) + text[pos:], orphan

    def _open(self, text: str, source: bool = False) -> None:
        """Whether ``text`` leaves a credential's value open on the lines after it. A traceback's
        source line only by a dict's literal key (``{'api_key': ['k1',``): ``key = (`` is code."""
        tail = text.rstrip()[-1:]
        if not tail:
            return
        if source:
            if tail in _OPENERS + "," and re.search(_HINT, text) and (depth := _open_value(text, quoted=True)) > 0:
                self._kind, self._depth = "bracket", depth
            return
        if "BEGIN" in text and re.search(_PUBLIC_BEGIN, text) and "END" not in text[text.index("BEGIN"):]:
            self._kind = "public"
            return
        if (tail in ":|>-+" or tail.isdigit() or "#" in text) and ":" in text \
                and (m := re.compile(_NAME_ALONE).fullmatch(text)) is not None:
            name = m.group(4)
            if _credential_name(name):
                self._kind, self._indent = "yaml", len(m.group(1)) + len(m.group(2) or "")
                return
        if "name" in text and (m := re.compile(_PAIR_NAME).fullmatch(text)) is not None and is_secret_key(m.group(3)):
            self._kind = "pair"
            return
        word = text.lstrip(" \t")  # indented when pydantic's message is quoted inside another one
        # the credential's name is the last part but a list's index ("api_key.0")
        if " " not in word and word[:1] != "-" and re.compile(_LOCATION).fullmatch(word) and \
                is_secret_key(next((p for p in reversed(word.split(".")) if not p.isdigit()), "").strip("`")):
            self._kind = "loc"
            return
        if "--" in text and (m := re.compile(_OPTION_ALONE).fullmatch(text)) is not None:
            option = _option_of(m.group(2))
            if option:
                self._kind, self._multi = "argv", option == _MULTI_VALUED
                return
        if tail in _OPENERS + "," and re.search(_HINT, text):
            depth = _open_value(text)
            if depth > 0:
                self._kind, self._depth = "bracket", depth


class LogLine(Record):
    number: int  # 1-based line number in the log
    text: str  # the message, prefixes stripped


class Match(Record):
    signature: Signature
    line: LogLine
    count: int = 1  # how many lines had the same text


class LogGpu(Record):
    name: str
    capability: tuple[int, int]
    line: int


class LogArgs(Record):
    values: Mapping[str, object]  # dest → value, secrets masked
    unread: tuple[str, ...]  # dests whose values could not be read back
    secrets: tuple[str, ...]  # the secret strings found (to mask wherever they appear)
    line: int


class Scan(Record):
    lines: int
    matches: tuple[Match, ...]
    version: str | None = None
    version_line: int | None = None
    args: LogArgs | None = None
    gpu: LogGpu | None = None
    exceptions: tuple[LogLine, ...] = ()  # the last exception lines (root cause first-to-last)
    pointers: tuple[LogLine, ...] = ()  # vLLM's "See root cause above" lines
    errors: tuple[LogLine, ...] = ()  # the last ERROR-level lines (when no exception line is found)


def _top_level_alternatives(pattern: str) -> list[str]:
    parts, depth, start, i = [], 0, 0, 0
    while i < len(pattern):
        ch = pattern[i]
        if ch == "\\":
            i += 2
            continue
        if ch in "([":
            depth += 1
        elif ch in ")]":
            depth -= 1
        elif ch == "|" and depth == 0:
            parts.append(pattern[start:i])
            start = i + 1
        i += 1
    return [*parts, pattern[start:]]


def required_literals(pattern: str) -> tuple[str, ...]:
    """Texts one of which every match of ``pattern`` contains (one per top-level alternative;
    empty when an alternative has none of 6 characters or more). Lets the scanner skip a line
    with fast ``in`` tests instead of a regular-expression search per signature."""
    found = tuple(required_literal(part) for part in _top_level_alternatives(pattern))
    return () if any(len(lit) < 6 for lit in found) else found


def required_literal(pattern: str) -> str:
    """The longest text every match of ``pattern`` (without top-level ``|``) must contain."""
    pieces: list[str] = []
    current: list[str] = []
    depth, i, n = 0, 0, len(pattern)

    def end() -> None:
        if current:
            pieces.append("".join(current))
            current.clear()

    while i < n:
        ch = pattern[i]
        nxt = pattern[i + 1] if i + 1 < n else ""
        if ch == "\\":
            if nxt and not nxt.isalnum():  # an escaped punctuation character is itself
                literal, i = nxt, i + 2
            else:  # \d \w \S \b …
                end()
                i += 2
                continue
        elif ch == "|" and depth == 0:
            return ""  # required_literals splits these first
        elif ch in "([":
            end()
            depth += 1
            i += 1
            continue
        elif ch in ")]":
            depth -= 1
            i += 1
            continue
        elif ch in ".^$":
            end()
            i += 1
            continue
        elif ch in "?*+{":
            if ch != "+" and current:
                current.pop()  # the character before it may be absent
            end()
            i += 1
            continue
        else:
            literal, i = ch, i + 1
        if depth == 0:
            if i < n and pattern[i] in "?*{" and not (pattern[i] == "{" and pattern[i + 1: i + 2] != "0"):
                end()  # an optional character ends the piece (and is not in it)
                continue
            current.append(literal)
        else:
            end()
    end()
    return max(pieces, key=len, default="")


class Scanner:
    """Feeds on log lines, keeps a bounded window: ``feed(text, level)`` per line, ``result()``."""

    def __init__(self, signatures: Iterable[Signature] = SIGNATURES, window: int = 64) -> None:
        self.signatures = tuple(signatures)
        self._compiled = [(s, re.compile(s.pattern), re.compile(s.context) if s.context else None)
                          for s in self.signatures]
        # One fast substring test per signature gates its regular expression (a line of a long
        # log is mostly none of these).
        self._literals = [(i, lit) for i, s in enumerate(self.signatures) for lit in required_literals(s.pattern)]
        self._always = [i for i, s in enumerate(self.signatures) if not required_literals(s.pattern)]
        self._window: deque[str] = deque(maxlen=max(window, max((s.context_lines for s in self.signatures),
                                                                default=0) + 1))
        self._matches: dict[tuple[int, str], Match] = {}
        self._order: list[tuple[int, str]] = []
        self._exceptions: deque[LogLine] = deque(maxlen=8)
        self._pointers: deque[LogLine] = deque(maxlen=2)
        self._errors: deque[LogLine] = deque(maxlen=ROOT_CAUSE_LINES)
        self.count = 0
        self._masker = LineMasker()  # the lines kept are kept as they may be shown (credentials across lines)
        self._outside = 0  # the last line known to be outside a private key's block
        self._after_frame = False
        self.version: str | None = None
        self.version_line: int | None = None
        self.args: LogArgs | None = None
        self.gpu: LogGpu | None = None
        self._version_res = [re.compile(p) for p in _VERSION_PATTERNS]
        self._gpu_res = [re.compile(p) for p in _GPU_PATTERNS]
        self._exception_re = re.compile(_EXCEPTION)
        self._argparse_re = re.compile(_ARGPARSE_ERROR)
        self._pointer_re = re.compile(_POINTER)
        self._args_re = re.compile(_ARGS)

    def feed(self, text: str, level: str | None = None) -> None:
        self.count += 1
        number = self.count
        shown = text
        source = self._after_frame and text.startswith("    ")  # a traceback's source line
        # else no state can start or go on (pydantic's location line has no blank; "- name: HF_TOKEN")
        if self._masker.open or "--" in text or text[-1:] in _OPEN_TAILS or " " not in text or "name" in text \
                or "#" in text or (text[-1:].isdigit() and text[-2:-1] in "|>-+") \
                or (text[:1] in " \t" and " " not in text.lstrip(" \t")):  # YAML's "|2", "key:  # c"; indented
            shown, orphan = self._masker.feed(text, source)
            if orphan:  # the log began inside a private key's block: what was kept of it is masked
                self._mask_kept(self._outside, number)
            if orphan or self._masker.closed:
                self._outside = number
        self._window.append(text)
        # a traceback's source line, or dsv4-launch's own line quoting vLLM's message: not vLLM failing
        code = source or text.startswith(("dsv4-serve: ", "dsv4-launch"))
        self._after_frame = text.startswith('  File "')
        hits = [] if code else [i for i, lit in self._literals if lit in text]
        if hits or (self._always and not code):
            self._match(number, text, hits + self._always, shown)
        if "version" in text or "engine (v" in text:
            self._read_version(number, text)
        if "non-default args:" in text:
            found = self._args_re.search(text)
            if found:
                self.args = parse_args_text(found.group(1), number)
        if "(SM " in text or "cuda capability" in text:
            self._read_gpu(number, text)
        line = None
        if self._exception_re.match(text) or self._argparse_re.match(text):
            line = LogLine(number, shown)
            if self._pointer_re.search(text):
                self._pointers.append(line)
            else:
                self._exceptions.append(line)
        elif level in ("ERROR", "CRITICAL"):
            line = LogLine(number, shown)
            if self._pointer_re.search(text):
                self._pointers.append(line)
            else:
                self._errors.append(line)

    def _mask_kept(self, after: int, before: int) -> None:
        """The lines kept whose numbers are between ``after`` and ``before`` (exclusive) as ``***``."""
        def masked(line: LogLine) -> LogLine:
            return line._replace(text=MASK) if after < line.number < before else line

        for key, match in self._matches.items():
            self._matches[key] = match._replace(line=masked(match.line))
        for kept in (self._exceptions, self._pointers, self._errors):
            lines = [masked(line) for line in kept]
            kept.clear()
            kept.extend(lines)

    def _match(self, number: int, text: str, indexes: list[int], shown: str | None = None) -> None:
        for index in sorted(set(indexes)):
            sig, pattern, context = self._compiled[index]
            if not pattern.search(text):
                continue
            if context is not None:
                recent = list(self._window)[-(sig.context_lines + 1):]
                if not any(context.search(line) for line in recent):
                    continue
            key = (index, text)
            if key in self._matches:
                self._matches[key] = self._matches[key]._replace(count=self._matches[key].count + 1)
            elif len(self._order) < MAX_MATCHES:
                self._matches[key] = Match(sig, LogLine(number, text if shown is None else shown))
                self._order.append(key)

    def _read_version(self, number: int, text: str) -> None:
        for pattern in self._version_res:
            found = pattern.search(text)
            if found and re.fullmatch(_VERSION_TEXT, found.group(1).rstrip(",")):
                self.version, self.version_line = found.group(1).rstrip(","), number
                return

    def _read_gpu(self, number: int, text: str) -> None:
        for pattern in self._gpu_res:
            found = pattern.search(text)
            if found:
                self.gpu = LogGpu(found.group(1).strip(), (int(found.group(2)), int(found.group(3))), number)
                return

    def result(self) -> Scan:
        return Scan(
            lines=self.count, matches=tuple(self._matches[k] for k in self._order), version=self.version,
            version_line=self.version_line, args=self.args, gpu=self.gpu,
            exceptions=tuple(self._exceptions)[-ROOT_CAUSE_LINES:], pointers=tuple(self._pointers),
            errors=tuple(self._errors),
        )


def scan_lines(lines: Iterable[tuple[str, str | None]]) -> Scan:
    scanner = Scanner()
    for text, level in lines:
        scanner.feed(text, level)
    return scanner.result()


# --- "non-default args: {...}": a Python dict repr, read without evaluating anything -----------

class _Unreadable(Exception):
    pass


# <AttentionBackendEnum.FLASHMLA_SPARSE: 'vllm.v1.…FlashMLASparseBackend'>: what the command line
# takes is the member's name where the value is a class path (AttentionConfig.backend is looked up
# by name), else the value ('sparse' for SparseCacheRole.SPARSE).
_ENUM_REPR = r"<([A-Za-z_][\w.]*): ('(?:[^'\\]|\\.)*'|-?\d+)>"
_OBJECT_REPR = r"<[^<>]{0,400}>"  # <function f at 0x…>, <object …>


def _split_top_level(text: str) -> tuple[list[tuple[str, str]], bool]:
    """The ``'key': value`` items of a dict repr, split at top-level commas (quotes and brackets
    respected): ([(key text, value text)], complete). Linear in ``text``."""
    items: list[tuple[str, str]] = []
    if not text.startswith("{"):
        return items, False
    depth, quote, start, i, n = 0, None, 1, 0, len(text)
    complete = False
    while i < n:
        ch = text[i]
        if quote:
            if ch == "\\":
                i += 2
                continue
            if ch == quote:
                quote = None
        elif ch in "'\"":
            quote = ch
        elif ch in "{[(":
            depth += 1
        elif ch in "}])":
            depth -= 1
            if depth == 0:
                items.append(_item(text[start:i]))
                complete = True
                break
        elif ch == "," and depth == 1:
            items.append(_item(text[start:i]))
            start = i + 1
        i += 1
    return [it for it in items if it[0]], complete


def _item(text: str) -> tuple[str, str]:
    key, sep, value = text.strip().partition(": ")
    if not sep:
        return "", ""
    try:
        parsed = ast.literal_eval(key)
    except (ValueError, SyntaxError, MemoryError, RecursionError, TypeError):
        return "", ""
    return (parsed, value.strip()) if isinstance(parsed, str) else ("", "")


def _value(node):
    if isinstance(node, ast.Constant):
        if node.value is Ellipsis:
            raise _Unreadable
        return node.value
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub) and isinstance(node.operand, ast.Constant) \
            and isinstance(node.operand.value, (int, float)):
        return -node.operand.value
    if isinstance(node, (ast.List, ast.Tuple, ast.Set)):
        return [_value(e) for e in node.elts]
    if isinstance(node, ast.Dict):
        out = {}
        for k, v in zip(node.keys, node.values):
            if not isinstance(k, ast.Constant) or not isinstance(k.value, (str, int, float, bool)):
                raise _Unreadable
            out[k.value] = _value(v)
        return out
    if isinstance(node, ast.Call) and not node.args and isinstance(node.func, (ast.Name, ast.Attribute)):
        # A config dataclass repr (AttentionConfig(backend=None, use_fp4_indexer_cache=True, …)):
        # its fields as a dict, without the unset (None) and unreadable ones.
        out = {}
        for kw in node.keywords:
            if kw.arg is None:
                raise _Unreadable
            try:
                value = _value(kw.value)
            except _Unreadable:
                continue
            if value is not None:
                out[kw.arg] = value
        return out
    raise _Unreadable


def _enum_text(m: re.Match) -> str:
    value = m.group(2)
    if value.startswith("'") and ("." in value or "/" in value):
        return repr(m.group(1).rsplit(".", 1)[-1])
    return value


def _read_value(text: str):
    text = re.sub(_ENUM_REPR, _enum_text, text)
    text = re.sub(_OBJECT_REPR, "...", text)
    try:
        tree = ast.parse(text, mode="eval")
    except (SyntaxError, ValueError, MemoryError, RecursionError):
        raise _Unreadable from None
    try:
        return _value(tree.body)
    except RecursionError:
        raise _Unreadable from None


def _mask_nested(value, secrets: list[str]):
    if isinstance(value, dict):
        out = {}
        for k, v in value.items():
            if isinstance(k, str) and is_secret_key(k) and not isinstance(v, bool) and v is not None:
                _collect(v, secrets)
                out[k] = MASK
            else:
                out[k] = _mask_nested(v, secrets)
        return out
    if isinstance(value, list):
        return [_mask_nested(v, secrets) for v in value]
    return value


def _collect(value, secrets: list[str]) -> None:
    if isinstance(value, str):
        if value and value != MASK:
            secrets.append(value)
    elif isinstance(value, list):
        for v in value:
            _collect(v, secrets)
    elif isinstance(value, dict):
        for v in value.values():
            _collect(v, secrets)


def parse_args_text(text: str, line: int) -> LogArgs:
    """vLLM's ``non-default args`` dict, read item by item with ``ast`` (never evaluated):
    literals, lists, dicts and config dataclass reprs are read; anything else is listed as
    unread. Secret values are replaced by ``***`` and returned apart, to be masked anywhere."""
    items, _complete = _split_top_level(text[:ARGS_TEXT_LIMIT])
    values: dict[str, object] = {}
    unread: list[str] = []
    secrets: list[str] = []
    for key, value_text in items:
        secret = key in SECRET_VALUE_DESTS or is_secret_key(key)
        try:
            value = _read_value(value_text)
        except _Unreadable:
            if secret:
                secrets.extend(re.findall(r"'((?:[^'\\]|\\.)+)'", value_text))
                values[key] = MASK
            else:
                unread.append(key)
            continue
        if secret and not isinstance(value, bool) and value is not None:
            _collect(value, secrets)
            values[key] = [MASK] if isinstance(value, list) else MASK
        else:
            values[key] = _mask_nested(value, secrets)
    return LogArgs(values=values, unread=tuple(unread), secrets=tuple(s for s in secrets if s != MASK), line=line)

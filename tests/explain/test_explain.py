"""`dsv4-launch explain`: vLLM's log in, the known failure, its fix and the corrected command out.

The log excerpts are written the way vLLM 0.24–0.33 print them (vllm/logger.py's format,
logging_utils/formatter.py's continuation lines, utils/system_utils.py's process prefixes),
with the exception texts of the raising lines each signature cites. Nothing is faked: the
pipeline that plans the logged arguments is the real one (GPUs: as the log names them, else
unknown — never this machine's NVML).
"""

from __future__ import annotations

import io
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from dsv4_launch.adapters.log_reader import LINE_LIMIT, clean, read_lines
from dsv4_launch.commands.context import Context
from dsv4_launch.commands.explain import run_explain
from dsv4_launch.core.explain.scanner import Scanner, parse_args_text
from dsv4_launch.core.explain.signatures import KV_AUTO, NO_SIGNATURE, SIGNATURES
from dsv4_launch.core.rules.engine import FAIL, REFUSE
from dsv4_launch.core.rules.plan import RULES
from dsv4_launch.core.rules.registry import DOCTOR_RULES

FIXTURES = Path(__file__).parents[1] / "fixtures" / "logs"
UPSTREAM = FIXTURES / "vllm-47174-journald-0.24.0.log"
ROWS = {r.id: r for r in (*RULES, *DOCTOR_RULES)}
VLLM_SRC = Path(os.environ.get("DSV4_VLLM_SRC", "/work/vllm-src"))
ALL_RELEASES = ["0.24.0", "0.25.0", "0.25.1", "0.26.0", "0.27.0", "0.27.1", "0.28.0", "0.29.0", "0.30.0", "0.31.0",
                "0.32.0", "0.33.0"]


def vllm_lines(messages, *, proc="EngineCore_DP0", pid=4242, level="ERROR", where="v1/engine/core.py:1231"):
    """Lines as vLLM's logger writes them: every line of one record carries the header."""
    return [f"({proc} pid={pid}) {level} 12-01 08:00:00 [{where}] {m}" for m in messages]


def version_line(version: str) -> str:
    return vllm_lines([f"vLLM server version {version}, serving model deepseek-ai/DeepSeek-V4-Flash"],
                      proc="APIServer", pid=1, level="INFO", where="entrypoints/.../utils/api_utils.py:339")[0]


def args_line(args: str) -> str:
    return vllm_lines([f"non-default args: {args}"], proc="APIServer", pid=1, level="INFO",
                      where="entrypoints/.../utils/api_utils.py:273")[0]


def traceback(frames, last):
    out = ["EngineCore failed to start.", "Traceback (most recent call last):"]
    for path, line, func, code in frames:
        out += [f'  File "/usr/local/lib/python3.12/dist-packages/vllm/{path}", line {line}, in {func}', f"    {code}"]
    return out + (last if isinstance(last, list) else [last])


def explain(tmp_path, lines, *, as_json=True, env=None, name="vllm.log"):
    path = tmp_path / name
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    out, err = io.StringIO(), io.StringIO()
    status = run_explain([str(path)], as_json=as_json, ctx=Context(env=env or {}, stdout=out, stderr=err))
    return status, (json.loads(out.getvalue()) if as_json else out.getvalue()), err.getvalue()


# One realistic excerpt per signature and release family: (rule, vLLM release, the lines).
_FP8 = "DeepseekV4 fp8_ds_mla layout only supports fp8 kv-cache, got"
_PLEASE = "Please set `--kv-cache-dtype fp8` or select a backend that supports bfloat16 KV cache."
_ATT = ("models/deepseek_v4/attention.py", 79, "_resolve_dsv4_kv_cache_dtype",
        'assert kv_cache_dtype.startswith("fp8"), (')
_PHASE1 = "/workspace/.deps/flashmla-src/csrc/sm90/prefill/sparse/instantiations/../phase1.cuh:614"
_TMA_ASSERT = "Assertion `res == CUresult::CUDA_SUCCESS`"

CASES = [
    (KV_AUTO, "0.24.0", traceback([_ATT], f"AssertionError: {_FP8} auto")),
    (KV_AUTO, "0.29.0", traceback([_ATT], f"AssertionError: {_FP8} auto")),
    ("kv-not-fp8", "0.27.1", traceback([_ATT], f"AssertionError: {_FP8} bfloat16")),
    ("kv-not-fp8", "0.33.0", traceback([], f"ValueError: {_FP8} float16. {_PLEASE}")),
    ("kv-invalid", "0.24.0", ["usage: vllm serve [model_tag] [options]",
                              "vllm serve: error: argument --kv-cache-dtype: invalid choice: 'fp9' (choose from auto, "
                              "bfloat16, float16, fp8, fp8_e4m3, fp8_e5m2, fp8_inc, fp8_ds_mla)"]),
    ("kv-invalid", "0.33.0", ["pydantic_core._pydantic_core.ValidationError: 1 validation error for CacheConfig",
                              "cache_dtype", "  Value error, Invalid kv_cache_dtype: 'fp9'. Valid values are: ['auto', "
                              "'bfloat16', 'fp8'] [type=value_error, input_value='fp9', input_type=str]"]),
    ("nvfp4-on-mla", "0.24.0", ["pydantic_core._pydantic_core.ValidationError: 1 validation error for VllmConfig",
                                "  Value error, nvfp4 KV cache is not supported with MLA (Multi-head Latent Attention) "
                                "backends. Please use a different --kv-cache-dtype (e.g., 'fp8' or 'auto') for MLA "
                                "models such as DeepSeek. [type=value_error, input_value=ArgsKwargs((), {}), "
                                "input_type=ArgsKwargs]"]),
    ("v41-kv", "0.30.0", traceback([("models/deepseek_v41/attention.py", 141, "_resolve_dsv41_kv_cache_dtype",
                                     "raise ValueError(")], f"ValueError: {_FP8} bfloat16. {_PLEASE}")),
    ("v41-kv", "0.33.0",
     traceback([], "ValueError: DeepseekV4 packed KV layouts only support fp8 kv-cache, got float16. "
                                   + _PLEASE)),
    ("backend-not-dsv4", "0.24.0", traceback([("models/deepseek_v4/nvidia/model.py", 752, "_select_dsv4_attn_cls",
                                               "raise ValueError(")],
                                             "ValueError: FLASHINFER_MLA_SPARSE is not a DeepSeek V4 attention "
                                             "backend. Use FLASHINFER_MLA_SPARSE_DSV4 for DeepSeek V4 FlashInfer "
                                             "sparse MLA.")),
    ("backend-not-dsv4", "0.33.0",
     traceback([], "ValueError: FLASHINFER_MLA_SPARSE_SM120 is not a DeepSeek V4 attention "
                                             "backend. Use FLASHINFER_MLA_SPARSE_DSV4 for DeepSeek V4 FlashInfer "
                                             "sparse MLA.")),
    ("backend-not-dsv4", "0.31.0", traceback([], "ValueError: FLASHINFER_MLA_SPARSE is not a DeepSeek V4.1 attention "
                                             "backend. Use FLASHINFER_MLA_SPARSE_DSV41 for DeepSeek V4.1 FlashInfer "
                                             "sparse MLA.")),
    ("v41-ds-mla-on-plain-rows", "0.33.0", traceback([], "ValueError: fp8_ds_mla is a packed FlashMLA DeepSeek V4.1 KV "
                                                     "cache format; the selected backend stores plain KV rows.")),
    ("indexer-dtype-unsupported", "0.33.0", traceback([], "ValueError: indexer_kv_dtype='bf16' is not supported by the "
                                                      "DeepSeek sparse indexer (expected one of ('fp8', 'mxfp4')).")),
    ("dspark-v2-unsupported", "0.30.0", ["pydantic_core._pydantic_core.ValidationError: 1 validation error for "
                                         "VllmConfig", "  Value error, Model Runner V1 does not support: dspark "
                                         "speculative decoding [type=value_error]"]),
    ("pp-layer-partition-invalid", "0.33.0", traceback([("distributed/utils.py", 223, "get_pp_indices",
                                                          'raise ValueError(f"{sum(partitions)=} does not match '
                                                          '{num_hidden_layers=}.")')],
                                                        "ValueError: sum(partitions)=42 does not match "
                                                        "num_hidden_layers=43.")),
    ("pp-layer-partition-invalid", "0.24.0", traceback([], "ValueError: Invalid partition string: ")),
    ("pp-layer-partition-invalid", "0.34.0", traceback([("distributed/utils.py", 238, "get_pp_indices",
                                                          'raise ValueError(f"Negative layer count in '
                                                          '{partition_list_str=}.")')],
                                                        "ValueError: Negative layer count in "
                                                        "partition_list_str='44,-1'.")),
    ("mega-moe-needs-ep", "0.24.0", traceback([], "NotImplementedError: DeepSeek V4 MegaMoE currently requires expert "
                                              "parallel. Enable it with --enable-expert-parallel, or pick a different "
                                              "moe backend.")),
    ("mega-moe-fp4", "0.26.0", traceback([], "NotImplementedError: DeepSeek V4 MegaMoE only supports fp4 experts; got "
                                         "expert_dtype='fp8'. Drop --kernel-config moe_backend=deep_gemm_mega_moe for "
                                         "this checkpoint.")),
    ("mega-moe-not-sm100", "0.24.0", traceback([("models/deepseek_v4/nvidia/model.py", 301, "_check_runtime_supported",
                                                 'raise NotImplementedError("DeepGEMM MegaMoE requires SM100 GPUs.")')],
                                               "NotImplementedError: DeepGEMM MegaMoE requires SM100 GPUs.")),
    ("mega-moe-not-sm100", "0.33.0", traceback([], "NotImplementedError: DeepGEMM MegaMoE requires SM100 GPUs.")),
    ("fp4-indexer-off-sm10", "0.24.0",
     traceback([], "AssertionError: use_fp4_indexer_cache requires Blackwell datacenter "
                                                 "GPUs (sm_10x, e.g. B200/GB200); sm_120 (consumer Blackwell) and "
                                                 "earlier architectures are not supported.")),
    ("mxfp4-indexer-off-sm10", "0.33.0", traceback([], "ValueError: indexer_kv_dtype='mxfp4' requires Blackwell "
                                                   "datacenter GPUs (sm_10x, e.g. B200/GB200).")),
    ("fp4-indexer-removed", "0.33.0", ["usage: vllm serve [model_tag] [options]",
                                       "vllm serve: error: argument --attention-config/-ac: 1 validation error for "
                                       "AttentionConfig", "use_fp4_indexer_cache",
                                       "  Unexpected keyword argument [type=unexpected_keyword_argument, "
                                       "input_value=True, input_type=bool]"]),
    ("tp-heads", "0.24.0", ["pydantic_core._pydantic_core.ValidationError: 1 validation error for VllmConfig",
                            "  Value error, Total number of attention heads (64) must be divisible by tensor parallel "
                            "size (3). [type=value_error, input_value=ArgsKwargs((), {}), input_type=ArgsKwargs]"]),
    ("tp-o-groups", "0.24.0", traceback([("model_executor/layers/quantization/utils/fp8_utils.py", 1120,
                                          "deepgemm_post_process_fp8_weight_block", "r = wq.size(0) // g")],
                                        "ZeroDivisionError: integer division or modulo by zero")),
    ("tp-o-groups", "0.33.0", traceback([("models/deepseek_v4/nvidia/flashmla.py", 69, "_o_proj",
                                          "heads_per_group=self.n_local_heads // self.n_local_groups,")],
                                        "ZeroDivisionError: integer division or modulo by zero")),
    ("tp-o-groups", "0.34.0", traceback([("models/deepseek_v4/common/grouped_wo_a.py", 26, "__init__",
                                          "self.n_local_groups = divide(n_groups, self.tp_size)"),
                                         ("distributed/utils.py", 54, "ensure_divisibility",
                                          "assert numerator % denominator == 0, (")],
                                        "AssertionError: 8 is not divisible by 16")),
    ("tp-pp-gpus", "0.29.0", ["pydantic_core._pydantic_core.ValidationError: 1 validation error for ParallelConfig",
                              "  Value error, World size (16) is larger than the number of available GPUs (8) in this "
                              "node. If this is intentional and you are using:", "- ray, set "
                              "'--distributed-executor-backend ray'."]),
    ("block-size", "0.24.0", traceback([], "ValueError: No common block size for 64. ")),
    ("block-size", "0.33.0", traceback([], "ValueError: No common block size for 64 (FLASHMLA_SPARSE_DSV4: [256]).")),
    ("block-size-v41", "0.33.0",
     traceback([], "ValueError: No common block size for 64 (FLASHMLA_SPARSE_DSV41: [128]).")),
    ("dspark-before-0.25", "0.24.0", ["pydantic_core._pydantic_core.ValidationError: 1 validation error for "
                                      "SpeculativeConfig", "method", "  Input should be 'ngram', 'medusa', "
                                      "'mlp_speculator', 'draft_model', 'suffix', 'eagle', 'eagle3' or 'mtp' "
                                      "[type=literal_error, input_value='dspark', input_type=str]"]),
    ("dspark-without-module", "0.25.0", traceback([("models/deepseek_v4/nvidia/dspark.py", 67, "__init__",
                                                    "self.target_layer_ids = tuple(config.dspark_target_layer_ids)")],
                                                  "AttributeError: 'DeepseekV4Config' object has no attribute "
                                                  "'dspark_target_layer_ids'")),
    ("dspark-pp", "0.29.0", traceback([], "NotImplementedError: DSpark does not support pipeline parallelism.")),
    ("v41-pcp-not-flashmla", "0.33.0", traceback([], "NotImplementedError: DeepSeek-V4.1 PCP requires FlashMLA sparse "
                                                 "attention.")),
    ("dspark-k-below-block", "0.27.0", ["pydantic_core._pydantic_core.ValidationError: 1 validation error for "
                                        "SpeculativeConfig", "  Value error, DSpark requires num_speculative_tokens >= "
                                        "dspark_block_size (5); got 3. Smaller values produce incorrect output. Use "
                                        "num_speculative_tokens=5 or larger (e.g. 7). [type=value_error]"]),
    ("dspark-v1-runner", "0.29.0", ["pydantic_core._pydantic_core.ValidationError: 1 validation error for VllmConfig",
                                    "  Value error, Model Runner V1 does not support: dspark speculative decoding "
                                    "[type=value_error]"]),
    ("vision-before-0.30", "0.29.0",
     traceback([], "ValueError: There is no module or parameter named 'vision_model' in "
                                               "DeepseekV4ForCausalLM. The available parameters belonging to  "
                                               "(DeepseekV4ForCausalLM) are: {'lm_head.weight'}")),
    ("hma-disabled", "0.31.0", traceback([("v1/core/kv_cache_utils.py", 1887, "_promote_local_kv_cache_specs",
                                           "promoted_specs[layer_name] = replace_as(")],
                                         "TypeError: MLAAttentionSpec.__init__() got an unexpected keyword argument "
                                         "'bounded_replay'")),
    ("connector-turns-hma-off", "0.33.0", traceback([], "TypeError: MLAAttentionSpec.__init__() got an unexpected "
                                                    "keyword argument 'bounded_replay'")),
    ("connector-hma-forced", "0.24.0",
     traceback([], "ValueError: Connector LMCacheConnectorV1 does not support HMA but "
                                                 "HMA is enabled. Please set `--disable-hybrid-kv-cache-manager`.")),
    ("weights-exceed-memory", "0.24.0", traceback([], "ValueError: No available memory for the cache blocks. Try "
                                                  "increasing `gpu_memory_utilization` when initializing the engine.")),
    ("weights-exceed-memory", "0.33.0",
     traceback([("model_executor/model_loader/default_loader.py", 300, "load_weights",
                                                    "loaded_weights = model.load_weights(")],
                                                  "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 "
                                                  "GiB. GPU 0 has a total capacity of 95.59 GiB of which 1.12 GiB is "
                                                  "free.")),
    # the wording before 0.24 (the field corpus's opea-project/GenAIExamples#1762)
    ("max-model-len-too-long", "0.9.2", traceback([], "ValueError: The model's max seq len (131072) is larger than the "
                                                  "maximum number of tokens that can be stored in KV cache (21840). "
                                                  "Try increasing `gpu_memory_utilization` or decreasing "
                                                  "`max_model_len` when initializing the engine.")),
    ("max-model-len-too-long", "0.24.0", traceback([], "ValueError: To serve at least one request with the model's max "
                                                   "seq len (1048576), (9.81 GiB KV cache is needed, which is larger "
                                                   "than the available KV cache memory (6.15 GiB). Based on the "
                                                   "available memory, the estimated maximum model length is 61214. Try "
                                                   "increasing `gpu_memory_utilization` or decreasing `max_model_len` "
                                                   "when initializing the engine.")),
    ("shards-missing", "0.33.0", traceback([], "ValueError: Following weights were not initialized from checkpoint: "
                                           "{'model.layers.42.ffn.experts.255.w1.weight'}")),
    ("flashinfer-sm120-api", "0.24.0", traceback([], "RuntimeError: FLASHINFER_MLA_SPARSE_DSV4 on SM120 requires "
                                                 "FlashInfer's sparse MLA decode API.")),
    ("flashinfer-missing", "0.27.0", traceback([], "RuntimeError: FLASHINFER_MLA_SPARSE_DSV4 on SM120 requires "
                                               "FlashInfer's sparse MLA decode API.")),
    ("flashinfer-sm120-shape", "0.33.0", traceback([], "RuntimeError: FLASHINFER_MLA_SPARSE_DSV4 on SM120 requires a "
                                                   "FlashInfer DSV4 sparse MLA decode specialization for "
                                                   "(num_q_heads=64, top_k=192). Install a FlashInfer build containing "
                                                   "flashinfer-ai/flashinfer#4380.")),
    ("sm12-0.24-deepgemm", "0.24.0", traceback([], "RuntimeError: Assertion error (/workspace/DeepGEMM/csrc/utils/"
                                               "layout.hpp:76): Unknown recipe")),
    ("sm12-0.27", "0.27.1", traceback([], "RuntimeError: Assertion error (/workspace/DeepGEMM/csrc/utils/layout.hpp:"
                                      "102): Unknown SF transformation")),
    # Failures no rule row decides (the signature's own words), in the words of the field corpus's threads.
    ("deepgemm-not-for-this-gpu", "0.24.0",
     traceback([], "RuntimeError: Assertion error (/workspace/.deps/deepgemm-src/"
                                                      "csrc/apis/hyperconnection.hpp:56): Unsupported architecture")),
    ("deepgemm-not-for-this-gpu", "0.28.0",
     traceback([], "RuntimeError: CUDA driver error (.../jit/handle.hpp:141): 200 "
                                                      "(CUDA_ERROR_INVALID_IMAGE, device kernel image is invalid)")),
    ("deepgemm-not-for-this-gpu", "0.28.0", traceback([], "RuntimeError: Assertion error (csrc/apis/layout.hpp:49): "
                                                      "not disable_ue8m0_cast")),
    ("flashinfer-sm120-no-kernel", "0.25.0", [
        "    TVM_FFI_ICHECK_GT(num_tokens, 64)", "tvm.error.InternalError: Check failed: num_tokens > 64 (7 vs. 64) : "
        "Decode (num_tokens <= 64) must go through sparse_mla_sm120_decode_dsv3_2 or sparse_mla_sm120_decode_dsv4; "
        "got num_tokens=7"]),
    ("flashinfer-sm120-no-kernel", "0.26.0", ["tvm.error.InternalError: Check failed: (ok) is false: Unsupported "
                                              "sparse-MLA prefill configuration:", "  model=DSV4 num_heads=32 topk=256 "
                                              "page_block_size=64 topk_extra=0 extra_page_block_size=0"]),
    ("flashinfer-sm120-no-kernel", "0.29.0", traceback([], "ValueError: SM120 sparse-MLA has no decode kernel for this "
                                                       "shape: num_tokens=16, num_heads=64, topk=1152")),
    ("dspark-kv-shape", "0.24.0", ["RuntimeError: Worker failed with error 'kv must have shape (num_blocks, "
                                   "page_block_size, h_kv, bytes_per_token)', please check the stack trace above for "
                                   "the root cause"]),
    ("dspark-no-d2t", "0.26.0", traceback([("v1/worker/gpu/spec_decode/dspark/speculator.py", 86, "load_draft_model",
                                            "if self.draft_logits is not None and model.draft_id_to_target_id is not "
                                            "None:")],
                                          "AttributeError: 'DSparkDeepseekV4ForCausalLM' object has no attribute "
                                          "'draft_id_to_target_id'")),
    ("tp-fp8-block", "0.29.0", traceback([], "ValueError: Weight input_size_per_partition = 192 is not divisible by "
                                         "weight quantization block_k = 128.")),
    ("gpu-memory-not-free", "0.33.0",
     traceback([], "ValueError: Free memory on device cuda:0 (22.76/24.0 GiB) on startup "
                                                "is less than desired GPU memory utilization (0.97, 23.28 GiB). "
                                                "Decrease GPU memory utilization or reduce GPU memory used by other "
                                                "processes.")),
    ("cuda-oom", "0.29.0",
     traceback([], "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 1024.00 MiB. GPU 0 "
                                     "has a total capacity of 95.07 GiB of which 298.69 MiB is free.")),
    ("hybrid-kv-forced", "0.33.0", traceback([("config/vllm.py", 2285, "__post_init__", "raise ValueError(")],
                                             "ValueError: Hybrid KV cache manager was explicitly enabled but is not "
                                             "supported in this configuration. Consider omitting the "
                                             "--enable-hybrid-kv-cache-manager flag to let vLLM decide "
                                             "automatically.")),
    ("v2-runner-unsupported", "0.33.0", traceback([], "ValueError: Model Runner V2 does not yet support: "
                                                  "kv_sharing_fast_prefill")),
    ("dspark-pp", "0.27.1",
     ["non-default args: {'model': 'deepseek-ai/DeepSeek-V4-Flash-0731', 'pipeline_parallel_size': "
                             "3, 'speculative_config': {'method': 'dspark', 'num_speculative_tokens': 5}}",
                             *traceback([], "ValueError: Pipeline parallelism is not supported for this model. "
                                            "Supported models implement the `SupportsPP` interface.")]),
    ("mega-moe-routing", "0.29.0", traceback([], "NotImplementedError: DeepSeek V4 MegaMoE currently supports "
                                             "sqrtsoftplus routing only.")),
    ("mega-moe-routing", "0.33.0", traceback([], "NotImplementedError: DeepSeek V4 MegaMoE requires normalized top-k "
                                             "probabilities.")),
    ("memory-changed-while-profiling", "0.29.0",
     traceback([], "AssertionError: Error in memory profiling. Initial free "
                                                           "memory 70.1 GiB, current free memory 75.3 GiB. This "
                                                           "happens when other processes sharing the same container "
                                                           "release GPU memory while vLLM is profiling during "
                                                           "initialization.")),
    ("deep-gemm-env-not-int", "0.24.0", traceback([("envs.py", 1434, "<lambda>", "\"VLLM_USE_DEEP_GEMM\": lambda: "
                                                    "bool(int(os.getenv(\"VLLM_USE_DEEP_GEMM\", \"1\"))),")],
                                                  "ValueError: invalid literal for int() with base 10: 'true'")),
    ("v2-runner-env-not-int", "0.33.0",
     traceback([("envs.py", 2150, "<lambda>", "os.getenv(\"VLLM_USE_V2_MODEL_RUNNER\", "
                                                    "None)"), ("envs.py", 233, "maybe_convert_bool",
                                                               "return bool(int(value))")],
                                                  "ValueError: invalid literal for int() with base 10: 'yes'")),
    ("v1-runner-removed", "0.34.0", ["ValueError: VLLM_USE_V2_MODEL_RUNNER=0 is no longer supported: Model Runner V1 "
                                     "has been removed. Unset this variable."]),
    ("vllm-too-old-for-dsv4", "0.19.1", ["KeyError: 'invalid tool call parser: deepseek_v4 (chose from { deepseek_v3, "
                                         "hermes })'"]),
    ("vllm-too-old-for-dsv4", "0.19.1",
     ["ValueError: The checkpoint you are trying to load has model type `deepseek_v4` "
                                         "but Transformers does not recognize this architecture."]),
    # round two (issue 40): the field's texts
    ("flashmla-sparse-prefill-0.26", "0.26.0", [f"RuntimeError: Assertion error ({_PHASE1}): {_TMA_ASSERT} failed."]),
    ("flashmla-sparse-prefill-0.26", "0.26.0", [f"{_TMA_ASSERT} failed ({_PHASE1}):"]),
    ("vllm-argument-error", "0.33.0", ["vllm: error: unrecognized arguments: --enable-expert-paralel"]),
    ("flashmla-on-sm12", "0.29.0", ["RuntimeError: Sparse Attention Forward Kernel is only supported on SM90a and "
                                    "SM100f architectures."]),
    ("flashinfer-sm120-no-kernel", "0.26.0", ["tvm.error.InternalError: Check failed: num_tokens > 64 (5 vs. 64) : "
                                              "Decode (num_tokens <= 64)",
                                              "must go through sparse_mla_sm120_decode_dsv4"]),
    ("flashinfer-sm120-no-kernel", "0.25.0", ['  File "/x/flashinfer/data/csrc/sparse_mla_sm120.cu", line 261, in void '
                                              "flashinfer::sparse_mla_sm120::SparseMlaSm120PagedAttention(tvm::ffi::TensorView)",
                                              "    TVM_FFI_ICHECK_GT(num_tokens, 64)"]),
    ("cudagraph-c128a-assert", "0.33.0",
     ['  File "/x/vllm/models/deepseek_v4/sparse_mla.py", line 260, in _build_c128a_metadata',
                                          "    assert active_topk_width >= cm.max_seq_len // self.compress_ratio",
                                          "AssertionError"]),
    ("cudagraph-paged-mqa-oob", "0.27.1",
     ['  File "/x/vllm/utils/deep_gemm.py", line 707, in get_paged_mqa_logits_metadata',
                                           "    return _get_paged_mqa_logits_metadata_impl(context_lens, block_size, "
                                           "num_sms)",
                                           "torch.AcceleratorError: CUDA error: an illegal memory access was "
                                           "encountered"]),
    ("vllm-too-old-for-dsv4", "0.19.1", ["ValueError: The checkpoint you are trying to load has model type deepseek_v4 "
                                         "but Transformers does not recognize this architecture."]),
    ("vllm-too-old-for-dsv4", "0.19.1", ["ValueError: Model architectures ['DeepseekV4ForCausalLM'] are not supported "
                                         "for now. Supported architectures: dict_keys(['DeepseekV3ForCausalLM'])"]),
]


@pytest.mark.parametrize(("rule", "version", "lines"), CASES, ids=[f"{c[0]}@{c[1]}" for c in CASES])
def test_each_signature_names_its_rule(tmp_path, rule, version, lines):
    status, doc, err = explain(tmp_path, [version_line(version), *vllm_lines(lines)])
    assert status == 0, err
    assert rule in {item["rule"] for item in doc["explained"]}
    item = next(i for i in doc["explained"] if i["rule"] == rule)
    assert item["signature"]["source"] and item["fix"] and item["reference"] and item["effect"]
    assert not re.search(r"<\w+>", item["fix"]), item["fix"]  # the row's placeholders are filled


def test_the_cases_reach_every_signature():
    reached = set()
    for _rule, version, lines in CASES:
        scanner = Scanner()
        scanner.feed(version_line(version))
        for text, level in read_lines(io.BytesIO("\n".join(vllm_lines(lines)).encode())):
            scanner.feed(text, level)
        reached |= {SIGNATURES.index(m.signature) for m in scanner.result().matches}
    missing = [f"{s.rule} ({s.exception}, {s.vllm.short()})" for i, s in enumerate(SIGNATURES) if i not in reached]
    assert not missing, missing


def test_every_signature_names_a_rule_and_every_refusing_row_has_one():
    ids = set(ROWS) | {KV_AUTO}
    own = [s for s in SIGNATURES if s.text is not None]  # failures no row decides: the signature's own words
    assert {s.rule for s in SIGNATURES if s.text is None} <= ids
    for sig in own:
        assert sig.rule not in ids, f"{sig.rule}: a row's id, but the signature carries its own words"
        assert {"title", "effect", "fix", "reference"} <= set(sig.text), sig.rule
        assert sig.source and re.search(r"#\d+|@\d+\.\d+", sig.source), sig.rule  # a thread or a release line
    assert set(NO_SIGNATURE) <= set(ROWS)
    with_signature = {s.rule for s in SIGNATURES}
    assert not with_signature & set(NO_SIGNATURE), "a row is both signed and listed as without a signature"
    refusing = [r.id for r in ROWS.values() if r.level in (REFUSE, FAIL)]
    missing = [r for r in refusing if r not in with_signature and r not in NO_SIGNATURE]
    assert not missing, f"refusing rows with no signature (add one, or say why in NO_SIGNATURE): {missing}"


def test_a_signature_does_not_fire_on_the_plan_lines_of_dsv4_launch_itself(tmp_path):
    """dsv4-serve's own refusal lines quote vLLM's messages: they are not a failure of vLLM's."""
    status, doc, _ = explain(tmp_path, [
        "dsv4-serve: changed: --kv-cache-dtype (not set) → fp8: … crashes on 'auto' there (vLLM #47174)",
        "dsv4-serve: error: pre-flight: --moe-backend deep_gemm_mega_moe on NVIDIA RTX PRO 6000 (SM 12.0): vLLM 0.24.0 "
        "raises NotImplementedError ('DeepGEMM MegaMoE requires SM100 GPUs.'), before 0.33 only after loading",
        "dsv4-launch: warning: (plugin) DeepseekV4 fp8_ds_mla layout only supports fp8 kv-cache, got auto",
        "INFO 12-01 08:00:00 [api_server.py:1] Started server process [1]",
    ])
    assert status == 1 and doc["explained"] == []


_CITED = re.compile(r"(vllm/[\w/.]+\.py)?:(\d+)@(\d+\.\d+\.\d+)(?:–(\d+\.\d+\.\d+))?")


def _literal(pattern: str) -> str:
    pieces = re.split(r"\\.|[()\[\]?*+|^$]|\(\?[!=:][^)]*\)|\{\d+(?:,\d*)?\}", pattern)
    return max(pieces, key=len).strip()


@pytest.mark.skipif(not VLLM_SRC.is_dir(),
                    reason="vLLM sources not extracted: set DSV4_VLLM_SRC to the folder of extracted releases")
def test_every_cited_line_is_where_the_message_is_raised():
    """Each file:line@release exists in that release; where the message's text is in the cited
    file, it is within a few lines of the cited line."""
    problems = []
    for sig in SIGNATURES:
        path = None
        probe = _literal(sig.pattern)[:24]  # short enough to sit on one source line
        paths = []
        for match in _CITED.finditer(sig.source):
            path = match.group(1) or path
            paths.append(path)
            raising = path == paths[0]  # the raising line, release by release (later paths: notes)
            since, until = match.group(3), match.group(4) or match.group(3)
            releases = ALL_RELEASES[ALL_RELEASES.index(since): ALL_RELEASES.index(until) + 1]
            for release in releases:
                file = VLLM_SRC / release / path
                if not file.is_file():
                    problems.append(f"{sig.rule}: {path}@{release} does not exist")
                    continue
                lines = file.read_text(encoding="utf-8", errors="replace").split("\n")
                number = int(match.group(2))
                if number > len(lines):
                    problems.append(f"{sig.rule}: {path}:{number}@{release} past the end")
                    continue
                window = "\n".join(lines[max(0, number - 4): number + 8])
                if probe in "\n".join(lines):
                    if probe not in window:
                        problems.append(f"{sig.rule}: {probe!r} is not near {path}:{number}@{release}")
                elif raising and not re.search(r"\b(raise|assert)\b|//|\w\(", lines[number - 1]):
                    problems.append(f"{sig.rule}: nothing raises at {path}:{number}@{release}")
    assert not problems, "\n".join(problems)


def test_the_upstream_report_is_explained_with_the_fix(tmp_path):
    """vLLM #47174: 0.24.0 on two RTX PRO 6000, journald prefixes and ANSI colour, minutes of
    start-up, then the AssertionError on both workers."""
    out, err = io.StringIO(), io.StringIO()
    status = run_explain([str(UPSTREAM)], as_json=True, ctx=Context(env={}, stdout=out, stderr=err))
    doc = json.loads(out.getvalue())
    assert status == 0 and err.getvalue() == ""
    assert [i["rule"] for i in doc["explained"]] == [KV_AUTO]
    item = doc["explained"][0]
    assert item["count"] == 2 and item["text"].startswith("AssertionError: DeepseekV4 fp8_ds_mla")
    assert doc["vllm_version"] == "0.24.0" and doc["arguments_line"] == 3
    corrected = doc["corrected"]
    assert corrected["exit_status"] == 0
    assert corrected["argv"][:1] == ["deepseek-ai/DeepSeek-V4-Flash"]
    assert corrected["argv"][-2:] == ["--kv-cache-dtype", "fp8"]
    assert "--tensor-parallel-size" in corrected["argv"] and "32768" in corrected["argv"]
    assert "sk-live-4f9a0c2e7d1b" not in out.getvalue()


def test_the_upstream_report_as_text(tmp_path):
    out = io.StringIO()
    assert run_explain([str(UPSTREAM)], as_json=False, ctx=Context(env={}, stdout=out, stderr=io.StringIO())) == 0
    text = out.getvalue()
    assert "known failure: kv-auto" in text
    command = next(line for line in text.splitlines() if line.startswith("corrected command: "))
    assert "vllm serve deepseek-ai/DeepSeek-V4-Flash" in command and "--kv-cache-dtype fp8" in command
    assert "sk-live" not in text and "\x1b" not in text


def test_a_docker_compose_log_names_the_failure(tmp_path):
    """`docker compose logs -t` of a two-service project (the names padded alike): without the
    prefix taken off no level or exception line was found, and the failure went unnamed."""
    body = [version_line("0.33.0"),
            args_line("{'model_tag': 'deepseek-ai/DeepSeek-V4-Flash', 'tensor_parallel_size': 2, "
                      "'moe_backend': 'deep_gemm_mega_moe'}"),
            *vllm_lines(traceback([], "NotImplementedError: DeepSeek V4 MegaMoE currently requires expert parallel. "
                                      "Enable it with --enable-expert-parallel, or pick a different moe backend."))]
    lines = [f"vllm-1   | 2026-12-01T08:00:{i:02d}.123456789Z {line}" for i, line in enumerate(body)]
    lines.insert(1, "proxy-1  | 2026-12-01T08:00:00.5Z nginx: ready")
    status, doc, _ = explain(tmp_path, lines)
    assert status == 0 and [i["rule"] for i in doc["explained"]] == ["mega-moe-needs-ep"]
    assert doc["explained"][0]["plan_agrees"] is True


def test_kubectl_prefixes_and_a_vllm_033_log(tmp_path):
    lines = [f"[pod/vllm-0/vllm] 2026-12-01T08:00:{i:02d}.123456789Z {line}" for i, line in enumerate([
        version_line("0.33.0"),
        args_line("{'model_tag': 'deepseek-ai/DeepSeek-V4-Flash', 'api_key': '***', 'tensor_parallel_size': 2, "
                  "'moe_backend': 'deep_gemm_mega_moe'}"),
        *vllm_lines(traceback([], "NotImplementedError: DeepSeek V4 MegaMoE currently requires expert parallel. "
                                  "Enable it with --enable-expert-parallel, or pick a different moe backend.")),
    ])]
    status, doc, _ = explain(tmp_path, lines)
    assert status == 0 and [i["rule"] for i in doc["explained"]] == ["mega-moe-needs-ep"]
    assert doc["explained"][0]["plan_agrees"] is True  # the plan on the logged arguments refuses the same
    assert doc["corrected"]["exit_status"] == 2 and doc["corrected"]["refusals"]


def test_the_plan_on_the_logged_arguments_tells_same_text_rules_apart(tmp_path):
    hma = traceback([], "TypeError: MLAAttentionSpec.__init__() got an unexpected keyword argument 'bounded_replay'")
    base = "'model_tag': 'deepseek-ai/DeepSeek-V4-Flash', 'tensor_parallel_size': 2"
    _, doc, _ = explain(tmp_path, [version_line("0.31.0"), args_line("{" + base + ", "
                                                                      "'disable_hybrid_kv_cache_manager': True}"),
                                   *vllm_lines(hma)])
    assert [i["rule"] for i in doc["explained"]] == ["hma-disabled"]
    _, doc, _ = explain(tmp_path, [version_line("0.31.0"), *vllm_lines(hma)])  # no arguments: both, said so
    assert {i["rule"] for i in doc["explained"]} == {"hma-disabled", "connector-turns-hma-off"}
    assert all(len(i["candidates"]) == 2 for i in doc["explained"])


def test_fp4_indexer_on_028_from_the_logged_dataclass_repr(tmp_path):
    args = ("{'model_tag': 'deepseek-ai/DeepSeek-V4-Flash', 'attention_config': AttentionConfig(backend=None, "
            "flash_attn_version=None, use_fp4_indexer_cache=True, indexer_kv_dtype='mxfp4'), "
            "'dispatch_function': <function ServeSubcommand.cmd at 0x7f00>}")
    lines = [version_line("0.28.0"), args_line(args),
             *vllm_lines(traceback([], "ValueError: indexer_kv_dtype='mxfp4' requires Blackwell datacenter GPUs "
                                       "(sm_10x, e.g. B200/GB200)."))]
    _, doc, _ = explain(tmp_path, lines)
    assert [i["rule"] for i in doc["explained"]] == ["fp4-indexer-off-sm10"]


def test_the_release_in_the_log_picks_the_signature(tmp_path):
    """0.30+ resolves auto itself; a 0.33 'got bfloat16' ValueError is kv-not-fp8's 0.30+ row."""
    lines = [version_line("0.33.0"), *vllm_lines(traceback([], f"ValueError: {_FP8} bfloat16. {_PLEASE}"))]
    _, doc, _ = explain(tmp_path, lines)
    assert [(i["rule"], i["signature"]["releases"]) for i in doc["explained"]] == [("kv-not-fp8", "≥ 0.30.0")]


def test_gpu_named_in_the_log_is_used(tmp_path):
    lines = [version_line("0.24.0"),
             "dsv4-launch: warning: NVIDIA RTX PRO 6000 Blackwell Workstation Edition (SM 12.0) with vLLM 0.24.0: …",
             args_line("{'model_tag': 'deepseek-ai/DeepSeek-V4-Flash', 'tensor_parallel_size': 2}"),
             *vllm_lines(traceback([_ATT], f"AssertionError: {_FP8} auto"))]
    _, doc, _ = explain(tmp_path, lines)
    assert doc["gpu"]["compute_capability"] == "12.0"
    assert doc["gpu"]["name"] == "NVIDIA RTX PRO 6000 Blackwell Workstation Edition"  # not "Edition" (issue 40)
    assert doc["corrected"]["gpus"] == "SM 12.0 (line 2 of the log)"
    assert doc["corrected"]["argv"][-2:] == ["--kv-cache-dtype", "fp8"]
    assert "SM 12.0" in doc["corrected"]["changes"][0]["reason"]


def test_unknown_failure_shows_the_root_cause(tmp_path):
    lines = [version_line("0.33.0"),
             *vllm_lines(traceback([("v1/worker/gpu_worker.py", 301, "load_model", "self.model_runner.load_model()")],
                                   "OSError: [Errno 28] No space left on device: '/root/.cache/huggingface'")),
             *vllm_lines(["RuntimeError: Engine core initialization failed. See root cause above. Failed core "
                          "proc(s): {'EngineCore_DP0': 1}"], proc="APIServer", pid=1)]
    status, doc, _ = explain(tmp_path, lines)
    assert status == 1 and doc["explained"] == [] and doc["exit_status"] == 1
    assert doc["root_cause"][-1]["text"].startswith("OSError: [Errno 28] No space left on device")
    assert doc["pointers"][-1]["text"].startswith("RuntimeError: Engine core initialization failed")
    status, text, _ = explain(tmp_path, lines, as_json=False)
    assert status == 1
    assert "unknown: no known DeepSeek-V4 failure found" in text
    assert "root cause: line " in text and "No space left on device" in text
    assert "dsv4-launch doctor" in text


@pytest.mark.parametrize("as_json", [True, False])
def test_secrets_in_the_log_are_never_printed(tmp_path, as_json):
    secret, token, nested = "sk-live-ZZ9plural", "hf_QQsecretQQ", "p4ssw0rd-inner"
    lines = [version_line("0.24.0"),
             args_line("{'model_tag': 'deepseek-ai/DeepSeek-V4-Flash', 'api_key': ['" + secret + "', 'sk-second-key'], "
                       "'hf_token': '" + token + "', 'kv_transfer_config': {'kv_connector': 'LMCacheConnectorV1', "
                       "'kv_connector_extra_config': {'password': '" + nested + "'}}, 'max_num_batched_tokens': 8192}"),
             *vllm_lines(traceback([], f"ValueError: {_FP8} bfloat16 while serving with --api-key {secret} "
                                       f"token={token} sk-second-key")),
             *vllm_lines([f"AssertionError: {_FP8} auto"])]
    status, out, err = explain(tmp_path, lines, as_json=as_json)
    text = json.dumps(out) if as_json else out
    assert status == 0
    for value in (secret, token, nested, "sk-second-key"):
        assert value not in text and value not in err
    if as_json:
        assert "--api-key" in out["corrected"]["argv"]
        assert "8192" in out["corrected"]["argv"]  # 'tokens' in a name is not a credential


def test_control_characters_in_the_log_are_escaped(tmp_path):
    evil = "\x1b]0;pwned\x07\x1b[2J"  # terminal title + clear screen, inside the message
    lines = [version_line("0.24.0"), *vllm_lines([f"AssertionError: {_FP8} auto {evil}\x08\x00 done"])]
    status, text, _ = explain(tmp_path, lines, as_json=False)
    assert status == 0
    assert "\x1b" not in text and "\x07" not in text and "\x08" not in text and "\x00" not in text
    assert "\\x08" in text and "\\x00" in text


def test_json_is_valid_in_ascii(tmp_path):
    path = tmp_path / "vllm.log"
    path.write_bytes(UPSTREAM.read_bytes() + "ValueError: No common block size for 64 — ünïcode 🚀\n".encode())
    env = {**os.environ, "PYTHONIOENCODING": "ascii"}
    proc = subprocess.run([sys.executable, "-m", "dsv4_launch", "explain", "--json", str(path)], capture_output=True,
                          env=env, timeout=120)
    assert proc.returncode == 0, proc.stderr
    proc.stdout.decode("ascii")
    doc = json.loads(proc.stdout)
    assert doc["schema_version"] == 1 and doc["command"] == "explain"
    assert any("🚀" in i["text"] for i in doc["explained"])


def test_stdin_is_read(tmp_path):
    proc = subprocess.run([sys.executable, "-m", "dsv4_launch", "explain", "-"], input=UPSTREAM.read_bytes(),
                          capture_output=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert b"known failure: kv-auto" in proc.stdout and b"1 lines" not in proc.stdout


@pytest.mark.parametrize("make", ["missing", "directory", "two", "option"])
def test_bad_input_is_one_line_and_exit_2(tmp_path, make):
    from dsv4_launch.commands.cli import run_command

    args = {"missing": [str(tmp_path / "nope.log")], "directory": [str(tmp_path)],
            "two": [str(UPSTREAM), str(UPSTREAM)], "option": ["--follow"]}[make]
    for as_json in (False, True):
        out, err = io.StringIO(), io.StringIO()
        # through the door (an option is the door's to read: run_explain takes operands)
        assert run_command("explain", [*args, *(["--json"] if as_json else [])],
                           Context(env={}, stdout=out, stderr=err)) == 2
        said = "dsv4-launch explain: " + ("no such option: --follow" if make == "option" else "error: ")
        assert len(err.getvalue().splitlines()) == 1 and err.getvalue().startswith(said)
        if as_json:
            doc = json.loads(out.getvalue())
            assert doc["exit_status"] == 2 and doc["error"]
        else:
            assert out.getvalue() == ""


def test_binary_garbage_and_an_empty_file_are_read_leniently(tmp_path):
    path = tmp_path / "core"
    path.write_bytes(bytes(range(256)) * 64 + b"\nAssertionError: " + _FP8.encode() + b" auto\n")
    out = io.StringIO()
    assert run_explain([str(path)], as_json=True, ctx=Context(env={}, stdout=out, stderr=io.StringIO())) == 0
    empty = tmp_path / "empty.log"
    empty.write_bytes(b"")
    out = io.StringIO()
    assert run_explain([str(empty)], as_json=True, ctx=Context(env={}, stdout=out, stderr=io.StringIO())) == 1
    assert json.loads(out.getvalue())["lines_read"] == 0


def test_a_huge_line_is_read_in_bounded_pieces():
    huge = b"x" * (LINE_LIMIT * 5) + b"\nAssertionError: " + _FP8.encode() + b" auto\n"
    lines = list(read_lines(io.BytesIO(huge)))
    assert len(lines) == 2 and len(lines[0][0]) == LINE_LIMIT and lines[1][0].endswith("got auto")


def test_a_long_log_keeps_a_bounded_window():
    scanner = Scanner()
    for i in range(20_000):
        scanner.feed(f"INFO line {i} Loading safetensors checkpoint shards: {i % 100}% Completed", "INFO")
        if i % 1000 == 0:
            scanner.feed(f"AssertionError: {_FP8} auto")
    scan = scanner.result()
    assert scan.lines == 20_020
    assert len(scan.matches) == 1 and scan.matches[0].count == 20
    assert len(scanner._window) <= 64 and len(scan.root_cause) <= 1 + 2  # the cause and its wrap


@pytest.mark.parametrize(("raw", "message", "level"), [
    ("Dec 01 08:00:00 gpu1 vllm[123]: (EngineCore_DP0 pid=456) ERROR 12-01 08:00:00 [v1/engine/core.py:1231] "
     "AssertionError: x", "AssertionError: x", "ERROR"),
    ("2026-12-01T08:00:00+0000 gpu1 vllm[123]: INFO 12-01 08:00:00 [x.py:1] hello", "hello", "INFO"),
    ("[pod/vllm-7d9f/vllm] 2026-12-01T08:00:00.000000001Z (APIServer pid=1) WARNING 12-01 08:00:00 [a.py:2] w",
     "w", "WARNING"),
    ("2026-12-01T08:00:00.5Z [pod/a/b] (Worker_TP1 pid=9) x", "x", None),
    ("\x1b[36m(Worker pid=77)\x1b[0m \x1b[31mERROR\x1b[0m \x1b[90m12-01 08:00:00\x1b[0m \x1b[90m[a.py:3]\x1b[0m boom\r",
     "boom", "ERROR"),
    ("(RayWorkerWrapper pid=5, ip=10.0.0.2) INFO 12-01 08:00:00 [b.py:4] ray", "ray", "INFO"),
    ("Loading 10%\rLoading 100%", "Loading 100%", None),
    # docker compose logs (v2: SERVICE-N padded to the longest name, " | "), with -t, colours, v1's _N
    ("vllm-1  | (APIServer pid=1) ERROR 12-01 08:00:00 [a.py:5] AssertionError: x", "AssertionError: x", "ERROR"),
    ("vllm-1 | 2026-12-01T08:00:00.123456789Z INFO 12-01 08:00:00 [x.py:1] hello", "hello", "INFO"),
    ("\x1b[36mdsv4_vllm_1  |\x1b[0m WARNING 12-01 08:00:00 [b.py:2] w", "w", "WARNING"),
    ("vllm-1  |", "", None),
    # outermost only: vLLM's own message that starts "word | " keeps it
    ("INFO 12-01 08:00:00 [x.py:1] Throughput | 12 tok/s", "Throughput | 12 tok/s", "INFO"),
    ("vllm-1  | INFO 12-01 08:00:00 [x.py:1] a | b", "a | b", "INFO"),
])
def test_prefixes_are_taken_off(raw, message, level):
    assert clean(raw) == (message, level)


def test_logged_args_are_read_without_evaluating_anything():
    args = parse_args_text("{'model_tag': 'm', 'x': __import__('os').system('echo hi'), 'n': -3, "
                           "'l': [1, 2], 'd': {'a': None}, 'e': <Enum.A: 'A'>, 'api_key': ['k1', 'k2']}", 1)
    assert args.values == {"model_tag": "m", "n": -3, "l": [1, 2], "d": {"a": None}, "e": "A", "api_key": ["***"]}
    assert args.unread == ("x",) and set(args.secrets) == {"k1", "k2"}
    truncated = parse_args_text("{'model_tag': 'm', 'tensor_parallel_size': 2, 'max_mod", 1)
    assert truncated.values == {"model_tag": "m", "tensor_parallel_size": 2}
    backend = parse_args_text("{'attention_config': AttentionConfig(backend=<AttentionBackendEnum.FLASHMLA_SPARSE: "
                              "'vllm.v1.attention.backends.mla.flashmla_sparse.FlashMLASparseBackend'>, x=None), "
                              "'r': <SparseCacheRole.SPARSE: 'sparse'>}", 1)
    assert backend.values == {"attention_config": {"backend": "FLASHMLA_SPARSE"}, "r": "sparse"}
    deep = parse_args_text("{'a': " + "[" * 5000 + "]" * 5000 + "}", 1)
    assert deep.unread == ("a",)


def test_a_kubectl_log_of_033_names_the_failure_and_says_the_command_still_fails():
    """`kubectl logs --timestamps --prefix`, four workers raising at build on 0.33 (SM100 check in
    DeepGemmMegaMoEExperts.__init__): the traceback's own source line does not count, the command
    dsv4-serve would run is shown as still failing (the GPU type is not in the log)."""
    out = io.StringIO()
    status = run_explain([str(FIXTURES / "kubectl-megamoe-sm120-0.33.0.log")], as_json=True,
                         ctx=Context(env={}, stdout=out, stderr=io.StringIO()))
    doc = json.loads(out.getvalue())
    assert status == 0
    assert [(i["rule"], i["count"]) for i in doc["explained"]] == [("mega-moe-not-sm100", 4)]
    assert doc["explained"][0]["text"] == "NotImplementedError: DeepGEMM MegaMoE requires SM100 GPUs."
    assert doc["explained"][0]["plan_agrees"] is True
    assert doc["corrected"]["unfixed"] == ["mega-moe-not-sm100"] and doc["corrected"]["fixed"] == []
    out = io.StringIO()
    run_explain([str(FIXTURES / "kubectl-megamoe-sm120-0.33.0.log")], as_json=False,
                ctx=Context(env={}, stdout=out, stderr=io.StringIO()))
    assert "corrected command:" not in out.getvalue()
    assert "which still fails with mega-moe-not-sm100" in out.getvalue()


def test_the_unknown_failure_fixture():
    out = io.StringIO()
    status = run_explain([str(FIXTURES / "unknown-disk-full-0.29.0.log")], as_json=True,
                         ctx=Context(env={}, stdout=out, stderr=io.StringIO()))
    doc = json.loads(out.getvalue())
    assert status == 1 and doc["explained"] == [] and doc["corrected"] is not None
    assert [r["line"] for r in doc["root_cause"]] == [8]
    assert doc["root_cause"][0]["text"].startswith("OSError: [Errno 28] No space left on device")


def test_readme_shows_the_real_output():
    """The docs' examples are explain's real output on the fixtures (as `cd tests/fixtures/logs`)."""
    readme = (Path(__file__).parents[2] / "docs" / "commands.md").read_text(encoding="utf-8")
    section = readme.split("## After a crash: `dsv4-launch explain`", 1)[1].split("\n## ", 1)[0]
    examples = re.findall(r"    \$ dsv4-launch explain ([\w.\-]+)\n((?:    (?!\$).*\n)+)", section)
    assert len(examples) >= 2
    here = os.getcwd()
    try:
        os.chdir(FIXTURES)
        for name, shown in examples:
            out = io.StringIO()
            run_explain([name], as_json=False, ctx=Context(env={}, stdout=out, stderr=io.StringIO()))
            expected = [line[4:] for line in shown.splitlines() if not line.startswith("    $ echo")]
            expected = [e for e in expected if not re.fullmatch(r"\d+", e)]
            assert out.getvalue().splitlines() == expected, name
    finally:
        os.chdir(here)


_PIECES = [version_line("0.24.0"), version_line("0.33.0"), f"AssertionError: {_FP8} auto",
           "ValueError: No common block size for 64", "Traceback (most recent call last):",
           '  File "/x/vllm/v1/worker/utils.py", line 1, in f', "    raise ValueError(",
           "ZeroDivisionError: integer division or modulo by zero", "use_fp4_indexer_cache",
           "  Unexpected keyword argument [type=unexpected_keyword_argument]",
           args_line("{'model_tag': 'deepseek-ai/DeepSeek-V4-Flash', 'api_key': ['sk-HOSTILE-1'], "
                     "'tensor_parallel_size': 2}"),
           args_line("{'model_tag': 'x', 'tensor_parallel_size': 'two', 'block_size': [64], 'hf_overrides': {1: 2}}"),
           args_line("{'model_tag': ['not', 'a', 'string'], 'attention_config': AttentionConfig(backend=<B.X: 'X'>)"),
           args_line("{'config': '/etc/missing.yaml', 'kv_cache_dtype': None, 'port': -1, 'x': 1e999}"),
           "dsv4-launch: warning: NVIDIA H200 (SM 9.0) with vLLM 0.24.0", "\x1b[31mERROR\x1b[0m",
           "Nov 28 14:02:14 h vllm[1]: (Worker_TP0 pid=2) ERROR 11-28 14:02:14 [a.py:1] RuntimeError: boom"]


def test_hostile_logs_never_raise_and_json_always_parses(tmp_path):
    from hypothesis import given, settings
    from hypothesis import strategies as st

    @settings(max_examples=60, deadline=None)
    @given(st.lists(st.one_of(st.sampled_from(_PIECES), st.text(max_size=80), st.binary(max_size=80)), max_size=20))
    def check(parts):
        data = b"\n".join(p if isinstance(p, bytes) else p.encode("utf-8", "surrogatepass") for p in parts)
        path = tmp_path / "hostile.log"
        path.write_bytes(data)
        for as_json in (True, False):
            out, err = io.StringIO(), io.StringIO()
            status = run_explain([str(path)], as_json=as_json, ctx=Context(env={}, stdout=out, stderr=err))
            assert status in (0, 1)
            text = out.getvalue() + err.getvalue()
            assert "Traceback" not in err.getvalue() and "sk-HOSTILE-1" not in text
            if as_json:
                assert json.loads(out.getvalue())["exit_status"] == status

    check()


@pytest.mark.parametrize(("line", "version"), [
    ("(APIServer pid=1) INFO 12-01 08:00:00 [api_utils.py:339] vLLM server version 0.26.0, serving model m", "0.26.0"),
    # the logo form (log_version_and_model with a colour formatter): one record, the header on each line
    ("(APIServer pid=1) INFO 12-01 08:00:00 [api_utils.py:339]  \x1b[93m▄▄\x1b[0m \x1b[94m▄█\x1b[0m \x1b[97;1m█     █"
     "     █ ▀▄▀ █\x1b[0m  version \x1b[97;1m0.31.0\x1b[0m", "0.31.0"),
    ("(EngineCore_DP0 pid=2) INFO 12-01 08:00:00 [core.py:140] Initializing a V1 LLM engine (v0.33.0) with config: "
     "model='m'", "0.33.0"),
    ("INFO 12-01 08:00:00 [api_server.py:129] vLLM API server version 0.24.0", "0.24.0"),
])
def test_the_version_lines_vllm_prints(line, version):
    scanner = Scanner()
    for text, level in read_lines(io.BytesIO(line.encode())):
        scanner.feed(text, level)
    assert scanner.result().version == version


def test_help_says_the_exit_codes(capsys):
    from dsv4_launch.commands.cli import main

    assert main(["explain", "--help"]) == 0
    out = capsys.readouterr().out
    assert "Usage: dsv4-launch explain" in out and "a known failure is explained" in out


@pytest.mark.parametrize("line", [
    "ValueError: HF_TOKEN=hf_LEAK7secret", 'ValueError: {"token": "LEAKC7secret"}', "ValueError: password:LEAKD7secret",
    "ValueError: 'api_key': ['a','LEAKF7secret']", "ValueError: apiKey=LEAKM7secret",
    "ValueError: x-api-key=LEAKN7secret",
    "ValueError: AWS_SECRET_ACCESS_KEY LEAKE7secret", "ValueError: Bearer LEAKJ7secret",
    "ValueError: Cookie: session=LEAKO7secret", "ValueError: api key sk-LEAK47secret",
    "ERROR 12-01 08:00:00 [x.py:1] Authorization: Bearer sk-LEAK17secret", "msg: HF_TOKEN=LEAKX7secret",
    # found by a hostile pass: the phrasings of a credential in prose, and the bare key formats
    "ValueError: token 'LEAKa7secret' is invalid", "RuntimeError: the password is LEAKb7secret",
    "ValueError: secret 'LEAKc7secret'", "ValueError: passphrase LEAKd7secret", "OSError: Token LEAKe7secret",
    "ValueError: jwt=LEAKf7secret", "HTTPError: invalid bearer token LEAKg7secret",
    "OSError: https://h/o?a=1&sig=LEAKh7secret", "OSError: https://h/o?X-Amz-Signature=LEAKi7secret",
    'ValueError: credentials={"key": "LEAKj7secret"}', "OSError: hf_LEAKk7secretAbCdEfGhIjKlMnOpQrSt",
    "OSError: sk-proj-LEAKl7secretAbCdEfGh", "OSError: AKIALEAKM7SECRET0123 denied",
    "OSError: ghp_LEAKn7secretAbCdEfGhIjKlMnOpQrStUvWxYz", "OSError: xoxb-1234-LEAKo7secret",
    "OSError: eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxIn0.LEAKp7secret",
])
def test_a_secret_after_an_exception_name_or_a_scheme_word_is_never_echoed(tmp_path, line):
    # found by a review: "ValueError:" took the rest of the line as its own (non-secret) value
    from dsv4_launch.core.explain.masking import mask_secrets_in_text

    assert "7secret" not in mask_secrets_in_text(line)
    log = tmp_path / "v.log"
    log.write_text(f"INFO 12-01 08:00:00 [api_server.py:1] vLLM API server version 0.33.0\n{line}\n")
    for as_json in (False, True):
        out, err = io.StringIO(), io.StringIO()
        run_explain([str(log)], as_json=as_json, ctx=Context(stdout=out, stderr=err, env={}))
        assert "7secret" not in out.getvalue() + err.getvalue()


@pytest.mark.parametrize("line", ["token budget exceeded", "max_tokens=5", "tokenizer_mode: deepseek_v4",
                                  "keyword=7", "ValueError: monkey=3", "KeyError: 'model.layers.0'",
                                  "the tokenizer is deepseek_v4", "num_tokens=8192", "token ids",
                                  "prompt_token_ids=[1, 2]", "Image token '<|image_pad|>' not found",
                                  "HF_TOKEN is not set", "GPU-1234abcd-5678-ef90-1234-567890abcdef"])
def test_ordinary_words_near_secret_names_are_kept(line):
    from dsv4_launch.core.explain.masking import mask_secrets_in_text

    assert mask_secrets_in_text(line) == line


@pytest.mark.parametrize("args", [["--jso"], ["--jso", "vllm.log"], ["vllm.log", "--jsonx=1"]])
def test_an_unknown_option_is_no_such_option_as_click_says_it(args):
    from dsv4_launch.commands.cli import run_command

    err = io.StringIO()
    assert run_command("explain", args, Context(env={}, stdout=io.StringIO(), stderr=err)) == 2
    name = next(a for a in args if a.startswith("-")).partition("=")[0]
    assert err.getvalue() == (f"dsv4-launch explain: no such option: {name} (did you mean --json?) "
                              "(see: dsv4-launch explain --help)\n")


# --- failures no rule row decides (issue 30.2): both sides, and the log's values in the words ----------------

def test_an_oom_in_the_weight_load_is_weights_exceed_memory_and_elsewhere_points_to_fit(tmp_path):
    oom = ("torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 1024.00 MiB. GPU 0 has a total capacity of "
           "95.07 GiB of which 298.69 MiB is free.")
    load = traceback([("model_executor/model_loader/default_loader.py", 269, "load_weights",
                       "loaded = model.load_weights(")],
                     oom)
    _, doc, _ = explain(tmp_path, [version_line("0.29.0"), *vllm_lines(load)], name="load.log")
    assert [i["rule"] for i in doc["explained"]] == ["weights-exceed-memory"]
    warmup = traceback([("v1/worker/gpu_model_runner.py", 4321, "_dummy_run", "outputs = self.model(")], oom)
    _, doc, _ = explain(tmp_path, [version_line("0.29.0"), *vllm_lines(warmup)], name="warmup.log")
    (item,) = doc["explained"]
    assert item["rule"] == "cuda-oom" and item["candidates"] == ["cuda-oom"]
    assert "dsv4-launch fit" in item["fix"] and "95.07 GiB" in item["fix"]
    assert "1024.00 MiB" in item["effect"] and "298.69 MiB free of 95.07 GiB" in item["effect"]


def test_free_memory_at_start_quotes_the_logs_numbers(tmp_path):
    line = ("ValueError: Free memory on device cuda:0 (1.54/22.05 GiB) on startup is less than desired GPU memory "
            "utilization (0.9, 19.84 GiB). Decrease GPU memory utilization or reduce GPU memory used by other "
            "processes.")
    _, doc, _ = explain(tmp_path, [version_line("0.29.0"), *vllm_lines(traceback([], line))])
    (item,) = doc["explained"]
    assert item["rule"] == "gpu-memory-not-free"
    assert "19.84 GiB (0.9 of the GPU)" in item["effect"] and "1.54 of 22.05 GiB" in item["effect"]
    assert "--gpu-memory-utilization below 1.54/22.05" in item["fix"]
    other = "ValueError: Free memory on device cuda:0 is fine"  # not vLLM's message: nothing named
    assert explain(tmp_path, vllm_lines([other]), name="other.log")[0] == 1


@pytest.mark.parametrize("line", [
    # DeepGEMM's JIT failing on a GPU it supports (llm-d/llm-d#1269, H100): not a missing-kernel failure
    "RuntimeError: Assertion error (csrc/apis/../jit_kernels/impls/../../jit/kernel_runtime.hpp:45): exit_code == 0",
    # another library's "Unsupported architecture"
    "RuntimeError: Unsupported architecture: sm_120 is not supported by this build of flash-attn",
    # CUDA_ERROR_INVALID_IMAGE from something that is not DeepGEMM's JIT
    "RuntimeError: CUDA error: device kernel image is invalid (CUDA_ERROR_INVALID_IMAGE)",
    # FlashMLA/FlashInfer words that are not the missing-kernel checks
    "RuntimeError: FlashInfer sparse MLA decode failed: num_tokens must be positive",
    # the FP8 block check's other words, from a weight that is not split by TP
    "ValueError: Weight block size must be a multiple of 128",
    # an int() failure with no vLLM variable in its frames
    "ValueError: invalid literal for int() with base 10: 'abc'",
    # MegaMoE's other refusals have their own rows, not the routing signature
    "NotImplementedError: DeepSeek V4 MegaMoE currently supports fp4 experts only.",
])
def test_the_new_signatures_stay_silent_on_lookalikes(tmp_path, line):
    status, doc, _ = explain(tmp_path, [version_line("0.29.0"), *vllm_lines(traceback([], line))])
    assert status == 1 and doc["explained"] == [], doc["explained"]


def test_the_fp8_block_failure_names_the_size_and_reads_the_wrapped_form(tmp_path):
    wrapped = ["  ValueError: Weight input_size_per_partition = 192 is not divisible by",
               "  weight quantization block_k = 128."]  # as vllm#42384 quotes it
    _, doc, _ = explain(tmp_path, wrapped)
    (item,) = doc["explained"]
    assert item["rule"] == "tp-fp8-block" and "this one gets 192" in item["effect"]
    assert "--tensor-parallel-size" in item["fix"]


def test_a_fixed_startup_bug_names_the_release_that_fixed_it(tmp_path):
    d2t = "AttributeError: 'DSparkDeepseekV4ForCausalLM' object has no attribute 'draft_id_to_target_id'"
    _, doc, _ = explain(tmp_path, [version_line("0.26.0"), *vllm_lines(traceback([], d2t))])
    (item,) = doc["explained"]
    assert item["rule"] == "dspark-no-d2t" and "0.28.0" in item["fix"] and "0.25.0" in item["fix"]
    other = "AttributeError: 'DSparkDeepseekV4ForCausalLM' object has no attribute 'get_draft_attn_causal'"
    assert explain(tmp_path, vllm_lines(traceback([], other)), name="ascend.log")[0] == 1  # vllm-ascend#13976: unknown


def test_a_vllm_too_old_names_the_first_release_known_to_have_deepseek_v4(tmp_path):
    _, doc, _ = explain(tmp_path, [version_line("0.19.1"), *vllm_lines(["KeyError: 'invalid tool call parser: "
                                                                          "deepseek_v4 (chose from { hermes })'"])])
    (item,) = doc["explained"]
    assert item["rule"] == "vllm-too-old-for-dsv4" and "0.24.0" in item["fix"]
    assert explain(tmp_path, vllm_lines(["KeyError: 'invalid tool call parser: deepseek_v3x'"]), name="v3.log")[0] == 1


# --- the root cause of a failure no signature names (issue 30.3) -------------------------------
# Real excerpts, as the public threads give them (the field corpus, tests/fixtures/logs/field/,
# holds the whole logs): (thread, raw lines, the root cause's lines, vLLM's pointer or None).
ROOT_CAUSES = [
    # gpustack/gpustack#2680: vLLM 0.10's "(VllmWorker rank=N pid=…)" prefix; the pointer after it
    ("gpustack#2680", [
        "(VllmWorker rank=3 pid=4665) ERROR 08-05 14:13:44 [multiproc_executor.py:487]     raise RuntimeError(f\"NCCL "
        "error: {error_str}\")",
        "(VllmWorker rank=3 pid=4665) ERROR 08-05 14:13:44 [multiproc_executor.py:487] RuntimeError: NCCL error: "
        "unhandled system error (run with NCCL_DEBUG=INFO for details)",
        "(VllmWorker rank=2 pid=4664) ERROR 08-05 14:13:44 [multiproc_executor.py:487] WorkerProc failed to start.",
        "(VllmWorker rank=2 pid=4664) ERROR 08-05 14:13:44 [multiproc_executor.py:487] Traceback (most recent call "
        "last):"],
     ["RuntimeError: NCCL error: unhandled system error (run with NCCL_DEBUG=INFO for details)"],
     "WorkerProc failed to start."),
    # vllm#42384: DeepSeek-V4-Pro at TP 16, the exception indented and wrapped over two lines
    ("vllm#42384", ["  ValueError: Weight input_size_per_partition = 192 is not divisible by",
                    "  weight quantization block_k = 128."],
     ["  ValueError: Weight input_size_per_partition = 192 is not divisible by",
      "  weight quantization block_k = 128."], None),
    # flashinfer-ai/flashinfer#3828: TVM's "Check failed:" alone, wrapped
    ("flashinfer#3828", ["Check failed: num_tokens > 64 (7 vs. 64) : Decode (num_tokens <= 64) must go through",
                         "sparse_mla_sm120_decode_dsv3_2 or sparse_mla_sm120_decode_dsv4; got num_tokens=7"],
     ["Check failed: num_tokens > 64 (7 vs. 64) : Decode (num_tokens <= 64) must go through",
      "sparse_mla_sm120_decode_dsv3_2 or sparse_mla_sm120_decode_dsv4; got num_tokens=7"], None),
    # kyuz0/amd-strix-halo-vllm-toolboxes#80: Ray's wrapped exception, under the engine's prefix
    ("kyuz0#80", [
        "(EngineCore pid=6685) ERROR 08-13 19:37:02 [core.py:1349]     raise value.as_instanceof_cause()",
        "(EngineCore pid=6685) ERROR 08-13 19:37:02 [core.py:1349] ray.exceptions.RayTaskError(RuntimeError): "
        "ray::RayWorkerProc.initialize_worker() (pid=7282, ip=192.168.100.1)",
        "(EngineCore pid=6685) ERROR 08-13 19:37:02 [core.py:1349]            ^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^"],
     ["ray.exceptions.RayTaskError(RuntimeError): ray::RayWorkerProc.initialize_worker() (pid=7282, "
      "ip=192.168.100.1)"], None),
    # deepseek-ai/DeepSeek-V2#76: vLLM 0.5's header ("worker_base.py:382]") under Ray's prefix, then
    # the user's restart: the failure before it is the one shown
    ("DeepSeek-V2#76", [
        "(RayWorkerWrapper pid=23558, ip=10.0.128.18) ERROR 07-28 13:53:40 worker_base.py:382] RuntimeError: NCCL "
        "Error 3: internal error - please report this issue to the NCCL developers",
        "[... cut ...]",
        "INFO 07-28 13:54:35 api_server.py:219] vLLM API server version 0.5.3.post1"],
     ["RuntimeError: NCCL Error 3: internal error - please report this issue to the NCCL developers"], None),
    # yhfgyyf/vllm-deepseek-v4-sm89#43 (DeepSeek-V4): the API server's EngineDeadError points above; the
    # real error is C++'s, from a worker, with torch's advice after it (not the message)
    ("vllm-deepseek-v4-sm89#43", [
        "(APIServer pid=1548000) ERROR 08-02 22:07:03 [serving.py:820] vllm.v1.engine.exceptions.EngineDeadError: "
        "EngineCore encountered an issue. See stack trace (above) for the root cause.",
        "(Worker_TP6 pid=1548833) Traceback (most recent call last):",
        "(Worker_TP6 pid=1548833)   File \"/home/dev/ds-v0731-vllm/lib/python3.12/site-packages/vllm/v1/executor/"
        "multiproc_executor.py\", line 933, in worker_main",
        "(Worker_TP6 pid=1548833)     worker.shutdown()",
        "terminate called after throwing an instance of '[rank5]:[E802 22:07:03.847786934 ProcessGroupNCCL.cpp:2119] "
        "[PG ID 2 PG GUID 3 Rank 5] Process group watchdog thread terminated with exception: CUDA error: an illegal "
        "memory access was encountered",
        "CUDA kernel errors might be asynchronously reported at some other API call, so the stacktrace below might "
        "be incorrect."],
     ["terminate called after throwing an instance of '[rank5]:[E802 22:07:03.847786934 ProcessGroupNCCL.cpp:2119] "
      "[PG ID 2 PG GUID 3 Rank 5] Process group watchdog thread terminated with exception: CUDA error: an illegal "
      "memory access was encountered"],
     "vllm.v1.engine.exceptions.EngineDeadError: EngineCore encountered an issue. See stack trace (above) for the "
     "root cause."),
    # vllm#33297: colour copied in caret notation, a CI runner's timestamp
    ("vllm#33297", ["[2026-01-26T17:25:37Z] ^[[0;36m(EngineCore_DP0 pid=738)^[[0;0m ^[[31mERROR^[[0m ^[[90m01-26 "
                    "09:25:37^[[0m ^[[90m[core.py:935]^[[0m ValueError: Free memory on device cuda:0 (1.54/22.05 GiB) "
                    "on startup is less than desired GPU memory utilization (0.9, 19.84 GiB)."],
     ["ValueError: Free memory on device cuda:0 (1.54/22.05 GiB) on startup is less than desired GPU memory "
      "utilization (0.9, 19.84 GiB)."], None),
    # vllm-project/vllm-omni#276: a line quoted in Markdown's backticks
    ("vllm-omni#276", ["`ValueError: Free memory on device (0.49/79.32 GiB) on startup is less than desired GPU "
                       "memory utilization (0.6, 47.59 GiB).`"],
     ["ValueError: Free memory on device (0.49/79.32 GiB) on startup is less than desired GPU memory utilization "
      "(0.6, 47.59 GiB)."], None),
]


@pytest.mark.parametrize(("thread", "raw", "cause", "pointer"), ROOT_CAUSES, ids=[c[0] for c in ROOT_CAUSES])
def test_the_root_cause_of_an_unknown_failure_is_its_first_real_error_line(tmp_path, thread, raw, cause, pointer):
    status, doc, _ = explain(tmp_path, raw)  # the root cause is read whether a signature names the failure or not
    assert [r["text"] for r in doc["root_cause"]] == cause, thread
    assert [p["text"] for p in doc["pointers"]] == ([pointer] if pointer else [])
    if status == 1:  # printed when no signature names it
        _, text, _ = explain(tmp_path, raw, as_json=False)
        assert f"root cause: line {doc['root_cause'][0]['line']}: {cause[0]}" in text
        assert all(f": {line}" in text for line in cause[1:])


def test_the_first_error_of_the_failure_not_the_wrappers_after_it(tmp_path):
    # the worker's exception, then the engine's and the API server's, each pointing above: the first
    # names the cause; a chained exception's first is the cause too
    lines = [version_line("0.33.0"),
             *vllm_lines(traceback([("v1/worker/gpu_worker.py", 301, "load_model", "self.model_runner.load_model()")],
                                   ["torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB.", "",
                                    "The above exception was the direct cause of the following exception:", "",
                                    "Traceback (most recent call last):",
                                    '  File "/x/vllm/v1/executor/multiproc_executor.py", line 1, in wait_for_ready',
                                    "    raise e from None",
                                    "Exception: WorkerProc initialization failed due to an exception in a background "
                                    "process. See stack trace for root cause."]), proc="Worker_TP0"),
             *vllm_lines(["EngineCore failed to start.", "Traceback (most recent call last):",
                          '  File "/x/vllm/v1/engine/core.py", line 1, in run_engine_core',
                          "    raise e", "RuntimeError: something the engine wraps"]),
             *vllm_lines(["RuntimeError: Engine core initialization failed. See root cause above. Failed core "
                          "proc(s): {'EngineCore_DP0': 1}"], proc="APIServer", pid=1)]
    _, doc, _ = explain(tmp_path, lines)
    assert [r["text"] for r in doc["root_cause"]] == ["torch.OutOfMemoryError: CUDA out of memory. Tried to allocate "
                                                      "2.00 GiB."]
    assert doc["pointers"][0]["text"].startswith("RuntimeError: Engine core initialization failed")


def test_a_restart_or_a_long_quiet_stretch_starts_the_next_failure(tmp_path):
    first = vllm_lines(traceback([], "OSError: [Errno 28] No space left on device"))
    second = vllm_lines(traceback([], "RuntimeError: NCCL error: unhandled cuda error"))
    quiet = vllm_lines([f"Loading safetensors checkpoint shards: {i}% Completed" for i in range(150)], level="INFO")
    for between in ([version_line("0.33.0")], quiet):
        _, doc, _ = explain(tmp_path, [version_line("0.33.0"), *first, *between, *second])
        assert [r["text"] for r in doc["root_cause"]] == ["RuntimeError: NCCL error: unhandled cuda error"]
    # warnings and info lines are never the cause
    _, doc, _ = explain(tmp_path, [*vllm_lines(["ValueError: only a warning"], level="WARNING"), *second])
    assert doc["root_cause"][0]["text"] == "RuntimeError: NCCL error: unhandled cuda error"


def test_a_pointer_long_after_the_failure_still_points_at_it(tmp_path):
    first = vllm_lines(traceback([], ["RuntimeError: CUDA error: an illegal memory access was encountered",
                                      "Search for `cudaErrorIllegalAddress' in https://docs.nvidia.com/cuda/ for more "
                                      "information.", "CUDA kernel errors might be asynchronously reported at some "
                                      "other API call."]))
    quiet = vllm_lines([f"Shutting down worker {i}" for i in range(150)], level="INFO")
    pointer = vllm_lines(["vllm.v1.engine.exceptions.EngineDeadError: EngineCore encountered an issue. See stack "
                          "trace (above) for the root cause."], proc="APIServer", pid=1)
    _, doc, _ = explain(tmp_path, [*first, *quiet, *pointer])
    assert [r["text"] for r in doc["root_cause"]] == ["RuntimeError: CUDA error: an illegal memory access was "
                                                      "encountered"]  # torch's advice is not its message
    assert doc["pointers"][0]["text"].startswith("vllm.v1.engine.exceptions.EngineDeadError")


@pytest.mark.parametrize(("ending", "cause"), [
    ("c10::Error: CUDA driver error: device not ready", "c10::Error: CUDA driver error: device not ready"),
    ("deep_gemm.Oops: unsupported", "deep_gemm.Oops: unsupported"),  # a name _EXCEPTION does not know
])
def test_the_line_a_traceback_ends_with_is_its_exception_whatever_its_name(tmp_path, ending, cause):
    lines = vllm_lines(traceback([("v1/worker/gpu_worker.py", 301, "load_model", "self.model_runner.load_model()")],
                                 ending))
    _, doc, _ = explain(tmp_path, lines)
    assert [r["text"] for r in doc["root_cause"]] == [cause]


def test_a_pointer_alone_says_the_cause_is_not_in_the_log(tmp_path):
    # vllm#53320 as the thread gives it: only the API server's line pointing above
    lines = ["RuntimeError: Engine core initialization failed. See root cause above. Failed core proc(s): {}"]
    status, text, _ = explain(tmp_path, lines, as_json=False)
    assert status == 1
    assert "root cause: not in the log: vLLM's line below points above it" in text
    assert f"vLLM says: line 1: {lines[0]}" in text


def test_a_log_cut_inside_a_traceback_says_so_instead_of_printing_frames(tmp_path):
    # vllm#43174 as the thread gives it: the traceback's frames, no exception line
    lines = vllm_lines(["Traceback (most recent call last):",
                        '  File "/usr/local/lib/python3.12/dist-packages/vllm/v1/executor/multiproc_executor.py", '
                        "line 619, in __init__", "    self.worker.load_model()",
                        "           ^^^^^^^^^^^^^^^^^^^^^^^^^"], proc="Worker_TP4_EP4",
                        where="multiproc_executor.py:870")
    status, doc, _ = explain(tmp_path, lines)
    assert status == 1 and doc["root_cause"] == [] and doc["traceback_cut"] == 4
    _, text, _ = explain(tmp_path, lines, as_json=False)
    assert "root cause: not in the log: it ends inside a traceback (line 4)" in text
    assert "File" not in text and "load_model" not in text


@pytest.mark.parametrize(("count", "word"), [(1, "1 line from"), (2, "2 lines from"), (0, "0 lines from")])
def test_the_count_of_lines_read_is_said_in_the_right_number(tmp_path, count, word):
    path = tmp_path / "v.log"
    path.write_text("".join("INFO hello\n" for _ in range(count)), encoding="utf-8")
    out = io.StringIO()
    run_explain([str(path)], as_json=False, ctx=Context(env={}, stdout=out, stderr=io.StringIO()))
    assert out.getvalue().startswith(f"read: {word} ")


_MEGA = "NotImplementedError: DeepSeek V4 MegaMoE currently requires expert parallel. Enable it with " \
        "--enable-expert-parallel, or pick a different --moe-backend."


@pytest.mark.parametrize(("args", "named"), [
    # the row's case: no expert parallelism in the arguments
    ("{'model': 'deepseek-ai/DeepSeek-V4-Pro', 'moe_backend': 'deep_gemm_mega_moe', 'tensor_parallel_size': 8}",
     ["mega-moe-needs-ep"]),
    # the fix is already applied and a draft model is there: the upstream bug, not the flag (vllm#55914)
    ("{'model': 'deepseek-ai/DeepSeek-V4-Pro', 'moe_backend': 'deep_gemm_mega_moe', 'enable_expert_parallel': True, "
     "'speculative_config': {'method': 'dspark', 'num_speculative_tokens': 7}}", ["mega-moe-draft-without-ep"]),
    # the fix is applied, no draft model: not a failure dsv4-launch knows the cause of
    ("{'model': 'deepseek-ai/DeepSeek-V4-Pro', 'moe_backend': 'deep_gemm_mega_moe', 'enable_expert_parallel': True}",
     []),
])
def test_a_fix_already_applied_is_not_given_again(tmp_path, args, named):
    lines = [version_line("0.29.0"), args_line(args), *vllm_lines(traceback([], _MEGA))]
    status, doc, _ = explain(tmp_path, lines)
    assert [i["rule"] for i in doc["explained"]] == named and status == (0 if named else 1)
    if named == ["mega-moe-draft-without-ep"]:
        assert "0.30.0" in doc["explained"][0]["fix"] and "--enable-expert-parallel" not in doc["explained"][0]["fix"]


def test_without_the_arguments_line_the_row_is_named(tmp_path):
    status, doc, _ = explain(tmp_path, [version_line("0.29.0"), *vllm_lines(traceback([], _MEGA))])
    assert [i["rule"] for i in doc["explained"]] == ["mega-moe-needs-ep"]


def test_the_generic_pp_message_is_dspark_pp_only_with_dspark_and_pp_in_the_arguments(tmp_path):
    pp = "ValueError: Pipeline parallelism is not supported for this model. Supported models implement the " \
         "`SupportsPP` interface."
    dspark = "{'model': 'deepseek-ai/DeepSeek-V4-Flash-0731', 'pipeline_parallel_size': 3, " \
             "'speculative_config': {'method': 'dspark', 'num_speculative_tokens': 5}}"
    _, doc, _ = explain(tmp_path, [version_line("0.27.1"), args_line(dspark), *vllm_lines(traceback([], pp))])
    assert [i["rule"] for i in doc["explained"]] == ["dspark-pp"]
    plain = "{'model': 'MiniMax-M3', 'pipeline_parallel_size': 7}"  # vllm#45455: another model, no DSpark
    status, doc, _ = explain(tmp_path, [version_line("0.27.1"), args_line(plain), *vllm_lines(traceback([], pp))],
                             name="minimax.log")
    assert status == 1 and doc["explained"] == []
    status, doc, _ = explain(tmp_path, [version_line("0.27.1"), *vllm_lines(traceback([], pp))], name="noargs.log")
    assert status == 1 and doc["explained"] == []


# --- round two (issue 40) -------------------------------------------------------------------------

@pytest.mark.parametrize(("version", "named"), [("0.26.0", True), (None, True), ("0.25.1", False), ("0.29.0", False)])
def test_the_026_prefill_crash_is_named_only_on_its_release(tmp_path, version, named):
    """The FlashMLA assertion has other causes elsewhere: a log of another release is not named."""
    lines = vllm_lines([f"RuntimeError: Assertion error ({_PHASE1}): {_TMA_ASSERT} failed."])
    _, doc, _ = explain(tmp_path, ([version_line(version)] if version else []) + lines)
    assert ("flashmla-sparse-prefill-0.26" in {i["rule"] for i in doc["explained"]}) is named
    if not named:
        assert "phase1.cuh:614" in doc["root_cause"][0]["text"]


@pytest.mark.parametrize(("version", "line", "wanted"), [
    ("0.33.0", "vllm: error: unrecognized arguments: --enable-expert-paralel",
     "did you mean --enable-expert-parallel?"),
    ("0.24.0", "api_server.py: error: unrecognized arguments: -tensor-parallel-size 2",
     "did you mean --tensor-parallel-size?"),
    ("0.33.0", "vllm: error: unrecognized arguments: --no-such-thing-at-all", "--no-such-thing-at-all: no such option"),
])
def test_an_argument_error_is_answered_with_vllms_message_and_the_nearest_option(tmp_path, version, line, wanted):
    status, doc, _ = explain(tmp_path, [version_line(version), line])
    item = doc["explained"][0]
    assert status == 0 and item["rule"] == "vllm-argument-error"
    assert line.split(": error: ")[1] in item["effect"] and wanted in item["fix"]
    assert f"vLLM {version}'s parser" in item["fix"]
    assert doc["root_cause"][0]["text"] == line


def test_the_kv_choice_error_stays_kv_invalids(tmp_path):
    line = "vllm serve: error: argument --kv-cache-dtype: invalid choice: 'fp9' (choose from auto, fp8)"
    _, doc, _ = explain(tmp_path, [version_line("0.29.0"), line])
    assert [i["rule"] for i in doc["explained"]] == ["kv-invalid"]


def test_the_max_len_fix_quotes_vllms_estimate(tmp_path):
    message = ("ValueError: To serve at least one request with the model's max seq len (30000), (6.66 GiB KV cache is "
               "needed, which is larger than the available KV cache memory (5.44 GiB). Based on the available memory, "
               "the estimated maximum model length is 13528. Try increasing `gpu_memory_utilization`")
    _, doc, _ = explain(tmp_path, [version_line("0.29.0"), *vllm_lines([message])])
    item = next(i for i in doc["explained"] if i["rule"] == "max-model-len-too-long")
    assert item["fix"].startswith("--max-model-len 13528 ")


def test_a_port_in_use_gets_a_hint_not_a_name(tmp_path):
    lines = [version_line("0.29.0"), *vllm_lines(["OSError: [Errno 98] Address already in use"])]
    status, doc, _ = explain(tmp_path, lines)
    assert status == 1 and doc["explained"] == [] and "--port" in doc["hint"]
    _, doc, _ = explain(tmp_path,
                        [version_line("0.29.0"), *vllm_lines(["OSError: [Errno 28] No space left on device"])])
    assert doc["hint"] is None


def test_a_message_wrapped_by_the_copy_is_matched_whole(tmp_path):
    """The reporter's copy breaks FlashInfer's check after '(num_tokens <= 64)': still named, once."""
    lines = [version_line("0.26.0"), "tvm.error.InternalError: Check failed: num_tokens > 64 (5 vs. 64) : Decode "
             "(num_tokens <= 64)", "must go through sparse_mla_sm120_decode_dsv3_2 or sparse_mla_sm120_decode_dsv4"]
    _, doc, _ = explain(tmp_path, lines)
    assert [i["rule"] for i in doc["explained"]] == ["flashinfer-sm120-no-kernel"]
    assert doc["explained"][0]["line"] == 2


def test_a_bare_assertion_is_not_the_c128a_one_without_its_frame(tmp_path):
    lines = [version_line("0.33.0"),
             '  File "/x/vllm/v1/worker/gpu_worker.py", line 480, in determine_available_memory',
             "    assert x", "AssertionError"]
    _, doc, _ = explain(tmp_path, lines)
    assert doc["explained"] == []


_MEGA = "NotImplementedError: DeepSeek V4 MegaMoE currently requires expert parallel"


@pytest.mark.parametrize(("pasted", "named"), [
    (["vllm serve deepseek-ai/DeepSeek-V4-Pro \\", "  --enable-expert-parallel --moe-backend deep_gemm_mega_moe \\",
      "  --speculative-config '{\"method\": \"dspark\", \"num_speculative_tokens\": 7}'"], "mega-moe-draft-without-ep"),
    (["nohup vllm serve /data/DeepSeek-V4-Pro", "--enable-expert-parallel", "--moe-backend deep_gemm_mega_moe",
      "--speculative-config '{\"method\": \"dspark\"}'"], "mega-moe-draft-without-ep"),
    (["vllm serve deepseek-ai/DeepSeek-V4-Pro --moe-backend deep_gemm_mega_moe"], "mega-moe-needs-ep"),
])
def test_a_pasted_command_tells_which_fix_applies(tmp_path, pasted, named):
    """Without a 'non-default args' line, the pasted command's flags gate the signatures: no fix
    names --enable-expert-parallel when the command already has it."""
    _, doc, _ = explain(tmp_path, [*pasted, version_line("0.29.0"), *vllm_lines([_MEGA])])
    assert [i["rule"] for i in doc["explained"]] == [named]
    assert ("--enable-expert-parallel" in doc["explained"][0]["fix"]) is (named == "mega-moe-needs-ep")


def test_a_pasted_commands_secret_is_never_printed(tmp_path):
    lines = ["vllm serve deepseek-ai/DeepSeek-V4-Flash --api-key sk-pasted-secret-123 \\", "  --enable-expert-parallel",
             version_line("0.29.0"), *vllm_lines(["OSError: [Errno 98] Address already in use sk-pasted-secret-123"])]
    for as_json in (True, False):
        _, out, _ = explain(tmp_path, lines, as_json=as_json)
        assert "sk-pasted-secret-123" not in json.dumps(out)


@pytest.mark.parametrize(("gpu", "named"),
                         [(None, True), ("NVIDIA RTX PRO 6000 Blackwell Server Edition (SM 12.0)", True),
                                            ("NVIDIA A100-SXM4-80GB (SM 8.0)", False)])
def test_flashmla_forced_is_named_only_off_other_gpu_families(tmp_path, gpu, named):
    """FlashMLA's own check names SM 12.x's pre-flight rule; on a GPU the log shows as another
    family the same words have another fix, and nothing is named."""
    lines = [version_line("0.29.0")] + ([f"dsv4-launch: warning: {gpu} with vLLM 0.29.0: …"] if gpu else [])
    lines += vllm_lines(
        ["RuntimeError: Sparse Attention Forward Kernel is only supported on SM90a and SM100f architectures."])
    _, doc, _ = explain(tmp_path, lines)
    assert ("flashmla-on-sm12" in [i["rule"] for i in doc["explained"]]) is named

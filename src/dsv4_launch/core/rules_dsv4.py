"""The DeepSeek-V4 pre-flight rules: configurations vLLM accepts and then fails on, as rows.

Every row names the vLLM code that fails and the upstream issue; docs/rules-evidence.md has
the reading for each of the releases 0.24.0 … 0.33.0 (file:line per release, exception text,
the stage it fires at), docs/release-matrix.md what the oracle tests confirmed per release.
``core/rules.py`` explains the fields and how a row is judged. Adding a rule = one row here +
a trips/passes pair in tests/test_rules.py (+ an oracle in tests/vllm_real/ when vLLM's own
code can judge it on the CPU).
"""

from __future__ import annotations

import re

from .facts import Facts, as_bool, as_int, attention_backend, json_option, vllm_env_bool
from .gpus import DSV4_FAMILIES, GpuInfo, describe_kinds
from .kv import AUTO_VALUES, DSV4_BACKEND_NAMES, FLASHINFER_DSV4, FLASHMLA_BACKENDS, FP8_DS_MLA, dsv4_backend, kv_path
from .model import V4, V41
from .rules import CITED, CONFIRMED, DERIVED, REFUSE, REPORTED, WARN, Rule
from .rules_memory import MEMORY_RULES
from .versions import VersionRange

BOTH = frozenset({V4, V41})
OLD_GPUS = frozenset({"3", "5", "6", "7", "8"})  # below SM 9.0: no DeepSeek-V4 kernels
NOT_SM10 = frozenset({"9", "12"})

# Attention backends that are not DeepSeek-V4 backends at all: ValueError in
# ``_select_dsv4_attn_cls`` (vllm/models/deepseek_v4/nvidia/model.py).
NOT_DSV4_BACKENDS = frozenset({"FLASHINFER_MLA_SPARSE", "FLASHINFER_MLA_SPARSE_SM120"})

# DeepSeek-V4.1's resolver (models/deepseek_v41/attention.py _resolve_dsv4_kv_cache_dtype): the
# packed path of 0.31+ takes only these (and *_ds_mla); 0.30.0's is V4's ("fp8*" only).
DSV41_PACKED_OK = frozenset({"auto", "fp8"})
V41_PACKED_STRICT = VersionRange(since="0.31.0")  # from here the packed path rejects fp8_e4m3 & co.
V41_PLAIN_ROWS_CHECKED = VersionRange(since="0.31.0")  # from here *_ds_mla on plain rows raises
# V4.1's selector (deepseek_v41/nvidia/model.py): these take the FlashInfer class, plain rows off SM 12.x.
V41_FLASHINFER_BACKENDS = frozenset({FLASHINFER_DSV4, "FLASHINFER_MLA_SPARSE_DSV41"})

# KV connectors without SupportsHMA (vllm/distributed/kv_transfer/kv_connector; §7).
NO_HMA_CONNECTORS = frozenset({"ExampleConnector", "LMCacheConnectorV1", "LMCacheMPConnector",
                               "FlexKVConnectorV1", "HF3FSKVConnector"})
# --attention-config.indexer_kv_dtype values the DeepSeek sparse indexer rejects (indexer.py
# dsa_indexer_uses_fp4, vLLM 0.28+; accepted: auto, fp8, mxfp4).
INDEXER_REJECTED = frozenset({"bf16", "nvfp4"})
V4_PARSER = "deepseek_v4"  # tool and reasoning parser name for DeepSeek-V4 in 0.24–0.33 (tool_parsers/, reasoning/)
V41_PARSER = "deepseek_v41"  # DeepSeek-V4.1's, 0.30+
# Features that make vLLM fall back to the V1 model runner (_get_v2_model_runner_unsupported_features,
# config/vllm.py), with the releases each one does it in: (dest, words, releases).
V2_UNSUPPORTED = (
    ("enable_dbo", "--enable-dbo (dual batch overlap)", VersionRange(since="0.29.0")),
    ("enable_elastic_ep", "--enable-elastic-ep (elastic expert parallelism)", VersionRange(since="0.29.0", before="0.32.0")),
    ("logits_processors", "--logits-processors (custom logits processors)", VersionRange(since="0.29.0", before="0.31.0")),
)
ASSERTS_UNTIL = VersionRange(before="0.30.0")  # the DeepSeek-V4 KV check is a bare assert here
INDEXER_ASSERTS_UNTIL = VersionRange(before="0.28.0")  # the FP4 indexer check is a bare assert here
THINK_MAX_MIN_LEN = 393_216  # recipes: "Think Max" needs at least this --max-model-len
MEGA_MOE = "deep_gemm_mega_moe"

RECIPES = "vllm-project/recipes"


def _setting(facts: Facts, dest: str, option: str) -> str:
    """``--block-size 64 (config file)``: an option as the user set it, and where."""
    value = facts.args.value(dest)
    source = facts.args.source(dest)
    where = f" ({source})" if source and source != "command line" else ""
    return f"{option} {value}{where}"


def _kv_value(facts: Facts) -> str | None:
    kv = facts.args.value("kv_cache_dtype")
    return None if kv in AUTO_VALUES or not isinstance(kv, str) else kv


def _kv_is_valid(facts: Facts, kv: str) -> bool:
    """A value this vLLM accepts at all (an invalid one is vLLM's own error, said apart)."""
    valid = facts.accepted_values.get("kv_cache_dtype")
    return not valid or kv in valid


def _is_nvfp4_on_mla(kv: str, version: str | None) -> bool:
    """vLLM's own test in VllmConfig (config/vllm.py), as it changed by release (§9)."""
    if VersionRange(before="0.28.0").contains(version) is True:
        return kv == "nvfp4"
    if VersionRange(before="0.30.0").contains(version) is True:
        return kv.startswith("nvfp4")
    return kv.startswith("nvfp4") and not kv.endswith("_ds_mla")


def spec_config(facts: Facts) -> dict:
    return json_option(facts.args, "speculative_config") or {}


def spec_method(facts: Facts) -> str | None:
    method = spec_config(facts).get("method")
    return method.lower() if isinstance(method, str) else None


def _moe_backend(facts: Facts) -> str | None:
    value = facts.args.value("moe_backend")
    if value is None:
        value = (json_option(facts.args, "kernel_config") or {}).get("moe_backend")
    return value.lower().replace("-", "_") if isinstance(value, str) else None


def _attention_config(facts: Facts) -> dict:
    return json_option(facts.args, "attention_config") or {}


def _optimized(facts: Facts) -> bool:
    """Python runs vLLM with -O (PYTHONOPTIMIZE as CPython reads it: a number above 0, or any
    other non-empty text), so vLLM's bare ``assert`` statements are skipped."""
    value = (facts.env.get("PYTHONOPTIMIZE") or "").strip()
    if not value:
        return False
    level = as_int(value)
    return level is None or level > 0


def _assert_doubt(facts: Facts, releases: VersionRange, then: str) -> dict:
    """``uncertain`` for a refusal whose failing line is a bare assert in ``releases``, when
    PYTHONOPTIMIZE is set (the assert is skipped; ``then`` says what vLLM does instead)."""
    if not _optimized(facts) or releases.contains(facts.vllm_version) is False:
        return {}
    return {"uncertain": f"PYTHONOPTIMIZE is set: vLLM before {releases.before} checks this with a bare assert, "
                         f"which Python skips under -O, and then {then}"}


def _v41_plain_rows(facts: Facts, gpu: GpuInfo | None) -> bool:
    """DeepSeek-V4.1 stores plain KV rows (bf16 / per-tensor FP8) rather than a packed record:
    a FlashInfer DSv4/DSv41 backend off SM 12.x (deepseek_v41/nvidia/model.py _select_dsv4_attn_cls)."""
    if gpu is None or gpu.capability is None:
        return False
    return attention_backend(facts.args) in V41_FLASHINFER_BACKENDS and gpu.capability[0] != 12


def _tp(facts: Facts) -> int:
    tp = as_int(facts.args.value("tensor_parallel_size"))
    return tp if tp and tp > 0 else 1


# --- checks: each returns the template's values when its condition holds ------------------

def kv_invalid(facts: Facts, gpu: GpuInfo | None):
    kv = _kv_value(facts)
    if kv is None or _kv_is_valid(facts, kv):
        return None
    which = facts.vllm_words() if facts.accepted_values_exact else f"{facts.vllm_words()} (judged by the nearest release dsv4-launch knows)"
    return {"kv": kv, "which": which, "valid": ", ".join(facts.accepted_values["kv_cache_dtype"])}


def kv_not_fp8_on_ds_mla(facts: Facts, gpu: GpuInfo | None):
    kv = _kv_value(facts)
    if kv is None or kv.startswith("fp8") or not _kv_is_valid(facts, kv) or _is_nvfp4_on_mla(kv, facts.vllm_version):
        return None
    if gpu is None or gpu.capability is None:  # a GPU-family row: evaluate() passes a GPU of known type
        return None
    path = kv_path(gpu.capability, dsv4_backend(facts.args))
    if path is None or path.layout != FP8_DS_MLA:
        return None
    return {"setting": f"--kv-cache-dtype {kv} ({facts.args.source('kv_cache_dtype')})", "kv": kv,
            **_assert_doubt(facts, ASSERTS_UNTIL, "vLLM silently stores fp8_ds_mla instead")}


def nvfp4_on_mla(facts: Facts, gpu: GpuInfo | None):
    kv = _kv_value(facts)
    if kv is None or not _kv_is_valid(facts, kv) or not _is_nvfp4_on_mla(kv, facts.vllm_version):
        return None
    return {"setting": f"--kv-cache-dtype {kv} ({facts.args.source('kv_cache_dtype')})"}


def kv_rejected_by_v41(facts: Facts, gpu: GpuInfo | None):
    kv = _kv_value(facts)
    if kv is None or not _kv_is_valid(facts, kv) or _is_nvfp4_on_mla(kv, facts.vllm_version) or _v41_plain_rows(facts, gpu):
        return None  # plain rows: v41-ds-mla-on-plain-rows
    strict = V41_PACKED_STRICT.contains(facts.vllm_version)
    if strict is True:
        rejected, accepted = kv not in DSV41_PACKED_OK and not kv.endswith("_ds_mla"), "auto, fp8 and the *_ds_mla records"
        error = f"DeepseekV4 packed KV layouts only support fp8 kv-cache, got {kv}"
    elif strict is False:
        rejected, accepted = not kv.startswith("fp8"), "auto and the fp8 values"
        error = f"DeepseekV4 fp8_ds_mla layout only supports fp8 kv-cache, got {kv}"
    else:  # version unknown: only what every release rejects
        rejected, accepted = not kv.startswith("fp8") and not kv.endswith("_ds_mla"), "auto and fp8"
        error = f"… only supports fp8 kv-cache, got {kv}"
    if not rejected:
        return None
    return {"setting": f"--kv-cache-dtype {kv} ({facts.args.source('kv_cache_dtype')})", "kv": kv,
            "accepted": accepted, "error": error}


def v41_ds_mla_on_plain_rows(facts: Facts, gpu: GpuInfo | None):
    kv = _kv_value(facts)
    if kv is None or not kv.endswith("_ds_mla") or not _kv_is_valid(facts, kv) or not _v41_plain_rows(facts, gpu):
        return None
    return {"setting": f"--kv-cache-dtype {kv} ({facts.args.source('kv_cache_dtype')})", "kv": kv,
            "backend": attention_backend(facts.args)}


def backend_not_dsv4(facts: Facts, gpu: GpuInfo | None):
    backend = attention_backend(facts.args)
    if backend not in NOT_DSV4_BACKENDS:
        return None
    if facts.model.family == V41:  # V4.1's own selector raises the same (vLLM 0.30+, where V4.1 exists)
        return {"backend": backend, "name": "DeepSeek V4.1", "use": "FLASHINFER_MLA_SPARSE_DSV41"}
    return {"backend": backend, "name": "DeepSeek V4", "use": FLASHINFER_DSV4}


def backend_ignored(facts: Facts, gpu: GpuInfo | None):
    backend = attention_backend(facts.args)
    if backend is None or dsv4_backend(facts.args) is not None:
        return None
    known = facts.accepted_values.get("attention_backend")
    if known and backend not in known:
        return None  # not a vLLM backend name at all: vLLM says so itself at once
    return {"backend": backend}


def flashmla_forced(facts: Facts, gpu: GpuInfo | None):
    backend = dsv4_backend(facts.args)
    return {"backend": backend} if backend in FLASHMLA_BACKENDS else None


def flashinfer_dsv4_on_hopper(facts: Facts, gpu: GpuInfo | None):
    return {"backend": FLASHINFER_DSV4} if dsv4_backend(facts.args) == FLASHINFER_DSV4 else None


def ds_mla_on_plain_rows(facts: Facts, gpu: GpuInfo | None):
    kv = facts.args.value("kv_cache_dtype")
    if kv not in ("fp8_ds_mla", "nvfp4_ds_mla") or not _kv_is_valid(facts, kv):
        return None  # nvfp4_ds_mla before 0.30: kv-invalid
    if facts.model.family == V41:  # V4.1 0.30.0 only: its resolver is V4's; 0.31+ raise (v41-ds-mla-on-plain-rows)
        if V41_PLAIN_ROWS_CHECKED.contains(facts.vllm_version) is not False or not _v41_plain_rows(facts, gpu):
            return None
        return {"backend": attention_backend(facts.args), "kv": kv}
    if dsv4_backend(facts.args) != FLASHINFER_DSV4:
        return None
    return {"backend": FLASHINFER_DSV4, "kv": kv}


def any_gpu(facts: Facts, gpu: GpuInfo | None):
    return {}


def block_size_v4(facts: Facts, gpu: GpuInfo | None):
    return _block(facts, 256, "DeepSeek-V4")


def block_size_v41(facts: Facts, gpu: GpuInfo | None):
    # 64 on the SM 9.x family, 128 elsewhere (deepseek_v41/sparse_mla.py, 0.30+); the FlashInfer
    # plain-row backend takes 128 on every GPU (deepseek_v41/nvidia/flashinfer_sparse.py)
    if gpu is None or gpu.capability is None:  # a GPU-family row: evaluate() passes a GPU of known type
        return None
    sm9_flashmla = gpu.capability[0] == 9 and not _v41_plain_rows(facts, gpu)
    return _block(facts, 64 if sm9_flashmla else 128, "DeepSeek-V4.1")


def _block(facts: Facts, multiple: int, name: str):
    size = as_int(facts.args.value("block_size"))
    if size is None or size <= 0 or size % multiple == 0:
        return None
    return {"setting": _setting(facts, "block_size", "--block-size"), "name": name, "multiple": multiple,
            "suggested": max(multiple, size // multiple * multiple)}


def _tp_sizes(facts: Facts) -> str:
    return ", ".join(str(d) for d in (1, 2, 4, 8, 16, 32, 64, 128) if facts.model.tp_splits(d))


def tp_vs_heads(facts: Facts, gpu: GpuInfo | None):
    tp = _tp(facts)
    heads = facts.model.number("num_attention_heads")
    if not heads or heads % tp == 0:
        return None
    return {"setting": _setting(facts, "tensor_parallel_size", "--tensor-parallel-size"), "tp": tp, "heads": heads,
            "arch": facts.model.architecture or "the model", "sizes": _tp_sizes(facts)}


def tp_vs_o_groups(facts: Facts, gpu: GpuInfo | None):
    tp = _tp(facts)
    groups = facts.model.number("o_groups")
    heads = facts.model.number("num_attention_heads")
    if not groups or tp <= groups or (heads and heads % tp):
        return None  # n_local_groups = 0 only past o_groups (TP not dividing the heads: tp-heads)
    dp_gpus = tp // groups
    return {"setting": _setting(facts, "tensor_parallel_size", "--tensor-parallel-size"), "tp": tp, "groups": groups,
            "arch": facts.model.architecture or "the model", "sizes": _tp_sizes(facts),
            "dp": f"--tensor-parallel-size {groups} --data-parallel-size {dp_gpus}" if dp_gpus > 1
            else f"--tensor-parallel-size {groups}"}


def tp_pp_vs_visible_gpus(facts: Facts, gpu: GpuInfo | None):
    tp = _tp(facts)
    pp = as_int(facts.args.value("pipeline_parallel_size")) or 1
    # vLLM's own check (config/parallel.py): only with no executor backend given, a world size
    # above 1 and one node.
    multi_node = (as_int(facts.args.value("nnodes")) or 1) > 1 or bool(facts.args.value("headless"))
    counted = facts.gpus if facts.gpu_source in ("nvml", "nvidia-smi") else None
    if (counted is None or multi_node or pp < 1 or tp * pp <= 1 or facts.args.value("distributed_executor_backend")
            is not None or tp * pp <= counted.visible_count):
        return None
    visible = counted.visible_count
    sizes = f"--tensor-parallel-size {tp}" + (f" × --pipeline-parallel-size {pp}" if pp > 1 else "")
    needed = tp * pp
    return {"sizes": sizes, "needed": f"{needed} GPU{'' if needed == 1 else 's'}",
            "visible": f"{visible} {'is' if visible == 1 else 'are'}"}


def attention_env_ignored(facts: Facts, gpu: GpuInfo | None):
    value = facts.env.get("VLLM_ATTENTION_BACKEND")
    if not value:
        return None
    usable = value.strip().upper() in DSV4_BACKEND_NAMES - NOT_DSV4_BACKENDS
    fix = (f"--attention-backend {value.strip().upper()} (and unset VLLM_ATTENTION_BACKEND)" if usable
           else "unset VLLM_ATTENTION_BACKEND (DeepSeek-V4's default attention is used either way)")
    return {"value": value, "fix": fix}


def mixed_gpus(facts: Facts, gpu: GpuInfo | None):
    if len({g.capability for g in facts.known_gpus}) > 1:
        return {"kinds": describe_kinds(facts.known_gpus)}
    return None


# F1: the Blackwell data-centre recipe flags

def mega_moe_without_ep(facts: Facts, gpu: GpuInfo | None):
    if _moe_backend(facts) != MEGA_MOE or facts.args.value("enable_expert_parallel") is True:
        return None
    return {}


def mega_moe_not_fp4(facts: Facts, gpu: GpuInfo | None):
    if _moe_backend(facts) != MEGA_MOE:
        return None
    dtype = (facts.model.config or {}).get("expert_dtype", "fp4")  # vLLM: getattr(config, "expert_dtype", "fp4")
    return None if dtype == "fp4" else {"dtype": dtype}


def mega_moe_nvfp4(facts: Facts, gpu: GpuInfo | None):
    if _moe_backend(facts) != MEGA_MOE:
        return None
    config = facts.model.config or {}
    quant = config.get("quantization_config")
    algo = quant.get("moe_quant_algo") if isinstance(quant, dict) else None
    if config.get("expert_dtype", "fp4") != "fp4" or not isinstance(algo, str) or algo.upper() != "NVFP4":
        return None  # not fp4 experts: mega-moe-fp4
    return {"arch": facts.model.known_id or facts.model.name or "this checkpoint"}


def mega_moe_off_sm100(facts: Facts, gpu: GpuInfo | None):
    return {} if _moe_backend(facts) == MEGA_MOE else None


def _fp4_indexer_flag(facts: Facts) -> bool:
    return as_bool(_attention_config(facts).get("use_fp4_indexer_cache"))


def _fp4_indexer_fix(facts: Facts) -> str:
    sm10 = [g for g in facts.known_gpus if g.capability is not None and g.capability[0] == 10]
    if sm10 and VersionRange(since="0.28.0").contains(facts.vllm_version):
        return "--attention-config.indexer_kv_dtype mxfp4 (the FP4 indexer cache on SM 10.x)"
    return "drop --attention_config.use_fp4_indexer_cache (vLLM picks the indexer cache itself)"


def fp4_indexer_off_sm10(facts: Facts, gpu: GpuInfo | None):
    if not _fp4_indexer_flag(facts):
        return None
    return {"fix": "drop --attention_config.use_fp4_indexer_cache (an SM 10.x-only option)",
            **_assert_doubt(facts, INDEXER_ASSERTS_UNTIL, "the FP4 indexer cache is used on this GPU anyway")}


def fp4_indexer_removed(facts: Facts, gpu: GpuInfo | None):
    config = _attention_config(facts)
    if "use_fp4_indexer_cache" not in config:
        return None
    if not _fp4_indexer_flag(facts):  # an opt-out (False): the FP4 cache is off by default anyway
        return {"fix": "drop --attention_config.use_fp4_indexer_cache (vLLM picks the indexer cache itself)"}
    return {"fix": _fp4_indexer_fix(facts)}


def mxfp4_indexer_off_sm10(facts: Facts, gpu: GpuInfo | None):
    if _attention_config(facts).get("indexer_kv_dtype") != "mxfp4" or _fp4_indexer_flag(facts):
        return None
    return {}


def indexer_dtype_unsupported(facts: Facts, gpu: GpuInfo | None):
    value = _attention_config(facts).get("indexer_kv_dtype")
    return {"value": value} if value in INDEXER_REJECTED else None


def indexer_dtype_ignored(facts: Facts, gpu: GpuInfo | None):
    value = _attention_config(facts).get("indexer_kv_dtype")
    return {"value": value} if value not in (None, "bf16") else None


# F4: speculative decoding vs checkpoint

def _has_dspark(facts: Facts) -> bool:
    """The checkpoint ships a DSpark module: vLLM reads ``config.dspark_target_layer_ids``
    unconditionally (nvidia/dspark.py); ``dspark_block_size`` alone (Vision-Exp) is not one."""
    return "dspark_target_layer_ids" in (facts.model.config or {})


def dspark_too_old(facts: Facts, gpu: GpuInfo | None):
    return {} if spec_method(facts) == "dspark" else None


def dspark_without_module(facts: Facts, gpu: GpuInfo | None):
    if spec_method(facts) != "dspark" or spec_config(facts).get("model") or facts.model.config is None or _has_dspark(facts):
        return None
    return {"arch": facts.model.architecture or "the model"}


def dspark_with_pp(facts: Facts, gpu: GpuInfo | None):
    pp = as_int(facts.args.value("pipeline_parallel_size")) or 1
    return {"pp": pp} if spec_method(facts) == "dspark" and pp > 1 else None


def dspark_k_below_block(facts: Facts, gpu: GpuInfo | None):
    block = facts.model.number("dspark_block_size")
    k = as_int(spec_config(facts).get("num_speculative_tokens"))
    if spec_method(facts) != "dspark" or not block or k is None or k >= block:
        return None
    return {"k": k, "block": block}


def _v2_runner_env(facts: Facts) -> bool | str | None:
    """VLLM_USE_V2_MODEL_RUNNER as vLLM reads it (envs.py maybe_convert_bool: ``bool(int(v))``):
    None when unset, True/False, or the text itself when int() fails on it (vLLM raises)."""
    return vllm_env_bool(facts.env.get("VLLM_USE_V2_MODEL_RUNNER"))


def dspark_on_v1_runner(facts: Facts, gpu: GpuInfo | None):
    if spec_method(facts) != "dspark" or _v2_runner_env(facts) is not False:
        return None
    return {}


def dspark_v2_unsupported(facts: Facts, gpu: GpuInfo | None):
    if spec_method(facts) != "dspark" or _v2_runner_env(facts) is False or isinstance(_v2_runner_env(facts), str):
        return None  # V1 forced: dspark-v1-runner; unreadable: v2-runner-env-not-int
    used = [words for dest, words, releases in V2_UNSUPPORTED
            if facts.args.value(dest) not in (None, False, [], "") and releases.contains(facts.vllm_version) is not False]
    if not used:
        return None
    forced = _v2_runner_env(facts) is True
    error = ("'Model Runner V2 does not yet support: …'" if forced
             else "'Model Runner V1 does not support: dspark speculative decoding'")
    how = "VLLM_USE_V2_MODEL_RUNNER=1 makes V2 refuse it" if forced else "vLLM falls back to the V1 model runner for it"
    return {"used": " and ".join(used), "error": error, "how": how}


def draft_kv_not_fp8(facts: Facts, gpu: GpuInfo | None):
    if spec_method(facts) != "dspark":
        return None
    kv = spec_config(facts).get("kv_cache_dtype")
    if not isinstance(kv, str) or kv.startswith("fp8") or _is_nvfp4_on_mla(kv, facts.vllm_version):
        return None
    if kv == "auto" and ASSERTS_UNTIL.contains(facts.vllm_version) is False:
        return None  # 0.30+ resolve auto to fp8_ds_mla themselves
    if gpu is None or gpu.capability is None:
        return None
    path = kv_path(gpu.capability, dsv4_backend(facts.args))
    if path is None or path.layout != FP8_DS_MLA:
        return None
    return {"kv": kv}


def mtp_on_dspark_checkpoint(facts: Facts, gpu: GpuInfo | None):
    if spec_method(facts) not in ("mtp", "deepseek_mtp") or not _has_dspark(facts):
        return None
    return {"arch": facts.model.known_id or facts.model.name or "this checkpoint"}


# F5, F6, F7, F8

def vision_before_030(facts: Facts, gpu: GpuInfo | None):
    layers = facts.model.number("vision_n_layers")
    if not layers or layers <= 0:
        return None
    return {"layers": layers, "arch_words": f"{facts.model.known_id or facts.model.name} has "}


def _dcp_doubt(facts: Facts) -> dict:
    dcp = as_int(facts.args.value("decode_context_parallel_size")) or 1
    if dcp <= 1:
        return {}
    return {"uncertain": f"with --decode-context-parallel-size {dcp} vLLM may plan the sharded caches apart, "
                         "which this check does not model"}


def hma_disabled(facts: Facts, gpu: GpuInfo | None):
    return _dcp_doubt(facts) if facts.args.value("disable_hybrid_kv_cache_manager") is True else None


def _connector_from_offloading(facts: Facts) -> bool:
    config = json_option(facts.args, "kv_transfer_config") or {}
    return not isinstance(config.get("kv_connector"), str) and facts.args.value("kv_offloading_backend") == "lmcache"


def _connector(facts: Facts) -> str | None:
    config = json_option(facts.args, "kv_transfer_config") or {}
    name = config.get("kv_connector")
    if isinstance(name, str):
        return name
    if facts.args.value("kv_offloading_backend") == "lmcache":
        return "LMCacheMPConnector"
    return None


def _hma_explicitly_on(facts: Facts) -> bool:
    return facts.args.value("disable_hybrid_kv_cache_manager") is False or \
        facts.args.value("enable_hybrid_kv_cache_manager") is True


def connector_turns_hma_off(facts: Facts, gpu: GpuInfo | None):
    connector = _connector(facts)
    if connector not in NO_HMA_CONNECTORS or facts.args.value("disable_hybrid_kv_cache_manager") is not None \
            or _hma_explicitly_on(facts):
        return None
    how = "--kv-offloading-backend lmcache selects it" if _connector_from_offloading(facts) else "--kv-transfer-config"
    return {"connector": connector, "how": how, **_dcp_doubt(facts)}


def hma_off_promoted(facts: Facts, gpu: GpuInfo | None):
    if hma_disabled(facts, gpu) is not None:
        return {"why": "--disable-hybrid-kv-cache-manager"}
    found = connector_turns_hma_off(facts, gpu)
    if found is None:
        return None
    return {"why": f"{found['connector']} (vLLM turns the hybrid KV-cache manager off for it)"}


def connector_with_hma_forced(facts: Facts, gpu: GpuInfo | None):
    connector = _connector(facts)
    return {"connector": connector} if connector in NO_HMA_CONNECTORS and _hma_explicitly_on(facts) else None


def tokenizer_without_template(facts: Facts, gpu: GpuInfo | None):
    mode = facts.args.value("tokenizer_mode")
    return {"mode": mode} if mode in ("hf", "slow") else None


def v4_parsers_on_v41(facts: Facts, gpu: GpuInfo | None):
    used = [f"--{name.replace('_', '-')} {facts.args.value(name)}" for name in ("tool_call_parser", "reasoning_parser")
            if facts.args.value(name) == "deepseek_v4"]
    return {"used": " and ".join(used)} if used else None


def v4_wrong_parsers(facts: Facts, gpu: GpuInfo | None):
    used = []
    for dest, plugin in (("tool_call_parser", "tool_parser_plugin"), ("reasoning_parser", "reasoning_parser_plugin")):
        name = facts.args.value(dest)
        if not isinstance(name, str) or not name or name == V4_PARSER or facts.args.value(plugin):
            continue  # unset, right, or a plugin's own name
        if dest == "reasoning_parser" and name == "deepseek_v3" and \
                VersionRange(before="0.25.0").contains(facts.vllm_version) is not False:
            continue  # 0.24.0 registers deepseek_v4 as the very same DeepSeekV3ReasoningParser
        used.append(f"--{dest.replace('_', '-')} {name}")
    return {"used": " and ".join(used)} if used else None


def vision_without_ratios(facts: Facts, gpu: GpuInfo | None):
    layers = facts.model.number("vision_n_layers")
    ratios = (facts.model.config or {}).get("compress_ratios")
    if not layers or layers <= 0 or (isinstance(ratios, list) and ratios):
        return None
    return {"arch": facts.model.known_id or facts.model.name or "the model"}


def think_max_too_short(facts: Facts, gpu: GpuInfo | None):
    kwargs = json_option(facts.args, "default_chat_template_kwargs") or {}
    if str(kwargs.get("reasoning_effort", "")).lower() != "max":
        return None
    from .memory import max_model_len_tried

    length = max_model_len_tried(facts)
    if length is None or length >= THINK_MAX_MIN_LEN:
        return None
    return {"length": f"{length:,}"}


def h20_0271(facts: Facts, gpu: GpuInfo | None):
    if gpu is None or not re.search(r"\bH20\b", gpu.name or "") or (facts.env.get("TORCH_SYMM_MEM_DISABLE_MULTICAST") or "") == "1":
        return None
    return {}


def deep_gemm_on(facts: Facts, gpu: GpuInfo | None):
    return None if (facts.env.get("VLLM_USE_DEEP_GEMM") or "").strip() == "0" else {}


def v2_runner_on(facts: Facts, gpu: GpuInfo | None):
    return None if _v2_runner_env(facts) is not True and _v2_runner_env(facts) is not None else {}


def v2_runner_env_not_int(facts: Facts, gpu: GpuInfo | None):
    value = _v2_runner_env(facts)
    return {"value": value} if isinstance(value, str) else None


RULES: tuple[Rule, ...] = (
    # --- the KV cache -----------------------------------------------------------------------
    Rule(
        id="kv-invalid", level=WARN, evidence=CONFIRMED,
        title="`--kv-cache-dtype` set to a value the installed vLLM does not have (`fp9`, `Auto`)",
        effect="rejected by vLLM itself at once with its own error (argparse exit 2 before 0.33, pydantic after)",
        check=kv_invalid,
        message="--kv-cache-dtype {kv}: not a value {which} accepts (it takes {valid}); vLLM rejects it "
        "itself before loading anything and prints its own error",
        fix="--kv-cache-dtype fp8, or drop the option",
        reference="vllm/config/cache.py CacheDType", models=BOTH,
    ),
    Rule(
        id="kv-not-fp8", level=REFUSE, evidence=CONFIRMED,
        title="explicit non-fp8 `--kv-cache-dtype` (`bfloat16`, `float16`, `nvfp4_ds_mla`, …) for DeepSeek-V4 on an "
        "fp8_ds_mla path",
        effect="AssertionError (< 0.30; a bare assert, so only a warning under PYTHONOPTIMIZE) / ValueError "
        "(≥ 0.30) when the attention layers are built",
        check=kv_not_fp8_on_ds_mla,
        message="{setting}: DeepSeek-V4 on {gpus} stores its KV cache as fp8_ds_mla, which has no {kv} "
        "variant; {vllm} fails when it builds the attention layers (AssertionError before 0.30, "
        "ValueError from 0.30)",
        fix="--kv-cache-dtype fp8, or drop the option",
        reference="vllm/models/deepseek_v4/attention.py _resolve_dsv4_kv_cache_dtype; vLLM #47174",
        families=DSV4_FAMILIES,
    ),
    Rule(
        id="nvfp4-on-mla", level=REFUSE, evidence=CITED,
        title="`--kv-cache-dtype nvfp4` (or `nvfp4_4over6`) on an MLA model",
        effect="`nvfp4 KV cache is not supported with MLA` when the engine config is made",
        check=nvfp4_on_mla,
        message="{setting}: DeepSeek-V4 uses MLA attention, and {vllm} rejects an nvfp4 KV cache on MLA when it "
        "makes the engine configuration",
        fix="--kv-cache-dtype fp8, or drop the option",
        reference="vllm/config/vllm.py (nvfp4 KV cache is not supported with MLA)", models=BOTH,
    ),
    Rule(
        id="v41-kv", level=REFUSE, evidence=CONFIRMED,
        title="DeepSeek-V4.1 on its packed KV path with a `--kv-cache-dtype` its resolver rejects (`bfloat16`, "
        f"`float16`; from {V41_PACKED_STRICT.since} also `fp8_e4m3`, `fp8_e5m2`, `fp8_inc`, `fp8_per_token_head`)",
        effect="`ValueError: DeepseekV4 … only support(s) fp8 kv-cache, got …` when the attention layers are built",
        check=kv_rejected_by_v41,
        message="{setting}: DeepSeek-V4.1 on {gpus} stores a packed KV record, and {vllm}'s V4.1 KV-cache resolver "
        "takes only {accepted} there; it raises ValueError ('{error}') when it builds the attention layers",
        fix="--kv-cache-dtype fp8, or drop the option (auto selects V4.1's packed format)",
        reference="vllm/models/deepseek_v41/attention.py _resolve_dsv4_kv_cache_dtype",
        models=frozenset({V41}), families=DSV4_FAMILIES, vllm=VersionRange(since="0.30.0"),
    ),
    Rule(
        id="v41-ds-mla-on-plain-rows", level=REFUSE, evidence=CONFIRMED,
        title="DeepSeek-V4.1 with `--attention-backend FLASHINFER_MLA_SPARSE_DSV4`/`_DSV41` off SM 12.x and "
        "`--kv-cache-dtype fp8_ds_mla` or `nvfp4_ds_mla`",
        effect="`ValueError: … is a packed FlashMLA DeepSeek V4.1 KV cache format; the selected backend stores plain "
        "KV rows.` when the attention layers are built",
        check=v41_ds_mla_on_plain_rows,
        message="{setting} with --attention-backend {backend} on {gpus}: this backend stores plain KV rows for "
        "DeepSeek-V4.1, and {vllm} raises ValueError ('{kv} is a packed FlashMLA DeepSeek V4.1 KV cache format') "
        "when it builds the attention layers",
        fix="--kv-cache-dtype fp8 (per-tensor FP8 rows) or auto (bf16 rows) with this backend, or drop "
        "--attention-backend for the packed record",
        reference="vllm/models/deepseek_v41/attention.py _resolve_dsv4_kv_cache_dtype",
        models=frozenset({V41}), families=frozenset({"9", "10"}), vllm=V41_PLAIN_ROWS_CHECKED,
    ),
    # --- attention backends --------------------------------------------------------------
    Rule(
        id="backend-not-dsv4", level=REFUSE, evidence=CITED,
        title="`--attention-backend FLASHINFER_MLA_SPARSE` or `…_SM120`",
        effect="`ValueError: … is not a DeepSeek V4 (V4.1) attention backend` when the model is built",
        check=backend_not_dsv4,
        message="--attention-backend {backend}: not a {name} attention backend; {vllm} raises ValueError when "
        "it builds the model",
        fix="--attention-backend {use}, or drop the option",
        reference="vllm/models/deepseek_v4/nvidia/model.py, vllm/models/deepseek_v41/nvidia/model.py "
        "_select_dsv4_attn_cls", models=BOTH,
    ),
    Rule(
        id="backend-ignored", level=WARN, evidence=CITED,
        title="`--attention-backend` naming a backend DeepSeek-V4 does not use (`TRITON_MLA`, `FLASH_ATTN`, …)",
        effect="silently ignored: the default DeepSeek-V4 attention is used",
        check=backend_ignored,
        message="--attention-backend {backend}: DeepSeek-V4's attention selector ignores it and uses its default "
        "backend",
        fix=f"drop the option, or use FLASHMLA_SPARSE_DSV4 / {FLASHINFER_DSV4}",
        reference="vllm/models/deepseek_v4/nvidia/model.py _select_dsv4_attn_cls",
    ),
    Rule(
        id="flashmla-on-sm12", level=WARN, evidence=DERIVED,
        title="SM 12.x with `--attention-backend FLASHMLA_SPARSE[_DSV4]`",
        effect="the FlashMLA class is built, but FlashMLA ships no sm_120 kernels",
        check=flashmla_forced,
        message="--attention-backend {backend} on {gpus}: FlashMLA has no sm_120 kernels, so the model is expected "
        "to fail when it first runs",
        fix=f"drop the option (SM 12.x uses FlashInfer SM120 by default) or use {FLASHINFER_DSV4}",
        reference="vllm/models/deepseek_v4/nvidia/model.py; FlashMLA builds sm_90a/sm_100f only",
        families=frozenset({"12"}),
    ),
    Rule(
        id="flashinfer-dsv4-on-sm9", level=WARN, evidence=DERIVED,
        title=f"SM 9.x with `--attention-backend {FLASHINFER_DSV4}`",
        effect="selects the SM 10.x TRTLLM-gen plain-row class, whose kernels are SM 10.x only",
        check=flashinfer_dsv4_on_hopper,
        message="--attention-backend {backend} on {gpus}: vLLM picks the SM 10.x FlashInfer plain-row attention, "
        "whose TRTLLM-gen kernels do not run on SM 9.x",
        fix="drop the option (SM 9.x uses FlashMLA by default)",
        reference="vllm/models/deepseek_v4/nvidia/model.py _select_dsv4_attn_cls",
        families=frozenset({"9"}),
    ),
    Rule(
        id="fp8-ds-mla-on-plain-rows", level=WARN, evidence=DERIVED,
        title=f"SM 10.x + `{FLASHINFER_DSV4}` + `--kv-cache-dtype fp8_ds_mla` or `nvfp4_ds_mla` (DeepSeek-V4; "
        f"V4.1 before {V41_PLAIN_ROWS_CHECKED.since})",
        effect="a mismatched KV layout that no validator catches",
        check=ds_mla_on_plain_rows,
        message="--kv-cache-dtype {kv} with --attention-backend {backend} on {gpus}: this backend stores plain "
        "KV rows (bf16 or per-tensor FP8) on SM 10.x, not the packed {kv} record, and {vllm} does not check the "
        "mismatch",
        fix="--kv-cache-dtype fp8 (or auto for bf16 rows)",
        reference="vllm/models/deepseek_v4/attention.py _resolve_dsv4_kv_cache_dtype; "
        "vllm/models/deepseek_v4/nvidia/flashinfer_sparse.py",
        models=BOTH, families=frozenset({"10"}),
    ),
    Rule(
        id="attention-env-ignored", level=WARN, evidence=CITED,
        title="`VLLM_ATTENTION_BACKEND` set", effect="read nowhere by vLLM 0.24–0.33 (the default backend is used)",
        check=attention_env_ignored,
        message="VLLM_ATTENTION_BACKEND={value} is not read by {vllm}",
        fix="{fix}", reference="vLLM #50292; vllm/envs.py", models=BOTH,
    ),
    # --- GPUs and vLLM releases ----------------------------------------------------------
    Rule(
        id="sm11-thor", level=WARN, evidence=DERIVED,
        title="SM 11.x (Jetson Thor)", effect="vLLM takes the FlashMLA / fp8_ds_mla path, which ships no sm_110 "
        "kernels; dsv4-launch has no KV-cache row for it",
        check=any_gpu,
        message="{gpus}: vLLM's DeepSeek-V4 attention selector falls through to FlashMLA (fp8_ds_mla) on SM 11.x, "
        "whose kernels are built for SM 9.x and 10.x only, so the model is expected to fail when it first runs; "
        "dsv4-launch knows no KV-cache path for SM 11.x and leaves --kv-cache-dtype as it is",
        fix="run on SM 9.x, 10.x or 12.x GPUs; to try anyway set --kv-cache-dtype fp8 yourself (vLLM before "
        f"{ASSERTS_UNTIL.before} fails on auto on that path)",
        reference="vllm/models/deepseek_v4/nvidia/model.py _select_dsv4_attn_cls", models=BOTH,
        families=frozenset({"11"}),
    ),
    Rule(
        id="gpu-too-old", level=WARN, evidence=REPORTED,
        title="compute capability below 9.0", effect="no DeepSeek-V4 attention kernels (FlashMLA: sm_90a/sm_100f)",
        check=any_gpu,
        message="{gpus}: stock vLLM has no DeepSeek-V4 attention kernels below compute capability 9.0 (SM 9.x, "
        "10.x and 12.x only); the model is expected to fail when it first runs",
        fix="run on H100/H200, B200/B300 or RTX PRO 6000-class GPUs, or exclude these with CUDA_VISIBLE_DEVICES",
        reference="vllm/models/deepseek_v4/nvidia/model.py", models=BOTH, families=OLD_GPUS,
    ),
    Rule(
        id="sm12-before-0.24", level=WARN, evidence=DERIVED,
        title="SM 12.x with vLLM < 0.24", effect="no SM 12.x DeepSeek-V4 path: FlashMLA is selected, without sm_120 kernels",
        check=any_gpu,
        message="{gpus} with {vllm}: vLLM has no DeepSeek-V4 path for SM 12.x before 0.24.0",
        fix="pip install 'vllm>=0.24.0' in vLLM's environment",
        reference="vllm/models/deepseek_v4/nvidia/model.py@0.24.0", families=frozenset({"12"}),
        vllm=VersionRange(before="0.24.0"),
    ),
    Rule(
        id="sm12-0.27", level=WARN, evidence=REPORTED,
        title="SM 12.x with vLLM 0.27.0 / 0.27.1", effect="fails to boot (DeepGEMM FP8 layout assertion, mHC pre-norm)",
        check=any_gpu,
        message="{gpus} with {vllm}: DeepSeek-V4 fails to boot on SM 12.x in 0.27.x (DeepGEMM 'Unknown SF "
        "transformation' in process_weights_after_loading; tf32_hc_prenorm_gemm), with no setting to avoid it",
        fix="vLLM {before} or later (0.26.x boots but has open reports of degenerate output on SM 12.x: vLLM #52938)",
        reference="vLLM #51758, #50796, #47436",
        families=frozenset({"12"}), vllm=VersionRange(since="0.27.0", before="0.28.0"),
    ),
    Rule(
        id="sm12-0.26-garbage", level=WARN, evidence=REPORTED,
        title="SM 12.x with vLLM 0.26.x", effect="boots, then degenerate output: the same token at every position "
        "(RTX PRO 6000), garbled text with the default fuse_norm_quant/fuse_act_quant fusions (GB10)",
        check=any_gpu,
        message="{gpus} with {vllm}: DeepSeek-V4 on SM 12.x has open reports of degenerate output in 0.26.x "
        "(identical token at every position on 4 × RTX PRO 6000; garbled text on GB10 with the default "
        "norm/activation-quant fusions), not reproduced on 0.28.0",
        fix="vLLM 0.28.0 or later; on 0.26.x the GB10 report's workaround is "
        "--compilation-config.pass_config.fuse_norm_quant=false --compilation-config.pass_config.fuse_act_quant=false",
        reference="vLLM #52938, #50773", families=frozenset({"12"}), vllm=VersionRange(since="0.26.0", before="0.27.0"),
    ),
    Rule(
        id="sm12-0.24-deepgemm", level=WARN, evidence=REPORTED,
        title="SM 12.x with vLLM 0.24.0 and DeepGEMM on", effect="`Assertion error (…layout.hpp:76): Unknown recipe` in the FP8 warm-up",
        check=deep_gemm_on,
        message="{gpus} with {vllm}: DeepGEMM's FP8 warm-up fails on SM 12.x in 0.24.0 ('Unknown recipe')",
        fix="VLLM_USE_DEEP_GEMM=0 (about 4–6 % slower decoding), or a later vLLM",
        reference="vLLM #47130, #47266", families=frozenset({"12"}),
        vllm=VersionRange(since="0.24.0", before="0.24.1"),
    ),
    Rule(
        id="sm10-0.28-v2-runner", level=WARN, evidence=REPORTED,
        title="SM 10.x with vLLM 0.28.0 on the V2 model runner", effect="generates only BOS tokens",
        check=v2_runner_on,
        message="{gpus} with {vllm}: DeepSeek-V4 on the V2 model runner (0.28.0's default for it) generates only "
        "BOS tokens on SM 10.x",
        fix="VLLM_USE_V2_MODEL_RUNNER=0 (not with DSpark, which needs V2), or another vLLM release",
        reference="vLLM #55486; vllm/config/vllm.py DEFAULT_V2_MODEL_RUNNER_ARCHITECTURES@0.28.0",
        families=frozenset({"10"}), vllm=VersionRange(since="0.28.0", before="0.28.1"),
    ),
    Rule(
        id="v2-runner-env-not-int", level=WARN, evidence=CITED,
        title="`VLLM_USE_V2_MODEL_RUNNER` set to something other than an integer (`false`, `true`, `yes`)",
        effect="`ValueError: invalid literal for int() with base 10` when vLLM reads it (it parses `bool(int(v))`)",
        check=v2_runner_env_not_int,
        message="VLLM_USE_V2_MODEL_RUNNER={value}: vLLM reads this variable as bool(int(value)), so this value "
        "raises ValueError ('invalid literal for int()') when the engine configuration reads it",
        fix="VLLM_USE_V2_MODEL_RUNNER=0 (V1 model runner) or 1 (V2), or unset it",
        reference="vllm/envs.py maybe_convert_bool; vllm/config/vllm.py use_v2_model_runner", models=BOTH,
    ),
    Rule(
        id="h20-0.27.1", level=WARN, evidence=REPORTED,
        title="H20 with vLLM 0.27.1", effect="CUDASymmetricMemory, then an illegal address in graph capture",
        check=h20_0271,
        message="{gpus} with {vllm}: start-up crashes on H20 (CUDASymmetricMemory, then CUDA_ERROR_ILLEGAL_ADDRESS "
        "during CUDA graph capture)",
        fix="TORCH_SYMM_MEM_DISABLE_MULTICAST=1 (fixes the first stage only), or another vLLM release",
        reference="vLLM #53320", families=frozenset({"9"}), vllm=VersionRange(since="0.27.1", before="0.27.2"),
    ),
    Rule(
        id="gb10-stock", level=WARN, evidence=REPORTED,
        title="GB10 / DGX Spark (SM 12.1) with a stock vLLM release",
        effect="unverified: the recipes use a community image with b12x kernels",
        check=any_gpu,
        message="{gpus}: DeepSeek-V4 on GB10 is not verified with stock vLLM releases; the recipes run the "
        "eugr/spark-vllm-b12x image with --attention-backend B12X_MLA_SPARSE --moe-backend b12x --linear-backend b12x",
        fix="that image and those flags, per the DeepSeek-V4 recipe's dgx_spark_gb10 section",
        reference=f"{RECIPES} DeepSeek-V4-Flash.yaml (dgx_spark_gb10)", families=frozenset({"12.1"}),
    ),
    Rule(
        id="mixed-gpus", level=WARN, evidence=DERIVED,
        title="GPUs of different compute capability in one server",
        effect="one attention path is picked for all of them",
        check=mixed_gpus,
        message="GPUs of different compute capability in one run ({kinds}): vLLM picks one attention path for all",
        fix="run one kind per server (CUDA_VISIBLE_DEVICES)",
        reference="vllm/models/deepseek_v4/nvidia/model.py _select_dsv4_attn_cls", models=BOTH, reads_gpus=True,
    ),
    # --- F1: the Blackwell data-centre recipe flags copied elsewhere ---------------------
    Rule(
        id="mega-moe-needs-ep", level=REFUSE, evidence=CITED,
        title="`--moe-backend deep_gemm_mega_moe` without `--enable-expert-parallel`",
        effect="`NotImplementedError: DeepSeek V4 MegaMoE currently requires expert parallel` when the model is built",
        check=mega_moe_without_ep,
        message="--moe-backend deep_gemm_mega_moe without --enable-expert-parallel: {vllm} raises "
        "NotImplementedError ('DeepSeek V4 MegaMoE currently requires expert parallel') when it builds the model",
        fix="add --enable-expert-parallel on SM 10.x, or --moe-backend auto",
        reference="vllm/models/deepseek_v4/nvidia/model.py (DeepseekV4Model.__init__); recipes#760",
    ),
    Rule(
        id="mega-moe-fp4", level=REFUSE, evidence=CITED,
        title="`--moe-backend deep_gemm_mega_moe` on a checkpoint whose experts are not FP4 (`expert_dtype`)",
        effect="`NotImplementedError: DeepSeek V4 MegaMoE only supports fp4 experts` when the model is built",
        check=mega_moe_not_fp4,
        message="--moe-backend deep_gemm_mega_moe: this checkpoint's experts are {dtype}, and {vllm} raises "
        "NotImplementedError ('MegaMoE only supports fp4 experts') when it builds the model",
        fix="--moe-backend auto", reference="vllm/models/deepseek_v4/nvidia/model.py (DeepseekV4MoE); recipes#656",
    ),
    Rule(
        id="mega-moe-nvfp4", level=WARN, evidence=REPORTED,
        title="`--moe-backend deep_gemm_mega_moe` on an NVFP4 checkpoint (`moe_quant_algo` NVFP4)",
        effect="passes vLLM's fp4-experts check, but MegaMoE does not run NVFP4 experts (DeepSeek-V4 builds its "
        "MegaMoE experts as MXFP4)",
        check=mega_moe_nvfp4,
        message="--moe-backend deep_gemm_mega_moe on {arch}: its routed experts are NVFP4, which vLLM's fp4-experts "
        "check lets through, but DeepSeek-V4's MegaMoE experts are built for MXFP4 weights and the recipes say "
        "MegaMoE does not support NVFP4 experts",
        fix="--moe-backend flashinfer_cutedsl on SM 10.x (the NVFP4 recipe's setting), or --moe-backend auto",
        reference="vllm/models/deepseek_v4/nvidia/model.py _init_mega_moe_experts; recipes#656; recipes "
        "DeepSeek-V4-Flash.yaml (NVFP4 notes)",
    ),
    Rule(
        id="mega-moe-not-sm100", level=REFUSE, evidence=CITED,
        title="`--moe-backend deep_gemm_mega_moe` off SM 10.x (RTX PRO 6000, H100/H200, …)",
        effect="`NotImplementedError: DeepGEMM MegaMoE requires SM100 GPUs.` — after the full weight load before 0.33",
        check=mega_moe_off_sm100,
        message="--moe-backend deep_gemm_mega_moe on {gpus}: DeepGEMM MegaMoE runs only on SM 10.x; {vllm} raises "
        "NotImplementedError ('DeepGEMM MegaMoE requires SM100 GPUs.'), before 0.33 only after loading all the weights",
        fix="--moe-backend auto (the recipe's own SM 12.x setting)",
        reference="vllm/models/deepseek_v4/nvidia/model.py _check_runtime_supported (≤ 0.31), "
        "fused_moe/deep_gemm_mega_moe.py (0.32+); recipes#760",
        families=NOT_SM10,
    ),
    Rule(
        id="fp4-indexer-off-sm10", level=REFUSE, evidence=CITED,
        title="`--attention_config.use_fp4_indexer_cache=True` off SM 10.x, vLLM 0.24–0.29",
        effect="AssertionError in the indexer metadata builder (0.24–0.27; a bare assert, so only a warning under "
        "PYTHONOPTIMIZE) / ValueError at layer construction (0.28–0.29)",
        check=fp4_indexer_off_sm10,
        message="--attention_config.use_fp4_indexer_cache=True on {gpus}: the FP4 indexer cache needs Blackwell "
        "data-centre GPUs; {vllm} fails with 'use_fp4_indexer_cache requires Blackwell datacenter GPUs (sm_10x…)'",
        fix="{fix}",
        reference="vllm/v1/attention/backends/mla/indexer.py; vllm#52550; recipes#760",
        families=NOT_SM10, vllm=VersionRange(since="0.24.0", before="0.30.0"),
    ),
    Rule(
        id="fp4-indexer-removed", level=REFUSE, evidence=CONFIRMED,
        title="`use_fp4_indexer_cache` in `--attention-config` (any spelling) on vLLM ≥ 0.30",
        effect="exit 2 at once: 'Unexpected keyword argument' (the option was removed, on every GPU)",
        check=fp4_indexer_removed,
        message="use_fp4_indexer_cache in --attention-config: {vllm} no longer has this option (removed in 0.30) "
        "and rejects the arguments with 'Unexpected keyword argument', on every GPU",
        fix="{fix}",
        reference="vllm/config/attention.py; vllm#52550", vllm=VersionRange(since="0.30.0"),
    ),
    Rule(
        id="mxfp4-indexer-off-sm10", level=REFUSE, evidence=CITED,
        title="`--attention-config.indexer_kv_dtype mxfp4` off SM 10.x, vLLM ≥ 0.28",
        effect="`ValueError: indexer_kv_dtype='mxfp4' requires Blackwell datacenter GPUs` when the model is built",
        check=mxfp4_indexer_off_sm10,
        message="--attention-config.indexer_kv_dtype mxfp4 on {gpus}: {vllm} raises ValueError "
        "(\"indexer_kv_dtype='mxfp4' requires Blackwell datacenter GPUs\") when it builds the model",
        fix="drop it (vLLM picks the indexer cache itself)",
        reference="vllm/v1/attention/backends/mla/indexer.py", families=NOT_SM10, vllm=VersionRange(since="0.28.0"),
    ),
    Rule(
        id="indexer-dtype-unsupported", level=REFUSE, evidence=CONFIRMED,
        title="`--attention-config.indexer_kv_dtype bf16` or `nvfp4`",
        effect="`ValueError: indexer_kv_dtype='bf16' is not supported by the DeepSeek sparse indexer` when the model "
        "is built, on every GPU",
        check=indexer_dtype_unsupported,
        message="--attention-config.indexer_kv_dtype {value}: the DeepSeek sparse indexer takes only fp8 or mxfp4, "
        "and {vllm} raises ValueError (\"indexer_kv_dtype='{value}' is not supported by the DeepSeek sparse "
        "indexer\") when it builds the model",
        fix="drop it (fp8, the default), or --attention-config.indexer_kv_dtype mxfp4 on SM 10.x",
        reference="vllm/v1/attention/backends/mla/indexer.py dsa_indexer_uses_fp4", models=BOTH,
        vllm=VersionRange(since="0.28.0"),
    ),
    Rule(
        id="indexer-dtype-ignored", level=WARN, evidence=CITED,
        title="`--attention-config.indexer_kv_dtype` on vLLM 0.24–0.27", effect="ignored by DeepSeek-V4 (it reads only use_fp4_indexer_cache)",
        check=indexer_dtype_ignored,
        message="--attention-config.indexer_kv_dtype {value}: {vllm}'s DeepSeek-V4 does not read it (only "
        "use_fp4_indexer_cache, on SM 10.x)",
        fix="drop it; on SM 10.x use --attention_config.use_fp4_indexer_cache=True before 0.28",
        reference="vllm/models/deepseek_v4/attention.py", vllm=VersionRange(since="0.24.0", before="0.28.0"),
    ),
    # --- F2: tensor parallel size --------------------------------------------------------------
    Rule(
        id="tp-heads", level=REFUSE, evidence=CITED,
        title="`--tensor-parallel-size` not dividing `num_attention_heads`",
        effect="ValueError when the engine config is made",
        check=tp_vs_heads,
        message="{setting}: {arch} has {heads} attention heads, which {tp} GPUs cannot split evenly; {vllm} refuses "
        "it when it makes the engine configuration",
        fix="a tensor-parallel size in {sizes}",
        reference="vllm/config/model.py verify_with_parallel_config", models=BOTH,
    ),
    Rule(
        id="tp-o-groups", level=REFUSE, evidence=CITED,
        title="`--tensor-parallel-size` larger than `o_groups` (DeepSeek-V4-Flash: 8; Pro: 16)",
        effect="ZeroDivisionError after the weights load (n_local_groups = o_groups // TP = 0)",
        check=tp_vs_o_groups,
        message="{setting}: {arch} has o_groups {groups}, and vLLM splits them over the tensor-parallel ranks "
        "(n_local_groups = o_groups // {tp} = 0), so {vllm} fails with ZeroDivisionError after loading the weights",
        fix="{dp} (data parallel for the other GPUs), or a tensor-parallel size in {sizes}",
        reference="vllm/models/deepseek_v4/attention.py, vllm/models/deepseek_v41/attention.py n_local_groups; "
        "quantization/utils/fp8_utils.py deepgemm_post_process_fp8_weight_block", models=BOTH,
    ),
    Rule(
        id="tp-pp-gpus", level=REFUSE, evidence=CITED,
        title="TP × PP (above 1) larger than the GPUs visible here, one node, no executor backend given",
        effect="`World size (N) is larger than the number of available GPUs` when the engine config is made",
        check=tp_pp_vs_visible_gpus,
        message="{sizes} needs {needed} on this node, but {visible} visible here; {vllm} refuses it ('World size "
        "is larger than the number of available GPUs')",
        fix="lower the sizes, expose more GPUs (CUDA_VISIBLE_DEVICES), or run multi-node (--nnodes, or "
        "--distributed-executor-backend ray)",
        reference="vllm/config/parallel.py", models=BOTH,
    ),
    Rule(
        id="block-size", level=REFUSE, evidence=CONFIRMED,
        title="`--block-size` not a multiple of 256 (DeepSeek-V4)",
        effect="`No common block size` after the weights load",
        check=block_size_v4,
        message="{setting}: {name}'s sparse attention needs a multiple of {multiple}; {vllm} fails with 'No common "
        "block size' after loading the weights",
        fix="--block-size {suggested}, or drop the option",
        reference="vllm/models/deepseek_v4/sparse_mla.py get_supported_kernel_block_sizes; vllm/v1/worker/utils.py",
    ),
    Rule(
        id="block-size-v41", level=REFUSE, evidence=CITED,
        title="`--block-size` not a multiple of 128 (DeepSeek-V4.1; 64 on SM 9.x with FlashMLA)",
        effect="`No common block size` after the weights load",
        check=block_size_v41,
        message="{setting}: {name}'s sparse attention on {gpus} needs a multiple of {multiple}; {vllm} fails with "
        "'No common block size' after loading the weights",
        fix="--block-size {suggested}, or drop the option",
        reference="vllm/models/deepseek_v41/sparse_mla.py, nvidia/flashinfer_sparse.py", models=frozenset({V41}),
        families=DSV4_FAMILIES,
        vllm=VersionRange(since="0.30.0"),
    ),
    # --- F4: speculative decoding versus the checkpoint -------------------------------------
    Rule(
        id="dspark-before-0.25", level=REFUSE, evidence=CITED,
        title="`--speculative-config.method dspark` on vLLM < 0.25",
        effect="ValidationError: no such method, when the engine config is made",
        check=dspark_too_old,
        message="--speculative-config method dspark: {vllm} has no DSpark (added in 0.25.0) and rejects the method",
        fix="vLLM 0.25.0 or later, or method mtp on a checkpoint with an MTP head",
        reference="vllm/config/speculative.py", vllm=VersionRange(before="0.25.0"),
    ),
    Rule(
        id="dspark-without-module", level=REFUSE, evidence=CITED,
        title="`method dspark` on a checkpoint without a DSpark module (no `dspark_target_layer_ids`: preview, "
        "NVFP4, Vision-Exp)",
        effect="AttributeError ('dspark_target_layer_ids') when the draft is built, after the weights load",
        check=dspark_without_module,
        message="--speculative-config method dspark: {arch}'s config.json has no dspark_target_layer_ids (this "
        "checkpoint ships no DSpark module), so {vllm} fails when it builds the draft, after loading the weights",
        fix="method mtp (the preview and NVFP4 checkpoints carry an MTP head), or a DSpark checkpoint (-0731, -0813)",
        reference="vllm/models/deepseek_v4/nvidia/dspark.py; recipes DeepSeek-V4-Flash.yaml",
        vllm=VersionRange(since="0.25.0"),
    ),
    Rule(
        id="dspark-pp", level=REFUSE, evidence=CITED,
        title="`method dspark` with `--pipeline-parallel-size` > 1, vLLM 0.25–0.29",
        effect="`NotImplementedError: DSpark does not support pipeline parallelism.` after the weights load",
        check=dspark_with_pp,
        message="--speculative-config method dspark with --pipeline-parallel-size {pp}: {vllm} raises "
        "NotImplementedError ('DSpark does not support pipeline parallelism.') after loading the weights",
        fix="--pipeline-parallel-size 1 (tensor or data parallel instead), or vLLM 0.30.0 and later",
        reference="vllm/v1/worker/gpu/spec_decode/dspark/utils.py",
        vllm=VersionRange(since="0.25.0", before="0.30.0"),
    ),
    Rule(
        id="dspark-k-below-block", level=REFUSE, evidence=CITED,
        title="`method dspark` with `num_speculative_tokens` below the checkpoint's `dspark_block_size`, vLLM 0.26–0.27",
        effect="ValueError when the engine config is made",
        check=dspark_k_below_block,
        message="--speculative-config num_speculative_tokens {k}: {vllm} requires at least dspark_block_size ({block}) "
        "for DSpark",
        fix="--speculative-config.num_speculative_tokens {block}",
        reference="vllm/config/speculative.py", vllm=VersionRange(since="0.26.0", before="0.28.0"),
    ),
    Rule(
        id="dspark-v1-runner", level=REFUSE, evidence=CITED,
        title="`method dspark` with `VLLM_USE_V2_MODEL_RUNNER=0`, vLLM ≥ 0.29",
        effect="`Model Runner V1 does not support: dspark speculative decoding` when the engine config is made",
        check=dspark_on_v1_runner,
        message="VLLM_USE_V2_MODEL_RUNNER=0 with DSpark: {vllm}'s V1 model runner does not support DSpark and "
        "refuses the configuration",
        fix="unset VLLM_USE_V2_MODEL_RUNNER", reference="vllm/config/vllm.py", vllm=VersionRange(since="0.29.0"),
    ),
    Rule(
        id="dspark-v2-unsupported", level=REFUSE, evidence=CITED,
        title="`method dspark` with a feature the V2 model runner lacks ("
        + "; ".join(f"{words.split(' ')[0]} {releases.short()}" for _, words, releases in V2_UNSUPPORTED) + ")",
        effect="vLLM falls back to the V1 runner by itself: `Model Runner V1 does not support: dspark speculative "
        "decoding` when the engine config is made",
        check=dspark_v2_unsupported,
        message="--speculative-config method dspark with {used}: {how}, and {vllm} refuses the configuration with "
        "ValueError ({error})",
        fix="drop {used} (DSpark runs only on the V2 model runner), or method mtp on a checkpoint with an MTP head",
        reference="vllm/config/vllm.py _get_v2_model_runner_unsupported_features, "
        "_get_v1_model_runner_unsupported_features", vllm=VersionRange(since="0.29.0"),
    ),
    Rule(
        id="draft-kv-not-fp8", level=WARN, evidence=DERIVED,
        title="`method dspark` with a non-fp8 `kv_cache_dtype` in `--speculative-config` (`auto` too before "
        f"{ASSERTS_UNTIL.before})",
        effect="the draft's DeepSeek-V4 attention goes through the same KV resolver: AssertionError / ValueError "
        "when the draft is built, after the weight load",
        check=draft_kv_not_fp8,
        message="--speculative-config kv_cache_dtype {kv}: vLLM gives the DSpark draft this KV-cache dtype, and the "
        "draft's DeepSeek-V4 attention layers on {gpus} store fp8_ds_mla, which has no {kv} variant; {vllm} is "
        "expected to fail when it builds the draft, after loading the weights",
        fix="drop kv_cache_dtype from --speculative-config (the draft then uses the target's), or set it to fp8",
        reference="vllm/v1/worker/gpu/spec_decode/dspark/utils.py; vllm/models/deepseek_v4/attention.py "
        "_resolve_dsv4_kv_cache_dtype", families=DSV4_FAMILIES, vllm=VersionRange(since="0.26.0"),
    ),
    Rule(
        id="mtp-on-dspark-checkpoint", level=WARN, evidence=REPORTED,
        title="`method mtp` on a DSpark checkpoint (-0731, -0813)",
        effect="boots, with about 8× the per-token KV of the preview",
        check=mtp_on_dspark_checkpoint,
        message="--speculative-config method mtp on {arch}: this checkpoint ships a DSpark module, not an MTP head; "
        "vLLM boots but with about 8× the KV cache per token",
        fix="method dspark (the recipes' default for these checkpoints)",
        reference="vllm#51041; recipes DeepSeek-V4-Flash.yaml", vllm=VersionRange(since="0.25.0"),
    ),
    # --- F5, F6, F7, F8 --------------------------------------------------------------------------
    Rule(
        id="vision-before-0.30", level=REFUSE, evidence=CITED,
        title="DeepSeek-V4-Flash-Vision-Exp (`vision_n_layers` > 0) on vLLM < 0.30",
        effect="loaded as the text-only model: `There is no module or parameter named 'vision…'` at weight load",
        check=vision_before_030,
        message="{arch_words}vision_n_layers {layers}: {vllm} has no DeepSeek-V4 vision model (added in 0.30.0), "
        "loads it as the text-only DeepseekV4ForCausalLM and fails on the vision tensors at weight load",
        fix="vLLM 0.30.0 or later (or the recipe's vllm/vllm-openai:deepseekv4-flash-vision image)",
        reference="vllm/model_executor/models/utils.py AutoWeightsLoader; recipes DeepSeek-V4-Flash-Vision",
        vllm=VersionRange(before="0.30.0"),
    ),
    Rule(
        id="hma-disabled", level=REFUSE, evidence=CONFIRMED,
        title="`--disable-hybrid-kv-cache-manager` for DeepSeek-V4",
        effect="`TypeError: MLAAttentionSpec.__init__() got an unexpected keyword argument 'bounded_replay'` when "
        "the KV-cache groups are planned, after the weight load, on every GPU",
        check=hma_disabled,
        message="--disable-hybrid-kv-cache-manager: without the hybrid KV-cache manager {vllm} promotes DeepSeek-V4's "
        "sliding-window caches to full MLA attention, and that promotion raises TypeError (MLAAttentionSpec has no "
        "'bounded_replay') when it plans the KV cache, after loading the weights",
        fix="drop it (with a KV connector, use one with hybrid support: NixlConnector, MooncakeConnector)",
        reference="vllm/v1/core/kv_cache_planning.py _promote_local_kv_cache_specs (kv_cache_utils.py before 0.33); "
        "vllm/v1/kv_cache_interface.py replace_as, SlidingWindowMLASpec.bounded_replay", models=BOTH,
        vllm=VersionRange(since="0.31.0"),
    ),
    Rule(
        id="connector-turns-hma-off", level=REFUSE, evidence=CITED,
        title="a KV connector without hybrid-manager support (LMCache, FlexKV, HF3FS, Example; also "
        "`--kv-offloading-backend lmcache`)",
        effect="vLLM turns the hybrid KV-cache manager off by itself, then the `hma-disabled` TypeError after the "
        "weight load",
        check=connector_turns_hma_off,
        message="{connector} ({how}) does not support the hybrid KV-cache manager, so {vllm} turns it off for "
        "DeepSeek-V4 and then raises TypeError (MLAAttentionSpec has no 'bounded_replay') when it plans the KV "
        "cache, after loading the weights",
        fix="a connector with hybrid support (NixlConnector, MooncakeConnector), or no KV connector",
        reference="vllm/config/vllm.py (Turning off hybrid kv cache manager …); "
        "vllm/v1/core/kv_cache_planning.py _promote_local_kv_cache_specs", models=BOTH,
        vllm=VersionRange(since="0.31.0"),
    ),
    Rule(
        id="hma-off-full-attention", level=WARN, evidence=DERIVED,
        title="the hybrid KV-cache manager off (`--disable-hybrid-kv-cache-manager`, or a connector without "
        "hybrid support)",
        effect="sliding-window and compressor caches are promoted to full attention: far less room for context, "
        "possibly out of memory",
        check=hma_off_promoted,
        message="{why}: without the hybrid KV-cache manager {vllm} allocates DeepSeek-V4's sliding-window and "
        "compressor caches as full attention (a slot for every token), which leaves far less room for context "
        "and may run out of memory",
        fix="keep the hybrid KV-cache manager on (drop the flag; with a KV connector, use NixlConnector or "
        "MooncakeConnector)",
        reference="vllm/v1/core/kv_cache_utils.py unify_hybrid_kv_cache_specs; vllm-ascend#9975", models=BOTH,
        vllm=VersionRange(before="0.31.0"),
    ),
    Rule(
        id="connector-hma-forced", level=REFUSE, evidence=CITED,
        title="the hybrid KV-cache manager forced on with a connector that does not support it",
        effect="`ValueError: Connector … does not support HMA but HMA is enabled` when the connector is made",
        check=connector_with_hma_forced,
        message="the hybrid KV-cache manager is forced on, and {connector} does not support it: {vllm} raises "
        "ValueError when the engine creates the connector",
        fix="a connector with hybrid support (NixlConnector, MooncakeConnector)",
        reference="vllm/distributed/kv_transfer/kv_connector/factory.py", models=BOTH,
    ),
    Rule(
        id="tokenizer-without-template", level=WARN, evidence=REPORTED,
        title="`--tokenizer-mode hf` or `slow` for DeepSeek-V4",
        effect="no chat template: every chat request fails ('default chat template is no longer allowed')",
        check=tokenizer_without_template,
        message="--tokenizer-mode {mode}: DeepSeek-V4 ships no Jinja chat template, so every chat request fails "
        "('default chat template is no longer allowed'); vLLM picks its deepseek_v4 tokenizer mode by itself",
        fix="drop the option", reference="vllm/config/model.py; modelscope/evalscope#1548",
    ),
    Rule(
        id="v4-parsers-on-v41", level=WARN, evidence=REPORTED,
        title="DeepSeek-V4.1 with the V4 tool-call or reasoning parser",
        effect="tool calls silently unparsed (V4.1 uses spaced DSML tags)",
        check=v4_parsers_on_v41,
        message="{used} on DeepSeek-V4.1: the V4 parsers treat V4.1's spaced DSML tags as plain text, so tool calls "
        "are silently not parsed",
        fix=f"--tool-call-parser {V41_PARSER} --reasoning-parser {V41_PARSER}",
        reference="vllm/tool_parsers/__init__.py; smg-project/smg#2525", models=frozenset({V41}),
        vllm=VersionRange(since="0.30.0"),
    ),
    Rule(
        id="v4-wrong-parsers", level=WARN, evidence=REPORTED,
        title="DeepSeek-V4 with a tool-call or reasoning parser other than `deepseek_v4` (`hermes`, `deepseek_v3`, "
        "`deepseek_v31`, `deepseek_r1`, `deepseek_v41`, …)",
        effect="starts, then tool calls leak into the answer text and reasoning is misrouted (V4 writes DSML)",
        check=v4_wrong_parsers,
        message="{used} on DeepSeek-V4: V4 writes tool calls and reasoning in its own DSML format, which only "
        "vLLM's deepseek_v4 parsers read; with this parser tool calls leak into the answer text or the reasoning "
        "is misrouted, silently",
        fix=f"--tool-call-parser {V4_PARSER} --reasoning-parser {V4_PARSER}",
        reference="vllm/tool_parsers/__init__.py, vllm/reasoning/__init__.py; vLLM #42265, #40801, #54686",
    ),
    Rule(
        id="vision-no-compress-ratios", level=WARN, evidence=DERIVED,
        title="DeepSeek-V4-Flash-Vision-Exp (`vision_n_layers` > 0) whose config facts have no `compress_ratios`",
        effect="dsv4-launch cannot size the KV cache per token, so its max-model-len check is skipped (vLLM checks "
        "after the weight load)",
        check=vision_without_ratios,
        message="{arch}: the config.json dsv4-launch read has no compress_ratios, so it cannot size DeepSeek-V4's "
        "KV cache per token and skips its check that --max-model-len fits; {vllm} checks it itself only after "
        "loading the weights",
        fix="give the checkpoint's own config.json (a local model directory), or set --max-model-len to a length "
        "you know fits",
        reference="vllm/v1/core/kv_cache_planning.py (max-model-len check); recipes DeepSeek-V4-Flash-Vision",
        vllm=VersionRange(since="0.30.0"),
    ),
    Rule(
        id="think-max-short", level=WARN, evidence=REPORTED,
        title="\"Think Max\" (`reasoning_effort: max`) with `--max-model-len` < 393,216",
        effect="the reasoning is cut short",
        check=think_max_too_short,
        message="reasoning_effort max with --max-model-len {length}: DeepSeek-V4's Think Max mode needs at least "
        "393,216 tokens of context",
        fix="--max-model-len 393216 or more (or a lower reasoning_effort)",
        reference=f"{RECIPES} DeepSeek-V4 guide", models=BOTH,
    ),
    *MEMORY_RULES,
)

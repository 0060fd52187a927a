"""The KV cache and attention, as rows: the KV-cache dtype, attention backends, the block size,
the sparse indexer's cache and the hybrid KV-cache manager (DeepSeek-V4 and V4.1). Each check sits
under its row (``@row``; ``core/rules/engine.py``); docs/rules-evidence.md has the reading per release.
"""

from __future__ import annotations

from ..facts import Facts, as_bool, as_int, attention_backend, json_option, python_optimizes
from ..gpus import DSV4_FAMILIES, GpuInfo
from ..model import V41
from ..records import Record
from ..versions import VersionRange
from ..vllm.facts import fact
from .engine import BOTH, CITED, CONFIRMED, DERIVED, NOT_SM10, REFUSE, WARN, Rule, row, setting
from .kv_paths import (
    AUTO_VALUES,
    DSV4_BACKEND_NAMES,
    FLASHINFER_DSV4,
    FLASHMLA_BACKENDS,
    FP8_DS_MLA,
    dsv4_backend,
    kv_path,
)

ROWS: list[Rule] = []  # filled by @row, in this module's order


# --- the KV-cache dtype -----------------------------------------------------------------------

# Attention backends that are not DeepSeek-V4 backends at all: ValueError in
# ``_select_dsv4_attn_cls`` (vllm/models/deepseek_v4/nvidia/model.py).
NOT_DSV4_BACKENDS = frozenset({"FLASHINFER_MLA_SPARSE", "FLASHINFER_MLA_SPARSE_SM120"})
# DeepSeek-V4.1's resolver (models/deepseek_v41/attention.py _resolve_dsv4_kv_cache_dtype): the
# packed path of 0.31+ takes only these (and *_ds_mla); 0.30.0's is V4's ("fp8*" only).
DSV41_PACKED_OK = frozenset({"auto", "fp8"})
V41_PACKED_STRICT = fact("v41-packed-strict").range  # from here the packed path rejects fp8_e4m3 & co.
V41_PLAIN_ROWS_CHECKED = fact("v41-plain-rows-checked").range  # from here *_ds_mla on plain rows raises
# V4.1's selector (deepseek_v41/nvidia/model.py): these take the FlashInfer class, plain rows off SM 12.x.
V41_FLASHINFER_BACKENDS = frozenset({FLASHINFER_DSV4, "FLASHINFER_MLA_SPARSE_DSV41"})
ASSERTS_UNTIL = fact("dsv4-kv-check-asserts").range  # the DeepSeek-V4 KV check is a bare assert here
# VllmConfig's nvfp4-on-MLA test (config/vllm.py): == "nvfp4", then startswith, then not *_ds_mla.
NVFP4_EXACT_UNTIL = fact("nvfp4-mla-exact").range
NVFP4_PREFIX_UNTIL = fact("nvfp4-mla-prefix").range
KV_DTYPE_BY_PYDANTIC = fact("kv-dtype-by-pydantic").range  # --kv-cache-dtype checked by pydantic, not argparse choices


def _kv_value(facts: Facts) -> str | None:
    kv = facts.args.value("kv_cache_dtype")
    return None if kv in AUTO_VALUES or not isinstance(kv, str) else kv


def _kv_is_valid(facts: Facts, kv: str) -> bool:
    """A value this vLLM accepts at all (an invalid one is vLLM's own error, said apart)."""
    valid = facts.accepted_values.get("kv_cache_dtype")
    return not valid or kv in valid


def is_nvfp4_on_mla(kv: str, version: str | None) -> bool:
    """vLLM's own test in VllmConfig (config/vllm.py), as it changed by release (§9)."""
    if NVFP4_EXACT_UNTIL.contains(version) is True:
        return kv == "nvfp4"
    if NVFP4_PREFIX_UNTIL.contains(version) is True:
        return kv.startswith("nvfp4")
    return kv.startswith("nvfp4") and not kv.endswith("_ds_mla")


def _optimized(facts: Facts) -> str | None:
    """Why vLLM's bare ``assert`` statements are skipped (``python_optimizes``), or None."""
    return python_optimizes(facts.rule_env.get("PYTHONOPTIMIZE"), facts.interpreter_optimized)


def _assert_doubt(facts: Facts, releases: VersionRange, then: str) -> dict:
    """``uncertain`` for a refusal whose failing line is a bare assert in ``releases``, when
    PYTHONOPTIMIZE is set (the assert is skipped; ``then`` says what vLLM does instead)."""
    why = _optimized(facts)
    if not why or releases.contains(facts.vllm_version) is False:
        return {}
    return {"uncertain": f"{why}: vLLM before {releases.before} checks this with a bare assert, "
                         f"which Python skips under -O, and then {then}"}


def _v41_plain_rows(facts: Facts, gpu: GpuInfo | None) -> bool:
    """DeepSeek-V4.1 stores plain KV rows (bf16 / per-tensor FP8) rather than a packed record:
    a FlashInfer DSv4/DSv41 backend off SM 12.x (deepseek_v41/nvidia/model.py _select_dsv4_attn_cls)."""
    if gpu is None or gpu.capability is None:
        return False
    return attention_backend(facts.args) in V41_FLASHINFER_BACKENDS and gpu.capability[0] != 12


@row(
    ROWS, id="kv-invalid", topic="kv", level=WARN, evidence=CONFIRMED, releases={"pydantic": KV_DTYPE_BY_PYDANTIC},
    title="`--kv-cache-dtype` set to a value the installed vLLM does not have (`fp9`, `Auto`)",
    effect="rejected by vLLM itself at once with its own error (argparse exit 2 before {pydantic_since:minor}, "
    "pydantic after)",
    message="--kv-cache-dtype {kv}: not a value {which} accepts (it takes {valid}); vLLM rejects it "
    "itself before loading anything and prints its own error",
    fix="--kv-cache-dtype fp8, or drop the option",
    reference="vllm/config/cache.py CacheDType", models=BOTH)
def kv_invalid(facts: Facts, gpu: GpuInfo | None):
    kv = _kv_value(facts)
    if kv is None or _kv_is_valid(facts, kv):
        return None
    which = facts.vllm_words()
    if not facts.accepted_values_exact:
        which += " (judged by the nearest release dsv4-launch knows)"
    return {"kv": kv, "which": which, "valid": ", ".join(facts.accepted_values["kv_cache_dtype"])}


@row(
    ROWS, id="kv-not-fp8", topic="kv", level=REFUSE, evidence=CONFIRMED, releases={"asserts": ASSERTS_UNTIL},
    title="explicit non-fp8 `--kv-cache-dtype` (`bfloat16`, `float16`, `nvfp4_ds_mla`, …) for DeepSeek-V4 on an "
    "fp8_ds_mla path",
    effect="AssertionError (< {asserts_before:minor}; a bare assert, so only a warning under PYTHONOPTIMIZE) / "
    "ValueError (≥ {asserts_before:minor}) when the attention layers are built",
    message="{setting}: DeepSeek-V4 on {gpus} stores its KV cache as fp8_ds_mla, which has no {kv} "
    "variant; {vllm} fails when it builds the attention layers (AssertionError before {asserts_before:minor}, "
    "ValueError from {asserts_before:minor})",
    fix="--kv-cache-dtype fp8, or drop the option",
    reference="vllm/models/deepseek_v4/attention.py _resolve_dsv4_kv_cache_dtype; vLLM #47174", families=DSV4_FAMILIES)
def kv_not_fp8_on_ds_mla(facts: Facts, gpu: GpuInfo | None):
    kv = _kv_value(facts)
    if kv is None or kv.startswith("fp8") or not _kv_is_valid(facts, kv) or is_nvfp4_on_mla(kv, facts.vllm_version):
        return None
    if gpu is None or gpu.capability is None:  # a GPU-family row: evaluate() passes a GPU of known type
        return None
    path = kv_path(gpu.capability, dsv4_backend(facts.args))
    if path is None or path.layout != FP8_DS_MLA:
        return None
    return {"setting": f"--kv-cache-dtype {kv} ({facts.args.source('kv_cache_dtype')})", "kv": kv,
            **_assert_doubt(facts, ASSERTS_UNTIL, "vLLM silently stores fp8_ds_mla instead")}


@row(
    ROWS, id="nvfp4-on-mla", topic="kv", level=REFUSE, evidence=CITED,
    title="`--kv-cache-dtype nvfp4` (or `nvfp4_4over6`) on an MLA model",
    effect="`nvfp4 KV cache is not supported with MLA` when the engine config is made",
    message="{setting}: DeepSeek-V4 uses MLA attention, and {vllm} rejects an nvfp4 KV cache on MLA when it "
    "makes the engine configuration",
    fix="--kv-cache-dtype fp8, or drop the option",
    reference="vllm/config/vllm.py (nvfp4 KV cache is not supported with MLA)", models=BOTH)
def nvfp4_on_mla(facts: Facts, gpu: GpuInfo | None):
    kv = _kv_value(facts)
    if kv is None or not _kv_is_valid(facts, kv) or not is_nvfp4_on_mla(kv, facts.vllm_version):
        return None
    return {"setting": f"--kv-cache-dtype {kv} ({facts.args.source('kv_cache_dtype')})"}


@row(
    ROWS, id="v41-kv", topic="kv", level=REFUSE, evidence=CONFIRMED, releases={"strict": V41_PACKED_STRICT},
    title="DeepSeek-V4.1 on its packed KV path with a `--kv-cache-dtype` its resolver rejects (`bfloat16`, "
    "`float16`; from {strict_since} also `fp8_e4m3`, `fp8_e5m2`, `fp8_inc`, `fp8_per_token_head`)",
    effect="`ValueError: DeepseekV4 … only support(s) fp8 kv-cache, got …` when the attention layers are built",
    message="{setting}: DeepSeek-V4.1 on {gpus} stores a packed KV record, and {vllm}'s V4.1 KV-cache resolver "
    "takes only {accepted} there; it raises ValueError ('{error}') when it builds the attention layers",
    fix="--kv-cache-dtype fp8, or drop the option (auto selects V4.1's packed format)",
    reference="vllm/models/deepseek_v41/attention.py _resolve_dsv4_kv_cache_dtype",
    models=frozenset({V41}), families=DSV4_FAMILIES, vllm=fact("v41-kv").range)
def kv_rejected_by_v41(facts: Facts, gpu: GpuInfo | None):
    kv = _kv_value(facts)
    if (kv is None or not _kv_is_valid(facts, kv) or is_nvfp4_on_mla(kv, facts.vllm_version)
            or _v41_plain_rows(facts, gpu)):
        return None  # plain rows: v41-ds-mla-on-plain-rows
    strict = V41_PACKED_STRICT.contains(facts.vllm_version)
    if strict is True:
        rejected = kv not in DSV41_PACKED_OK and not kv.endswith("_ds_mla")
        accepted = "auto, fp8 and the *_ds_mla records"
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


@row(
    ROWS, id="v41-ds-mla-on-plain-rows", topic="kv", level=REFUSE, evidence=CONFIRMED,
    title="DeepSeek-V4.1 with `--attention-backend FLASHINFER_MLA_SPARSE_DSV4`/`_DSV41` off SM 12.x and "
    "`--kv-cache-dtype fp8_ds_mla` or `nvfp4_ds_mla`",
    effect="`ValueError: … is a packed FlashMLA DeepSeek V4.1 KV cache format; the selected backend stores plain "
    "KV rows.` when the attention layers are built",
    message="{setting} with --attention-backend {backend} on {gpus}: this backend stores plain KV rows for "
    "DeepSeek-V4.1, and {vllm} raises ValueError ('{kv} is a packed FlashMLA DeepSeek V4.1 KV cache format') "
    "when it builds the attention layers",
    fix="--kv-cache-dtype fp8 (per-tensor FP8 rows) or auto (bf16 rows) with this backend, or drop "
    "--attention-backend for the packed record",
    reference="vllm/models/deepseek_v41/attention.py _resolve_dsv4_kv_cache_dtype",
    models=frozenset({V41}), families=frozenset({"9", "10"}), vllm=V41_PLAIN_ROWS_CHECKED)
def v41_ds_mla_on_plain_rows(facts: Facts, gpu: GpuInfo | None):
    kv = _kv_value(facts)
    if kv is None or not kv.endswith("_ds_mla") or not _kv_is_valid(facts, kv) or not _v41_plain_rows(facts, gpu):
        return None
    return {"setting": f"--kv-cache-dtype {kv} ({facts.args.source('kv_cache_dtype')})", "kv": kv,
            "backend": attention_backend(facts.args)}


# --- attention backends -----------------------------------------------------------------------

@row(
    ROWS, id="backend-not-dsv4", topic="kv", level=REFUSE, evidence=CITED,
    title="`--attention-backend FLASHINFER_MLA_SPARSE` or `…_SM120`",
    effect="`ValueError: … is not a DeepSeek V4 (V4.1) attention backend` when the model is built",
    message="--attention-backend {backend}: not a {name} attention backend; {vllm} raises ValueError when "
    "it builds the model",
    fix="--attention-backend {use}, or drop the option",
    reference="vllm/models/deepseek_v4/nvidia/model.py, vllm/models/deepseek_v41/nvidia/model.py "
    "_select_dsv4_attn_cls", models=BOTH)
def backend_not_dsv4(facts: Facts, gpu: GpuInfo | None):
    backend = attention_backend(facts.args)
    if backend not in NOT_DSV4_BACKENDS:
        return None
    if facts.model.family == V41:  # V4.1's own selector raises the same (vLLM 0.30+, where V4.1 exists)
        return {"backend": backend, "name": "DeepSeek V4.1", "use": "FLASHINFER_MLA_SPARSE_DSV41"}
    return {"backend": backend, "name": "DeepSeek V4", "use": FLASHINFER_DSV4}


# The backends DeepSeek-V4.1's selector keeps with prefill context parallelism
# (deepseek_v41/nvidia/model.py:211-221@0.33); no such branch before 0.33 (:117@0.30, :190@0.31, :197@0.32).
PCP_BACKENDS = frozenset({"FLASHMLA_SPARSE", "FLASHMLA_SPARSE_DSV4", "FLASHMLA_SPARSE_DSV41"})


@row(
    ROWS, id="v41-pcp-not-flashmla", topic="kv", level=REFUSE, evidence=CITED,
    title="DeepSeek-V4.1 with `--prefill-context-parallel-size` > 1 and an attention backend other than FlashMLA "
    "sparse (FlashInfer, MegaAttn, …)",
    effect="`NotImplementedError: DeepSeek-V4.1 PCP requires FlashMLA sparse attention.` when the model is built",
    message="--prefill-context-parallel-size {pcp} with --attention-backend {backend}: {vllm}'s DeepSeek-V4.1 "
    "supports prefill context parallelism only with FlashMLA sparse attention and raises NotImplementedError "
    "when it builds the model",
    fix="--attention-backend FLASHMLA_SPARSE_DSV41 (or drop the option), or --prefill-context-parallel-size 1",
    reference="vllm/models/deepseek_v41/nvidia/model.py _select_dsv4_attn_cls (PCP branch)",
    models=frozenset({V41}), vllm=fact("v41-pcp-not-flashmla").range)
def v41_pcp_not_flashmla(facts: Facts, gpu: GpuInfo | None):
    pcp = as_int(facts.args.value("prefill_context_parallel_size")) or 1
    backend = attention_backend(facts.args)
    return None if pcp <= 1 or backend is None or backend in PCP_BACKENDS else {"pcp": pcp, "backend": backend}


@row(
    ROWS, id="backend-ignored", topic="kv", level=WARN, evidence=CITED,
    title="`--attention-backend` naming a backend DeepSeek-V4 does not use (`TRITON_MLA`, `FLASH_ATTN`, …)",
    effect="silently ignored: the default DeepSeek-V4 attention is used",
    message="--attention-backend {backend}: DeepSeek-V4's attention selector ignores it and uses its default "
    "backend",
    fix=f"drop the option, or use FLASHMLA_SPARSE_DSV4 / {FLASHINFER_DSV4}",
    reference="vllm/models/deepseek_v4/nvidia/model.py _select_dsv4_attn_cls")
def backend_ignored(facts: Facts, gpu: GpuInfo | None):
    backend = attention_backend(facts.args)
    if backend is None or dsv4_backend(facts.args) is not None:
        return None
    known = facts.accepted_values.get("attention_backend")
    if known and backend not in known:
        return None  # not a vLLM backend name at all: vLLM says so itself at once
    return {"backend": backend}


@row(
    ROWS, id="flashmla-on-sm12", topic="kv", level=WARN, evidence=DERIVED,
    title="SM 12.x with `--attention-backend FLASHMLA_SPARSE[_DSV4]`",
    effect="the FlashMLA class is built, but FlashMLA ships no sm_120 kernels",
    message="--attention-backend {backend} on {gpus}: FlashMLA has no sm_120 kernels, so the model is expected "
    "to fail when it first runs",
    fix=f"drop the option (SM 12.x uses FlashInfer SM120 by default) or use {FLASHINFER_DSV4}",
    reference="vllm/models/deepseek_v4/nvidia/model.py; FlashMLA builds sm_90a/sm_100f only",
    families=frozenset({"12"}))
def flashmla_forced(facts: Facts, gpu: GpuInfo | None):
    backend = dsv4_backend(facts.args)
    return {"backend": backend} if backend in FLASHMLA_BACKENDS else None


@row(
    ROWS, id="flashinfer-dsv4-on-sm9", topic="kv", level=WARN, evidence=DERIVED,
    title=f"SM 9.x with `--attention-backend {FLASHINFER_DSV4}`",
    effect="selects the SM 10.x TRTLLM-gen plain-row class, whose kernels are SM 10.x only",
    message="--attention-backend {backend} on {gpus}: vLLM picks the SM 10.x FlashInfer plain-row attention, "
    "whose TRTLLM-gen kernels do not run on SM 9.x",
    fix="drop the option (SM 9.x uses FlashMLA by default)",
    reference="vllm/models/deepseek_v4/nvidia/model.py _select_dsv4_attn_cls", families=frozenset({"9"}))
def flashinfer_dsv4_on_hopper(facts: Facts, gpu: GpuInfo | None):
    return {"backend": FLASHINFER_DSV4} if dsv4_backend(facts.args) == FLASHINFER_DSV4 else None


@row(
    ROWS, id="fp8-ds-mla-on-plain-rows", topic="kv", level=WARN, evidence=DERIVED,
    releases={"v41_checked": V41_PLAIN_ROWS_CHECKED},
    title=f"SM 10.x + `{FLASHINFER_DSV4}` + `--kv-cache-dtype fp8_ds_mla` or `nvfp4_ds_mla` (DeepSeek-V4; "
    "V4.1 before {v41_checked_since})",
    effect="a mismatched KV layout that no validator catches",
    message="--kv-cache-dtype {kv} with --attention-backend {backend} on {gpus}: this backend stores plain "
    "KV rows (bf16 or per-tensor FP8) on SM 10.x, not the packed {kv} record, and {vllm} does not check the "
    "mismatch",
    fix="--kv-cache-dtype fp8 (or auto for bf16 rows)",
    reference="vllm/models/deepseek_v4/attention.py _resolve_dsv4_kv_cache_dtype; "
    "vllm/models/deepseek_v4/nvidia/flashinfer_sparse.py", models=BOTH, families=frozenset({"10"}))
def ds_mla_on_plain_rows(facts: Facts, gpu: GpuInfo | None):
    kv = facts.args.value("kv_cache_dtype")
    if kv not in ("fp8_ds_mla", "nvfp4_ds_mla") or not _kv_is_valid(facts, kv):
        return None  # nvfp4_ds_mla before 0.30: kv-invalid
    if facts.model.family == V41:  # V4.1 0.30.0 only: its resolver is V4's; 0.31+ raise (v41-ds-mla-on-plain-rows)
        if V41_PLAIN_ROWS_CHECKED.contains(facts.vllm_version) is not False or not _v41_plain_rows(facts, gpu):
            return None
        return {"backend": attention_backend(facts.args), "kv": kv}
    return None if dsv4_backend(facts.args) != FLASHINFER_DSV4 else {"backend": FLASHINFER_DSV4, "kv": kv}


@row(
    ROWS, id="attention-env-ignored", topic="kv", level=WARN, evidence=CITED,
    title="`VLLM_ATTENTION_BACKEND` set",
    effect="read nowhere by any vLLM release dsv4-launch knows (the default backend is used)",
    message="VLLM_ATTENTION_BACKEND={value} is not read by {vllm}",
    fix="{fix}", reference="vLLM #50292; vllm/envs.py", models=BOTH)
def attention_env_ignored(facts: Facts, gpu: GpuInfo | None):
    value = facts.rule_env.get("VLLM_ATTENTION_BACKEND")
    if not value:
        return None
    usable = value.strip().upper() in DSV4_BACKEND_NAMES - NOT_DSV4_BACKENDS
    fix = (f"--attention-backend {value.strip().upper()} (and unset VLLM_ATTENTION_BACKEND)" if usable
           else "unset VLLM_ATTENTION_BACKEND (DeepSeek-V4's default attention is used either way)")
    return {"value": value, "fix": fix}


# --- the block size ---------------------------------------------------------------------------

def _block(facts: Facts, multiple: int, name: str):
    size = as_int(facts.args.value("block_size"))
    if size is None or size <= 0 or size % multiple == 0:
        return None
    return {"setting": setting(facts, "block_size", "--block-size"), "name": name, "multiple": multiple,
            "suggested": max(multiple, size // multiple * multiple)}


@row(
    ROWS, id="block-size", topic="parallel", level=REFUSE, evidence=CONFIRMED,
    title="`--block-size` not a multiple of 256 (DeepSeek-V4)",
    effect="`No common block size` after the weights load",
    message="{setting}: {name}'s sparse attention needs a multiple of {multiple}; {vllm} fails with 'No common "
    "block size' after loading the weights",
    fix="--block-size {suggested}, or drop the option",
    reference="vllm/models/deepseek_v4/sparse_mla.py get_supported_kernel_block_sizes; vllm/v1/worker/utils.py")
def block_size_v4(facts: Facts, gpu: GpuInfo | None):
    return _block(facts, 256, "DeepSeek-V4")


@row(
    ROWS, id="block-size-v41", topic="parallel", level=REFUSE, evidence=CITED,
    title="`--block-size` not a multiple of 128 (DeepSeek-V4.1; 64 on SM 9.x with FlashMLA)",
    effect="`No common block size` after the weights load",
    message="{setting}: {name}'s sparse attention on {gpus} needs a multiple of {multiple}; {vllm} fails with "
    "'No common block size' after loading the weights",
    fix="--block-size {suggested}, or drop the option",
    reference="vllm/models/deepseek_v41/sparse_mla.py, nvidia/flashinfer_sparse.py", models=frozenset({V41}),
    families=DSV4_FAMILIES, vllm=fact("block-size-v41").range)
def block_size_v41(facts: Facts, gpu: GpuInfo | None):
    # 64 on the SM 9.x family, 128 elsewhere (deepseek_v41/sparse_mla.py, 0.30+); the FlashInfer
    # plain-row backend takes 128 on every GPU (deepseek_v41/nvidia/flashinfer_sparse.py)
    if gpu is None or gpu.capability is None:  # a GPU-family row: evaluate() passes a GPU of known type
        return None
    sm9_flashmla = gpu.capability[0] == 9 and not _v41_plain_rows(facts, gpu)
    return _block(facts, 64 if sm9_flashmla else 128, "DeepSeek-V4.1")


# --- the sparse indexer's cache ---------------------------------------------------------------

# --attention-config.indexer_kv_dtype values the DeepSeek sparse indexer rejects (indexer.py
# dsa_indexer_uses_fp4, vLLM 0.28+; accepted: auto, fp8, mxfp4).
INDEXER_REJECTED = frozenset({"bf16", "nvfp4"})
INDEXER_KV_DTYPE_READ = fact("indexer-kv-dtype-read").range  # --attention-config.indexer_kv_dtype
INDEXER_ASSERTS_UNTIL = fact("indexer-fp4-asserts").range  # the FP4 indexer check is a bare assert here


def _attention_config(facts: Facts) -> dict:
    return json_option(facts.args, "attention_config") or {}


def _fp4_indexer_flag(facts: Facts) -> bool:
    return as_bool(_attention_config(facts).get("use_fp4_indexer_cache"))


def _fp4_indexer_fix(facts: Facts) -> str:
    sm10 = [g for g in facts.known_gpus if g.capability is not None and g.capability[0] == 10]
    if sm10 and INDEXER_KV_DTYPE_READ.contains(facts.vllm_version):
        return "--attention-config.indexer_kv_dtype mxfp4 (the FP4 indexer cache on SM 10.x)"
    return "drop --attention_config.use_fp4_indexer_cache (vLLM picks the indexer cache itself)"


@row(
    ROWS, id="fp4-indexer-off-sm10", topic="recipe", level=REFUSE, evidence=CITED,
    releases={"asserts": INDEXER_ASSERTS_UNTIL},
    title="`--attention_config.use_fp4_indexer_cache=True` off SM 10.x, vLLM {since:minor}–{before:last}",
    effect="AssertionError in the indexer metadata builder ({since:minor}–{asserts_before:last}; a bare assert, "
    "so only a warning under PYTHONOPTIMIZE) / ValueError at layer construction ({asserts_before:minor}–{before:last})",
    message="--attention_config.use_fp4_indexer_cache=True on {gpus}: the FP4 indexer cache needs Blackwell "
    "data-centre GPUs; {vllm} fails with 'use_fp4_indexer_cache requires Blackwell datacenter GPUs (sm_10x…)'",
    fix="{fix}",
    reference="vllm/v1/attention/backends/mla/indexer.py; vllm#52550; recipes#760",
    families=NOT_SM10, vllm=fact("fp4-indexer-off-sm10").range)
def fp4_indexer_off_sm10(facts: Facts, gpu: GpuInfo | None):
    if not _fp4_indexer_flag(facts):
        return None
    return {"fix": "drop --attention_config.use_fp4_indexer_cache (an SM 10.x-only option)",
            **_assert_doubt(facts, INDEXER_ASSERTS_UNTIL, "the FP4 indexer cache is used on this GPU anyway")}


@row(
    ROWS, id="fp4-indexer-removed", topic="recipe", level=REFUSE, evidence=CONFIRMED,
    title="`use_fp4_indexer_cache` in `--attention-config` (any spelling) on vLLM ≥ {since:minor}",
    effect="exit 2 at once: 'Unexpected keyword argument' (the option was removed, on every GPU)",
    message="use_fp4_indexer_cache in --attention-config: {vllm} no longer has this option (removed in {since:minor}) "
    "and rejects the arguments with 'Unexpected keyword argument', on every GPU",
    fix="{fix}",
    reference="vllm/config/attention.py; vllm#52550", vllm=fact("fp4-indexer-removed").range)
def fp4_indexer_removed(facts: Facts, gpu: GpuInfo | None):
    config = _attention_config(facts)
    if "use_fp4_indexer_cache" not in config:
        return None
    if not _fp4_indexer_flag(facts):  # an opt-out (False): the FP4 cache is off by default anyway
        return {"fix": "drop --attention_config.use_fp4_indexer_cache (vLLM picks the indexer cache itself)"}
    return {"fix": _fp4_indexer_fix(facts)}


@row(
    ROWS, id="mxfp4-indexer-off-sm10", topic="recipe", level=REFUSE, evidence=CITED,
    title="`--attention-config.indexer_kv_dtype mxfp4` off SM 10.x, vLLM ≥ {since:minor}",
    effect="`ValueError: indexer_kv_dtype='mxfp4' requires Blackwell datacenter GPUs` when the model is built",
    message="--attention-config.indexer_kv_dtype mxfp4 on {gpus}: {vllm} raises ValueError "
    "(\"indexer_kv_dtype='mxfp4' requires Blackwell datacenter GPUs\") when it builds the model",
    fix="drop it (vLLM picks the indexer cache itself)",
    reference="vllm/v1/attention/backends/mla/indexer.py", families=NOT_SM10, vllm=fact("mxfp4-indexer-off-sm10").range)
def mxfp4_indexer_off_sm10(facts: Facts, gpu: GpuInfo | None):
    return None if _attention_config(facts).get("indexer_kv_dtype") != "mxfp4" or _fp4_indexer_flag(facts) else {}


@row(
    ROWS, id="indexer-dtype-unsupported", topic="recipe", level=REFUSE, evidence=CONFIRMED,
    title="`--attention-config.indexer_kv_dtype bf16` or `nvfp4`",
    effect="`ValueError: indexer_kv_dtype='bf16' is not supported by the DeepSeek sparse indexer` when the model "
    "is built, on every GPU",
    message="--attention-config.indexer_kv_dtype {value}: the DeepSeek sparse indexer takes only fp8 or mxfp4, "
    "and {vllm} raises ValueError (\"indexer_kv_dtype='{value}' is not supported by the DeepSeek sparse "
    "indexer\") when it builds the model",
    fix="drop it (fp8, the default), or --attention-config.indexer_kv_dtype mxfp4 on SM 10.x",
    reference="vllm/v1/attention/backends/mla/indexer.py dsa_indexer_uses_fp4", models=BOTH,
    vllm=fact("indexer-dtype-unsupported").range)
def indexer_dtype_unsupported(facts: Facts, gpu: GpuInfo | None):
    value = _attention_config(facts).get("indexer_kv_dtype")
    return {"value": value} if value in INDEXER_REJECTED else None


@row(
    ROWS, id="indexer-dtype-ignored", topic="recipe", level=WARN, evidence=CITED,
    title="`--attention-config.indexer_kv_dtype` on vLLM {since:minor}–{before:last}",
    effect="ignored by DeepSeek-V4 (it reads only use_fp4_indexer_cache)",
    message="--attention-config.indexer_kv_dtype {value}: {vllm}'s DeepSeek-V4 does not read it (only "
    "use_fp4_indexer_cache, on SM 10.x)",
    fix="drop it; on SM 10.x use --attention_config.use_fp4_indexer_cache=True before {before:minor}",
    reference="vllm/models/deepseek_v4/attention.py", vllm=fact("indexer-dtype-ignored").range)
def indexer_dtype_ignored(facts: Facts, gpu: GpuInfo | None):
    value = _attention_config(facts).get("indexer_kv_dtype")
    return {"value": value} if value not in (None, "bf16") else None


# --- the hybrid KV-cache manager --------------------------------------------------------------

# KV connectors without SupportsHMA: the registry's classes (distributed/kv_transfer/kv_connector/
# factory.py) whose class does not subclass SupportsHMA (kv_connector/v1/base.py supports_hma),
# 0.24–0.33 (tests/vllm_real/test_connector_oracle.py asks each CI release's own factory).
NO_HMA_CONNECTORS = frozenset({"ExampleConnector", "LMCacheConnectorV1", "FlexKVConnectorV1", "HF3FSKVConnector"})
# … and one that gained it: MoRIIOConnector subclasses SupportsHMA from 0.30.
HMA_SINCE = {"MoRIIOConnector": fact("moriio-supports-hma").range}
# LMCacheMPConnector is the lmcache package's class when lmcache is installed, vLLM's builtin one
# (no SupportsHMA) otherwise (lmcache_mp_connector.py:1191-1217@0.33, :1200-1226@0.24): its hybrid
# support is the installed lmcache's, which nothing here reads.
LMCACHE_MP = "LMCacheMPConnector"
LMCACHE_MP_DOUBT = ("vLLM uses the installed lmcache package's LMCacheMPConnector when there is one "
                    "(vllm/distributed/kv_transfer/kv_connector/v1/lmcache_mp_connector.py), whose hybrid "
                    "support is not checked here")
# kv_connector_module_path: vLLM imports that module and takes the class named kv_connector from it,
# before its own registry (factory.py get_connector_class@0.24–0.33), and the class decides
# (supports_hma: a subclass of SupportsHMA) — the user's class, which nothing here imports.
USER_CLASS_DOUBT = ("kv_connector_module_path makes vLLM load the class from that module, before its own registry "
                    "(vllm/distributed/kv_transfer/kv_connector/factory.py get_connector_class): the class is the "
                    "user's, and whether it supports the hybrid KV-cache manager (SupportsHMA) is unknown here")


def _dcp_doubt(facts: Facts) -> dict:
    dcp = as_int(facts.args.value("decode_context_parallel_size")) or 1
    if dcp <= 1:
        return {}
    return {"uncertain": f"with --decode-context-parallel-size {dcp} vLLM may plan the sharded caches apart, "
                         "which this check does not model"}


class Connector(Record):
    """The KV connector vLLM builds, and whether it supports the hybrid KV-cache manager."""

    name: str  # as the message shows it: "MultiConnector (its child LMCacheConnectorV1)"
    how: str  # which option made it
    hma: bool
    doubt: str | None = None  # why ``hma`` False may be wrong


def effective_transfer_config(facts: Facts) -> tuple[dict | None, str]:
    """The KV-transfer config vLLM is left with, and which option decides its connector.

    ``VllmConfig._post_init_kv_transfer_config`` (config/vllm.py:775-809@0.24, :964-998@0.29,
    :1124-1158@0.31, :1151-1185@0.33, the same code in every release 0.24–0.33): without
    ``--kv-offloading-size`` it changes nothing (``--kv-offloading-backend`` alone makes no
    connector: "KV offloading is only activated when kv_offloading_size is set"); with a size,
    the backend's connector replaces whatever ``--kv-transfer-config`` named — native:
    OffloadingConnector (SimpleCPUOffloadConnector with VLLM_USE_SIMPLE_KV_OFFLOAD), lmcache:
    LMCacheMPConnector."""
    config = json_option(facts.args, "kv_transfer_config")
    if facts.args.value("kv_offloading_size") is None:
        return config, "--kv-transfer-config"
    backend = facts.args.value("kv_offloading_backend") or "native"
    how = f"--kv-offloading-size with --kv-offloading-backend {backend}"
    replaced = {"native": "OffloadingConnector", "lmcache": LMCACHE_MP}.get(str(backend))
    if replaced is None:
        return config, "--kv-transfer-config"
    if isinstance(config, dict) and isinstance(config.get("kv_connector"), str):
        how += f", which replaces --kv-transfer-config's {config['kv_connector']}"
    return {**(config or {}), "kv_connector": replaced}, how


def _supports_hma(config: dict, version: str | None, depth: int = 0) -> tuple[bool, str, str | None] | None:
    """(supports, name, doubt) for one connector config as KVConnectorFactory.supports_hma_config
    judges it (factory.py:131-145@0.29, :141-146@0.33): a MultiConnector supports it only if it
    has children and every one does (multi_connector.py all_children_support_hma); one from
    ``kv_connector_module_path`` is the user's class: not supported, with a doubt. None: no
    connector."""
    name = config.get("kv_connector")
    if not isinstance(name, str) or depth > 8:
        return None
    if name == "MultiConnector":
        children = (config.get("kv_connector_extra_config") or {}).get("connectors") \
            if isinstance(config.get("kv_connector_extra_config"), dict) else None
        if not isinstance(children, list) or not children:
            return False, "MultiConnector (no child connector in kv_connector_extra_config.connectors)", None
        doubts = []
        for child in children:
            judged = _supports_hma(child, version, depth + 1) if isinstance(child, dict) else None
            if judged is not None and not judged[0]:
                if judged[2] is None:
                    return False, f"MultiConnector (its child {judged[1]})", None
                doubts.append((judged[1], judged[2]))
        return (False, f"MultiConnector (its child {doubts[0][0]})", doubts[0][1]) if doubts else (True, name, None)
    module = config.get("kv_connector_module_path")
    if isinstance(module, str) and module:  # (MultiConnector above: vLLM judges it by its children whatever the class)
        return False, f"{name} from {module}", USER_CLASS_DOUBT
    if name == LMCACHE_MP:
        return False, name, LMCACHE_MP_DOUBT
    gained = HMA_SINCE.get(name)
    if gained is not None:
        has = gained.contains(version)
        if has is None:
            return False, name, f"{name} supports it from vLLM {gained.since} on; the installed version is unknown"
        return has, name, None
    return (False, name, None) if name in NO_HMA_CONNECTORS else (True, name, None)


def effective_connector(facts: Facts) -> Connector | None:
    """The connector vLLM builds from these arguments, None when it builds none."""
    config, how = effective_transfer_config(facts)
    if not isinstance(config, dict):
        return None
    judged = _supports_hma(config, facts.vllm_version)
    if judged is None:
        return None
    hma, name, doubt = judged
    return Connector(name, how, hma, doubt)


def _no_hma_connector(facts: Facts) -> Connector | None:
    connector = effective_connector(facts)
    return connector if connector is not None and not connector.hma else None


def _hma_explicitly_on(facts: Facts) -> bool:
    return facts.args.value("disable_hybrid_kv_cache_manager") is False or \
        facts.args.value("enable_hybrid_kv_cache_manager") is True


# Where vLLM's promotion of DeepSeek-V4's sliding-window caches to full MLA attention (the hybrid
# KV-cache manager off) raises TypeError (replace_as copies SlidingWindowMLASpec.bounded_replay); 0.34
# drops it, so the caches are promoted and vLLM starts with far less KV room (hma-off-full-attention).
HMA_PROMOTION_RAISES = fact("hma-promotion-raises").range


@row(
    ROWS, id="hma-disabled", topic="serving", level=REFUSE, evidence=CONFIRMED,
    title="`--disable-hybrid-kv-cache-manager` for DeepSeek-V4",
    effect="`TypeError: MLAAttentionSpec.__init__() got an unexpected keyword argument 'bounded_replay'` when "
    "the KV-cache groups are planned, after the weight load, on every GPU",
    message="--disable-hybrid-kv-cache-manager: without the hybrid KV-cache manager {vllm} promotes DeepSeek-V4's "
    "sliding-window caches to full MLA attention, and that promotion raises TypeError (MLAAttentionSpec has no "
    "'bounded_replay') when it plans the KV cache, after loading the weights",
    fix="drop it (with a KV connector, use one with hybrid support: NixlConnector, MooncakeConnector)",
    reference="vllm/v1/core/kv_cache_planning.py _promote_local_kv_cache_specs (kv_cache_utils.py before 0.33); "
    "vllm/v1/kv_cache_interface.py replace_as, SlidingWindowMLASpec.bounded_replay", models=BOTH,
    vllm=HMA_PROMOTION_RAISES)
def hma_disabled(facts: Facts, gpu: GpuInfo | None):
    return _dcp_doubt(facts) if facts.args.value("disable_hybrid_kv_cache_manager") is True else None


@row(
    ROWS, id="connector-turns-hma-off", topic="serving", level=REFUSE, evidence=CITED,
    title="a KV connector without hybrid-manager support, as vLLM builds it (LMCacheConnectorV1, FlexKV, HF3FS, "
    "Example, a MultiConnector with one of them; `--kv-offloading-size` with `--kv-offloading-backend lmcache` "
    "only warns: the lmcache package decides)",
    effect="vLLM turns the hybrid KV-cache manager off by itself, then the `hma-disabled` TypeError after the "
    "weight load",
    message="{connector} ({how}) does not support the hybrid KV-cache manager, so {vllm} turns it off for "
    "DeepSeek-V4 and then raises TypeError (MLAAttentionSpec has no 'bounded_replay') when it plans the KV "
    "cache, after loading the weights",
    fix="a connector with hybrid support (NixlConnector, MooncakeConnector), or no KV connector",
    reference="vllm/config/vllm.py _post_init_kv_transfer_config, (Turning off hybrid kv cache manager …); "
    "vllm/distributed/kv_transfer/kv_connector/factory.py supports_hma_config; "
    "vllm/v1/core/kv_cache_planning.py _promote_local_kv_cache_specs", models=BOTH, vllm=HMA_PROMOTION_RAISES)
def connector_turns_hma_off(facts: Facts, gpu: GpuInfo | None):
    connector = _no_hma_connector(facts)
    if connector is None or facts.args.value("disable_hybrid_kv_cache_manager") is not None \
            or _hma_explicitly_on(facts):
        return None
    doubt = {"uncertain": connector.doubt} if connector.doubt else _dcp_doubt(facts)
    return {"connector": connector.name, "how": connector.how, **doubt}


@row(
    ROWS, id="hma-off-full-attention", topic="serving", level=WARN, evidence=DERIVED,
    title="the hybrid KV-cache manager off (`--disable-hybrid-kv-cache-manager`, or a connector without "
    "hybrid support)",
    effect="sliding-window and compressor caches are promoted to full attention (vLLM before {raises_since:minor} "
    "and from {raises_before:minor}; in between, the `hma-disabled` TypeError): far less room for context, "
    "possibly out of memory",
    message="{why}: without the hybrid KV-cache manager {vllm} allocates DeepSeek-V4's sliding-window and "
    "compressor caches as full attention (a slot for every token), which leaves far less room for context "
    "and may run out of memory",
    fix="keep the hybrid KV-cache manager on (drop the flag; with a KV connector, use NixlConnector or "
    "MooncakeConnector)",
    reference="vllm/v1/core/kv_cache_planning.py unify_hybrid_kv_cache_specs (kv_cache_utils.py before 0.33); "
    "vllm-ascend#9975", models=BOTH, releases={"raises": HMA_PROMOTION_RAISES})
def hma_off_promoted(facts: Facts, gpu: GpuInfo | None):
    if HMA_PROMOTION_RAISES.contains(facts.vllm_version) is not False:
        return None  # the promotion raises there (hma-disabled, connector-turns-hma-off), or unknown
    if hma_disabled(facts, gpu) is not None:
        return {"why": "--disable-hybrid-kv-cache-manager"}
    found = connector_turns_hma_off(facts, gpu)
    if found is None:
        return None
    doubt = {"uncertain": found["uncertain"]} if "uncertain" in found else {}
    return {"why": f"{found['connector']} (vLLM turns the hybrid KV-cache manager off for it)", **doubt}


@row(
    ROWS, id="connector-hma-forced", topic="serving", level=REFUSE, evidence=CITED,
    title="the hybrid KV-cache manager forced on with a connector that does not support it",
    effect="`ValueError: Connector … does not support HMA but HMA is enabled` when the connector is made",
    message="the hybrid KV-cache manager is forced on, and {connector} does not support it: {vllm} raises "
    "ValueError when the engine creates the connector",
    fix="a connector with hybrid support (NixlConnector, MooncakeConnector)",
    reference="vllm/distributed/kv_transfer/kv_connector/factory.py", models=BOTH)
def connector_with_hma_forced(facts: Facts, gpu: GpuInfo | None):
    connector = _no_hma_connector(facts)
    if connector is None or not _hma_explicitly_on(facts):
        return None
    return {"connector": connector.name, **({"uncertain": connector.doubt} if connector.doubt else {})}


# --- sizing the KV cache ----------------------------------------------------------------------

@row(
    ROWS, id="vision-no-compress-ratios", topic="serving", level=WARN, evidence=DERIVED,
    title="DeepSeek-V4-Flash-Vision-Exp (`vision_n_layers` > 0) whose config facts have no `compress_ratios`",
    effect="dsv4-launch cannot size the KV cache per token, so its max-model-len check is skipped (vLLM checks "
    "after the weight load)",
    message="{arch}: the config.json dsv4-launch read has no compress_ratios, so it cannot size DeepSeek-V4's "
    "KV cache per token and skips its check that --max-model-len fits; {vllm} checks it itself only after "
    "loading the weights",
    fix="give the checkpoint's own config.json (a local model directory), or set --max-model-len to a length "
    "you know fits",
    reference="vllm/v1/core/kv_cache_planning.py (max-model-len check); recipes DeepSeek-V4-Flash-Vision",
    vllm=fact("vision-no-compress-ratios").range)
def vision_without_ratios(facts: Facts, gpu: GpuInfo | None):
    layers = facts.model.number("vision_n_layers")
    ratios = (facts.model.config or {}).get("compress_ratios")
    if not layers or layers <= 0 or (isinstance(ratios, list) and ratios):
        return None
    return {"arch": facts.model.known_id or facts.model.name or "the model"}

"""The DeepSeek-V4 pre-flight rules: configurations vLLM accepts and then fails on, as rows.

Every row names the vLLM code that fails (file:line per release where it moved) and the
upstream issue; docs/rules-evidence.md has the per-release reading. ``core/rules.py`` explains
the fields and how a row is judged. Adding a rule = one row here + a trips/passes test pair in
tests/test_rules_dsv4.py (+ an oracle in tests/vllm_real/ when vLLM's code can judge it on the
CPU).
"""

from __future__ import annotations

from .facts import Facts, as_int, attention_backend
from .gpus import GpuInfo
from .kv import AUTO_VALUES, FP8_DS_MLA, kv_path
from .model import V4, V41
from .rules import CITED, CONFIRMED, DERIVED, REFUSE, WARN, Rule
from .rules_memory import MEMORY_RULES
from .versions import VersionRange

BOTH = frozenset({V4, V41})
DSV4_GPUS = frozenset({"9", "10", "12"})
OLD_GPUS = frozenset({"3", "5", "6", "7", "8"})  # below SM 9.0: no DeepSeek-V4 kernels

# Attention backends that are not DeepSeek-V4 backends at all: ValueError in
# ``_select_dsv4_attn_cls`` (vllm/models/deepseek_v4/nvidia/model.py).
NOT_DSV4_BACKENDS = frozenset({"FLASHINFER_MLA_SPARSE", "FLASHINFER_MLA_SPARSE_SM120"})
FLASHMLA_BACKENDS = frozenset({"FLASHMLA_SPARSE", "FLASHMLA_SPARSE_DSV4"})
FLASHINFER_DSV4 = "FLASHINFER_MLA_SPARSE_DSV4"

# Block sizes must be a multiple of this (vllm/models/deepseek_v4/sparse_mla.py,
# get_supported_kernel_block_sizes; "No common block size" after the weights load).
BLOCK_MULTIPLE = {V4: 256, V41: 128}

# DeepSeek-V4.1's own resolver rejects these explicit values (vLLM >= 0.30).
DSV41_REJECTED_KV = frozenset({"fp8_e4m3", "bfloat16"})


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
    valid = facts.values.get("kv_cache_dtype")
    return not valid or kv in valid


def kv_invalid(facts: Facts, gpu: GpuInfo | None):
    kv = _kv_value(facts)
    if kv is None or _kv_is_valid(facts, kv):
        return None
    which = facts.vllm_words() if facts.values_exact else f"{facts.vllm_words()} (judged by the nearest release dsv4-launch knows)"
    return {"kv": kv, "which": which, "valid": ", ".join(facts.values["kv_cache_dtype"])}


# --- checks: each returns the template's values when its condition holds ------------------

def kv_not_fp8_on_ds_mla(facts: Facts, gpu: GpuInfo | None):
    kv = _kv_value(facts)
    if kv is None or kv.startswith("fp8") or not _kv_is_valid(facts, kv):
        return None
    path = kv_path(gpu.capability, attention_backend(facts.args))
    if path is None or path.layout != FP8_DS_MLA:
        return None
    return {"setting": f"--kv-cache-dtype {kv} ({facts.args.source('kv_cache_dtype')})", "kv": kv}


def kv_rejected_by_v41(facts: Facts, gpu: GpuInfo | None):
    kv = _kv_value(facts)
    if kv not in DSV41_REJECTED_KV:
        return None
    return {"setting": f"--kv-cache-dtype {kv} ({facts.args.source('kv_cache_dtype')})", "kv": kv}


def backend_not_dsv4(facts: Facts, gpu: GpuInfo | None):
    backend = attention_backend(facts.args)
    return {"backend": backend} if backend in NOT_DSV4_BACKENDS else None


def flashmla_forced(facts: Facts, gpu: GpuInfo | None):
    backend = attention_backend(facts.args)
    return {"backend": backend} if backend in FLASHMLA_BACKENDS else None


def ds_mla_on_plain_rows(facts: Facts, gpu: GpuInfo | None):
    if attention_backend(facts.args) == FLASHINFER_DSV4 and facts.args.value("kv_cache_dtype") == "fp8_ds_mla":
        return {"backend": FLASHINFER_DSV4}
    return None


def any_gpu(facts: Facts, gpu: GpuInfo | None):
    return {}


def block_size(facts: Facts, gpu: GpuInfo | None):
    size = as_int(facts.args.value("block_size"))
    multiple = BLOCK_MULTIPLE.get(facts.model.family or "")
    if size is None or multiple is None or size <= 0 or size % multiple == 0:
        return None
    return {
        "setting": _setting(facts, "block_size", "--block-size"),
        "name": facts.model.family_name,
        "multiple": multiple,
        "suggested": max(multiple, size // multiple * multiple),
    }


def _tp(facts: Facts) -> int:
    tp = as_int(facts.args.value("tensor_parallel_size"))
    return tp if tp and tp > 0 else 1


def tp_vs_heads(facts: Facts, gpu: GpuInfo | None):
    tp = _tp(facts)
    heads = facts.model.number("num_attention_heads")
    if not heads or heads % tp == 0:
        return None
    return {
        "setting": _setting(facts, "tensor_parallel_size", "--tensor-parallel-size"),
        "tp": tp,
        "heads": heads,
        "arch": facts.model.architecture or "the model",
        "sizes": ", ".join(str(d) for d in (1, 2, 4, 8, 16, 32) if heads % d == 0),
    }


def tp_pp_vs_visible_gpus(facts: Facts, gpu: GpuInfo | None):
    tp = _tp(facts)
    pp = as_int(facts.args.value("pipeline_parallel_size")) or 1
    multi_node = (
        facts.args.value("distributed_executor_backend") == "ray"
        or (as_int(facts.args.value("nnodes")) or 1) > 1
        or bool(facts.args.value("headless"))
    )
    counted = facts.gpus is not None and facts.gpu_source in ("nvml", "nvidia-smi")
    if not counted or multi_node or pp < 1 or tp * pp <= facts.gpus.visible_count:
        return None
    visible = facts.gpus.visible_count
    sizes = f"--tensor-parallel-size {tp}" + (f" × --pipeline-parallel-size {pp}" if pp > 1 else "")
    needed = tp * pp
    return {
        "sizes": sizes,
        "needed": f"{needed} GPU{'' if needed == 1 else 's'}",
        "visible": f"{visible} {'is' if visible == 1 else 'are'}",
    }


def attention_env_ignored(facts: Facts, gpu: GpuInfo | None):
    value = facts.env.get("VLLM_ATTENTION_BACKEND")
    return {"value": value} if value else None


def mixed_gpus(facts: Facts, gpu: GpuInfo | None):
    from .gpus import describe_kinds

    if len({g.capability for g in facts.known_gpus}) > 1:
        return {"kinds": describe_kinds(facts.known_gpus)}
    return None


RULES: tuple[Rule, ...] = (
    Rule(
        id="kv-invalid",
        level=WARN,
        evidence=CONFIRMED,
        title="`--kv-cache-dtype` set to a value the installed vLLM does not have (`fp9`, `Auto`)",
        effect="rejected by vLLM itself at once, with its own error (argparse before 0.25, pydantic after)",
        check=kv_invalid,
        message="--kv-cache-dtype {kv}: not a value {which} accepts (it takes {valid}); vLLM rejects it "
        "itself before loading anything and prints its own error",
        fix="--kv-cache-dtype fp8, or drop the option",
        reference="vllm/config/cache.py CacheDType",
        models=BOTH,
    ),
    Rule(
        id="kv-not-fp8",
        level=REFUSE,
        evidence=CONFIRMED,
        title="explicit non-fp8 `--kv-cache-dtype` (`bfloat16`, `float16`, `nvfp4_ds_mla`, …) for DeepSeek-V4 on an fp8_ds_mla path",
        effect="AssertionError (< 0.30) / ValueError (≥ 0.30) at layer construction",
        check=kv_not_fp8_on_ds_mla,
        message="{setting}: DeepSeek-V4 on {gpus} stores its KV cache as fp8_ds_mla, which has no {kv} "
        "variant; {vllm} fails when it builds the attention layers (AssertionError before 0.30, "
        "ValueError from 0.30)",
        fix="--kv-cache-dtype fp8, or drop the option",
        reference="vllm/models/deepseek_v4/attention.py _resolve_dsv4_kv_cache_dtype; vLLM #47174",
        families=DSV4_GPUS,
    ),
    Rule(
        id="v41-kv",
        level=REFUSE,
        evidence=CITED,
        title="DeepSeek-V4.1 with `--kv-cache-dtype fp8_e4m3` or `bfloat16`",
        effect="rejected by V4.1's KV-cache resolver",
        check=kv_rejected_by_v41,
        message="{setting}: DeepSeek-V4.1's KV-cache resolver rejects {kv}",
        fix="drop the option (auto selects V4.1's packed format) or use --kv-cache-dtype fp8",
        reference="vllm/models/deepseek_v41/attention.py",
        models=frozenset({V41}),
        vllm=VersionRange(since="0.30.0"),
    ),
    Rule(
        id="backend-not-dsv4",
        level=REFUSE,
        evidence=CITED,
        title="`--attention-backend FLASHINFER_MLA_SPARSE` or `…_SM120`",
        effect="`ValueError: … is not a DeepSeek V4 attention backend` when the model is built",
        check=backend_not_dsv4,
        message="--attention-backend {backend}: not a DeepSeek-V4 attention backend; {vllm} raises "
        "ValueError when it builds the model",
        fix=f"--attention-backend {FLASHINFER_DSV4}, or drop the option",
        reference="vllm/models/deepseek_v4/nvidia/model.py _select_dsv4_attn_cls",
    ),
    Rule(
        id="flashmla-on-sm12",
        level=REFUSE,
        evidence=CITED,
        title="SM 12.x with `--attention-backend FLASHMLA_SPARSE[_DSV4]`",
        effect="no sm_120 FlashMLA kernels",
        check=flashmla_forced,
        message="--attention-backend {backend} on {gpus}: FlashMLA has no sm_120 kernels, so {vllm} "
        "fails when the model starts",
        fix=f"drop the option (SM 12.x uses FlashInfer SM120 by default) or use {FLASHINFER_DSV4}",
        reference="vllm/models/deepseek_v4/nvidia/model.py",
        families=frozenset({"12"}),
    ),
    Rule(
        id="fp8-ds-mla-on-plain-rows",
        level=WARN,
        evidence=DERIVED,
        title=f"SM 10.x + `{FLASHINFER_DSV4}` + `--kv-cache-dtype fp8_ds_mla`",
        effect="a mismatched KV layout that no validator catches",
        check=ds_mla_on_plain_rows,
        message="--kv-cache-dtype fp8_ds_mla with --attention-backend {backend} on {gpus}: this backend "
        "stores plain per-tensor FP8 rows on SM 10.x, not fp8_ds_mla, and vLLM does not check the "
        "mismatch",
        fix="--kv-cache-dtype fp8 (or auto for bf16 rows)",
        reference="vllm/models/deepseek_v4/nvidia/flashinfer_sparse.py",
        families=frozenset({"10"}),
    ),
    Rule(
        id="gpu-too-old",
        level=REFUSE,
        evidence=CITED,
        title="compute capability below 9.0",
        effect="no DeepSeek-V4 attention kernels",
        check=any_gpu,
        message="{gpus}: DeepSeek-V4 needs compute capability 9.0 or newer (its attention kernels ship "
        "only for SM 9.x, 10.x and 12.x)",
        fix="run on H100/H200, B200/B300 or RTX PRO 6000-class GPUs, or exclude these with CUDA_VISIBLE_DEVICES",
        reference="vllm/models/deepseek_v4/nvidia/model.py",
        models=BOTH,
        families=OLD_GPUS,
    ),
    Rule(
        id="sm12-before-0.24",
        level=REFUSE,
        evidence=CITED,
        title="SM 12.x with vLLM < 0.24",
        effect="no DeepSeek-V4 path for SM 12.x",
        check=any_gpu,
        message="{gpus} with {vllm}: vLLM has no DeepSeek-V4 path for SM 12.x before 0.24.0",
        fix="pip install 'vllm>=0.24.0' in vLLM's environment",
        reference="vllm/models/deepseek_v4/nvidia/model.py@0.24.0",
        families=frozenset({"12"}),
        vllm=VersionRange(before="0.24.0"),
    ),
    Rule(
        id="block-size",
        level=REFUSE,
        evidence=CITED,
        title="`--block-size` not a multiple of 256 (V4) or 128 (V4.1)",
        effect="`No common block size` after the weights load",
        check=block_size,
        message="{setting}: {name}'s sparse attention needs a multiple of {multiple}; {vllm} fails with "
        "'No common block size' after loading the weights",
        fix="--block-size {suggested}, or drop the option",
        reference="vllm/models/deepseek_v4/sparse_mla.py get_supported_kernel_block_sizes",
        models=BOTH,
    ),
    Rule(
        id="tp-heads",
        level=REFUSE,
        evidence=CITED,
        title="`--tensor-parallel-size` not dividing `num_attention_heads`",
        effect="assertion when the attention layers are built",
        check=tp_vs_heads,
        message="{setting}: {arch} has {heads} attention heads, which {tp} GPUs cannot split evenly; "
        "{vllm} fails an assertion when it builds the attention layers",
        fix="a tensor-parallel size in {sizes}",
        reference="vllm/models/deepseek_v4/attention.py",
        models=BOTH,
    ),
    Rule(
        id="tp-pp-gpus",
        level=REFUSE,
        evidence=CITED,
        title="TP × PP larger than the GPUs visible here (single node)",
        effect="the workers fail to start",
        check=tp_pp_vs_visible_gpus,
        message="{sizes} needs {needed} on this node, but {visible} visible here; {vllm} fails when "
        "it starts the workers",
        fix="lower the sizes, expose more GPUs (CUDA_VISIBLE_DEVICES), or run multi-node (--nnodes, or "
        "--distributed-executor-backend ray)",
        reference="vllm/v1/executor/multiproc_executor.py",
        models=BOTH,
    ),
    Rule(
        id="attention-env-ignored",
        level=WARN,
        evidence=CITED,
        title="`VLLM_ATTENTION_BACKEND` set",
        effect="not read by vLLM ≥ 0.26 (the default backend is used)",
        check=attention_env_ignored,
        message="VLLM_ATTENTION_BACKEND={value} is not read by {vllm}",
        fix="--attention-backend {value}",
        reference="vLLM #50292",
        models=BOTH,
        vllm=VersionRange(since="0.26.0"),
    ),
    Rule(
        id="mixed-gpus",
        level=WARN,
        evidence=DERIVED,
        title="GPUs of different compute capability in one server",
        effect="one attention path is picked for all of them",
        check=mixed_gpus,
        message="GPUs of different compute capability in one run ({kinds}): vLLM picks one attention "
        "path for all",
        fix="run one kind per server (CUDA_VISIBLE_DEVICES)",
        reference="vllm/models/deepseek_v4/nvidia/model.py _select_dsv4_attn_cls",
        models=BOTH,
    ),
    *MEMORY_RULES,
)

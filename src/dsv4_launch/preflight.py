"""Pre-flight checks: DeepSeek-V4 configurations vLLM accepts at first and dies on minutes later.

Each check reads the facts and returns the problems it finds, one line each, naming the
setting, why vLLM would fail, the fix and the upstream reference. The data they use (backend
names, block multiples, version limits) is in ``quirks.py``. Pure.

``DSV4_LAUNCH_PREFLIGHT``: ``refuse`` (default: problems stop dsv4-serve with exit 2),
``warn`` (problems become warnings), ``off`` (no checks).
"""

from __future__ import annotations

TYPE_CHECKING = False  # typing costs start-up time; annotations are strings
if TYPE_CHECKING:
    from typing import Callable, Optional

from . import quirks
from .facts import Facts, attention_backend
from .gpus import GpuSelection, describe_kinds
from .model import V41
from .records import record
from .versions import is_older


@record
class Findings:
    problems: tuple[str, ...] = ()  # would make vLLM fail: refusals in "refuse" mode
    warnings: tuple[str, ...] = ()  # worth knowing, never a refusal


def _int(value) -> Optional[int]:
    try:
        return int(str(value))
    except (TypeError, ValueError):
        return None


def _vllm(facts: Facts) -> str:
    return f"vLLM {facts.vllm_version}" if facts.vllm_version else "vLLM"


def check_kv_dtype(facts: Facts) -> list[str]:
    kv = facts.args.value("kv_cache_dtype")
    if kv in quirks.AUTO_VALUES:
        return []
    source = facts.args.source("kv_cache_dtype")
    if facts.model.family == V41:
        if kv in quirks.DSV41_REJECTED_KV:
            return [
                f"--kv-cache-dtype {kv} ({source}): DeepSeek-V4.1's KV-cache resolver rejects "
                f"{kv}; remove it (auto selects V4.1's packed format) or use fp8"
            ]
        return []
    if kv.startswith("fp8"):
        return []
    backend = attention_backend(facts.args)
    known = facts.known_gpus
    on_ds_mla = [
        g for g in known
        if (p := quirks.kv_path(g.capability[0], backend)) and p.layout == quirks.FP8_DS_MLA
    ]
    unknown_all_ds_mla = not known and backend is None  # every default DSv4 path is fp8_ds_mla
    if not on_ds_mla and not unknown_all_ds_mla:
        return []
    where = describe_kinds(on_ds_mla) if on_ds_mla else "every GPU it runs on with the default backend"
    return [
        f"--kv-cache-dtype {kv} ({source}): DeepSeek-V4 on {where} stores its KV cache as "
        f"fp8_ds_mla, which has no {kv} variant; {_vllm(facts)} fails at layer construction "
        "(AssertionError before 0.30, ValueError after). Fix: --kv-cache-dtype fp8, or drop "
        "the option (vLLM #47174)"
    ]


def check_backend(facts: Facts) -> list[str]:
    backend = attention_backend(facts.args)
    if backend is None:
        return []
    problems = []
    if backend in quirks.NOT_DSV4_BACKENDS:
        problems.append(
            f"--attention-backend {backend}: not a DeepSeek-V4 attention backend; vLLM raises "
            f"ValueError when it builds the model. Fix: --attention-backend {quirks.FLASHINFER_DSV4} "
            "(vllm/models/deepseek_v4/nvidia/model.py)"
        )
    sm12 = [g for g in facts.known_gpus if g.capability[0] == 12]
    if backend in quirks.FLASHMLA_BACKENDS and sm12:
        problems.append(
            f"--attention-backend {backend} on {describe_kinds(sm12)}: FlashMLA has no sm_120 kernels, "
            "so vLLM fails when the model starts. Fix: drop the option (SM 12.x uses FlashInfer "
            f"SM120 by default) or use {quirks.FLASHINFER_DSV4}"
        )
    sm10 = [g for g in facts.known_gpus if g.capability[0] == 10]
    if backend == quirks.FLASHINFER_DSV4 and sm10 and facts.args.value("kv_cache_dtype") == "fp8_ds_mla":
        problems.append(
            f"--kv-cache-dtype fp8_ds_mla with --attention-backend {backend} on {describe_kinds(sm10)}: "
            "this backend stores plain per-tensor FP8 rows on SM 10.x, not fp8_ds_mla, and the "
            "mismatch is not caught by vLLM. Fix: --kv-cache-dtype fp8 (or auto for bf16 rows) "
            "(vllm/models/deepseek_v4/nvidia/flashinfer_sparse.py)"
        )
    return problems


def check_gpu_generation(facts: Facts) -> list[str]:
    known = facts.known_gpus
    problems = []
    old = [g for g in known if g.capability[0] < quirks.MIN_MAJOR]
    if old:
        problems.append(
            f"{describe_kinds(old)}: DeepSeek-V4 needs compute capability 9.0 or newer (its attention "
            "kernels ship only for SM 9.x, 10.x and 12.x). Fix: run on H100/H200, B200/B300 or "
            "RTX PRO 6000-class GPUs, or exclude these with CUDA_VISIBLE_DEVICES"
        )
    sm12 = [g for g in known if g.capability[0] == 12]
    if sm12 and is_older(facts.vllm_version, quirks.MIN_VLLM_FOR_SM12):
        problems.append(
            f"{describe_kinds(sm12)} with {_vllm(facts)}: vLLM has no DeepSeek-V4 path for SM 12.x "
            f"before {quirks.MIN_VLLM_FOR_SM12}. Fix: pip install 'vllm>={quirks.MIN_VLLM_FOR_SM12}'"
        )
    return problems


def check_block_size(facts: Facts) -> list[str]:
    size = _int(facts.args.value("block_size"))
    multiple = quirks.BLOCK_MULTIPLE.get(facts.model.family or "")
    if size is None or multiple is None or size % multiple == 0:
        return []
    name = "DeepSeek-V4.1" if facts.model.family == V41 else "DeepSeek-V4"
    return [
        f"--block-size {size}: {name}'s sparse attention needs a multiple of {multiple}; vLLM "
        f"fails with 'No common block size' after loading the weights. Fix: --block-size "
        f"{max(multiple, size // multiple * multiple)} or drop the option "
        "(vllm/models/deepseek_v4/sparse_mla.py)"
    ]


def check_tensor_parallel(facts: Facts) -> list[str]:
    tp = _int(facts.args.value("tensor_parallel_size")) or 1
    problems = []
    config = facts.model.config or {}
    heads = _int(config.get("num_attention_heads"))
    if heads and tp > 0 and heads % tp:
        fits = [d for d in (1, 2, 4, 8, 16) if heads % d == 0]
        problems.append(
            f"--tensor-parallel-size {tp}: {facts.model.architecture or 'the model'} has {heads} "
            f"attention heads, which {tp} GPUs cannot split evenly; vLLM fails an assertion when "
            f"it builds the attention layers. Fix: a size in {fits} "
            "(vllm/models/deepseek_v4/attention.py)"
        )
    pp = _int(facts.args.value("pipeline_parallel_size")) or 1
    multi_node = (
        facts.args.value("distributed_executor_backend") == "ray"
        or (_int(facts.args.value("nnodes")) or 1) > 1
    )
    counted = facts.gpus is not None and facts.gpu_source in ("nvml", "nvidia-smi")
    if counted and not multi_node and tp * pp > facts.gpus.visible_count:
        sizes = f"--tensor-parallel-size {tp}"
        if pp > 1:
            sizes += f" × --pipeline-parallel-size {pp}"
        visible = facts.gpus.visible_count
        problems.append(
            f"{sizes} needs {tp * pp} GPUs on this node, but {visible} "
            f"{'is' if visible == 1 else 'are'} visible here; vLLM fails when it starts the "
            "workers. Fix: lower the sizes, expose more GPUs (CUDA_VISIBLE_DEVICES), or run "
            "multi-node (--nnodes, or --distributed-executor-backend ray)"
        )
    return problems


def warn_environment(facts: Facts) -> list[str]:
    warnings = []
    env_backend = facts.env_attention_backend
    if env_backend:
        warnings.append(
            f"VLLM_ATTENTION_BACKEND={env_backend} is not read by vLLM "
            f"{quirks.ATTENTION_ENV_IGNORED_FROM} and later (vLLM #50292); use "
            f"--attention-backend {env_backend} instead"
        )
    majors = {g.capability for g in facts.known_gpus}
    if len(majors) > 1:
        warnings.append(
            f"GPUs of different compute capability in one run ({describe_kinds(facts.known_gpus)}): "
            "vLLM picks one attention path for all; run one kind per server "
            "(CUDA_VISIBLE_DEVICES)"
        )
    return warnings


CHECKS: tuple[Callable[[Facts], list[str]], ...] = (
    check_kv_dtype,
    check_backend,
    check_gpu_generation,
    check_block_size,
    check_tensor_parallel,
)


def run_checks(facts: Facts) -> Findings:
    """All pre-flight checks; only for DeepSeek-V4 and V4.1 (other models pass through)."""
    if not facts.model.is_dsv4_family or facts.args.rejection or facts.args.help_requested:
        return Findings()
    problems = [p for check in CHECKS for p in check(facts)]
    warnings = warn_environment(facts)
    if facts.gpus is not None and facts.gpus.ambiguous:
        # CUDA's numbering could not be matched to NVML's, so every GPU is a candidate. Refuse
        # only what fails whichever GPUs CUDA picks; the rest may not concern the GPUs in use.
        blind = facts._replace(gpus=GpuSelection((), count=facts.gpus.visible_count))
        certain = [p for check in CHECKS for p in check(blind)]
        warnings += [
            f"{p} [only if CUDA's device numbers name that GPU: set CUDA_DEVICE_ORDER=PCI_BUS_ID "
            "to know]"
            for p in problems
            if p not in certain
        ]
        problems = certain
    return Findings(problems=tuple(problems), warnings=tuple(warnings))

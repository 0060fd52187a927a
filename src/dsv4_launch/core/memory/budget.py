"""vLLM's memory budget before the KV cache, term by term, per release and runner (pure).

What the worker subtracts from ``requested = ceil(total × gpu_memory_utilization)`` before the KV
cache (``Worker.determine_available_memory``; per release: docs/memory.md "What is left for the KV
cache"): the weights with what the model allocates as it loads (``core/memory/weights.py``), the
**activation peak** of the profile run (``core/memory/activation.py``), the **non-torch memory**
(NCCL and all-reduce buffers, cuBLAS workspaces: a band whose ends say what they rest on) and the
**CUDA-graph estimate** (exactly zero where vLLM does not take it, each cited in ``graph_term``;
else profiled on the GPU, a band). Every answer about the KV cache is judged at both ends
(``core/memory/estimate.py``): *fits* only at the pessimistic end, *does not fit* never from a band.
"""

from __future__ import annotations

from collections.abc import Iterable

from ..facts import Facts, json_option
from ..gpus import GpuInfo
from ..records import Record
from ..vllm.facts import fact
from .presets import PRESETS, preset_key
from .weights import expert_padding

GiB = 2**30
MiB = 2**20

# The V2 model runner's profile_cudagraph_memory profiles from 0.29 (:896-898@0.29 →
# cudagraph_utils._profile_cudagraph_memory); before, it returns 0 (graph_term says where).
V2_PROFILES_GRAPHS = fact("v2-profiles-graphs").range

# Evidence bands (docs/memory.md "What is left for the KV cache"); the activation peak is
# core/memory/activation.py's.
GRAPH_LOW, GRAPH_HIGH = int(0.5 * GiB), int(2.0 * GiB)  # profiled on the GPU: 1.5 GiB fitted, "≈ 1–2 GiB" worked
NON_TORCH_LOW, NON_TORCH_HIGH = 0, int(0.5 * GiB)  # one GPU; with TP/PP the communicators' buffers
NON_TORCH_HIGH_PARALLEL = int(1.0 * GiB)


class Term(Record):
    """One term of the budget in bytes: ``low`` (the optimistic end), ``high`` (the pessimistic
    end), and what it rests on."""

    low: int
    high: int
    basis: str

    @property
    def mid(self) -> int:
        return (self.low + self.high) // 2

    @property
    def exact(self) -> bool:
        return self.low == self.high


def _zero(basis: str) -> Term:
    return Term(0, 0, basis)


def _cudagraph_mode(facts: Facts) -> str | None:
    """``--compilation-config``'s ``cudagraph_mode`` as given (upper case), or None."""
    config = json_option(facts.args, "compilation_config") or {}
    mode = config.get("cudagraph_mode")
    if isinstance(mode, str):
        return mode.strip().upper()
    if type(mode) is int:  # CUDAGraphMode's values: NONE 0, PIECEWISE 1, FULL 2
        return {0: "NONE", 1: "PIECEWISE", 2: "FULL"}.get(mode, str(mode))
    return None


def _compilation_mode_none(facts: Facts) -> bool:
    config = json_option(facts.args, "compilation_config") or {}
    mode = config.get("mode", config.get("level"))
    return mode == 0 or (isinstance(mode, str) and mode.strip().upper() in ("0", "NONE"))


def graph_env_off(facts: Facts) -> bool | None:
    """``VLLM_MEMORY_PROFILER_ESTIMATE_CUDAGRAPHS`` as vLLM reads it: ``bool(int(value))``,
    default 1 (``envs.py:1894-1896@0.24``, the same through 0.33). True: set to 0 (the estimate
    is profiled but not subtracted); None: a value ``int`` cannot read (vLLM fails on it)."""
    raw = facts.rule_env.get("VLLM_MEMORY_PROFILER_ESTIMATE_CUDAGRAPHS")
    if raw is None:
        return False
    try:
        return int(raw) == 0
    except ValueError:
        return None


def graph_term(facts: Facts, v2: bool) -> Term:
    """The CUDA-graph estimate vLLM subtracts before the KV cache, for the runner it picks."""
    if facts.args.value("enforce_eager") is True:
        return _zero("--enforce-eager sets cudagraph_mode NONE (config/vllm.py:1370-1376@0.29), and "
                     "vLLM profiles no graphs then (v1/worker/gpu_worker.py:448-453@0.24, :708-717@0.33)")
    mode = _cudagraph_mode(facts)
    if mode == "NONE":
        return _zero("cudagraph_mode NONE: vLLM profiles no graphs (v1/worker/gpu_worker.py:448-453@0.24, "
                     ":528-532@0.28, :708-717@0.33)")
    if mode is None and str(facts.args.value("optimization_level")).strip() == "0":
        return _zero("-O0 defaults cudagraph_mode to NONE (config/vllm.py:210@0.24, :255@0.29): no graphs profiled")
    if graph_env_off(facts):
        return _zero("VLLM_MEMORY_PROFILER_ESTIMATE_CUDAGRAPHS=0: the estimate is not subtracted "
                     "(v1/worker/gpu_worker.py:467-471@0.24, :720-724@0.33)")
    if v2 and V2_PROFILES_GRAPHS.contains(facts.vllm_version) is False:
        return _zero("the V2 model runner's profile_cudagraph_memory returns 0 before 0.29 "
                     "(v1/worker/gpu/model_runner.py:684-686@0.24, :843-845@0.28)")
    if mode is None and _compilation_mode_none(facts):
        # cudagraph_mode defaults to one that needs piecewise compilation, which mode NONE turns
        # off (config/vllm.py:1470-1480@0.29), unless VLLM_USE_BREAKABLE_CUDAGRAPH: 0 or the band.
        return Term(0, GRAPH_HIGH, "compilation mode NONE without a cudagraph_mode: vLLM likely captures no "
                    "graphs (config/vllm.py:1470-1480@0.29); up to the profiled band otherwise")
    runner = "V2" if v2 else "V1"
    return Term(GRAPH_LOW, GRAPH_HIGH, f"profiled by vLLM on the GPU ({runner} runner's profile_cudagraph_memory); "
                "not derivable: 0.5–2.0 GiB around the 1.5 GiB fitted")


def non_torch_term(tp: int, pp: int) -> Term:
    """Memory outside torch's allocator that grows while the worker starts (NCCL communicators,
    the custom all-reduce buffers, cuBLAS/cuDNN workspaces): ``non_torch_increase``
    (``utils/mem_utils.py:306@0.24``), inside ``total_consumed`` from 0.27. Not derivable; a
    band, wider where there are communicators."""
    high = NON_TORCH_HIGH_PARALLEL if tp * pp > 1 else NON_TORCH_HIGH
    return Term(NON_TORCH_LOW, high, "NCCL and all-reduce buffers, library workspaces: not derivable, "
                f"0–{high / GiB:.1f} GiB")


def moe_padding_term(facts: Facts, tp: int, pp: int, dp: int, expert_parallel: bool,
                     capability: tuple[int, int] | None, draft: int) -> Term:
    """The bytes the MXFP4 MoE kernel adds to the routed experts by rounding each rank's slice up
    (``core/memory/weights.py`` ``expert_padding``): exact where the GPU and release leave one
    kernel's rounding, a band where the kernel vLLM picks at start is not known here. ``draft``: the
    speculative draft's layers (``estimate.draft_kv``), whose experts are padded alike."""
    config = facts.model.config or {}
    found = expert_padding(config, tp, pp, dp, expert_parallel, capability, facts.vllm_version, draft)
    return _zero("the experts' shapes are not read here: no rounding counted") if found is None else Term(*found)


_PRESET_KEYS = tuple(sorted({preset_key(p.key) for p in PRESETS}, key=len, reverse=True))
UNKNOWN_KIND_HIGH = NON_TORCH_HIGH_PARALLEL + GRAPH_HIGH  # as much again as the measured-kind bands


def known_kind(gpu: GpuInfo) -> bool:
    """A GPU whose kind a preset names (``NVIDIA H100 PCIe`` is an H100; ``AMD Instinct MI300X``,
    ``NVIDIA L40S`` or a count without a name are not), with a known compute capability."""
    return gpu.capability is not None and bool(gpu.name) and any(k in preset_key(gpu.name or "") for k in _PRESET_KEYS)


def unknown_kind_term(gpus: Iterable[GpuInfo]) -> Term:
    """What a GPU of a kind with no preset may spend beyond the bands measured on the preset kinds:
    its non-torch memory (RCCL/NCCL, BLAS workspaces) and graph capture are not known, so the
    pessimistic end takes as much again as those two bands' high ends (0 for known kinds)."""
    odd = sorted({g.name or "a GPU with no name" for g in gpus if not known_kind(g)})
    if not odd:
        return _zero("every GPU is of a kind with a preset")
    return Term(0, UNKNOWN_KIND_HIGH, f"{', '.join(odd)}: a kind with no preset (AMD, or an NVIDIA GPU not in "
                "presets.py): its non-torch and graph overheads are not known, up to "
                f"{UNKNOWN_KIND_HIGH / GiB:.1f} GiB more at the pessimistic end")


"""Memory rules as rows: weights that certainly cannot fit (refused), weights the estimate puts
at or over the budget, one request of ``max_model_len`` that vLLM's own KV accounting will not
admit on the estimate (a warning with a length that it admits), an incomplete local checkpoint
(refused), and values vLLM rejects itself. Each check sits under its row (``@row``; ``core/rules/engine.py``).
The numbers come from ``memory.estimate`` (see its docstring for what is certain and what is
estimated): the picture of the arguments' layout is ``Plan.memory``, made once before the rows,
and the same object here (the estimate is kept for the same facts); the fix searches re-plan
other settings."""

from __future__ import annotations

from ..credentials import clip
from ..facts import Facts, as_human_int
from ..gpus import GpuInfo
from ..memory.estimate import estimate, gib_text, gpu_memory_utilization, host_tables_bytes
from ..memory.fit import USUAL_GMU, lever_fix, with_args
from ..memory.verdicts import (
    DECIDES,
    SHORT,
    band_text,
    length_band_text,
    memory_not_checked,
    suggested_length,
    verdict,
    weights_refusal,
)
from ..memory.vllm_config import max_model_len_tried, speculative_method
from ..vllm.facts import fact
from ..vllm.releases import NEWEST_VERIFIED
from .engine import BOTH, CITED, DERIVED, REFUSE, WARN, Rule, row, unverified

ROWS: list[Rule] = []  # filled by @row, in this module's order
# Speculative methods whose draft KV the estimate counts (MTP, DSpark: core/memory/estimate.py draft_kv)
# or that have none (the n-gram and suffix proposers build no attention layers).
DRAFT_KV_COUNTED = frozenset({"mtp", "dspark", "ngram", "ngram_gpu", "suffix"})
USEFUL_LENGTH = 4096  # below this, a shorter --max-model-len is not worth suggesting


@row(
    ROWS, id="weights-exceed-memory", topic="memory", level=REFUSE, evidence=CITED,
    title="the weights per GPU certainly above what vLLM may use of one GPU (a lower bound from the "
    "checkpoint's exact or published size, offloading counted)",
    effect="out of memory at the weight load, or `No available memory for the cache blocks` right after it",
    message="{layout}: {weights} of weights per GPU at the very least ({source}; {basis}){plus}, but at most "
    "{limit} may be used of each GPU ({where}); {vllm} fails when it loads them or has no memory left for the "
    "KV cache",
    fix="more GPUs (at least {more} of these), a larger --tensor-parallel-size/--pipeline-parallel-size/"
    "--data-parallel-size, --cpu-offload-gb, or a smaller (quantised) checkpoint; `dsv4-launch fit` lists the "
    "layouts that fit",
    reference="vllm/v1/worker/gpu_worker.py determine_available_memory; vllm/v1/core/kv_cache_planning.py "
    "_check_enough_kv_cache_memory", models=BOTH,
    release_code=False,  # the check itself says what of it rests on the release's code (below)
)
def weights_exceed_budget(facts: Facts, gpu: GpuInfo | None):
    values = weights_refusal(facts)
    if values is None or not unverified(facts.vllm_version):
        return values
    # A refusal never rests on a default, a budget or a formula read from another release. On a
    # release newer than every verified one, the budget (the default --gpu-memory-utilization, what
    # --kv-cache-memory-bytes replaces, the formula) is code nothing here has read, and none of it
    # is read before the plan (no vLLM import): only the checkpoint's bytes against the whole
    # memory of a GPU still refuse; below that, a warning.
    e = estimate(facts, facts.weights)
    lower, whole = e.weights_lower_bytes or 0, e.gpu_memory_bytes or 0
    if whole and lower > whole:
        return {**values, "plus": "", "limit": gib_text(whole), "more": max(2, -(-e.layout.gpus * lower // whole)),
                "where": f"the whole GPU; vLLM {facts.vllm_version}'s own budget is not verified"}
    return {**values, "uncertain": f"not verified: vLLM {facts.vllm_version}'s budget (its default "
            f"--gpu-memory-utilization, its formula) was read up to vLLM {NEWEST_VERIFIED} only, and the weights "
            "fit in the whole memory of a GPU"}


@row(
    ROWS, id="memory-not-checked", topic="memory", level=WARN, evidence=DERIVED,
    title="the memory of the GPUs vLLM will use is not known here (no GPU read, NVML unreadable, or "
    "DSV4_LAUNCH_GPU_CAPABILITY without NVML)",
    effect="nothing about memory is checked, the certain refusal included: vLLM finds out at the weight load or "
    "the KV-cache check",
    message="memory not checked: {why}",
    fix="set DSV4_LAUNCH_GPU_MEMORY to the memory of one GPU (e.g. 141GiB), or give plan/fit --gpu-memory "
    "(fit also takes a preset: --gpus 8xH200)",
    reference="docs/memory.md", models=BOTH)
def memory_not_known(facts: Facts, gpu: GpuInfo | None):
    if not facts.model.is_dsv4_family:
        return None
    why = memory_not_checked(facts)
    return None if why is None else {"why": why.removeprefix("memory not checked: ").split("; set ")[0]}


@row(
    ROWS, id="weights-tight", topic="memory", level=WARN, evidence=DERIVED,
    title="the weights per GPU at (or just over) the memory vLLM may use, by the estimate",
    effect="may run out of memory at the weight load; vLLM decides at start",
    message="{layout}: about {weights} of weights per GPU against a budget of {budget} (at least {lower} for "
    "certain): vLLM decides at start whether they fit ({why})",
    fix="to be sure of it, a layout with more headroom (`dsv4-launch fit` lists them){gmu}",
    reference="dsv4-launch's memory estimate (docs/memory.md)", models=BOTH, reads_gpus=True)
def weights_tight(facts: Facts, gpu: GpuInfo | None):
    weights = facts.weights
    if weights is None or not weights.total_bytes:
        return None
    e = estimate(facts, weights)
    if weights_refusal(facts) is not None:
        return None
    gmu = gpu_memory_utilization(facts) or 0.92
    if e.fits is not False:
        least = e.gpu_memory_least_bytes
        if not (least and e.weights_bytes_per_gpu and e.weights_bytes_per_gpu > least * gmu):
            return None
        # CUDA's order is unknown: the largest GPUs fit, a smaller one CUDA may pick does not
        return {"layout": e.layout.words(), "weights": gib_text(e.weights_bytes_per_gpu),
                "budget": gib_text(int(least * gmu)), "lower": gib_text(e.weights_lower_bytes),
                "why": "only if CUDA's device numbers name those GPUs: set CUDA_DEVICE_ORDER=PCI_BUS_ID to know",
                "gmu": _higher_gmu(facts)}
    why = e.uncertain or "the estimate's replicated tensors and load overhead"
    return {"layout": e.layout.words(), "weights": gib_text(e.weights_bytes_per_gpu),
            "budget": gib_text(e.budget_bytes), "lower": gib_text(e.weights_lower_bytes), "why": why,
            "gmu": _higher_gmu(facts)}


@row(
    ROWS, id="host-memory-short", topic="memory", level=WARN, evidence=DERIVED,
    title="DeepSeek-V4.1's Engram tables, which vLLM keeps in pinned host memory, larger than the memory this "
    "host has available (/proc/meminfo)",
    effect="the pinned allocation fails, or the host swaps or kills a process, while vLLM loads the weights",
    message="the Engram tables take {tables} of pinned host memory (all GPUs together), and this host has "
    "{available} available ({total} in all)",
    fix="a host with more memory, fewer other processes, or --engram-config with cpu_offload false where the GPUs "
    "can hold the tables",
    reference="vllm/config/engram.py EngramConfig.cpu_offload; vllm/model_executor/models/deepseek_v41/nvidia/"
    "engram.py (the tables allocated with pin_memory=True)", models=BOTH,
    release_code=False,  # the tables' bytes against this host's memory
)
def host_memory_short(facts: Facts, gpu: GpuInfo | None):
    tables, host = host_tables_bytes(facts), facts.host
    if not tables or host.memory_available_bytes is None or tables <= host.memory_available_bytes:
        return None  # nothing in host memory, not read (plan's line says "not checked"), or room
    return {"tables": gib_text(tables), "available": gib_text(host.memory_available_bytes),
            "total": gib_text(host.memory_total_bytes)}


@row(
    ROWS, id="download-space-short", topic="memory", level=WARN, evidence=DERIVED,
    title="the shards vLLM will download larger than the free space of the filesystem it downloads into "
    "(the Hugging Face cache, or --download-dir)",
    effect="the download stops with `No space left on device` part way through, before vLLM starts",
    message="vLLM will download about {size} first, into {where}, whose filesystem has {free} free",
    fix="free space there, or point HF_HUB_CACHE/HF_HOME (or --download-dir) at a filesystem with room",
    reference="huggingface_hub constants.HF_HUB_CACHE; vllm/model_executor/model_loader/weight_utils.py "
    "download_weights_from_hf", models=BOTH, release_code=False,  # the missing shards' bytes against the free space
)
def download_space_short(facts: Facts, gpu: GpuInfo | None):
    weights, host = facts.weights, facts.host
    if weights is None or weights.local or not weights.shards_missing or not weights.missing_bytes:
        return None
    if host.download_free_bytes is None or weights.missing_bytes <= host.download_free_bytes:
        return None
    return {"size": f"{weights.missing_bytes / 1e9:,.0f} GB", "where": host.download_dir,
            "free": f"{host.download_free_bytes / 1e9:,.0f} GB"}


def _higher_gmu(facts: Facts) -> str:
    """The usual higher --gpu-memory-utilization, where the user did not set one and the release's
    default is lower (0.34's extensible KV cache defaults to 1.0: 0.95 would shrink the budget)."""
    if facts.args.value("gpu_memory_utilization") is not None or (gpu_memory_utilization(facts) or 1) >= USUAL_GMU:
        return ""
    return f", or --gpu-memory-utilization {USUAL_GMU}"


def _replanned(facts: Facts, length: int) -> int | None:
    """The longest request the pessimistic end admits once ``--max-model-len length`` is set."""
    return estimate(with_args(facts, max_model_len=str(length)), facts.weights).max_model_len_fits_low


def _admitted(facts: Facts, length: int) -> bool:
    """One request of ``length`` fits at the pessimistic end once ``--max-model-len length`` is set."""
    fits = _replanned(facts, length)
    return fits is not None and fits >= length


def _fitting_length(facts: Facts, longest: int) -> int | None:
    """The longest block-aligned --max-model-len a re-plan admits at the pessimistic end of the
    bands (so it keeps their margin). Without chunked prefill the batch grows with the length
    (max_num_batched_tokens = max(max_model_len, default)), so shorter lengths are tried by
    halves; a few tries at most."""
    candidate = suggested_length(longest)
    for _ in range(4):
        if candidate < USEFUL_LENGTH:
            break
        fits = _replanned(facts, candidate)
        if fits is not None and fits >= candidate:
            return candidate
        smaller = suggested_length(fits or 0)
        candidate = smaller if smaller < candidate else candidate - 4 * 256
    if facts.args.value("enable_chunked_prefill") is False:
        length = (max_model_len_tried(facts) or 0) // 2
        while length >= USEFUL_LENGTH:
            length = suggested_length(length)
            if _admitted(facts, length):
                return length
            length //= 2
    return None


AUTO = "--max-model-len auto (vLLM fits the length to the memory it finds)"


def _fix(facts: Facts, e, fitting: int | None) -> str:
    """The smallest change of the levers people use (``fit.lever_fix``), then ``--max-model-len``,
    that re-plans as fitting one request at the pessimistic end; else the first that fits at the
    optimistic end; else vLLM's own auto-fit."""
    pessimistic, optimistic = lever_fix(facts, e, e.max_model_len)
    if pessimistic:
        return f"{pessimistic} (fits at the pessimistic end), or {AUTO}"
    if fitting is not None:
        return f"--max-model-len {fitting} (fits at the pessimistic end), or {AUTO}"
    return f"{optimistic} (fits at the optimistic end only), or {AUTO}" if optimistic else AUTO


def _term_text(e, name: str) -> str:
    term = e.term(name)
    return "?" if term is None else band_text(term.low, term.high)


@row(
    ROWS, id="max-model-len-too-long", topic="memory", level=WARN, evidence=DERIVED,
    title="one request of `--max-model-len` (default 1,048,576 for DeepSeek-V4) not certain to fit the KV cache "
    "left, by vLLM's own accounting at the pessimistic end of the estimated terms",
    effect="vLLM decides at start: `ValueError: To serve at least one request with the model's max seq len …` "
    "after the weights load, if its own profile leaves less than one request needs",
    message="--max-model-len {length}: {verdict}: one request needs {needed} of KV cache as "
    "vLLM counts it (--max-num-batched-tokens {mnbt}, {in_flight} tokens in flight), and {left} per GPU is left "
    "after the weights ({weights}), the activation peak ({activations}), the CUDA-graph estimate ({graphs}) and "
    "non-torch memory ({non_torch}) — bands, not measurements: {short}; {fits}",
    fix="{fix}",
    reference="vllm/v1/worker/gpu_worker.py determine_available_memory; vllm/v1/core/kv_cache_planning.py "
    "get_kv_cache_configs; docs/memory.md", reads_gpus=True, models=BOTH)
def one_request_does_not_fit(facts: Facts, gpu: GpuInfo | None):
    if facts.weights is None or not facts.weights.total_bytes:
        return None
    e = estimate(facts, facts.weights)
    if weights_refusal(facts) is not None or e.max_model_len is None or e.max_model_len_fits_low is None:
        return None
    if e.max_model_len_fits_low >= e.max_model_len:
        return None
    need = e.need_bytes or 0
    low, high = e.kv_available_low or 0, e.kv_available_high or 0
    said = verdict(facts, e)
    if said == SHORT:
        short = f"short by {gib_text(max(need - high, 0))} even at the optimistic end"
    else:
        short = f"short by up to {gib_text(max(need - low, 0))} at the pessimistic end"
    fitting = _fitting_length(facts, e.max_model_len_fits_low)
    longest = length_band_text(e.max_model_len_fits_low, e.max_model_len_fits_high)
    fits = f"up to {longest} tokens fit"
    if fitting is None:
        fits += ": no useful length is certain at these settings"
    fix = _fix(facts, e, fitting)
    if facts.args.value("speculative_config") and speculative_method(facts) not in DRAFT_KV_COUNTED:
        fits += "; the draft model's own KV cache comes on top (not counted)"
    return {"verdict": said if said == SHORT else DECIDES, "length": f"{e.max_model_len:,}",
            "needed": gib_text(e.need_bytes), "left": band_text(e.kv_available_low, e.kv_available_high),
            "short": short, "fits": fits, "fix": fix, "mnbt": e.max_num_batched_tokens,
            "in_flight": f"{e.in_flight_tokens:,}" if e.in_flight_tokens else "?",
            "weights": gib_text(e.weights_bytes_per_gpu), "activations": _term_text(e, "activations"),
            "graphs": _term_text(e, "cuda graphs"), "non_torch": _term_text(e, "non-torch")}


@row(
    ROWS, id="gpu-memory-utilization-invalid", topic="memory", level=WARN, evidence=CITED,
    title="`--gpu-memory-utilization` outside (0, 1]",
    effect="vLLM rejects it itself when it builds its config (a pydantic ValidationError), before loading",
    message="--gpu-memory-utilization {value}: vLLM accepts a fraction greater than 0 and at most 1, and "
    "rejects this value itself",
    fix="leave it unset (vLLM's default for this release) or give a fraction such as 0.9",
    reference="vllm/config/cache.py gpu_memory_utilization Field(gt=0, le=1)", models=BOTH)
def gpu_memory_utilization_invalid(facts: Facts, gpu: GpuInfo | None):
    raw = facts.args.value("gpu_memory_utilization")
    if raw is None or gpu_memory_utilization(facts) is not None:
        return None
    return {"value": clip(str(raw), 40)}  # marked: the redactor masks a secret's start before the cut


@row(
    ROWS, id="max-model-len-invalid", topic="memory", level=WARN, evidence=CITED,
    title="`--max-model-len` that is not a positive length, `auto` or -1",
    effect="vLLM rejects it itself (argparse's human_readable_int, or ModelConfig's ge=-1)",
    message="--max-model-len {value}: vLLM accepts a positive length (128k, 1m), or auto/-1 to fit it to the "
    "memory, and rejects this value itself",
    fix="a length such as 65536 or 128k, or --max-model-len auto",
    reference="vllm/config/model.py max_model_len Field(ge=-1); vllm/engine/arg_utils.py human_readable_int",
    models=BOTH)
def max_model_len_invalid(facts: Facts, gpu: GpuInfo | None):
    raw = facts.args.value("max_model_len")
    if raw is None or max_model_len_tried(facts) is None:
        return None  # unset, or auto/-1 (vLLM fits it itself)
    n = as_human_int(raw)
    if n is not None and n > 0:
        return None
    return {"value": clip(str(raw), 40)}  # marked: the redactor masks a secret's start before the cut


SAFETENSORS_LOADERS = (None, "auto", "safetensors", "fastsafetensors")
# filter_duplicate_safetensors_files raises for shards the index names that are missing
MISSING_SHARDS_RAISE = fact("missing-shards-raise").range


@row(
    ROWS, id="shards-missing", topic="memory", level=REFUSE, evidence=CITED,
    title="a local checkpoint (or HF_HUB_OFFLINE=1) whose index names shards that are not there",
    effect="`FileNotFoundError: Weight files referenced in index but missing` when the weights load",
    message="{missing} of the {total} shards that model.safetensors.index.json names are missing or empty in "
    "{where}{size}; {vllm} stops with FileNotFoundError when it starts loading the weights",
    fix="finish the download of the checkpoint into {where}, or point at a complete copy",
    reference="vllm/model_executor/model_loader/weight_utils.py filter_duplicate_safetensors_files "
    "(raises for files the index names that are missing, from 0.26.0)", models=BOTH, vllm=MISSING_SHARDS_RAISE)
def shards_missing(facts: Facts, gpu: GpuInfo | None):
    weights = facts.weights
    if weights is None or not weights.local or not weights.shards_missing:
        return None
    if facts.args.value("load_format") not in SAFETENSORS_LOADERS:
        return None  # dummy weights, tensorizer, GGUF…: the safetensors shards are not read
    size = f" (about {weights.missing_bytes / 1e9:.0f} GB)" if weights.missing_bytes else ""
    return {"missing": weights.shards_missing, "total": weights.shards_total, "size": size,
            "where": facts.model.directory or facts.model.name}


@row(
    ROWS, id="shards-missing-silent", topic="memory", level=WARN, evidence=DERIVED,
    title="a local checkpoint (or HF_HUB_OFFLINE=1) whose index names shards that are not there, on a vLLM "
    "that loads what is there",
    effect="DeepSeek-V4 is quantised, so vLLM does not check that every weight was loaded: the missing tensors "
    "stay uninitialised and the model answers with garbage",
    message="{missing} of the {total} shards that model.safetensors.index.json names are missing or empty in "
    "{where}{size}; {vllm} loads the rest without an error and leaves those weights uninitialised",
    fix="finish the download of the checkpoint into {where}, or point at a complete copy",
    reference="vllm/model_executor/model_loader/default_loader.py load_weights (weights_not_loaded is "
    "checked only when model_config.quantization is None)", models=BOTH, vllm=fact("shards-missing-silent").range)
def shards_missing_loaded_anyway(facts: Facts, gpu: GpuInfo | None):
    return shards_missing(facts, gpu)  # the same condition; the row says what vLLM does with it

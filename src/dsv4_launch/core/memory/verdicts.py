"""The memory verdicts and what every output says of them (pure): *fits*, *vLLM decides at start*,
*short at every end we estimate*, *does not fit* (the one refusal), and the two unknowns;
``plan --json``'s ``memory`` object and ``plan``'s line. The numbers are ``estimate.py``'s."""

from __future__ import annotations

from ..facts import GIVEN_GPUS, Facts, as_human_int
from ..model import V4
from .estimate import (
    Estimate,
    GiB,
    _shape_split,
    args_move_weights,
    estimate,
    gib_text,
    gpu_memory_utilization,
    host_tables_bytes,
)
from .kv_plan import KV_BLOCK

# The four verdicts (and the two unknowns) every output gives for the memory.
FITS = "fits"  # even at the pessimistic end of every band
DECIDES = "vLLM decides at start"  # the bands straddle the need: vLLM's own profile decides
SHORT = "short at every end we estimate"  # even the optimistic end is short: a warning, vLLM still starts
DOES_NOT_FIT = "does not fit"  # certain: the weights' lower bound alone is over the budget
NOT_CHECKED = "memory not checked"  # the GPUs' memory is not known here
UNKNOWN_WEIGHTS = "unknown"  # the checkpoint's size is not known here


def weights_certainly_over(facts: Facts, e: Estimate) -> bool:
    """The weights' lower bound alone is over what vLLM may use of these GPUs: the one certain
    "does not fit" (``weights_refusal``'s test, for any layout and GPU memory)."""
    if e.weights_lower_bytes is None or e.gpu_memory_bytes is None or e.budget_bytes is None:
        return False
    if gpu_memory_utilization(facts) is None or args_move_weights(facts):
        return False
    kv_memory = as_human_int(facts.args.value("kv_cache_memory_bytes"))
    limit = e.gpu_memory_bytes if kv_memory else e.budget_bytes
    return e.weights_lower_bytes + (kv_memory or 0) > limit


def verdict(facts: Facts, e: Estimate, length: int | None = None) -> str:
    """One of the four verdicts (their meanings: the constants above), or why none can be given,
    for one request of ``length`` (default: the ``--max-model-len`` vLLM will try; None for auto:
    ``MIN_USEFUL_LENGTH``)."""
    if e.gpu_memory_bytes is None:
        return NOT_CHECKED
    if weights_certainly_over(facts, e):
        return DOES_NOT_FIT
    if e.weights_bytes_per_gpu is None:
        return UNKNOWN_WEIGHTS
    length = (e.max_model_len if length is None else length) or MIN_USEFUL_LENGTH
    if e.fits and e.max_model_len_fits_low is not None and e.max_model_len_fits_low >= length:
        return FITS
    if e.max_model_len_fits_high is not None and e.max_model_len_fits_high < length:
        return SHORT
    if e.fits and e.max_model_len_fits is None and not e.stages:
        return UNKNOWN_WEIGHTS if facts.model.family == V4 else DECIDES
    return DECIDES


MIN_USEFUL_LENGTH = 4096  # with --max-model-len auto: the length below which "fits" would mean little


def memory_not_checked(facts: Facts) -> str | None:
    """Why the memory of the GPUs vLLM will use is not known here (so nothing about memory is
    checked, the certain refusal included), or None when it is known."""
    gpus = list(facts.all_gpus)
    if gpus and all(g.memory_total_bytes for g in gpus):
        return None
    from ..settings import GPU_MEMORY

    if facts.gpus.source == "DSV4_LAUNCH_GPU_CAPABILITY":
        why = "DSV4_LAUNCH_GPU_CAPABILITY gives the capability only and NVML could not be read here"
    elif facts.gpus.source == GIVEN_GPUS:
        why = "--gpus gives how many GPUs, not their memory"
    elif not gpus:
        why = "no GPU was read here"
    else:
        why = "NVML did not report the GPUs' memory"
    return f"memory not checked: {why}; set {GPU_MEMORY} (e.g. 141GiB) or give --gpu-memory to plan/fit"


def weights_refusal(facts: Facts) -> dict | None:
    """The weights certainly do not fit: the lower bound against the most favourable GPUs vLLM
    can use (``weights-exceed-memory``); the template's values, or None."""
    weights = facts.weights
    if weights is None or not weights.total_bytes:
        return None
    e = estimate(facts, weights)
    if not weights_certainly_over(facts, e) or e.weights_lower_bytes is None:
        return None
    kv_memory = as_human_int(facts.args.value("kv_cache_memory_bytes"))
    limit = (e.gpu_memory_bytes if kv_memory else e.budget_bytes) or 0
    needed = e.weights_lower_bytes + (kv_memory or 0)
    plus = f", plus {gib_text(kv_memory)} of --kv-cache-memory-bytes" if kv_memory else ""
    split = _shape_split(facts, weights, e.layout) if (weights.exact or weights.published) else None
    basis = ("the busiest GPU by the tensor-class tally, checked within 0.5 % against the checkpoint's size"
             if split is not None and split.checked else "the exact bytes split over every GPU as if nothing were "
             "replicated")
    return {"layout": e.layout.words(), "basis": basis, "weights": gib_text(e.weights_lower_bytes), "plus": plus,
            "limit": gib_text(limit), "source": weights.source,
            "where": f"{gib_text(e.gpu_memory_bytes)} × gpu-memory-utilization" if not kv_memory else "the whole GPU",
            "more": max(2, -(-e.layout.gpus * needed // max(limit, 1)))}


def summary(facts: Facts) -> dict | None:
    """``plan --json``'s ``memory`` object (null fields where unknown); None for other models.
    ``verdict``: one of the verdicts above (``does not fit`` exactly when ``weights-exceed-memory``
    holds); ``fits`` keeps its meaning — the weights: false exactly with the refusal, true when their
    estimate is within the budget, null when it cannot tell."""
    if not facts.model.is_dsv4_family:
        return None
    weights = facts.weights
    e = estimate(facts, weights)
    said = verdict(facts, e)  # does not fit exactly when weights_refusal holds: the same test on the same estimate
    fits = False if said == DOES_NOT_FIT else (True if e.fits else None)  # the weights (its meaning since schema 1)
    return {
        "layout": e.layout.words(), "verdict": said,
        "not_checked": memory_not_checked(facts) if e.gpu_memory_bytes is None else None,
        "weights_bytes": weights.total_bytes if weights else None,
        "weights_bytes_per_gpu": e.weights_bytes_per_gpu, "weights_bytes_per_gpu_at_least": e.weights_lower_bytes,
        # what of the checkpoint vLLM keeps in host memory (DeepSeek-V4.1's Engram tables), all GPUs together
        "weights_host_bytes": host_tables_bytes(facts),
        # this host's memory (/proc/meminfo), and the free space where vLLM downloads: null where not read
        "host_memory_bytes": facts.host.memory_total_bytes,
        "host_memory_available_bytes": facts.host.memory_available_bytes,
        "download_free_bytes": facts.host.download_free_bytes,
        "gpu_memory_bytes": e.gpu_memory_bytes, "budget_bytes": e.budget_bytes,
        "kv_bytes_per_token": e.kv_bytes_per_token, "kv_request_bytes": e.need_bytes,
        "kv_available_bytes": e.kv_available_bytes, "kv_available_bytes_low": e.kv_available_low,
        "kv_available_bytes_high": e.kv_available_high, "max_model_len": e.max_model_len,
        "max_model_len_fits": e.max_model_len_fits, "max_model_len_fits_low": e.max_model_len_fits_low,
        "max_model_len_fits_high": e.max_model_len_fits_high, "max_num_batched_tokens": e.max_num_batched_tokens,
        "max_num_seqs": e.max_num_seqs, "in_flight_tokens": e.in_flight_tokens, "model_runner": e.runner,
        "terms": {name: {"low_bytes": t.low, "high_bytes": t.high, "basis": t.basis} for name, t in e.terms},
        "vllm_version": facts.vllm_version, "fits": fits, "source": weights.source if weights else None,
        "estimate": True,
    }


def band_text(low: int | None, high: int | None) -> str:
    """``2.1–6.3 GiB``, or one figure where both ends agree."""
    if low is None or high is None:
        return gib_text(low if high is None else high)
    a, b = f"{low / GiB:.1f}", f"{high / GiB:.1f}"
    return f"{a} GiB" if a == b else f"{a}–{b} GiB"


def length_band_text(low: int | None, high: int | None) -> str:
    if low is None or high is None:
        return "?"
    return f"{low:,}" if low == high else f"{low:,}–{high:,}"


def summary_line(data: dict | None) -> str | None:
    """One line for ``plan``'s text: the same numbers as the JSON, and the verdict."""
    if data is None:
        return None

    def gib(key):
        return gib_text(data.get(key))

    if data.get("not_checked"):
        return f"{data['layout']}: {data['not_checked']}"
    parts = [f"{data['layout']}: weights {gib('weights_bytes_per_gpu')} per GPU"]
    if data.get("budget_bytes") is not None:
        parts[0] += f" of {gib('budget_bytes')} usable ({gib('gpu_memory_bytes')} GPU)"
    if data.get("weights_host_bytes"):
        host = data.get("host_memory_available_bytes")
        parts.append(f"Engram tables {gib('weights_host_bytes')} in host memory ("
                     + (f"{gib_text(host)} available here)" if host is not None else "host memory not checked)"))
    if data.get("kv_bytes_per_token"):
        parts.append(f"KV {data['kv_bytes_per_token'] / 1000:.2f} kB/token")
    if data.get("kv_available_bytes") is not None:
        parts.append(f"KV left {band_text(data.get('kv_available_bytes_low'), data.get('kv_available_bytes_high'))}")
    if data.get("fits") is False:
        parts.append("the weights do not fit")
    elif data.get("max_model_len_fits_low") is not None:
        longest = length_band_text(data["max_model_len_fits_low"], data["max_model_len_fits_high"])
        parts.append(f"one request up to {longest} tokens" if data["max_model_len_fits_high"]
                     else "no room for one request")
    parts.append(f"weights from {data['source']}" if data.get("source") else "checkpoint size unknown")
    odd = (data.get("terms") or {}).get("unknown gpu kind") or {}
    if odd.get("high_bytes"):  # no preset for this GPU's kind: the band is wider, said where it is read
        parts.append(f"the GPU's kind has no preset: up to {gib_text(odd['high_bytes'])} more kept at the "
                     "pessimistic end")
    return f"{data['verdict']}: " + "; ".join(parts) + " (estimate)"


def suggested_length(longest: int) -> int:
    """A ``--max-model-len`` vLLM admits: the longest length, rounded down to the block size."""
    return longest // KV_BLOCK * KV_BLOCK

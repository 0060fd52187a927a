"""Memory rules as rows: weights that cannot fit (refused), one request of ``max_model_len``
that will not fit (a warning with the length that does), an incomplete local checkpoint
(refused). The numbers come from ``memory.estimate``; see its docstring for what is exact and
what is fitted."""

from __future__ import annotations

from .facts import Facts, as_human_int
from .gpus import GpuInfo
from .memory import estimate, gib_text
from .model import V4, V41
from .rules import CITED, DERIVED, REFUSE, WARN, Rule

BOTH = frozenset({V4, V41})
# A refusal needs the weights to exceed the budget by more than the estimate's error (README:
# per-GPU weights within 3 % of vLLM's "Model loading took" logs).
CERTAIN_MARGIN = 1.05


def weights_exceed_budget(facts: Facts, gpu: GpuInfo | None):
    weights = facts.memory
    if weights is None or not weights.total_bytes:
        return None
    e = estimate(facts, weights)
    if e.fits is not False or e.uncertain or e.budget_bytes is None:
        return None
    kv_memory = as_human_int(facts.args.value("kv_cache_memory_bytes"))
    limit = e.gpu_memory_bytes if kv_memory else e.budget_bytes
    needed = e.weights_bytes_per_gpu + (e.kv_available_bytes if kv_memory else 0)
    if needed < limit * CERTAIN_MARGIN:
        return None  # over, but within the estimate's error: the warning below says it
    what = "--kv-cache-memory-bytes plus the weights" if kv_memory else "the weights"
    return {
        "layout": e.layout.words(),
        "weights": gib_text(e.weights_bytes_per_gpu),
        "what": what,
        "limit": gib_text(limit),
        "where": f"{gib_text(e.gpu_memory_bytes)} × gpu-memory-utilization" if not kv_memory else gib_text(limit),
        "source": weights.source,
        "more": max(2, -(-e.layout.gpus * e.weights_bytes_per_gpu // max(limit, 1))),
    }


def weights_tight(facts: Facts, gpu: GpuInfo | None):
    weights = facts.memory
    if weights is None or not weights.total_bytes:
        return None
    e = estimate(facts, weights)
    if e.fits is not False or weights_exceed_budget(facts, gpu) is not None:
        return None
    return {"layout": e.layout.words(), "weights": gib_text(e.weights_bytes_per_gpu), "budget": gib_text(e.budget_bytes),
            "why": e.uncertain or "the estimate's error"}


def _with(facts: Facts, **values) -> Facts:
    """The same facts with some arguments set (to try a fix before suggesting it)."""
    args = facts.args
    return facts._replace(args=args._replace(values={**args.values, **values}))


def _suggestion(facts: Facts, length: int) -> str:
    """The first of the usual fixes that makes one request of ``length`` fit, by the estimate."""
    tries = [
        ("--max-num-batched-tokens 4096", {"max_num_batched_tokens": "4096"}),
        ("--max-num-batched-tokens 2048", {"max_num_batched_tokens": "2048"}),
        ("--gpu-memory-utilization 0.95", {"gpu_memory_utilization": "0.95"}),
        ("--max-num-batched-tokens 2048 --gpu-memory-utilization 0.95",
         {"max_num_batched_tokens": "2048", "gpu_memory_utilization": "0.95"}),
    ]
    for words, values in tries:
        if any(facts.args.value(key) is not None for key in values):
            continue  # the user set one of them: never suggested over their value
        e = estimate(_with(facts, **values), facts.memory)
        if e.max_model_len_fits is not None and e.max_model_len_fits >= length:
            return words
    return "more GPUs"


def one_request_does_not_fit(facts: Facts, gpu: GpuInfo | None):
    if facts.model.family != V4 or facts.memory is None or not facts.memory.total_bytes:
        return None
    e = estimate(facts, facts.memory)
    if e.fits is False or e.max_model_len is None or e.max_model_len_fits is None:
        return None
    if e.max_model_len_fits >= e.max_model_len:
        return None
    longest = e.max_model_len_fits
    if longest >= 4096:
        fits = f"about {longest:,} tokens fit"
        fix = f"--max-model-len {longest // 1024 * 1024}, or --max-model-len auto (vLLM fits it to the memory)"
    else:
        fits = "no useful length fits at these settings"
        fix = f"{_suggestion(facts, e.max_model_len)} (by the estimate), or --max-model-len auto"
    return {
        "length": f"{e.max_model_len:,}",
        "needed": gib_text(e.kv_bytes_per_token * e.max_model_len + e.reserve_bytes),
        "left": gib_text(e.kv_available_bytes),
        "fits": fits,
        "fix": fix,
        "mnbt": e.max_num_batched_tokens,
    }


SAFETENSORS_LOADERS = (None, "auto", "safetensors", "fastsafetensors")


def shards_missing(facts: Facts, gpu: GpuInfo | None):
    weights = facts.memory
    if weights is None or not weights.local or not weights.shards_missing:
        return None
    if facts.args.value("load_format") not in SAFETENSORS_LOADERS:
        return None  # dummy weights, tensorizer, GGUF…: the safetensors shards are not read
    size = f" (about {weights.missing_bytes / 1e9:.0f} GB)" if weights.missing_bytes else ""
    return {"missing": weights.shards_missing, "total": weights.shards_total, "size": size,
            "where": facts.model.directory or facts.model.name}


MEMORY_RULES: tuple[Rule, ...] = (
    Rule(
        id="weights-exceed-memory",
        level=REFUSE,
        evidence=CITED,
        title="the weights per GPU (at this TP × PP, offloading counted) above what vLLM may use of one GPU",
        effect="out of memory at the weight load, or `No available memory for the cache blocks` right after it",
        check=weights_exceed_budget,
        message="{layout}: {weights} of weights per GPU ({source}), but {what} may use only {limit} of each GPU "
        "({where}); {vllm} fails when it loads them or has no memory left for the KV cache",
        fix="more GPUs (at least {more} of these), a larger --tensor-parallel-size/--pipeline-parallel-size, "
        "--cpu-offload-gb, or a smaller (quantised) checkpoint; `dsv4-launch fit` lists the layouts that fit",
        reference="vllm/v1/worker/gpu_worker.py determine_available_memory; vllm/v1/core/kv_cache_utils.py",
        models=BOTH, reads_gpus=True,
    ),
    Rule(
        id="weights-tight",
        level=WARN,
        evidence=DERIVED,
        title="the weights per GPU at (or just over) the memory vLLM may use",
        effect="may run out of memory at the weight load; the estimate cannot tell",
        check=weights_tight,
        message="{layout}: about {weights} of weights per GPU against a budget of {budget}: it may not fit "
        "({why})",
        fix="more GPUs or a larger --tensor-parallel-size; `dsv4-launch fit` shows the margins",
        reference="dsv4-launch's memory estimate (docs/memory.md)",
        models=BOTH, reads_gpus=True,
    ),
    Rule(
        id="max-model-len-too-long",
        level=WARN,
        evidence=DERIVED,
        title="one request of `--max-model-len` (default 1,048,576 for DeepSeek-V4) larger than the KV cache left",
        effect="`ValueError: To serve at least one request with the model's max seq len …` after the weights load",
        check=one_request_does_not_fit,
        message="--max-model-len {length}: one request needs about {needed} of KV cache (with the reserve for "
        "--max-num-batched-tokens {mnbt}), about {left} per GPU is left after the weights, so {vllm} will "
        "likely refuse to start after loading them; {fits} (an estimate: vLLM's accounting differs between "
        "releases)",
        fix="{fix}",
        reference="vllm/v1/core/kv_cache_utils.py check_enough_kv_cache_memory; docs/memory.md", reads_gpus=True,
    ),
    Rule(
        id="shards-missing",
        level=REFUSE,
        evidence=CITED,
        title="a local checkpoint (or HF_HUB_OFFLINE=1) whose index names shards that are not there",
        effect="the weight load fails: tensors the model needs are not in the files present",
        check=shards_missing,
        message="{missing} of the {total} shards that model.safetensors.index.json names are missing or empty in "
        "{where}{size}; vLLM cannot load the model without them",
        fix="finish the download of the checkpoint into {where}, or point at a complete copy",
        reference="vllm/model_executor/model_loader/default_loader.py",
        models=BOTH,
    ),
)

"""``dsv4-launch fit``, pure part: every parallel layout of the model on N GPUs, with the
memory estimate for each (``memory.estimate``)."""

from __future__ import annotations

from .facts import Facts
from .memory import Estimate, Layout, WeightFacts, estimate
from .records import record

DEFAULT_CONTEXT = 65_536  # the length concurrency is counted at when --max-model-len is not given


@record
class FitRow:
    estimate: Estimate
    flags: str  # the `vllm serve` options for this layout
    verdict: str  # "fits", "short context", "does not fit", "unknown"
    concurrency: int | None


def divisors(n: int) -> list[int]:
    return [d for d in range(1, n + 1) if n % d == 0]


def layouts(facts: Facts, gpus: int) -> list[Layout]:
    """TP × PP (× DP with expert parallel) using all ``gpus``, where TP divides the attention
    heads and ``o_groups`` (vLLM's n_local_groups = o_groups // TP) and PP the layers."""
    layers = facts.model.number("num_hidden_layers")
    found = []
    for tp in divisors(gpus):
        if not facts.model.tp_splits(tp):
            continue
        for pp in divisors(gpus // tp):
            if layers and pp > layers:
                continue
            dp = gpus // (tp * pp)
            found.append(Layout(tp, pp, dp, expert_parallel=dp > 1))
    return found


def flags(layout: Layout) -> str:
    words = [f"-tp {layout.tp}"]
    if layout.pp > 1:
        words.append(f"-pp {layout.pp}")
    if layout.dp > 1:
        words.append(f"-dp {layout.dp} --enable-expert-parallel")
    return " ".join(words)


def fit_rows(facts: Facts, weights: WeightFacts | None, gpus: int, gpu_memory: int | None,
             context: int) -> list[FitRow]:
    rows = []
    for layout in layouts(facts, gpus):
        e = estimate(facts, weights, layout, gpu_memory)
        concurrency = e.concurrency(context) if e.fits else None
        if e.fits is None:
            verdict = "unknown"
        elif not e.fits:
            verdict = "does not fit"
        elif e.max_model_len_fits is not None and e.max_model_len_fits >= context:
            verdict = "fits"
        else:
            verdict = "short context"
        rows.append(FitRow(e, flags(layout), verdict, concurrency))
    return rows

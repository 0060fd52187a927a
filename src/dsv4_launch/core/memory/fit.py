"""``dsv4-launch fit``, pure part: every parallel layout of the model on N GPUs (and the one the
user gave), with the memory estimate for each (``memory.estimate``), and the fewest of these
GPUs on which some layout fits."""

from __future__ import annotations

from ..facts import Facts
from ..records import Record
from .estimate import Estimate, Layout, WeightFacts, estimate, layout_of

DEFAULT_CONTEXT = 65_536  # the length concurrency is counted at when --max-model-len is not given
FITS, SHORT, DOES_NOT_FIT, UNKNOWN = "fits", "short context", "does not fit", "unknown"
MAX_FEWEST = 64  # the largest GPU count searched for "the fewest that fit"


class FitRow(Record):
    estimate: Estimate
    flags: str  # the `vllm serve` options for this layout
    verdict: str  # FITS, SHORT, DOES_NOT_FIT, UNKNOWN
    concurrency: int | None  # requests of the context length at once, per engine (DP replica)
    yours: bool = False  # the layout the user's arguments give
    why: str | None = None  # for DOES_NOT_FIT: "weights" or "no request"

    @property
    def total_concurrency(self) -> int | None:
        """For the whole deployment: every DP replica is an engine with its own KV cache."""
        return None if self.concurrency is None else self.concurrency * self.estimate.layout.dp


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
        words.append(f"-dp {layout.dp}")
        if layout.expert_parallel:
            words.append("-ep")
    return " ".join(words)


def fit_row(facts: Facts, weights: WeightFacts | None, layout: Layout, gpu_memory: int | None, context: int,
            yours: bool = False) -> FitRow:
    e = estimate(facts, weights, layout, gpu_memory)
    concurrency = e.concurrency(context) if e.fits else None
    why = None
    if e.fits is None:
        verdict = UNKNOWN
    elif not e.fits:
        verdict, why = DOES_NOT_FIT, "weights"
    elif e.max_model_len_fits is None:
        verdict = UNKNOWN
    elif e.max_model_len_fits == 0:
        verdict, why = DOES_NOT_FIT, "no request"
    elif e.max_model_len_fits >= context:
        verdict = FITS
    else:
        verdict = SHORT
    return FitRow(e, flags(layout), verdict, concurrency, yours, why)


def user_layout(facts: Facts) -> Layout | None:
    """The layout the arguments give, when they give one (-tp, -pp, -dp or -ep)."""
    args = facts.args
    if all(args.value(d) is None for d in ("tensor_parallel_size", "pipeline_parallel_size", "data_parallel_size",
                                           "enable_expert_parallel")):
        return None
    return layout_of(facts)


def fit_rows(facts: Facts, weights: WeightFacts | None, gpus: int, gpu_memory: int | None,
             context: int) -> list[FitRow]:
    mine = user_layout(facts)
    rows = [fit_row(facts, weights, layout, gpu_memory, context, yours=layout == mine)
            for layout in layouts(facts, gpus)]
    if mine is not None and not any(r.yours for r in rows):
        rows.insert(0, fit_row(facts, weights, mine, gpu_memory, context, yours=True))
    return rows


def fewest_gpus(facts: Facts, weights: WeightFacts | None, gpu_memory: int | None, context: int,
                limit: int = MAX_FEWEST) -> FitRow | None:
    """The first layout, on the fewest of these GPUs, where one request of ``context`` fits."""
    for n in range(1, limit + 1):
        for layout in layouts(facts, n):
            row = fit_row(facts, weights, layout, gpu_memory, context)
            if row.verdict == FITS:
                return row
    return None

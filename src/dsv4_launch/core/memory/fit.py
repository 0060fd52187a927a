"""``dsv4-launch fit``, pure part: every parallel layout of the model on N GPUs (and the one the
user gave), with the memory estimate for each (``memory.estimate``) and its verdict, and the
fewest of these GPUs on which some layout fits."""

from __future__ import annotations

from collections.abc import Iterator

from ..facts import Facts
from ..records import Record
from ..versions import is_newer
from ..vllm.releases import NEWEST_VERIFIED
from .estimate import Estimate, Layout, WeightFacts, estimate, gpu_memory_utilization, layout_of
from .verdicts import DECIDES, DOES_NOT_FIT, FITS, NOT_CHECKED, SHORT, UNKNOWN_WEIGHTS, verdict
from .vllm_config import concurrency_counted

DEFAULT_CONTEXT = 65_536  # the length concurrency is counted at when --max-model-len is not given
UNKNOWN = UNKNOWN_WEIGHTS
MAX_FEWEST = 64  # the largest GPU count searched for "the fewest that fit"
NODE = 8  # above this many GPUs, "the fewest" counts whole nodes of 8


class FitRow(Record):
    estimate: Estimate
    flags: str  # the `vllm serve` options for this layout
    verdict: str  # FITS, DECIDES, DOES_NOT_FIT, NOT_CHECKED or UNKNOWN
    concurrency: int | None  # vLLM's "Maximum concurrency" at the context, per engine (DP replica), pessimistic end
    yours: bool = False  # the layout the user's arguments give
    why: str | None = None  # for DOES_NOT_FIT: "weights" (the only certain reason)
    concurrency_high: int | None = None  # the same at the optimistic end

    @property
    def total_concurrency(self) -> int | None:
        """For the whole deployment: every DP replica is an engine with its own KV cache."""
        return None if self.concurrency is None else self.concurrency * self.estimate.layout.dp

    @property
    def total_concurrency_high(self) -> int | None:
        return None if self.concurrency_high is None else self.concurrency_high * self.estimate.layout.dp


def concurrency_note(vllm_version: str | None) -> str | None:
    """Where fit's "max conc" is not vLLM's own "Maximum concurrency" as checked against the
    release's code (tests/vllm_real/test_concurrency_oracle.py), what it is instead; None where it
    is (every verified release, and no vLLM at all: the newest release's count)."""
    if vllm_version is None:
        return None
    if not concurrency_counted(vllm_version):
        return (f"max conc is the KV left over what one request needs, not vLLM {vllm_version}'s own "
                "\"Maximum concurrency\" count (not modelled for that release)")
    if is_newer(vllm_version, NEWEST_VERIFIED) is not False:  # a later release, or a version not read
        return (f"max conc is counted as vLLM {NEWEST_VERIFIED} counts its \"Maximum concurrency\"; not verified "
                f"for vLLM {vllm_version}")
    return None


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
    words = [f"-{k} {n}" for k, n in (("tp", layout.tp), ("pp", layout.pp), ("dp", layout.dp)) if k == "tp" or n > 1]
    return " ".join(words + (["-ep"] if layout.expert_parallel else []))


def fit_row(facts: Facts, weights: WeightFacts | None, layout: Layout, gpu_memory: int | None, context: int,
            yours: bool = False) -> FitRow:
    e = estimate(facts, weights, layout, gpu_memory)
    said = verdict(facts, e, context)
    low, high = e.concurrency_band(context) if said not in (DOES_NOT_FIT, NOT_CHECKED) else (None, None)
    return FitRow(e, flags(layout), said, low, yours, "weights" if said == DOES_NOT_FIT else None, high)


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


USUAL_TP = (1, 2, 4, 8, 16)  # the tensor-parallel sizes DeepSeek-V4 is run at


def counts_to_try(limit: int = MAX_FEWEST, asked: int | None = None) -> list[int]:
    """The GPU counts the layouts people run use: 1, 2, 4, 8, then whole nodes of 8 (16, 24, …
    up to ``limit``), and ``asked`` (the user's own count) whatever it is: 3 GPUs at PP 3 or 14 at
    PP 7 is not a deployment anyone buys."""
    return [n for n in range(1, limit + 1) if n in (1, 2, 4) or n % NODE == 0 or n == asked]


def headroom(row: FitRow) -> tuple[int, int, int]:
    """How a layout ranks among those that fit on as many GPUs: the user's first, then the most
    KV left at the pessimistic end, then the fewest pipeline stages (PP costs latency)."""
    e = row.estimate
    return (1 if row.yours else 0, e.kv_available_low or 0, -e.layout.pp)


def fewest_gpus(facts: Facts, weights: WeightFacts | None, gpu_memory: int | None, context: int,
                limit: int = MAX_FEWEST, asked: int | None = None) -> FitRow | None:
    """The fewest of these GPUs (``counts_to_try``) on which a layout people run (TP of
    ``USUAL_TP``, with DP + EP; PP only where nothing else fits on as many) fits one request of
    ``context`` even at the pessimistic end; of those layouts, the one with the most headroom."""
    mine = user_layout(facts)
    for n in counts_to_try(limit, asked or (mine.gpus if mine else None)):
        found = [lay for lay in layouts(facts, n) if lay.tp in USUAL_TP and lay != mine]
        found += [mine] if mine is not None and mine.gpus == n else []  # TP 8 + EP too, where it is the user's
        rows = [fit_row(facts, weights, layout, gpu_memory, context, yours=layout == mine) for layout in found]
        fitting = [r for r in rows if r.verdict == FITS]
        if fitting:
            return max(fitting, key=lambda r: (r.estimate.layout.pp == 1 or r.yours, *headroom(r)))
    return None


def visible_layout(facts: Facts) -> Layout | None:
    """doctor without arguments: the layout of every visible GPU that plans best (fits first, then
    vLLM decides, then the most headroom), instead of vLLM's default TP 1; None for one GPU, or
    none whose memory is known."""
    selection = facts.gpus.selection
    n = selection.visible_count if selection else 0
    if n < 2 or not all(g.memory_total_bytes for g in facts.all_gpus):
        return None
    rows = fit_rows(facts, facts.weights, n, None, DEFAULT_CONTEXT)
    return _best(rows).estimate.layout if rows else None


_RANK = {FITS: 3, DECIDES: 2, SHORT: 1}  # how well a row plans: its verdict, then its headroom


def _best(rows: list[FitRow]) -> FitRow:
    return max(rows, key=lambda r: (_RANK.get(r.verdict, 0), *headroom(r)))


def with_args(facts: Facts, **values) -> Facts:
    """The same facts with some arguments set (to re-plan a change before suggesting it)."""
    args = facts.args
    return facts._replace(args=args._replace(values={**args.values, **values}))


BATCHED_TOKENS_TRIED = (8192, 4096, 2048, 1024, 512)  # every public Pro DP 8 + EP start on H200 uses 512
SEQS_TRIED = (128, 64, 32, 16)
USUAL_GMU = 0.95  # vLLM accepts up to 1 (CacheConfig le=1); 0.95 is what the recipes set


def _layout_flags(layout: Layout, mine: Layout) -> str:
    """``layout`` as the flags that set it over ``mine`` (the arguments' layout)."""
    words = [f"--tensor-parallel-size {layout.tp}"]
    words += [f"--{name}-parallel-size {n}" for name, n, was in (("pipeline", layout.pp, mine.pp),
                                                                 ("data", layout.dp, mine.dp)) if n != 1 or was != 1]
    if layout.expert_parallel:
        words.append("--enable-expert-parallel")
    return " ".join(words) + (" without --enable-expert-parallel" if mine.expert_parallel and not layout.expert_parallel
                              else "")


def levers(facts: Facts, e: Estimate) -> Iterator[tuple[str, Estimate]]:
    """The changes people make to a start that is short, each lever's smallest change first:
    --max-num-batched-tokens, --max-num-seqs, the layout on the same GPUs, --gpu-memory-utilization
    (within vLLM's limit). A value the user set is never suggested over; yields (words, estimate)."""
    args, weights = facts.args, facts.weights
    batched: list[dict] = []
    if args.value("max_num_batched_tokens") is None and args.value("enable_chunked_prefill") is not False:
        batched = [{"max_num_batched_tokens": str(n)} for n in BATCHED_TOKENS_TRIED
                   if n < (e.max_num_batched_tokens or 0)]
    seqs = [{"max_num_seqs": str(n)} for n in SEQS_TRIED if n < (e.max_num_seqs or 0)]
    for values in batched + (seqs if args.value("max_num_seqs") is None else []):
        yield _words(values), estimate(with_args(facts, **values), weights, e.layout)
    found = layouts(facts, e.layout.gpus)
    found += [lay._replace(expert_parallel=True) for lay in found if lay.dp == 1 and lay.pp == 1]  # TP 8 + EP
    mine = e.layout
    for layout in sorted(found, key=lambda lay: (lay.pp, -lay.tp, lay.expert_parallel != mine.expert_parallel)):
        if layout != mine:  # the layout on the same GPUs as people run them: TP (+ EP), then DP + EP, then PP
            yield _layout_flags(layout, mine), estimate(facts, weights, layout)
    if args.value("gpu_memory_utilization") is None and (gpu_memory_utilization(facts) or 1) < USUAL_GMU:
        gmu = {"gpu_memory_utilization": str(USUAL_GMU)}
        for values in [gmu, *({**b, **gmu} for b in batched)]:  # alone, then with fewer batched tokens
            yield _words(values), estimate(with_args(facts, **values), weights, e.layout)


def _words(values: dict) -> str:
    return " ".join(f"--{key.replace('_', '-')} {value}" for key, value in values.items())


def lever_fix(facts: Facts, e: Estimate, length: int | None) -> tuple[str | None, str | None]:
    """(the first of ``levers`` that re-plans as fitting one request of ``length`` at the
    pessimistic end, the first that does at the optimistic end), either None where none does."""
    optimistic = None
    if not length:
        return None, None
    for words, planned in levers(facts, e):
        if planned.fits and (planned.max_model_len_fits_low or 0) >= length:
            return words, optimistic
        if optimistic is None and (planned.max_model_len_fits_high or 0) >= length:
            optimistic = words
    return None, optimistic


def fix_on_these(facts: Facts, rows: list[FitRow], context: int) -> tuple[FitRow, str, bool] | None:
    """Where no layout on these GPUs fits ``context`` at the pessimistic end: the user's layout
    (else the one that plans best) and the smallest change of ``levers`` with which it does (True),
    or else fits at the optimistic end (False); None where neither, or where a layout fits."""
    if not rows or any(r.verdict == FITS for r in rows):
        return None
    row = next((r for r in rows if r.yours), None) or _best(rows)
    near = row.verdict in (DECIDES, SHORT)
    pessimistic, optimistic = lever_fix(facts, row.estimate, context) if near else (None, None)
    return (row, pessimistic, True) if pessimistic else ((row, optimistic, False) if optimistic else None)

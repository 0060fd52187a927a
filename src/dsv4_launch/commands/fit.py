"""``dsv4-launch fit [MODEL] [--gpus N|NxGPU] [--gpu-memory SIZE] [VLLM ARGS]``: will it fit?

What it shows: ``COMMAND``'s help below. The layouts and verdicts come from core/memory/fit.py,
the bands from core/memory/budget.py; the same pipeline as dsv4-serve gathers the facts. Without
GPUs it works from a preset (core/memory/presets.py) or ``--gpus`` and ``--gpu-memory``.
"""
from __future__ import annotations

from collections.abc import Sequence

from ..core.facts import GIVEN_GPUS, GpuFacts, as_human_int
from ..core.gpus import GpuSelection
from ..core.memory.estimate import TERMS, GiB, gpu_memory_utilization
from ..core.memory.fit import (
    DEFAULT_CONTEXT,
    MAX_FEWEST,
    UNKNOWN,
    concurrency_note,
    fewest_gpus,
    fit_rows,
    fix_on_these,
)
from ..core.memory.presets import PRESETS, preset_gpus
from ..core.memory.verdicts import DECIDES, DOES_NOT_FIT, FITS, NOT_CHECKED, SHORT
from ..core.memory.vllm_config import concurrency_counted
from ..output.documents import near_misses
from ..output.render import Out, Result, render
from . import exit_codes
from .context import Context, here
from .own_options import NEAR_MISSES, PLANNING, VLLM_VERSION, Command, NearMiss, planning_context
from .pipeline import DEFAULT_MODEL, FIT, prepare_in

STYLES = {FITS: "green", DECIDES: "yellow", SHORT: "yellow", DOES_NOT_FIT: "red", NOT_CHECKED: None, UNKNOWN: None}
SHORT_VERDICT = {DECIDES: "vLLM decides", SHORT: "short"}  # the table's column (80 columns); the footer says when
NO_LAYOUT_FITS = 1  # fit: every layout certainly does not fit (the weights alone)


def _gib(n) -> str:
    return "?" if n is None else f"{n / GiB:.1f}"


def _gib_short(n: int) -> str:
    x = n / GiB
    return f"{x:.1f}" if x < 10 else f"{x:.0f}"


def _band(low, high, words=str, unknown: str = "?") -> str:
    """``2.1–6.3`` GiB, ``361k–1M`` tokens, ``3–12`` requests: a band as the table writes it (JSON
    has the numbers)."""
    if low is None or high is None:
        return unknown
    a, b = words(low), words(high)
    return a if a == b else f"{a}–{b}"


def _tokens(n: int) -> str:
    """``1M``, ``0.99M``, ``361k``, ``6k``, ``512``: a length as the table writes it, rounded down (JSON
    has it whole)."""
    if n >= 1_000_000:
        return f"{n / 1_048_576:.2f}".rstrip("0").rstrip(".") + "M"
    return f"{n // 1000}k" if n >= 1000 else str(n)


def _row_data(r) -> dict:
    e = r.estimate
    return {"layout": e.layout.words(), "tp": e.layout.tp, "pp": e.layout.pp, "dp": e.layout.dp,
            "expert_parallel": e.layout.expert_parallel, "flags": r.flags, "yours": r.yours,
            "weights_bytes_per_gpu": e.weights_bytes_per_gpu,
            "weights_bytes_per_gpu_at_least": e.weights_lower_bytes,
            "kv_available_bytes": e.kv_available_bytes, "kv_available_bytes_low": e.kv_available_low,
            "kv_available_bytes_high": e.kv_available_high,
            "max_model_len_fits": e.max_model_len_fits, "max_model_len_fits_low": e.max_model_len_fits_low,
            "max_model_len_fits_high": e.max_model_len_fits_high,
            "concurrency": r.total_concurrency, "concurrency_high": r.total_concurrency_high,
            "concurrency_per_replica": r.concurrency, "concurrency_per_replica_high": r.concurrency_high,
            "model_runner": e.runner, "verdict": r.verdict, "why": r.why}


PRESET_WORDS = ", ".join(p.key for p in PRESETS)


def _problem(prepared, facts, count: int | None, memory_known: bool) -> str | None:
    """The one line that stops fit before any layout is planned, or None."""
    if prepared.error is not None:
        return prepared.error
    if facts is None:
        return ("DSV4_LAUNCH_DISABLE is set: nothing is read" if prepared.plan.disabled
                else "the arguments could not be read")
    if facts.args.rejection:
        return f"vLLM will reject these arguments ({facts.args.rejection})"
    if not facts.model.is_dsv4_family:
        return f"{facts.model.name} is not a DeepSeek-V4 model (fit knows DeepSeek-V4's memory only)"
    if not count:
        return "no GPU seen here: give the GPUs to plan for (--gpus 8xH200, or --gpus 8 --gpu-memory 141GiB)"
    if not memory_known:
        return (f"--gpus {count}: the memory of one GPU is not known here; give --gpu-memory (e.g. 141GiB) or "
                f"DSV4_LAUNCH_GPU_MEMORY, or name a preset (--gpus {count}xH200; presets: {PRESET_WORDS})")
    if gpu_memory_utilization(facts) is None:
        return (f"--gpu-memory-utilization {facts.args.value('gpu_memory_utilization')}: vLLM accepts a "
                "fraction greater than 0 and at most 1, and rejects this value itself")
    return None


def run_fit(argv: list[str], *, as_json: bool, gpus: int | None = None, gpu_memory: int | None = None,
            preset=None, ctx: Context | None = None, misses: Sequence[NearMiss] = ()) -> int:
    """Exit status: 1 when every layout certainly does not fit (the weights alone), 0
    otherwise (vLLM deciding at start, or an unknown, is not a no), 2 for bad input, 74 when the
    report cannot be written. ``ctx``: the world it reads (None: this process's)."""
    ctx = here(ctx)
    result = fit_result(argv, ctx, gpus=gpus, gpu_memory=gpu_memory, preset=preset, misses=misses)
    return render(result, as_json=as_json, stdout=ctx.stdout, stderr=ctx.stderr, env=ctx.env or {})


def _accounting(prepared, facts) -> tuple[str, str]:
    """(the release whose accounting was assumed, how it was chosen)."""
    vllm = prepared.vllm
    if facts.vllm_version and vllm is not None and vllm.assumed:
        return facts.vllm_version, VLLM_VERSION.name
    if facts.vllm_version:
        return facts.vllm_version, "installed"
    return facts.newest_release or "the newest", "no vLLM here: the newest release's"


def fit_result(argv: list[str], ctx: Context, *, gpus: int | None = None, gpu_memory: int | None = None,
               preset=None, misses: Sequence[NearMiss] = ()) -> Result:
    """What ``fit`` has to show: the layouts as a table or a document, or the one error line;
    ``misses``: the door's near misses of fit's options, handed to vLLM (in the document)."""
    prepared = prepare_in(ctx, argv, FIT, default_model=DEFAULT_MODEL)
    vllm = {"vllm_version": prepared.vllm.version if prepared.vllm else None,
            "vllm_version_assumed": bool(prepared.vllm and prepared.vllm.assumed),
            "near_misses": near_misses(misses)}  # new in schema 1 (output/documents.near_misses)
    facts = prepared.facts
    if facts is not None and preset is not None:
        given = GpuSelection(preset_gpus(gpus or 1, preset))
        facts = facts._replace(gpus=GpuFacts(given, source=GIVEN_GPUS, read=True))
    selection = facts.gpus.selection if facts else None
    count = gpus or (selection.visible_count if selection and selection.visible_count else None)
    memory = gpu_memory or (prepared.settings.gpu_memory_bytes if prepared.settings else None)
    if memory is None and preset is not None:
        memory = preset.memory
    seen = [g.memory_total_bytes for g in facts.all_gpus] if facts is not None else []
    memory_known = bool(memory) or (bool(seen) and all(seen))
    problem = _problem(prepared, facts, count, memory_known)
    if problem is not None or facts is None or count is None:
        return Result(exit_codes.USAGE, COMMAND.prefix, "the table", problem or "the arguments could not be read",
                      {"error": problem, "rows": [], **vllm}, None, prepared.redact)
    context = as_human_int(facts.args.value("max_model_len")) or DEFAULT_CONTEXT
    if context <= 0:
        context = DEFAULT_CONTEXT  # -1/auto: vLLM fits the length itself; concurrency at the default
    weights = facts.weights
    rows = fit_rows(facts, weights, count, memory, context)
    fewest = fewest_gpus(facts, weights, memory, context, asked=count)
    e0 = rows[0].estimate if rows else None
    gpu_memory_used = e0.gpu_memory_bytes if e0 and e0.gpu_memory_bytes else memory
    source = weights.source if weights and weights.total_bytes else "checkpoint size unknown"
    gmu = gpu_memory_utilization(facts)
    mnbt = e0.max_num_batched_tokens if e0 else None
    release, how = _accounting(prepared, facts)
    note = concurrency_note(facts.vllm_version)
    what = 'vLLM\'s "Maximum concurrency"' if concurrency_counted(facts.vllm_version) else "requests that fit at once"
    gpu_words = (f"{count} × {preset.key} ({_gib(gpu_memory_used)} GiB each)" if preset is not None
                 else f"{count} × {_gib(gpu_memory_used)} GiB GPUs")
    title = (f"{facts.model.name} on {gpu_words} (gpu-memory-utilization "
             f"{gmu}, max-num-batched-tokens {mnbt or '?'}; vLLM {release} accounting ({how}); weights: {source})")
    fix = fix_on_these(facts, rows, context)
    # the user's own GPUs fit with a lever the fix found: say so instead of asking for more GPUs
    yours = fix if fix and fix[2] and (fewest is None or fewest.estimate.layout.gpus > count) else None
    fewest_of = f"fewest of these GPUs that fit {context:,} tokens even at the pessimistic end: "
    not_judged = f"no layout can be judged to fit {context:,} tokens: "
    if yours is not None:
        fewest_line = fewest_of + f"{count} (yours: {yours[0].flags} with {yours[1]}, re-planned)"
    elif fewest is not None:
        fewest_line = fewest_of + f"{fewest.estimate.layout.gpus} ({fewest.flags}, the most headroom)"
    elif rows and all(r.estimate.weights_bytes_per_gpu is None for r in rows):
        fewest_line = not_judged + f"the weights per GPU are unknown ({source})"
    elif rows and all(not r.estimate.stages for r in rows):  # DeepSeek-V4.1: its own caches
        fewest_line = not_judged + ("this model's KV cache is not modelled, so no length is judged (vLLM decides at "
                                    "start)")
    else:
        fewest_line = (f"no layout of up to {MAX_FEWEST} of these GPUs (1, 2, 4, 8, then whole nodes) fits {context:,} "
                       "tokens at the pessimistic end")
    fix_line = None if fix is None or yours else (
        f"on these {count} GPUs: {fix[0].flags} with {fix[1]} fits {context:,} tokens at the "
        + ("pessimistic end (re-planned)" if fix[2] else "optimistic end only (re-planned)"))
    # 1 only when every layout certainly does not fit (the weights alone): vLLM deciding is not "no"
    none_fits = bool(rows) and all(r.verdict == DOES_NOT_FIT for r in rows)
    any_fits = any(r.verdict == FITS for r in rows)
    data = {
        "model": facts.model.name, "gpus": count, "gpu": preset.key if preset is not None else None,
        "gpu_memory_bytes": gpu_memory_used, "context": context, "accounting_release": release,
        "accounting_release_from": how, "weights_source": weights.source if weights else None,
        "concurrency_counted": concurrency_counted(facts.vllm_version),  # else KV left / one request
        "concurrency_note": note,  # None: "concurrency" is vLLM's own "Maximum concurrency" count, verified
        "rows": [_row_data(r) for r in rows],
        "fewest_gpus": None if fewest is None else {"gpus": fewest.estimate.layout.gpus, **_row_data(fewest)},
        "fewest_gpus_with_change": None if yours is None else {"gpus": count, "flags": yours[0].flags,
                                                               "change": yours[1]},
        "fits": True if any_fits else (False if none_fits else None),
        # where no layout here fits at the pessimistic end: the smallest change that does (or the optimistic end)
        "fix": None if fix is None else {"flags": fix[0].flags, "change": fix[1],
                                         "end": "pessimistic" if fix[2] else "optimistic"},
        "estimate": True, **vllm,  # the release planned for; assumed: --vllm-version's, not the installed vLLM's
    }
    table_rows = [
        [("* " if r.yours else "") + r.flags, _gib(r.estimate.weights_bytes_per_gpu),
         *(["-", "-"] if r.verdict == DOES_NOT_FIT else
           [_band(r.estimate.kv_available_low, r.estimate.kv_available_high, _gib_short),
            _band(r.estimate.max_model_len_fits_low, r.estimate.max_model_len_fits_high, _tokens)]),
         _band(r.total_concurrency, r.total_concurrency_high, unknown="-"),
         SHORT_VERDICT.get(r.verdict, r.verdict)]
        for r in rows
    ]
    footer = [
        fewest_line, *([fix_line] if fix_line else []),
        f"max conc: {what} at {context:,} tokens, all DP replicas together; KV left, "
        "longest (one request alone) and max conc run from the pessimistic to the optimistic end of the "
        f"estimated terms ({', '.join(t.name for t in TERMS)}); weights and KV in GiB per GPU.",
        *([f"{note}."] if note else []),
        "fits: even at the pessimistic end; vLLM decides at start, by its own profile (the bands straddle "
        "the need); short: short at every end we estimate (a warning: vLLM still starts and decides); "
        "does not fit: the weights alone, for certain.",
        *(["*: the layout your arguments give."] if any(r.yours for r in rows) else []),
        "Estimates (README: Will it fit?), not promises.",
    ]

    def text(out: Out) -> None:
        out.table(title, ["layout", "weights", "KV left", "longest", "max conc", "verdict"],
                  table_rows, [STYLES.get(r.verdict) for r in rows], footer,
                  right=[False, True, True, True, True, False])

    status = NO_LAYOUT_FITS if none_fits else exit_codes.OK
    return Result(status, COMMAND.prefix, "the table", None, data, text, prepared.redact)


def _run(own: dict, rest: list[str], ctx: Context | None = None) -> int:
    gpus, preset = own.get("gpus") or (None, None)
    memory = own.get("gpu_memory")
    ctx = planning_context({"vllm_version": own.get("vllm_version")}, ctx)  # fit plans the GPUs itself
    return run_fit(rest, as_json=bool(own.get("json")), gpus=gpus, preset=preset,
                   gpu_memory=memory if isinstance(memory, int) else None, ctx=ctx,
                   misses=own.get(NEAR_MISSES, ()))  # the door's (cli._run)


COMMAND = Command("fit", """Will it fit? Every tensor/pipeline/data-parallel layout of MODEL on these GPUs.

VLLM_ARGS: the model (DeepSeek-V4-Flash when none is given) and any `vllm serve` options that
change memory (--gpu-memory-utilization, --max-model-len, --max-num-batched-tokens,
--cpu-offload-gb, ...). Shows weights per GPU, the KV cache left and the longest single request
(pessimistic–optimistic), vLLM's "Maximum concurrency" at --max-model-len (65,536 when not
given) for the whole deployment, and a verdict: fits (even at the pessimistic end), vLLM decides
at start, short (at every end we estimate), or does not fit (the weights alone, for certain); the
layout your arguments give is marked, and the fewest of these GPUs that fit is named. The
header says the GPU memory used and whose accounting (the installed vLLM, --vllm-version, or
the newest release). An estimate.
Exit status: 1 when every layout certainly does not fit, 0 otherwise, 2 for bad input.""",
                  PLANNING, _run, vllm_args=True, arguments="[VLLM_ARGS]...", pause_collector=True)

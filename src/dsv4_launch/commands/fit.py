"""``dsv4-launch fit [MODEL] [--gpus N] [--gpu-memory SIZE] [VLLM ARGS]``: will it fit?

Every layout of the model on these GPUs, with the weights per GPU, the KV cache left, the
longest single request and the concurrency at ``--max-model-len`` (65,536 when not given). The
same pipeline as dsv4-serve gathers the facts (model, GPUs, vLLM); without GPUs it works from
``--gpus`` and ``--gpu-memory`` (or ``DSV4_LAUNCH_GPU_MEMORY``).
"""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping

from ..core.facts import as_human_int
from ..core.fit import DEFAULT_CONTEXT, fit_rows
from ..core.memory import DEFAULT_GPU_MEMORY_UTILIZATION, GiB
from ..output.documents import dump
from ..output.lines import Reporter, make_lenient, safe_write, silence
from ..output.redact import Scrubber
from ..output.tables import render_table
from . import exit_codes
from .pipeline import DEFAULT_MODEL, FIT, prepare

STYLES = {"fits": "green", "short context": "yellow", "does not fit": "red", "unknown": None}


def _gib(n) -> str:
    return "?" if n is None else f"{n / GiB:.1f}"


def run_fit(argv: list[str], *, as_json: bool, gpus: int | None = None, gpu_memory: int | None = None,
            env: Mapping[str, str] | None = None, stdout=None, stderr=None, probe=None, vllm=None) -> int:
    env = os.environ if env is None else env
    stdout = sys.stdout if stdout is None else stdout
    stderr = sys.stderr if stderr is None else stderr
    make_lenient(stdout)
    prepared = prepare(argv, env, FIT, default_model=DEFAULT_MODEL, probe=probe, vllm=vllm)
    scrub = Scrubber.for_argv(prepared.argv)
    err = Reporter(stderr, env, prefix="dsv4-launch fit", scrub=scrub)
    facts = prepared.facts
    problem = prepared.error
    if problem is None and facts is None:
        problem = "DSV4_LAUNCH_DISABLE is set: nothing is read" if prepared.plan.disabled else "the arguments could not be read"
    if problem is None and facts.args.rejection:
        problem = f"vLLM will reject these arguments ({facts.args.rejection})"
    if problem is None and not facts.model.is_dsv4_family:
        problem = f"{facts.model.name} is not a DeepSeek-V4 model (fit knows DeepSeek-V4's memory only)"
    count = gpus or (facts.gpus.visible_count if facts and facts.gpus and facts.gpus.visible_count else None)
    if problem is None and not count:
        problem = "no GPU seen here: give the GPUs to plan for (--gpus 8 --gpu-memory 141GiB)"
    if problem is not None:
        err.error(problem)
        if as_json:
            safe_write(stdout, dump({"error": problem, "rows": []}, scrub) + "\n")
        return exit_codes.USAGE
    context = as_human_int(facts.args.value("max_model_len")) or DEFAULT_CONTEXT
    memory = gpu_memory or (prepared.settings.gpu_memory_bytes if prepared.settings else None)
    weights = facts.memory
    rows = fit_rows(facts, weights, count, memory, context)
    e0 = rows[0].estimate if rows else None
    gpu_memory_used = e0.gpu_memory_bytes if e0 else memory
    source = weights.source if weights and weights.total_bytes else "checkpoint size unknown"
    gmu = facts.args.value("gpu_memory_utilization") or DEFAULT_GPU_MEMORY_UTILIZATION
    mnbt = e0.max_num_batched_tokens if e0 else None
    title = (f"{facts.model.name} on {count} × {_gib(gpu_memory_used)} GiB GPUs (gpu-memory-utilization {gmu}, "
             f"max-num-batched-tokens {mnbt or '?'}; weights: {source})")
    if as_json:
        data = {
            "model": facts.model.name,
            "gpus": count,
            "gpu_memory_bytes": gpu_memory_used,
            "context": context,
            "weights_source": weights.source if weights else None,
            "rows": [
                {"layout": r.estimate.layout.words(), "tp": r.estimate.layout.tp, "pp": r.estimate.layout.pp,
                 "dp": r.estimate.layout.dp, "expert_parallel": r.estimate.layout.expert_parallel, "flags": r.flags,
                 "weights_bytes_per_gpu": r.estimate.weights_bytes_per_gpu, "kv_available_bytes":
                 r.estimate.kv_available_bytes, "max_model_len_fits": r.estimate.max_model_len_fits,
                 "concurrency": r.concurrency, "verdict": r.verdict}
                for r in rows
            ],
            "estimate": True,
        }
        ok = safe_write(stdout, dump(data, scrub) + "\n")
    else:
        table_rows = [
            [r.estimate.layout.words(), r.flags, _gib(r.estimate.weights_bytes_per_gpu),
             _gib(r.estimate.kv_available_bytes),
             f"{r.estimate.max_model_len_fits:,}" if r.estimate.max_model_len_fits is not None else "?",
             "-" if r.concurrency is None else str(r.concurrency), r.verdict]
            for r in rows
        ]
        footer = [
            f"concurrency: requests of {context:,} tokens at once (--max-model-len sets the length); max context: "
            "one request alone. Estimates (README: Will it fit?), not promises.",
        ]
        ok = render_table(title, ["layout", "flags", "weights/GPU GiB", "KV left GiB", "max context",
                                  f"conc. @{context // 1024}k", "verdict"], table_rows,
                          [STYLES.get(r.verdict) for r in rows], stdout, env, footer,
                          right=[False, False, True, True, True, True, False], scrub=scrub)
    if not ok:
        silence(stdout)
        err.error("cannot write the table to standard output")
        return exit_codes.OUTPUT_FAILED
    return exit_codes.OK

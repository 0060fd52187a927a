"""``dsv4-launch plan``: everything dsv4-serve does except running vLLM.

Exits with the status dsv4-serve would have before the hand-over (0; 2 when it would refuse or
the input is bad; 127 without a vLLM to hand over to), and 2 as well when the installed vLLM's
own parser certainly rejects the arguments — so it serves as a gate; ``--json`` prints the object
in every case. A closed pipe (``plan | head -1``) is no error; another failure to write is exit
74 (docs/output.md, "Reporting never stops vLLM").
"""

from __future__ import annotations

from collections.abc import Sequence

from ..core.memory.verdicts import summary_line
from ..output.documents import memory_data, plan_document, rejected_line
from ..output.render import Out, Result, render
from ..output.report import report_plan
from .context import Context, here
from .own_options import NEAR_MISSES, PLANNING, Command, NearMiss, planning_context
from .pipeline import PLAN, prepare_in


def plan_result(argv: list[str], ctx: Context, misses: Sequence[NearMiss] = ()) -> Result:
    """What ``plan ARGV`` has to show: the plan's lines or document, the one error line;
    ``misses``: the door's near misses of plan's options, handed to vLLM (in the document)."""
    prepared = prepare_in(ctx, argv, PLAN)

    def text(shown: Out) -> None:
        out = shown.lines
        if prepared.help_requested:
            out.info("the arguments ask vLLM for its help: dsv4-serve would hand them over unchanged")
        vllm = prepared.vllm
        report_plan(out, prepared.plan, prepared.facts, prepared.redact.shown_argv,
                    with_facts=True, vllm_version=vllm.version if vllm else None,
                    vllm_note=vllm.note if vllm else None, memory_line=summary_line(memory_data(prepared)))
        if prepared.rejected:
            out.error(rejected_line(prepared))

    # Bad input or an interrupt: no report, only the line (and the document); no vLLM: both.
    return Result(prepared.plan_status, COMMAND.prefix, "the plan", prepared.error or prepared.no_vllm,
                  plan_document(prepared, misses), None if prepared.error else text, prepared.redact)


def run_plan(argv: list[str], *, as_json: bool, ctx: Context | None = None, misses: Sequence[NearMiss] = ()) -> int:
    """``dsv4-launch plan [--json] ARGV``; ``ctx``: the world it reads (None: this process's)."""
    ctx = here(ctx)
    return render(plan_result(argv, ctx, misses), as_json=as_json, stdout=ctx.stdout, stderr=ctx.stderr,
                  env=ctx.env or {})


def _run(own: dict, rest: list[str], ctx: Context | None = None) -> int:
    return run_plan(rest, as_json=bool(own.get("json")), ctx=planning_context(own, ctx),
                    misses=own.get(NEAR_MISSES, ()))  # the door's (cli._run)


COMMAND = Command("plan", """Show what dsv4-serve would hand to vLLM, and why, without running it.

VLLM_ARGS are the arguments of `vllm serve`; plan's options may come anywhere before `--`, and
everything after `--` is vLLM's. --gpus and --gpu-memory plan for other GPUs than this machine's.
Exit status: what dsv4-serve's would be before vLLM starts (0, or 2 when it would refuse), or 2
when the installed vLLM's own option parser rejects the arguments (an unknown option, an invalid
choice, a missing value: vLLM would exit 2 with its own message), so it can gate a deployment.""",
                  PLANNING, _run, vllm_args=True, arguments="[VLLM_ARGS]...", pause_collector=True)

"""``dsv4-launch doctor``: the pipeline's facts and its reading of this machine (the runtime
report, GPUs, install hints: ``Prepared.machine``), the diagnosis; a table, plain lines or JSON.
Without a model it checks the machine for DeepSeek-V4-Flash. It imports no adapter: everything it
reads, the pipeline gathered."""

from __future__ import annotations

from collections.abc import Sequence

from ..core.credentials import clip
from ..core.rules.doctor import FAIL, OK, Diagnosis, DoctorLine, diagnose
from ..output.documents import near_misses, plan_document, rejected_line
from ..output.render import Out, Result, render
from . import exit_codes
from .context import Context, here
from .own_options import NEAR_MISSES, PLANNING, Command, NearMiss, planning_context
from .pipeline import DEFAULT_MODEL, DOCTOR, prepare_in

PLUGIN_ENTRY = "dsv4_launch"  # the name of our vllm.general_plugins entry point


def run_doctor(argv: list[str], *, as_json: bool, ctx: Context | None = None, misses: Sequence[NearMiss] = ()) -> int:
    """``dsv4-launch doctor [--json] ARGV``; ``ctx``: the world it reads — GPU reader, vLLM
    install, runtime reader (None: this process's)."""
    ctx = here(ctx)
    return render(doctor_result(argv, ctx, misses), as_json=as_json, stdout=ctx.stdout, stderr=ctx.stderr,
                  env=ctx.env or {})


def doctor_result(argv: list[str], ctx: Context, misses: Sequence[NearMiss] = ()) -> Result:
    """What doctor has to show: its lines as a table or a document, or the one error line;
    ``misses``: the door's near misses of doctor's options, handed to vLLM (in the document)."""
    env = ctx.env or {}
    # No model given: check this machine for DeepSeek-V4 itself, not vLLM's default model.
    prepared = prepare_in(ctx, argv, DOCTOR, default_model=DEFAULT_MODEL)
    defaulted = prepared.facts is not None and prepared.facts.args.tokens[:1] == (DEFAULT_MODEL,) and \
        tuple(argv[:1]) != (DEFAULT_MODEL,)
    note = f"no model given: checked for {DEFAULT_MODEL}" if defaulted else None
    layout = prepared.facts.args.tokens[1:] if prepared.facts is not None and not argv else ()
    if note and layout:  # a layout of the visible GPUs (adapters/gather.py), not vLLM's TP 1
        note += f" at {' '.join(layout)} (every visible GPU; give your own layout to check it)"
    scrub = prepared.redact  # the run's one redactor (pipeline.prepare): render applies it to what is printed
    if prepared.error:
        return Result(prepared.status, COMMAND.prefix, "the report", prepared.error,
                      _document(prepared, Diagnosis(), prepared.status, prepared.error, misses), None, scrub)
    failure = prepared.machine.failure if prepared.machine else None  # in the pipeline's reading of the machine
    if failure is None:
        try:
            diagnosis = _diagnose(prepared, env)
        except Exception as exc:
            if prepared.settings and prepared.settings.debug:
                raise
            failure = exc
    if failure is not None:  # never a traceback of ours: said as a failed line
        line = (f"internal error: {type(failure).__name__}: {clip(scrub(str(failure)), 160)} "
                "(DSV4_LAUNCH_DEBUG=1 shows the traceback)")
        diagnosis = Diagnosis((DoctorLine("doctor", FAIL, line),))
    if prepared.rejected:
        diagnosis = diagnosis._replace(lines=(*diagnosis.lines, DoctorLine("arguments", FAIL, rejected_line(prepared))))
    if note:  # said on the model's own line: one line per model
        diagnosis = diagnosis._replace(lines=_with_note(diagnosis.lines, note))
    status = exit_codes.DOCTOR_FAILED if diagnosis.failed else exit_codes.OK

    def text(out: Out) -> None:
        out.diagnosis(diagnosis)

    document = _document(prepared, diagnosis, status, None, misses)
    return Result(status, COMMAND.prefix, "the report", None, document, text, scrub)


def _with_note(lines: tuple[DoctorLine, ...], note: str) -> tuple[DoctorLine, ...]:
    """``note`` added to the first ``model`` line (a line of its own when there is none)."""
    at = next((i for i, line in enumerate(lines) if line.section == "model"), None)
    if at is None:
        return (DoctorLine("model", OK, note), *lines)
    return (*lines[:at], lines[at]._replace(detail=f"{lines[at].detail} — {note}"), *lines[at + 1:])


def _document(prepared, diagnosis: Diagnosis, status: int, error: str | None, misses: Sequence[NearMiss]) -> dict:
    """doctor --json: plan's error shape (``exit_status``, ``error``: null or the one line said
    on stderr) plus the checks, the door's near misses, and the plan itself (output/documents.py)."""
    return {
        "ok": error is None and not diagnosis.failed, "exit_status": status, "error": error,
        "checks": [{"section": c.section, "status": c.status, "detail": c.detail} for c in diagnosis.lines],
        "near_misses": near_misses(misses),  # new in schema 1; the plan below lists them too, as plan --json does
        "plan": plan_document(prepared, misses),
    }


def _diagnose(prepared, env) -> Diagnosis:
    """The diagnosis of the pipeline's plan and its reading of this machine (``Prepared.machine``)."""
    machine = prepared.machine
    return diagnose(prepared.plan, prepared.facts, machine.gpus, machine.runtime, env,
                    install_hint=machine.install_hint, plugin_entry=PLUGIN_ENTRY, plugin_hint=machine.plugin_hint)


def _run(own: dict, rest: list[str], ctx: Context | None = None) -> int:
    return run_doctor(rest, as_json=bool(own.get("json")), ctx=planning_context(own, ctx),
                      misses=own.get(NEAR_MISSES, ()))  # the door's (cli._run)


COMMAND = Command("doctor", """Check everything that decides whether DeepSeek-V4 will start here.

GPUs, driver, Python, vLLM, PyTorch and its CUDA architectures, FlashInfer, the vLLM plugin, the
model given in VLLM_ARGS (DeepSeek-V4-Flash when none is given) and the plan for it (for --gpus
and --gpu-memory when given). Exit 0 when nothing fails, 1 when something would.""",
                  PLANNING, _run, vllm_args=True, arguments="[VLLM_ARGS]...", pause_collector=True)

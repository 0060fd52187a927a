"""The one preparation serve, plan, doctor and fit go through: ``prepare(argv, env, purpose) → Prepared``
(``prepare_in(ctx, argv, purpose)``: with the environment, GPU reader, vLLM and runtime reader of
the command's ``context.Context``).

``dsv4-serve``, ``plan``, ``doctor`` and ``fit`` call ``prepare_in`` with argv; the vLLM plugin
calls ``prepare_engine`` with vLLM's ``EngineArgs``. Both run ``_through_the_pipeline``: the
same off switch, settings, fact gathering (``adapters/gather.gather_facts``), rule rows and plan
— only where the arguments are read from differs (tests/commands/test_agreement.py compares the two on
the rule matrix). For doctor it also reads this machine (``adapters/gather.gather_machine``:
``Prepared.machine``), for plan and doctor whether there is a vLLM to hand over to
(``Prepared.no_vllm``): no command gathers anything itself. It decides, for every command, the
off switch, help, the probing policy, interrupts and bad input:

* ``DSV4_LAUNCH_DISABLE=1`` (or any value that is not clearly off): nothing is read or probed;
  the arguments go to vLLM unchanged;
* bad input (a ``DSV4_LAUNCH_PREFLIGHT``/``_GPU_*`` value, a ``--config`` file vLLM would die
  on): exit 2 with one line; an unclear on/off flag is a warning;
* Ctrl-C before vLLM starts: exit 130 with one line;
* anything unforeseen inside dsv4-launch: the arguments go to vLLM unchanged with a warning
  (``DSV4_LAUNCH_DEBUG=1`` raises instead) — never worse than plain ``vllm serve``.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping, Sequence

from ..adapters.gather import (
    READ_GPUS_ALWAYS,
    READ_GPUS_WHEN_DSV4,
    Gathered,
    Machine,
    gather,
    gather_engine,
    gather_machine,
)
from ..adapters.model_files import missing_local_model
from ..adapters.nvml import read_gpus as read_machine_gpus
from ..adapters.vllm_install import VllmInstall, find_vllm
from ..core.credentials import clip
from ..core.facts import Facts, GpuReport, HostFacts
from ..core.records import Record
from ..core.rules.plan import Plan, disabled_plan, make_plan
from ..core.settings import Settings, SettingsError, disable_switch, read_settings
from ..output.redact import NO_REDACT, Redactor
from ..vllm_cli.option_table import load_table
from ..vllm_cli.secrets import SecretSpans, conservative_spans, follow_edit
from ..vllm_cli.serve_args import ConfigFileError, apply_changes
from . import exit_codes
from .context import Context

SERVE, PLAN, DOCTOR, FIT, PLUGIN = "serve", "plan", "doctor", "fit", "plugin"
DEFAULT_MODEL = "deepseek-ai/DeepSeek-V4-Flash"  # what doctor and fit check when no model is given
_GPU_POLICY = {SERVE: READ_GPUS_WHEN_DSV4, PLAN: READ_GPUS_WHEN_DSV4, PLUGIN: READ_GPUS_WHEN_DSV4,
                 DOCTOR: READ_GPUS_ALWAYS, FIT: READ_GPUS_ALWAYS}


class Prepared(Record):
    """Everything a command needs to render or act."""

    status: int  # OK: hand over (serve); otherwise the exit status before vLLM
    argv: tuple[str, ...]  # what goes to `vllm serve`
    plan: Plan
    secrets: SecretSpans  # where the secrets are in ``argv``
    vllm: VllmInstall  # the vLLM found (or, interrupted before the lookup, one of unknown version)
    facts: Facts | None = None  # None: nothing was gathered (off switch, bad input)
    settings: Settings | None = None
    error: str | None = None  # the one line for bad input or an interrupt
    help_requested: bool = False
    # plan and doctor: the installed vLLM's own parser certainly rejects these arguments (its
    # message); plan exits 2 and doctor fails on it, while dsv4-serve hands them over unchanged
    # and vLLM prints its own error.
    rejected: str | None = None
    redact: Redactor = NO_REDACT  # the run's one redactor: what every command prints goes through it
    machine: Machine | None = None  # doctor: what it reads of this machine besides the facts
    no_vllm: str | None = None  # plan, doctor: dsv4-serve's one line when it would exit 127 here

    @property
    def plan_status(self) -> int:
        """plan's exit status (its document's, in doctor's too): dsv4-serve's before the hand-over,
        127 when it would find no vLLM to hand over to, and 2 when the installed vLLM's own parser
        certainly rejects the arguments (dsv4-serve hands those over; vLLM then exits 2 itself)."""
        if self.no_vllm:
            return exit_codes.NO_VLLM
        if self.rejected and self.status == exit_codes.OK:
            return exit_codes.REFUSED
        return self.status


def prepare(argv: Sequence[str], env: Mapping[str, str], purpose: str, *,
            read_gpus: Callable[[], GpuReport] | None = None, vllm: VllmInstall | None = None,
            default_model: str | None = None, read_runtime: Callable[..., tuple[dict | None, str | None]] | None = None,
            read_host: Callable[[str], HostFacts] | None = None) -> Prepared:
    """``read_gpus``/``vllm``/``read_runtime``/``read_host``: a ``Context``'s readers (None: the real
    ones). ``default_model``: the model to plan for when the arguments name none (doctor and fit
    check DeepSeek-V4, not vLLM's default); the plan's argv then starts with it. Doctor's reading of
    the machine and plan's and doctor's no-vLLM line are gathered here too."""
    argv = tuple(argv)
    read_gpus = read_gpus or read_machine_gpus
    try:
        prepared = _prepare(argv, env, purpose, read_gpus, vllm, default_model, read_host)
        if purpose == DOCTOR and prepared.error is None:
            prepared = _with_machine(prepared, env, read_gpus, read_runtime)
    except KeyboardInterrupt:  # Ctrl-C while probing or reading: vLLM has not started
        vllm = vllm or VllmInstall(version=None, importable=False, note="not looked up (interrupted)")
        prepared = Prepared(exit_codes.INTERRUPTED, argv, Plan(), _blind(argv, vllm), vllm,
                            error="interrupted before vLLM started")
    if purpose in (PLAN, DOCTOR):
        prepared = prepared._replace(no_vllm=_no_vllm(prepared))
    return _with_redactor(prepared, env)


def prepare_in(ctx: Context, argv: Sequence[str], purpose: str, *, default_model: str | None = None) -> Prepared:
    """``prepare`` in the world a command's ``Context`` gives: its environment, GPU reader, vLLM
    install and (doctor) runtime reader — each None field this process's own."""
    return prepare(argv, ctx.env or {}, purpose, read_gpus=ctx.read_gpus, vllm=ctx.vllm, default_model=default_model,
                   read_runtime=ctx.read_runtime, read_host=ctx.read_host)


def _with_machine(prepared: Prepared, env: Mapping[str, str], read_gpus: Callable[[], GpuReport],
                  read_runtime: Callable[..., tuple[dict | None, str | None]] | None) -> Prepared:
    """doctor: ``prepared`` with what it reads of this machine (``adapters/gather.gather_machine``).
    A failure inside it is carried (``Machine.failure``) for doctor to say as a failed line —
    never a traceback (DSV4_LAUNCH_DEBUG=1 raises it)."""
    try:
        machine = gather_machine(prepared.facts, prepared.vllm, env, read_gpus=read_gpus,
                                 read_runtime=read_runtime)
    except Exception as exc:
        if prepared.settings is not None and prepared.settings.debug:
            raise
        machine = Machine(failure=exc)
    return prepared._replace(machine=machine)


def _no_vllm(prepared: Prepared) -> str | None:
    """dsv4-serve's own one line when it would exit 127 here (nothing to hand over to), else None."""
    vllm = prepared.vllm
    if (prepared.status != exit_codes.OK or prepared.help_requested or vllm is None or vllm.importable
            or vllm.executable or vllm.assumed):
        return None
    from ..adapters.handover import NoVllm, hand_over

    try:
        hand_over((), vllm, {})  # neither importable nor on PATH: raises NoVllm at once, runs nothing
    except NoVllm as exc:
        return f"{exc} (dsv4-serve would exit 127)"
    return None


def _with_redactor(prepared: Prepared, env: Mapping[str, str]) -> Prepared:
    """``prepared`` with the run's redactor (``Redactor.for_argv``: the spans follow the edit)."""
    facts = prepared.facts
    more = facts.args.file_secrets if facts is not None else ()
    return prepared._replace(redact=Redactor.for_argv(prepared.argv, prepared.secrets, more, env))


def usage_redactor(words: Sequence[str], env: Mapping[str, str]) -> Redactor:
    """``Redactor.for_words`` for a line printed before the pipeline has read ``words`` (a usage
    error, a near miss's warning, bad input), with the secrets of the ``--config FILE`` they name
    (a file that cannot be read gives none: vLLM would refuse it anyway)."""
    words = list(words)
    head = words[: words.index("--")] if "--" in words else words
    more: list[str] = []
    if "--config" in head[:-1]:
        from ..adapters.config_file import load_config_file
        from ..vllm_cli.serve_args import config_secrets

        try:
            more = config_secrets(load_config_file(head[head.index("--config") + 1]))
        except Exception:  # noqa: BLE001 — a file vLLM cannot read holds nothing to mask here
            more = []
    return Redactor.for_words(words, env, more)


def _blind(argv: tuple[str, ...], vllm: VllmInstall) -> SecretSpans:
    """Secret spans without a parse: everything that may be one."""
    return conservative_spans(argv, load_table(vllm.version).option_strings)


def _prepare(argv, env, purpose, read_gpus, vllm, default_model=None, read_host=None) -> Prepared:
    vllm = vllm or find_vllm(env)

    def from_argv(settings: Settings) -> Gathered:
        return gather(argv, env, settings, read_gpus_when=_GPU_POLICY[purpose], read_gpus=read_gpus, vllm=vllm,
                      default_model=default_model, read_host=read_host, layout_for_visible=purpose == DOCTOR)

    return _through_the_pipeline(argv, env, purpose, vllm, from_argv)


def _through_the_pipeline(argv, env, purpose, vllm, source: Callable[[Settings], Gathered]) -> Prepared:
    """Every command's and the plugin's one path: off switch, settings, ``source`` (the facts,
    from argv or from vLLM's engine arguments), the plan, and for argv the edited argv."""
    disabled, unclear = disable_switch(env)
    if disabled:  # the off switch: before any other reading, so nothing else can interfere
        secrets = SecretSpans() if purpose in (SERVE, PLUGIN) else _blind(argv, vllm)
        plan = disabled_plan()
        if unclear:
            plan = plan._replace(warnings=(unclear,))
        return Prepared(exit_codes.OK, argv, plan, secrets, vllm)
    try:
        settings = read_settings(env)
    except SettingsError as exc:
        return Prepared(exit_codes.USAGE, argv, Plan(), _blind(argv, vllm), vllm, error=str(exc))
    try:
        gathered = source(settings)
    except ConfigFileError as exc:
        return Prepared(exit_codes.USAGE, argv, Plan(), _blind(argv, vllm), vllm, settings=settings, error=str(exc))
    except Exception as exc:
        return _passed_through(argv, vllm, settings, exc)
    facts = gathered.facts
    argv = facts.args.tokens or argv  # with the default model in front, when one was added
    if facts.args.help_requested:
        return Prepared(exit_codes.OK, argv, Plan(), facts.args.secrets, vllm, facts, settings,
                        help_requested=True)
    rejected = None
    try:
        plan = make_plan(facts, settings.preflight)
        if purpose != PLUGIN:  # the plugin runs inside vLLM, after vLLM read the arguments
            plan, rejected = _gate(plan, facts, env, purpose, settings.preflight, vllm)
        if settings.warnings:
            plan = plan._replace(warnings=(*settings.warnings, *plan.warnings))
        out = argv
        if purpose != PLUGIN:  # the plugin sets the engine's value itself
            plan, out = _verified(plan, argv, apply_changes(argv, plan.changes), gathered.table)
    except Exception as exc:
        return _passed_through(argv, vllm, settings, exc)
    status = exit_codes.REFUSED if plan.refusals else exit_codes.OK
    # The secrets' positions follow the edit (a change inserted before a bare "--" moves them).
    secrets = follow_edit(facts.args.secrets, argv, out)
    return Prepared(status, out, plan, secrets, vllm, facts, settings, rejected=rejected)


def _gate(plan: Plan, facts: Facts, env: Mapping[str, str], purpose: str, preflight: str,
          vllm: VllmInstall) -> tuple[Plan, str | None]:
    """What vLLM certainly fails on before it reads a rule's setting: arguments its own parser
    rejects (plan and doctor fail; dsv4-serve hands them over), the command repeated as the first
    word (``dsv4-serve serve MODEL``), a local model path that does not exist (refused like a
    rule's finding). Certain only with the installed release's own table (``accepted_values_exact``),
    else a warning; so is a missing path when the plan is for another machine's vLLM."""
    args = facts.args
    verified = facts.accepted_values_exact
    repeated = repeated_command(args.tokens)
    if args.rejection:
        plan = Plan(warnings=args.warnings, preflight=preflight)  # make_plan's early return, less its warning
        if repeated:
            line = (f"`{repeated}` as the first word{'s' if ' ' in repeated else ''}: dsv4-serve already means "
                    f"`vllm serve`, so vLLM reads {repeated.split()[0]!r} as the model and rejects the rest "
                    f"({args.rejection}); write `dsv4-serve MODEL [OPTIONS]`")
            return (_refused(plan, line, preflight) if verified else _warned(plan, line, facts)), None
        if verified and purpose in (PLAN, DOCTOR):
            return plan, args.rejection
        what = "rejects" if verified else "will likely reject"
        return plan._replace(warnings=(*plan.warnings, f"vLLM {what} these arguments ({args.rejection}); "
                                       "handing them over unchanged")), None
    if repeated and args.model == repeated.split()[0] and not os.path.isdir(args.model):
        line = (f"the model is {args.model!r}: dsv4-serve already means `vllm serve` (write `dsv4-serve MODEL "
                "[OPTIONS]`); vLLM looks for a model of that name")
        plan = plan._replace(warnings=(*plan.warnings, line))
    missing = missing_local_model(args, env)
    if missing:  # the line says what there is to say about the model: not also "from the name"
        said = f"model {args.model}: "
        plan = plan._replace(notes=tuple(n for n in plan.notes if not n.startswith(said)),
                             warnings=tuple(w for w in plan.warnings if not w.startswith(said)))
        if vllm.assumed or not (vllm.importable or vllm.executable):  # a plan for another machine's vLLM
            plan = plan._replace(warnings=(*plan.warnings, f"{missing} [on this machine]"))
        else:
            plan = _refused(plan, missing, preflight) if verified else _warned(plan, missing, facts)
    return plan, None


def repeated_command(tokens: Sequence[str]) -> str | None:
    """``serve`` (or ``vllm serve``) as the first word(s) after ``dsv4-serve``, which already means them."""
    if tokens[:1] == ("serve",):
        return "serve"
    if tuple(tokens[:2]) == ("vllm", "serve"):
        return "vllm serve"
    return None


def _refused(plan: Plan, line: str, preflight: str) -> Plan:
    """A certain failure, as a rule's refusal is treated under DSV4_LAUNCH_PREFLIGHT."""
    if preflight == "refuse":
        return plan._replace(refusals=(*plan.refusals, line))
    suffix = " [DSV4_LAUNCH_PREFLIGHT=warn: starting anyway]" if preflight == "warn" else ""
    return plan._replace(warnings=(*plan.warnings, line + suffix))


def _warned(plan: Plan, line: str, facts: Facts) -> Plan:
    release = f"vLLM {facts.vllm_version}" if facts.vllm_version else "this vLLM (version unknown)"
    return plan._replace(warnings=(*plan.warnings, f"{line} [verified on the releases dsv4-launch has tables for; "
                                   f"not verified for {release}]"))


def _verified(plan: Plan, argv: tuple[str, ...], out: tuple[str, ...], table) -> tuple[Plan, tuple[str, ...]]:
    """The edited argv, read again the way vLLM reads it: it must parse, and give each change's
    value. Where it would not (a value vLLM's own pre-processing moves past it, say), vLLM gets
    the user's arguments unchanged and a warning says what to add — never a command vLLM would
    reject that it would have accepted."""
    if not plan.changes:
        return plan, out
    from ..adapters.gather import read_args

    reread = read_args(out, table)
    wrong = [c for c in plan.changes if reread.value(c.option[2:].replace("-", "_")) != c.after]
    if not reread.rejection and not reread.unread and not wrong:
        return plan, out
    lost = ", ".join(f"{c.option} {c.after}" for c in plan.changes)
    warning = (f"could not write {lost} where vLLM reads it in these arguments; handing them over unchanged "
               f"(add it yourself: {plan.changes[0].reason})")
    return plan._replace(changes=(), warnings=(*plan.warnings, warning)), argv


def _passed_through(argv, vllm, settings: Settings, exc: Exception) -> Prepared:
    """A failure inside dsv4-launch itself: vLLM gets the arguments unchanged."""
    if settings.debug:
        raise exc
    secrets = _blind(argv, vllm)
    # masked before it is cut: a cut secret matches no form
    detail = clip(Redactor.for_argv(argv, secrets)(str(exc)), 160)
    warning = (f"dsv4-launch could not check these arguments (internal error: {type(exc).__name__}: {detail}); "
               "handing them to vLLM unchanged (DSV4_LAUNCH_DEBUG=1 shows the traceback)")
    return Prepared(exit_codes.OK, argv, Plan(warnings=(warning,)), secrets, vllm, settings=settings)


def prepare_engine(engine: object, model_name: str | None, hf_config: Mapping[str, object] | None,
                   vllm_version: str | None, env: Mapping[str, str], *,
                   read_gpus: Callable[[], GpuReport] | None = None) -> Prepared:
    """The same preparation for the vLLM plugin, where vLLM has parsed the arguments already:
    ``engine`` is vLLM's ``EngineArgs`` (its fields are read as the option table names them),
    ``hf_config`` the model config vLLM loaded. ``argv`` stays empty; the plugin applies the
    plan's change to the engine itself."""
    vllm = VllmInstall(version=vllm_version, importable=True)

    def from_engine(settings: Settings) -> Gathered:
        return gather_engine(engine, env, settings, vllm_version, model=model_name, hf_config=hf_config,
                             read_gpus=read_gpus or read_machine_gpus)

    prepared = _through_the_pipeline((), env, PLUGIN, vllm, from_engine)  # Ctrl-C here is vLLM's to handle
    return prepared._replace(redact=Redactor.for_engine(engine, env))

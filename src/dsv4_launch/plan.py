"""Facts in, plan out: the pure core of dsv4-launch.

``make_plan(facts)`` decides what to hand to ``vllm serve`` and why. It reads the rules from
``quirks.py``, never touches files, NVML or vLLM, and explains every decision from the same
data that made it.
"""

from __future__ import annotations

TYPE_CHECKING = False  # typing costs start-up time; annotations are strings
if TYPE_CHECKING:
    from typing import Any, Optional

from . import quirks
from .facts import Facts, attention_backend
from .gpus import GpuInfo, describe_kinds
from .preflight import run_checks
from .records import record
from .serve_args import KV_CACHE_DTYPE, option_name
from .versions import is_older


@record
class Change:
    option: str
    before: Optional[str]  # None: not set
    after: str
    reason: str
    reference: str


@record
class Plan:
    facts: Facts
    argv: tuple[str, ...]  # what goes to ``vllm serve``
    changes: tuple[Change, ...] = ()
    notes: tuple[str, ...] = ()  # decisions to leave something alone, and other information
    warnings: tuple[str, ...] = ()
    refusals: tuple[str, ...] = ()
    preflight: str = "refuse"  # DSV4_LAUNCH_PREFLIGHT mode the plan was made with


@record
class _KvVerdict:
    """What the KV rule says for one possible GPU."""

    major: int
    gpu: Optional[GpuInfo]  # None: a GPU of unknown type that may have this major
    path: Optional[quirks.KvPath]
    rewrite: bool


def _kv_verdicts(facts: Facts, backend: Optional[str]) -> list[_KvVerdict]:
    known = facts.known_gpus
    unknown = not facts.all_gpus or len(known) < len(facts.all_gpus)
    candidates: list[tuple[int, Optional[GpuInfo]]] = [(g.capability[0], g) for g in known]
    if unknown:
        candidates += [(major, None) for major in sorted(quirks.DSV4_MAJORS)]
    verdicts = []
    for major, gpu in candidates:
        path = quirks.kv_path(major, backend)
        rewrite = False
        if path is not None and path.layout == quirks.FP8_DS_MLA:
            older = is_older(facts.vllm_version, path.auto_fixed_in) if path.auto_fixed_in else False
            rewrite = path.always_rewrite or older is not False  # unknown version: rewrite
        verdicts.append(_KvVerdict(major, gpu, path, rewrite))
    return verdicts


def _gpu_words(verdicts: list[_KvVerdict]) -> str:
    named = [describe_kinds(v.gpu for v in verdicts if v.gpu is not None)]
    if any(v.gpu is None for v in verdicts):
        named.append("GPU of unknown type")
    return ", ".join(n for n in named if n)


def _vllm_words(facts: Facts) -> str:
    return f"vLLM {facts.vllm_version}" if facts.vllm_version else "vLLM (version unknown)"


def _kv_rule(facts: Facts, argv: list[str]) -> tuple[list[Change], list[str], list[str]]:
    """The ``--kv-cache-dtype auto`` crash on the fp8_ds_mla layout (vLLM #47174)."""
    changes: list[Change] = []
    notes: list[str] = []
    warnings: list[str] = []
    model = facts.model
    if not model.is_dsv4:
        return changes, notes, warnings
    arch = model.architecture or "DeepSeek-V4"
    current = facts.args.value("kv_cache_dtype")
    if current not in quirks.AUTO_VALUES:
        source = facts.args.source("kv_cache_dtype")
        notes.append(f"--kv-cache-dtype {current} ({source}) kept: values you set are never changed")
        return changes, notes, warnings

    backend = attention_backend(facts.args)
    verdicts = _kv_verdicts(facts, backend)
    needing = [v for v in verdicts if v.rewrite]
    plain = [v for v in verdicts if v.path is not None and v.path.layout == quirks.PLAIN_ROWS]
    shown = "auto" if current else "not set"
    if needing and plain:
        warnings.append(
            f"--kv-cache-dtype left {shown}: with --attention-backend {backend}, "
            f"{_gpu_words(plain)} stores plain KV rows (auto is right) but "
            f"{_gpu_words(needing)} needs fp8; set DSV4_LAUNCH_GPU_CAPABILITY or "
            "--kv-cache-dtype yourself"
        )
        return changes, notes, warnings
    if needing:
        unknown_gpu = any(v.gpu is None for v in needing)
        path = needing[0].path
        assert path is not None
        fixed = is_older(facts.vllm_version, path.auto_fixed_in) is False if path.auto_fixed_in else True
        where = f"{arch} on {_gpu_words(needing)}"
        if unknown_gpu:
            backend_words = "the default attention backend" if backend is None else backend
            where = f"{arch} with {backend_words} on any GPU it runs on (GPU type unknown)"
        if fixed:
            cause = (
                f"{where} stores the KV cache as fp8_ds_mla, whose only dtype is fp8 "
                f"({_vllm_words(facts)} picks it too; vLLM before {path.auto_fixed_in} "
                "crashes on 'auto')"
            )
        elif facts.vllm_version is None:
            cause = (
                f"{where} stores the KV cache as fp8_ds_mla, and vLLM before "
                f"{path.auto_fixed_in} crashes on 'auto' there (installed version unknown)"
            )
        else:
            cause = (
                f"{where} stores the KV cache as fp8_ds_mla, and {_vllm_words(facts)} "
                "crashes on 'auto' there"
            )
        changes.append(
            Change(
                option="--kv-cache-dtype",
                before=current,
                after=quirks.KV_FIX_VALUE,
                reason=cause,
                reference=quirks.CRASH_REFERENCE,
            )
        )
        _place_kv_value(argv)
        return changes, notes, warnings
    fine = [v for v in verdicts if v.path is not None]
    if plain and len(plain) == len(fine):
        notes.append(
            f"--kv-cache-dtype left {shown}: {_gpu_words(plain)} with --attention-backend "
            f"{backend} stores plain KV rows, where auto means bf16 and fp8 would mean "
            "per-tensor FP8"
        )
    elif fine:
        notes.append(
            f"--kv-cache-dtype left {shown}: {_vllm_words(facts)} resolves auto to "
            f"fp8_ds_mla itself on {_gpu_words(fine)} ({quirks.FIX_REFERENCE}, vLLM 0.30.0)"
        )
    return changes, notes, warnings


def _place_kv_value(argv: list[str]) -> None:
    """Write ``fp8`` where vLLM will read it, keeping every other token as it is.

    If the last command-line ``--kv-cache-dtype`` says ``auto``, its value is replaced in
    place, in the user's own spelling. Otherwise ``--kv-cache-dtype fp8`` goes at the end —
    never right after ``serve``, where vLLM's positional-model checks would break. (A bare
    ``--`` never gets here: vLLM rejects it, so such arguments are handed over untouched.)
    """
    last = None
    for i, token in enumerate(argv):
        if option_name(token) == KV_CACHE_DTYPE:
            last = i
    if last is not None:
        name, eq, value = argv[last].partition("=")
        if eq and value == "auto":
            argv[last] = f"{name}={quirks.KV_FIX_VALUE}"
            return
        if not eq and last + 1 < len(argv) and argv[last + 1] == "auto":
            argv[last + 1] = quirks.KV_FIX_VALUE
            return
    argv += ["--kv-cache-dtype", quirks.KV_FIX_VALUE]


def make_plan(facts: Facts, preflight: str = "refuse") -> Plan:
    """Decide what ``vllm serve`` gets. Pure: same facts, same plan.

    ``preflight`` is the DSV4_LAUNCH_PREFLIGHT mode: "refuse", "warn" or "off".
    """
    argv = list(facts.args.tokens)
    warnings: list[str] = list(facts.args.warnings)
    notes: list[str] = []
    if facts.args.rejection:
        warnings.append(
            f"vLLM will reject these arguments ({facts.args.rejection}); "
            "handing them over unchanged"
        )
        return Plan(facts=facts, argv=tuple(argv), warnings=tuple(warnings), preflight=preflight)
    if facts.args.unknown_options:
        warnings.append(
            "options unknown to dsv4-launch's table of vLLM "
            f"{facts.vllm_version or '(version unknown)'} options: "
            f"{', '.join(facts.args.unknown_options)}; passed through unchanged"
        )
    if facts.model.note and facts.model.is_dsv4_family:
        warnings.append(f"model {facts.model.name}: {facts.model.note}")
    if facts.model.is_dsv4_family and facts.gpu_error:
        skipped = "; GPU-specific checks skipped" if not facts.known_gpus else ""
        warnings.append(f"GPUs: {facts.gpu_error}{skipped}")
    notes.extend(facts.gpu_notes)
    if facts.gpus is not None:
        notes.extend(facts.gpus.notes)
    if (
        facts.model.is_dsv4_family
        and facts.args.value("distributed_executor_backend") == "ray"
        and facts.gpu_source != "DSV4_LAUNCH_GPU_CAPABILITY"
        and not facts.known_gpus
    ):
        warnings.append(
            "--distributed-executor-backend ray on a host that sees no GPU: this process decides "
            "the KV-cache dtype for every Ray worker without knowing their GPUs; set "
            "DSV4_LAUNCH_GPU_CAPABILITY to the workers' compute capability (e.g. 12.0)"
        )

    changes, kv_notes, kv_warnings = _kv_rule(facts, argv)
    notes.extend(kv_notes)
    warnings.extend(kv_warnings)

    refusals: list[str] = []
    if preflight == "off":
        if facts.model.is_dsv4_family:
            notes.append("pre-flight checks are off (DSV4_LAUNCH_PREFLIGHT=off)")
    else:
        findings = run_checks(facts)
        warnings.extend(findings.warnings)
        if preflight == "warn":
            warnings.extend(f"{p} [DSV4_LAUNCH_PREFLIGHT=warn: starting anyway]" for p in findings.problems)
        else:
            refusals.extend(findings.problems)
    return Plan(
        facts=facts,
        argv=tuple(argv),
        changes=tuple(changes),
        notes=tuple(notes),
        warnings=tuple(warnings),
        refusals=tuple(refusals),
        preflight=preflight,
    )


def plan_summary(plan: Plan) -> dict[str, Any]:
    """The plan as plain data (secrets not yet removed from ``argv``)."""
    facts = plan.facts
    gpus = facts.gpus.gpus if facts.gpus else ()
    return {
        "argv": list(plan.argv),
        "changes": [
            {
                "option": c.option,
                "before": c.before,
                "after": c.after,
                "reason": c.reason,
                "reference": c.reference,
            }
            for c in plan.changes
        ],
        "gpus": [
            {
                "index": g.index,
                "name": g.name,
                "compute_capability": g.capability_str,
                "uuid": g.uuid,
            }
            for g in gpus
        ],
        "gpus_ambiguous": bool(facts.gpus and facts.gpus.ambiguous),
        "gpu_source": facts.gpu_source,
        "gpu_error": facts.gpu_error,
        "model": {
            "name": facts.model.name,
            "architecture": facts.model.architecture,
            "source": facts.model.source,
        },
        "vllm_version": facts.vllm_version,
        "preflight": plan.preflight,
        "refusals": list(plan.refusals),
        "warnings": list(plan.warnings),
        "notes": list(plan.notes),
    }

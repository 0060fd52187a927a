"""``dsv4-launch doctor``, pure part: the pipeline's plan + machine checks → OK / WARN / FAIL.

``diagnose()`` turns the facts and the plan ``prepare`` made (the very plan ``plan`` and
``dsv4-serve`` act on) into report lines; what they say and how a row's verdict becomes doctor's:
docs/commands.md, "Doctor". The runtime rows (``doctor_rows.py``) go through the same
``rules.evaluate``. Every section works when its subject is missing and says so. The shell is
``commands/doctor.py``.
"""

from __future__ import annotations

from collections.abc import Mapping

from ..facts import GIVEN_GPUS, Facts, GpuReport
from ..gpus import GpuInfo
from ..memory.estimate import gib_text
from ..model import FAMILY_NAMES
from ..records import Record
from ..settings import GPU_CAPABILITY
from .engine import FAIL as FAIL_LEVEL
from .engine import REFUSE, evaluate_all
from .engine import WARN as WARN_LEVEL
from .kv_paths import CRASH_REFERENCE, CRASHES_BEFORE_FIX, FIX_REFERENCE
from .plan import Plan

# One vocabulary: a row's level, as doctor prints it (refuse and fail stop vLLM: FAIL).
OK, WARN, FAIL = "OK", "WARN", "FAIL"
STATUS_OF_LEVEL = {REFUSE: FAIL, FAIL_LEVEL: FAIL, WARN_LEVEL: WARN}


class DoctorLine(Record):
    """One line of doctor's report (a rule's callable is ``rules.Check``; this is not one)."""

    section: str
    status: str  # OK, WARN, FAIL
    detail: str


class VllmRuntime(Record):
    """What the interpreter that will run vLLM has; None for a part that could not be read."""

    python: str  # this interpreter: version (path)
    vllm_version: str | None = None
    vllm_where: str | None = None  # "this environment", "/path/to/vllm", None: missing
    report: Mapping[str, object] | None = None  # what adapters/runtime_probe.read_runtime read there
    report_error: str | None = None  # why there is no report


class Diagnosis(Record):
    lines: tuple[DoctorLine, ...] = ()  # shown as doctor's table; ``checks`` in its JSON
    subject: str = "DeepSeek-V4"  # what would not start: the model family checked, else "vLLM"

    @property
    def failed(self) -> bool:
        return any(line.status == FAIL for line in self.lines)

    @property
    def verdict(self) -> str:
        """The summary line: never "nothing known to fail" under a warning (one may say a kernel fails)."""
        if self.failed:
            return f"FAIL: {self.subject} would not start here"
        warned = sum(line.status == WARN for line in self.lines)
        return f"OK: nothing certain to fail; {_warnings(warned)} above" if warned else "OK: nothing known to fail"


def _warnings(count: int) -> str:
    return f"{count} warning{'' if count == 1 else 's'}"


def gpu_lines(report: GpuReport | None, visible: set[int], source: str | None) -> list[DoctorLine]:
    if source == GPU_CAPABILITY:
        return [DoctorLine("gpu", WARN, f"not probed: {GPU_CAPABILITY} replaces the probe")]
    if report is None or not report.gpus:
        why = report.error if report else "not probed"
        return [DoctorLine("gpu", FAIL, f"no GPU found ({why})")]
    lines = []
    if report.driver_version:
        cuda = f", CUDA driver {report.cuda_driver_version}" if report.cuda_driver_version else ""
        lines.append(DoctorLine("driver", OK, f"NVIDIA driver {report.driver_version}{cuda} ({report.source})"))
    elif report.source == GIVEN_GPUS:  # nobody read a driver: not a warning about this machine
        lines.append(DoctorLine("driver", OK, "not checked: the GPUs are the ones --gpus names, none was read here"))
    else:
        lines.append(DoctorLine("driver", WARN, f"driver version unknown ({report.source})"))
    for g in report.gpus:
        line = f"{g.index}: {g.describe()}, {gib_text(g.memory_total_bytes or None, 'memory unknown')}, "
        if report.source == GIVEN_GPUS:  # planned for, not seen: no UUID, no CUDA_VISIBLE_DEVICES to say
            line += "as --gpus names it"
        else:
            seen = "visible to CUDA" if g.index in visible else "hidden by CUDA_VISIBLE_DEVICES"
            line += f"{g.uuid or 'UUID unknown'}, {seen}"
        if g.capability is None:
            lines.append(DoctorLine("gpu", WARN, f"{line}: {g.error or 'compute capability unknown'}"))
        else:  # what a GPU can run is the rows' to say (gpu-too-old, …): in the plan's lines
            lines.append(DoctorLine("gpu", OK, line))
    return lines


def vllm_lines(runtime: VllmRuntime, install_hint: str, dsv4: bool = True) -> list[DoctorLine]:
    """Is vLLM there, and (for DeepSeek-V4) which side of the `auto` KV-cache fix it is on —
    the kv rule's own range and references (core/rules/kv_paths.py)."""
    if runtime.vllm_where is None:
        return [DoctorLine("vllm", FAIL, f"not installed: {install_hint}")]
    where = f" ({runtime.vllm_where})"
    if runtime.vllm_version is None:
        assumed = ": dsv4-serve assumes the `auto` crash" if dsv4 else ""
        return [DoctorLine("vllm", WARN, f"version unknown{where}{assumed}")]
    if not dsv4:
        return [DoctorLine("vllm", OK, f"{runtime.vllm_version}{where}")]
    if CRASHES_BEFORE_FIX.contains(runtime.vllm_version):
        return [DoctorLine("vllm", WARN, f"{runtime.vllm_version}{where}: has the `auto` KV-cache crash on "
                      f"fp8_ds_mla paths ({CRASH_REFERENCE}); dsv4-serve rewrites it")]
    return [DoctorLine("vllm", OK, f"{runtime.vllm_version}{where}: resolves `auto` on fp8_ds_mla itself "
                                   f"({FIX_REFERENCE})")]


def arch_coverage(cc: tuple[int, int], arch_flags: list[str]) -> str:
    """OK: a cubin for this GPU; WARN: only PTX to JIT; FAIL: nothing that runs."""
    major, minor = cc
    sm = {f.split("_", 1)[1] for f in arch_flags if f.startswith("sm_")}
    ptx = {f.split("_", 1)[1] for f in arch_flags if f.startswith("compute_")}

    def num(code: str) -> int | None:
        digits = code.rstrip("af")
        return int(digits) if digits.isascii() and digits.isdigit() and len(digits) < 6 else None

    # Cubins run on the same major with an equal or higher minor ("a"/"f" variants are
    # architecture-specific: exact match only).
    if any((n := num(c)) is not None and (n == major * 10 + minor if c.endswith(("a", "f"))
                                          else n // 10 == major and n % 10 <= minor) for c in sm):
        return OK
    if any((n := num(c)) is not None and n <= major * 10 + minor and not c.endswith("a") for c in ptx):
        return WARN
    return FAIL


def torch_lines(runtime: VllmRuntime, gpus: list[GpuInfo]) -> list[DoctorLine]:
    report = runtime.report
    if report is None:
        return [DoctorLine("torch", WARN, f"could not be inspected ({runtime.report_error or 'no Python with vLLM'})")]
    torch = report.get("torch")
    if not isinstance(torch, Mapping):
        why = report.get("torch_error")
        return [DoctorLine("torch", FAIL if runtime.vllm_where else WARN,
                      f"PyTorch cannot be imported ({why})" if why else "PyTorch is not installed")]
    version, cuda, arch = torch.get("version"), torch.get("cuda"), list(torch.get("arch_flags") or [])
    if not cuda:
        return [DoctorLine("torch", FAIL if gpus else WARN, f"{version}: a CPU-only build (no CUDA)")]
    lines = [DoctorLine("torch", OK, f"{version}, CUDA {cuda}, arch {' '.join(arch) or 'unknown'}")]
    for g in gpus:
        if g.capability is None or not arch:
            continue
        verdict = arch_coverage(g.capability, arch)
        what = {
            OK: f"this build has kernels for GPU {g.index} (SM {g.capability_str})",
            WARN: f"this build only has PTX for GPU {g.index} (SM {g.capability_str}): compiled at start-up, slowly",
            FAIL: f"this build has no kernels for GPU {g.index} (SM {g.capability_str}): 'no kernel image is "
            "available'; install a PyTorch built for it",
        }[verdict]
        lines.append(DoctorLine("torch", verdict, what))
    return lines


def flashinfer_line(runtime: VllmRuntime, judged: bool = False) -> DoctorLine | None:
    """FlashInfer as found; ``judged``: a row already says what its absence means (never
    `OK not installed` beside a row's `FAIL` for the same thing)."""
    report = runtime.report
    if report is None:
        return None
    fi = report.get("flashinfer")
    if not isinstance(fi, Mapping):
        return None if judged else DoctorLine("flashinfer", OK, "not installed")
    api = "present" if fi.get("sm120_sparse_mla") else "missing"
    return DoctorLine("flashinfer", OK, f"{fi.get('version') or 'version unknown'}, SM120 sparse-MLA decode API {api}")


def plugin_line(runtime: VllmRuntime, env: Mapping[str, str], our_entry: str,
                 plugin_hint: str | None = None) -> DoctorLine | None:
    """Is the dsv4-launch vLLM plugin installed where vLLM runs, and would vLLM load it?"""
    plugins = runtime.report.get("plugins") if runtime.report is not None else None
    if not isinstance(plugins, (list, tuple)):
        return None
    names = [p.get("name") for p in plugins if isinstance(p, Mapping)]
    if our_entry not in names:
        how = f"; to install it there: {plugin_hint}" if plugin_hint else ""
        return DoctorLine("plugin", OK, "not installed in vLLM's environment: plain `vllm serve`, LLM() and Ray "
                     f"workers there get no KV fix (README: Without changing your command){how}")
    # vllm/plugins/__init__.py load_plugins_by_group: ``plugin.name in envs.VLLM_PLUGINS``, the
    # variable split on "," as it is (envs.py): no blanks stripped, and "" is [""], loading none
    allowed = env.get("VLLM_PLUGINS")
    if allowed is not None and our_entry not in allowed.split(","):
        shown = repr(allowed) if not allowed.strip() else allowed
        return DoctorLine("plugin", WARN,
                          f"installed, but VLLM_PLUGINS={shown} does not list {our_entry}: vLLM will not load it")
    from ..settings import is_disabled

    if is_disabled(env):
        return DoctorLine("plugin", WARN, "installed, but DSV4_LAUNCH_DISABLE is set: it does nothing")
    return DoctorLine("plugin", OK,
                      "installed in vLLM's environment: `vllm serve`, LLM() and Ray workers get the KV fix too")


# The plan's notes that say checks were not made (core/rules/plan.py): WARN in doctor, not OK.
_SKIPPED = ("were skipped", "checks are off")


def plan_lines(plan: Plan, facts: Facts | None) -> list[DoctorLine]:
    lines = []
    if facts is not None and (facts.args.rejection or facts.args.unread):
        why = ("vLLM rejects these arguments" if facts.args.rejection
               else "some of vLLM's arguments are not visible here")
        lines.append(DoctorLine("model", WARN, f"not read ({why})"))
    elif facts is not None:
        m = facts.model
        what = m.architecture or m.model_type or "architecture unknown"
        source = f" (from {m.source})" if m.source else ""
        if m.is_dsv4_family:
            status = WARN if m.source == "the name" else OK
            lines.append(DoctorLine("model", status, f"{m.name}: {what}{source}"))
        else:
            lines.append(DoctorLine("model", OK,
                                    f"{m.name or 'vLLM default'}: {what}{source}; not DeepSeek-V4, passed through"))
    for change in plan.changes:
        lines.append(DoctorLine("plan", OK,
                                f"will set {change.option} {change.after}: {change.reason} ({change.reference})"))
    for note in plan.notes:  # a note that checks were skipped is no all-clear: the pre-flight's WARN
        skipped = any(w in note for w in _SKIPPED)
        lines.append(DoctorLine("preflight" if skipped else "plan", WARN if skipped else OK, note))
    for warning in plan.warnings:
        lines.append(DoctorLine("plan", WARN, warning))
    for refusal in plan.refusals:
        lines.append(DoctorLine("preflight", FAIL, refusal))
    if facts is not None and facts.model.is_dsv4_family and plan.preflight != "off" and not plan.refusals \
            and not plan.disabled:
        said = f"no certain start-up failure, {_warnings(len(plan.warnings))}" if plan.warnings \
            else "no known start-up failure"
        lines.append(DoctorLine("preflight", OK, f"{said} (mode {plan.preflight})"))
    return lines


def diagnose(plan: Plan, facts: Facts | None, gpu_report: GpuReport | None, runtime: VllmRuntime,
             env: Mapping[str, str], *, install_hint: str, plugin_entry: str,
             plugin_hint: str | None = None) -> Diagnosis:
    from .registry import DOCTOR_RULES

    used = list(facts.all_gpus) if facts else []  # every candidate when the mapping is ambiguous
    family = facts.model.family if facts is not None else "deepseek_v4"
    found = []
    if facts is not None and runtime.report is not None:
        found = [DoctorLine(f.section, STATUS_OF_LEVEL[f.level], f.text)
                 for f in evaluate_all(DOCTOR_RULES, facts._replace(runtime=runtime.report))]
    lines = [
        *gpu_lines(gpu_report, {g.index for g in used}, facts.gpus.source if facts else None),
        DoctorLine("python", OK, runtime.python),
        *vllm_lines(runtime, install_hint, family in FAMILY_NAMES),
        *torch_lines(runtime, used),
    ]
    judged = any(c.section == "flashinfer" for c in found)  # a row's verdict replaces the plain line
    extra = (flashinfer_line(runtime, judged), plugin_line(runtime, env, plugin_entry, plugin_hint))
    lines += [*(line for line in extra if line is not None), *found, *plan_lines(plan, facts)]
    return Diagnosis(tuple(lines), FAMILY_NAMES.get(family or "", "vLLM"))

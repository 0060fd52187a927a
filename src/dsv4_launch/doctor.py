"""``dsv4-launch doctor``: everything that decides whether DeepSeek-V4 will start here.

``diagnose()`` is pure: it turns gathered facts (GPUs, driver, Python, vLLM, PyTorch,
FlashInfer, the model and the plan) into checks, each OK / WARN / FAIL with a one-line reason.
Every section works when its subject is missing and says so. The shell that gathers the facts
and prints the report is ``doctor_command.py``.
"""

from __future__ import annotations

TYPE_CHECKING = False  # typing costs start-up time; annotations are strings
if TYPE_CHECKING:
    from typing import Any, Mapping, Optional

from . import quirks
from .gpus import GpuInfo
from .nvml import GpuProbe
from .plan import Plan
from .records import record
from .versions import is_older

OK, WARN, FAIL = "OK", "WARN", "FAIL"


@record
class Check:
    section: str
    status: str  # OK, WARN, FAIL
    detail: str


@record
class Environment:
    """What the interpreter that will run vLLM has; None for a part that could not be read."""

    python: str
    vllm_version: Optional[str] = None
    vllm_where: Optional[str] = None  # "this environment", "/path/to/vllm", None: missing
    runtime: Optional[Mapping[str, Any]] = None  # torch/FlashInfer probe (see doctor_command)
    runtime_error: Optional[str] = None


@record
class Diagnosis:
    checks: tuple[Check, ...] = ()

    @property
    def failed(self) -> bool:
        return any(c.status == FAIL for c in self.checks)


def _gib(n: Optional[int]) -> str:
    return f"{n / 2**30:.1f} GiB" if n else "memory unknown"


def gpu_checks(probe: Optional[GpuProbe], visible: set[int], source: Optional[str]) -> list[Check]:
    if source == "DSV4_LAUNCH_GPU_CAPABILITY":
        return [Check("gpu", WARN, "not probed: DSV4_LAUNCH_GPU_CAPABILITY replaces the probe")]
    if probe is None or not probe.gpus:
        why = probe.error if probe else "not probed"
        return [Check("gpu", FAIL, f"no GPU found ({why})")]
    checks = []
    if probe.driver_version:
        cuda = f", CUDA driver {probe.cuda_driver_version}" if probe.cuda_driver_version else ""
        checks.append(Check("driver", OK, f"NVIDIA driver {probe.driver_version}{cuda} ({probe.source})"))
    else:
        checks.append(Check("driver", WARN, f"driver version unknown ({probe.source})"))
    for g in probe.gpus:
        seen = "visible to CUDA" if g.index in visible else "hidden by CUDA_VISIBLE_DEVICES"
        line = f"{g.index}: {g.describe()}, {_gib(g.memory_total_bytes)}, {g.uuid or 'UUID unknown'}, {seen}"
        if g.capability is None:
            checks.append(Check("gpu", WARN, f"{line}: {g.error or 'compute capability unknown'}"))
        elif g.capability[0] < quirks.MIN_MAJOR:
            status = FAIL if g.index in visible else WARN
            checks.append(Check("gpu", status, f"{line}: DeepSeek-V4 needs SM 9.0 or newer"))
        else:
            checks.append(Check("gpu", OK, line))
    return checks


def vllm_checks(env: Environment) -> list[Check]:
    if env.vllm_where is None:
        return [Check("vllm", FAIL, "not installed: pip install 'dsv4-launch[vllm]' or put vLLM's bin/ on PATH")]
    where = f" ({env.vllm_where})"
    if env.vllm_version is None:
        return [Check("vllm", WARN, f"version unknown{where}: dsv4-serve assumes the `auto` crash")]
    crash = is_older(env.vllm_version, "0.30.0")
    if crash:
        return [Check("vllm", WARN, f"{env.vllm_version}{where}: has the `auto` KV-cache crash on "
                      "fp8_ds_mla paths (vLLM #47174); dsv4-serve rewrites it")]
    return [Check("vllm", OK, f"{env.vllm_version}{where}: resolves `auto` on fp8_ds_mla itself (vLLM #45091)")]


def _arch_coverage(cc: tuple[int, int], arch_flags: list[str]) -> str:
    """OK: a cubin for this GPU; WARN: only PTX to JIT; FAIL: nothing that runs."""
    major, minor = cc
    sm = {f.split("_", 1)[1] for f in arch_flags if f.startswith("sm_")}
    ptx = {f.split("_", 1)[1] for f in arch_flags if f.startswith("compute_")}

    def num(code: str) -> Optional[int]:
        digits = code.rstrip("af")
        return int(digits) if digits.isdigit() else None

    # Cubins run on the same major with an equal or higher minor ("a"/"f" variants are
    # architecture-specific: exact match only).
    for code in sm:
        n = num(code)
        if n is None:
            continue
        if code.endswith(("a", "f")):
            if n == major * 10 + minor:
                return OK
        elif n // 10 == major and n % 10 <= minor:
            return OK
    if any((n := num(c)) is not None and n <= major * 10 + minor and not c.endswith("a") for c in ptx):
        return WARN
    return FAIL


def runtime_checks(env: Environment, gpus: list[GpuInfo]) -> list[Check]:
    rt = env.runtime
    if rt is None:
        return [Check("torch", WARN, f"could not be inspected ({env.runtime_error or 'no Python with vLLM'})")]
    checks = []
    torch = rt.get("torch")
    if not torch:
        checks.append(Check("torch", FAIL if env.vllm_where else WARN, "PyTorch is not installed"))
    else:
        version, cuda, arch = torch.get("version"), torch.get("cuda"), torch.get("arch_flags") or []
        if not cuda:
            checks.append(Check("torch", FAIL if gpus else WARN, f"{version}: a CPU-only build (no CUDA)"))
        else:
            checks.append(Check("torch", OK, f"{version}, CUDA {cuda}, arch {' '.join(arch) or 'unknown'}"))
            for g in gpus:
                if g.capability is None or not arch:
                    continue
                verdict = _arch_coverage(g.capability, arch)
                what = {
                    OK: f"this build has kernels for GPU {g.index} (SM {g.capability_str})",
                    WARN: f"this build only has PTX for GPU {g.index} (SM {g.capability_str}): "
                    "compiled at start-up, slowly",
                    FAIL: f"this build has no kernels for GPU {g.index} (SM {g.capability_str}): "
                    "'no kernel image is available'; install a PyTorch built for it",
                }[verdict]
                checks.append(Check("torch", verdict, what))
    fi = rt.get("flashinfer")
    sm12 = [g for g in gpus if g.capability and g.capability[0] == 12]
    if not fi:
        status = FAIL if sm12 else OK
        checks.append(Check("flashinfer", status, "not installed" + (": SM 12.x needs it for DeepSeek-V4" if sm12 else "")))
    else:
        api = fi.get("sm120_sparse_mla")
        line = f"{fi.get('version') or 'version unknown'}, SM120 sparse-MLA decode API {'present' if api else 'missing'}"
        if sm12 and not api:
            checks.append(Check("flashinfer", FAIL, f"{line}: vLLM refuses FLASHINFER_MLA_SPARSE_DSV4 on SM 12.x without it"))
        else:
            checks.append(Check("flashinfer", OK, line))
    return checks


def plan_checks(plan: Plan) -> list[Check]:
    facts = plan.facts
    m = facts.model
    checks = []
    what = m.architecture or m.model_type or "architecture unknown"
    if m.is_dsv4_family:
        status = OK if m.source != "name" else WARN
        checks.append(Check("model", status, f"{m.name}: {what} (from {m.source})"))
    else:
        checks.append(Check("model", OK, f"{m.name or 'vLLM default'}: {what} (from {m.source}); not DeepSeek-V4, passed through"))
    for change in plan.changes:
        checks.append(Check("plan", OK, f"will set {change.option} {change.after}: {change.reason} ({change.reference})"))
    for note in plan.notes:
        checks.append(Check("plan", OK, note))
    for warning in plan.warnings:
        checks.append(Check("plan", WARN, warning))
    for refusal in plan.refusals:
        checks.append(Check("preflight", FAIL, refusal))
    if m.is_dsv4_family and plan.preflight != "off" and not plan.refusals:
        checks.append(Check("preflight", OK, f"no known start-up failure (mode {plan.preflight})"))
    return checks


def diagnose(plan: Plan, probe: Optional[GpuProbe], env: Environment) -> Diagnosis:
    facts = plan.facts
    used = list(facts.all_gpus)  # every candidate when the mapping is ambiguous
    visible = {g.index for g in used}
    checks = [
        *gpu_checks(probe, visible, facts.gpu_source),
        Check("python", OK, env.python),
        *vllm_checks(env),
        *runtime_checks(env, used),
        *plan_checks(plan),
    ]
    return Diagnosis(tuple(checks))

"""Read the GPUs through NVML (``nvidia-ml-py``), falling back to ``nvidia-smi``.

An adapter: every NVML failure degrades to "unknown" with a one-line reason; nothing here
raises. NVML is always shut down before returning, and CUDA is never touched, so vLLM starts
with a clean process. A failed init: ``nvidia-smi`` is tried; one device that fails stays in the
list (indices keep their meaning) with unknown fields and the reason; an old driver without
``nvmlDeviceGetCudaComputeCapability``: ``nvidia-smi --query-gpu=compute_cap`` is asked.
"""

from __future__ import annotations

from collections.abc import Callable
from types import ModuleType

from ..core.credentials import excerpt
from ..core.facts import GpuReport
from ..core.gpus import GpuInfo, is_ascii_int, parse_capability

NVIDIA_SMI_QUERY = "index,uuid,name,compute_cap,memory.total"


def read_gpus(load_nvml: Callable[[], ModuleType] | None = None,
              run_smi: Callable[[list[str]], tuple[str | None, str | None]] | None = None) -> GpuReport:
    """Ask NVML, then nvidia-smi where NVML could not answer. Never raises."""
    nvml_probe = _read_nvml(load_nvml or _import_pynvml)
    missing_cc = [g for g in nvml_probe.gpus if g.capability is None]
    if nvml_probe.gpus and not missing_cc:
        return nvml_probe
    smi = _read_smi(run_smi or _run_nvidia_smi)
    if not nvml_probe.gpus:
        if smi.gpus:
            return smi._replace(notes=(f"NVML unavailable ({nvml_probe.error}); used nvidia-smi",))
        error = nvml_probe.error or "NVML reported no GPU"
        if smi.error:
            error = f"{error}; {smi.error}"
        return nvml_probe._replace(error=error)
    # NVML listed GPUs but some capabilities are unknown: fill them from nvidia-smi by UUID.
    by_uuid = {g.uuid: g for g in smi.gpus if g.uuid}
    filled = []
    for gpu in nvml_probe.gpus:
        other = by_uuid.get(gpu.uuid) if gpu.uuid else None
        if gpu.capability is None and other is not None and other.capability is not None:
            gpu = gpu._replace(capability=other.capability, error=None)
        filled.append(gpu)
    return nvml_probe._replace(gpus=tuple(filled))


def _import_pynvml():
    """nvidia-ml-py's ``pynvml``, imported plainly (with the ``ctypes.util`` it imports: vLLM
    imports that module itself right after the hand-over, so a start pays for it either way)."""
    import pynvml  # nvidia-ml-py

    return pynvml


def _reason(exc: BaseException) -> str:
    """A one-line reason for an NVML error, naming the likely cause where it is known."""
    name = type(exc).__name__.replace("NVMLError_", "")
    hints = {
        "LibraryNotFound": "NVIDIA driver library libnvidia-ml.so.1 not found (no driver, or a container started "
        "without GPU access)",
        "DriverNotLoaded": "NVIDIA driver not loaded",
        "LibRmVersionMismatch": "NVIDIA driver and library versions differ (driver upgraded; reboot needed)",
        "NoPermission": "no permission to query this GPU",
        "GpuIsLost": "GPU is lost (fell off the bus)",
        "FunctionNotFound": "driver too old for this query",
    }
    detail = hints.get(name)
    text = str(exc).strip() or name
    return f"NVML: {detail}" if detail else f"NVML: {text}"


def _read_nvml(load_nvml: Callable[[], ModuleType]) -> GpuReport:
    try:
        nvml = load_nvml()
    except Exception as exc:  # ImportError and friends: bindings not installed
        return GpuReport(error=f"NVML bindings unavailable ({exc}); install nvidia-ml-py")
    try:
        nvml.nvmlInit()
    except Exception as exc:
        return GpuReport(error=_reason(exc))
    try:
        driver = _call_str(nvml, "nvmlSystemGetDriverVersion")
        cuda_version = None
        try:
            raw = nvml.nvmlSystemGetCudaDriverVersion()
            cuda_version = f"{raw // 1000}.{raw % 1000 // 10}"
        except Exception:
            pass
        try:
            count = nvml.nvmlDeviceGetCount()
        except Exception as exc:
            return GpuReport(error=_reason(exc), driver_version=driver)
        gpus = tuple(_read_device(nvml, i) for i in range(count))
        errors = "; ".join(f"GPU {g.index}: {g.error}" for g in gpus if g.error)
        return GpuReport(gpus=gpus, source="nvml", error=errors or None, driver_version=driver,
                         cuda_driver_version=cuda_version)
    finally:
        try:
            nvml.nvmlShutdown()
        except Exception:
            pass


def _call_str(nvml, fn: str, *args) -> str | None:
    try:
        value = getattr(nvml, fn)(*args)
    except Exception:
        return None
    return _text(value)


def _text(value) -> str | None:
    """NVML strings come as bytes from old bindings; undecodable bytes are kept as escapes."""
    if value is None:
        return None
    return value.decode("utf-8", "backslashreplace") if isinstance(value, bytes) else str(value)


def _read_device(nvml, index: int) -> GpuInfo:
    try:
        handle = nvml.nvmlDeviceGetHandleByIndex(index)
    except Exception as exc:
        return GpuInfo(index=index, error=_reason(exc))
    errors: list[str] = []

    def ask(fn: str, *args):
        try:
            return getattr(nvml, fn)(handle, *args)
        except Exception as exc:
            errors.append(_reason(exc))
            return None

    name = ask("nvmlDeviceGetName")
    uuid = ask("nvmlDeviceGetUUID")
    cc = ask("nvmlDeviceGetCudaComputeCapability")
    mem = None
    try:
        mem = nvml.nvmlDeviceGetMemoryInfo(handle).total
    except Exception:
        pass  # memory is informative only
    return GpuInfo(index=index, name=_text(name), uuid=_text(uuid), capability=(int(cc[0]), int(cc[1])) if cc else None,
                   memory_total_bytes=mem, mig_uuids=_mig_uuids(nvml, handle), error=errors[0] if errors else None)


def _mig_uuids(nvml, handle) -> tuple[str, ...]:
    try:
        count = nvml.nvmlDeviceGetMaxMigDeviceCount(handle)
    except Exception:
        return ()  # MIG not supported or not enabled
    found = []
    for i in range(count):
        try:
            mig = nvml.nvmlDeviceGetMigDeviceHandleByIndex(handle, i)
            uuid = nvml.nvmlDeviceGetUUID(mig)
        except Exception:
            continue  # empty slot
        text = _text(uuid)
        if text is not None:  # a UUID that is not text names nothing CUDA_VISIBLE_DEVICES could
            found.append(text)
    return tuple(found)


SMI_TIMEOUT_S = 15


def _run_nvidia_smi(cmd: list[str]) -> tuple[str | None, str | None]:
    """nvidia-smi's output, or (None, why not). Its bytes are decoded leniently: a driver's
    odd GPU name must not stop anything."""
    import os
    import shutil
    import subprocess

    # Only absolute PATH entries: an empty or "." entry would run a ./nvidia-smi planted in the
    # working directory (a downloaded model folder, say).
    path = os.pathsep.join(d for d in os.environ.get("PATH", "").split(os.pathsep) if os.path.isabs(d))
    exe = shutil.which(cmd[0], path=path)
    if exe is None:
        return None, "nvidia-smi not found on PATH"
    try:
        done = subprocess.run([exe, *cmd[1:]], capture_output=True, timeout=SMI_TIMEOUT_S, check=False)
    except subprocess.TimeoutExpired:
        return None, f"nvidia-smi timed out after {SMI_TIMEOUT_S} s"
    except (OSError, subprocess.SubprocessError) as exc:
        return None, f"nvidia-smi could not run ({getattr(exc, 'strerror', None) or exc})"
    if done.returncode != 0:
        last = (done.stderr or done.stdout).decode("utf-8", "backslashreplace").strip().splitlines()
        return None, f"nvidia-smi failed (exit {done.returncode}{': ' + excerpt(last[-1], 160) if last else ''})"
    return done.stdout.decode("utf-8", "backslashreplace"), None


def _read_smi(run: Callable[[list[str]], tuple[str | None, str | None]]) -> GpuReport:
    out, why = run(["nvidia-smi", f"--query-gpu={NVIDIA_SMI_QUERY}", "--format=csv,noheader,nounits"])
    if out is None:
        return GpuReport(error=why or "nvidia-smi gave no answer")
    gpus = []
    for line in out.splitlines():
        fields = [f.strip() for f in line.split(",")]
        if len(fields) < 4 or not is_ascii_int(fields[0]) or len(fields[0]) > 6:
            continue
        try:
            cc = parse_capability(fields[3])
        except ValueError:
            cc = None  # "[N/A]" or "[Not Supported]" from old drivers
        mem = None
        if len(fields) > 4 and is_ascii_int(fields[4]) and len(fields[4]) < 16:
            mem = int(fields[4]) * 1024 * 1024  # MiB with nounits
        why = None if cc else "nvidia-smi: compute capability not reported"
        gpus.append(GpuInfo(index=int(fields[0]), uuid=fields[1] or None, name=fields[2] or None, capability=cc,
                            memory_total_bytes=mem, error=why))
    return GpuReport(gpus=tuple(gpus), source="nvidia-smi") if gpus else GpuReport(error="nvidia-smi listed no GPU")

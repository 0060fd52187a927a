"""Read the GPUs through NVML (``nvidia-ml-py``), falling back to ``nvidia-smi``.

This is an adapter: it only gathers facts. Every NVML failure degrades to "unknown" with a
one-line reason; nothing here raises. NVML is always shut down before returning, and CUDA is
never touched (no torch, no CUDA driver API), so vLLM starts with a clean process.

Failure modes and what they become:

* library missing / driver not loaded / driver-library mismatch / any init failure: no GPU
  list from NVML, the reason is kept, and ``nvidia-smi`` is tried;
* no permission on one device, GPU lost, unknown error: that device stays in the list (so
  indices keep their meaning) with unknown fields and the reason;
* old driver without ``nvmlDeviceGetCudaComputeCapability`` (FunctionNotFound): the
  capability is unknown, and ``nvidia-smi --query-gpu=compute_cap`` is asked for it.
"""

from __future__ import annotations

import sys
from collections.abc import Callable

from ..core.gpus import GpuInfo, is_ascii_int, parse_capability
from ..core.records import record

NVIDIA_SMI_QUERY = "index,uuid,name,compute_cap,memory.total"


@record
class GpuProbe:
    """What the machine said about its GPUs."""

    gpus: tuple[GpuInfo, ...] = ()
    source: str | None = None  # "nvml", "nvidia-smi", or None when nothing answered
    error: str | None = None  # why the list is missing or incomplete
    driver_version: str | None = None
    cuda_driver_version: str | None = None
    notes: tuple[str, ...] = ()


def probe_gpus(
    load_nvml: Callable[[], object] | None = None,
    run_smi: Callable[[list[str]], tuple[str | None, str | None]] | None = None,
) -> GpuProbe:
    """Ask NVML, then nvidia-smi where NVML could not answer. Never raises."""
    nvml_probe = _probe_nvml(load_nvml or _import_pynvml)
    missing_cc = [g for g in nvml_probe.gpus if g.capability is None]
    if nvml_probe.gpus and not missing_cc:
        return nvml_probe
    smi = _probe_smi(run_smi or _run_nvidia_smi)
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
    """nvidia-ml-py's ``pynvml``, imported without ``ctypes.util``.

    pynvml's first lines say ``from ctypes.util import find_library``, a name it never calls (it
    opens ``libnvidia-ml.so.1`` or ``nvml.dll`` by name). ``ctypes.util`` imports subprocess,
    shutil and tempfile: ~8 ms, a fifth of a dsv4-serve start before the hand-over, and more
    of `plan`'s. While pynvml is imported, a stand-in answers that one import; its
    ``find_library`` (and any other name asked of it) imports the real ``ctypes.util`` at first
    use. The stand-in leaves ``sys.modules`` as soon as pynvml is in, so whoever imports
    ``ctypes.util`` next — vLLM does, after the hand-over — gets the real module. Only where
    no other thread could import ``ctypes.util`` meanwhile (our CLI at this point): any thread,
    also one ``threading`` does not know of, has a frame in ``sys._current_frames()``.

    For `plan`, `doctor` and `fit` this is time saved; for a start it is time moved: vLLM
    imports ``ctypes.util`` itself on ``import vllm.entrypoints.cli.main``, also after this
    import (tests/vllm_real/test_shared_imports.py, on CI's releases), so nothing in it relies
    on ours.
    """
    frames = getattr(sys, "_current_frames", None)
    alone = frames is not None and len(frames()) == 1
    if alone and "pynvml" not in sys.modules and "ctypes.util" not in sys.modules:
        stand_in = _lazy_ctypes_util()
        sys.modules["ctypes.util"] = stand_in
        try:
            import pynvml  # nvidia-ml-py
        finally:
            if sys.modules.get("ctypes.util") is stand_in:
                del sys.modules["ctypes.util"]
    import pynvml  # nvidia-ml-py

    return pynvml


def _lazy_ctypes_util():
    stand_in = type(sys)("ctypes.util", "Stands in for ctypes.util while pynvml is imported.")

    def real():
        if sys.modules.get("ctypes.util") is stand_in:
            del sys.modules["ctypes.util"]
        __import__("ctypes.util")
        return sys.modules["ctypes.util"]

    def find_library(name):
        return real().find_library(name)

    def other(attribute):  # the import system asks for __path__ and friends: not ours to load
        if attribute.startswith("__"):
            raise AttributeError(attribute)
        return getattr(real(), attribute)

    stand_in.find_library = find_library
    stand_in.__getattr__ = other
    return stand_in


def _reason(exc: BaseException) -> str:
    """A one-line reason for an NVML error, naming the likely cause where it is known."""
    name = type(exc).__name__.replace("NVMLError_", "")
    hints = {
        "LibraryNotFound": "NVIDIA driver library libnvidia-ml.so.1 not found (no driver, or a "
        "container started without GPU access)",
        "DriverNotLoaded": "NVIDIA driver not loaded",
        "LibRmVersionMismatch": "NVIDIA driver and library versions differ (driver upgraded; "
        "reboot needed)",
        "NoPermission": "no permission to query this GPU",
        "GpuIsLost": "GPU is lost (fell off the bus)",
        "FunctionNotFound": "driver too old for this query",
    }
    detail = hints.get(name)
    text = str(exc).strip() or name
    return f"NVML: {detail}" if detail else f"NVML: {text}"


def _probe_nvml(load_nvml: Callable[[], object]) -> GpuProbe:
    try:
        nvml = load_nvml()
    except Exception as exc:  # ImportError and friends: bindings not installed
        return GpuProbe(error=f"NVML bindings unavailable ({exc}); install nvidia-ml-py")
    try:
        nvml.nvmlInit()
    except Exception as exc:
        return GpuProbe(error=_reason(exc))
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
            return GpuProbe(error=_reason(exc), driver_version=driver)
        gpus = tuple(_read_device(nvml, i) for i in range(count))
        errors = [g.error for g in gpus if g.error]
        return GpuProbe(
            gpus=gpus,
            source="nvml",
            error="; ".join(f"GPU {g.index}: {g.error}" for g in gpus if g.error) if errors else None,
            driver_version=driver,
            cuda_driver_version=cuda_version,
        )
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
    return GpuInfo(
        index=index,
        name=_text(name),
        uuid=_text(uuid),
        capability=(int(cc[0]), int(cc[1])) if cc else None,
        memory_total_bytes=mem,
        mig_uuids=_mig_uuids(nvml, handle),
        error=errors[0] if errors else None,
    )


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
        found.append(_text(uuid))
    return tuple(found)


SMI_TIMEOUT_S = 15


def _run_nvidia_smi(cmd: list[str]) -> tuple[str | None, str | None]:
    """nvidia-smi's output, or (None, why not). Its bytes are decoded leniently: a driver's
    odd GPU name must not stop anything."""
    import shutil
    import subprocess

    exe = shutil.which(cmd[0])
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
        return None, f"nvidia-smi failed (exit {done.returncode}{': ' + last[-1][:160] if last else ''})"
    return done.stdout.decode("utf-8", "backslashreplace"), None


def _probe_smi(run: Callable[[list[str]], tuple[str | None, str | None]]) -> GpuProbe:
    out, why = run(["nvidia-smi", f"--query-gpu={NVIDIA_SMI_QUERY}", "--format=csv,noheader,nounits"])
    if out is None:
        return GpuProbe(error=why or "nvidia-smi gave no answer")
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
        gpus.append(
            GpuInfo(
                index=int(fields[0]),
                uuid=fields[1] or None,
                name=fields[2] or None,
                capability=cc,
                memory_total_bytes=mem,
                error=None if cc else "nvidia-smi: compute capability not reported",
            )
        )
    if not gpus:
        return GpuProbe(error="nvidia-smi listed no GPU")
    return GpuProbe(gpus=tuple(gpus), source="nvidia-smi")

"""The NVML probe against the real nvidia-ml-py bindings and a stand-in driver library.

Faked: libnvidia-ml.so.1 (tests/fakes/fake_nvml.c, see conftest.py) and, for the cases a
loaded library cannot show (library missing), the loader. nvidia-smi is faked as a function.
"""

from __future__ import annotations

import pynvml
import pytest

from dsv4_launch.adapters.nvml import read_gpus
from tests.conftest import B200, H200, RTX_PRO_6000, gpu_spec

NO_SMI = lambda cmd: (None, "nvidia-smi not found on PATH")  # noqa: E731  (nvidia-smi absent)


def test_reads_every_gpu(fake_nvml, tmp_path):
    log = tmp_path / "nvml.log"
    fake_nvml(RTX_PRO_6000, H200, log=log)
    probe = read_gpus(run_smi=NO_SMI)
    assert probe.source == "nvml" and probe.error is None
    assert [(g.index, g.name, g.capability) for g in probe.gpus] == [
        (0, "NVIDIA RTX PRO 6000 Blackwell Workstation Edition", (12, 0)),
        (1, "NVIDIA H200", (9, 0)),
    ]
    assert probe.gpus[1].uuid == "GPU-90000000-0000-0000-0000-000000000000"
    assert probe.gpus[0].memory_total_bytes == 97887 * 1024 * 1024
    assert probe.driver_version == "550.54.15"
    # NVML is shut down again before anything else runs
    assert log.read_text().split() == ["init", "shutdown"]


def test_mig_devices_are_listed_with_their_parent(fake_nvml):
    fake_nvml(gpu_spec("NVIDIA H200", "GPU-aaaa", "9.0", migs=("MIG-1111", "MIG-2222")))
    probe = read_gpus(run_smi=NO_SMI)
    assert probe.gpus[0].mig_uuids == ("MIG-1111", "MIG-2222")


@pytest.mark.parametrize(
    "code,fragment",
    [
        (pynvml.NVML_ERROR_DRIVER_NOT_LOADED, "driver not loaded"),
        (pynvml.NVML_ERROR_LIB_RM_VERSION_MISMATCH, "reboot"),
        (pynvml.NVML_ERROR_UNKNOWN, "NVML"),
    ],
)
def test_init_failures_degrade_to_unknown(fake_nvml, code, fragment):
    fake_nvml(RTX_PRO_6000, init_error=code)
    probe = read_gpus(run_smi=NO_SMI)
    assert probe.gpus == ()
    assert fragment in probe.error and "nvidia-smi" in probe.error


def test_library_missing(fake_nvml):
    def missing():
        raise pynvml.NVMLError(pynvml.NVML_ERROR_LIBRARY_NOT_FOUND)

    class Broken:
        def nvmlInit(self):
            missing()

    probe = read_gpus(load_nvml=Broken, run_smi=NO_SMI)
    assert probe.gpus == () and "libnvidia-ml.so.1 not found" in probe.error


def test_bindings_missing():
    def no_module():
        raise ModuleNotFoundError("No module named 'pynvml'")

    probe = read_gpus(load_nvml=no_module, run_smi=NO_SMI)
    assert "nvidia-ml-py" in probe.error


@pytest.mark.parametrize(
    "code,fragment",
    [(pynvml.NVML_ERROR_NO_PERMISSION, "no permission"), (pynvml.NVML_ERROR_GPU_IS_LOST, "lost")],
)
def test_one_bad_device_keeps_its_place(fake_nvml, code, fragment):
    fake_nvml(H200, gpu_spec(uuid="GPU-bad", handle_err=code), B200)
    probe = read_gpus(run_smi=NO_SMI)
    assert [g.capability for g in probe.gpus] == [(9, 0), None, (10, 0)]
    assert fragment in probe.gpus[1].error
    assert "GPU 1" in probe.error


def test_old_driver_without_compute_capability_asks_nvidia_smi(fake_nvml):
    fake_nvml(gpu_spec(uuid="GPU-old", cc_err=pynvml.NVML_ERROR_FUNCTION_NOT_FOUND))
    smi = "0, GPU-old, NVIDIA RTX PRO 6000, 12.0, 97887\n"
    probe = read_gpus(run_smi=lambda cmd: (smi, None))
    assert probe.gpus[0].capability == (12, 0)
    assert probe.gpus[0].error is None


def test_old_driver_and_no_nvidia_smi_stays_unknown(fake_nvml):
    fake_nvml(gpu_spec(uuid="GPU-old", cc_err=pynvml.NVML_ERROR_FUNCTION_NOT_FOUND))
    probe = read_gpus(run_smi=NO_SMI)
    assert probe.gpus[0].capability is None
    assert "too old" in probe.gpus[0].error


def test_nvidia_smi_fallback_when_nvml_fails(fake_nvml):
    fake_nvml(init_error=pynvml.NVML_ERROR_DRIVER_NOT_LOADED)
    calls = []

    def smi(cmd):
        calls.append(cmd)
        return "0, GPU-x, NVIDIA B200, 10.0, 183359\n1, GPU-y, NVIDIA B200, [N/A], 183359\n", None

    probe = read_gpus(run_smi=smi)
    assert "compute_cap" in calls[0][1]
    assert probe.source == "nvidia-smi"
    assert [g.capability for g in probe.gpus] == [(10, 0), None]
    assert "NVML unavailable" in probe.notes[0]


def test_no_gpu_at_all(fake_nvml):
    fake_nvml()
    probe = read_gpus(run_smi=NO_SMI)
    assert probe.gpus == () and "no GPU" in probe.error


def test_nvidia_smi_is_never_run_from_a_relative_path_entry(tmp_path, monkeypatch):
    """An empty or "." PATH entry would make shutil.which find a ./nvidia-smi planted in the
    working directory; only absolute PATH entries are searched."""
    import os

    from dsv4_launch.adapters.nvml import _run_nvidia_smi

    marker = tmp_path / "ran"
    fake = tmp_path / "nvidia-smi"
    fake.write_text(f"#!/bin/sh\ntouch {marker}\necho planted\n")
    fake.chmod(0o755)
    monkeypatch.chdir(tmp_path)
    for path in (".", "", f".{os.pathsep}/nonexistent", f"{os.pathsep}/nonexistent"):
        monkeypatch.setenv("PATH", path)
        out, why = _run_nvidia_smi(["nvidia-smi", "--query-gpu=name"])
        assert out is None and "not found" in why and not marker.exists()
    monkeypatch.setenv("PATH", str(tmp_path))  # an absolute entry is the user's choice: run
    out, _ = _run_nvidia_smi(["nvidia-smi"])
    assert out and "planted" in out

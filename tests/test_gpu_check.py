"""tools/gpu_check.py, the real-hardware check, run here where there is no GPU: it must skip
cleanly without an NVML library, and run its NVML checks without crashing on the stand-in
library (tests/fakes/fake_nvml.c) — with a fake nvidia-smi that agrees, and one that does not.
torch is not installed here, so the CUDA_VISIBLE_DEVICES comparisons are skipped (said)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from tests.conftest import H200, RTX_PRO_6000, clean_env

TOOL = Path(__file__).resolve().parents[1] / "tools" / "gpu_check.py"


def _run(tmp_path, *args, env=None):
    e = clean_env(tmp_path, **(env or {}))
    return subprocess.run([sys.executable, str(TOOL), *args], env=e, capture_output=True, text=True, timeout=120,
                          cwd=tmp_path)


def test_without_a_gpu_it_skips_cleanly(tmp_path):
    done = _run(tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "SKIP     NVML adapter: no NVIDIA GPU" in done.stdout
    assert "OK       CUDA before the probe: not initialised" in done.stdout
    assert "Traceback" not in done.stderr
    doc = json.loads(_run(tmp_path, "--json").stdout)
    assert doc["ok"] is True and doc["gpus"] == 0


def _smi(tmp_path, lines: list[str]) -> str:
    bindir = tmp_path / "smi"
    bindir.mkdir(exist_ok=True)
    (bindir / "nvidia-smi").write_text("#!/bin/sh\ncat <<'EOF'\n" + "\n".join(lines) + "\nEOF\n")
    (bindir / "nvidia-smi").chmod(0o755)
    return str(bindir)


SMI_AGREES = ["0, GPU-12000000-0000-0000-0000-000000000000, NVIDIA RTX PRO 6000 Blackwell Workstation Edition, 12.0, 97887 MiB",
              "1, GPU-90000000-0000-0000-0000-000000000000, NVIDIA H200, 9.0, 143771 MiB"]


def test_on_the_stand_in_nvml_it_checks_nvml_and_skips_torch(tmp_path, fake_nvml_dir):
    env = {"LD_LIBRARY_PATH": str(fake_nvml_dir), "FAKE_NVML_GPUS": ";".join([RTX_PRO_6000, H200]),
           "FAKE_NVML_LOG": str(tmp_path / "nvml.log")}
    env["PATH"] = f"{_smi(tmp_path, SMI_AGREES)}:/usr/bin:/bin"
    done = _run(tmp_path, env=env)
    out = done.stdout
    assert done.returncode == 0, out + done.stderr
    assert "OK       NVML adapter: 2 GPU(s)" in out
    assert "OK       GPU 0 NVML vs nvidia-smi" in out and "OK       GPU 1 NVML vs nvidia-smi" in out
    assert "OK       NVML shut down after the probe: uninitialised" in out
    assert "OK       NVML shut down before the hand-over" in out
    assert "OK       CUDA in the parent after the probe and the plan: not initialised" in out
    assert "SKIP     CUDA_VISIBLE_DEVICES=(unset)" in out  # no torch here
    log = (tmp_path / "nvml.log").read_text().split()
    assert log.count("init") == log.count("shutdown") >= 2


def test_a_disagreeing_nvidia_smi_is_a_mismatch(tmp_path, fake_nvml_dir):
    env = {"LD_LIBRARY_PATH": str(fake_nvml_dir), "FAKE_NVML_GPUS": RTX_PRO_6000}
    env["PATH"] = f"{_smi(tmp_path, [SMI_AGREES[0].replace('12.0', '12.1')])}:/usr/bin:/bin"
    done = _run(tmp_path, env=env)
    assert done.returncode == 1, done.stdout + done.stderr
    assert "MISMATCH GPU 0 NVML vs nvidia-smi" in done.stdout and "cc" in done.stdout

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

TOOL = Path(__file__).resolve().parents[2] / "tools" / "gpu_check.py"


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


SMI_AGREES = [
    "0, GPU-12000000-0000-0000-0000-000000000000, NVIDIA RTX PRO 6000 Blackwell Workstation Edition, 12.0, 97887 MiB",
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


# --- --profile: vLLM's own memory profile, parsed from its log (faked: a "python" that prints one) ---

LOG_033 = """INFO 12-01 [gpu_model_runner.py:5089] Model loading took 13.92 GiB memory and 20.1 seconds
DEBUG 12-01 [gpu_worker.py:790] Memory profiling takes 9.80 seconds. Total non KV cache memory: 20.61GiB; torch peak \
memory increase: 5.27GiB; total consumed (from mem_get_info): 15.34GiB; weights memory: 13.92GiB.
INFO 12-01 [gpu_model_runner.py:6410] Estimated CUDA graph memory: 0.83 GiB total
INFO 12-01 [gpu_worker.py:773] Available KV cache memory: 105.57 GiB
INFO 12-01 [gpu_model_runner.py:6517] Graph capturing finished in 31 secs, took 0.91 GiB
INFO 12-01 [gpu_worker.py:1050] Free memory on device (139.2/139.8 GiB) on startup. Desired GPU memory utilization is \
(0.9, 125.8 GiB). Actual usage is 15.34 GiB for consumed memory (weights + non-torch), 5.27 GiB for peak activation, \
and 0.91 GiB for CUDAGraph memory.
"""
LOG_024 = """INFO Model loading took 13.90 GiB memory and 19.0 seconds
DEBUG Memory profiling takes 8.10 seconds. Total non KV cache memory: 19.50GiB; torch peak memory increase: 5.21GiB; \
non-torch forward increase memory: 0.39GiB; weights memory: 13.90GiB.
INFO Available KV cache memory: 106.18 GiB
"""


def _gpu_check_module():
    import importlib.util

    spec = importlib.util.spec_from_file_location("gpu_check", TOOL)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_profile_log_is_read_as_each_release_writes_it():
    gpu_check = _gpu_check_module()
    new = gpu_check.parse_profile_log(LOG_033)
    assert new == {"weights": 13.92, "available_kv": 105.57, "graph_estimate": 0.83, "graph_captured": 0.91,
                   "non_kv": 20.61, "torch_peak_increase": 5.27, "total_consumed": 15.34, "peak_activation": 5.27}
    old = gpu_check.parse_profile_log(LOG_024)
    assert old["peak_activation"] == 5.21 and old["non_torch_increase"] == 0.39 and "graph_estimate" not in old
    assert gpu_check.parse_profile_log("no vLLM here") == {}


def test_a_measurement_outside_the_band_is_a_mismatch():
    gpu_check = _gpu_check_module()
    report = gpu_check.Report(as_json=True)
    gpu_check.judge_profile(report, "run", {"peak_activation": 5.27, "graph_estimate": 9.0},
                            {"peak_activation": (4.0, 6.0), "graph_estimate": (0.5, 2.0), "non_torch_increase": (0, 1)})
    status = {r["check"]: r["status"] for r in report.rows}
    assert status == {"run peak_activation": "OK", "run graph_estimate": "MISMATCH", "run non_torch_increase": "SKIP"}


def test_the_bands_beside_the_profile_are_the_estimates_own():
    gpu_check = _gpu_check_module()
    bands = gpu_check.expected_bands(8192, 256, 143_771 * 2**20, "0.33.0", 4)
    low, high = bands["peak_activation"]
    assert low < 0.64 * 8192 / 1024 < high  # the GB10 figure per token sits inside
    assert bands["graph_estimate"] == (0.5, 2.0)
    assert gpu_check.expected_bands(8192, 256, 143_771 * 2**20, "0.28.0", 4)["graph_estimate"] == (0.0, 0.0)


def test_the_profile_runs_vllm_per_batch_size_and_keeps_the_records(tmp_path):
    gpu_check = _gpu_check_module()
    log = tmp_path / "vllm.log"
    log.write_text(LOG_033)
    calls = tmp_path / "calls"
    fake = tmp_path / "python"
    # a stand-in for the vLLM Python: the version query, then each profile child, which prints the log
    fake.write_text(f"#!/bin/sh\ncase \"$2\" in *importlib.metadata*) echo 0.33.0;; "
                    f"*) printf '%s\\n' \"$3\" >> {calls}; cat {log}; echo DSV4_PROFILE_DONE;; esac\n")
    fake.chmod(0o755)
    report = gpu_check.Report(as_json=True)
    out = tmp_path / "profile.json"
    records = gpu_check.run_profile(report, str(fake), 143_771 * 2**20, [8192, 2048], 4, str(out))
    assert [r["max_num_batched_tokens"] for r in records] == [8192, 2048]
    assert json.loads(out.read_text())[0]["measured_gib"]["available_kv"] == 105.57
    settings = [json.loads(line) for line in calls.read_text().splitlines()]
    assert [s["max_num_batched_tokens"] for s in settings] == [8192, 2048]
    assert all(s["load_format"] == "dummy" and s["skip_tokenizer_init"] for s in settings)
    first = records[0]
    assert first["status"] == 0 and tuple(first["bands_gib"]["graph_estimate"]) == (0.5, 2.0)
    assert any(r["status"] == "OK" and "peak_activation" in r["check"] for r in report.rows)


def test_without_vllm_the_profile_is_skipped(tmp_path):
    gpu_check = _gpu_check_module()
    report = gpu_check.Report(as_json=True)
    assert gpu_check.run_profile(report, str(tmp_path / "missing-python"), 0, [8192], 4, None) == []
    assert report.rows[0]["status"] == "SKIP" and "not importable" in report.rows[0]["detail"]


def test_bad_profile_arguments_are_one_line_errors(tmp_path):
    done = _run(tmp_path, "--profile", "--profile-batched-tokens", "x")
    assert done.returncode == 2 and "Traceback" not in done.stderr

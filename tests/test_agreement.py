"""One pipeline: every case of the rule matrix through `plan`, `plan --json`, `dsv4-serve` and
`doctor --json` gives the same argv, changes, refusals and exit status.

In-process, with honest fakes at the boundaries only: the GPU probe returns fixed GPUs (what
NVML would report), the vLLM install is a fixed version, and the hand-over to vLLM is replaced
by a recorder (what vLLM's entry point would receive). Model files are real config.json files.
"""

from __future__ import annotations

import io
import json

import pytest

from dsv4_launch.adapters.nvml import GpuProbe
from dsv4_launch.adapters.vllm_install import VllmInstall
from dsv4_launch.commands import serve as serve_command
from dsv4_launch.commands.doctor import run_doctor
from dsv4_launch.commands.plan import run_plan
from dsv4_launch.core.gpus import GpuInfo
from tests.planning import LLAMA, V4, V41

RTX, H200, B200, A100 = (GpuInfo(0, "NVIDIA RTX PRO 6000", "GPU-r", (12, 0), 97887 * 2**20),
                         GpuInfo(0, "NVIDIA H200", "GPU-h", (9, 0), 143771 * 2**20),
                         GpuInfo(0, "NVIDIA B200", "GPU-b", (10, 0), 183359 * 2**20),
                         GpuInfo(0, "NVIDIA A100", "GPU-a", (8, 0), 81920 * 2**20))
FI = ["--attention-backend", "FLASHINFER_MLA_SPARSE_DSV4"]


def two(gpu):
    return (gpu, gpu._replace(index=1, uuid=gpu.uuid + "2"))


CASES = [
    # (id, tokens after the model, gpus, vLLM version, config, env)
    ("sm120-auto-crash", [], (RTX,), "0.24.0", V4, {}),
    ("sm120-fixed-vllm", [], (RTX,), "0.33.0", V4, {}),
    ("h200-old", ["--port", "8000"], (H200,), "0.24.0", V4, {}),
    ("h200-new", [], (H200,), "0.33.0", V4, {}),
    ("b200-plain-rows", FI, (B200,), "0.24.0", V4, {}),
    ("in-place", ["--kv_cache_dtype=auto", "-tp", "2"], two(RTX), "0.24.0", V4, {}),
    ("explicit-kept", ["--kv-cache-dtype", "fp8_e4m3"], (RTX,), "0.24.0", V4, {}),
    ("refused-bf16", ["--kv-cache-dtype", "bfloat16"], (RTX,), "0.33.0", V4, {}),
    ("refused-block", ["--block-size", "64"], (RTX,), "0.24.0", V4, {}),
    ("refused-tp-gpus", ["-tp", "4"], two(RTX), "0.24.0", V4, {}),
    ("refused-old-gpu", [], (A100,), "0.33.0", V4, {}),
    ("warn-mode", ["--block-size", "64"], (RTX,), "0.24.0", V4, {"DSV4_LAUNCH_PREFLIGHT": "warn"}),
    ("off-mode", ["--block-size", "64"], (RTX,), "0.24.0", V4, {"DSV4_LAUNCH_PREFLIGHT": "off"}),
    ("disabled", ["--block-size", "64"], (RTX,), "0.24.0", V4, {"DSV4_LAUNCH_DISABLE": "1"}),
    ("v41", ["--kv-cache-dtype", "fp8_e4m3"], (RTX,), "0.33.0", V41, {}),
    ("llama", ["--block-size", "16"], (RTX,), "0.24.0", LLAMA, {}),
    ("rejected", ["--kv-cache-dt", "auto"], (RTX,), "0.24.0", V4, {}),
    ("secret", ["--api-key", "-sk_live_1"], (RTX,), "0.24.0", V4, {}),
    ("bad-setting", [], (RTX,), "0.24.0", V4, {"DSV4_LAUNCH_QUIET": "perhaps"}),
]


@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_every_command_agrees(case, tmp_path, monkeypatch):
    _, rest, gpus, version, config, extra = case
    model = tmp_path / "model"
    model.mkdir()
    (model / "config.json").write_text(json.dumps(config))
    argv = [str(model), *rest]
    env = {"HOME": str(tmp_path), "PATH": "/usr/bin:/bin", **extra}
    fakes = {"probe": lambda: GpuProbe(gpus=gpus, source="nvml", driver_version="580.1"),
             "vllm": VllmInstall(version=version, importable=True)}

    handed = []
    monkeypatch.setattr(serve_command, "hand_over", lambda a, vllm, env: handed.append(list(a)) or 0)
    serve_err = io.StringIO()
    serve_status = serve_command.run_serve(argv, env, serve_err, io.StringIO(), **fakes)

    text_out, json_out, doctor_out = io.StringIO(), io.StringIO(), io.StringIO()
    text_status = run_plan(argv, as_json=False, env=env, stdout=text_out, stderr=io.StringIO(), **fakes)
    json_status = run_plan(argv, as_json=True, env=env, stdout=json_out, stderr=io.StringIO(), **fakes)
    doctor_status = run_doctor(argv, as_json=True, env=env, stdout=doctor_out, stderr=io.StringIO(),
                               runtime=lambda python, shapes: (None, "not inspected in this test"), **fakes)
    plan = json.loads(json_out.getvalue())
    doctor = json.loads(doctor_out.getvalue())

    # exit status: plan's (text and JSON) is dsv4-serve's before the hand-over
    assert text_status == json_status == plan["exit_status"] == serve_status
    if handed:  # serve started vLLM: with exactly the planned argv (secrets are masked only in print)
        assert serve_status == 0
        shown = plan["argv"]
        assert len(handed[0]) == len(shown)
        assert [h for h, s in zip(handed[0], shown) if s != "***"] == [s for s in shown if s != "***"]
    else:
        assert serve_status == 2
    # changes and refusals: the same in plan, dsv4-serve's log and doctor
    err = serve_err.getvalue()
    for change in plan["changes"]:
        assert f"changed: {change['option']}" in err and change["reason"] in err
    assert err.count("changed:") == len(plan["changes"])
    assert err.count("error: pre-flight:") == len(plan["refusals"])
    if "error" not in plan or not plan["error"]:
        assert doctor["plan"]["argv"] == plan["argv"]
        assert doctor["plan"]["changes"] == plan["changes"]
        assert doctor["plan"]["refusals"] == plan["refusals"]
        failed = [c for c in doctor["checks"] if c["section"] == "preflight" and c["status"] == "FAIL"]
        assert len(failed) == len(plan["refusals"])
        assert (doctor_status == 1) >= bool(plan["refusals"])
    text = text_out.getvalue()
    assert text.count("error: pre-flight:") == len(plan["refusals"])
    for change in plan["changes"]:
        assert change["reason"] in text

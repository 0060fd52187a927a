"""Cases a review of the whole change found, each fixed at its cause; pure where possible
(facts by hand, tests/planning.py), subprocesses where the path is the command itself."""

from __future__ import annotations

import io
import json
import subprocess

import pytest

from dsv4_launch.adapters.nvml import GpuReport
from dsv4_launch.adapters.vllm_install import VllmInstall
from dsv4_launch.commands.context import Context
from dsv4_launch.commands.doctor import run_doctor
from dsv4_launch.commands.plan import run_plan
from dsv4_launch.core.facts import as_int
from dsv4_launch.core.gpus import GpuInfo, GpuSelection
from dsv4_launch.core.memory.estimate import GiB, WeightFacts, estimate
from tests.conftest import BIN, clean_env
from tests.planning import SM80, SM90, SM120, V4, M, facts_for, gpus, planned

FLASH_W = WeightFacts(total_bytes=int(148.6 * GiB), source="test", exact=True, replicated_bytes=int(1.23 * GiB))


def with_weights(tokens, **kw):
    from dsv4_launch.core.rules.plan import make_plan

    f = facts_for(tokens, **kw)._replace(weights=FLASH_W)
    return make_plan(f), f


@pytest.mark.parametrize("env", [{"DSV4_LAUNCH_DISABLE": "maybe"}, {"DSV4_LAUNCH_DISABLE": "1"}])
def test_no_secret_on_the_off_switch_paths(tmp_path, env):
    out = io.StringIO()
    run_plan([M, "--api-key", "sk-Zq14secret"], as_json=True,
             ctx=Context(env={"HOME": str(tmp_path), **env}, stdout=out, stderr=io.StringIO(),
                         vllm=VllmInstall(version="0.33.0", importable=True)))
    assert "sk-Zq14secret" not in out.getvalue() and json.loads(out.getvalue())["argv"][-1] == "***"


def test_no_secret_when_interrupted(tmp_path):
    def interrupted():
        raise KeyboardInterrupt

    out = io.StringIO()
    code = run_plan([M, "--api-key", "sk-Zq15secret"], as_json=True,
                    ctx=Context(env={"HOME": str(tmp_path)}, stdout=out, stderr=io.StringIO(), read_gpus=interrupted,
                                vllm=VllmInstall(version="0.33.0", importable=True)))
    assert code == 130 and "sk-Zq15secret" not in out.getvalue()


def test_ambiguous_numbering_never_refuses_on_memory():
    # An L4 and two H200s, CUDA_VISIBLE_DEVICES=1,2 in FASTEST_FIRST order: the L4 may not be used.
    sel = GpuSelection((GpuInfo(0, "NVIDIA L4", "GPU-4", (8, 9), 22 * GiB),
                        GpuInfo(1, "NVIDIA H200", "GPU-9", SM90, 140 * GiB),
                        GpuInfo(2, "NVIDIA H200", "GPU-A", SM90, 140 * GiB)), ambiguous=True, count=2)
    plan, _ = with_weights([M, "-tp", "2", "--max-model-len", "32768"], gpu=sel)
    assert plan.refusals == ()
    line = next(w for w in plan.warnings if "weights per GPU" in w)
    assert "only if CUDA's device numbers name those GPUs" in line


def test_gpus_of_one_capability_but_different_memory_are_ambiguous_by_index():
    from dsv4_launch.core.gpus import select_visible

    a = GpuInfo(0, "NVIDIA H100 PCIe", "GPU-a", SM90, 80 * GiB)
    b = GpuInfo(1, "NVIDIA H200", "GPU-b", SM90, 141 * GiB)
    assert select_visible((a, b), "0").ambiguous


@pytest.mark.parametrize("fmt,refused", [(None, True), ("safetensors", True), ("dummy", False), ("gguf", False)])
def test_missing_shards_matter_only_to_the_safetensors_loaders(fmt, refused):
    from dsv4_launch.core.rules.plan import make_plan

    tokens = [M] + (["--load-format", fmt] if fmt else [])
    f = facts_for(tokens, gpu=gpus(SM120, memory=400 * GiB))._replace(
        weights=WeightFacts(shards_total=3, shards_missing=2, local=True))
    assert bool(make_plan(f).refusals) is refused


@pytest.mark.parametrize("text,value", [("+-2", None), ("-+3", None), ("--5", None), ("+4", 4), ("-1", -1), ("12", 12)])
def test_integers_read_as_vllm_reads_them(text, value):
    assert as_int(text) == value


def test_tp_past_o_groups_only():
    config = {**V4, "o_groups": 12, "num_attention_heads": 96}
    assert not [r for r in planned([M, "-tp", "8"], config=config, gpu=gpus(*[SM120] * 8)).refusals if "o_groups" in r]
    assert [r for r in planned([M, "-tp", "16"], config={**config, "num_attention_heads": 128},
                               gpu=gpus(*[SM120] * 16)).refusals if "o_groups" in r]


def test_the_memory_fix_never_overrides_a_value_the_user_set():
    plan, _ = with_weights([M, "-tp", "2", "--gpu-memory-utilization", "0.86"], gpu=gpus(SM120, SM120, memory=96 * GiB),
                           config={**V4, "compress_ratios": [4] * 21 + [128] * 20, "num_hidden_layers": 41})
    line = next(w for w in plan.warnings if "--max-model-len 1,048,576" in w)
    assert "--gpu-memory-utilization 0.95" not in line


def test_the_fp4_indexer_flag_as_typed_counts_in_the_estimate():
    config = {**V4, "compress_ratios": [4] * 21 + [128] * 20, "num_hidden_layers": 41}
    plain = estimate(facts_for([M], config=config, gpu=gpus((10, 0))), FLASH_W)
    typed = estimate(facts_for([M, "--attention_config.use_fp4_indexer_cache=True"], config=config, gpu=gpus((10, 0))),
                     FLASH_W)
    assert typed.kv_bytes_per_token < plain.kv_bytes_per_token


def test_doctor_with_the_off_switch_still_reports_the_machine(tmp_path):
    out = io.StringIO()
    gpus_seen = GpuReport(gpus=(GpuInfo(0, "NVIDIA H200", "GPU-h", SM90, 141 * GiB),), source="nvml",
                          driver_version="1")
    run_doctor([M], as_json=True,
               ctx=Context(env={"HOME": str(tmp_path), "DSV4_LAUNCH_DISABLE": "1"}, stdout=out, stderr=io.StringIO(),
                           read_gpus=lambda: gpus_seen, vllm=VllmInstall(version="0.33.0", importable=True),
                           read_runtime=lambda python, shapes: (None, "not inspected")))
    checks = json.loads(out.getvalue())["checks"]
    assert [c["status"] for c in checks if c["section"] == "gpu"] == ["OK"]


def test_doctor_knows_an_ignored_backend_still_needs_flashinfer(tmp_path):
    out = io.StringIO()
    rtx = GpuReport(gpus=(GpuInfo(0, "NVIDIA RTX PRO 6000", "GPU-r", SM120, 96 * GiB),) * 1, source="nvml")
    run_doctor([M, "--attention-backend", "TRITON_MLA"], as_json=True,
               ctx=Context(env={"HOME": str(tmp_path)}, stdout=out, stderr=io.StringIO(), read_gpus=lambda: rtx,
                           vllm=VllmInstall(version="0.33.0", importable=True),
                           read_runtime=lambda python, shapes: ({"torch": None, "flashinfer": None}, None)))
    checks = json.loads(out.getvalue())["checks"]
    assert any(c["status"] == "FAIL" and "FlashInfer is not installed" in c["detail"] for c in checks)


def test_click_path_option_errors_are_one_line(tmp_path):
    done = subprocess.run([str(BIN / "dsv4-launch"), "--", "fit", "--gpu-memory", "abc"], env=clean_env(tmp_path),
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 2 and "Traceback" not in done.stderr and "--gpu-memory" in done.stderr


def test_old_gpu_warning_is_not_affected_by_ambiguity_handling():
    assert planned([M], gpu=gpus(SM80)).warnings

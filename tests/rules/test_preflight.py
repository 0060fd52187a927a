"""Pre-flight refusals (issue: catch the known DeepSeek-V4 failures in a second).

Each rule: one case that trips it and one that does not; then the warn/off modes. Pure.
"""

from __future__ import annotations

from typing import Optional

import pytest

from dsv4_launch.core.facts import Facts, GpuFacts
from dsv4_launch.core.gpus import GpuInfo, GpuSelection
from dsv4_launch.core.model import classify
from dsv4_launch.core.rules.plan import make_plan
from dsv4_launch.vllm_cli.option_table import load_table
from dsv4_launch.vllm_cli.serve_args import read_serve_args
from tests.planning import LLAMA, SM80, SM90, SM100, SM120, V4, V41, M, gpus, planned


def plan(tokens, gpu=None, version: Optional[str] = "0.33.0", config=V4, mode="refuse", source="nvml",
         env_backend=None):
    env = {"VLLM_ATTENTION_BACKEND": env_backend} if env_backend else {}
    return planned(tokens, gpu=gpus(SM120) if gpu is None else gpu, version=version, config=config, mode=mode,
                   source=source, env=env)


FI = ["--attention-backend", "FLASHINFER_MLA_SPARSE_DSV4"]

CASES = [
    # (name, tripping case, passing case) — each as (tokens, kwargs)
    ("non-fp8 KV on fp8_ds_mla", ([M, "--kv-cache-dtype", "bfloat16"], {}),
     ([M, "--kv-cache-dtype", "fp8_e4m3"], {})),
    ("float16 on FlashMLA (H200)", ([M, "--kv-cache-dtype", "float16"], {"gpu": gpus(SM90)}),
     ([M, "--kv-cache-dtype", "bfloat16", *FI], {"gpu": gpus(SM100)})),  # plain rows take bf16
    ("non-fp8 KV with unknown GPU, default backend",
     ([M, "--kv-cache-dtype", "bfloat16"], {"gpu": GpuSelection((GpuInfo(0),)), "source": None}),
     ([M, "--kv-cache-dtype", "bfloat16", *FI], {"gpu": GpuSelection((GpuInfo(0),)), "source": None})),
    ("no GPU visible to CUDA", ([M, "-tp", "2"], {"gpu": GpuSelection(())}),
     ([M, "-tp", "2"], {"gpu": GpuSelection(()), "source": None})),
    ("V4.1 rejects fp8_e4m3", ([M, "--kv-cache-dtype", "fp8_e4m3"], {"config": V41}),
     ([M, "--kv-cache-dtype", "fp8"], {"config": V41})),
    ("V4.1 rejects bfloat16", ([M, "--kv-cache-dtype", "bfloat16"], {"config": V41}),
     ([M], {"config": V41})),
    ("not a DSv4 backend", ([M, "--attention-backend", "FLASHINFER_MLA_SPARSE"], {"gpu": gpus(SM100)}),
     ([M, *FI], {"gpu": gpus(SM100)})),
    ("not a DSv4 backend (SM120 name)", ([M, "--attention-backend", "FLASHINFER_MLA_SPARSE_SM120"], {}),
     ([M, *FI], {})),
    ("block size V4", ([M, "--block-size", "128"], {}), ([M, "--block-size", "512"], {})),
    ("block size V4.1", ([M, "--block-size", "64"], {"config": V41}), ([M, "--block-size", "128"], {"config": V41})),
    ("TP does not divide heads", ([M, "-tp", "3"], {"gpu": gpus(SM120, SM120, SM120)}),
     ([M, "-tp", "4"], {"gpu": gpus(*[SM120] * 4)})),
    ("TP×PP more than visible GPUs", ([M, "-tp", "4", "-pp", "2"], {"gpu": gpus(*[SM120] * 4)}),
     ([M, "-tp", "4", "-pp", "2"], {"gpu": gpus(*[SM120] * 8)})),
]


@pytest.mark.parametrize("name,trips,passes", CASES, ids=[c[0] for c in CASES])
def test_rule_both_ways(name, trips, passes):
    bad = plan(trips[0], **trips[1])
    assert len(bad.refusals) == 1, bad.refusals
    assert bad.preflight == "refuse"
    good = plan(passes[0], **passes[1])
    assert good.refusals == (), good.refusals


def test_refusal_names_setting_reason_fix_and_reference():
    (line,) = plan([M, "--kv-cache-dtype", "bfloat16"]).refusals
    assert line.startswith("--kv-cache-dtype bfloat16 (command line):")
    assert "fp8_ds_mla" in line and "Fix: --kv-cache-dtype fp8" in line and "vLLM #47174" in line
    (line,) = plan([M, "-tp", "3"], gpu=gpus(SM120, SM120, SM120)).refusals
    assert "64 attention heads" in line and "size in 1, 2, 4, 8" in line


def test_a_silent_layout_mismatch_is_a_warning_not_a_refusal():
    # SM 10.x FlashInfer plain rows + fp8_ds_mla: vLLM does not fail, it mismatches silently.
    bad = plan([M, *FI, "--kv-cache-dtype", "fp8_ds_mla"], gpu=gpus(SM100))
    assert bad.refusals == () and any("does not check the mismatch" in w for w in bad.warnings)
    good = plan([M, *FI, "--kv-cache-dtype", "fp8"], gpu=gpus(SM100))
    assert not any("mismatch" in w for w in good.warnings)


def test_several_problems_are_all_listed():
    bad = plan([M, "--block-size", "100", "-tp", "3", "--attention-backend", "FLASHINFER_MLA_SPARSE"])
    assert len(bad.refusals) == 4  # block, heads, GPUs, backend


def test_kernel_level_failures_are_warnings_not_refusals():
    # FlashMLA forced on SM 12.x, DeepSeek-V4 on SM 8.x, SM 12.x before vLLM 0.24: they fail in the
    # kernels, not in vLLM's Python (docs/rules-evidence.md), so dsv4-serve warns and starts.
    for tokens, kw in (([M, "--attention-backend", "flashmla_sparse"], {}), ([M], {"gpu": gpus(SM80)}),
                       ([M], {"version": "0.23.1"})):
        p = plan(tokens, **kw)
        assert p.refusals == () and p.warnings, (tokens, kw)


def test_gpu_count_needs_a_real_count():
    # DSV4_LAUNCH_GPU_CAPABILITY says what the GPUs are, not how many.
    assert plan([M, "-tp", "8"], source="DSV4_LAUNCH_GPU_CAPABILITY").refusals == ()


@pytest.mark.parametrize("extra", [["--distributed-executor-backend", "ray"], ["--nnodes", "2"]])
def test_gpu_count_is_per_node_only_on_single_node_runs(extra):
    assert plan([M, "-tp", "8", *extra]).refusals == ()


def test_cuda_visible_devices_count_not_candidates():
    # Ambiguous FASTEST_FIRST mapping lists every GPU as a candidate, but only one is visible.
    sel = GpuSelection(gpus(SM90, SM120).gpus, ambiguous=True, count=1)
    assert len(plan([M, "-tp", "2"], gpu=sel).refusals) == 1


def test_other_models_are_not_checked():
    assert plan([M, "--block-size", "16", "-tp", "4"], config=LLAMA).refusals == ()


def test_warn_mode_turns_refusals_into_warnings():
    p = plan([M, "--kv-cache-dtype", "bfloat16"], mode="warn")
    assert p.refusals == () and p.preflight == "warn"
    assert any("bfloat16" in w and "DSV4_LAUNCH_PREFLIGHT=warn" in w for w in p.warnings)


def test_off_mode_skips_and_says_so():
    p = plan([M, "--kv-cache-dtype", "bfloat16"], mode="off")
    assert p.refusals == () and not any("bfloat16" in w for w in p.warnings)
    assert "pre-flight checks are off (DSV4_LAUNCH_PREFLIGHT=off)" in p.notes


def test_warnings_attention_env_and_mixed_gpus():
    p = plan([M], gpu=gpus(SM90, SM120), env_backend="FLASHMLA")
    assert any("VLLM_ATTENTION_BACKEND=FLASHMLA is not read" in w and "unset VLLM_ATTENTION_BACKEND" in w
               for w in p.warnings)
    assert any("different compute capability" in w for w in p.warnings)
    named = plan([M], env_backend="flashmla_sparse_dsv4")  # a name DeepSeek-V4 uses: the flag that works
    assert any("Fix: --attention-backend FLASHMLA_SPARSE_DSV4 (and unset VLLM_ATTENTION_BACKEND)" in w
               for w in named.warnings)
    assert p.refusals == ()


def test_unknown_gpus_are_said_not_refused():
    args = read_serve_args([M, "-tp", "2"], load_table("0.33.0"), lambda p: {})
    facts = Facts(args=args, model=classify(M, V4, "test"), gpus=GpuFacts(error="NVML: driver not loaded", read=True))
    p = make_plan(facts)
    assert p.refusals == ()
    assert any("driver not loaded" in w and "GPU-specific checks skipped" in w for w in p.warnings)


def test_ray_head_without_gpus_is_warned():
    args = read_serve_args([M, "--distributed-executor-backend", "ray", "-tp", "16"], load_table("0.33.0"),
                           lambda p: {})
    blind = make_plan(Facts(args=args, model=classify(M, V4, "test"), gpus=GpuFacts(GpuSelection(()), source="nvml")))
    assert any("Ray worker" in w and "DSV4_LAUNCH_GPU_CAPABILITY" in w for w in blind.warnings)
    told = make_plan(Facts(args=args, model=classify(M, V4, "test"), gpus=GpuFacts(gpus(SM120),
                           source="DSV4_LAUNCH_GPU_CAPABILITY")))
    assert not any("Ray worker" in w for w in told.warnings)
    seeing = make_plan(Facts(args=args, model=classify(M, V4, "test"), gpus=GpuFacts(gpus(SM120), source="nvml")))
    assert not any("Ray worker" in w for w in seeing.warnings)


def test_ambiguous_gpu_numbering_only_warns_about_gpus_that_may_not_be_used():
    # H200 + A100, CUDA_VISIBLE_DEVICES=0 in FASTEST_FIRST order: either GPU may be device 0.
    sel = GpuSelection(gpus(SM90, SM80).gpus, ambiguous=True, count=1)
    p = plan([M], gpu=sel)
    assert p.refusals == ()
    assert any("SM 8.0" in w and "CUDA_DEVICE_ORDER=PCI_BUS_ID" in w for w in p.warnings)
    # what fails on any GPU is still refused
    p = plan([M, "--block-size", "64"], gpu=sel)
    assert len(p.refusals) == 1 and "--block-size 64" in p.refusals[0]


@pytest.mark.parametrize("version", ["0.33.0", None, "0.40.0"])
@pytest.mark.parametrize("value", ["fp9", "Auto", "bf16"])
def test_an_invalid_value_is_vllms_own_error_not_a_refusal(version, value):
    # vLLM rejects these itself at once (pydantic's Literal from 0.25 on): say so, do not refuse
    # with a reason about layouts (issue: "has no fp9 variant … fails at layer construction").
    p = plan([M, "--kv-cache-dtype", value], version=version)
    assert p.refusals == ()
    (line,) = [w for w in p.warnings if f"--kv-cache-dtype {value}: not a value" in w]
    assert "rejects it itself" in line and "fp8_ds_mla" in line  # the valid values are listed
    assert not any("variant" in w for w in p.warnings)


def test_an_invalid_value_on_0_24_is_rejected_by_its_parser():
    p = plan([M, "--kv-cache-dtype", "fp9"], version="0.24.0")
    assert p.refusals == () and any("invalid choice: 'fp9'" in w for w in p.warnings)


def test_counts_are_worded_for_one_and_many():
    (line,) = plan([M, "-tp", "2"], gpu=GpuSelection(())).refusals
    assert "needs 2 GPUs on this node, but 0 are visible" in line
    (line,) = plan([M, "-tp", "2"], gpu=gpus(SM120)).refusals
    assert "needs 2 GPUs on this node, but 1 is visible" in line
    # vLLM's own check applies only to a world size above 1 and no executor backend given
    assert plan([M], gpu=GpuSelection(())).refusals == ()
    assert plan([M, "-tp", "2", "--distributed-executor-backend", "mp"], gpu=gpus(SM120)).refusals == ()

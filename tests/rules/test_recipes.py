"""The official DeepSeek-V4 recipes plan with exit 0, and what cannot fit is still refused —
end to end through ``dsv4-launch plan --json`` (the same pipeline as dsv4-serve), with the
checkpoint's size from the known-checkpoint table and from a downloaded checkpoint's own index.

Faked: the GPUs (a GpuReport of the named cards, with the memory NVML reports for them) and the
vLLM install (vLLM 0.33.0, the newest release, not imported). The checkpoint directory is real:
config.json, model.safetensors.index.json and shard files of the right names.
"""

from __future__ import annotations

import io
import json

import pytest

from dsv4_launch.adapters.checkpoints import known_checkpoint
from dsv4_launch.adapters.nvml import GpuReport
from dsv4_launch.adapters.vllm_install import VllmInstall
from dsv4_launch.commands.context import Context
from dsv4_launch.commands.plan import run_plan
from dsv4_launch.core.memory.presets import parse_gpus, preset_gpus

FLASH, PRO = "deepseek-ai/DeepSeek-V4-Flash", "deepseek-ai/DeepSeek-V4-Pro"

# (what, model, GPUs, vLLM arguments): the recipes (vllm-project/recipes DeepSeek-V4-Flash.yaml /
# -Pro.yaml, README's examples); the 2 × RTX PRO 6000 one with the --max-model-len and batch the
# examples carry.
RECIPES = [
    ("Flash 2 × RTX PRO 6000 TP 2", FLASH, "2xRTXPRO6000",
     ["-tp", "2", "--max-model-len", "65536", "--max-num-batched-tokens", "2048"]),
    ("Flash 4 × H100 TP 4", FLASH, "4xH100", ["-tp", "4"]),
    ("Flash 8 × B200 DP 8 + EP", FLASH, "8xB200", ["-dp", "8", "--enable-expert-parallel"]),
    ("Pro 8 × H200 DP 8 + EP at 0.95", PRO, "8xH200",
     ["--data-parallel-size", "8", "--enable-expert-parallel", "--gpu-memory-utilization", "0.95"]),
    ("Pro 8 × B200 DP 8 + EP", PRO, "8xB200", ["-dp", "8", "--enable-expert-parallel"]),
    ("Pro TP 8 on 8 × H200", PRO, "8xH200", ["-tp", "8"]),
    # the recipe page's full H200 command (DeepSeek-V4-Pro.yaml: default variant 0813 with DSpark,
    # single_node_dep, the hopper override)
    ("Pro-0813 8 × H200 DP 8 + EP, the recipe's whole command", "deepseek-ai/DeepSeek-V4-Pro-0813", "8xH200",
     ["--trust-remote-code", "--kv-cache-dtype", "fp8", "--block-size", "256", "--data-parallel-size", "8",
      "--enable-expert-parallel", "--max-model-len", "200000", "--gpu-memory-utilization", "0.95",
      "--max-num-seqs", "16", "--no-enable-flashinfer-autotune", "--compilation-config",
      '{"mode": 0, "cudagraph_mode": "FULL_DECODE_ONLY"}', "--speculative-config",
      '{"method":"dspark","num_speculative_tokens":7,"draft_sample_method":"probabilistic"}']),
]
REFUSED = [
    ("Flash on one 96 GB GPU", FLASH, "1xRTXPRO6000", []),
    ("Pro TP 8 on 8 × H100 80 GB", PRO, "8xH100", ["-tp", "8"]),
]


def probe_for(gpus: str):
    count, preset = parse_gpus(gpus)
    return lambda: GpuReport(gpus=preset_gpus(count, preset), source="nvml")


def downloaded(tmp_path, model: str) -> str:
    """A local copy of the checkpoint: its config.json, an index whose metadata.total_size is the
    table's size, and every shard file the index names — sparse files whose sizes add up to it."""
    entry = known_checkpoint(model)
    folder = tmp_path / model.split("/")[-1]
    folder.mkdir()
    (folder / "config.json").write_text(json.dumps(entry["config"]))
    shards = [f"model-{i:05d}-of-00046.safetensors" for i in range(1, 47)]
    weight_map = {f"layers.{i}.w": shards[i % len(shards)] for i in range(400)}
    index = {"metadata": {"total_size": entry["weights_bytes"]}, "weight_map": weight_map}
    (folder / "model.safetensors.index.json").write_text(json.dumps(index, indent=2, sort_keys=True))
    each = entry["weights_bytes"] // len(shards)
    for i, shard in enumerate(shards):
        with open(folder / shard, "wb") as handle:
            handle.truncate(each + (entry["weights_bytes"] - each * len(shards) if i == len(shards) - 1 else 0))
    return str(folder)


def plan(tmp_path, model, gpus, args, version="0.33.0"):
    out, err = io.StringIO(), io.StringIO()
    code = run_plan([model, *args], as_json=True,
                    ctx=Context(env={"HOME": str(tmp_path), "HF_HUB_OFFLINE": "1"}, stdout=out, stderr=err,
                                read_gpus=probe_for(gpus), vllm=VllmInstall(version=version, importable=True)))
    return code, json.loads(out.getvalue()), err.getvalue()


@pytest.mark.parametrize("local", [False, True], ids=["table", "downloaded"])
@pytest.mark.parametrize("what,model,gpus,args", RECIPES, ids=[r[0] for r in RECIPES])
def test_the_recipes_plan_with_exit_0(tmp_path, what, model, gpus, args, local):
    source = downloaded(tmp_path, model) if local else model
    code, data, err = plan(tmp_path, source, gpus, args)
    assert code == 0 and data["refusals"] == [], (data["refusals"], err)
    assert data["memory"]["fits"] is not False
    if local:
        assert data["memory"]["source"] != f"the known-checkpoint table ({model})"


@pytest.mark.parametrize("local", [False, True], ids=["table", "downloaded"])
@pytest.mark.parametrize("what,model,gpus,args", REFUSED, ids=[r[0] for r in REFUSED])
def test_what_cannot_fit_is_still_refused(tmp_path, what, model, gpus, args, local):
    source = downloaded(tmp_path, model) if local else model
    code, data, _ = plan(tmp_path, source, gpus, args)
    assert code == 2 and data["memory"]["fits"] is False
    assert any("weights-exceed-memory" == f["rule"] and f["level"] == "refuse" for f in data["findings"])


def test_the_2x_rtx_pro_6000_recipe_plans_without_a_context_warning(tmp_path):
    code, data, _ = plan(tmp_path, FLASH, "2xRTXPRO6000", RECIPES[0][3])
    assert not [f for f in data["findings"] if f["rule"] in ("max-model-len-too-long", "weights-tight")]


# --- every DeepSeek-V4 command of vllm-project/recipes (models/deepseek-ai/DeepSeek-V4-Flash.yaml,
# -Pro.yaml @8959cf6, 2026-08-21): base_args + the strategy's flags + the hardware's overrides, with
# and without the variant's speculative decoding; 8 GPUs per node (GB200: 4 per NVL4 tray). The
# memory part never says "does not fit" nor "more GPUs" for any of them, on any release family.
FLASH_0731, PRO_0813 = "deepseek-ai/DeepSeek-V4-Flash-0731", "deepseek-ai/DeepSeek-V4-Pro-0813"
BASE = ["--trust-remote-code", "--kv-cache-dtype", "fp8", "--block-size", "256"]
DSPARK = ["--speculative-config",
          '{"method":"dspark","num_speculative_tokens":7,"draft_sample_method":"probabilistic"}']
EP_GRAPHS = ["--compilation-config", '{"cudagraph_mode":"FULL_AND_PIECEWISE", "custom_ops":["all"]}']
BLACKWELL_FLASH = ["--attention_config.use_fp4_indexer_cache", "True", "--moe-backend", "deep_gemm_mega_moe"]
BLACKWELL_PRO = ["--attention_config.use_fp4_indexer_cache=True", "--moe-backend", "deep_gemm_mega_moe"]
HOPPER_PRO = ["--max-model-len", "200000", "--gpu-memory-utilization", "0.95", "--max-num-seqs", "16",
              "--no-enable-flashinfer-autotune", "--compilation-config",
              '{"mode": 0, "cudagraph_mode": "FULL_DECODE_ONLY"}']
OFFICIAL = [
    ("Flash-0731 8 × H200 TP 8 + EP", FLASH_0731, "8xH200", ["-tp", "8", "--enable-expert-parallel"]),
    ("Flash-0731 8 × H200 TP 8", FLASH_0731, "8xH200", ["-tp", "8", "--no-enable-flashinfer-autotune"]),
    ("Flash-0731 8 × H200 DP 4 + EP", FLASH_0731, "8xH200",
     ["--data-parallel-size", "4", "--enable-expert-parallel", *EP_GRAPHS]),
    ("Flash-0731 8 × B200 TP 8 + EP", FLASH_0731, "8xB200", ["-tp", "8", "--enable-expert-parallel", *BLACKWELL_FLASH]),
    ("Flash-0731 4 × GB200 DP 4 + EP", FLASH_0731, "4xGB200",
     ["--data-parallel-size", "4", "--enable-expert-parallel", *EP_GRAPHS, *BLACKWELL_FLASH]),
    ("Flash-0731 8 × B300 DP 4 + EP", FLASH_0731, "8xB300",
     ["--data-parallel-size", "4", "--enable-expert-parallel", *EP_GRAPHS, *BLACKWELL_FLASH]),
    ("Flash-0731 8 × RTX PRO 6000 TP 8 + EP", FLASH_0731, "8xRTXPRO6000",
     ["--enable-expert-parallel", "--tensor-parallel-size", "8", "--moe-backend", "auto",
      "--attention_config.use_fp4_indexer_cache", "False"]),
    ("Flash-0731 8 × RTX PRO 6000 TP 8", FLASH_0731, "8xRTXPRO6000",
     ["--tensor-parallel-size", "8", "--attention_config.use_fp4_indexer_cache", "False"]),
    ("Flash preview 8 × H200 TP 8 + EP, MTP 1", FLASH, "8xH200",
     ["-tp", "8", "--enable-expert-parallel", "--speculative-config", '{"method":"mtp","num_speculative_tokens":1}']),
    ("Flash preview 1 × B300 (DGX Station) TP 1, MTP 3", FLASH, "1xB300",
     ["--tensor-parallel-size", "1", "--pipeline-parallel-size", "1", "--gpu-memory-utilization", "0.92",
      "--compilation-config", '{"cudagraph_mode":"FULL_AND_PIECEWISE","custom_ops":["all"]}',
      "--max-cudagraph-capture-size", "128", "--speculative-config", '{"method":"mtp","num_speculative_tokens":3}']),
    # DGX Spark: two GB10 nodes, TP 2 across them (the recipe's multi_node_tp); the community image's
    # B12X backend flags are left out (stock vLLM's option table does not know them), the memory ones kept
    ("Flash-0731 2 × GB10 TP 2 (DGX Spark)", FLASH_0731, "2xGB10",
     ["--tensor-parallel-size", "2", "--max-num-seqs", "8", "--max-num-batched-tokens", "8192",
      "--gpu-memory-utilization", "0.85", "--enable-prefix-caching", "--max-cudagraph-capture-size", "64",
      "--compilation-config", '{"cudagraph_mode":"FULL_AND_PIECEWISE","custom_ops":["all"]}']),
    ("Pro-0813 8 × H200 DP 8 + EP (hopper)", PRO_0813, "8xH200",
     ["--data-parallel-size", "8", "--enable-expert-parallel", *EP_GRAPHS, *HOPPER_PRO]),
    ("Pro-0813 8 × H200 TP 8 + EP (hopper)", PRO_0813, "8xH200",
     ["-tp", "8", "--enable-expert-parallel", *EP_GRAPHS, *HOPPER_PRO]),
    ("Pro-0813 8 × B200 TP 8 + EP", PRO_0813, "8xB200",
     ["-tp", "8", "--enable-expert-parallel", *EP_GRAPHS, *BLACKWELL_PRO]),
    ("Pro-0813 8 × B300 DP 8 + EP", PRO_0813, "8xB300",
     ["--data-parallel-size", "8", "--enable-expert-parallel", *EP_GRAPHS, *BLACKWELL_PRO]),
    ("Pro-0813 2 × 4 GB200 DP 8 + EP", PRO_0813, "8xGB200",
     ["--data-parallel-size", "8", "--enable-expert-parallel", *EP_GRAPHS, *BLACKWELL_PRO]),
    ("Pro preview 8 × H200 DP 8 + EP, MTP 2", PRO, "8xH200",
     ["--data-parallel-size", "8", "--enable-expert-parallel", *HOPPER_PRO,
      "--speculative-config", '{"method":"mtp","num_speculative_tokens":2}']),
]


@pytest.mark.parametrize("version", ["0.24.0", "0.28.0", "0.29.0", "0.33.0"])
@pytest.mark.parametrize("spec", [False, True], ids=["plain", "dspark"])
@pytest.mark.parametrize("what,model,gpus,args", OFFICIAL, ids=[r[0] for r in OFFICIAL])
def test_no_official_recipe_is_said_not_to_fit(tmp_path, what, model, gpus, args, spec, version):
    if spec and (model not in (FLASH_0731, PRO_0813) or version == "0.24.0"):
        pytest.skip("DSpark: the fused checkpoints only, vLLM ≥ 0.25")
    code, data, err = plan(tmp_path, model, gpus, [*BASE, *args, *(DSPARK if spec else [])], version)
    memory = data["memory"]
    # short at every end we estimate is a warning, not a refusal (docs/memory.md "The four verdicts")
    assert memory["verdict"] in ("fits", "vLLM decides at start", "short at every end we estimate"), (memory, err)
    assert memory["fits"] is not False and memory["not_checked"] is None
    rows = [f for f in data["findings"] if f["rule"] in ("weights-exceed-memory", "weights-tight",
                                                         "max-model-len-too-long", "memory-not-checked")]
    assert not any(f["level"] == "refuse" for f in rows), rows
    assert not any("more GPUs" in f["text"] for f in rows), rows
    if memory["verdict"] != "fits":
        line = next(f["text"] for f in rows if f["rule"] in ("max-model-len-too-long", "weights-tight"))
        assert memory["verdict"] in line and "--max-model-len" in line


def test_the_dp_ep_recipe_on_h200_is_short_where_marlin_sizes_the_all_gather_and_fits_at_the_reported_512(tmp_path):
    # The V4-Pro recipe's hopper override (200K, 0.95) came from TP 8 + EP runs on H20-3e (recipes#617, #700);
    # what recipes#381/#832 report starting at DP 8 + EP is 800K at 512 batched tokens (tests/fixtures/memory/
    # field.json). On SM 9.0 up to 0.29 vLLM's MXFP4 kernel is Marlin (fact dsv4-mxfp4-moe-sm90), whose
    # workspaces for DP 8 × 8,192 all-gathered tokens (14.3 GiB for Pro) outgrow the ~10 GiB the weights leave:
    # short at every end, and the fix is the lever those starts used.
    dp_ep = [*BASE, "--data-parallel-size", "8", "--enable-expert-parallel", *HOPPER_PRO]
    code, data, _ = plan(tmp_path, PRO, "8xH200", dp_ep, "0.25.0")
    memory = data["memory"]
    assert code == 0 and memory["verdict"] == "short at every end we estimate"
    line = next(f["text"] for f in data["findings"] if f["rule"] == "max-model-len-too-long")
    assert "Fix: --max-num-batched-tokens" in line
    code, data, _ = plan(tmp_path, PRO, "8xH200", [*dp_ep, "--max-num-batched-tokens", "512"], "0.25.0")
    assert code == 0 and data["memory"]["verdict"] == "fits"
    # with DeepEP's all2all the kernel is not read: the all-gather stays a band, vLLM decides
    code, data, _ = plan(tmp_path, PRO, "8xH200", [*dp_ep, "--all2all-backend", "deepep_high_throughput"], "0.25.0")
    memory = data["memory"]
    assert memory["max_model_len_fits_high"] >= 200_000 > memory["max_model_len_fits_low"]
    assert memory["verdict"] == "vLLM decides at start"

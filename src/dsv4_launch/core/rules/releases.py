"""GPU families and single releases, as rows: GPUs DeepSeek-V4 has no kernels for, mixed GPUs,
and the bugs or missing features of one vLLM release (or a few) on a GPU family. Each check
sits under its row (``@row``; ``core/rules/engine.py``).
"""

from __future__ import annotations

import re

from ..facts import Facts, vllm_env_bool
from ..gpus import GpuInfo, describe_kinds
from ..vllm.facts import fact
from .engine import BOTH, CITED, DERIVED, RECIPES, REFUSE, REPORTED, WARN, Rule, row, v2_runner_env
from .kv import ASSERTS_UNTIL

ROWS: list[Rule] = []  # filled by @row, in this module's order


# --- GPU families -----------------------------------------------------------------------------

OLD_GPUS = frozenset({"3", "5", "6", "7", "8"})  # below SM 9.0: no DeepSeek-V4 kernels


@row(
    ROWS, id="sm11-thor", topic="gpus", level=WARN, evidence=DERIVED, releases={"asserts": ASSERTS_UNTIL},
    title="SM 11.x (Jetson Thor)", effect="vLLM takes the FlashMLA / fp8_ds_mla path, which ships no sm_110 "
    "kernels; dsv4-launch has no KV-cache row for it",
    message="{gpus}: vLLM's DeepSeek-V4 attention selector falls through to FlashMLA (fp8_ds_mla) on SM 11.x, "
    "whose kernels are built for SM 9.x and 10.x only, so the model is expected to fail when it first runs; "
    "dsv4-launch knows no KV-cache path for SM 11.x and leaves --kv-cache-dtype as it is",
    fix="run on SM 9.x, 10.x or 12.x GPUs; to try anyway set --kv-cache-dtype fp8 yourself (vLLM before "
    "{asserts_before} fails on auto on that path)",
    reference="vllm/models/deepseek_v4/nvidia/model.py _select_dsv4_attn_cls", models=BOTH, families=frozenset({"11"}))
def on_sm11(facts: Facts, gpu: GpuInfo | None):
    return {}  # the GPU family is the whole condition


@row(
    ROWS, id="gpu-too-old", topic="gpus", level=WARN, evidence=REPORTED,
    title="compute capability below 9.0", effect="no DeepSeek-V4 attention kernels (FlashMLA: sm_90a/sm_100f)",
    message="{gpus}: stock vLLM has no DeepSeek-V4 attention kernels below compute capability 9.0 (SM 9.x, "
    "10.x and 12.x only); the model is expected to fail when it first runs",
    fix="run on H100/H200, B200/B300 or RTX PRO 6000-class GPUs, or exclude these with CUDA_VISIBLE_DEVICES",
    reference="vllm/models/deepseek_v4/nvidia/model.py", models=BOTH, families=OLD_GPUS)
def below_sm9(facts: Facts, gpu: GpuInfo | None):
    return {}  # the GPU family is the whole condition


@row(
    ROWS, id="gb10-stock", topic="gpus", level=WARN, evidence=REPORTED,
    title="GB10 / DGX Spark (SM 12.1) with a stock vLLM release",
    effect="unverified: the recipes use a community image with b12x kernels",
    message="{gpus}: DeepSeek-V4 on GB10 is not verified with stock vLLM releases; the recipes run the "
    "eugr/spark-vllm-b12x image with --attention-backend B12X_MLA_SPARSE --moe-backend b12x --linear-backend b12x",
    fix="that image and those flags, per the DeepSeek-V4 recipe's dgx_spark_gb10 section",
    reference=f"{RECIPES} DeepSeek-V4-Flash.yaml (dgx_spark_gb10)", families=frozenset({"12.1"}))
def on_gb10(facts: Facts, gpu: GpuInfo | None):
    return {}  # the GPU family is the whole condition


@row(
    ROWS, id="mixed-gpus", topic="gpus", level=WARN, evidence=DERIVED,
    title="GPUs of different compute capability in one server",
    effect="one attention path is picked for all of them",
    message="GPUs of different compute capability in one run ({kinds}): vLLM picks one attention path for all",
    fix="run one kind per server (CUDA_VISIBLE_DEVICES)",
    reference="vllm/models/deepseek_v4/nvidia/model.py _select_dsv4_attn_cls", models=BOTH, reads_gpus=True)
def mixed_gpus(facts: Facts, gpu: GpuInfo | None):
    return {"kinds": describe_kinds(facts.known_gpus)} if len({g.capability for g in facts.known_gpus}) > 1 else None


# --- releases ---------------------------------------------------------------------------------

# Two SM 12.x reports, one release line each; each row's text names the other's bounds.
SM12_DEGENERATE = fact("sm12-0.26-garbage").range
SM12_BOOT_FAILS = fact("sm12-0.27").range


@row(
    ROWS, id="sm12-before-0.24", topic="gpus", level=WARN, evidence=DERIVED,
    title="SM 12.x with vLLM < {before:minor}",
    effect="no SM 12.x DeepSeek-V4 path: FlashMLA is selected, without sm_120 kernels",
    message="{gpus} with {vllm}: vLLM has no DeepSeek-V4 path for SM 12.x before {before}",
    fix="pip install 'vllm>={before}' in vLLM's environment",
    reference="vllm/models/deepseek_v4/nvidia/model.py@0.24.0", families=frozenset({"12"}),
    vllm=fact("sm12-before-0.24").range)
def sm12_before_path(facts: Facts, gpu: GpuInfo | None):
    return {}  # the GPU family and the release range are the whole condition


@row(
    ROWS, id="sm12-0.27", topic="gpus", level=WARN, evidence=REPORTED, releases={"degenerate": SM12_DEGENERATE},
    title="SM 12.x with vLLM {since:minor}.x", effect="fails to boot (DeepGEMM FP8 layout assertion, mHC pre-norm)",
    message="{gpus} with {vllm}: DeepSeek-V4 fails to boot on SM 12.x in {since:minor}.x (DeepGEMM 'Unknown SF "
    "transformation' in process_weights_after_loading; tf32_hc_prenorm_gemm), with no setting to avoid it",
    fix="vLLM {before} or later ({degenerate_since:minor}.x boots but has open reports of degenerate output on "
    "SM 12.x: vLLM #52938)",
    reference="vLLM #51758, #50796, #47436", families=frozenset({"12"}), vllm=SM12_BOOT_FAILS)
def sm12_boot_failure(facts: Facts, gpu: GpuInfo | None):
    return {}  # the GPU family and the release range are the whole condition


@row(
    ROWS, id="sm12-0.26-garbage", topic="gpus", level=WARN, evidence=REPORTED, releases={"boot_fails": SM12_BOOT_FAILS},
    title="SM 12.x with vLLM {since:minor}.x", effect="boots, then degenerate output: the same token at every position "
    "(RTX PRO 6000), garbled text with the default fuse_norm_quant/fuse_act_quant fusions (GB10)",
    message="{gpus} with {vllm}: DeepSeek-V4 on SM 12.x has open reports of degenerate output in {since:minor}.x "
    "(identical token at every position on 4 × RTX PRO 6000; garbled text on GB10 with the default "
    "norm/activation-quant fusions), not reproduced on {boot_fails_before}",
    fix="vLLM {boot_fails_before} or later; on {since:minor}.x the GB10 report's workaround is "
    "--compilation-config.pass_config.fuse_norm_quant=false --compilation-config.pass_config.fuse_act_quant=false",
    reference="vLLM #52938, #50773", families=frozenset({"12"}), vllm=SM12_DEGENERATE)
def sm12_degenerate_output(facts: Facts, gpu: GpuInfo | None):
    return {}  # the GPU family and the release range are the whole condition


SM12_DEEPGEMM_WARMUP_FAILS = fact("sm12-deepgemm-warmup").range  # DeepGEMM on: the FP8 warm-up fails on SM 12.x
SM12_DEEPGEMM_FAMILIES = frozenset({"12"})  # … on these GPU families (the row, and deep-gemm-env-not-int's fix)


@row(
    ROWS, id="sm12-0.24-deepgemm", topic="gpus", level=WARN, evidence=REPORTED,
    title="SM 12.x with vLLM {since} and DeepGEMM on",
    effect="`Assertion error (…layout.hpp:76): Unknown recipe` in the FP8 warm-up",
    message="{gpus} with {vllm}: DeepGEMM's FP8 warm-up fails on SM 12.x in {since} ('Unknown recipe')",
    fix="VLLM_USE_DEEP_GEMM=0 (about 4–6 % slower decoding), or a later vLLM",
    reference="vLLM #47130, #47266", families=SM12_DEEPGEMM_FAMILIES, vllm=SM12_DEEPGEMM_WARMUP_FAILS)
def deep_gemm_on(facts: Facts, gpu: GpuInfo | None):
    # envs.py: bool(int(os.getenv("VLLM_USE_DEEP_GEMM", "1"))) — off only where int() reads 0; text
    # int() fails on (the empty one too) raises before any warm-up (deep-gemm-env-not-int)
    return {} if vllm_env_bool(facts.rule_env.get("VLLM_USE_DEEP_GEMM")) in (None, True) else None


@row(
    ROWS, id="sm10-0.28-v2-runner", topic="gpus", level=WARN, evidence=REPORTED,
    title="SM 10.x with vLLM {since} on the V2 model runner", effect="generates only BOS tokens",
    message="{gpus} with {vllm}: DeepSeek-V4 on the V2 model runner ({since}'s default for it) generates only "
    "BOS tokens on SM 10.x",
    fix="VLLM_USE_V2_MODEL_RUNNER=0 (not with DSpark, which needs V2), or another vLLM release",
    reference="vLLM #55486; vllm/config/vllm.py DEFAULT_V2_MODEL_RUNNER_ARCHITECTURES@0.28.0",
    families=frozenset({"10"}), vllm=fact("sm10-0.28-v2-runner").range)
def v2_runner_on(facts: Facts, gpu: GpuInfo | None):
    return None if v2_runner_env(facts) is not True and v2_runner_env(facts) is not None else {}


@row(
    ROWS, id="h20-0.27.1", topic="gpus", level=WARN, evidence=REPORTED,
    title="H20 with vLLM {since}", effect="CUDASymmetricMemory, then an illegal address in graph capture",
    message="{gpus} with {vllm}: start-up crashes on H20 (CUDASymmetricMemory, then CUDA_ERROR_ILLEGAL_ADDRESS "
    "during CUDA graph capture)",
    fix="TORCH_SYMM_MEM_DISABLE_MULTICAST=1 (fixes the first stage only), or another vLLM release",
    reference="vLLM #53320", families=frozenset({"9"}), vllm=fact("h20-0.27.1").range)
def h20_0271(facts: Facts, gpu: GpuInfo | None):
    multicast_off = (facts.rule_env.get("TORCH_SYMM_MEM_DISABLE_MULTICAST") or "") == "1"
    return None if gpu is None or not re.search(r"\bH20\b", gpu.name or "") or multicast_off else {}


@row(
    ROWS, id="vision-before-0.30", topic="serving", level=REFUSE, evidence=CITED,
    title="DeepSeek-V4-Flash-Vision-Exp (`vision_n_layers` > 0) on vLLM < {before:minor}",
    effect="loaded as the text-only model: `There is no module or parameter named 'vision…'` at weight load",
    message="{arch_words}vision_n_layers {layers}: {vllm} has no DeepSeek-V4 vision model (added in {before}), "
    "loads it as the text-only DeepseekV4ForCausalLM and fails on the vision tensors at weight load",
    fix="vLLM {before} or later (or the recipe's vllm/vllm-openai:deepseekv4-flash-vision image)",
    reference="vllm/model_executor/models/utils.py AutoWeightsLoader; recipes DeepSeek-V4-Flash-Vision",
    vllm=fact("vision-before-0.30").range)
def vision_before_030(facts: Facts, gpu: GpuInfo | None):
    layers = facts.model.number("vision_n_layers")
    if not layers or layers <= 0:
        return None
    return {"layers": layers, "arch_words": f"{facts.model.known_id or facts.model.name} has "}


@row(
    ROWS, id="compressed-tensors-scale-names", topic="gpus", level=WARN, evidence=REPORTED,
    title="a compressed-tensors DeepSeek-V4 checkpoint on vLLM < {before:minor}",
    effect="`AttributeError: … has no attribute 'weight_scale_inv'` in the attention output projection, at the "
    "first forward pass after the weight load",
    message="{arch} is a compressed-tensors checkpoint, whose FP8 attention scales are named weight_scale; "
    "{vllm}'s DeepSeek-V4 output projection reads only wo_a.weight_scale_inv and is reported to fail with "
    "AttributeError (or KeyError at load) on such checkpoints",
    fix="vLLM {before} or later (it reads either name), or a checkpoint in DeepSeek's own FP8 format",
    reference="vllm/models/deepseek_v4/nvidia/ops/o_proj.py:66@0.24.0 (:64@0.27.0 reads either); vLLM #43564, "
    "#43290", vllm=fact("compressed-tensors-scale-names").range)
def compressed_tensors_scale_names(facts: Facts, gpu: GpuInfo | None):
    quant = (facts.model.config or {}).get("quantization_config")
    method = quant.get("quant_method") if isinstance(quant, dict) else None
    if not isinstance(method, str) or method.lower().replace("_", "-") != "compressed-tensors":
        return None
    return {"arch": facts.model.known_id or facts.model.name or "this checkpoint"}

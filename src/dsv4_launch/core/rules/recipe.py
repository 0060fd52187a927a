"""The recipes' flags, as rows: the Blackwell data-centre MoE backend copied elsewhere, the
tokenizer mode, tool-call and reasoning parsers, chat-template kwargs, and the environment the
recipes set. Each check sits under its row (``@row``; ``core/rules/engine.py``).
"""

from __future__ import annotations

from ..facts import Facts, as_int, json_option, vllm_env_bool
from ..gpus import GpuInfo, in_families
from ..memory.vllm_config import max_model_len_tried
from ..model import V41
from ..vllm.facts import fact
from .engine import BOTH, CITED, NOT_SM10, RECIPES, REFUSE, REPORTED, WARN, Rule, row, setting, v2_runner_env
from .releases import SM12_DEEPGEMM_FAMILIES, SM12_DEEPGEMM_WARMUP_FAILS

ROWS: list[Rule] = []  # filled by @row, in this module's order


# --- the MoE backend --------------------------------------------------------------------------

MEGA_MOE = "deep_gemm_mega_moe"
MEGA_MOE_SM_CHECKED_AT_BUILD = fact("mega-moe-sm-checked-at-build").range  # the SM100 check runs before the weight load


def _moe_backend(facts: Facts) -> str | None:
    value = facts.args.value("moe_backend")
    if value is None:
        value = (json_option(facts.args, "kernel_config") or {}).get("moe_backend")
    return value.lower().replace("-", "_") if isinstance(value, str) else None


@row(
    ROWS, id="mega-moe-needs-ep", topic="recipe", level=REFUSE, evidence=CITED,
    title="`--moe-backend deep_gemm_mega_moe` without `--enable-expert-parallel`",
    effect="`NotImplementedError: DeepSeek V4 MegaMoE currently requires expert parallel` when the model is built",
    message="--moe-backend deep_gemm_mega_moe without --enable-expert-parallel: {vllm} raises "
    "NotImplementedError ('DeepSeek V4 MegaMoE currently requires expert parallel') when it builds the model",
    fix="add --enable-expert-parallel on SM 10.x, or --moe-backend auto",
    reference="vllm/models/deepseek_v4/nvidia/model.py (DeepseekV4Model.__init__); recipes#760")
def mega_moe_without_ep(facts: Facts, gpu: GpuInfo | None):
    return None if _moe_backend(facts) != MEGA_MOE or facts.args.value("enable_expert_parallel") is True else {}


@row(
    ROWS, id="mega-moe-fp4", topic="recipe", level=REFUSE, evidence=CITED,
    title="`--moe-backend deep_gemm_mega_moe` on a checkpoint whose experts are not FP4 (`expert_dtype`)",
    effect="`NotImplementedError: DeepSeek V4 MegaMoE only supports fp4 experts` when the model is built",
    message="--moe-backend deep_gemm_mega_moe: this checkpoint's experts are {dtype}, and {vllm} raises "
    "NotImplementedError ('MegaMoE only supports fp4 experts') when it builds the model",
    fix="--moe-backend auto", reference="vllm/models/deepseek_v4/nvidia/model.py (DeepseekV4MoE); recipes#656")
def mega_moe_not_fp4(facts: Facts, gpu: GpuInfo | None):
    if _moe_backend(facts) != MEGA_MOE:
        return None
    dtype = (facts.model.config or {}).get("expert_dtype", "fp4")  # vLLM: getattr(config, "expert_dtype", "fp4")
    return None if dtype == "fp4" else {"dtype": dtype}


@row(
    ROWS, id="mega-moe-nvfp4", topic="recipe", level=WARN, evidence=REPORTED,
    title="`--moe-backend deep_gemm_mega_moe` on an NVFP4 checkpoint (`moe_quant_algo` NVFP4)",
    effect="passes vLLM's fp4-experts check, but MegaMoE does not run NVFP4 experts (DeepSeek-V4 builds its "
    "MegaMoE experts as MXFP4)",
    message="--moe-backend deep_gemm_mega_moe on {arch}: its routed experts are NVFP4, which vLLM's fp4-experts "
    "check lets through, but DeepSeek-V4's MegaMoE experts are built for MXFP4 weights and the recipes say "
    "MegaMoE does not support NVFP4 experts",
    fix="--moe-backend flashinfer_cutedsl on SM 10.x (the NVFP4 recipe's setting), or --moe-backend auto",
    reference="vllm/models/deepseek_v4/nvidia/model.py _init_mega_moe_experts; recipes#656; recipes "
    "DeepSeek-V4-Flash.yaml (NVFP4 notes)")
def mega_moe_nvfp4(facts: Facts, gpu: GpuInfo | None):
    if _moe_backend(facts) != MEGA_MOE:
        return None
    config = facts.model.config or {}
    quant = config.get("quantization_config")
    algo = quant.get("moe_quant_algo") if isinstance(quant, dict) else None
    if config.get("expert_dtype", "fp4") != "fp4" or not isinstance(algo, str) or algo.upper() != "NVFP4":
        return None  # not fp4 experts: mega-moe-fp4
    return {"arch": facts.model.known_id or facts.model.name or "this checkpoint"}


@row(
    ROWS, id="mega-moe-not-sm100", topic="recipe", level=REFUSE, evidence=CITED,
    releases={"at_build": MEGA_MOE_SM_CHECKED_AT_BUILD},
    title="`--moe-backend deep_gemm_mega_moe` off SM 10.x (RTX PRO 6000, H100/H200, …)",
    effect="`NotImplementedError: DeepGEMM MegaMoE requires SM100 GPUs.` — after the full weight load before "
    "{at_build_since:minor}",
    message="--moe-backend deep_gemm_mega_moe on {gpus}: DeepGEMM MegaMoE runs only on SM 10.x; {vllm} raises "
    "NotImplementedError ('DeepGEMM MegaMoE requires SM100 GPUs.'), before {at_build_since:minor} only after loading "
    "all the weights",
    fix="--moe-backend auto (the recipe's own SM 12.x setting)",
    reference="vllm/models/deepseek_v4/nvidia/model.py _check_runtime_supported (≤ 0.31), "
    "fused_moe/deep_gemm_mega_moe.py (0.32+); recipes#760", families=NOT_SM10)
def mega_moe_off_sm100(facts: Facts, gpu: GpuInfo | None):
    return {} if _moe_backend(facts) == MEGA_MOE else None


# --- chat: tokenizer, parsers, template kwargs ------------------------------------------------

V4_PARSER = "deepseek_v4"  # tool and reasoning parser name for DeepSeek-V4 in 0.24–0.33 (tool_parsers/, reasoning/)
V41_PARSER = "deepseek_v41"  # DeepSeek-V4.1's, 0.30+
# 0.24.0 registers reasoning parser deepseek_v4 as DeepSeekV3ReasoningParser itself
V3_REASONING_IS_V4 = fact("v3-reasoning-is-v4").range
THINK_MAX_MIN_LEN = 393_216  # recipes: "Think Max" needs at least this --max-model-len


@row(
    ROWS, id="tokenizer-without-template", topic="serving", level=WARN, evidence=REPORTED,
    title="`--tokenizer-mode hf` or `slow` for DeepSeek-V4",
    effect="no chat template: every chat request fails ('default chat template is no longer allowed')",
    message="--tokenizer-mode {mode}: DeepSeek-V4 ships no Jinja chat template, so every chat request fails "
    "('default chat template is no longer allowed'); vLLM picks its deepseek_v4 tokenizer mode by itself",
    fix="drop the option", reference="vllm/config/model.py; modelscope/evalscope#1548")
def tokenizer_without_template(facts: Facts, gpu: GpuInfo | None):
    mode = facts.args.value("tokenizer_mode")
    return {"mode": mode} if mode in ("hf", "slow") else None


@row(
    ROWS, id="v4-parsers-on-v41", topic="serving", level=WARN, evidence=REPORTED,
    title="DeepSeek-V4.1 with the V4 tool-call or reasoning parser",
    effect="tool calls silently unparsed (V4.1 uses spaced DSML tags)",
    message="{used} on DeepSeek-V4.1: the V4 parsers treat V4.1's spaced DSML tags as plain text, so tool calls "
    "are silently not parsed",
    fix=f"--tool-call-parser {V41_PARSER} --reasoning-parser {V41_PARSER}",
    reference="vllm/tool_parsers/__init__.py; smg-project/smg#2525", models=frozenset({V41}),
    vllm=fact("v4-parsers-on-v41").range)
def v4_parsers_on_v41(facts: Facts, gpu: GpuInfo | None):
    used = [f"--{name.replace('_', '-')} {facts.args.value(name)}" for name in ("tool_call_parser", "reasoning_parser")
            if facts.args.value(name) == "deepseek_v4"]
    return {"used": " and ".join(used)} if used else None


@row(
    ROWS, id="v4-wrong-parsers", topic="serving", level=WARN, evidence=REPORTED,
    title="DeepSeek-V4 with a tool-call or reasoning parser other than `deepseek_v4` (`hermes`, `deepseek_v3`, "
    "`deepseek_v31`, `deepseek_r1`, `deepseek_v41`, …)",
    effect="starts, then tool calls leak into the answer text and reasoning is misrouted (V4 writes DSML)",
    message="{used} on DeepSeek-V4: V4 writes tool calls and reasoning in its own DSML format, which only "
    "vLLM's deepseek_v4 parsers read; with this parser tool calls leak into the answer text or the reasoning "
    "is misrouted, silently",
    fix=f"--tool-call-parser {V4_PARSER} --reasoning-parser {V4_PARSER}",
    reference="vllm/tool_parsers/__init__.py, vllm/reasoning/__init__.py; vLLM #42265, #40801, #54686")
def v4_wrong_parsers(facts: Facts, gpu: GpuInfo | None):
    used = []
    for dest, plugin in (("tool_call_parser", "tool_parser_plugin"), ("reasoning_parser", "reasoning_parser_plugin")):
        name = facts.args.value(dest)
        if not isinstance(name, str) or not name or name == V4_PARSER or facts.args.value(plugin):
            continue  # unset, right, or a plugin's own name
        if dest == "reasoning_parser" and name == "deepseek_v3" and \
                V3_REASONING_IS_V4.contains(facts.vllm_version) is not False:
            continue  # 0.24.0 registers deepseek_v4 as the very same DeepSeekV3ReasoningParser
        used.append(f"--{dest.replace('_', '-')} {name}")
    return {"used": " and ".join(used)} if used else None


@row(
    ROWS, id="think-max-short", topic="serving", level=WARN, evidence=REPORTED,
    title="\"Think Max\" (`reasoning_effort: max`) with `--max-model-len` < 393,216",
    effect="the reasoning is cut short",
    message="reasoning_effort max with --max-model-len {length}: DeepSeek-V4's Think Max mode needs at least "
    "393,216 tokens of context",
    fix="--max-model-len 393216 or more (or a lower reasoning_effort)",
    reference=f"{RECIPES} DeepSeek-V4 guide", models=BOTH)
def think_max_too_short(facts: Facts, gpu: GpuInfo | None):
    kwargs = json_option(facts.args, "default_chat_template_kwargs") or {}
    if str(kwargs.get("reasoning_effort", "")).lower() != "max":
        return None

    length = max_model_len_tried(facts)
    return None if length is None or length >= THINK_MAX_MIN_LEN else {"length": f"{length:,}"}


# --- the environment --------------------------------------------------------------------------

# Model Runner V1 is removed in 0.34.0: VLLM_USE_V2_MODEL_RUNNER leaves envs.py, and any value but "1"
# raises ValueError in validate_environ.
V1_RUNNER_EXISTS = fact("v1-runner-exists").range


def shown_env(value: str) -> str:
    """An environment value for a message: as it is, but quoted where it is empty or only blanks
    (``VLLM_USE_V2_MODEL_RUNNER=''``), which would otherwise read as nothing."""
    return repr(value) if not value.strip() else value


@row(
    ROWS, id="v2-runner-env-not-int", topic="gpus", level=WARN, evidence=CITED,
    title="`VLLM_USE_V2_MODEL_RUNNER` set to something other than an integer (`false`, `true`, `yes`)",
    effect="`ValueError: invalid literal for int() with base 10` when vLLM reads it (it parses `bool(int(v))`)",
    message="VLLM_USE_V2_MODEL_RUNNER={value}: vLLM reads this variable as bool(int(value)), so this value "
    "raises ValueError ('invalid literal for int()') when the engine configuration reads it",
    fix="VLLM_USE_V2_MODEL_RUNNER=0 (V1 model runner) or 1 (V2), or unset it",
    reference="vllm/envs.py maybe_convert_bool; vllm/config/vllm.py use_v2_model_runner", models=BOTH,
    vllm=V1_RUNNER_EXISTS)
def v2_runner_env_not_int(facts: Facts, gpu: GpuInfo | None):
    value = v2_runner_env(facts)
    return {"value": shown_env(value)} if isinstance(value, str) else None


@row(
    ROWS, id="v1-runner-removed", topic="gpus", level=REFUSE, evidence=CITED,
    title="`VLLM_USE_V2_MODEL_RUNNER` set to anything but `1` (`0`, `false`, empty), vLLM ≥ {since:minor}",
    effect="`ValueError: VLLM_USE_V2_MODEL_RUNNER=… is no longer supported: Model Runner V1 has been removed.` "
    "when the engine config is made",
    message="VLLM_USE_V2_MODEL_RUNNER={value}: {vllm} has no V1 model runner any more and refuses every value of "
    "this variable but 1 before it builds the engine configuration",
    fix="unset VLLM_USE_V2_MODEL_RUNNER",
    reference="vllm/platforms/interface.py validate_environ (from vllm/engine/arg_utils.py create_engine_config)",
    models=BOTH, vllm=fact("v1-runner-removed").range)
def v1_runner_removed(facts: Facts, gpu: GpuInfo | None):
    value = facts.rule_env.get("VLLM_USE_V2_MODEL_RUNNER")
    return {"value": shown_env(value)} if value is not None and value != "1" else None


DEEP_GEMM_READ_AT_WARMUP = fact("deep-gemm-read-at-warmup").range  # kernel_warmup.py reads it


@row(
    ROWS, id="deep-gemm-env-not-int", topic="gpus", level=WARN, evidence=CITED,
    title="`VLLM_USE_DEEP_GEMM` set to something other than an integer (`false`, `yes`, empty)",
    effect="`ValueError: invalid literal for int() with base 10` where vLLM reads it (it parses `bool(int(v))`): "
    "the kernel warm-up of every start before {warmup_before}, DeepGEMM's support check",
    message="VLLM_USE_DEEP_GEMM={value}: vLLM reads this variable as bool(int(value)), so this value raises "
    "ValueError ('invalid literal for int()') where it is read ({where})",
    fix="{fix}",
    reference="vllm/envs.py VLLM_USE_DEEP_GEMM; vllm/utils/deep_gemm.py is_deep_gemm_supported; "
    "vllm/model_executor/warmup/kernel_warmup.py", models=BOTH, releases={"warmup": DEEP_GEMM_READ_AT_WARMUP})
def deep_gemm_env_not_int(facts: Facts, gpu: GpuInfo | None):
    text = facts.rule_env.get("VLLM_USE_DEEP_GEMM")
    if not isinstance(vllm_env_bool(text), str):
        return None
    at_warmup = DEEP_GEMM_READ_AT_WARMUP.contains(facts.vllm_version)
    where = ("the kernel warm-up reads it on every start, after the weight load" if at_warmup
             else "DeepGEMM's support check, is_deep_gemm_supported" if at_warmup is False
             else f"the kernel warm-up before {DEEP_GEMM_READ_AT_WARMUP.before} on every start; "
                  "DeepGEMM's support check")
    # Where DeepGEMM on fails the FP8 warm-up (sm12-0.24-deepgemm), 1 or unset is no fix: only 0.
    sm12 = any(g.capability and in_families(g.capability, SM12_DEEPGEMM_FAMILIES) for g in facts.all_gpus)
    fix = ("VLLM_USE_DEEP_GEMM=0 (DeepGEMM off: with it on, the FP8 warm-up fails on SM 12.x in this release)"
           if sm12 and SM12_DEEPGEMM_WARMUP_FAILS.contains(facts.vllm_version) is not False
           else "VLLM_USE_DEEP_GEMM=0 (DeepGEMM off) or 1 (on, the default), or unset it")
    return {"value": shown_env(text or ""), "where": where, "fix": fix}


# DeepSeek-V4.1's own model (vllm/models/deepseek_v41/, make_layers) exists from 0.30; V4's builds
# its layers with make_layers in every release (deepseek_v4/{nvidia,amd,xpu,cpu}/model.py).
PP_PARTITION_V41 = fact("pp-partition-v41").range


# 0.34.0 adds a fourth check to get_pp_indices: a negative layer count
PP_PARTITION_NEGATIVE = fact("pp-partition-negative").range


def pp_partition_error(text: str | None, layers: int | None, pp: int, version: str | None = None) -> str | None:
    """What ``get_pp_indices`` (vllm/distributed/utils.py, the same three checks 0.24–0.33, a fourth
    from 0.34) raises for ``VLLM_PP_LAYER_PARTITION=text`` with ``num_hidden_layers=layers`` (None:
    unknown, the sum is not judged) and ``pp_size=pp`` on vLLM ``version``: its ValueError's text, or
    None (unset, or accepted). Python's ``int`` reads each part as vLLM's does (blanks, a sign,
    ``1_0``; "" fails)."""
    if text is None:
        return None
    try:
        parts = [int(part) for part in text.split(",")]
    except ValueError:
        return f"Invalid partition string: {text}"
    if len(parts) != pp:
        return f"len(partitions)={len(parts)} does not match pp_size={pp}."
    if layers is not None and sum(parts) != layers:
        return f"sum(partitions)={sum(parts)} does not match num_hidden_layers={layers}."
    if PP_PARTITION_NEGATIVE.contains(version) and any(p < 0 for p in parts):
        return f"Negative layer count in partition_list_str={text!r}."
    return None


def _even_partition(layers: int, pp: int) -> str:
    """get_pp_indices' own split without the variable: even parts, the remainder to the stages
    before the last."""
    parts = [layers // pp] * pp
    for i in range(2, layers % pp + 2):
        parts[-i] += 1
    return ",".join(map(str, parts))


@row(
    ROWS, id="pp-layer-partition-invalid", topic="parallel", level=REFUSE, evidence=CITED,
    title="`VLLM_PP_LAYER_PARTITION` that is not one layer count per pipeline stage adding up to "
    "`num_hidden_layers` (also with `--pipeline-parallel-size 1`; set but empty too; DeepSeek-V4.1 from {v41_since}; "
    "from {negative_since} also a negative count)",
    effect="`ValueError` from `get_pp_indices` (`Invalid partition string`, `len(partitions)=… does not match "
    "pp_size=…`, `sum(partitions)=… does not match num_hidden_layers=…`, from {negative_since} `Negative layer "
    "count in partition_list_str=…`) when the model builds its layers",
    message="VLLM_PP_LAYER_PARTITION={value} with {setting}: {vllm} raises ValueError ('{error}') in get_pp_indices "
    "when DeepSeek-V4 builds its layers (make_layers, on every pipeline stage)",
    fix="{fix}",
    reference="vllm/distributed/utils.py get_pp_indices; vllm/model_executor/models/utils.py make_layers",
    models=BOTH, releases={"v41": PP_PARTITION_V41, "negative": PP_PARTITION_NEGATIVE})
def pp_layer_partition_invalid(facts: Facts, gpu: GpuInfo | None):
    text = facts.rule_env.get("VLLM_PP_LAYER_PARTITION")
    if text is None or (facts.model.family == V41 and PP_PARTITION_V41.contains(facts.vllm_version) is False):
        return None
    raw = facts.args.value("pipeline_parallel_size")
    pp = 1 if raw is None else as_int(raw)
    if pp is None or pp < 1:
        return None  # not a size vLLM runs with: other rows (or vLLM's parser) speak
    # --hf-overrides may change num_hidden_layers: the sum is then not judged
    layers = None if facts.args.value("hf_overrides") else facts.model.number("num_hidden_layers")
    error = pp_partition_error(text, layers, pp, facts.vllm_version)
    if error is None:
        return None
    where = setting(facts, "pipeline_parallel_size", "--pipeline-parallel-size") if raw is not None \
        else "--pipeline-parallel-size 1 (the default)"
    if pp == 1:
        fix = ("unset VLLM_PP_LAYER_PARTITION (with one pipeline stage it can only be the layer count"
               + (f", {layers})" if layers is not None else ", num_hidden_layers)"))
    elif layers is not None and layers >= pp:
        fix = (f"unset VLLM_PP_LAYER_PARTITION (vLLM then splits the {layers} layers itself), or give {pp} "
               f"comma-separated layer counts adding up to {layers}, e.g. "
               f"VLLM_PP_LAYER_PARTITION={_even_partition(layers, pp)}")
    else:
        fix = (f"unset VLLM_PP_LAYER_PARTITION, or give {pp} comma-separated layer counts adding up to the "
               "model's num_hidden_layers")
    return {"value": shown_env(text), "setting": where, "error": error, "fix": fix}

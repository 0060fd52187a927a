"""Parallel sizes, as rows: tensor parallel against the model's heads and output groups, and
TP × PP against the GPUs this node has. Each check sits under its row (``@row``; ``core/rules/engine.py``).
"""

from __future__ import annotations

from ..facts import Facts, as_int
from ..gpus import GpuInfo
from ..vllm.facts import fact
from .engine import BOTH, CITED, REFUSE, Rule, row, setting

ROWS: list[Rule] = []  # filled by @row, in this module's order


def _tp(facts: Facts) -> int:
    tp = as_int(facts.args.value("tensor_parallel_size"))
    return tp if tp and tp > 0 else 1


def _tp_sizes(facts: Facts) -> str:
    return ", ".join(str(d) for d in (1, 2, 4, 8, 16, 32, 64, 128) if facts.model.tp_splits(d))


@row(
    ROWS, id="tp-heads", topic="parallel", level=REFUSE, evidence=CITED,
    title="`--tensor-parallel-size` not dividing `num_attention_heads`",
    effect="ValueError when the engine config is made",
    message="{setting}: {arch} has {heads} attention heads, which {tp} GPUs cannot split evenly; {vllm} refuses "
    "it when it makes the engine configuration",
    fix="a tensor-parallel size in {sizes}",
    reference="vllm/config/model.py verify_with_parallel_config", models=BOTH)
def tp_vs_heads(facts: Facts, gpu: GpuInfo | None):
    tp = _tp(facts)
    heads = facts.model.number("num_attention_heads")
    if not heads or heads % tp == 0:
        return None
    return {"setting": setting(facts, "tensor_parallel_size", "--tensor-parallel-size"), "tp": tp, "heads": heads,
            "arch": facts.model.architecture or "the model", "sizes": _tp_sizes(facts)}


# From 0.34.0 wo_a is DeepseekV4GroupedWoA, whose __init__ calls divide(n_groups, tp_size)
# (also deepseek_v41/attention.py:451@0.34.0): ensure_divisibility asserts when the model is built.
WO_A_DIVIDES = fact("wo-a-divides").range


@row(
    ROWS, id="tp-o-groups", topic="parallel", level=REFUSE, evidence=CITED,
    title="`--tensor-parallel-size` larger than `o_groups` (DeepSeek-V4-Flash: 8; Pro: 16)",
    releases={"divide": WO_A_DIVIDES},
    effect="ZeroDivisionError after the weights load (n_local_groups = o_groups // TP = 0); from {divide_since:minor} "
    "`AssertionError: <o_groups> is not divisible by <TP>` when the model is built, before the load",
    message="{setting}: {arch} has o_groups {groups}, and vLLM splits them over the tensor-parallel ranks "
    "(n_local_groups = o_groups // {tp} = 0), so {vllm} fails: ZeroDivisionError after loading the weights "
    "(from {divide_since:minor}: AssertionError '{groups} is not divisible by {tp}' when it builds the model)",
    fix="{dp} (data parallel for the other GPUs), or a tensor-parallel size in {sizes}",
    reference="vllm/models/deepseek_v4/attention.py, vllm/models/deepseek_v41/attention.py n_local_groups; "
    "quantization/utils/fp8_utils.py deepgemm_post_process_fp8_weight_block; "
    "vllm/models/deepseek_v4/common/grouped_wo_a.py (0.34+)", models=BOTH)
def tp_vs_o_groups(facts: Facts, gpu: GpuInfo | None):
    tp = _tp(facts)
    groups = facts.model.number("o_groups")
    heads = facts.model.number("num_attention_heads")
    if not groups or tp <= groups or (heads and heads % tp):
        return None  # n_local_groups = 0 only past o_groups (TP not dividing the heads: tp-heads)
    dp_gpus = tp // groups
    return {"setting": setting(facts, "tensor_parallel_size", "--tensor-parallel-size"), "tp": tp, "groups": groups,
            "arch": facts.model.architecture or "the model", "sizes": _tp_sizes(facts),
            "dp": f"--tensor-parallel-size {groups} --data-parallel-size {dp_gpus}" if dp_gpus > 1
            else f"--tensor-parallel-size {groups}"}


@row(
    ROWS, id="tp-pp-gpus", topic="parallel", level=REFUSE, evidence=CITED,
    title="TP × PP (above 1) larger than the GPUs visible here, one node, no executor backend given",
    effect="`World size (N) is larger than the number of available GPUs` when the engine config is made",
    message="{sizes} needs {needed} on this node, but {visible} visible here; {vllm} refuses it ('World size "
    "is larger than the number of available GPUs')",
    fix="lower the sizes, expose more GPUs (CUDA_VISIBLE_DEVICES), or run multi-node (--nnodes, or "
    "--distributed-executor-backend ray)",
    reference="vllm/config/parallel.py", models=BOTH)
def tp_pp_vs_visible_gpus(facts: Facts, gpu: GpuInfo | None):
    tp = _tp(facts)
    pp = as_int(facts.args.value("pipeline_parallel_size")) or 1
    # vLLM's own check (config/parallel.py): only with no executor backend given, a world size
    # above 1 and one node.
    multi_node = (as_int(facts.args.value("nnodes")) or 1) > 1 or bool(facts.args.value("headless"))
    counted = facts.gpus.selection if facts.gpus.source in ("nvml", "nvidia-smi") else None
    if (counted is None or multi_node or pp < 1 or tp * pp <= 1 or facts.args.value("distributed_executor_backend")
            is not None or tp * pp <= counted.visible_count):
        return None
    visible = counted.visible_count
    sizes = f"--tensor-parallel-size {tp}" + (f" × --pipeline-parallel-size {pp}" if pp > 1 else "")
    needed = tp * pp
    return {"sizes": sizes, "needed": f"{needed} GPU{'' if needed == 1 else 's'}",
            "visible": f"{visible} {'is' if visible == 1 else 'are'}"}

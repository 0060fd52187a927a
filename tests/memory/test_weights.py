"""core/memory/weights.py: the weights of DeepSeek-V4 by tensor class, split as vLLM splits them.

The tally is checked against every exact byte count there is (the checkpoint table's exact
figures, which are the safetensors payloads of the real checkpoints) and against the "Model
loading took" logs quoted in docs/memory.md. Nothing is faked: these are pure functions.
"""

from __future__ import annotations

import json

import pytest

from dsv4_launch.adapters.checkpoints import known_checkpoint, load_checkpoints
from dsv4_launch.core.memory.estimate import LOAD_OVERHEAD
from dsv4_launch.core.memory.weights import (
    ATTENTION,
    CLASSES,
    DRAFT,
    EMBEDDING,
    HEAD,
    ROUTED,
    SHARED,
    split_weights,
)
from tests.scaling import lines_run

GiB = 2**30
FLASH = known_checkpoint("deepseek-ai/DeepSeek-V4-Flash")
PRO = known_checkpoint("deepseek-ai/DeepSeek-V4-Pro")
NVFP4 = known_checkpoint("nvidia/DeepSeek-V4-Flash-NVFP4")
F0731 = known_checkpoint("deepseek-ai/DeepSeek-V4-Flash-0731")


def gib(n: int) -> float:
    return n / GiB


# --- the tally against every exact total ------------------------------------------------------

EXACT = [e for e in {id(e): e for e in load_checkpoints().values()}.values()
         if e.get("weights_exact") is True and "text_config" not in e["config"]]


@pytest.mark.parametrize("entry", EXACT, ids=[e["id"] for e in EXACT])
def test_the_tally_matches_every_exact_checkpoint_size_in_the_table(entry):
    w = split_weights(entry["config"], exact_total=entry["weights_bytes"])
    assert w is not None and w.checked, (entry["id"], w and w.basis)
    assert abs(w.checkpoint_bytes - entry["weights_bytes"]) <= 0.005 * entry["weights_bytes"]
    assert w.basis.startswith("from shapes, within")


def test_the_exact_totals_the_issue_names_are_among_them():
    # V4-Flash 159.6 GB, its NVFP4 168.3 GB (the safetensors payloads), to the byte
    assert split_weights(FLASH["config"]).checkpoint_bytes == 159_609_485_896
    assert split_weights(NVFP4["config"]).checkpoint_bytes == 168_266_793_544
    assert split_weights(F0731["config"]).checkpoint_bytes == 166_878_536_440


def test_a_total_the_shapes_do_not_explain_is_said_unchecked():
    w = split_weights(FLASH["config"], exact_total=170_000_000_000)
    assert not w.checked and "unchecked" in w.basis and w.deviation < -0.05
    assert split_weights(FLASH["config"]).basis == "from shapes"


def test_pro_approximate_sizes_agree_with_its_shapes():
    # The table's Pro figures are recipe GB figures (~865 GB); the shapes agree within 0.1 %.
    w = split_weights(PRO["config"], exact_total=PRO["weights_bytes"])
    assert abs(w.deviation) < 0.001


def test_classes_add_up_and_scales_are_part_of_their_class():
    w = split_weights(FLASH["config"])
    assert [c.name for c in w.classes] == list(CLASSES)
    assert sum(c.checkpoint_bytes for c in w.classes) == w.checkpoint_bytes
    routed = w.bytes_of(ROUTED)
    # MXFP4 experts: one UE8M0 byte per 32 values next to 16 packed bytes: scales are 1/17
    assert routed.scale_bytes * 17 == routed.checkpoint_bytes
    assert 0.05 < 1 - routed.checkpoint_bytes / w.loaded_bytes < 0.06  # audit §3: ≈ 5.5 % non-expert
    assert w.bytes_of(DRAFT).checkpoint_bytes == w.checkpoint_bytes - w.loaded_bytes > 3 * GiB


# --- per GPU, against the logs and the audit's shape tallies ----------------------------------

@pytest.mark.parametrize(("tp", "logged_gib"), [(2, 75.2), (4, 38.8), (8, 20.06)])
def test_flash_tp_layouts_agree_with_model_loading_took(tp, logged_gib):
    # vllm#41027 (TP 8, H100) and the Vision recipe (TP 2/4, MI350X): "Model loading took".
    # The tensors alone are a lower bound of it; with the load's own buffers within 3 %.
    per_gpu = split_weights(FLASH["config"], tp=tp).per_gpu_bytes
    assert gib(per_gpu) < logged_gib
    assert abs(gib(per_gpu + LOAD_OVERHEAD) - logged_gib) / logged_gib < 0.03


def test_pro_layouts_per_gpu_as_the_audit_tallies_them():
    tp8 = split_weights(PRO["config"], tp=8).per_gpu_bytes
    assert 101 < gib(tp8) < 104  # audit §3: ≈ 103 GiB by shapes, 104 in the tool
    dep8 = split_weights(PRO["config"], dp=8, expert_parallel=True).per_gpu_bytes
    assert 121 < gib(dep8) < 124  # audit §3: ≈ 123 GiB per DEP8 rank (was 153–156)
    assert gib(dep8 + LOAD_OVERHEAD) < 141 * 0.95  # fits an H200 at gmu 0.95


def test_dp_without_expert_parallel_shards_the_moe_over_all_ranks():
    # FusedMoEParallelConfig.make: without EP the MoE is tensor-parallel over DP × TP
    one = split_weights(FLASH["config"]).per_gpu_bytes
    dp8 = split_weights(FLASH["config"], dp=8)
    dep8 = split_weights(FLASH["config"], dp=8, expert_parallel=True)
    assert dp8.per_gpu_bytes < one / 5
    assert abs(dp8.bytes_of(ROUTED).per_gpu_bytes - dep8.bytes_of(ROUTED).per_gpu_bytes) < 0.01 * GiB
    assert dp8.bytes_of(ROUTED).split == "tensor-parallel over 8 ranks"
    assert dep8.bytes_of(ROUTED).split == "whole experts over 8 EP ranks"
    # attention and embeddings are whole on every rank of a DP replica at TP 1
    a = dp8.bytes_of(ATTENTION)
    assert a.per_gpu_bytes == a.checkpoint_bytes
    assert dp8.bytes_of(EMBEDDING).per_gpu_bytes >= dp8.bytes_of(EMBEDDING).checkpoint_bytes


def test_experts_over_ep_ranks_round_up_on_the_most_loaded_rank():
    w = split_weights(FLASH["config"], tp=1, dp=3, expert_parallel=True)  # 256 experts over 3 ranks
    routed = w.bytes_of(ROUTED)
    assert routed.per_gpu_bytes == routed.checkpoint_bytes // 256 * 86
    eplb = split_weights(FLASH["config"], dp=8, expert_parallel=True, redundant_experts=8).bytes_of(ROUTED)
    assert eplb.per_gpu_bytes == routed.checkpoint_bytes // 256 * 33


def test_sequence_parallel_replicates_the_shared_experts():
    # _use_sequence_parallel: PP 1, EP, TP > 1, DP > 1 → DeepseekV4MLP(disable_tp=True)
    sp = split_weights(FLASH["config"], tp=2, dp=4, expert_parallel=True).bytes_of(SHARED)
    assert sp.per_gpu_bytes == sp.checkpoint_bytes and "sequence parallel" in sp.split
    no_sp = split_weights(FLASH["config"], tp=2, dp=4).bytes_of(SHARED)
    assert no_sp.per_gpu_bytes < 0.51 * no_sp.checkpoint_bytes
    pp = split_weights(FLASH["config"], tp=2, pp=2, dp=2, expert_parallel=True).bytes_of(SHARED)
    assert pp.per_gpu_bytes < 0.51 * pp.checkpoint_bytes


def test_shared_experts_round_up_to_whole_blocks_per_rank():
    # DeepseekV4MLP: n_local = cdiv(intermediate // 128, tp): 2048 / 128 = 16 blocks over 6
    # ranks is 3 blocks (384) each, not 341.3
    config = dict(FLASH["config"], num_attention_heads=48, o_groups=6)
    shared = split_weights(config, tp=6).bytes_of(SHARED)
    one = split_weights(config, tp=1).bytes_of(SHARED)
    assert shared.per_gpu_bytes > one.per_gpu_bytes / 6 * 1.1


def test_pipeline_stages_split_layers_as_get_pp_indices():
    w = split_weights(FLASH["config"], pp=2)
    assert w.layers_per_stage == (22, 21)  # the remainder goes to the stages before the last
    assert split_weights(FLASH["config"], pp=4).layers_per_stage == (11, 11, 11, 10)
    assert split_weights(PRO["config"], pp=4).layers_per_stage == (15, 15, 16, 15)
    assert w.per_gpu_bytes == max(w.stages)
    assert sum(w.stages) < split_weights(FLASH["config"]).per_gpu_bytes + 0.01 * GiB  # nothing counted twice
    custom = split_weights(FLASH["config"], pp=2, pp_partition=[30, 13])  # VLLM_PP_LAYER_PARTITION
    assert custom.layers_per_stage == (30, 13) and custom.per_gpu_bytes > w.per_gpu_bytes
    assert split_weights(FLASH["config"], pp=2, pp_partition=[30, 12]) is None  # vLLM raises


def test_embeddings_on_the_first_stage_head_on_the_last():
    w = split_weights(FLASH["config"], pp=2)
    one = split_weights(FLASH["config"])
    emb, head = one.bytes_of(EMBEDDING).per_gpu_bytes, one.bytes_of(HEAD).per_gpu_bytes
    layer_bytes = (one.per_gpu_bytes - emb - head) / 43
    assert abs(w.stages[0] - (22 * layer_bytes + emb)) < 0.02 * w.stages[0]
    assert abs(w.stages[1] - (21 * layer_bytes + head)) < 0.02 * w.stages[1]


def test_draft_weights_only_with_speculative_decoding():
    plain = split_weights(FLASH["config"], tp=4)
    mtp = split_weights(FLASH["config"], tp=4, speculative=True)
    assert not plain.draft_loaded and plain.bytes_of(DRAFT).per_gpu_bytes == 0
    assert mtp.draft_loaded and mtp.loaded_bytes == mtp.checkpoint_bytes
    assert 0.8 * GiB < mtp.per_gpu_bytes - plain.per_gpu_bytes < 1.2 * GiB  # ~3.35 GiB over TP 4
    # the MTP layer lives on the last stage
    pp = split_weights(FLASH["config"], pp=2, speculative="mtp")
    assert pp.stages[0] == split_weights(FLASH["config"], pp=2).stages[0] and pp.stages[1] > pp.stages[0] - GiB
    dspark = split_weights(F0731["config"], tp=8, speculative=True)
    assert dspark.bytes_of(DRAFT).per_gpu_bytes > split_weights(F0731["config"], tp=8, speculative="mtp").bytes_of(
        DRAFT).per_gpu_bytes
    other = split_weights(FLASH["config"], speculative="ngram")
    assert not other.draft_loaded and other.notes


# --- what the tally does not model, and hostile configs ----------------------------------------

def test_what_it_cannot_tally_is_none():
    v41 = known_checkpoint("deepseek-ai/DeepSeek-V4.1-Flash")
    assert split_weights(v41["config"]) is None  # nested text_config (V4.1)
    rh = known_checkpoint("RedHatAI/DeepSeek-V4-Flash-NVFP4-FP8")
    assert split_weights(rh["config"]) is None  # compressed-tensors
    assert split_weights(FLASH["config"], tp=3) is None  # 64 heads over 3: vLLM asserts
    assert split_weights(FLASH["config"], tp=0) is None
    assert split_weights(FLASH["config"], pp=50) is None


@pytest.mark.parametrize("bad", [
    {"hidden_size": "4096"}, {"hidden_size": True}, {"hidden_size": -1}, {"hidden_size": 1 << 40},
    {"num_hidden_layers": 10**9}, {"compress_ratios": "0,4"}, {"compress_ratios": [0, "4"] * 30},
    {"compress_ratios": [0, -4] * 30}, {"quantization_config": "fp8"},
    {"quantization_config": {"quant_method": "fp8", "weight_block_size": [0, 128]}},
    {"expert_dtype": "int3"}, {"n_routed_experts": None},
])
def test_a_hostile_config_is_unknown_not_a_traceback(bad):
    assert split_weights(dict(FLASH["config"], **bad)) is None


def test_a_missing_key_takes_vllms_default():
    # transformers' DeepseekV4Config defaults, what vLLM 0.29+ builds the model with
    config = {k: v for k, v in FLASH["config"].items() if k != "moe_intermediate_size"}
    assert split_weights(config).checkpoint_bytes == 159_609_485_896
    bf16 = {k: v for k, v in FLASH["config"].items() if k != "quantization_config"}
    assert split_weights(bf16).bytes_of(ATTENTION).scale_bytes == 0


def test_a_huge_compress_ratios_list_costs_nothing_more():
    """Issue 20 class 8: a 7 MB config.json with a long compress_ratios took 19 s. Counted, not
    timed (tests/scaling.py): the lines of dsv4-launch that run are the same for 2.4 million
    entries as for 44 (only the layers' entries are read), and a layer count past MAX_LAYERS is
    refused before any per-layer work (fewer lines than Flash's 43 layers)."""
    import dsv4_launch

    def config(entries: int, **more) -> dict:
        return json.loads(json.dumps(dict(FLASH["config"], compress_ratios=[4, 128] * entries, **more)))

    huge, short = config(1_200_000), config(22)
    assert len(json.dumps(huge)) > 7_000_000
    w = split_weights(huge, tp=8, speculative=True)
    assert w is not None and w.layers_per_stage == (43,)
    assert w == split_weights(short, tp=8, speculative=True)
    assert (lines_run(dsv4_launch, lambda: split_weights(huge, tp=8, speculative=True))
            == lines_run(dsv4_launch, lambda: split_weights(short, tp=8, speculative=True)))
    too_deep = dict(huge, num_hidden_layers=2_400_000)
    assert split_weights(too_deep) is None  # past MAX_LAYERS
    assert lines_run(dsv4_launch, lambda: split_weights(too_deep)) < lines_run(dsv4_launch, lambda: split_weights(huge))


def test_shared_experts_are_replicated_by_sequence_parallelism_only_from_0_27():
    # 0.24.0–0.26.0 build DeepseekV4MLP without is_sequence_parallel (model.py:568@0.24.0)
    old = split_weights(FLASH["config"], tp=2, dp=4, expert_parallel=True, vllm_version="0.26.0").bytes_of(SHARED)
    new = split_weights(FLASH["config"], tp=2, dp=4, expert_parallel=True, vllm_version="0.27.0").bytes_of(SHARED)
    assert old.per_gpu_bytes < 0.51 * old.checkpoint_bytes and new.per_gpu_bytes == new.checkpoint_bytes


def test_load_buffers_are_the_rope_caches_and_the_topk_buffer():
    from dsv4_launch.core.memory.weights import load_buffers

    # two fp32 RoPE caches of 1M positions × 64 (sliding-window and compressed layers) + the
    # [8192, 512] int32 top-k buffer
    assert load_buffers(FLASH["config"], 8192) == 2 * 4 * 64 * 1_048_576 + 4 * 8192 * 512
    assert load_buffers(FLASH["config"], 8192, speculative=True) > load_buffers(FLASH["config"], 8192)
    assert load_buffers(known_checkpoint("deepseek-ai/DeepSeek-V4.1-Flash")["config"], 8192) is None
    for tp, logged_gib in ((2, 75.2), (4, 38.8), (8, 20.06)):
        loaded = split_weights(FLASH["config"], tp=tp).per_gpu_bytes + load_buffers(FLASH["config"], 8192)
        assert 0.97 * logged_gib < gib(loaded) < logged_gib  # a lower bound, within 3 %


def test_a_mega_moe_backend_makes_tp_ep_sequence_parallel_at_dp_1():
    # _use_sequence_parallel: moe_backend in MEGA_MOE_BACKENDS or DP > 1
    plain = split_weights(FLASH["config"], tp=8, expert_parallel=True).bytes_of(SHARED)
    mega = split_weights(FLASH["config"], tp=8, expert_parallel=True, mega_moe=True).bytes_of(SHARED)
    assert plain.per_gpu_bytes < plain.checkpoint_bytes / 4 and mega.per_gpu_bytes == mega.checkpoint_bytes


def test_deprecated_mtp_method_names_load_the_mtp_layers():
    # SpeculativeConfig: a method of MTPModelTypes other than "mtp" is replaced with "mtp"
    assert (split_weights(FLASH["config"], speculative="deepseek_mtp")
            == split_weights(FLASH["config"], speculative="mtp"))

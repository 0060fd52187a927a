"""The profile run's activation peak from the model and the layout (core/memory/activation.py):
each derived term against the shapes the cited vLLM code allocates, per release family; the
band's GB10 points; more tokens never less; how the terms coexist at the peak.

Pure: configs from the known-checkpoint table, no GPU, no vLLM (the sizes are computed here by
hand from the cited lines, not read back from the module).
"""

from __future__ import annotations

import math

import pytest

from dsv4_launch.adapters.checkpoints import known_checkpoint
from dsv4_launch.core.memory.activation import (
    IndexerLogits,
    activation_terms,
    gather_workspace_bytes,
    sequence_parallel,
    shape_of,
)

FLASH = known_checkpoint("deepseek-ai/DeepSeek-V4-Flash")["config"]
PRO = known_checkpoint("deepseek-ai/DeepSeek-V4-Pro")["config"]
GiB = 2**30
MiB = 2**20
HOPPER, BLACKWELL, SM12 = (9, 0), (10, 0), (12, 0)


def terms(config=FLASH, **kw):
    kw.setdefault("tokens", 8192)
    kw.setdefault("max_num_seqs", 256)
    return activation_terms(config, **kw)


# --- the mHC streams --------------------------------------------------------------------------------

@pytest.mark.parametrize("config,hidden", [(FLASH, 4096), (PRO, 7168)])
def test_the_residual_streams_and_the_mhc_step(config, hidden):
    t = terms(config, tokens=8192)
    assert t.term("residual streams").low == t.term("residual streams").high == 8192 * 4 * hidden * 2
    # the next residual, the sublayer output and the next layer input (bf16), old and new fp32 mixes
    step = 8192 * (4 * hidden * 2 + 2 * hidden * 2 + 2 * (4 + 16) * 4)
    assert t.term("mhc step").low == t.term("mhc step").high == step


@pytest.mark.parametrize("release,tp,dp,ep,mega,sharded", [
    ("0.33.0", 8, 2, True, False, True),  # TP + EP + DP > 1: sequence parallel
    ("0.27.0", 4, 2, True, False, True),
    ("0.26.0", 8, 2, True, False, False),  # before 0.27 there is none
    ("0.33.0", 8, 1, True, False, False),  # DP 1 without MegaMoE: none
    ("0.33.0", 8, 1, True, True, True),  # MegaMoE shards at DP 1
    ("0.33.0", 8, 2, False, False, False),  # no EP: none
    ("0.33.0", 1, 8, True, False, False),  # TP 1: nothing to shard
])
def test_sequence_parallel_splits_the_streams_over_tp(release, tp, dp, ep, mega, sharded):
    assert sequence_parallel(tp, 1, dp, ep, mega, release) is sharded
    kernel = ["deep_gemm_mega_moe"] if mega else []
    for name in ("residual streams", "mhc step"):
        t = terms(tp=tp, dp=dp, expert_parallel=ep, release=release, mega_moe=bool(kernel)).term(name)
        full = terms().term(name).high
        assert t.low == t.high == (-(-8192 // tp) * full // 8192 if sharded else full)
    assert sequence_parallel(8, 2, 2, True, False, "0.33.0") is False  # PP > 1: none


@pytest.mark.parametrize("release,v4,v41", [
    ("0.33.0", False, False), ("0.34.0", False, True), ("0.35.0", False, True), (None, False, None)])
def test_under_pipeline_parallelism_only_v4_1_shards_the_streams_and_only_from_0_34(release, v4, v41):
    # V4's _use_sequence_parallel asks for PP 1 on every release; V4.1's no longer from 0.34
    # (deepseek_v41/nvidia/model.py:271-280@0.34.0, :261-271@0.33.0); unknown release: either
    for pp in (2, 4):
        assert sequence_parallel(8, pp, 2, True, False, release) is v4
        assert sequence_parallel(8, pp, 2, True, False, release, v41=True) is v41
        assert sequence_parallel(8, pp, 1, True, False, release, v41=True) is False  # DP 1, no MegaMoE
    assert sequence_parallel(8, 1, 2, True, False, "0.33.0", v41=True) is True


def test_an_unknown_release_carries_both_possibilities():
    t = terms(tp=8, dp=2, expert_parallel=True, release=None).term("residual streams")
    assert t.low == terms().term("residual streams").high // 8 and t.high == terms().term("residual streams").high


# --- the gather workspace: FlashMLA's and the indexer's, one buffer ---------------------------------

def flashmla_bytes(length, tokens, topk, combined, ratio=4):
    rows = (-(-length // ratio) if ratio > 1 else 0) + 128 + tokens  # nvidia/flashmla.py:86-100@0.24
    size = 4 * rows * 512 * 2
    if combined:  # :101-106@0.27: [mnbt, round_up(topk + window, 128)] int32 + [mnbt] int32
        size += tokens * (-(-((topk if ratio > 1 else 0) + 128) // 128) * 128) * 4 + tokens * 4
    return size


def indexer_bytes(length, release_factor, per_entry=132):
    # get_max_prefill_buffer_size // 4 rows (indexer.py:219-229@0.24, :916-927@0.33) + the radix workspace
    rows = length * 40 // 4 if release_factor is None else length * 8 * release_factor // 4
    return rows * per_entry + 2**20


@pytest.mark.parametrize("release,combined", [("0.24.0", False), ("0.26.0", False), ("0.27.0", True),
                                              ("0.33.0", True)])
@pytest.mark.parametrize("config,topk", [(FLASH, 512), (PRO, 1024)])
def test_flashmla_reserves_its_gather_workspace_per_release(release, combined, config, topk):
    length, tokens = 1_048_576, 8192
    assert gather_workspace_bytes(shape_of(config), tokens, length, combined) == flashmla_bytes(length, tokens, topk,
                                                                                                combined)
    for capability in (HOPPER, BLACKWELL):
        t = terms(config, tokens=tokens, max_model_len=length, release=release, capability=capability)
        factor = 2 if release >= "0.32" else None
        expected = max(flashmla_bytes(length, tokens, topk, combined), indexer_bytes(length, factor))
        assert t.term("gather workspace").low == t.term("gather workspace").high == expected


@pytest.mark.parametrize("release,length,factor,expected_rows", [
    ("0.24.0", 1_048_576, None, 1_048_576 * 10), ("0.31.0", 200_000, None, 2_000_000),
    ("0.32.0", 1_048_576, None, 1_048_576 * 4),  # factor 2 above 256K
    ("0.33.0", 262_144, None, 262_144 * 10),  # factor 5 up to 256K
    ("0.33.0", 200_000, 3, 200_000 * 6),  # the user's factor
])
def test_the_indexer_gather_follows_the_release_and_max_model_len(release, length, factor, expected_rows):
    # SM 12 (FlashInfer): the indexer's is the whole workspace
    t = terms(max_model_len=length, release=release, capability=SM12, indexer_factor=factor)
    assert t.term("gather workspace").high == expected_rows * 132 + 2**20
    fp4 = terms(max_model_len=length, release=release, capability=SM12, indexer_factor=factor, fp4_indexer=True)
    assert fp4.term("gather workspace").low == expected_rows * (64 + 4) + 2**20  # MXFP4: half + 1/32
    assert fp4.term("gather workspace").high == t.term("gather workspace").high  # honoured or not: both


def test_an_unknown_release_carries_both_indexer_eras():
    t = terms(max_model_len=1_048_576, release=None, capability=SM12).term("gather workspace")
    assert (t.low, t.high) == (indexer_bytes(1_048_576, 2), indexer_bytes(1_048_576, None))


def test_the_workspace_follows_max_model_len_not_tp():
    small = terms(max_model_len=65536, release="0.33.0", capability=HOPPER).term("gather workspace").high
    large = terms(max_model_len=1_048_576, release="0.33.0", capability=HOPPER).term("gather workspace").high
    tp8 = terms(max_model_len=1_048_576, tp=8, release="0.33.0", capability=HOPPER).term("gather workspace").high
    assert small < large == tp8


@pytest.mark.parametrize("capability,backend,flashmla", [
    (SM12, None, False), (HOPPER, None, True), (BLACKWELL, None, True),
    (HOPPER, "FLASHINFER_MLA_SPARSE_DSV4", False), (SM12, "FLASHMLA_SPARSE_DSV4", True),
])
def test_flashinfer_reserves_no_flashmla_gather(capability, backend, flashmla):
    t = terms(max_model_len=262_144, release="0.33.0", capability=capability, backend=backend).term("gather workspace")
    expected = max(indexer_bytes(262_144, 5), flashmla_bytes(262_144, 8192, 512, True) if flashmla else 0)
    assert t.low == t.high == expected


def test_an_unknown_gpu_is_a_band_from_the_indexers_to_flashmlas():
    for length in (262_144, 1_048_576):
        t = terms(max_model_len=length, release="0.33.0", capability=None).term("gather workspace")
        indexer = indexer_bytes(length, 5 if length <= 262_144 else 2)
        assert (t.low, t.high) == (indexer, max(indexer, flashmla_bytes(length, 8192, 512, True)))


def test_a_sliding_window_only_model_has_no_indexer():
    config = {**FLASH, "compress_ratios": [0] * 43}
    t = terms(config, max_model_len=65536, capability=HOPPER, release="0.33.0")
    assert t.term("gather workspace").high == flashmla_bytes(65536, 8192, 512, True, ratio=1)
    assert t.term("indexer logits").high == 0
    assert terms(config, max_model_len=65536, capability=SM12, release="0.33.0").term("gather workspace").high == 0


@pytest.mark.parametrize("env_mb,expected", [(None, 512), (256, 256), (0, 0)])
def test_the_indexer_logits_stand_in(env_mb, expected):
    logits = None if env_mb is None else IndexerLogits(env_mb)
    assert terms(indexer_logits=logits).term("indexer logits").low == expected * MiB


def _vllm_034_logits(prefill_mb, decode_mb, seqs, tokens, k, length, itemsize, sm10, backend="auto", topk=512):
    """sparse_attn_indexer.py:626-664@0.34.0's arithmetic, written out line by line as vLLM does it
    (dcp 1, no PCP): the profile run's logits stand-in in bytes."""
    max_decode_tokens = min(seqs, tokens) * (1 + k)
    fp32_decode_logits = backend != "deep_select"
    chunk_decode = decode_mb * 1024 * 1024 > 0 and sm10 and backend in ("auto", "persistent") \
        and topk in (512, 1024, 2048)
    split_kv = 384 if sm10 else 256
    row_align = math.lcm(split_kv, 1024 // itemsize)
    copy_bytes = 0 if itemsize == 4 else 4
    decode_copy_bytes = copy_bytes if fp32_decode_logits else 0
    if chunk_decode:
        max_decode_tokens = min(max_decode_tokens, decode_mb * 1024 * 1024 // (itemsize * length))
        decode_copy_bytes = 0
    prefill_budget = prefill_mb * 1024 * 1024
    return max(prefill_budget // 4 * (itemsize + copy_bytes),
               max_decode_tokens * (-(-length // row_align) * row_align) * (itemsize + decode_copy_bytes))


@pytest.mark.parametrize("sm10", [True, False])
@pytest.mark.parametrize("itemsize,backend", [(4, "auto"), (2, "auto"), (2, "deep_select"), (4, "cooperative")])
@pytest.mark.parametrize("seqs,tokens,k,length", [
    (256, 8192, 0, 1_048_576), (1024, 16384, 3, 1_048_576), (16, 8192, 1, 65_536), (128, 2048, 0, 4_000),
    (512, 512, 7, 262_145),
])
def test_the_0_34_indexer_logits_follow_vllms_arithmetic(sm10, itemsize, backend, seqs, tokens, k, length):
    logits = IndexerLogits(512, 2048, rows=min(seqs, tokens) * (1 + k), itemsize=itemsize, topk_backend=backend,
                           sm10=sm10, chunk_topk=True)
    expected = _vllm_034_logits(512, 2048, seqs, tokens, k, length, itemsize, sm10, backend)
    assert logits.at(length) == (expected, expected)


def test_the_0_34_indexer_logits_on_an_unknown_gpu_are_a_band_and_grow_with_the_length():
    unknown = IndexerLogits(512, rows=1024, sm10=None, chunk_topk=True)
    low, high = unknown.at(1_048_576)
    assert (low, high) == tuple(sorted((IndexerLogits(512, rows=1024, sm10=s, chunk_topk=True).at(1_048_576)[0]
                                        for s in (True, False))))
    # SM 10's decode chunks hold 2 GiB (512 rows at 1M), each row a whole number of 768-wide splits
    assert high == 1024 * 1_048_576 * 4 > low == 512 * (-(-1_048_576 // 768) * 768) * 4
    assert IndexerLogits(512, rows=1024, sm10=False).at(4096) == (512 * MiB, 512 * MiB)  # short: the prefill budget
    assert IndexerLogits(512).at(1_048_576) == (512 * MiB, 512 * MiB)  # before 0.34: flat


def test_the_0_34_decode_chunk_cap_is_read_from_the_environment_vllm_reads():
    """VLLM_SPARSE_INDEXER_MAX_DECODE_LOGITS_MB reaches the estimate as gather reads the environment
    (core/facts.RULE_ENV): SM 10 at 1M tokens holds 512 rows of logits by default, 128 at 512 MiB."""
    from dsv4_launch.core.facts import RULE_ENV
    from dsv4_launch.core.memory.activation import _indexer_logits
    from tests.planning import facts_for

    assert "VLLM_SPARSE_INDEXER_MAX_DECODE_LOGITS_MB" in RULE_ENV
    base = facts_for(["deepseek-ai/DeepSeek-V4-Flash"], version="0.34.0", config=FLASH, gpu=None)
    for env, rows in (({}, 512), ({"VLLM_SPARSE_INDEXER_MAX_DECODE_LOGITS_MB": "512"}, 128)):
        logits = _indexer_logits(base._replace(rule_env=env), 8192, 1024, BLACKWELL, {}, {})
        low, _ = logits.at(1_048_576)
        assert low == rows * (-(-1_048_576 // 768) * 768) * 4, env


def test_the_0_34_logits_reach_the_estimate_by_release_and_gpu():
    """0.33 keeps the flat 512 MiB; 0.34 at 1M tokens on SM 12 (no decode chunks) holds the decode rows."""
    from dsv4_launch.core.memory.activation import activation_of
    from tests.planning import facts_for

    for release, expected in (("0.33.0", 512 * MiB), ("0.34.0", 256 * 1_048_576 * 4)):
        facts = facts_for(["deepseek-ai/DeepSeek-V4-Flash", "--max-num-seqs", "256"], version=release,
                          config=FLASH, gpu=None)
        term = activation_of(facts, 1, 8192, 256, capability=SM12, max_model_len=1_048_576).term("indexer logits")
        assert (term.low, term.high) == (expected, expected), release


# --- the sampler ----------------------------------------------------------------------------------

@pytest.mark.parametrize("tokens,seqs,rows", [(8192, 256, 256), (8192, 1024, 1024), (512, 4096, 512), (1, 8, 1)])
def test_the_sampler_has_one_row_per_dummy_request(tokens, seqs, rows):
    t = terms(tokens=tokens, max_num_seqs=seqs).term("sampler")
    assert t.low == rows * 129_280 * (2 + 4) and t.high == rows * 129_280 * 4 * 6


def test_speculative_decoding_widens_the_sampler_at_the_high_end():
    plain, spec = terms().term("sampler"), terms(speculative=True).term("sampler")
    assert spec.low == plain.low and spec.high > plain.high


# --- the band and the peak -------------------------------------------------------------------------

@pytest.mark.parametrize("tokens,measured", [(8224, 5.30), (2048, 1.39)])
def test_the_gb10_measurements_lie_inside(tokens, measured):
    # MiaAI-Lab/DeepSeek-v4-Flash-One-DGX-Spark#4: V4-Flash, TP 1, one GB10 (SM 12.1: FlashInfer),
    # --max-model-len 262144, --max-num-seqs 1; "peak activation" 5.30 / 1.39 GiB
    peak = terms(tokens=tokens, max_num_seqs=1, capability=(12, 1), release="0.33.0", max_model_len=262_144).peak
    assert peak.low / GiB <= measured <= peak.high / GiB, peak
    if tokens == 8224:  # the band's middle was fitted there
        assert abs((peak.low + peak.high) / 2 / GiB - measured) / measured < 0.02


@pytest.mark.parametrize("config", [FLASH, PRO])
@pytest.mark.parametrize("layout", [dict(), dict(tp=8), dict(dp=8, expert_parallel=True),
                                    dict(tp=4, dp=2, expert_parallel=True)])
@pytest.mark.parametrize("capability", [HOPPER, SM12, None])
def test_more_tokens_never_less(config, layout, capability):
    last = None
    for tokens in (1, 256, 2048, 8192, 8193, 16384, 32768, 65536):
        peak = terms(config, tokens=tokens, max_num_seqs=1024, capability=capability, release="0.33.0",
                     max_model_len=262_144, **layout).peak
        assert 0 <= peak.low <= peak.high
        if last:
            assert peak.low >= last.low and peak.high >= last.high, (tokens, peak, last)
        last = peak


@pytest.mark.parametrize("release", ["0.24.0", "0.27.0", "0.32.0", "0.33.0", None])
@pytest.mark.parametrize("capability", [HOPPER, SM12, None])
def test_a_longer_max_model_len_never_less_within_the_indexers_segments(release, capability):
    for lengths in ((4096, 65_536, 200_000, 262_144), (262_145, 524_288, 1_048_576)):
        last = None
        for length in lengths:
            peak = terms(max_model_len=length, release=release, capability=capability).peak
            if last:
                assert peak.low >= last.low and peak.high >= last.high, (length, peak, last)
            last = peak


def test_from_0_32_the_peak_drops_past_256k_as_vllms_factor_does():
    at, past = (terms(max_model_len=n, release="0.33.0", capability=SM12).term("gather workspace").high
                for n in (262_144, 262_145))
    assert past < at  # factor 5 -> 2 (config/vllm.py:1866-1874@0.33)
    before = [terms(max_model_len=n, release="0.31.0", capability=SM12).term("gather workspace").high
              for n in (262_144, 262_145)]
    assert before[0] < before[1]


def test_the_peak_is_the_forward_or_the_sampler_with_the_workspace_held():
    a = terms(tokens=8192, max_num_seqs=256, capability=HOPPER, release="0.33.0", max_model_len=1_048_576)
    res, step, ws, logits, rest, sampler = (a.term(n) for n in ("residual streams", "mhc step", "gather workspace",
                                                                "indexer logits", "intermediates", "sampler"))
    assert a.peak.high == max(res.high + ws.high + max(step.high, logits.high + rest.high), ws.high + sampler.high)
    assert a.term("moe all-gather").high == 0
    # the low end: the workspace manager's buffer may hold the MoE's workspaces too (one buffer)
    assert a.peak.low == max(res.low + max(step.low + ws.low, ws.low + logits.low, rest.low), ws.low + sampler.low)
    assert "peak at the forward" in a.peak.basis
    # many requests, few tokens: the sampler
    b = terms(tokens=2048, max_num_seqs=2048, capability=HOPPER, release="0.33.0", max_model_len=65536)
    assert "peak at the sampler" in b.peak.basis
    assert b.peak.low == b.term("gather workspace").low + b.term("sampler").low


@pytest.mark.parametrize("config,inter,hidden", [(FLASH, 2048, 4096), (PRO, 3072, 7168)])
@pytest.mark.parametrize("dp", [2, 8])
def test_dp_ep_adds_the_all_gathered_moe_workspaces_at_the_high_end(config, inter, hidden, dp):
    # Marlin: M·topk·max(N, K) + M·topk·max(2N, K) bf16 (experts/marlin_moe.py:691-719@0.33), N = 2 × intermediate,
    # M = the DP ranks' tokens all-gathered; the band holds M = T already
    t = terms(config, tokens=8192, dp=dp, expert_parallel=True, release="0.33.0", capability=HOPPER)
    n = 2 * inter
    extra = (dp - 1) * 8192 * 6 * (max(n, hidden) + max(2 * n, hidden)) * 2
    assert t.term("moe all-gather").low == 0 and t.term("moe all-gather").high == extra
    plain = terms(config, tokens=8192, dp=dp, release="0.33.0", capability=HOPPER)  # DP without EP: none
    assert plain.term("moe all-gather").high == 0
    assert t.peak.high - extra == max(t.term("residual streams").high + t.term("gather workspace").high + max(
        t.term("mhc step").high, t.term("indexer logits").high + t.term("intermediates").high),
        t.term("gather workspace").high + t.term("sampler").high)


def _dp_ep(release, *extra, config=PRO, gpu=HOPPER, dp=8, tp=1):
    from dsv4_launch.core.memory.activation import activation_of
    from tests.planning import facts_for, gpus

    facts = facts_for(["deepseek-ai/DeepSeek-V4-Pro", *extra], version=release, config=config,
                      gpu=gpus(*[gpu] * (dp * tp)))
    return activation_of(facts, tp, 8192, 256, dp=dp, expert_parallel=True, max_model_len=200_000)


def _marlin(config, m):  # experts/marlin_moe.py:664-665@0.34: N = 2 × intermediate, bf16
    k, n = config["hidden_size"], 2 * config["moe_intermediate_size"]
    return m * 6 * (max(n, k) + max(2 * n, k)) * 2


def _humming(config, m, high):  # get_buffer_metas under EP: 16-bit outputs, ≤ 16-bit inputs
    k, i = config["hidden_size"], config["moe_intermediate_size"]
    return m * ((6 * max(i, k)) if high else k) * 2 + m * 6 * max(2 * i, k) * 2


@pytest.mark.parametrize("release,kernels", [("0.24.0", ("marlin",)), ("0.29.0", ("marlin",)), ("0.31.0", ("marlin",)),
                                             ("0.32.0", ("humming", "marlin")), ("0.34.0", ("humming", "marlin")),
                                             ("0.23.0", ()), (None, ())])
def test_on_sm_9_the_release_settles_the_mxfp4_kernel_that_sizes_the_all_gather(release, kernels):
    from dsv4_launch.core.memory.activation import gathered_kernels

    ask = dict(tp=1, pp=1, dp=8, expert_parallel=True, release=release)
    assert gathered_kernels(PRO, "", capability=HOPPER, **ask) == kernels
    assert gathered_kernels(PRO, "auto", capability=HOPPER, **ask) == kernels
    # another GPU (TRTLLM or DeepGEMM may take it), or one not known: not read
    assert gathered_kernels(PRO, "", capability=BLACKWELL, **ask) == ()
    assert gathered_kernels(PRO, "", capability=None, **ask) == ()


def test_what_else_leaves_the_all_gather_kernel_unread():
    from dsv4_launch.core.memory.activation import gathered_kernels

    ask = dict(tp=1, pp=1, dp=8, expert_parallel=True, release="0.29.0", capability=HOPPER)
    assert gathered_kernels(PRO, "", **ask) == ("marlin",)
    assert gathered_kernels(PRO, "", **{**ask, "tp": 2}) == ()  # sequence parallel: not modelled here
    assert gathered_kernels(PRO, "", **{**ask, "dp": 1}) == ()
    assert gathered_kernels(PRO, "", **{**ask, "expert_parallel": False}) == ()
    assert gathered_kernels(PRO, "", all2all="deepep_high_throughput", **ask) == ()
    assert gathered_kernels(PRO, "", all2all="allgather_reducescatter", **ask) == ("marlin",)
    assert gathered_kernels(PRO, "", dbo=True, **ask) == ()  # micro-batches halve M
    assert gathered_kernels(PRO, "flashinfer_trtllm", **ask) == ()
    nvfp4 = known_checkpoint("nvidia/DeepSeek-V4-Flash-NVFP4")["config"]
    assert gathered_kernels(nvfp4, "", **ask) == ()  # not the MXFP4 oracle
    # asked for by name: that kernel on any GPU (Humming only where the release has its EP shapes)
    assert gathered_kernels(PRO, "marlin", **{**ask, "capability": BLACKWELL, "release": "0.33.0"}) == ("marlin",)
    assert gathered_kernels(PRO, "humming", **{**ask, "release": "0.33.0"}) == ("humming",)
    assert gathered_kernels(PRO, "humming", **ask) == ()


@pytest.mark.parametrize("config", [FLASH, PRO], ids=["flash", "pro"])
@pytest.mark.parametrize("dp", [2, 8])
def test_a_known_kernel_gives_the_all_gather_a_floor_and_humming_a_lower_ceiling(config, dp):
    from dsv4_launch.core.memory.activation import moe_gather_term

    shape, t = shape_of(config), 8192
    unknown = moe_gather_term(shape, t, dp, True)
    assert unknown.low == 0 and unknown.high == _marlin(config, (dp - 1) * t)
    marlin = moe_gather_term(shape, t, dp, True, kernels=("marlin",))
    assert (marlin.low, marlin.high) == (_marlin(config, dp * t), unknown.high)  # all M rows, in the buffer
    either = moe_gather_term(shape, t, dp, True, kernels=("humming", "marlin"))
    assert (either.low, either.high) == (_humming(config, dp * t, False), unknown.high)
    humming = moe_gather_term(shape, t, dp, True, kernels=("humming",))
    assert (humming.low, humming.high) == (_humming(config, dp * t, False), _humming(config, (dp - 1) * t, True))
    assert 0 < humming.low < marlin.low and humming.high < unknown.high
    assert moe_gather_term(shape, t, dp, True, mega=True, kernels=("marlin",)).low == 0  # MegaMoE: its own buffer


@pytest.mark.parametrize("release,floor", [("0.29.0", "marlin"), ("0.33.0", "humming"), (None, None)])
def test_the_floor_raises_the_low_peak_as_the_workspace_managers_one_buffer(release, floor):
    a = _dp_ep(release)
    res, step, ws, logits, rest, sampler, gathered = (a.term(n) for n in (
        "residual streams", "mhc step", "gather workspace", "indexer logits", "intermediates", "sampler",
        "moe all-gather"))
    m = 8 * 8192
    want = {"marlin": _marlin(PRO, m), "humming": _humming(PRO, m, False), None: 0}[floor]
    assert gathered.low == want and gathered.high == _marlin(PRO, 7 * 8192)
    buffer = max(ws.low, gathered.low)
    assert buffer > ws.low or floor is None  # Pro at DP 8: the MoE's workspaces outgrow the gather's
    assert a.peak.low == max(res.low + max(step.low + buffer, buffer + logits.low, rest.low), buffer + sampler.low)
    assert a.peak.high == max(res.high + ws.high + max(step.high, logits.high + rest.high + gathered.high),
                              ws.high + sampler.high)
    # the same start with DeepEP's all2all: the kernel is not read, the floor goes
    assert _dp_ep(release, "--all2all-backend", "deepep_high_throughput").term("moe all-gather").low == 0


@pytest.mark.parametrize("layout,ranks", [(dict(tp=1), 1), (dict(tp=8), 8), (dict(dp=8, expert_parallel=True), 8),
                                         (dict(tp=2, dp=4, expert_parallel=True), 8), (dict(dp=8), 1),
                                         (dict(tp=4, dp=2), 4)])
def test_the_band_splits_over_the_ranks_sharing_the_work_at_the_low_end_only(layout, ranks):
    one, t = terms().term("intermediates"), terms(**layout).term("intermediates")
    assert t.low == int(int(0.58 * MiB) * 0.9 / ranks * 8192) and t.high == one.high


def test_a_config_without_the_fields_reads_v4_flash():
    assert shape_of({}) == shape_of(None) == shape_of({"hidden_size": "x"})
    assert shape_of({"text_config": {"hidden_size": 7168}}).hidden == 7168


# --- the search's numbers-only peak ------------------------------------------------------------------

@pytest.mark.parametrize("config", [FLASH, PRO])
@pytest.mark.parametrize("settings", [
    dict(tokens=8192, max_num_seqs=256, release="0.24.0", capability=SM12),
    dict(tokens=2048, max_num_seqs=16, release="0.33.0", capability=HOPPER, tp=8, dp=1, expert_parallel=True),
    dict(tokens=8192, max_num_seqs=256, release="0.29.0", capability=BLACKWELL, tp=1, dp=8, expert_parallel=True),
    dict(tokens=16384, max_num_seqs=None, release=None, capability=None, speculative=True),
    dict(tokens=4096, max_num_seqs=64, release="0.32.0", capability=HOPPER, fp4_indexer=True, indexer_factor=3,
         indexer_logits=IndexerLogits(0), mega_moe=True, tp=4, expert_parallel=True),
    dict(tokens=8192, max_num_seqs=256, release="0.34.0", capability=None,
         indexer_logits=IndexerLogits(512, rows=256, sm10=None, chunk_topk=True)),
])
def test_the_searchs_peak_is_the_worded_peaks_numbers(config, settings):
    """What estimate's length search reads (peak_at, no words) is activation()'s peak, at lengths
    on both sides of 0.32's 256K factor break and of the indexer's block rounding."""
    from dsv4_launch.core.memory.activation import _DummyRun

    run = _DummyRun(config, **settings)
    for length in (1, 4095, 65_536, 256 * 1024, 256 * 1024 + 1, 400_001, 1_048_576):
        peak = activation_terms(config, max_model_len=length, **settings).peak
        assert run.peak_at(length) == (peak.low, peak.high), length


@pytest.mark.parametrize("release", ["0.24.0", "0.29.0", "0.32.0", "0.34.0", None])
@pytest.mark.parametrize("dp,kernels", [(8, ()), (8, ("marlin",)), (4, ("humming", "marlin")), (2, ("humming",))])
def test_every_band_the_activation_peak_names_runs_low_to_high(release, dp, kernels):
    # the DP + EP all-gather's low end is a floor of the workspace buffer and its high end what comes
    # on top of the intermediates: said apart, never as one reversed band ("14.25–12.47 GiB")
    import re

    for config in (FLASH, PRO):
        peak = terms(config, dp=dp, expert_parallel=True, release=release, capability=HOPPER,
                     moe_kernels=kernels).peak
        bands = re.findall(r"(\d+\.\d+)–(\d+\.\d+) GiB", peak.basis)
        assert bands and all(float(a) <= float(b) for a, b in bands), peak.basis
        assert peak.low <= peak.high

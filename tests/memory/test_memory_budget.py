"""vLLM's budget before the KV cache, term by term (core/memory/budget.py), and the three
verdicts built on it (core/memory/estimate.py ``verdict``): per release family and runner, what
the CUDA-graph term is (0 exactly where vLLM takes none), that every band holds its middle, that
*fits* is said only at the pessimistic end and *does not fit* only on the weights' lower bound.

Pure: facts by hand (the GPUs are GpuInfo records, the checkpoint the known-checkpoint table);
no GPU, no vLLM. tests/vllm_real/test_memory_budget_oracle.py checks the cited vLLM code itself.
"""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dsv4_launch.adapters.checkpoints import known_checkpoint
from dsv4_launch.core.facts import RULE_ENV, Facts, GpuFacts, WeightFacts
from dsv4_launch.core.gpus import GpuInfo, GpuSelection
from dsv4_launch.core.memory.budget import GRAPH_HIGH, GRAPH_LOW, graph_env_off
from dsv4_launch.core.memory.estimate import GiB, estimate
from dsv4_launch.core.memory.verdicts import (
    DECIDES,
    DOES_NOT_FIT,
    FITS,
    NOT_CHECKED,
    SHORT,
    verdict,
    weights_certainly_over,
)
from dsv4_launch.core.model import classify
from dsv4_launch.vllm_cli.option_table import load_table
from dsv4_launch.vllm_cli.serve_args import read_serve_args

FLASH = known_checkpoint("deepseek-ai/DeepSeek-V4-Flash")
FLASH_0731 = known_checkpoint("deepseek-ai/DeepSeek-V4-Flash-0731")
PRO = known_checkpoint("deepseek-ai/DeepSeek-V4-Pro")
DSPARK = '{"method":"dspark","num_speculative_tokens":7}'


def facts(tokens=(), *, entry=FLASH, gpus=2, memory_gib=95.6, name="NVIDIA RTX PRO 6000", cc=(12, 0),
          version="0.33.0", env=None, weights=True) -> Facts:
    args = read_serve_args([entry["id"], *tokens], load_table(version), lambda p: {})
    sel = GpuSelection(tuple(GpuInfo(i, name, f"GPU-{i}", cc, int(memory_gib * GiB) if memory_gib else None)
                             for i in range(gpus)))
    w = WeightFacts(total_bytes=entry["weights_bytes"], source="test", exact=True,
                    replicated_bytes=entry["replicated_bytes"]) if weights else None
    return Facts(args=args, model=classify(entry["id"], entry["config"], "test"),
                 gpus=GpuFacts(sel, source="nvml", read=True),
                 vllm_version=version, weights=w, rule_env=dict(env or {}))


def graph(*tokens, version="0.33.0", env=None, entry=FLASH):
    e = estimate(f := facts(["-tp", "2", *tokens], version=version, env=env, entry=entry), f.weights)
    return e.term("cuda graphs"), e.runner


# --- the CUDA-graph term, per release and runner ------------------------------------------------

@pytest.mark.parametrize("version,tokens,env,runner,counted", [
    # DeepSeek-V4 on the V1 runner before 0.28: profiled (gpu_model_runner.py:6447@0.24)
    ("0.24.0", [], None, "V1", True),
    ("0.27.1", [], None, "V1", True),
    # the V2 runner by default for DeepSeek-V4 from 0.28; its profile_cudagraph_memory returns 0 until 0.29
    ("0.28.0", [], None, "V2", False),
    ("0.28.0", [], {"VLLM_USE_V2_MODEL_RUNNER": "0"}, "V1", True),
    ("0.27.1", [], {"VLLM_USE_V2_MODEL_RUNNER": "1"}, "V2", False),
    ("0.25.0", [], {"VLLM_USE_V2_MODEL_RUNNER": "1"}, "V2", False),
    # DSpark runs on the V2 runner on 0.25–0.28: nothing subtracted; from 0.29 V2 profiles its graphs
    ("0.26.0", ["--speculative-config", DSPARK], None, "V2", False),
    ("0.28.0", ["--speculative-config", DSPARK], None, "V2", False),
    ("0.29.0", ["--speculative-config", DSPARK], None, "V2", True),
    ("0.29.0", [], None, "V2", True),
    ("0.33.0", [], None, "V2", True),
    ("0.33.0", [], {"VLLM_USE_V2_MODEL_RUNNER": "0"}, "V1", True),
])
def test_the_graph_term_follows_the_release_and_the_runner(version, tokens, env, runner, counted):
    entry = FLASH_0731 if tokens else FLASH
    term, used = graph(*tokens, version=version, env=env, entry=entry)
    assert used == runner
    assert (term.low, term.high) == ((GRAPH_LOW, GRAPH_HIGH) if counted else (0, 0)), term
    if not counted:
        assert "returns 0 before 0.29" in term.basis


@pytest.mark.parametrize("tokens,env", [
    (["--enforce-eager"], None),
    (["--compilation-config", '{"cudagraph_mode": "NONE"}'], None),
    (["-cc.cudagraph_mode=NONE"], None),
    (["--compilation-config", '{"cudagraph_mode": 0}'], None),
    (["-O0"], None),
    (["-O", "0"], None),
    ([], {"VLLM_MEMORY_PROFILER_ESTIMATE_CUDAGRAPHS": "0"}),
    ([], {"VLLM_MEMORY_PROFILER_ESTIMATE_CUDAGRAPHS": "00"}),
])
@pytest.mark.parametrize("version", ["0.24.0", "0.29.0", "0.33.0"])
def test_no_graph_term_where_vllm_subtracts_none(tokens, env, version):
    term, _ = graph(*tokens, version=version, env=env)
    assert (term.low, term.high) == (0, 0), term


@pytest.mark.parametrize("tokens,env", [
    (["--compilation-config", '{"mode": 0, "cudagraph_mode": "FULL_DECODE_ONLY"}'], None),  # the H200 recipe's
    (["-O0", "--compilation-config", '{"cudagraph_mode": "FULL_AND_PIECEWISE"}'], None),  # given wins over -O0
    (["-O3"], None),
    ([], {"VLLM_MEMORY_PROFILER_ESTIMATE_CUDAGRAPHS": "1"}),
    ([], {"VLLM_MEMORY_PROFILER_ESTIMATE_CUDAGRAPHS": "7"}),
])
def test_graphs_are_counted_where_vllm_profiles_and_subtracts_them(tokens, env):
    term, _ = graph(*tokens, version="0.33.0", env=env)
    assert (term.low, term.high) == (GRAPH_LOW, GRAPH_HIGH)


def test_compilation_mode_none_without_a_cudagraph_mode_may_capture_nothing():
    term, _ = graph("--compilation-config", '{"mode": 0}')
    assert term.low == 0 and term.high == GRAPH_HIGH


@pytest.mark.parametrize("raw,off", [("0", True), ("1", False), (" 0 ", True), ("-1", False), ("", None),
                                     ("no", None), ("0x0", None)])
def test_the_graph_env_is_read_as_vllm_reads_it(raw, off):
    # envs.py: bool(int(os.getenv("VLLM_MEMORY_PROFILER_ESTIMATE_CUDAGRAPHS", "1"))): int() takes " 0 ",
    # raises on "", "no", "0x0" (None: vLLM fails on it, nothing assumed)
    assert graph_env_off(facts(env={"VLLM_MEMORY_PROFILER_ESTIMATE_CUDAGRAPHS": raw})) is off


def test_the_graph_env_travels_with_the_facts():
    assert "VLLM_MEMORY_PROFILER_ESTIMATE_CUDAGRAPHS" in RULE_ENV


def test_the_v2_runner_on_0_28_leaves_the_graph_band_more_for_the_kv_cache():
    def left(version, env=None):
        e = estimate(f := facts(["-tp", "2", "--max-num-batched-tokens", "2048"], version=version, env=env), f.weights)
        return e.kv_available_low, e.kv_available_high

    v1, v2 = left("0.28.0", {"VLLM_USE_V2_MODEL_RUNNER": "0"}), left("0.28.0")
    assert v2[0] - v1[0] == GRAPH_HIGH and v2[1] - v1[1] == GRAPH_LOW


# --- the bands --------------------------------------------------------------------------------------

@pytest.mark.parametrize("entry,tokens", [
    (FLASH, ["-tp", "2"]), (FLASH, ["-tp", "1", "-pp", "2"]), (PRO, ["-tp", "8"]),
    (PRO, ["-dp", "8", "--enable-expert-parallel"]), (FLASH, ["-tp", "2", "--max-num-seqs", "4096"]),
])
def test_every_band_holds_its_middle_and_what_is_left_follows(entry, tokens):
    gpus = 8 if entry is PRO else 2
    e = estimate(f := facts(tokens, entry=entry, gpus=gpus, memory_gib=140.4), f.weights)
    for name, term in e.terms:
        assert 0 <= term.low <= term.mid <= term.high, name
        assert term.basis
    assert e.kv_available_low <= e.kv_available_bytes <= e.kv_available_high
    assert e.max_model_len_fits_low <= e.max_model_len_fits <= e.max_model_len_fits_high
    spent_high = sum(t.high for _, t in e.terms)
    assert e.kv_available_low == max(e.budget_bytes - e.weights_bytes_per_gpu - spent_high, 0)


def test_the_activation_band_widens_for_the_wider_model_and_narrows_with_tp_at_its_low_end():
    def act(entry, tokens, gpus):
        e = estimate(f := facts(["--max-num-batched-tokens", "8192", *tokens], entry=entry, gpus=gpus,
                                memory_gib=140.4), f.weights)
        return e.term("activations")

    flash1, flash8, pro1 = act(FLASH, ["-tp", "1"], 1), act(FLASH, ["-tp", "8"], 8), act(PRO, ["-tp", "1"], 1)
    assert flash8.low < flash1.low and flash8.high == flash1.high  # TP splits part of the band at most
    # V4-Pro: wider streams (7,168 × 4) at both ends, the band scaled by the hidden size at the high end
    assert pro1.low > flash1.low and pro1.high > flash1.high * 1.5


def test_the_sampler_decides_the_peak_for_many_sequences_and_few_tokens():
    # SM 12 (FlashInfer): the workspace is the indexer's K-gather (1M on 0.33: factor 2, 132 B a row, + the
    # radix 1 MiB); 2,048 tokens in 2,048 dummy requests: the sampler's logits beside it
    e = estimate(f := facts(["-tp", "2", "--max-num-batched-tokens", "2048", "--max-num-seqs", "4096"]), f.weights)
    term = e.term("activations")
    workspace = 1_048_576 * 8 * 2 // 4 * 132 + 2**20
    assert term.low == workspace + 2048 * 129_280 * (2 + 4) and term.high == workspace + 2048 * 129_280 * 4 * 6
    assert "peak at the sampler" in term.basis


# --- the verdicts ---------------------------------------------------------------------------------

@pytest.mark.parametrize("tokens,gpus,memory_gib", [
    (["-tp", "2", "--max-model-len", "65536", "--max-num-batched-tokens", "2048"], 2, 95.6),
    (["-tp", "2"], 2, 95.6), (["-tp", "2", "--max-num-batched-tokens", "16384"], 2, 84), ([], 1, 95.6),
    (["-tp", "4"], 4, 79.6), (["-tp", "2", "--max-model-len", "8192"], 2, 80),
])
@pytest.mark.parametrize("version", ["0.24.0", "0.28.0", "0.33.0"])
def test_fits_only_at_the_pessimistic_end_does_not_fit_only_on_the_bound(tokens, gpus, memory_gib, version):
    f = facts(tokens, gpus=gpus, memory_gib=memory_gib, version=version)
    e = estimate(f, f.weights)
    said = verdict(f, e)
    assert said in (FITS, DECIDES, SHORT, DOES_NOT_FIT)
    assert (said == DOES_NOT_FIT) == weights_certainly_over(f, e)
    if said == FITS:
        assert e.fits and e.max_model_len_fits_low >= e.max_model_len
    if said == DECIDES:
        assert e.max_model_len_fits_low is None or e.max_model_len_fits_low < e.max_model_len or not e.fits
        assert e.max_model_len_fits_high is None or e.max_model_len_fits_high >= e.max_model_len  # straddles
    if said == SHORT:  # even the optimistic end is short
        assert e.max_model_len_fits_high < e.max_model_len


def test_without_the_gpus_memory_the_verdict_says_so():
    f = facts(["-tp", "2"], memory_gib=None)
    assert verdict(f, estimate(f, f.weights)) == NOT_CHECKED


@pytest.mark.parametrize("budget,cut,factor_low,factor_high", [(600, 256, 1, 2), (300, 256, 1, 2), (5000, 256, 1, 2),
                                                               (90, 256, 3, 1), (700, 0, 1, 1), (40, 256, 9, 9)])
def test_the_longest_length_its_own_budget_admits_is_found_across_the_break(budget, cut, factor_low, factor_high):
    # a stand-in for "the longest request the KV left at length L admits": the peak grows with L within a
    # segment and drops across the break (the indexer's factor 5 -> 2 past 256K from 0.32)
    from dsv4_launch.core.memory.estimate import _longest_at_own_length

    def longest_at(n):
        return max(budget - (n * factor_low if n <= cut else n // factor_high), 0)

    cap = 1000
    expected = max((n for n in range(1, cap + 1) if longest_at(n) >= n), default=0)
    assert _longest_at_own_length(cap, longest_at, (cut,) if cut else ()) == expected


def _old_longest_at_own_length(cap, longest_at, breaks=()):
    """The search as it was before the probes narrowed both ends (every segment, bisection): the
    count of probes the new one must not exceed."""
    best = 0
    edges = [0, *sorted(b for b in breaks if 0 < b < cap), cap]
    for a, b in zip(edges, edges[1:]):
        a += 1
        low = min(longest_at(b), b)
        if low < a:
            if longest_at(a) < a:
                continue
            low = a
        high = min(longest_at(low), b)
        while low < high:
            mid = (low + high + 1) // 2
            if longest_at(mid) >= mid:
                low = mid
            else:
                high = mid - 1
        best = max(best, low)
    return best


@settings(max_examples=400, deadline=None)
@given(cap=st.integers(1, 3000), cut=st.integers(0, 3000),
       budgets=st.tuples(st.integers(0, 4000), st.integers(0, 4000)),
       slopes=st.tuples(st.integers(0, 2000), st.integers(0, 2000)), step=st.sampled_from([1, 7, 64, 256]))
def test_the_length_search_finds_what_trying_every_length_finds(cap, cut, budgets, slopes, step):
    # Any longest_at that does not grow within a segment (a budget falling with the length, the
    # answer counted in steps as KV blocks are) and may jump at the break: the search finds what
    # trying every length finds, and probes at most twice more than the bisection it replaced (the
    # top's probe, and one a bisection's luckier path saves: 200,000 random cases never exceeded two).
    from dsv4_launch.core.memory.estimate import _longest_at_own_length

    def longest_at(n):
        seg = 0 if not cut or n <= cut else 1
        left = max(budgets[seg] - n * slopes[seg] // 1000, 0)
        return left // step * step

    breaks = (cut,) if cut else ()
    expected = max((n for n in range(1, cap + 1) if longest_at(n) >= n), default=0)
    probes = []

    def counted(n):
        probes.append(n)
        return longest_at(n)

    assert _longest_at_own_length(cap, counted, breaks) == expected
    new = len(probes)
    assert new == len(set(probes))  # no length probed twice
    probes.clear()
    assert _old_longest_at_own_length(cap, counted, breaks) == expected
    assert new <= len(set(probes)) + 2


@pytest.mark.parametrize("cap,cut", [(1_048_576, 262_144), (1_048_576, 0), (131_072, 0)])
@pytest.mark.parametrize("budget", [14_000, 300_000, 530_000, 2_000_000])
def test_the_length_search_takes_a_few_probes_where_the_peak_barely_moves(cap, cut, budget):
    # DeepSeek-V4's shape: the KV left falls by a few tokens per thousand of length (the gather
    # workspace), the answer counted in 256-token blocks, a jump up at 256K. The bisection took
    # 14-21 probes here (estimate ran it three times a plan, and again in the fix's re-plan).
    from dsv4_launch.core.memory.estimate import _longest_at_own_length

    def longest_at(n):
        slope, base = (3, budget) if not cut or n <= cut else (2, budget + budget // 20)
        return max(base - n * slope // 1000, 0) // 256 * 256

    probes = []

    def counted(n):
        probes.append(n)
        return longest_at(n)

    found = _longest_at_own_length(cap, counted, (cut,) if cut else ())
    assert found == _old_longest_at_own_length(cap, longest_at, (cut,) if cut else ())
    assert len(probes) <= 6, probes


def test_0_34_has_one_runner_for_every_speculative_method():
    """config/vllm.py:3067@0.33.0 sends suffix/custom_class drafts to the V1 runner; 0.34.0 has
    none (platforms/interface.py:1481@0.34.0), so the V2 runner's in-flight count holds for them."""
    from dsv4_launch.core.memory.vllm_config import v2_runner

    spec = ["--speculative-config", '{"method": "suffix", "num_speculative_tokens": 2}']
    assert v2_runner(facts(spec, version="0.33.0"), "suffix", 1) is False
    assert v2_runner(facts(spec, version="0.34.0"), "suffix", 1) is True

"""core/kv_plan.py and core/memory.py against the installed vLLM's own KV planner, on the CPU.

The caches are built by vLLM's own DeepSeek-V4 classes and planned by its own
``get_kv_cache_groups`` / ``get_kv_cache_configs`` (tests/vllm_real/kv_specs.py says what is a
stand-in). For DeepSeek-V4-Flash and -Pro, at several batched-token, in-flight and pipeline
settings and with either indexer, the model here must agree with vLLM within 2 % on the bytes
per token, on what one request needs at several lengths, and on the longest request a KV budget
admits (the length vLLM's refusal names).
"""

from __future__ import annotations

import importlib.metadata
import importlib.util
import os

import pytest

from dsv4_launch.core import kv_plan
from dsv4_launch.core.memory import IN_FLIGHT_TOKENS, MXFP4_INDEXER_STATE, kv_family

pytestmark = pytest.mark.rule("max-model-len-too-long")

FLASH = [0, 0] + [4, 128] * 20 + [4]  # 43 backbone layers: 2 sliding-window only, 21 CSA, 20 HCA
PRO = [128, 128] + [4, 128] * 29 + [4]  # 61: 30 CSA, 31 HCA
GiB = 2**30


@pytest.fixture(scope="module")
def planner():
    if importlib.util.find_spec("vllm") is None:
        if os.environ.get("DSV4_REQUIRE_VLLM") == "1":
            pytest.fail("DSV4_REQUIRE_VLLM=1 but vLLM is not importable here")
        pytest.skip("needs a real vLLM (see tests/vllm_real/conftest.py)")
    os.environ.setdefault("VLLM_TARGET_DEVICE", "cpu")
    from tests.vllm_real import kv_specs

    return kv_specs, importlib.metadata.version("vllm")


def _indexer(version: str, mxfp4: bool) -> tuple[str, int]:
    """The indexer state this release allocates: 68 bytes MXFP4 from 0.27, 132 before."""
    if mxfp4 and MXFP4_INDEXER_STATE.contains(version):
        return "mxfp4", 68
    return "fp8", 132


CASES = [  # (model, max_num_batched_tokens, batches in flight, PP, MXFP4 indexer)
    ("flash", 2048, 2, 1, False), ("flash", 8192, 2, 1, False), ("flash", 16384, 2, 1, False),
    ("flash", 8192, 3, 2, False), ("flash", 8192, 5, 4, False), ("flash", 8192, 2, 1, True),
    ("pro", 8192, 2, 1, False), ("pro", 16384, 2, 1, True), ("pro", 8192, 3, 2, False),
]


def _model(which):
    return FLASH if which == "flash" else PRO


def _counted(version, mnbt, in_flight):
    """What the release's window caches hold besides the window: before 0.26 there is no
    max_in_flight_tokens, and they hold max_num_batched_tokens."""
    return in_flight if IN_FLIGHT_TOKENS.contains(version) else mnbt


@pytest.mark.parametrize("which,mnbt,batches,pp,mxfp4", CASES)
def test_one_request_needs_what_vllm_charges(planner, which, mnbt, batches, pp, mxfp4):
    kv_specs, version = planner
    indexer, state = _indexer(version, mxfp4)
    ratios = _model(which)
    plans = kv_plan.stage_plans(ratios, kv_family(version), pp, indexer)
    in_flight = mnbt * batches
    counted = _counted(version, mnbt, in_flight)
    for length in (1, 4096, 65_536, 262_144, 1_048_576):
        theirs = kv_specs.need(ratios, length, mnbt, in_flight, pp, state)
        ours = [p.need(length, counted) for p in plans]
        for stage, (a, b) in enumerate(zip(ours, theirs)):
            assert abs(a - b) <= 0.02 * b, (length, stage, a, b)


@pytest.mark.parametrize("which,mnbt,batches,pp,mxfp4", CASES)
def test_bytes_per_token_are_vllms(planner, which, mnbt, batches, pp, mxfp4):
    kv_specs, version = planner
    indexer, state = _indexer(version, mxfp4)
    ratios = _model(which)
    plans = kv_plan.stage_plans(ratios, kv_family(version), pp, indexer)
    in_flight = mnbt * batches
    long, longer = kv_specs.need(ratios, 524_288, mnbt, in_flight, pp, state), \
        kv_specs.need(ratios, 1_048_576, mnbt, in_flight, pp, state)
    for plan, a, b in zip(plans, long, longer):
        theirs = (b - a) / 524_288
        assert abs(plan.bytes_per_token - theirs) <= 0.02 * theirs


@pytest.mark.parametrize("which,mnbt,batches,pp,mxfp4", CASES)
@pytest.mark.parametrize("budget_gib", [2.0, 6.2, 9.5, 30.0])
def test_the_longest_request_a_budget_admits_is_vllms(planner, which, mnbt, batches, pp, mxfp4, budget_gib):
    kv_specs, version = planner
    indexer, state = _indexer(version, mxfp4)
    ratios = _model(which)
    available = int(budget_gib * GiB)
    in_flight = mnbt * batches
    counted = _counted(version, mnbt, in_flight)
    plans = kv_plan.stage_plans(ratios, kv_family(version), pp, indexer)
    ours = min(p.longest(available, counted, 1_048_576) for p in plans)
    theirs = kv_specs.admits(ratios, available, 1_048_576, mnbt, in_flight, pp, state)
    if theirs is None:  # vLLM admits the full 1,048,576 tokens
        assert ours == 1_048_576
        return
    if pp == 1:  # vLLM's message names the estimate of the first stage that fails
        assert abs(ours - theirs) <= 0.02 * max(theirs, 1), (ours, theirs)
    if ours:  # the longest length vLLM admits on every stage: ours fits, one token more does not
        assert kv_specs.admits(ratios, available, ours, mnbt, in_flight, pp, state) is None
        assert kv_specs.admits(ratios, available, ours + 1, mnbt, in_flight, pp, state) is not None
        # and the length we would suggest (rounded down to the block) is admitted too
        if ours >= 256:
            assert kv_specs.admits(ratios, available, ours // 256 * 256, mnbt, in_flight, pp, state) is None

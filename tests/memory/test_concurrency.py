"""vLLM's "Maximum concurrency" as 0.27–0.28 count it (core/memory/kv_plan.py ``TUPLES_SLAB``),
by hand from the cited lines; tests/vllm_real/test_concurrency_oracle.py holds the same against
those releases' own code. Nothing is faked: pure functions.

0.27.0 (the same in 0.27.1 and 0.28.0): ``get_max_concurrency_for_kv_cache_config``
(v1/core/kv_cache_utils.py:937@0.27.0) prints ``num_blocks / Σ_g cdiv(group spec's
max_memory_usage_bytes, its page_size_bytes)``; a ``UniformTypeKVCacheSpecs``' max memory is its
layers' most pages × the sum of their pages (kv_cache_interface.py:851-856@0.27.0), so each group
counts the blocks of its (window, block); ``num_blocks = available // block_stride``, the stride
the densest group's Σ of its layers' pages (``_get_packed_kv_cache_layout``, :1283-1305, :1342).
"""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from dsv4_launch.core.memory import kv_plan
from dsv4_launch.core.memory.kv_plan import PACKED, TUPLES, TUPLES_SLAB, cdiv
from dsv4_launch.core.memory.vllm_config import concurrency_counted, kv_family

GiB = 2**30
FLASH = [0, 0] + [4, 128] * 20 + [4]  # 43 layers: 2 sliding-window only, 21 CSA, 20 HCA
PRO = [128, 128] + [4, 128] * 29 + [4]  # 61: 30 CSA, 31 HCA


@pytest.mark.parametrize("version,family", [
    ("0.24.0", TUPLES), ("0.26.0", TUPLES), ("0.27.0rc1", TUPLES),  # a release candidate is before its release
    ("0.27.0", TUPLES_SLAB), ("0.27.1", TUPLES_SLAB), ("0.28.0", TUPLES_SLAB), ("0.28.1.dev3", TUPLES_SLAB),
    ("0.29.0", PACKED), ("0.33.0", PACKED), (None, PACKED), ("not-a-version", PACKED),
])
def test_each_release_plans_with_its_own_family(version, family):
    assert kv_family(version) == family


@pytest.mark.parametrize("version,counted", [
    ("0.24.0", True), ("0.26.0", True), ("0.27.0", True), ("0.27.1", True), ("0.28.0", True), ("0.29.0", True),
    ("0.33.0", True), ("0.35.0", True), (None, True), ("0.23.0", False),
    ("0.24.0rc1", True),  # a pre-release of the first release: unknown, counted as an unknown release is
])
def test_the_count_is_vllms_on_every_release_read(version, counted):
    assert concurrency_counted(version) is counted


def _hand_flash(length: int, in_flight: int) -> tuple[int, int]:
    """V4-Flash, PP 1, no draft, from the layers' specs: the tuple planner's groups are the 62 full
    caches (21 indexer K + 21 CSA + 20 HCA compressed), the 43 sliding-window caches (block 64,
    window 128) split in two (22 + 21), the 42 CSA/indexer compressor states (block 4, window 8)
    and the 20 HCA compressor states (block 8, window 128)."""
    indexer_k, csa, hca = kv_plan._pad(64 * 132), kv_plan._pad(64 * 584), kv_plan._pad(2 * 584)
    stride = 21 * indexer_k + 21 * csa + 20 * hca  # the full group is the densest
    assert stride == 1_002_240

    def window(w, block):
        return cdiv(min(w - 1 + in_flight, length), block) + 1

    blocks = cdiv(length, 256) + 2 * window(128, 64) + window(8, 4) + window(128, 8)
    return stride, blocks


@pytest.mark.parametrize("length,in_flight", [(65_536, 8192), (8192, 4096), (1_048_576, 16_384), (100, 2048)])
def test_flash_on_0_27_counts_what_the_cited_lines_count(length, in_flight):
    plan = kv_plan.stage_plans(FLASH, kv_family("0.27.0"))[0]
    assert plan.concurrency_blocks(length, in_flight) == _hand_flash(length, in_flight)


def test_the_count_is_neither_0_26s_nor_available_over_need():
    # Flash at 64K, 8,192 in flight, 40 GiB: 0.27.0's own code printed 11.87× (42,853 blocks of 1,002,240
    # bytes over 3,610: tests/vllm_real/test_concurrency_oracle.py, 0.27.0's sources over the 0.24.0 venv)
    available, length, in_flight = 40 * GiB, 65_536, 8192
    slab = kv_plan.stage_plans(FLASH, TUPLES_SLAB)[0]
    block, blocks = slab.concurrency_blocks(length, in_flight)
    assert (available // block, blocks) == (42_853, 3_610)
    tuples = kv_plan.stage_plans(FLASH, TUPLES)[0]
    old_block, old_blocks = tuples.concurrency_blocks(length, in_flight)
    assert (available // old_block) / old_blocks != pytest.approx((available // block) / blocks, rel=1e-3)
    assert (available // block) / blocks > available / slab.need(length, in_flight) * 1.03


@given(which=st.sampled_from(["flash", "pro"]), pp=st.integers(1, 4), draft=st.integers(0, 3),
       retained=st.integers(0, 4), length=st.integers(1, 2_000_000), in_flight=st.integers(1, 70_000))
def test_slab_charges_as_the_tuple_planner_and_counts_every_group_on_every_stage(which, pp, draft, retained, length,
                                                                                 in_flight):
    ratios = FLASH if which == "flash" else PRO
    slab = kv_plan.stage_plans(ratios, TUPLES_SLAB, pp, draft_layers=draft, retained=retained)
    tuples = kv_plan.stage_plans(ratios, TUPLES, pp, draft_layers=draft, retained=retained)
    # the start check's charge is 0.24–0.26's (_max_memory_usage_bytes_from_groups did not change)
    assert [p.need(length, in_flight) for p in slab] == [p.need(length, in_flight) for p in tuples]
    # every stage counts every group of the whole model (_project_kv_cache_groups_to_worker keeps them)
    counted = [p.concurrency_blocks(length, in_flight) for p in slab]
    assert len({blocks for _, blocks in counted}) == 1
    grouping = kv_plan.group(kv_plan.layer_caches(ratios) + kv_plan.draft_caches(len(ratios), draft), TUPLES_SLAB)
    assert counted[0][1] == sum(cdiv(min(g.window + retained - 1 + in_flight, length), g.block) + 1 if g.window
                                else cdiv(length, g.block) for g in grouping.groups)
    # and its pool block is its own densest group: no stage's block is more than the whole model's
    assert all(0 < block <= max(sum(c.page for c in g.caches) for g in grouping.groups) for block, _ in counted)

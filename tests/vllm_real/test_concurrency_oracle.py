"""vLLM's printed "Maximum concurrency" (and "GPU KV cache size", that × max_model_len) for
DeepSeek-V4 against core/memory/kv_plan.py's ``StagePlan.concurrency_blocks``, on the CPU.

The caches are built and planned by the installed vLLM's own classes (tests/vllm_real/kv_specs.py
says what is a stand-in); the concurrency is the release's own
``get_max_concurrency_for_kv_cache_config`` on the KV cache config its ``get_kv_cache_configs``
returns — what ``_report_kv_cache_config`` prints. Up to 0.28 it is not available / need (the
tuple planner charges a request differently from how it counts concurrency: 1.07–1.12× above it
for V4-Flash and -Pro), so a printed concurrency read as available / need overstates the KV memory
vLLM found; from 0.29 the two agree. Exact to vLLM's float where the release has the function.
Passed 2026-12-01 on 0.24.0, 0.29.0, 0.33.0, and on 0.25.0, 0.25.1 and 0.26.0's sources laid over the
0.24.0 venv (PYTHONPATH=/path/to/vllm-src/0.26.0). 0.27.0/0.28.0's sources count differently again
(1.1543× where the tuple count gives 1.2439× and available / need 1.0999×: not modelled).
"""

from __future__ import annotations

import inspect

import pytest

from dsv4_launch.core.memory import kv_plan
from dsv4_launch.core.memory.vllm_config import IN_FLIGHT_TOKENS, kv_family
from tests.vllm_real.conftest import FLASH_RATIOS as FLASH
from tests.vllm_real.conftest import PRO_RATIOS as PRO

GiB = 2**30

pytestmark = pytest.mark.rule("max-model-len-too-long")


def theirs(kv_specs, ratios, length, available, mnbt, in_flight, draft) -> float:
    """The concurrency the release prints for one worker of ``available`` KV bytes."""
    import vllm.v1.core.kv_cache_utils as U

    P = kv_specs.P
    cfg = kv_specs.config(length, mnbt, in_flight, 1, None)
    stages, groups = kv_specs._groups(ratios, cfg, 132, 1, draft)
    if "global_kv_cache_groups" in inspect.signature(P.get_kv_cache_configs).parameters:
        config = kv_specs._call(P.get_kv_cache_configs, cfg, stages, [available], groups)[0]
    else:
        config = P.get_kv_cache_configs(cfg, stages, [available])[0]
    return U.get_max_concurrency_for_kv_cache_config(cfg, config)


# (model, length, available GiB, max_num_batched_tokens, draft layers): the field's shapes —
# vllm#51041 (Flash + MTP, 121,344 and 912,128 at 7.0–7.7 GiB), vllm#51454 (Flash at 1M, 149 GiB),
# recipes#617 (Pro at 200K, 16.6 GiB) — and a few around them (Flash at 64K, 8,192 batched: fit's example).
CASES = [("flash", 121_344, 7.71, 8192, 1), ("flash", 912_128, 7.01, 8192, 1), ("flash", 1_048_576, 149.0, 8192, 0),
         ("flash", 65_536, 30.0, 2048, 0), ("flash", 65_536, 40.0, 8192, 0), ("pro", 200_000, 16.6, 16384, 0), ("pro", 1_048_576, 60.0, 8192, 1)]


@pytest.mark.parametrize("which,length,gib,mnbt,draft", CASES)
def test_the_concurrency_vllm_prints_is_ours(planner, which, length, gib, mnbt, draft):
    kv_specs, version = planner
    ratios = FLASH if which == "flash" else PRO
    in_flight = mnbt * (2 if IN_FLIGHT_TOKENS.contains(version) else 1)
    available = int(gib * GiB)
    plan = kv_plan.stage_plans(ratios, kv_family(version), draft_layers=draft)[0]
    if not plan.fits(length, available, in_flight):
        pytest.skip("vLLM refuses this length at this memory on this release (its start check)")
    pool_block, per_request = plan.concurrency_blocks(length, in_flight)
    ours = (available // pool_block) / per_request
    assert ours == pytest.approx(theirs(kv_specs, ratios, length, available, mnbt, in_flight, draft), rel=1e-9)
    if kv_family(version) == kv_plan.TUPLES:  # the reason this exists: not available / need there
        assert ours > available / plan.need(length, in_flight) * 1.03

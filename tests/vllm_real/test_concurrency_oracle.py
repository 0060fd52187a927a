"""vLLM's printed "Maximum concurrency" (and "GPU KV cache size", that × max_model_len) for
DeepSeek-V4 against core/memory/kv_plan.py's ``StagePlan.concurrency_blocks``, on the CPU.

The caches are built and planned by the installed vLLM's own classes (tests/vllm_real/kv_specs.py
says what is a stand-in); the concurrency is the release's own
``get_max_concurrency_for_kv_cache_config`` on every worker's KV cache config its
``get_kv_cache_configs`` returns — what ``_report_kv_cache_config`` (0.24–0.26) and
``get_kv_cache_configs`` (0.27) print per worker — and, where the release has it (0.28+:
``update_kv_cache_capacity``, engine/core.py:325@0.28.0), on the scheduler's config it prints
from. Up to 0.28 it is not available / need (the tuple planner charges a request differently
from how it counts concurrency: 1.07–1.12× above it for V4-Flash and -Pro on 0.24–0.26, more on
0.27–0.28, whose slab pool counts blocks per group), so a printed concurrency read as available /
need overstates the KV memory vLLM found; from 0.29 the two agree. Exact to vLLM's float.

Passed 2026-12-01 on 0.24.0, 0.29.0, 0.33.0 (the pinned venvs), and with 0.25.0, 0.25.1, 0.26.0,
0.27.0, 0.27.1 and 0.28.0's own sources laid over the 0.24.0 venv
(``PYTHONPATH=/path/to/vllm-src/0.28.0:.``; 0.27.0 and 0.28.0 over the 0.29.0 venv too). Which
release runs is read from the running vLLM's ``vllm.version`` (a laid-over source names its own),
not the venv's installed metadata.
"""

from __future__ import annotations

import importlib
import inspect

import pytest

from dsv4_launch.core.facts import Facts, ServeArgs
from dsv4_launch.core.memory import kv_plan
from dsv4_launch.core.memory.estimate import draft_kv
from dsv4_launch.core.memory.vllm_config import IN_FLIGHT_TOKENS, kv_family
from dsv4_launch.core.model import ModelFacts
from tests.vllm_real.conftest import FLASH_RATIOS as FLASH
from tests.vllm_real.conftest import PRO_RATIOS as PRO

GiB = 2**30

pytestmark = pytest.mark.rule("max-model-len-too-long")


def running_version() -> str:
    """The release whose code runs (a source tree laid over a pinned venv names its own)."""
    return importlib.import_module("vllm.version").__version__


def theirs(kv_specs, ratios, length, available, mnbt, in_flight, draft, pp=1, spec=None) -> list[float]:
    """The concurrency the release prints for each worker of ``available`` KV bytes, then (0.28+) the
    scheduler's, which is what it prints there."""
    import vllm.v1.core.kv_cache_utils as U

    P = kv_specs.P
    cfg = kv_specs.config(length, mnbt, in_flight, pp, spec)
    stages, groups = kv_specs._groups(ratios, cfg, 132, pp, draft)
    if "global_kv_cache_groups" in inspect.signature(P.get_kv_cache_configs).parameters:
        configs = kv_specs._call(P.get_kv_cache_configs, cfg, stages, [available] * pp, groups)
    else:
        configs = P.get_kv_cache_configs(cfg, stages, [available] * pp)
    out = [U.get_max_concurrency_for_kv_cache_config(cfg, c) for c in configs]
    if hasattr(U, "update_kv_cache_capacity"):  # 0.28+: printed from the scheduler's config
        scheduler = U.generate_scheduler_kv_cache_config(configs)
        tokens, concurrency = U.get_kv_cache_capacity(cfg, scheduler)
        assert tokens == int(concurrency * length)  # "GPU KV cache size": nothing more than this
        out.append(concurrency)
    return out


def ours(plans, length, available, in_flight) -> list[float]:
    """Per stage: the fewest pool blocks of any stage (every worker gets the smallest) over the
    blocks one request is counted there."""
    counted = [p.concurrency_blocks(length, in_flight) for p in plans]
    blocks = min(available // block for block, _ in counted)
    return [blocks / per_request for _, per_request in counted]


# (model, length, available GiB, max_num_batched_tokens, draft layers): the field's shapes —
# vllm#51041 (Flash + MTP, 121,344 and 912,128 at 7.0–7.7 GiB), vllm#51454 (Flash at 1M, 149 GiB),
# recipes#617 (Pro at 200K, 16.6 GiB) — and a few around them (Flash at 64K, 8,192 batched: fit's example).
CASES = [("flash", 121_344, 7.71, 8192, 1), ("flash", 912_128, 7.01, 8192, 1), ("flash", 1_048_576, 149.0, 8192, 0),
         ("flash", 65_536, 30.0, 2048, 0), ("flash", 65_536, 40.0, 8192, 0), ("pro", 200_000, 16.6, 16384, 0),
         ("pro", 1_048_576, 60.0, 8192, 1)]


@pytest.mark.parametrize("which,length,gib,mnbt,draft", CASES)
def test_the_concurrency_vllm_prints_is_ours(planner, which, length, gib, mnbt, draft):
    kv_specs, _ = planner
    version = running_version()
    ratios = FLASH if which == "flash" else PRO
    in_flight = mnbt * (2 if IN_FLIGHT_TOKENS.contains(version) else 1)
    available = int(gib * GiB)
    plan = kv_plan.stage_plans(ratios, kv_family(version), draft_layers=draft)[0]
    if not plan.fits(length, available, in_flight):
        pytest.skip("vLLM refuses this length at this memory on this release (its start check)")
    counted = ours([plan], length, available, in_flight)
    assert all(c == pytest.approx(counted[0], rel=1e-9)
               for c in theirs(kv_specs, ratios, length, available, mnbt, in_flight, draft))
    if kv_family(version) != kv_plan.PACKED:  # the reason this exists: not available / need there
        assert counted[0] > available / plan.need(length, in_flight) * 1.03


# (model, PP, method, num_speculative_tokens, the draft's layers, length, available GiB,
# max_num_batched_tokens): every pipeline stage prints; MTP's one layer on every checkpoint, a
# multi-module MTP (3 layers, k 3: windows retain 2 tokens more from 0.28) and DSpark's 3 (0.25+).
PP_CASES = [
    ("flash", 2, None, 0, 0, 65_536, 20.0, 8192), ("flash", 3, None, 0, 0, 262_144, 35.0, 4096),
    ("flash", 4, "mtp", 1, 1, 1_048_576, 50.0, 8192), ("flash", 2, "mtp", 3, 3, 131_072, 12.0, 8192),
    ("flash", 1, "dspark", 5, 3, 200_000, 25.0, 8192), ("pro", 2, "mtp", 1, 1, 200_000, 16.6, 16384),
    ("pro", 3, None, 0, 0, 1_048_576, 45.0, 8192), ("pro", 4, "dspark", 5, 3, 524_288, 30.0, 2048),
]


@pytest.mark.parametrize("which,pp,method,k,layers,length,gib,mnbt", PP_CASES)
def test_every_stage_prints_our_concurrency(planner, which, pp, method, k, layers, length, gib, mnbt):
    kv_specs, _ = planner
    version = running_version()
    if method == "dspark" and not kv_specs.knows_method("dspark"):
        pytest.skip(f"vLLM {version} has no DSpark")
    ratios = FLASH if which == "flash" else PRO
    spec = kv_specs.speculative(method, k, layers if method == "mtp" else 1) if method else None
    retained = 0
    if method:
        config = {"num_nextn_predict_layers": layers if method == "mtp" else 1, "n_mtp_layers": layers}
        facts = Facts(
            args=ServeArgs((), {"speculative_config": f'{{"method": "{method}", "num_speculative_tokens": {k}}}'}),
                      model=ModelFacts(None, config=config), vllm_version=version)
        draft, retained = draft_kv(facts)
        assert draft == layers
    in_flight = mnbt * ((pp + 1) if IN_FLIGHT_TOKENS.contains(version) else 1)
    available = int(gib * GiB)
    plans = kv_plan.stage_plans(ratios, kv_family(version), pp, draft_layers=layers, retained=retained)
    assert len(plans) == pp
    if not all(p.fits(length, available, in_flight) for p in plans):
        pytest.skip("vLLM refuses this length at this memory on this release (its start check)")
    counted = ours(plans, length, available, in_flight)
    printed = theirs(kv_specs, ratios, length, available, mnbt, in_flight, layers, pp, spec)
    assert printed[:pp] == pytest.approx(counted, rel=1e-9)
    assert printed[pp:] == pytest.approx(counted[:1] * len(printed[pp:]), rel=1e-9)  # the scheduler's: rank 0's

"""core/memory/kv_plan.py and core/memory/estimate.py against the installed vLLM's own KV planner, on the CPU.

The caches are built by vLLM's own DeepSeek-V4 classes and planned by its own
``get_kv_cache_groups`` / ``get_kv_cache_configs`` (tests/vllm_real/kv_specs.py says what is a
stand-in). For DeepSeek-V4-Flash and -Pro, at several batched-token, in-flight and pipeline
settings and with either indexer, the model here must agree with vLLM within 2 % on the bytes
per token, on what one request needs at several lengths, and on the longest request a KV budget
admits (the length vLLM's refusal names).
"""

from __future__ import annotations

import json
from dataclasses import dataclass

import pytest

from dsv4_launch.core.facts import Facts, ServeArgs
from dsv4_launch.core.memory import kv_plan
from dsv4_launch.core.memory.estimate import draft_kv
from dsv4_launch.core.memory.vllm_config import IN_FLIGHT_TOKENS, MXFP4_INDEXER_STATE, kv_family
from dsv4_launch.core.model import ModelFacts
from tests.vllm_real.conftest import FLASH_RATIOS as FLASH
from tests.vllm_real.conftest import PRO_RATIOS as PRO

pytestmark = pytest.mark.rule("max-model-len-too-long")

GiB = 2**30


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


@dataclass
class Case:
    """One case of CASES on the installed release: our stage plans, and how to ask vLLM."""

    kv_specs: object
    ratios: list
    mnbt: int
    in_flight: int  # what vLLM's config says (max_in_flight_tokens)
    counted: int  # what the release's window caches hold besides the window
    pp: int
    state: int  # indexer state bytes the release allocates
    plans: list

    def theirs_need(self, length):
        return self.kv_specs.need(self.ratios, length, self.mnbt, self.in_flight, self.pp, self.state)

    def theirs_admit(self, available, length):
        return self.kv_specs.admits(self.ratios, available, length, self.mnbt, self.in_flight, self.pp, self.state)


def case(planner, which, mnbt, batches, pp, mxfp4) -> Case:
    kv_specs, version = planner
    indexer, state = _indexer(version, mxfp4)
    ratios = FLASH if which == "flash" else PRO
    in_flight = mnbt * batches
    # before 0.26 there is no max_in_flight_tokens: the window caches hold max_num_batched_tokens
    counted = in_flight if IN_FLIGHT_TOKENS.contains(version) else mnbt
    return Case(kv_specs, ratios, mnbt, in_flight, counted, pp, state,
                kv_plan.stage_plans(ratios, kv_family(version), pp, indexer))


@pytest.mark.parametrize("which,mnbt,batches,pp,mxfp4", CASES)
def test_one_request_needs_what_vllm_charges(planner, which, mnbt, batches, pp, mxfp4):
    c = case(planner, which, mnbt, batches, pp, mxfp4)
    for length in (1, 4096, 65_536, 262_144, 1_048_576):
        ours = [p.need(length, c.counted) for p in c.plans]
        for stage, (a, b) in enumerate(zip(ours, c.theirs_need(length))):
            assert abs(a - b) <= 0.02 * b, (length, stage, a, b)


@pytest.mark.parametrize("which,mnbt,batches,pp,mxfp4", CASES)
def test_bytes_per_token_are_vllms(planner, which, mnbt, batches, pp, mxfp4):
    c = case(planner, which, mnbt, batches, pp, mxfp4)
    for plan, a, b in zip(c.plans, c.theirs_need(524_288), c.theirs_need(1_048_576)):
        theirs = (b - a) / 524_288
        assert abs(plan.bytes_per_token - theirs) <= 0.02 * theirs


@pytest.mark.parametrize("which,mnbt,batches,pp,mxfp4", CASES)
@pytest.mark.parametrize("budget_gib", [2.0, 6.2, 9.5, 30.0])
def test_the_longest_request_a_budget_admits_is_vllms(planner, which, mnbt, batches, pp, mxfp4, budget_gib):
    c = case(planner, which, mnbt, batches, pp, mxfp4)
    available = int(budget_gib * GiB)
    ours = min(p.longest(available, c.counted, 1_048_576) for p in c.plans)
    theirs = c.theirs_admit(available, 1_048_576)
    if theirs is None:  # vLLM admits the full 1,048,576 tokens
        assert ours == 1_048_576
        return
    if pp == 1:  # vLLM's message names the estimate of the first stage that fails
        assert abs(ours - theirs) <= 0.02 * max(theirs, 1), (ours, theirs)
    if ours:  # the longest length vLLM admits on every stage: ours fits, one token more does not
        assert c.theirs_admit(available, ours) is None
        assert c.theirs_admit(available, ours + 1) is not None
        # and the length we would suggest (rounded down to the block) is admitted too
        if ours >= 256:
            assert c.theirs_admit(available, ours // 256 * 256) is None


# --- the speculative draft's caches (MTP, DSpark) ----------------------------------------
# (model, max_num_batched_tokens, batches in flight, PP, method, num_speculative_tokens, the
# draft's layers: num_nextn_predict_layers for MTP — 1 on every DeepSeek-V4 checkpoint, 3 a
# multi-module MTP no checkpoint has yet, which retains k − 1 tokens more in every window from
# 0.28 — or DSpark's n_mtp_layers, 3 by default)
SPEC_CASES = [
    ("flash", 8192, 2, 1, "mtp", 1, 1), ("flash", 8192, 2, 1, "mtp", 2, 1), ("flash", 2048, 2, 1, "mtp", 3, 1),
    ("pro", 8192, 2, 1, "mtp", 1, 1), ("pro", 16384, 2, 1, "mtp", 2, 1),
    ("flash", 8192, 3, 2, "mtp", 1, 1), ("pro", 8192, 5, 4, "mtp", 2, 1),
    ("flash", 8192, 2, 1, "mtp", 3, 3), ("flash", 8192, 2, 1, "dspark", 5, 3), ("pro", 8192, 3, 2, "dspark", 5, 3),
]


def spec_case(planner, which, mnbt, batches, pp, method, k, layers):
    """Ours through core/memory/estimate.py's own reading of the speculative config (draft_kv), the
    release's through its own classes with the stand-in SpeculativeConfig of kv_specs."""
    kv_specs, version = planner
    if method == "dspark" and not kv_specs.knows_method("dspark"):
        pytest.skip(f"vLLM {version} has no DSpark")
    config = {"num_nextn_predict_layers": layers if method == "mtp" else 1, "n_mtp_layers": layers}
    spec_json = json.dumps({"method": method, "num_speculative_tokens": k})
    facts = Facts(args=ServeArgs((), {"speculative_config": spec_json}), model=ModelFacts(None, config=config),
                  vllm_version=version)
    draft, retained = draft_kv(facts)
    assert draft == layers
    ratios = FLASH if which == "flash" else PRO
    in_flight = mnbt * batches
    counted = in_flight if IN_FLIGHT_TOKENS.contains(version) else mnbt
    spec = kv_specs.speculative(method, k, layers if method == "mtp" else 1)
    plans = kv_plan.stage_plans(ratios, kv_family(version), pp, "fp8", None, draft, retained)
    return kv_specs, ratios, in_flight, counted, spec, plans


@pytest.mark.parametrize("which,mnbt,batches,pp,method,k,layers", SPEC_CASES)
def test_with_a_draft_one_request_needs_what_vllm_charges_to_the_byte(planner, which, mnbt, batches, pp, method, k,
                                                                       layers):
    kv_specs, ratios, in_flight, counted, spec, plans = spec_case(planner, which, mnbt, batches, pp, method, k, layers)
    for length in (1, 4096, 65_536, 262_144, 1_048_576):
        ours = [p.need(length, counted) for p in plans]
        theirs = kv_specs.need(ratios, length, mnbt, in_flight, pp, 132, spec, layers)
        assert ours == theirs, (length, ours, theirs)


@pytest.mark.parametrize("which,mnbt,batches,pp,method,k,layers", SPEC_CASES)
def test_what_the_draft_adds_is_what_vllm_adds(planner, which, mnbt, batches, pp, method, k, layers):
    kv_specs, ratios, in_flight, counted, spec, plans = spec_case(planner, which, mnbt, batches, pp, method, k, layers)
    plain = kv_plan.stage_plans(ratios, kv_family(planner[1]), pp, "fp8")
    theirs_plain = kv_specs.need(ratios, 262_144, mnbt, in_flight, pp, 132)
    theirs = kv_specs.need(ratios, 262_144, mnbt, in_flight, pp, 132, spec, layers)
    assert [p.need(262_144, counted) for p in plain] == theirs_plain
    # what the draft adds (often nothing: one more sliding-window cache can fit in the padding
    # the planner already charges) is what vLLM adds, on every stage
    ours = [p.need(262_144, counted) for p in plans]
    assert [a - b.need(262_144, counted) for a, b in zip(ours, plain)] == \
        [a - b for a, b in zip(theirs, theirs_plain)]


@pytest.mark.parametrize("which,mnbt,batches,pp,method,k,layers", SPEC_CASES)
@pytest.mark.parametrize("budget_gib", [2.0, 6.2, 9.5, 30.0])
def test_with_a_draft_the_longest_request_admitted_is_vllms(planner, which, mnbt, batches, pp, method, k, layers,
                                                           budget_gib):
    kv_specs, ratios, in_flight, counted, spec, plans = spec_case(planner, which, mnbt, batches, pp, method, k, layers)
    available = int(budget_gib * GiB)
    ours = min(p.longest(available, counted, 1_048_576) for p in plans)

    def admit(length):
        return kv_specs.admits(ratios, available, length, mnbt, in_flight, pp, 132, spec, layers)

    theirs = admit(1_048_576)
    if theirs is None:
        assert ours == 1_048_576
        return
    if pp == 1:
        assert ours == theirs, (ours, theirs)
    if ours:
        assert admit(ours) is None
        assert admit(ours + 1) is not None

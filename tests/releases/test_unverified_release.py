"""Doctor's own rows on a vLLM newer than every verified release (core/vllm/releases.py): a FAIL
that rests on release code is a warning saying so, like plan's refusals (tests/rules/test_rules.py) and
dsv4-serve's (tests/commands/test_never_worse.py). Pure: doctor's diagnosis from hand-built facts and a
faked runtime probe answer (tests/commands/test_doctor.py's helpers)."""

from __future__ import annotations

import pytest

from dsv4_launch.core.rules.registry import DOCTOR_RULES
from dsv4_launch.core.vllm.releases import NEWEST_VERIFIED
from tests.commands.test_doctor import DOCTOR_CASES, FAIL, WARN, M, make

FAILING = [r for r in DOCTOR_RULES if r.level == "fail"]


@pytest.mark.parametrize("rule", FAILING, ids=[r.id for r in FAILING])
def test_a_doctor_failure_on_a_newer_release_is_a_warning(rule):
    trips, _ = DOCTOR_CASES[rule.id]
    tokens = (M, "-tp", "2")
    mine = [c for c in make(runtime=trips, version=NEWEST_VERIFIED, tokens=tokens).lines if rule.reference in c.detail]
    assert mine and mine[0].status == FAIL and "may differ" not in mine[0].detail
    mine = [c for c in make(runtime=trips, version="0.35.0", tokens=tokens).lines if rule.reference in c.detail]
    assert mine and mine[0].status == WARN, [c.detail for c in mine]
    assert f"verified up to vLLM {NEWEST_VERIFIED}; vLLM 0.35.0 may differ" in mine[0].detail

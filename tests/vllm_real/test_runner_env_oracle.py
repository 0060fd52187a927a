"""``VLLM_USE_V2_MODEL_RUNNER`` judged by the installed vLLM's own code, on the CPU (marker ``rule``).

- Up to 0.33: ``envs.py`` reads it as ``bool(int(value))`` (``v2-runner-env-not-int`` where int() fails).
- From 0.34: Model Runner V1 is removed; ``Platform.validate_environ`` (run by ``create_engine_config``)
  raises for every value but "1" (``v1-runner-removed``; vllm/platforms/interface.py:1481@0.34.0).

Faked: nothing; the variable is set in this process's environment for the call only.
"""

from __future__ import annotations

import importlib

import pytest

from tests.conftest import V4_CONFIG as V4
from tests.planning import planned

M = "deepseek-ai/DeepSeek-V4-Flash"


def _vllm_says(monkeypatch, value: str) -> tuple[bool, bool]:
    """(validate_environ raised 'no longer supported', envs.py's int() failed) for this value."""
    monkeypatch.setenv("VLLM_USE_V2_MODEL_RUNNER", value)
    removed = int_failed = False
    platform = importlib.import_module("vllm.platforms").current_platform
    validate = getattr(platform, "validate_environ", None)  # from 0.25 or so; absent: nothing to check
    if validate is not None:
        try:
            validate(False)
        except ValueError as exc:
            assert "no longer supported" in str(exc), exc
            removed = True
    envs = importlib.import_module("vllm.envs")
    if "VLLM_USE_V2_MODEL_RUNNER" in getattr(envs, "environment_variables", {}):
        try:
            envs.environment_variables["VLLM_USE_V2_MODEL_RUNNER"]()
        except ValueError:
            int_failed = True
    return removed, int_failed


@pytest.mark.rule("v1-runner-removed")
@pytest.mark.rule("v2-runner-env-not-int")
@pytest.mark.parametrize("value", ["0", "false", "", "1"])
def test_the_runner_variable(real_vllm, monkeypatch, value):
    _, _, version = real_vllm
    removed, int_failed = _vllm_says(monkeypatch, value)
    monkeypatch.delenv("VLLM_USE_V2_MODEL_RUNNER")
    found = {f.rule: f for f in planned([M], version=version, config=V4,
                                        env={"VLLM_USE_V2_MODEL_RUNNER": value}).plan.findings}
    assert ("v1-runner-removed" in found) is removed, (version, value, found.keys())
    assert ("v2-runner-env-not-int" in found) is int_failed, (version, value, found.keys())

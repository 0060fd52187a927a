"""Oracle for tests/secrets/test_secret_dotted.py: the error line vLLM's own argparse prints for an argv
holding a dash-prefixed, dotted secret (its pre-processing makes ``-abc.def`` an option ``-abc``
with the JSON ``{"def": …}``), passed through the redactor ``prepare`` builds for the same argv,
shows no piece of the secret — every form vLLM can quote it in is one the redactor masks."""

from __future__ import annotations

import contextlib
import io

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import tests.hostile_strategies as hs
from dsv4_launch.adapters.vllm_install import VllmInstall
from dsv4_launch.commands.pipeline import PLAN, prepare

M = "deepseek-ai/DeepSeek-V4-Flash"

pytestmark = pytest.mark.vllm_real


def _vllm_says(top, tokens) -> str:
    """What vLLM prints on standard error when it reads ``tokens`` (empty: it accepts them)."""
    err = io.StringIO()
    with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
        try:
            top.parse_args(["serve", *tokens])
        except SystemExit:
            pass
        except Exception as exc:  # a traceback for the user: its last line
            err.write(f"{type(exc).__name__}: {exc}\n")
    return err.getvalue()


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                                  HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_vllm_s_own_error_line_is_masked_by_the_run_s_redactor(real_vllm, data):
    top, _serve, version = real_vllm
    secret, cores = data.draw(hs.dotted_secret(), label="secret")
    argv = [M, *data.draw(hs.dotted_placement(secret), label="placement"),
            *data.draw(st.sampled_from([[], ["--max-model-len", "4096"], ["-tp", "2"], ["x"]]), label="after")]
    said = _vllm_says(top, argv)
    prepared = prepare(argv, {"DSV4_LAUNCH_GPU_CAPABILITY": "9.0"}, PLAN, vllm=VllmInstall(version, True))
    shown = "\n".join(prepared.redact(line) for line in said.splitlines())
    for core in cores:
        assert core not in shown, (argv, said, shown)

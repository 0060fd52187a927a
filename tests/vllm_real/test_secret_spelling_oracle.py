"""Oracle for tests/secrets/test_secret_spellings.py: what vLLM's own parser does with each spelling of
a secret option (issue 41 item 2). Where it puts a word in a secret option (an abbreviation it
accepts: ``allow_abbrev``), that word is masked; where it refuses the argv (an ambiguous
abbreviation, one dash, a look-alike dash), its own error line, passed through the redactor
``prepare`` builds for the same argv, shows no piece of the word the user meant as the key —
and neither does the argv we print."""

from __future__ import annotations

import contextlib
import io

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dsv4_launch.adapters.vllm_install import VllmInstall
from dsv4_launch.commands.pipeline import PLAN, prepare
from dsv4_launch.vllm_cli.secrets import SECRET_DESTS
from tests.secrets.test_secret_spellings import S, spelling

M = "deepseek-ai/DeepSeek-V4-Flash"
pytestmark = pytest.mark.vllm_real


def _vllm_reads(top, tokens):
    """(namespace or None, what vLLM prints on standard error) for ``vllm serve tokens``."""
    err = io.StringIO()
    with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
        try:
            return top.parse_args(["serve", *tokens]), err.getvalue()
        except SystemExit:
            return None, err.getvalue()
        except Exception as exc:  # noqa: BLE001 — a traceback for the user: its last line
            return None, err.getvalue() + f"{type(exc).__name__}: {exc}\n"


def _secret_values(namespace) -> list[str]:
    found = []
    for dest in SECRET_DESTS:
        value = getattr(namespace, dest, None)
        found += [str(v) for v in value] if isinstance(value, list) else [str(value)] if value is not None else []
    return found


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                                  HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_every_spelling_vllm_reads_or_refuses_is_masked(real_vllm, data):
    top, _serve, version = real_vllm
    tokens = data.draw(spelling(version))
    namespace, said = _vllm_reads(top, tokens)
    prepared = prepare(tokens, {"DSV4_LAUNCH_GPU_CAPABILITY": "9.0"}, PLAN, vllm=VllmInstall(version, True))
    shown = " ".join(prepared.redact.shown_argv) + "\n" + "\n".join(prepared.redact(line) for line in said.splitlines())
    assert "Zq81" not in shown, (tokens, said, shown)
    if namespace is not None:  # accepted: the parse put the word in a secret option, or it is no secret
        assert S in " ".join(_secret_values(namespace)) or not any(S in t for t in tokens[1:]), (tokens, namespace)


@pytest.mark.parametrize(("tokens", "accepted"), [
    ([M, "--api-k", S], True),  # allow_abbrev: a unique abbreviation is the option
    ([M, "--hf-tok=" + S], True),
    ([M, "--api_key", S], True),  # vLLM's "_" → "-"
    ([M, "--a", S], False),  # ambiguous: --api-key, --api-server-count, --allow-credentials, …
    ([M, "--h", S], False),  # --help, --host, --hf-token, …
    ([M, "-api-key", S], False),  # one dash: no option of argparse's
    ([M, "\u2014api-key", S], False),  # an em dash: a positional word
    ([M, "\u2212\u2212hf-token", S], False),  # minus signs
])
def test_what_vllm_does_with_each_spelling(real_vllm, tokens, accepted):
    top, _serve, version = real_vllm
    namespace, said = _vllm_reads(top, tokens)
    assert (namespace is not None) == accepted, said
    if accepted:
        assert S in " ".join(_secret_values(namespace))
    prepared = prepare(tokens, {"DSV4_LAUNCH_GPU_CAPABILITY": "9.0"}, PLAN, vllm=VllmInstall(version, True))
    assert S not in " ".join(prepared.redact.shown_argv) and S not in prepared.redact(said)

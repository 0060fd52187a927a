"""Fixtures for tests against a real vLLM (marker ``vllm_real``).

They need vLLM importable in the running interpreter; .ci/run creates one virtual environment
per pinned vLLM (``.ci/vllm-venv.sh VERSION``) and runs them there. Without vLLM they skip,
saying how to run them — unless DSV4_REQUIRE_VLLM=1 (CI), which turns the skip into a failure.
"""

from __future__ import annotations

import copy
import importlib
import importlib.metadata
import importlib.util
import os
import sys
from pathlib import Path

import pytest

TOOLS = Path(__file__).resolve().parents[2] / "tools"
SITE = str(Path(__file__).resolve().parent / "site")

HOW = (
    "needs a real vLLM: venv=$(.ci/vllm-venv.sh 0.24.0) && $venv/bin/pip install -e . && "
    "$venv/bin/python -m pytest -m vllm_real tests/vllm_real"
)


def pytest_collection_modifyitems(items):
    for item in items:
        if "vllm_real" in str(item.fspath):
            item.add_marker(pytest.mark.vllm_real)


# tools/oracle_sweep.py sets DSV4_ORACLE_REPORT: every test's outcome and the rule rows it judges
# (@pytest.mark.rule("id")) go there as JSON, for the release matrix (docs/release-matrix.md).
_OUTCOMES: list[dict] = []


def pytest_runtest_logreport(report):
    if os.environ.get("DSV4_ORACLE_REPORT") and (report.when == "call" or report.outcome != "passed"):
        rules = [m.args[0] for m in getattr(report, "rule_marks", [])]
        _OUTCOMES.append({"test": report.nodeid, "outcome": report.outcome, "when": report.when, "rules": rules})


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    outcome.get_result().rule_marks = list(item.iter_markers("rule"))


def pytest_sessionfinish(session):
    path = os.environ.get("DSV4_ORACLE_REPORT")
    if path:
        import json

        with open(path, "w", encoding="utf-8") as handle:
            json.dump(_OUTCOMES, handle, indent=1)


def require_vllm() -> None:
    """Skip (fail under DSV4_REQUIRE_VLLM=1) where vLLM is not importable; else plan on the CPU platform."""
    if importlib.util.find_spec("vllm") is None:
        if os.environ.get("DSV4_REQUIRE_VLLM") == "1":
            pytest.fail("DSV4_REQUIRE_VLLM=1 but vLLM is not importable here")
        pytest.skip(HOW)
    os.environ.setdefault("VLLM_TARGET_DEVICE", "cpu")
    if SITE not in sys.path:
        # The oracle harness (site/oracle_harness.py: a release judged as verified under
        # DSV4_ORACLE_AS_VERIFIED, the stand-in for vLLM's triton-cpu check), here and, through
        # PYTHONPATH's sitecustomize, in every process an oracle starts from now on.
        sys.path.insert(0, SITE)
        os.environ["PYTHONPATH"] = os.pathsep.join(p for p in (SITE, os.environ.get("PYTHONPATH")) if p)
        importlib.import_module("oracle_harness").install()
    as_verified = os.environ.get("DSV4_ORACLE_AS_VERIFIED")
    installed = importlib.metadata.version("vllm")
    if as_verified and installed.split("+", 1)[0] != as_verified:
        pytest.fail(f"DSV4_ORACLE_AS_VERIFIED={as_verified} but vLLM {installed} is installed here")


# DeepSeek-V4's compress_ratios (backbone layers), as the KV oracles plan them.
FLASH_RATIOS = [0, 0] + [4, 128] * 20 + [4]  # 43 backbone layers: 2 sliding-window only, 21 CSA, 20 HCA
PRO_RATIOS = [128, 128] + [4, 128] * 29 + [4]  # 61: 30 CSA, 31 HCA


@pytest.fixture(scope="session")
def planner():
    """(tests/vllm_real/kv_specs, vLLM version): the installed vLLM's own KV planner on the CPU."""
    require_vllm()
    from tests.vllm_real import kv_specs

    return kv_specs, importlib.metadata.version("vllm")


@pytest.fixture(scope="session")
def real_vllm():
    """(top-level vLLM parser, serve subparser, vLLM version) built on the CPU platform."""
    require_vllm()
    os.environ["VLLM_TARGET_DEVICE"] = "cpu"
    sys.path.insert(0, str(TOOLS))
    from vllm_serve_parser import make_serve_parser

    top, serve = make_serve_parser()
    _PARSER_DEFAULTS[serve] = copy.deepcopy(_defaults(serve))
    return top, serve, importlib.metadata.version("vllm")


# argparse hands every parse the same default objects, and vLLM writes into the config objects
# it builds from (the CPU platform: profiler_config.torch_profiler_dump_cuda_time_total = False,
# vllm/platforms/cpu.py:339@0.29.0, :216@0.24.0, :418@0.33.0): a test that gives vLLM a namespace
# of the session's parser changes what every later parse returns. Such a test fails itself, and
# the defaults are put back, so no later test fails for it.
_PARSER_DEFAULTS: dict = {}  # the session's serve parser → its defaults, deep-copied


def _defaults(parser) -> tuple[list, dict]:
    return [(a.dest, a.default) for a in parser._actions], dict(parser._defaults)


@pytest.fixture(autouse=True)
def _session_parser_left_as_found():
    yield
    for serve, before in _PARSER_DEFAULTS.items():
        if _defaults(serve) == before:
            continue
        (actions, own), (now, now_own) = before, _defaults(serve)
        changed = sorted({d for (d, v), (_, w) in zip(actions, now) if v != w}
                         | {k for k in own if own[k] != now_own.get(k)} | set(now_own) - set(own))
        for action, (_, default) in zip(serve._actions, actions):
            action.default = copy.deepcopy(default)
        serve._defaults.clear()
        serve._defaults.update(copy.deepcopy(own))
        pytest.fail(f"this test changed the defaults of the session's vLLM parser ({', '.join(changed)}); hand "
                    "vLLM a copy (conftest.parse_fresh)", pytrace=False)


def parse_fresh(top, tokens):
    """``top.parse_args(["serve", *tokens])`` deep-copied: a namespace vLLM may write into."""
    return copy.deepcopy(top.parse_args(["serve", *tokens]))


def real_parse(top, tokens):
    """("ok", namespace) or ("reject", what vLLM raised) — the way `vllm serve` would end."""
    try:
        return "ok", top.parse_args(["serve", *tokens])
    except SystemExit as exc:  # argparse errors: exit 2
        return "reject", f"SystemExit({exc.code})"
    except Exception as exc:  # ValueError, AssertionError, yaml errors: a traceback for the user
        return "reject", f"{type(exc).__name__}: {exc}"


def vllm_symbol(module: str, name: str):
    """Import ``module.name`` from vLLM, failing with a message that says what moved."""
    try:
        mod = importlib.import_module(module)
    except ImportError as exc:
        pytest.fail(f"vLLM moved or removed {module} (needed for {name}): {exc}; update this oracle")
    if not hasattr(mod, name):
        pytest.fail(f"vLLM's {module} no longer defines {name}; find where it moved and update this oracle")
    return getattr(mod, name)

"""``dsv4-launch check``'s client tests (``tests/check/test_check.py``) once more with httpx, the HTTP
client vLLM installs — CI's plain test environment has no httpx, so there those tests run with
the standard library only, and here (each pinned vLLM's venv) with httpx.

Faked, as there: the server behind the socket (``tests/fakes/replay_server.py`` on 127.0.0.1).
Real: the sockets, HTTP and httpx as this vLLM release pins it.
"""

from __future__ import annotations

import importlib.util
import inspect
import os

import pytest

from tests.check import test_check as _base


@pytest.fixture
def client():
    if importlib.util.find_spec("httpx") is None:
        if os.environ.get("DSV4_REQUIRE_VLLM") == "1":
            pytest.fail("DSV4_REQUIRE_VLLM=1 but httpx (a dependency of vLLM) is not importable here")
        pytest.skip("needs httpx: run in a vLLM venv (docs/development.md: 'Tests against the real vLLM')")
    return "httpx"


self_signed = _base.self_signed  # the other fixtures those tests use

# Every test of test_check.py that takes the client, with the fixture above.
for _name, _test in vars(_base).items():
    if _name.startswith("test_") and "client" in inspect.signature(_test).parameters:
        globals()[_name] = _test


def test_every_client_test_is_here():
    mine = {n for n in globals() if n.startswith("test_")} - {"test_every_client_test_is_here"}
    assert len(mine) >= 20, sorted(mine)

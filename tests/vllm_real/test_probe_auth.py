"""The Kubernetes examples' readiness and liveness probes ask vLLM's /health without the API key
(examples/kubernetes/, docs/deployment.md "Probes"). That holds only while vLLM's API-key
middleware leaves the path alone: here the installed release's own ``AuthenticationMiddleware``,
built with a key as `vllm serve --api-key` builds it, answers each probe path of the examples
(and a guarded path, to show the key is checked at all). Nothing is faked but the ASGI app behind
the middleware, which answers 200.
"""

from __future__ import annotations

import asyncio
import importlib
from pathlib import Path

import pytest
import yaml

from tests.vllm_real.conftest import require_vllm

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "kubernetes"
# Where the middleware lives: vllm/entrypoints/serve/utils/server_utils.py@0.24.0,
# vllm/entrypoints/serve/middleware/authenticate.py@0.29.0 and @0.33.0.
MODULES = ("vllm.entrypoints.serve.middleware.authenticate", "vllm.entrypoints.serve.utils.server_utils")


def middleware_class():
    require_vllm()
    for name in MODULES:
        try:
            module = importlib.import_module(name)
        except ImportError:
            continue
        if hasattr(module, "AuthenticationMiddleware"):
            return module.AuthenticationMiddleware
    pytest.fail(f"vLLM's AuthenticationMiddleware is in none of {MODULES}: find where it moved")


def probe_paths() -> set[str]:
    paths = set()
    for path in EXAMPLES.glob("*.yaml"):
        text = path.read_text()
        for found in __import__("re").finditer(r"httpGet:\s*\n\s*path:\s*(\S+)", text):
            paths.add(found.group(1))
    assert paths, "no httpGet probe in examples/kubernetes/"
    assert all(yaml.safe_load(p) == p for p in paths)
    return paths


def answer(middleware_cls, path: str, headers: list[tuple[bytes, bytes]] = ()) -> int:
    """The HTTP status vLLM's middleware (key "sk-probe") lets through or gives for GET path."""
    sent: list[dict] = []

    async def app(scope, receive, send):
        await send({"type": "http.response.start", "status": 200, "headers": []})
        await send({"type": "http.response.body", "body": b""})

    async def receive():
        return {"type": "http.request", "body": b"", "more_body": False}

    async def send(message):
        sent.append(message)

    scope = {"type": "http", "method": "GET", "path": path, "root_path": "", "headers": list(headers),
             "query_string": b"", "scheme": "http", "server": ("127.0.0.1", 8000), "client": ("127.0.0.1", 1)}

    async def run():
        await middleware_cls(app, tokens=["sk-probe"])(scope, receive, send)

    asyncio.run(run())
    (start,) = [m for m in sent if m["type"] == "http.response.start"]
    return start["status"]


def test_probe_paths_need_no_api_key():
    cls = middleware_class()
    for path in sorted(probe_paths()):
        assert answer(cls, path) == 200, f"vLLM's API key now guards {path}: the probes need the key"
    # the key is checked where vLLM guards: without it 401, with it 200
    assert answer(cls, "/v1/models") == 401
    assert answer(cls, "/v1/models", [(b"authorization", b"Bearer sk-probe")]) == 200

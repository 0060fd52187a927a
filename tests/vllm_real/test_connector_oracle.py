"""The KV connector vLLM builds, and whether it supports the hybrid KV-cache manager, judged by
the installed vLLM's own code on the CPU (marker ``rule``).

- ``VllmConfig._post_init_kv_transfer_config`` (config/vllm.py), called unbound on an object that
  holds only what it reads — the release's own ``CacheConfig`` and ``KVTransferConfig`` built from
  the same arguments dsv4-launch reads — gives the connector vLLM is left with;
- ``KVConnectorFactory.supports_hma_config`` (distributed/kv_transfer/kv_connector/factory.py), the
  check VllmConfig's HMA rules call, says whether vLLM turns the hybrid manager off for it.

dsv4-launch's model (core/rules/kv.py ``effective_transfer_config``, ``effective_connector``) must
agree on both. Faked: nothing but the namespace standing in for VllmConfig (two fields). A
connector whose module does not import on this machine (LMCacheMPConnector without the lmcache
package, MoRIIO without msgpack) cannot be asked; the model says so (a doubt) or cites the source.
"""

from __future__ import annotations

import json
from types import SimpleNamespace as NS

import pytest

from dsv4_launch.core.rules import kv
from tests.planning import M, facts_for
from tests.vllm_real.conftest import vllm_symbol

SIZE = ["--kv-offloading-size", "8"]


def transfer(name: str, **extra) -> list[str]:
    return ["--kv-transfer-config", json.dumps({"kv_connector": name, "kv_role": "kv_both", **extra})]


def multi(*children: str) -> list[str]:
    return transfer("MultiConnector", kv_connector_extra_config={
        "connectors": [{"kv_connector": c, "kv_role": "kv_both"} for c in children]})


CASES = [
    ["--kv-offloading-backend", "lmcache"],
    ["--kv-offloading-backend", "native"],
    [*SIZE],
    [*SIZE, "--kv-offloading-backend", "native", *transfer("LMCacheConnectorV1")],
    [*transfer("LMCacheConnectorV1"), *SIZE],
    [*multi("NixlConnector", "LMCacheConnectorV1"), *SIZE],
    [*transfer("NixlConnector"), *SIZE, "--kv-offloading-backend", "lmcache"],
    [*transfer("LMCacheConnectorV1"), "--kv-offloading-backend", "lmcache"],
    transfer("LMCacheConnectorV1"),
    transfer("FlexKVConnectorV1"),
    transfer("NixlConnector"),
    transfer("OffloadingConnector"),
    multi("NixlConnector", "LMCacheConnectorV1"),
    multi("NixlConnector", "OffloadingConnector"),
    multi("NixlConnector", "ExampleConnector"),
    transfer("MultiConnector"),  # no children
]


def _vllm_side(tokens):
    """(connector name or None, supports HMA or None when vLLM cannot import the connector here)."""
    cache_config_cls = vllm_symbol("vllm.config", "CacheConfig")
    transfer_cls = vllm_symbol("vllm.config", "KVTransferConfig")
    vllm_config_cls = vllm_symbol("vllm.config.vllm", "VllmConfig")
    factory = vllm_symbol("vllm.distributed.kv_transfer.kv_connector.factory", "KVConnectorFactory")
    facts = facts_for([M, *tokens], version=_version())
    size = facts.args.value("kv_offloading_size")
    cache = cache_config_cls(kv_offloading_size=None if size is None else float(size),
                             kv_offloading_backend=facts.args.value("kv_offloading_backend") or "native")
    raw = facts.args.value("kv_transfer_config")
    config = NS(cache_config=cache, kv_transfer_config=transfer_cls(**json.loads(raw)) if raw else None)
    vllm_config_cls._post_init_kv_transfer_config(config)
    built = config.kv_transfer_config
    if built is None or built.kv_connector is None:
        return None, None
    try:
        supports = factory.supports_hma_config(built)
    except ImportError:  # the connector's own dependency is not installed here
        supports = None
    return built.kv_connector, supports


def _version():
    import importlib.metadata

    return importlib.metadata.version("vllm")


@pytest.mark.rule("connector-turns-hma-off")
@pytest.mark.rule("hma-off-full-attention")
@pytest.mark.rule("connector-hma-forced")
@pytest.mark.parametrize("tokens", CASES, ids=lambda t: " ".join(t)[:60])
def test_the_connector_vllm_builds_and_its_hybrid_support(real_vllm, monkeypatch, tokens):
    monkeypatch.delenv("VLLM_USE_SIMPLE_KV_OFFLOAD", raising=False)
    name, supports = _vllm_side(tokens)
    facts = facts_for([M, *tokens], version=real_vllm[2])
    ours, _ = kv.effective_transfer_config(facts)
    assert (ours or {}).get("kv_connector") == name, (tokens, ours, name)
    connector = kv.effective_connector(facts)
    if name is None:
        assert connector is None
        return
    assert connector is not None
    if supports is None:  # vLLM could not import it here: the model must not be certain it lacks support
        assert connector.hma or connector.doubt, connector
        return
    assert connector.hma is supports, (tokens, connector, supports)


@pytest.mark.rule("connector-turns-hma-off")
def test_every_registered_connector_is_judged_as_vllm_judges_it(real_vllm):
    factory = vllm_symbol("vllm.distributed.kv_transfer.kv_connector.factory", "KVConnectorFactory")
    transfer_cls = vllm_symbol("vllm.config", "KVTransferConfig")
    asked = 0
    for name in sorted(factory._registry):
        try:
            supports = factory.supports_hma_config(transfer_cls(kv_connector=name, kv_role="kv_both"))
        except ImportError:
            continue  # its dependency is missing here (lmcache, msgpack)
        judged = kv._supports_hma({"kv_connector": name}, real_vllm[2])
        assert judged is not None and judged[0] is supports, (name, judged, supports)
        asked += 1
    assert asked >= 10


def test_simple_cpu_offload_is_the_native_backend_under_its_variable(real_vllm, monkeypatch):
    # VLLM_USE_SIMPLE_KV_OFFLOAD picks SimpleCPUOffloadConnector: also SupportsHMA, so the
    # model's OffloadingConnector stands for both
    monkeypatch.setenv("VLLM_USE_SIMPLE_KV_OFFLOAD", "1")
    name, supports = _vllm_side([*SIZE])
    assert name == "SimpleCPUOffloadConnector" and supports is True


# A connector module of the user's, as kv_connector_module_path names it: vLLM imports it and takes
# the class named kv_connector from it before its own registry (factory.py get_connector_class), so
# a class called LMCacheConnectorV1 here may support the hybrid manager where vLLM's does not.
USERS_MODULE = '''
from vllm.distributed.kv_transfer.kv_connector.v1.base import KVConnectorBase_V1, SupportsHMA


class LMCacheConnectorV1(KVConnectorBase_V1, SupportsHMA):  # vLLM's own of this name lacks it
    def __init__(self, vllm_config, role, kv_cache_config=None):
        raise AssertionError("never built: only its class is asked")


class NixlConnector(KVConnectorBase_V1):  # vLLM's own of this name has it
    def __init__(self, vllm_config, role, kv_cache_config=None):
        raise AssertionError("never built: only its class is asked")


class MyConnector(KVConnectorBase_V1, SupportsHMA):
    def __init__(self, vllm_config, role, kv_cache_config=None):
        raise AssertionError("never built: only its class is asked")
'''


@pytest.fixture
def users_module(tmp_path, monkeypatch):
    import sys

    name = "dsv4_oracle_users_connectors"
    (tmp_path / f"{name}.py").write_text(USERS_MODULE)
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delitem(sys.modules, name, raising=False)
    return name


@pytest.mark.rule("connector-turns-hma-off")
@pytest.mark.rule("hma-off-full-attention")
@pytest.mark.rule("connector-hma-forced")
@pytest.mark.parametrize("name, users_class_supports", [("LMCacheConnectorV1", True), ("NixlConnector", False),
                                                         ("MyConnector", True)])
@pytest.mark.parametrize("extra", [[], SIZE])
def test_a_connector_from_the_users_module_is_the_users_class(real_vllm, monkeypatch, users_module, name,
                                                              users_class_supports, extra):
    """vLLM's factory judges the user's class, not the registry's of that name: the model must not be
    certain either way (a doubt, never a refusal), and vLLM's answer must be the class's."""
    monkeypatch.delenv("VLLM_USE_SIMPLE_KV_OFFLOAD", raising=False)
    tokens = [*transfer(name, kv_connector_module_path=users_module), *extra]
    facts = facts_for([M, *tokens], version=real_vllm[2])
    connector = kv.effective_connector(facts)
    assert connector is not None and connector.doubt == kv.USER_CLASS_DOUBT and not connector.hma, connector
    assert (kv.effective_transfer_config(facts)[0] or {}).get("kv_connector_module_path") == users_module
    if extra:
        # --kv-offloading-size replaces the name and keeps the module path: vLLM looks for
        # OffloadingConnector in the user's module (absent from this one), not in its registry
        with pytest.raises(AttributeError, match=f"Class OffloadingConnector not found in {users_module}"):
            _vllm_side(tokens)
    else:
        built, supports = _vllm_side(tokens)
        assert built == name and supports is users_class_supports, (built, supports)
        registry = kv._supports_hma({"kv_connector": name}, real_vllm[2])  # the registry's class of that name
        if name != "MyConnector":
            assert registry is not None and registry[0] is not supports  # the name alone would judge wrong
    from dsv4_launch.core.rules.plan import make_plan

    for forced in ([], ["--no-disable-hybrid-kv-cache-manager"]):
        plan = make_plan(facts_for([M, *tokens, *forced], version=real_vllm[2]))
        assert plan.refusals == (), plan.refusals

"""Rows of issue 28.5 judged by the installed vLLM's own code on the CPU (marker ``rule``).

- ``v41-pcp-not-flashmla``: DeepSeek-V4.1's attention selector (``_select_dsv4_attn_cls`` of
  ``vllm/models/deepseek_v41/nvidia/model.py``) called with prefill context parallelism 2 and each
  backend; from 0.33 it raises NotImplementedError for every backend but FlashMLA sparse. Faked:
  the two config parts it reads first (attention_config.backend, parallel_config's PCP size).
"""

from __future__ import annotations

import importlib
from types import SimpleNamespace as NS

import pytest

from tests.planning import V41, M, planned
from tests.vllm_real.conftest import vllm_symbol

BACKENDS = [None, "FLASHMLA_SPARSE", "FLASHMLA_SPARSE_DSV41", "FLASHINFER_MLA_SPARSE_DSV41",
            "FLASHINFER_MLA_SPARSE_DSV4", "FLASHMLA_MEGA_ATTN_DSV41", "TRITON_MLA"]


@pytest.mark.rule("v41-pcp-not-flashmla")
@pytest.mark.parametrize("backend", BACKENDS, ids=lambda b: b or "default")
def test_v41_prefill_context_parallel_backends(real_vllm, backend):
    version = real_vllm[2]
    tokens = [M, "-pcp", "2", *(["--attention-backend", backend] if backend else [])]
    try:
        model = importlib.import_module("vllm.models.deepseek_v41.nvidia.model")
    except ImportError:  # no DeepSeek-V4.1 before 0.30
        assert ("v41-pcp-not-flashmla"
                not in {f.rule for f in planned(tokens, version=version, config=V41).plan.findings})
        return
    enum = vllm_symbol("vllm.v1.attention.backends.registry", "AttentionBackendEnum")
    if backend is not None and backend not in enum.__members__:
        pytest.skip(f"no {backend} in vLLM {version}")
    config = NS(attention_config=NS(backend=enum[backend] if backend else None),
                parallel_config=NS(prefill_context_parallel_size=2))
    try:
        model._select_dsv4_attn_cls(config)
        raised = False
    except NotImplementedError as exc:
        raised = "PCP requires FlashMLA sparse attention" in str(exc)
    except Exception:  # another check (the CPU platform, a non-V4.1 backend): not this row's
        raised = False
    found = {f.rule: f for f in planned(tokens, version=version, config=V41).plan.findings}
    assert ("v41-pcp-not-flashmla" in found) is raised, (backend, found.get("v41-pcp-not-flashmla"))
    if raised:
        assert found["v41-pcp-not-flashmla"].level == "refuse"

"""doctor's runtime probe against the real PyTorch and FlashInfer that come with vLLM."""

from __future__ import annotations

import importlib.metadata
import sys

from dsv4_launch.adapters.runtime_probe import read_runtime


def test_runtime_probe_reads_real_torch_without_cuda(real_vllm):
    result, error = read_runtime(sys.executable)
    assert error is None
    torch = result["torch"]
    assert torch["version"].split("+")[0] == importlib.metadata.version("torch").split("+")[0]
    assert torch["cuda"]  # vLLM's wheels pull a CUDA build of torch
    assert any(flag.startswith("sm_90") for flag in torch["arch_flags"])
    if result["flashinfer"] is not None:
        assert result["flashinfer"]["version"]

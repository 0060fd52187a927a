"""The MoE kernel's rounding of the expert slice (the budget's "moe padding" term), judged by the
installed vLLM's own ``mxfp4_round_up_hidden_size_and_intermediate_size`` on the CPU
(``fused_moe/oracle/mxfp4.py``): for each kernel the NVIDIA GPUs can pick, the rows and hidden size
it rounds V4-Pro's and V4-Flash's per-rank slices to, compared with
``core.memory.weights._padding_rows`` (the band's ends per GPU family and release) and the bytes
``expert_padding`` adds. Nothing is faked: vLLM's function is called as it is (the CPU platform is
neither ROCm nor XPU, as on an NVIDIA GPU).
"""

from __future__ import annotations

import importlib

import pytest

from dsv4_launch.adapters.checkpoints import known_checkpoint
from dsv4_launch.core.memory.weights import _padding_rows, expert_padding
from tests.vllm_real.conftest import require_vllm

PRO = known_checkpoint("deepseek-ai/DeepSeek-V4-Pro")["config"]
FLASH = known_checkpoint("deepseek-ai/DeepSeek-V4-Flash")["config"]


@pytest.fixture(scope="module")
def oracle():
    require_vllm()
    module = importlib.import_module("vllm.model_executor.layers.fused_moe.oracle.mxfp4")
    return module, importlib.import_module("vllm.version").__version__


def rounded(module, name: str, hidden: int, rows: int) -> tuple[int, int] | None:
    backend = getattr(module.Mxfp4MoeBackend, name, None)
    if backend is None:
        return None  # the release has no such kernel
    return module.mxfp4_round_up_hidden_size_and_intermediate_size(backend, hidden, rows)


# The kernels an NVIDIA GPU can pick for DeepSeek-V4's MXFP4 experts, by family (_get_priority_backends).
SM10 = ("FLASHINFER_TRTLLM_MXFP4_MXFP8", "DEEPGEMM_MXFP4", "MARLIN")
SM9 = ("MARLIN",)
SM12 = ("B12X_MXFP4_MXFP8", "MARLIN")


@pytest.mark.parametrize("family,capability", [(SM10, (10, 0)), (SM9, (9, 0)), (SM12, (12, 0))])
@pytest.mark.parametrize("rows", [64, 192, 384, 2048 // 16, 3072 // 16])
def test_the_band_holds_every_kernel_the_gpu_can_pick(oracle, family, capability, rows):
    module, version = oracle
    low, high, _ = _padding_rows(capability, version)
    got = [r for r in (rounded(module, name, 7168, rows) for name in family) if r is not None]
    assert got, "no kernel of the family in this release"
    padded = [r[1] for r in got]
    # the band's ends are the fewest and the most rows any of those kernels rounds to
    assert min(padded) == max(rows, -(-rows // low) * low)
    assert max(padded) == -(-rows // high) * high
    assert all(r[0] == 7168 for r in got)  # V4-Pro's hidden size is whole 256s: never padded


def test_pro_at_tp_8_pads_as_the_release_rounds_it(oracle):
    module, version = oracle
    trtllm = rounded(module, "FLASHINFER_TRTLLM_MXFP4_MXFP8", 7168, 3072 // 8)
    low, high, _ = expert_padding(PRO, tp=8, capability=(10, 0), vllm_version=version)
    if trtllm == (7168, 512):  # 384 rows → 512: a third more expert bytes at the high end
        assert low == 0 and high > 30 * 2**30
    else:
        assert trtllm == (7168, 384) and (low, high) == (0, 0)
    assert expert_padding(FLASH, tp=8, capability=(10, 0), vllm_version=version)[:2] == (0, 0)
    assert rounded(module, "FLASHINFER_TRTLLM_MXFP4_MXFP8", 4096, 2048 // 8) == (4096, 256)

"""core/memory/activation.py's derived terms against the installed vLLM's own code, on the CPU.

What vLLM runs, unchanged:

* ``DeepseekV4FlashMLAAttention.forward_mqa`` in the dummy run (no attention metadata): the
  workspace it asks the workspace manager for, per layer kind (ratio 4, ratio 128, sliding-window
  only), on a stand-in layer carrying only the fields the method reads (the release's own
  ``PREFILL_CHUNK_SIZE``). Faked: the forward context (``attn_metadata`` None, as in the dummy run)
  and the workspace manager, which records what is asked instead of allocating it on a GPU.
* ``get_max_prefill_buffer_size`` and the indexer's ``_gather_workspace_shapes`` (the K-gather
  workspace the indexer reserves in the dummy run, per ``--max-model-len``, factor and cache
  dtype), the radix top-k workspace, ``VLLM_SPARSE_INDEXER_MAX_LOGITS_MB``'s default; the factor's
  default (0.32+) and the logits stand-in are read as source text.
* ``MarlinExperts.workspace_shapes`` (called on a bare object: it reads its arguments only) for the
  DP ranks' all-gathered tokens, the DP + EP term's high end.
* The DP + EP term's kernel on SM 9.0: ``_get_priority_backends`` (DeepSeek-V4's MXFP4 list) and each
  kernel class's own ``_supports_current_device`` with the platform faked as an SM 9.0 CUDA device;
  Humming's ``_workspace_shapes`` on a stand-in layer for every input type, output type and gemm.
* ``_use_sequence_parallel`` (``nvidia/model.py`` of V4 from 0.27 and of V4.1) on stand-in
  configs: the layouts where each rank holds 1/TP of the residual streams. Before 0.27 the
  function does not exist and ours must say no sequence parallelism.

The release is ``vllm.version``'s, so a release's own sources laid over another's venv are judged
as that release.
"""

from __future__ import annotations

import importlib
import importlib.util
from types import SimpleNamespace

import pytest

from dsv4_launch.adapters.checkpoints import known_checkpoint
from dsv4_launch.core.memory.activation import (
    COMBINED_INDICES,
    INDEXER_DECODE_LOGITS,
    INDEXER_DECODE_LOGITS_MB,
    INDEXER_FACTOR,
    INDEXER_LOGITS_MB,
    gather_workspace_bytes,
    indexer_gather_bytes,
    mega_moe,
    moe_gather_term,
    sequence_parallel,
    shape_of,
)
from tests.vllm_real.conftest import require_vllm

pytestmark = pytest.mark.rule("max-model-len-too-long")
FLASH = known_checkpoint("deepseek-ai/DeepSeek-V4-Flash")["config"]
PRO = known_checkpoint("deepseek-ai/DeepSeek-V4-Pro")["config"]


@pytest.fixture(scope="module")
def release():
    require_vllm()
    return importlib.import_module("vllm.version").__version__


class _Recorder:
    def __init__(self):
        self.asked: list[tuple] = []

    def get_simultaneous(self, *specs):
        self.asked.append(specs)
        return None


def _reserved(monkeypatch, config, ratio, max_model_len, tokens):
    """Bytes FlashMLA's dummy-run forward_mqa asks the workspace manager for (one layer)."""
    import torch

    module = importlib.import_module("vllm.models.deepseek_v4.nvidia.flashmla")
    cls = module.DeepseekV4FlashMLAAttention
    recorder = _Recorder()
    monkeypatch.setattr(module, "get_forward_context", lambda: SimpleNamespace(attn_metadata=None))
    monkeypatch.setattr(module, "current_workspace_manager", lambda: recorder)
    heads, head_dim = 64, config["head_dim"]
    layer = SimpleNamespace(
        compress_ratio=ratio, max_model_len=max_model_len, window_size=config["sliding_window"],
        max_num_batched_tokens=tokens, PREFILL_CHUNK_SIZE=cls.PREFILL_CHUNK_SIZE, max_image_tokens=0,
        topk_indices_buffer=torch.empty(1, config["index_topk"], dtype=torch.int32),
    )
    q = torch.zeros(2, heads, head_dim, dtype=torch.bfloat16)
    cls.forward_mqa(layer, q, torch.zeros(2, head_dim), torch.zeros(2, dtype=torch.int64), torch.zeros_like(q))
    assert len(recorder.asked) == 1, recorder.asked
    total = 0
    for shape, dtype in recorder.asked[0]:
        n = 1
        for d in shape:
            n *= d
        total += n * torch.empty(0, dtype=dtype).element_size()
    return total


@pytest.mark.parametrize("config", [FLASH, PRO], ids=["flash", "pro"])
@pytest.mark.parametrize("max_model_len,tokens", [(1_048_576, 8192), (200_000, 16384), (65536, 2048)])
def test_the_gather_workspace_is_what_flashmla_asks_for(release, monkeypatch, config, max_model_len, tokens):
    combined = COMBINED_INDICES.contains(release)
    assert combined is not None
    ours_model = gather_workspace_bytes(shape_of(config), tokens, max_model_len, combined)
    theirs = {}
    for ratio in sorted(set(shape_of(config).ratios)):
        theirs[ratio] = _reserved(monkeypatch, config, ratio, max_model_len, tokens)
        one = shape_of({**config, "compress_ratios": [ratio]})
        assert gather_workspace_bytes(one, tokens, max_model_len, combined) == theirs[ratio], (release, ratio)
    assert ours_model == max(theirs.values())  # the workspace manager keeps the largest


@pytest.mark.parametrize("tp,pp,dp,ep,moe_backend", [
    (8, 1, 2, True, None), (8, 1, 1, True, None), (8, 1, 1, True, "deep_gemm_mega_moe"), (8, 2, 2, True, None),
    (8, 1, 2, False, None), (1, 1, 8, True, None), (2, 1, 4, True, "flashinfer_moe_ep_cutedsl"),
    (4, 1, 1, True, "flashinfer_moe_ep_mega_deep_gemm"), (4, 1, 1, True, "flashinfer_moe_ep_mega_cutedsl"),
    (4, 1, 1, True, "triton"), (4, 2, 1, True, "deep_gemm_mega_moe"), (2, 4, 2, True, None),
])
@pytest.mark.parametrize("model", ["deepseek_v4", "deepseek_v41"])
def test_sequence_parallelism_is_vllms(release, tp, pp, dp, ep, moe_backend, model):
    if importlib.util.find_spec(f"vllm.models.{model}") is None:
        pytest.skip(f"no {model} in vLLM {release}")
    module = importlib.import_module(f"vllm.models.{model}.nvidia.model")
    ours = sequence_parallel(tp, pp, dp, ep, mega_moe(moe_backend, release), release, v41=model == "deepseek_v41")
    theirs_fn = getattr(module, "_use_sequence_parallel", None)
    if theirs_fn is None:
        assert ours is False, release
        return
    config = SimpleNamespace(
        parallel_config=SimpleNamespace(pipeline_parallel_size=pp, tensor_parallel_size=tp,
                                        data_parallel_size=dp, enable_expert_parallel=ep),
        kernel_config=SimpleNamespace(moe_backend=moe_backend))
    assert ours is theirs_fn(config), (release, tp, pp, dp, ep, moe_backend)


@pytest.mark.parametrize("length", [65_536, 200_000, 262_144, 262_145, 1_048_576])
@pytest.mark.parametrize("fp4", [False, True])
def test_the_indexer_gather_is_what_the_release_reserves(release, length, fp4):
    import torch

    sizing = importlib.import_module("vllm.v1.attention.backends.mla.indexer").get_max_prefill_buffer_size
    indexer = importlib.import_module("vllm.model_executor.layers.sparse_attn_indexer")
    factor_era = INDEXER_FACTOR.contains(release)
    # 0.32+: VllmConfig resolves the factor once (5 up to 256K, else 2) unless the user set it
    factors = [None] if not factor_era else [5 if length <= 256 * 1024 else 2, 3]
    for factor in factors:
        config = SimpleNamespace(model_config=SimpleNamespace(max_model_len=length),
                                 attention_config=SimpleNamespace(sparse_mla_prefill_workspace_factor=factor))
        rows = sizing(config) // 4  # DeepseekV4Indexer: get_max_prefill_buffer_size(...) // compress_ratio
        theirs = sum(_bytes(shape, dtype) for shape, dtype in indexer._gather_workspace_shapes(
            rows, 128, torch.float8_e4m3fn, fp4)) + _bytes((indexer.RADIX_TOPK_WORKSPACE_SIZE,), torch.uint8)
        ours = indexer_gather_bytes(shape_of(FLASH), length, factor_era, fp4, factor if factor == 3 else None)
        assert ours == theirs, (release, length, fp4, factor)


def test_the_factor_default_and_the_logits_stand_in_are_the_releases(release, monkeypatch):
    import inspect

    monkeypatch.delenv("VLLM_SPARSE_INDEXER_MAX_LOGITS_MB", raising=False)
    envs = importlib.import_module("vllm.envs")
    assert envs.VLLM_SPARSE_INDEXER_MAX_LOGITS_MB == INDEXER_LOGITS_MB
    if INDEXER_FACTOR.contains(release):
        source = inspect.getsource(importlib.import_module("vllm.config.vllm").VllmConfig)
        assert "5 if self.model_config.max_model_len <= 256 * 1024 else 2" in source
    source = inspect.getsource(importlib.import_module("vllm.model_executor.layers.sparse_attn_indexer"))
    if not INDEXER_DECODE_LOGITS.contains(release):
        assert "max_logits_elems = envs.VLLM_SPARSE_INDEXER_MAX_LOGITS_MB * 1024 * 1024" in source
        return
    # from 0.34 the larger of the prefill budget and the decode rows' logits (IndexerLogits.at, whose
    # arithmetic tests/memory/test_activation.py holds to these lines written out)
    assert envs.VLLM_SPARSE_INDEXER_MAX_DECODE_LOGITS_MB == INDEXER_DECODE_LOGITS_MB
    for line in ("split_kv = 384 if current_platform.is_device_capability_family(100) else 256",
                 "row_align = math.lcm(split_kv, 1024 // logits_dtype.itemsize)",
                 "copy_bytes = 0 if logits_dtype == torch.float32 else torch.float32.itemsize",
                 "decode_copy_bytes = copy_bytes if fp32_decode_logits else 0",
                 "decode_budget // (logits_dtype.itemsize * max_model_len),",
                 "prefill_budget = envs.VLLM_SPARSE_INDEXER_MAX_LOGITS_MB * 1024 * 1024",
                 "* round_up(max_model_len, row_align)",
                 "* (logits_dtype.itemsize + decode_copy_bytes),",
                 'fp32_decode_logits = topk_backend != "deep_select" or dcp_world_size != 1',
                 'and topk_backend in ("auto", "persistent")',
                 "and topk_tokens in (512, 1024, 2048)"):
        assert line in source, line
    assert 'resolve_indexer_logits_dtype("float32")' in source  # the default dtype


def _bytes(shape, dtype) -> int:
    import torch

    n = 1
    for d in shape:
        n *= d
    return n * torch.empty(0, dtype=dtype).element_size()


@pytest.mark.parametrize("config", [FLASH, PRO], ids=["flash", "pro"])
@pytest.mark.parametrize("tokens,dp", [(8192, 8), (16384, 2), (512, 8)])
def test_the_dp_ep_all_gather_is_marlins_workspaces_over_the_gathered_tokens(release, config, tokens, dp):
    # MarlinExperts.workspace_shapes (its arguments only: called on a bare object) for M = the DP ranks' tokens
    # less M = one rank's (the band's part); N = w1's rows = 2 × moe_intermediate_size (moe_problem_size)
    marlin = importlib.import_module("vllm.model_executor.layers.fused_moe.experts.marlin_moe").MarlinExperts
    silu = importlib.import_module("vllm.model_executor.layers.fused_moe.activation").MoEActivation.SILU
    n, k, topk, experts = 2 * config["moe_intermediate_size"], config["hidden_size"], config["num_experts_per_tok"], 256

    def workspaces(m):
        one, two, _ = marlin.workspace_shapes(object(), m, n, k, topk, experts, experts // dp, None, silu)
        return sum(_prod(s) for s in (one, two)) * 2  # bf16

    theirs = workspaces(tokens * dp) - workspaces(tokens)
    ours = moe_gather_term(shape_of(config), tokens, dp, True).high
    assert ours == theirs, (release, tokens, dp)


def _prod(shape) -> int:
    n = 1
    for d in shape:
        n *= d
    return n


# --- DP + EP's all-gather: the MXFP4 kernel SM 9.0 gets, and Humming's workspaces ---------------------------

class _Hopper:
    """An SM 9.0 CUDA device, as the kernels' ``_supports_current_device`` ask about it."""

    def is_rocm(self):
        return False

    is_xpu = is_cpu = is_rocm

    def is_cuda(self):
        return True

    def is_device_capability_family(self, family):
        return family == 90

    def is_device_capability(self, capability):
        return tuple(capability) == (9, 0) if not isinstance(capability, int) else capability == 90

    def has_device_capability(self, capability):
        return (9, 0) >= (tuple(capability) if not isinstance(capability, int) else divmod(capability, 10))

    def get_device_capability(self, device_id=0):
        return SimpleNamespace(major=9, minor=0, to_int=lambda: 90)


def test_on_sm_9_the_first_kernel_that_takes_the_device_is_the_facts(release, monkeypatch):
    # _get_priority_backends() for DeepSeek-V4's MXFP4 experts (select_deepseek_v4_mxfp4_moe_backend's
    # list), each kernel class's own _supports_current_device() on an SM 9.0 CUDA device (the platform
    # faked; FlashInfer and DeepGEMM taken as installed, so only the device decides)
    from dsv4_launch.core.memory.activation import MXFP4_SM90

    platforms = importlib.import_module("vllm.platforms")
    oracle = importlib.import_module("vllm.model_executor.layers.fused_moe.oracle.mxfp4")
    hopper = _Hopper()
    monkeypatch.setattr(oracle, "current_platform", hopper)
    monkeypatch.setattr(platforms, "current_platform", hopper)
    first = None
    for backend in oracle._get_priority_backends():
        takes = []
        for cls in oracle.backend_to_kernel_cls(backend):
            module = importlib.import_module(cls.__module__)
            for name, value in (("current_platform", hopper), ("has_flashinfer", lambda: True),
                                ("is_deep_gemm_supported", lambda: True), ("has_humming", lambda: True)):
                if hasattr(module, name):
                    monkeypatch.setattr(module, name, value)
            takes.append(cls._supports_current_device())
        if any(takes):
            first = backend.name
            break
    expected = MXFP4_SM90.at(release)
    if expected is None:
        pytest.skip(f"{release}: no SM 9.0 kernel fact (first that takes the device: {first})")
    assert first == expected.upper(), (release, first)


@pytest.mark.parametrize("config", [FLASH, PRO], ids=["flash", "pro"])
@pytest.mark.parametrize("tokens,dp", [(8192, 8), (512, 8), (16384, 2)])
def test_hummings_workspaces_lie_in_the_all_gather_terms_ends(release, config, tokens, dp):
    # HummingExpertsBase._workspace_shapes / get_buffer_metas under EP (grouped gemm; the indexed one too),
    # on a stand-in carrying the fields they read, for every input type Humming takes and both 16-bit outputs
    from dsv4_launch.core.memory.activation import HUMMING

    if HUMMING.contains(release) is not True:
        pytest.skip(f"{release}: Humming's EP shapes not claimed")
    torch = importlib.import_module("torch")
    experts = importlib.import_module("vllm.model_executor.layers.fused_moe.experts.fused_humming_moe")
    humming = importlib.import_module("vllm.utils.humming")
    silu = importlib.import_module("vllm.model_executor.layers.fused_moe.activation").MoEActivation.SILU
    k, i, topk = config["hidden_size"], config["moe_intermediate_size"], config["num_experts_per_tok"]
    d = humming.dtypes

    def workspaces(m, a, c, gemm):
        layer = SimpleNamespace(
            num_experts=256 // dp, is_batched=lambda: False, humming_gemm_type=lambda: gemm,
            adjust_N_for_activation=lambda n, act: n // 2, moe_config=SimpleNamespace(in_dtype=torch.bfloat16),
            humming_configs={"w13": SimpleNamespace(shape_n=2 * i, pad_shape_n=0, shape_k=k, pad_shape_k=0,
                                                    a_dtype=a, c_dtype=c),
                             "w2": SimpleNamespace(shape_n=k, pad_shape_n=0, shape_k=i, pad_shape_k=0,
                                                   a_dtype=a, c_dtype=c)})
        layer.get_buffer_metas = experts.HummingExpertsBase.get_buffer_metas.__get__(layer)
        one, two, _ = experts.HummingExpertsBase._workspace_shapes(layer, m, topk, silu)
        return (_prod(one) + _prod(two)) * 2  # in_dtype elements

    kinds = [(a, c, g) for a in (d.bfloat16, d.float16, d.float8e4m3, d.int8, d.float4e2m1)
             for c in (d.bfloat16, d.float16) for g in (humming.GemmType.GROUPED_CONTIGUOUS, humming.GemmType.INDEXED)]
    term = moe_gather_term(shape_of(config), tokens, dp, True, kernels=("humming",))
    every = [workspaces(dp * tokens, *kind) for kind in kinds]
    assert term.low <= min(every)  # the floor: what every input type and gemm asks for over all the tokens
    # the ceiling: 16-bit inputs on the grouped gemm (EP's default), beyond the band's own tokens
    beyond = [workspaces(dp * tokens, *kind) - workspaces(tokens, *kind) for kind in kinds]
    assert term.high == max(beyond)
    assert term.low == min(every)  # attained: 4-bit inputs, where workspace 1 is the (M, K) output

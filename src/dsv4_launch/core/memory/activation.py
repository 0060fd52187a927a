"""The profile run's activation peak, from the model and the layout (pure).

vLLM measures the peak on the GPU while ``profile_run`` runs the dummy forward and sampler. Each
term is (low, high, basis): derived exactly from the config, the layout and the release where vLLM's
code says the size (the residual streams, the mHC step, the gather workspace, the indexer's and
the sampler's logits), a band where it does not (the layer's intermediates and kernel workspaces,
fitted on one GB10 measurement; MegaMoE's dispatch buffer; DP + EP's all-gather where its kernel
is not read). The vLLM lines each rests on, the fit, the field cases and how the terms coexist in
the peak: docs/memory.md "The activation peak".
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping

from ..facts import Facts, as_bool, attention_backend, json_option
from ..gpus import GpuInfo
from ..model import V41
from ..records import Record
from ..vllm.facts import fact
from .budget import Term
from .kv_plan import round_up as _round_up
from .vllm_config import DSV4_MAX_MODEL_LEN, speculative_method
from .weights import routed_experts_format, shards_tokens

MiB = 2**20
GiB = 2**30
BF16 = 2
FP32 = 4
INT32 = 4

PREFILL_CHUNK_SIZE = 4  # DeepseekV4Attention.PREFILL_CHUNK_SIZE (attention.py:119@0.24, :156@0.33)
COMBINED_INDICES = fact("combined-indices").range
SEQUENCE_PARALLEL = fact("sequence-parallel").range  # sp_shard(hidden_states)
V41_SP_ANY_PP = fact("v41-sequence-parallel-any-pp").range  # V4.1 shards them under PP too, from 0.34
# The indexer's dummy-run reservations, their sizes and vLLM's lines: docs/memory.md "The activation
# peak" (the gather workspace and the indexer's logits rows).
INDEXER_FACTOR = fact("indexer-factor").range
RADIX_TOPK_WORKSPACE = 1024 * 1024
INDEXER_LOGITS_MB = 512
# From 0.34 the larger of that budget and the decode steps' logits (docs/memory.md, IndexerLogits.at)
INDEXER_DECODE_LOGITS = fact("indexer-decode-logits").range
INDEXER_DECODE_LOGITS_MB = 2048
FLASHINFER_BACKENDS = ("FLASHINFER_MLA_SPARSE_DSV4",)
FLASHMLA_BACKENDS = ("FLASHMLA_SPARSE", "FLASHMLA_SPARSE_DSV4")
# The MoE backends that shard the tokens under TP + EP even at DP 1: "deep_gemm_mega_moe" from
# 0.27 (nvidia/model.py:806@0.28); FlashInfer's EP megakernels from 0.29 (config/kernel.py:148-159@0.29,
# named "flashinfer_moe_ep_cutedsl" from 0.32: :148-170@0.33).
NATIVE_MEGA_MOE = "deep_gemm_mega_moe"
FLASHINFER_MEGA_MOE = tuple(  # (name, the releases it is a megakernel backend in)
    (name, r) for r, names in fact("flashinfer-mega-moe-backends").by_release for name in names)
# DP + EP's all-gather (docs/memory.md, its row): the MXFP4 kernel SM 9.0 gets per release, the default all2all
MXFP4_SM90 = fact("dsv4-mxfp4-moe-sm90")
ALLGATHER_DEFAULT = fact("all2all-default-allgather").range
HUMMING = fact("humming-moe-workspaces").range

# The band (docs/memory.md "The activation peak"): the GB10 measurement (V4-Flash, TP 1: 5.30 GiB at
# 8,224 batched tokens, 1.39 GiB at 2,048) less the derived streams.
INTERMEDIATE_PER_TOKEN = int(0.58 * MiB)  # per batched token on the rank, V4-Flash's widths
FIT_ERROR = 0.10
FLASH_HIDDEN = 4096
SAMPLER_LOW_BYTES = 2 + 4  # per logit: the LM head's bf16 and the sampler's fp32 copy, in either runner
SAMPLER_COPIES_HIGH = 6  # fp32 copies at most: + probabilities, the sort's values and int64 indices
SPEC_SAMPLER_COPIES = 4  # draft probabilities (2) and the [2 × requests, vocab] logits


class Shape(Record):
    """What the activation peak reads of DeepSeek-V4's config (V4-Flash's values by default)."""

    hidden: int = 4096
    hc_mult: int = 4
    head_dim: int = 512
    window: int = 128
    index_topk: int = 512
    vocab: int = 129_280
    ratios: tuple[int, ...] = (4,)
    index_head_dim: int = 128
    moe_intermediate: int = 2048
    experts_per_token: int = 6


def shape_of(config: Mapping | None) -> Shape:
    config = config or {}
    text = config.get("text_config")
    if isinstance(text, Mapping) and "hidden_size" in text:
        config = text

    def number(key: str, default: int) -> int:
        value = config.get(key)
        return value if type(value) is int and value > 0 else default

    d = Shape()
    ratios = config.get("compress_ratios")
    if isinstance(ratios, list) and ratios:
        ratios = tuple(sorted({r if type(r) is int and r > 1 else 1 for r in ratios}))
    else:
        ratios = d.ratios
    return Shape(number("hidden_size", d.hidden), number("hc_mult", d.hc_mult), number("head_dim", d.head_dim),
                 number("sliding_window", d.window), number("index_topk", d.index_topk),
                 number("vocab_size", d.vocab), ratios, number("index_head_dim", d.index_head_dim),
                 number("moe_intermediate_size", d.moe_intermediate),
                 number("num_experts_per_tok", d.experts_per_token))


class Activation(Record):
    """The named terms and the peak they make (each a ``Term``: low, high, basis)."""

    terms: tuple[tuple[str, Term], ...]
    peak: Term

    def term(self, name: str) -> Term | None:
        return next((t for n, t in self.terms if n == name), None)


def mega_moe(backend: str | None, release: str | None) -> bool:
    """The MoE backend is one of the release's ``MEGA_MOE_BACKENDS`` (an unknown release: by name)."""
    if backend == NATIVE_MEGA_MOE:
        return True
    return any(backend == name and since.contains(release) is not False for name, since in FLASHINFER_MEGA_MOE)


def sequence_parallel(tp: int, pp: int, dp: int, expert_parallel: bool, mega_moe: bool,
                      release: str | None, v41: bool = False) -> bool | None:
    """``_use_sequence_parallel``: every rank holds 1/TP of the tokens (None: the release is unknown).
    Under PP only V4.1's, from fact ``v41-sequence-parallel-any-pp``'s releases."""
    if not shards_tokens(tp, dp, expert_parallel, mega_moe):
        return False
    if pp > 1:
        return V41_SP_ANY_PP.contains(release) if v41 else False
    return SEQUENCE_PARALLEL.contains(release)


def _stream_tokens(tokens: int, tp: int, sp: bool | None) -> tuple[int, int]:
    """(fewest, most) tokens a rank holds the streams of: 1/TP under sequence parallelism."""
    split = -(-tokens // tp)
    return (split, split) if sp else (tokens, tokens) if sp is False else (split, tokens)


def _sp_words(tokens: int, tp: int, sp: bool | None) -> str:
    if sp:
        return f"1/{tp} of {tokens:,} tokens (sequence parallel: nvidia/model.py:571-582@0.33)"
    if sp is None:
        return f"{tokens:,} tokens, or 1/{tp} of them if the release shards them (≥ 0.27)"
    return f"{tokens:,} tokens"


def residual_term(shape: Shape, tokens: int, tp: int, sp: bool | None) -> Term:
    """The residual streams ``[tokens, hc_mult, hidden]`` bf16, held through every layer."""
    per_token = shape.hc_mult * shape.hidden * BF16
    few, most = _stream_tokens(tokens, tp, sp)
    return Term(few * per_token, most * per_token, f"[tokens, {shape.hc_mult}, {shape.hidden:,}] bf16 over "
                + _sp_words(tokens, tp, sp))


def mhc_step_term(shape: Shape, tokens: int, tp: int, sp: bool | None) -> Term:
    """What ``mhc_fused_post_pre`` holds besides the residual it reads: the next residual, the
    sublayer's output and the next layer input ``[tokens, hidden]`` bf16, the old and new mixes."""
    per_token = shape.hc_mult * shape.hidden * BF16 + 2 * shape.hidden * BF16 \
        + 2 * (shape.hc_mult + shape.hc_mult ** 2) * FP32
    few, most = _stream_tokens(tokens, tp, sp)
    return Term(few * per_token, most * per_token, "the next residual (torch.empty_like(residual), "
                "kernels/mhc/tilelang.py:386@0.33, :446@0.25), the sublayer output and the next layer input "
                f"[tokens, {shape.hidden:,}] bf16, the fp32 mixes (:882-898@0.33) over " + _sp_words(tokens, tp, sp))


def gather_workspace_bytes(shape: Shape, tokens: int, max_model_len: int, combined: bool) -> int:
    """What FlashMLA's dummy forward reserves: the largest of its layers' (a sliding-window-only
    layer, ratio ≤ 1, gathers its window and the batch, with no top-k)."""

    def layer(ratio: int) -> int:
        swa_only = ratio <= 1
        rows = (0 if swa_only else -(-max_model_len // ratio)) + shape.window + tokens
        size = PREFILL_CHUNK_SIZE * rows * shape.head_dim * BF16
        if combined:
            top_k = 0 if swa_only else shape.index_topk
            size += tokens * _round_up(top_k + shape.window, 128) * INT32 + tokens * INT32
        return size

    return max(layer(r) for r in (shape.ratios or (1,)))


def indexer_entries(max_model_len: int, factor_era: bool, factor: int | None = None) -> int:
    """``get_max_prefill_buffer_size(vllm_config) // 4``: the indexer's K-gather rows."""
    if not factor_era:
        return max_model_len * 40 // 4
    factor = factor or (5 if max_model_len <= 256 * 1024 else 2)
    return max_model_len * (576 * 2 // 132) * factor // 4


def indexer_gather_bytes(shape: Shape, max_model_len: int, factor_era: bool, fp4: bool,
                         factor: int | None = None) -> int:
    if 4 not in shape.ratios:
        return 0  # only the ratio-4 layers have an indexer (attention.py:249@0.24, :302@0.33)
    per_entry = shape.index_head_dim // 2 + shape.index_head_dim // 32 if fp4 else shape.index_head_dim + 4
    return indexer_entries(max_model_len, factor_era, factor) * per_entry + RADIX_TOPK_WORKSPACE


def flashmla(capability: tuple[int, int] | None, backend: str | None) -> bool | None:
    """Whether DeepSeek-V4's attention is FlashMLA's (``_select_dsv4_attn_cls``): a forced backend
    decides; else SM 12 runs FlashInfer and the other CUDA GPUs FlashMLA. None: not known here."""
    if backend in FLASHINFER_BACKENDS:
        return False
    if backend in FLASHMLA_BACKENDS:
        return True
    return None if backend is not None or capability is None else capability[0] != 12


def _workspace_bytes(shape: Shape, tokens: int, length: int, release: str | None, uses: bool | None,
                     fp4_indexer: bool, factor: int | None) -> tuple[int, int, tuple[int, int]]:
    """``workspace_term``'s numbers: (low, high, (the indexer's least, its most)), ``uses``
    FlashMLA's (``flashmla``)."""
    combined = COMBINED_INDICES.contains(release)
    era = INDEXER_FACTOR.contains(release)
    eras = (era,) if era is not None else (False, True)
    indexer = [indexer_gather_bytes(shape, length, e, fp4, factor) for e in eras for fp4 in {fp4_indexer, False}]
    mla_low = gather_workspace_bytes(shape, tokens, length, combined is True) if uses else 0
    mla_high = gather_workspace_bytes(shape, tokens, length, combined is not False) if uses is not False else 0
    least, most = min(indexer), max(indexer)
    return max(mla_low, least), max(mla_high, most), (least, most)


def workspace_term(shape: Shape, tokens: int, max_model_len: int | None, release: str | None,
                   capability: tuple[int, int] | None, backend: str | None, fp4_indexer: bool = False,
                   factor: int | None = None) -> Term:
    """The workspace manager's one buffer after the dummy forward: the largest of FlashMLA's
    gather workspace and the indexer's K-gather workspace (each asks for its own, the buffer grows
    to the largest: v1/worker/workspace.py)."""
    uses = flashmla(capability, backend)
    length = max_model_len or 0
    combined = COMBINED_INDICES.contains(release)
    low, high, indexer = _workspace_bytes(shape, tokens, length, release, uses, fp4_indexer, factor)
    ratio = min((r for r in shape.ratios if r > 1), default=0)
    parts = [f"the indexer's K-gather workspace ({indexer[0] / GiB:.2f}–{indexer[1] / GiB:.2f} GiB: "
             f"get_max_prefill_buffer_size({length:,}) // 4 rows, sparse_attn_indexer.py:106-115@0.24)"]
    if uses is not False:
        parts.append(f"FlashMLA's gather workspace [4, {length:,}/{ratio} + {shape.window} + {tokens:,}, "
                     f"{shape.head_dim}] bf16 (nvidia/flashmla.py:86-100@0.24"
                     + (", + the combined top-k indices, :106-131@0.33)" if combined is not False else ")"))
    basis = "the largest of " + " and ".join(parts)
    if uses is None:
        basis += "; FlashMLA's only on SM 9/10 (FlashInfer on SM 12): the GPU is not known here"
    elif uses is False:
        basis += "; FlashInfer's sparse attention reserves none (nvidia/flashinfer_sparse.py:310-318@0.33)"
    return Term(low, high, basis)


class IndexerLogits(Record):
    """What the dummy run allocates for the indexer's logits, as a function of ``--max-model-len``."""

    prefill_mb: int  # VLLM_SPARSE_INDEXER_MAX_LOGITS_MB
    decode_mb: int = INDEXER_DECODE_LOGITS_MB  # VLLM_SPARSE_INDEXER_MAX_DECODE_LOGITS_MB
    rows: int = 0  # decode rows a step holds, min(max_num_seqs, batched tokens) × (1 + k); 0 before 0.34
    itemsize: int = 4  # the logits' dtype: float32, or bfloat16 (--attention-config indexer_logits_dtype)
    topk_backend: str = "auto"  # --kernel-config sparse_indexer_topk_backend
    sm10: bool | None = None  # None: the GPU is not known (both split-KV widths)
    chunk_topk: bool = False  # the model's index_topk is one the SM 10 decode chunks take (512, 1024, 2048)

    def at(self, max_model_len: int) -> tuple[int, int]:
        copy = 0 if self.itemsize == 4 else 4  # an FP32 copy of BF16 logits
        prefill = self.prefill_mb * MiB // 4 * (self.itemsize + copy)
        if not self.rows:
            return prefill, prefill
        ends = []
        for sm10 in ((True, False) if self.sm10 is None else (self.sm10,)):
            rows, decode_copy = self.rows, copy if self.topk_backend != "deep_select" else 0
            if sm10 and self.decode_mb > 0 and self.topk_backend in ("auto", "persistent") and self.chunk_topk:
                rows, decode_copy = min(rows, self.decode_mb * MiB // (self.itemsize * max_model_len)), 0
            align = math.lcm(384 if sm10 else 256, 1024 // self.itemsize)
            ends.append(max(prefill, rows * _round_up(max_model_len, align) * (self.itemsize + decode_copy)))
        return min(ends), max(ends)


def indexer_logits_term(shape: Shape, logits: IndexerLogits, max_model_len: int) -> Term:
    """The dummy run's stand-in for the indexer's logits, live in each ratio-4 layer's indexer."""
    if 4 not in shape.ratios:
        return Term(0, 0, "no indexer (no ratio-4 layer)")
    low, high = logits.at(max_model_len)
    basis = (f"VLLM_SPARSE_INDEXER_MAX_LOGITS_MB ({logits.prefill_mb}) allocated for the indexer's logits in the "
             "dummy run (model_executor/layers/sparse_attn_indexer.py:117-122@0.24, :501-506@0.33)")
    if logits.rows:
        basis = (f"the larger of VLLM_SPARSE_INDEXER_MAX_LOGITS_MB ({logits.prefill_mb}) and {logits.rows:,} decode "
                 f"rows × {max_model_len:,} logits (at most VLLM_SPARSE_INDEXER_MAX_DECODE_LOGITS_MB on SM 10), "
                 "allocated for the indexer's logits in the dummy run (sparse_attn_indexer.py:626-664@0.34)"
                 + ("; the split-KV width is the GPU's (384 on SM 10, 256 elsewhere): not known here"
                    if logits.sm10 is None else ""))
    return Term(low, high, basis)


def intermediates_term(shape: Shape, tokens: int, tp: int, ranks: int) -> Term:
    """The band: the layer's intermediates and kernel workspaces (docs/memory.md "The activation peak"):
    ``ranks`` is what the work is spread over at the optimistic end (TP; TP × DP under EP)."""
    wider = max(shape.hidden / FLASH_HIDDEN, 1.0)
    split = 1 / max(ranks, 1)
    low = int(INTERMEDIATE_PER_TOKEN * (1 - FIT_ERROR) * split * tokens)
    high = int(INTERMEDIATE_PER_TOKEN * (1 + FIT_ERROR) * wider * tokens)
    return Term(low, high, f"not derivable (attention projections, fused-MoE workspaces, compile buffers): 0.58 MiB "
                f"× {tokens:,} tokens, fitted on V4-Flash at TP 1 on GB10, ±10 %; split over {ranks} ranks at the "
                f"low end, unsplit and ×{wider:.2f} for the hidden size at the high end")


MEGA_MOE_BUFFER_PER_VALUE = 16  # bytes per batched token × hidden: fitted on vllm#51454's two runs (below)


def _moe_workspaces(shape: Shape, tokens: int, kernel: str, high: bool) -> int:
    """The workspaces a modular MXFP4 kernel asks the workspace manager for at M = ``tokens``, bf16:
    Marlin's (M·topk, max(N, K)) + (M·topk·max(2N, K)), N = 2 × intermediate (experts/marlin_moe.py:
    664-665@0.34); Humming's under EP (fused_humming_moe.py get_buffer_metas): workspace 2 the gate-up
    and down outputs, (M·topk, max(2I, K)) in its 16-bit output type, workspace 1 at least the (M, K)
    output, at most (M·topk, max(I, K)) with inputs of ≤ 16 bits (``high``)."""
    k, i, topk = shape.hidden, shape.moe_intermediate, shape.experts_per_token
    if kernel == "marlin":
        return tokens * topk * (max(2 * i, k) + max(4 * i, k)) * BF16
    return tokens * ((topk * max(i, k)) if high else k) * BF16 + tokens * topk * max(2 * i, k) * BF16


def gathered_kernels(config: Mapping | None, chosen: str, *, tp: int, pp: int, dp: int, expert_parallel: bool,
                     release: str | None, capability: tuple[int, int] | None, all2all: object = None,
                     dbo: bool = False) -> tuple[str, ...]:
    """The modular MoE kernels that may size their workspaces by the DP ranks' all-gathered tokens,
    where the release's code settles it (MXFP4 experts, the default all2all, TP 1, no DBO; ``chosen``
    the moe_backend asked for, "" for auto); () where it is not read: the band stays."""
    if not (expert_parallel and dp > 1 and tp == 1 and pp == 1) or dbo or routed_experts_format(config) != "fp4":
        return ()
    if all2all not in (None, "allgather_reducescatter") or ALLGATHER_DEFAULT.contains(release) is not True:
        return ()
    if chosen in ("", "auto"):
        default = MXFP4_SM90.at(release) if capability == (9, 0) else None
        # Humming where its classes take the config, else the next in the list: Marlin
        return ("humming", "marlin") if default == "humming" else ("marlin",) if default == "marlin" else ()
    if chosen == "humming" and HUMMING.contains(release) is True:
        return ("humming",)
    return ("marlin",) if chosen == "marlin" else ()


def moe_gather_term(shape: Shape, tokens: int, dp: int, expert_parallel: bool, mega: bool = False,
                    kernels: tuple[str, ...] = ()) -> Term:
    """DP + EP's all-gathered tokens in a modular MoE kernel's workspaces: at the high end beyond the
    band's (Marlin's shape, or the known ``kernels``' largest), at the low end the known kernels'
    least over all the gathered tokens (the workspace manager's buffer: the low end takes the larger
    of it and the gather workspace); or MegaMoE's dispatch buffer (docs/memory.md, their two rows)."""
    if mega and expert_parallel:
        # A MegaMoE backend dispatches the tokens itself through a symmetric buffer sized by
        # max_num_batched_tokens (DeepGemmMegaMoEExperts.get_symm_buffer,
        # fused_moe/deep_gemm_mega_moe.py:304,606-643@0.33), not the all-gather's modular workspaces;
        # deep_gemm sizes that buffer, so it is a band: 0 … 16 B × hidden per batched token, the least
        # that holds both vllm#51454 runs (8 × B200, 0.25, 8,192 tokens: TP 8 + EP 0.2–0.35 GiB and
        # DP 8 + EP ≥ 0.13 GiB beyond our other high ends) — in place of the Marlin shape's 7.9 GiB.
        high = tokens * shape.hidden * MEGA_MOE_BUFFER_PER_VALUE
        return Term(0, high, f"0 … {high / GiB:.2f} GiB: the MegaMoE backend's symmetric buffer for {tokens:,} "
                    "tokens (fused_moe/deep_gemm_mega_moe.py:606-643@0.33; sized by deep_gemm, not derivable: "
                    "16 B × hidden a token, fitted on vllm#51454's TP 8 + EP and DP 8 + EP starts), no all-gather")
    if not (expert_parallel and dp > 1):
        return Term(0, 0, "no DP + EP all-gather")
    extra = max(_moe_workspaces(shape, (dp - 1) * tokens, k, True) for k in kernels or ("marlin",))
    if not kernels:
        return Term(0, extra, f"0 … a modular MoE kernel's workspaces over the {dp} DP ranks' {dp * tokens:,} "
                    "all-gathered tokens (Marlin's: experts/marlin_moe.py:691-719@0.33, "
                    f"modular_kernel.py:1340-1366@0.33), beyond the band's {tokens:,}; the kernel is not read here")
    low = min(_moe_workspaces(shape, dp * tokens, k, False) for k in kernels)
    return Term(low, extra, f"{' or '.join(kernels)} (the release's MXFP4 kernel here, all2all "
                f"allgather_reducescatter): its workspaces for the {dp} DP ranks' {dp * tokens:,} all-gathered "
                f"tokens, {low / GiB:.2f} GiB at least (in the workspace manager's buffer), at most "
                f"{extra / GiB:.2f} GiB beyond the band's {tokens:,} (experts/marlin_moe.py:664-665@0.34, "
                "fused_humming_moe.py:486-535@0.34)")


def sampler_term(shape: Shape, tokens: int, max_num_seqs: int | None, speculative: bool) -> Term:
    requests = min(tokens, max_num_seqs) if max_num_seqs else tokens
    one = requests * shape.vocab * FP32
    high = SAMPLER_COPIES_HIGH + (SPEC_SAMPLER_COPIES if speculative else 0)
    return Term(requests * shape.vocab * SAMPLER_LOW_BYTES, one * high,
                f"[{requests:,}, {shape.vocab:,}] logits: at least the LM head's and an fp32 copy (V1's "
                "logits.to(torch.float32), v1/sample/sampler.py:96@0.24; V2's, v1/worker/gpu/sample/sampler.py:"
                f"242@0.33), up to {high} fp32 copies (probabilities, the sort's values and int64 indices"
                + (", the rejection sampler's" if speculative else "") + "; v1/sample/ops/topk_topp_sampler.py"
                ":309,545-565@0.33)")


def spec_sampler_scratch(shape: Shape, tokens: int, max_num_seqs: int | None, draft_tokens: int, v2: bool) -> Term:
    """What verifying drafts allocates at run time beyond what the profile run sampled: vLLM runs
    the sampler on ``min(tokens, max_num_seqs)`` rows while it profiles — the V1 runner also its
    rejection sampler on one draft token a request, ``2 × requests`` rows
    (``v1/worker/gpu_model_runner.py:5937-5961@0.33``), the V2 runner none
    (``v1/worker/gpu/model_runner.py:993-1014@0.33``) — while a full step verifies
    ``requests × (draft_tokens + 1)`` rows (at most the batched tokens): their logits and the
    sampler's fp32 copies (``SAMPLER_LOW_BYTES`` … ``SAMPLER_COPIES_HIGH`` + 1 fp32 per logit).
    Allocated after the KV cache is sized, so vLLM never subtracts it."""
    requests = min(tokens, max_num_seqs) if max_num_seqs else tokens
    profiled = requests * (1 if v2 else 2)
    at_run = min(requests * (draft_tokens + 1), tokens) if draft_tokens > 0 else 0
    rows = max(at_run - profiled, 0)
    return Term(rows * shape.vocab * SAMPLER_LOW_BYTES, rows * shape.vocab * FP32 * (SAMPLER_COPIES_HIGH + 1),
                f"{rows:,} rows × {shape.vocab:,} logits: a step verifies {at_run:,} rows ({requests:,} requests × "
                f"{draft_tokens} drafts + 1), the {'V2' if v2 else 'V1'} runner's profile sampled {profiled:,} "
                "(v1/worker/gpu_model_runner.py:5937-5961@0.33, v1/worker/gpu/model_runner.py:993-1014@0.33)")


def spec_scratch_term(facts: Facts, tokens: int, max_num_seqs: int | None, v2: bool, gpus: Iterable[GpuInfo],
                      utilization: float | None) -> Term:
    """Speculative decoding's sampler scratch beyond the profile (``activation.spec_sampler_scratch``)
    less what vLLM leaves outside its budget, ``total − ceil(total × utilization)``: vLLM does not
    subtract it (it is allocated after the KV cache is sized), so only what the headroom cannot hold
    is counted — where it is, the KV cache vLLM sizes leaves no room for it at a full batch."""
    spec = json_option(facts.args, "speculative_config") or {}
    k = spec.get("num_speculative_tokens")
    if speculative_method(facts) is None or type(k) is not int or k < 1 or not tokens:
        return Term(0, 0, "no speculative decoding: nothing verified beyond the profile")
    scratch = spec_sampler_scratch(shape_of(facts.model.config), tokens, max_num_seqs, k, v2)
    sizes = [g.memory_total_bytes for g in gpus if g.memory_total_bytes]
    if not sizes or utilization is None:
        return Term(0, scratch.high, scratch.basis + "; the headroom outside vLLM's budget is not known here")
    total = min(sizes)
    headroom = total - math.ceil(total * utilization)  # requested = ceil(total × utilization)
    return Term(max(scratch.low - headroom, 0), max(scratch.high - headroom, 0),
                f"{scratch.basis}; {scratch.low / GiB:.2f}–{scratch.high / GiB:.2f} GiB allocated after the KV "
                f"cache, counted beyond the {headroom / GiB:.2f} GiB vLLM leaves outside its budget")


class _DummyRun:
    """The profile run's terms for one set of settings, all but the gather workspace computed once:
    only it depends on ``--max-model-len``, so a search over lengths recomputes it alone
    (``peak_at``, numbers only) and ``activation`` gives the terms with their bases."""

    def __init__(self, config: Mapping | None, *, tokens: int, max_num_seqs: int | None, tp: int = 1, pp: int = 1,
                 dp: int = 1, expert_parallel: bool = False, release: str | None = None,
                 capability: tuple[int, int] | None = None, backend: str | None = None, speculative: bool = False,
                 mega_moe: bool = False, fp4_indexer: bool = False, indexer_factor: int | None = None,
                 indexer_logits: IndexerLogits | None = None, moe_kernels: tuple[str, ...] = (),
                 v41: bool = False) -> None:
        self.shape = shape = shape_of(config)
        sp = sequence_parallel(tp, pp, dp, expert_parallel, mega_moe, release, v41)
        self.tokens, self.max_num_seqs, self.release, self.capability, self.backend = (
            tokens, max_num_seqs, release, capability, backend)
        self.fp4_indexer, self.indexer_factor = fp4_indexer, indexer_factor
        self.uses_flashmla = flashmla(capability, backend)
        self.residual = residual_term(shape, tokens, tp, sp)
        self.step = mhc_step_term(shape, tokens, tp, sp)
        self.logits = indexer_logits or IndexerLogits(INDEXER_LOGITS_MB)
        self.gathered = moe_gather_term(shape, tokens, dp, expert_parallel, mega_moe, moe_kernels)
        self.rest = intermediates_term(shape, tokens, tp, tp * (dp if expert_parallel else 1))
        self.sampler = sampler_term(shape, tokens, max_num_seqs, speculative)

    def _ends(self, workspace_low: int, workspace_high: int, logits: Term) -> tuple[int, int, int, int]:
        """(forward low, forward high, sampler low, sampler high) beside this workspace, as the terms
        coexist (docs/memory.md "The activation peak", **How they coexist**: the same formulas)."""
        residual, step, rest = self.residual, self.step, self.rest
        workspace_low = max(workspace_low, self.gathered.low)  # the all-gathered MoE workspaces: one buffer
        forward_low = residual.low + max(step.low + workspace_low, workspace_low + logits.low, rest.low)
        forward_high = residual.high + workspace_high + max(step.high, logits.high + rest.high + self.gathered.high)
        return forward_low, forward_high, workspace_low + self.sampler.low, workspace_high + self.sampler.high

    def peak_at(self, max_model_len: int) -> tuple[int, int]:
        """The peak's (low, high) at this ``--max-model-len``: ``activation(max_model_len).peak``'s
        numbers, without the words."""
        low, high, _ = _workspace_bytes(self.shape, self.tokens, max_model_len, self.release, self.uses_flashmla,
                                        self.fp4_indexer, self.indexer_factor)
        logits = Term(*self.logits.at(max_model_len), "") if 4 in self.shape.ratios else Term(0, 0, "")
        forward_low, forward_high, sampler_low, sampler_high = self._ends(low, high, logits)
        return max(forward_low, sampler_low), max(forward_high, sampler_high)

    def activation(self, max_model_len: int | None) -> Activation:
        workspace = workspace_term(self.shape, self.tokens, max_model_len, self.release, self.capability,
                                   self.backend, self.fp4_indexer, self.indexer_factor)
        logits = indexer_logits_term(self.shape, self.logits, max_model_len or DSV4_MAX_MODEL_LEN)
        residual, step, gathered, rest, sampler = self.residual, self.step, self.gathered, self.rest, self.sampler
        forward_low, forward_high, sampler_low, sampler_high = self._ends(workspace.low, workspace.high, logits)
        low, high = max(forward_low, sampler_low), max(forward_high, sampler_high)
        at = ("the sampler" if sampler_low > forward_low and sampler_high > forward_high
              else "the forward" if forward_low >= sampler_low and forward_high >= sampler_high
              else "the forward or the sampler")
        tokens = self.tokens
        requests = min(tokens, self.max_num_seqs or tokens)
        basis = (f"peak at {at}: the forward holds the residual streams ({_gib(residual)}) and the mHC step "
                 f"({_gib(step)}), the indexer's logits ({_gib(logits)}) or the layer's intermediates ({_gib(rest)}"
                 + (_dispatch(gathered) if gathered.high else "") + "), "
                 f"beside the gather workspace ({_gib(workspace)}, one buffer with the MoE's workspaces); then the "
                 f"sampler ({_gib(sampler)}) beside the workspace; {tokens:,} batched tokens in {requests:,} dummy "
                 "requests")
        terms = (("residual streams", residual), ("mhc step", step), ("gather workspace", workspace),
                 ("indexer logits", logits), ("intermediates", rest), ("moe all-gather", gathered),
                 ("sampler", sampler))
        return Activation(terms, Term(low, high, basis))


def activation_terms(config: Mapping | None, *, tokens: int, max_num_seqs: int | None, tp: int = 1, pp: int = 1,
                     dp: int = 1, expert_parallel: bool = False, max_model_len: int | None = None,
                     release: str | None = None, capability: tuple[int, int] | None = None,
                     backend: str | None = None, speculative: bool = False, mega_moe: bool = False,
                     fp4_indexer: bool = False, indexer_factor: int | None = None,
                     indexer_logits: IndexerLogits | None = None, moe_kernels: tuple[str, ...] = ()) -> Activation:
    """The profile run's activation peak on the busiest GPU, term by term, and how they coexist."""
    return _DummyRun(config, tokens=tokens, max_num_seqs=max_num_seqs, tp=tp, pp=pp, dp=dp,
                     expert_parallel=expert_parallel, release=release, capability=capability, backend=backend,
                     speculative=speculative, mega_moe=mega_moe, fp4_indexer=fp4_indexer, indexer_factor=indexer_factor,
                     indexer_logits=indexer_logits, moe_kernels=moe_kernels).activation(max_model_len)


def _dispatch(term: Term) -> str:
    """The all-gather term in words: its low end is a floor of the workspace buffer, its high end
    what comes on top of the band's intermediates (``moe_gather_term``), so they are said apart."""
    if not term.low:
        return f", + up to {term.high / GiB:.2f} GiB for the MoE's dispatch"
    return (f"; the MoE's dispatch: at least {term.low / GiB:.2f} GiB of workspace buffer, up to "
            f"{term.high / GiB:.2f} GiB on top at the high end")


def _gib(term: Term) -> str:
    a, b = f"{term.low / GiB:.2f}", f"{term.high / GiB:.2f}"
    return f"{a} GiB" if a == b else f"{a}–{b} GiB"


def activation_term(facts: Facts, tp: int, mnbt: int, max_num_seqs: int | None, dp_ep: bool = False, *,
                    pp: int = 1, dp: int | None = None, expert_parallel: bool | None = None,
                    max_model_len: int | None = None, capability: tuple[int, int] | None = None) -> Term:
    """The peak for these facts (the model's config, the release, the attention backend, the
    speculative method): ``activation_terms``' peak, its basis naming every term."""
    return activation_of(facts, tp, mnbt, max_num_seqs, dp_ep, pp=pp, dp=dp, expert_parallel=expert_parallel,
                         max_model_len=max_model_len, capability=capability).peak


def activation_of(facts: Facts, tp: int, mnbt: int, max_num_seqs: int | None, dp_ep: bool = False, *,
                  pp: int = 1, dp: int | None = None, expert_parallel: bool | None = None,
                  max_model_len: int | None = None, capability: tuple[int, int] | None = None) -> Activation:
    run, default_length = _dummy_run(facts, tp, mnbt, max_num_seqs, dp_ep, pp=pp, dp=dp,
                                     expert_parallel=expert_parallel, capability=capability)
    return run.activation(default_length if max_model_len is None else max_model_len)


def peak_by_length(facts: Facts, tp: int, mnbt: int, max_num_seqs: int | None, dp_ep: bool = False, *,
                   pp: int = 1, dp: int | None = None, expert_parallel: bool | None = None,
                   capability: tuple[int, int] | None = None) -> Callable[[int], tuple[int, int]]:
    """The peak's (low, high) as a function of ``--max-model-len``, everything else computed once:
    what a search over lengths calls (core/memory/estimate.py: the longest length admitted)."""
    return _dummy_run(facts, tp, mnbt, max_num_seqs, dp_ep, pp=pp, dp=dp, expert_parallel=expert_parallel,
                      capability=capability)[0].peak_at


def _dummy_run(facts: Facts, tp: int, mnbt: int, max_num_seqs: int | None, dp_ep: bool = False, *,
               pp: int = 1, dp: int | None = None, expert_parallel: bool | None = None,
               capability: tuple[int, int] | None = None) -> tuple[_DummyRun, int]:
    """The profile run these facts settle on, and the length vLLM takes by default."""
    args = facts.args
    if dp is None:
        dp = 2 if dp_ep else 1
    if expert_parallel is None:
        expert_parallel = dp_ep or args.value("enable_expert_parallel") is True
    default_length = facts.model.number("max_position_embeddings") or DSV4_MAX_MODEL_LEN
    if capability is None:
        capabilities = {g.capability for g in facts.all_gpus if g.capability}
        capability = capabilities.pop() if len(capabilities) == 1 else None
    kernel = json_option(args, "kernel_config") or {}
    chosen = str(args.value("moe_backend") or kernel.get("moe_backend") or "").lower()
    mega = mega_moe(chosen, facts.vllm_version)
    attention = json_option(args, "attention_config") or {}
    fp4 = attention.get("indexer_kv_dtype") == "mxfp4" or as_bool(attention.get("use_fp4_indexer_cache")) is True
    factor = attention.get("sparse_mla_prefill_workspace_factor")
    logits = _indexer_logits(facts, mnbt, max_num_seqs, capability, attention, kernel)
    settled = dict(tokens=mnbt, max_num_seqs=max_num_seqs, tp=tp, pp=pp, dp=dp, expert_parallel=expert_parallel,
                   release=facts.vllm_version, capability=capability, backend=attention_backend(args),
                   speculative=speculative_method(facts) is not None, mega_moe=mega, fp4_indexer=fp4,
                   indexer_factor=factor if type(factor) is int and factor >= 2 else None,
                   indexer_logits=logits, v41=facts.model.family == V41,
                   moe_kernels=gathered_kernels(facts.model.config, chosen, tp=tp, pp=pp, dp=dp,
                                                expert_parallel=expert_parallel, release=facts.vllm_version,
                                                capability=capability, all2all=args.value("all2all_backend"),
                                                dbo=args.value("enable_dbo") is True))
    return _DummyRun(facts.model.config, **settled), default_length  # type: ignore[arg-type]


def _env_mb(facts: Facts, name: str, default: int) -> int:
    try:
        value = int(facts.rule_env.get(name, ""))
    except ValueError:
        return default
    return value if value >= 0 else default


def _indexer_logits(facts: Facts, mnbt: int, max_num_seqs: int | None, capability: tuple[int, int] | None,
                    attention: Mapping, kernel: Mapping) -> IndexerLogits:
    prefill = _env_mb(facts, "VLLM_SPARSE_INDEXER_MAX_LOGITS_MB", INDEXER_LOGITS_MB)
    if INDEXER_DECODE_LOGITS.contains(facts.vllm_version) is not True:
        return IndexerLogits(prefill)
    spec = json_option(facts.args, "speculative_config") or {}
    k = spec.get("num_speculative_tokens")
    drafts = 0 if speculative_method(facts) is None else k if type(k) is int and k > 0 else 1
    topk = shape_of(facts.model.config).index_topk
    return IndexerLogits(prefill, _env_mb(facts, "VLLM_SPARSE_INDEXER_MAX_DECODE_LOGITS_MB", INDEXER_DECODE_LOGITS_MB),
                         rows=min(max_num_seqs or mnbt, mnbt) * (1 + drafts),
                         itemsize=2 if attention.get("indexer_logits_dtype") == "bfloat16" else 4,
                         topk_backend=str(kernel.get("sparse_indexer_topk_backend") or "auto"),
                         sm10=None if capability is None else capability[0] == 10, chunk_topk=topk in (512, 1024, 2048))


def length_breaks(facts: Facts) -> tuple[int, ...]:
    """The ``--max-model-len`` values where the peak drops as the length grows: from 0.32 the
    indexer's factor goes from 5 to 2 above 256K (config/vllm.py:1866-1874@0.33), unless set."""
    factor = (json_option(facts.args, "attention_config") or {}).get("sparse_mla_prefill_workspace_factor")
    return () if type(factor) is int or INDEXER_FACTOR.contains(facts.vllm_version) is False else (256 * 1024,)

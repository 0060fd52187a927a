"""DeepSeek-V4's weights per GPU, tensor class by tensor class, from config.json's shapes (pure).

Every tensor of the checkpoint is counted from the config the way vLLM builds it
(``models/deepseek_v4/nvidia/model.py``, ``attention.py``, ``compressor.py``, ``nvidia/mtp.py``,
``nvidia/dspark.py`` @0.33.0; the same layout in 0.24.0) and split the way vLLM splits it, with
each checkpoint's dtypes: per class, the vLLM lines it rests on, in docs/memory.md "Weights per
GPU". Checked against every exact total there is (tests/memory/test_weights.py).

Cost: one pass over at most ``MAX_LAYERS`` layers with a per-layer-kind cache; list fields are
read only up to the layers they describe, so a 7 MB ``compress_ratios`` costs nothing extra.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

from ..records import Record
from ..vllm.facts import fact
from .kv_plan import cdiv as _cdiv
from .kv_plan import round_up as _round_up

MAX_LAYERS = 1024  # a config naming more layers is not a DeepSeek-V4 we can tally
MAX_DIM = 1 << 24  # any size past this is not a real checkpoint's
MAX_DRAFT_LAYERS = 16
VOCAB_PAD = 64  # VocabParallelEmbedding pads the vocabulary to a multiple of this
CHECK_TOLERANCE = 0.005  # a tally within 0.5 % of an exact total counts as checked
# Sequence parallelism replicates the shared experts from 0.27.0 (_use_sequence_parallel).
SEQUENCE_PARALLEL_SHARED = fact("sequence-parallel-shared").range
# The target's _mtp_hidden_buffer: before 0.27 whatever the method, from 0.27 for these (load_buffers),
# DSpark not from 0.34 (it drafts from the target's aux hidden states).
HIDDEN_BUFFER_ALWAYS = fact("hidden-buffer-always").range
HIDDEN_STATE_DRAFTS = frozenset({"eagle", "eagle3", "mtp", "dflash", "dspark", "draft_model"})
DSPARK_NO_HIDDEN_BUFFER = fact("dspark-no-hidden-buffer").range
# DSpark's own top-k buffer, from 0.27 (load_buffers).
DSPARK_TOPK_BUFFER = fact("dspark-topk-buffer").range
# The MXFP4 MoE kernels round each rank's expert slice up (Mxfp4MoEMethod.maybe_roundup_sizes): FlashInfer's
# TRTLLM to 256 rows before 0.27, 128 from 0.27, as DeepGEMM, Marlin and CUTLASS; b12x (SM 12, 0.29+) not at
# all; ROCm's to 256. Per release and the lines: docs/memory.md "The MoE kernel's rounding".
TRTLLM_ROWS_256 = fact("mxfp4-trtllm-rows-256").range
B12X_MOE = fact("b12x-moe-exact-dimensions").range  # oracle/mxfp4.py:157,720-723@0.29

# transformers' DeepseekV4Config defaults (configuration_deepseek_v4.py), what vLLM uses for a
# key config.json leaves out.
DEFAULTS = {
    "vocab_size": 129280, "hidden_size": 4096, "moe_intermediate_size": 2048, "num_hidden_layers": 43,
    "num_attention_heads": 64, "head_dim": 512, "q_lora_rank": 1024, "o_lora_rank": 1024, "o_groups": 8,
    "num_experts_per_tok": 6, "n_routed_experts": 256, "n_shared_experts": 1, "hc_mult": 4,
    "index_n_heads": 64, "index_head_dim": 128, "num_nextn_predict_layers": 1, "num_hash_layers": 3,
}

# The classes, in the order every report lists them.
ROUTED = "routed experts"
SHARED = "shared experts"
ATTENTION = "attention (with compressor and indexer)"
EMBEDDING = "embeddings"
HEAD = "LM head and final norm"
NORMS = "norms, gates and mHC"
DRAFT = "draft modules (MTP / DSpark)"
CLASSES = (ROUTED, SHARED, ATTENTION, EMBEDDING, HEAD, NORMS, DRAFT)


class ClassBytes(Record):
    name: str
    checkpoint_bytes: int  # in the checkpoint (the draft: the checkpoint's own draft module)
    scale_bytes: int  # of which quantisation scales
    per_gpu_bytes: int  # on the most loaded GPU (0 for a draft not loaded)
    split: str  # how vLLM spreads it: "replicated", "÷ TP 8", "whole experts over 8 EP ranks", …


class WeightSplit(Record):
    classes: tuple  # ClassBytes, in CLASSES order
    per_gpu_bytes: int  # the most loaded GPU: the heaviest pipeline stage, its most loaded rank
    checkpoint_bytes: int  # every tensor of the checkpoint, draft included
    loaded_bytes: int  # what vLLM reads from it: without speculative decoding, no draft
    draft_loaded: bool
    stages: tuple  # per pipeline stage, bytes on one GPU of it
    layers_per_stage: tuple
    basis: str  # "from shapes" or "from shapes, within 0.05 % of the index's total_size"
    checked: bool = False  # agrees with an exact total within CHECK_TOLERANCE
    deviation: float | None = None  # (tally − exact) / exact
    notes: tuple = ()

    def bytes_of(self, name: str) -> ClassBytes | None:
        return next((c for c in self.classes if c.name == name), None)


class _Unknown(Exception):
    """A config field this tally cannot read (absent without a default, wrong type, absurd)."""


def _int(config: Mapping, key: str, default: int | None = None, low: int = 1) -> int:
    value = config.get(key, None) if key in config else DEFAULTS.get(key, default)
    if value is None and default is not None:
        value = default
    if type(value) is not int or not low <= value <= MAX_DIM:
        raise _Unknown(key)
    return value


class _Dtypes:
    """Bytes of one linear / one expert projection as the checkpoint stores it."""

    def __init__(self, config: Mapping):
        qc = config.get("quantization_config")
        if qc is None:
            self.fp8 = False
            self.block: tuple[int, int] | None = None
            self.scale = 0
            self.experts = "bf16"
            self.backbone_experts = "bf16"
            return
        if not isinstance(qc, Mapping):
            raise _Unknown("quantization_config")
        if qc.get("quant_method") != "fp8":
            raise _Unknown("quantization_config.quant_method")  # not what this tally models
        block = qc.get("weight_block_size", [128, 128])
        if (not isinstance(block, list) or len(block) != 2
                or not all(type(b) is int and 0 < b <= MAX_DIM for b in block)):
            raise _Unknown("quantization_config.weight_block_size")
        self.fp8 = True
        self.block = (block[0], block[1])
        self.scale = 1 if qc.get("scale_fmt") == "ue8m0" else 4
        expert_dtype = config.get("expert_dtype", qc.get("expert_dtype", "fp4"))
        if expert_dtype not in ("fp4", "fp8"):
            raise _Unknown("expert_dtype")
        self.experts = expert_dtype
        algo = qc.get("moe_quant_algo")
        self.backbone_experts = "nvfp4" if isinstance(algo, str) and algo.upper() == "NVFP4" else expert_dtype

    def linear(self, out: int, inp: int) -> tuple[int, int]:
        """(weight + scales, scales) of a quantised linear [out, in]."""
        if self.block is None:
            return 2 * out * inp, 0
        scales = _cdiv(out, self.block[0]) * _cdiv(inp, self.block[1]) * self.scale
        return out * inp + scales, scales

    def expert(self, fmt: str, out: int, inp: int) -> tuple[int, int]:
        """(bytes, scales) of one expert projection [out, in] in ``fmt``."""
        if fmt == "fp4":  # MXFP4: e2m1 two per byte, one UE8M0 scale per 32
            scales = out * _cdiv(inp, 32)
            return out * _cdiv(inp, 2) + scales, scales
        if fmt == "nvfp4":  # e2m1 + an FP8 scale per 16 + weight_scale_2 and input_scale (fp32)
            scales = out * _cdiv(inp, 16) + 8
            return out * _cdiv(inp, 2) + scales, scales
        return self.linear(out, inp) if fmt == "fp8" else (2 * out * inp, 0)


def _bf16(*dims: int) -> int:
    return 2 * math.prod(dims)


class _Shapes:
    def __init__(self, config: Mapping):
        g = _int
        self.D = g(config, "hidden_size")
        self.L = g(config, "num_hidden_layers")
        if self.L > MAX_LAYERS:
            raise _Unknown("num_hidden_layers")
        self.H = g(config, "num_attention_heads")
        self.hd = g(config, "head_dim")
        self.ql = g(config, "q_lora_rank")
        self.ol = g(config, "o_lora_rank")
        self.G = g(config, "o_groups")
        self.ih = g(config, "index_n_heads")
        self.ihd = g(config, "index_head_dim")
        self.E = g(config, "n_routed_experts")
        shared = config.get("n_shared_experts", DEFAULTS["n_shared_experts"])
        self.S = 0 if shared is None else g(config, "n_shared_experts", low=0)
        self.I = g(config, "moe_intermediate_size")
        self.V = g(config, "vocab_size")
        self.hc = g(config, "hc_mult")
        self.topk = g(config, "num_experts_per_tok")
        self.n_hash = g(config, "num_hash_layers", low=0)
        self.nextn = min(g(config, "num_nextn_predict_layers", low=0), MAX_DRAFT_LAYERS)
        self.vision = type(config.get("vision_n_layers")) is int and config["vision_n_layers"] > 0
        ratios = config.get("compress_ratios")
        if ratios is None:
            ratios = []
        if not isinstance(ratios, list):
            raise _Unknown("compress_ratios")
        self.ratios = ratios[: self.L]  # the rest describe MTP/draft layers, which vLLM gives ratio 1
        targets = config.get("dspark_target_layer_ids")
        self.dspark_targets = len(targets) if isinstance(targets, list) and 0 < len(targets) <= MAX_DIM else 0
        n_dspark = config.get("n_mtp_layers")
        self.dspark_layers = n_dspark if type(n_dspark) is int and 0 < n_dspark <= MAX_DRAFT_LAYERS else 3
        rank = config.get("dspark_markov_rank")
        self.markov_rank = rank if type(rank) is int and 0 < rank <= MAX_DIM else None
        draft_vocab = config.get("draft_vocab_size")
        self.draft_vocab = draft_vocab if type(draft_vocab) is int and 0 < draft_vocab <= MAX_DIM else self.V
        self.topk_method = config.get("topk_method")

    def ratio(self, layer: int) -> int:
        """The compress ratio vLLM gives a backbone layer: max(1, ratio) (attention.py:234-240)."""
        r = self.ratios[layer] if layer < len(self.ratios) else 0
        if type(r) is not int or r < 0 or r > MAX_DIM:
            raise _Unknown("compress_ratios")
        return max(1, r)


class _Layout:
    def __init__(self, tp: int, pp: int, dp: int, expert_parallel: bool, redundant_experts: int,
                 vllm_version: str | None, mega_moe: bool = False):
        self.tp, self.pp, self.dp = tp, pp, dp
        self.ep = tp * dp if expert_parallel and tp * dp > 1 else 1  # FusedMoEParallelConfig.make
        self.moe_tp = 1 if self.ep > 1 else tp * dp  # flatten_tp_across_dp_and_pcp without EP
        self.sequence_parallel = (pp == 1 and shards_tokens(tp, dp, expert_parallel, mega_moe)
                                  and SEQUENCE_PARALLEL_SHARED.contains(vllm_version) is not False)
        self.redundant = redundant_experts


def shards_tokens(tp: int, dp: int, expert_parallel: bool, mega_moe: bool) -> bool:
    """``_use_sequence_parallel``'s layout test, less the pipeline's (V4 asks for PP 1, V4.1 not from
    0.34: fact ``v41-sequence-parallel-any-pp``): TP > 1 under EP, with DP > 1 or a MegaMoE backend."""
    return expert_parallel and tp > 1 and (dp > 1 or mega_moe)


def _add(acc: dict, name: str, checkpoint: int, scales: int, per_gpu: int) -> None:
    c = acc[name]
    c[0] += checkpoint
    c[1] += scales
    c[2] += per_gpu


class _Tally:
    def __init__(self, s: _Shapes, q: _Dtypes, lay: _Layout):
        self.s, self.q, self.lay = s, q, lay
        self.cache: dict = {}

    def layer(self, ratio: int, hashed: bool, fmt: str) -> dict:
        """Per class: [checkpoint bytes, scales, bytes on one GPU] of one decoder layer."""
        key = (ratio, hashed, fmt)
        got = self.cache.get(key)
        if got is not None:
            return got
        s, q, lay = self.s, self.q, self.lay
        tp = lay.tp
        acc = {name: [0, 0, 0] for name in CLASSES}
        # attention: fused_wqa_wkv replicated; wq_b, wo_a column- and wo_b row-parallel
        for out, inp in ((s.ql, s.D), (s.hd, s.D)):
            b, sc = q.linear(out, inp)
            _add(acc, ATTENTION, b, sc, b)
        for full, part in (((s.H * s.hd, s.ql), (_cdiv(s.H * s.hd, tp), s.ql)),
                            ((s.G * s.ol, s.H * s.hd // s.G), (_cdiv(s.G * s.ol, tp), s.H * s.hd // s.G)),
                            ((s.D, s.G * s.ol), (s.D, _cdiv(s.G * s.ol, tp)))):
            b, sc = q.linear(*full)
            lb, _ = q.linear(*part)
            _add(acc, ATTENTION, b, sc, lb)
        _add(acc, ATTENTION, _bf16(s.ql) + _bf16(s.hd) + 4 * s.H, 0,
             _bf16(s.ql) + _bf16(s.hd) + 4 * _cdiv(s.H, tp))  # q_norm, kv_norm, attn_sink
        if ratio > 1:  # the compressor: ape fp32, wkv + wgate bf16, norm — replicated
            coff = 2 if ratio == 4 else 1
            b = 4 * ratio * coff * s.hd + 2 * _bf16(coff * s.hd, s.D) + _bf16(s.hd)
            _add(acc, ATTENTION, b, 0, b)
        if ratio == 4:  # the indexer (CSA layers): replicated, with its own compressor
            b, sc = q.linear(s.ih * s.ihd, s.ql)
            b += _bf16(s.ih, s.D) + 4 * 4 * 2 * s.ihd + 2 * _bf16(2 * s.ihd, s.D) + _bf16(s.ihd)
            _add(acc, ATTENTION, b, sc, b)
        # MoE gate (replicated): weight bf16; bias fp32 (noaux_tc, not hash); tid2eid on hash layers
        gate = _bf16(s.E, s.D)
        if s.topk_method in (None, "noaux_tc") and (not hashed or s.vision):
            gate += 4 * s.E
        if s.vision:
            gate += 4 * s.E  # bias_vl
        ckpt_gate = gate + (8 * s.V * s.topk if hashed else 0)  # int64 in the checkpoint
        gpu_gate = gate + (4 * s.V * s.topk if hashed else 0)  # int32 in vLLM (not MegaMoE)
        norms = 2 * _bf16(s.D) + 2 * (4 * (2 + s.hc) * s.hc * s.hc * s.D + 4 * (2 + s.hc) * s.hc + 12)
        _add(acc, NORMS, ckpt_gate + norms, 0, gpu_gate + norms)
        # shared experts: gate_up column-, down row-parallel; cdiv to whole blocks; SP replicates
        if s.S:
            inter = s.I * s.S
            sb = ssc = 0
            for out, inp in ((inter, s.D), (inter, s.D), (s.D, inter)):
                x, y = q.linear(out, inp)
                sb, ssc = sb + x, ssc + y
            if lay.sequence_parallel or tp == 1:
                local = sb
            else:
                per_rank = _cdiv(inter // q.block[0], tp) * q.block[0] if q.block else _cdiv(inter, tp)
                local = 2 * q.linear(per_rank, s.D)[0] + q.linear(s.D, per_rank)[0]
            _add(acc, SHARED, sb, ssc, local)
        # routed experts: w1, w3 [I, D], w2 [D, I]
        eb = esc = 0
        for out, inp in ((s.I, s.D), (s.I, s.D), (s.D, s.I)):
            x, y = q.expert(fmt, out, inp)
            eb, esc = eb + x, esc + y
        if lay.ep > 1:
            local = _cdiv(s.E + lay.redundant, lay.ep) * eb
        else:
            mt = lay.moe_tp
            local = s.E * (2 * q.expert(fmt, _cdiv(s.I, mt), s.D)[0] + q.expert(fmt, s.D, _cdiv(s.I, mt))[0])
        _add(acc, ROUTED, s.E * eb, s.E * esc, local)
        self.cache[key] = acc
        return acc


def _stage_layers(layers: int, pp: int, partition: Sequence[int] | None) -> list[int]:
    """Layers per pipeline stage, as ``get_pp_indices`` splits them."""
    if partition is not None:
        return list(partition)
    parts = [layers // pp] * pp
    for i in range(2, layers % pp + 2):
        parts[-i] += 1
    return parts


def split_weights(config: Mapping, tp: int = 1, pp: int = 1, dp: int = 1, expert_parallel: bool = False,
                  speculative: bool | str | None = False, exact_total: int | None = None,
                  pp_partition: Sequence[int] | None = None, redundant_experts: int = 0,
                  vllm_version: str | None = None, mega_moe: bool = False) -> WeightSplit | None:
    """The checkpoint's bytes by tensor class and on the most loaded GPU of a layout.

    ``speculative``: False/None (no draft loaded), True (the checkpoint's own draft: DSpark when
    it has ``dspark_target_layer_ids``, else its MTP layers), or the method ("mtp", "dspark").
    ``vllm_version``: the installed release where it matters (None: the newest's behaviour).
    ``mega_moe``: ``--kernel-config moe_backend`` is one of vLLM's ``MEGA_MOE_BACKENDS``
    (config/kernel.py:170@0.33), which makes ``_use_sequence_parallel`` true at DP 1 too.
    ``exact_total``: the checkpoint's exact byte count (``total_size`` of its index, the shard
    headers, or the table's exact figure) to check the tally against. None where the config is
    not a DeepSeek-V4 this tally models (V4.1's nested ``text_config``, another quantisation,
    a field of the wrong type, a layout that does not divide).
    """
    if not isinstance(config, Mapping) or isinstance(config.get("text_config"), Mapping):
        return None
    if not all(type(n) is int and 0 < n <= MAX_DIM for n in (tp, pp, dp)):
        return None
    try:
        s = _Shapes(config)
        q = _Dtypes(config)
    except _Unknown:
        return None
    if s.H % tp or s.G % tp or pp > s.L:
        return None  # vLLM refuses these itself (attention.py asserts n_heads % tp == 0)
    if pp_partition is not None and (len(pp_partition) != pp or sum(pp_partition) != s.L
                                     or any(type(n) is not int or n < 0 for n in pp_partition)):
        return None
    lay = _Layout(tp, pp, dp, expert_parallel, max(int(redundant_experts or 0), 0), vllm_version, mega_moe)
    t = _Tally(s, q, lay)
    parts = _stage_layers(s.L, pp, pp_partition)
    totals = {name: [0, 0, 0] for name in CLASSES}
    stages = []
    layer = 0
    try:
        for count in parts:
            stage = 0
            for _ in range(count):
                acc = t.layer(s.ratio(layer), layer < s.n_hash, q.backbone_experts)
                for name, (ck, sc, gpu) in acc.items():
                    c = totals[name]
                    c[0] += ck
                    c[1] += sc
                    c[2] += gpu
                    stage += gpu
                layer += 1
            stages.append(stage)
    except _Unknown:
        return None

    padded_vocab = _cdiv(s.V, VOCAB_PAD) * VOCAB_PAD
    table = _bf16(s.V, s.D)
    local_table = _bf16(_cdiv(padded_vocab, tp), s.D)
    hc_head = 4 * s.hc * s.hc * s.D + 4 * s.hc + 4
    totals[EMBEDDING][0] += table
    totals[EMBEDDING][2] += local_table
    stages[0] += local_table
    totals[HEAD][0] += table + _bf16(s.D)
    totals[HEAD][2] += local_table + _bf16(s.D)
    stages[-1] += local_table + _bf16(s.D)
    totals[NORMS][0] += hc_head
    totals[NORMS][2] += hc_head
    stages = [st + hc_head for st in stages]  # hc_head_* exist on every stage (DeepseekV4Model)

    # draft modules: the checkpoint's own, and the one speculative decoding loads
    notes = []
    own = "dspark" if s.dspark_targets else ("mtp" if s.nextn else None)
    method = own if speculative is True else (speculative or None)
    if isinstance(method, str) and method.endswith("_mtp"):
        method = "mtp"  # vLLM renames every MTPModelTypes method (deepseek_mtp, …) to mtp (config/speculative.py)
    if method not in (None, "mtp", "dspark"):
        method = None
        notes.append(f"speculative method {speculative!r}: its draft weights are not counted")
    draft_ckpt = {"mtp": _mtp(t, s, q, hc_head), "dspark": _dspark(t, s, q, hc_head)}
    if own:
        d = draft_ckpt[own]
        totals[DRAFT][0] += d[0]
        totals[DRAFT][1] += d[1]
    if method:
        d = draft_ckpt[method]
        held = d[2]
        if method == "mtp" and s.nextn and pp > 1:
            # Under PP the MTP drafter keeps its own VocabParallelEmbedding (never loaded: the
            # checkpoint has no mtp.*.emb) on the last stage; with PP 1 it takes the target's
            # (v1/spec_decode/llm_base_proposer.py:1332@0.24, gpu/spec_decode/eagle/utils.py:64@0.29, :59@0.33).
            held += local_table
        totals[DRAFT][2] += held
        stages[-1] += held
        if method == "dspark" and s.markov_rank is None:
            notes.append("the DSpark Markov head is not counted (no dspark_markov_rank)")
    if s.vision:
        notes.append("the vision tower is not counted")

    classes = tuple(ClassBytes(name, totals[name][0], totals[name][1], totals[name][2], _split_words(name, lay, method))
                    for name in CLASSES)
    checkpoint = sum(c.checkpoint_bytes for c in classes)
    loaded = checkpoint - (totals[DRAFT][0] if own and not method else 0)
    deviation = None
    checked = False
    basis = "from shapes"
    if type(exact_total) is int and exact_total > 0:
        deviation = (checkpoint - exact_total) / exact_total
        checked = abs(deviation) <= CHECK_TOLERANCE and not s.vision
        basis = (f"from shapes, within {abs(deviation) * 100:.2f} % of the exact total" if checked
                 else f"from shapes ({deviation * 100:+.1f} % off the exact total: unchecked)")
    return WeightSplit(classes, max(stages), checkpoint, loaded, bool(method), tuple(stages), tuple(parts),
                       basis, checked, deviation, tuple(notes))


def _draft_layer(t: _Tally, q: _Dtypes) -> tuple[int, ...]:
    """A draft module's decoder layer (ratio 1): its checkpoint, scale and per-GPU bytes summed over classes."""
    return tuple(sum(column) for column in zip(*t.layer(1, False, q.experts).values()))


def _mtp(t: _Tally, s: _Shapes, q: _Dtypes, hc_head: int) -> tuple[int, int, int]:
    """The MTP layers (nvidia/mtp.py): a decoder layer each (ratio 1: layer ids past
    num_hidden_layers get no compressor), e_proj/h_proj replicated, three norms, an hc_head."""
    if not s.nextn:
        return 0, 0, 0
    ck, sc, gpu = _draft_layer(t, q)
    proj, proj_sc = q.linear(s.D, s.D)
    extra = 2 * proj + 3 * _bf16(s.D) + hc_head
    return s.nextn * (ck + extra), s.nextn * (sc + 2 * proj_sc), s.nextn * (gpu + extra)


def _dspark(t: _Tally, s: _Shapes, q: _Dtypes, hc_head: int) -> tuple[int, int, int]:
    """The DSpark module (nvidia/dspark.py): n_mtp_layers (default 3) decoder layers,
    main_proj and context_wkv_proj replicated, norms, hc_head, the Markov and confidence heads."""
    if not s.dspark_targets:
        return 0, 0, 0
    ck, sc, gpu = _draft_layer(t, q)
    main, main_sc = q.linear(s.D, s.D * s.dspark_targets)
    ctx, ctx_sc = q.linear(s.hd * s.dspark_layers, s.D)
    extra = main + ctx + 2 * _bf16(s.D) + hc_head
    if s.markov_rank:  # markov_w1/w2 [V, r] and the confidence head [1, D + r], bf16
        extra += _bf16(s.V, s.markov_rank) + _bf16(s.draft_vocab, s.markov_rank) + _bf16(s.D + s.markov_rank)
    n = s.dspark_layers
    # The checkpoint's draft layers carry no wkv (context_wkv_proj gives their KV); vLLM's
    # DeepseekV4DecoderLayer still allocates one (fused_wqa_wkv).
    wkv, wkv_sc = q.linear(s.hd, s.D)
    return n * (ck - wkv) + extra, n * (sc - wkv_sc) + main_sc + ctx_sc, n * gpu + extra


def _padding_rows(capability: tuple[int, int] | None, vllm_version: str | None) -> tuple[int, int, str]:
    """(fewest, most) rows an MXFP4 kernel rounds the expert slice to on this GPU and release, and
    why (1: not rounded). A band where the kernel picked at start is not known here."""
    trtllm = 256 if TRTLLM_ROWS_256.contains(vllm_version) is not False else 128
    b12x = B12X_MOE.contains(vllm_version) is not False
    if capability is None:
        return (1 if b12x else 128), 256, ("the GPU's kind is not known: from b12x's none to the 256 rows of "
                                           "ROCm's kernels and of FlashInfer's TRTLLM before 0.27")
    if capability[0] == 10:
        if trtllm == 128:
            return 128, 128, "SM 10: every MXFP4 kernel rounds to 128 rows from 0.27"
        return 128, 256, ("SM 10: FlashInfer's TRTLLM kernel (first choice where it supports the config) rounds to "
                          "256 rows before 0.27, DeepGEMM and Marlin to 128")
    if capability[0] == 12 and b12x:
        return 1, 128, "SM 12: b12x takes the exact dimensions, Marlin rounds to 128 rows"
    return 128, 128, "Marlin (the MXFP4 kernel here) rounds to 128 rows"


def routed_experts_format(config: Mapping | None) -> str | None:
    """The routed experts' format in the checkpoint ("fp4": MXFP4, "nvfp4", "fp8", "bf16"); None: unread."""
    try:
        plain = isinstance(config, Mapping) and not isinstance(config.get("text_config"), Mapping)
        return _Dtypes(config).backbone_experts if plain else None  # type: ignore[arg-type]
    except _Unknown:
        return None


def expert_padding(config: Mapping, tp: int = 1, pp: int = 1, dp: int = 1, expert_parallel: bool = False,
                   capability: tuple[int, int] | None = None, vllm_version: str | None = None,
                   draft_layers: int = 0) -> tuple[int, int, str] | None:
    """What the MXFP4 MoE kernel adds to the busiest GPU's routed experts by rounding each rank's
    slice up (``TRTLLM_ROWS_256``): (low, high, basis) in bytes, the band where the kernel is not
    known; None where the tally cannot read the config. Only a slice cut by TP (no EP) can be off
    the rows: V4-Pro's 3,072 at TP 8 are 384 rows, 512 with FlashInfer's TRTLLM before 0.27 — its
    experts a third larger, the tally 25 % low. ``draft_layers``: MoE layers the drafter adds to
    the last stage."""
    if not isinstance(config, Mapping) or isinstance(config.get("text_config"), Mapping):
        return None
    try:
        s, q = _Shapes(config), _Dtypes(config)
    except _Unknown:
        return None
    if q.backbone_experts != "fp4":
        return 0, 0, f"{q.backbone_experts} experts: no MXFP4 rounding (other kernels' not modelled)"
    lay = _Layout(tp, pp, dp, expert_parallel, 0, vllm_version)
    rows = _cdiv(s.I, lay.moe_tp)
    experts = _cdiv(s.E, lay.ep) if lay.ep > 1 else s.E
    stages = _stage_layers(s.L, pp, None)
    stages[-1] += max(draft_layers, 0)
    layers = max(stages)
    low_rows, high_rows, why = _padding_rows(capability, vllm_version)

    def extra(align: int) -> int:
        if align <= 1:
            return 0
        r, d = _round_up(rows, align), _round_up(s.D, align)
        padded = 2 * q.expert("fp4", r, d)[0] + q.expert("fp4", d, r)[0]
        return experts * layers * (padded - (2 * q.expert("fp4", rows, s.D)[0] + q.expert("fp4", s.D, rows)[0]))

    return extra(low_rows), extra(high_rows), (f"{rows:,} expert rows a rank ({s.I:,} / {lay.moe_tp}) × {experts} "
                                               f"experts × {layers} layers; {why} (fused_moe/oracle/mxfp4.py "
                                               "mxfp4_round_up_hidden_size_and_intermediate_size)")


def _split_words(name: str, lay: _Layout, method: str | None) -> str:
    tp = f"÷ TP {lay.tp}" if lay.tp > 1 else "whole (TP 1)"
    words = {ROUTED: f"whole experts over {lay.ep} EP ranks" if lay.ep > 1
             else f"tensor-parallel over {lay.moe_tp} ranks" if lay.moe_tp > 1 else "whole",
             SHARED: "replicated (sequence parallel)" if lay.sequence_parallel else tp,
             ATTENTION: f"wq_b/wo_a/wo_b {tp}; wq_a/wkv, compressor, indexer replicated",
             EMBEDDING: f"{tp}, first stage", HEAD: f"{tp}, last stage", NORMS: "replicated"}
    if name in words:
        return words[name]
    return f"loaded ({method}), last stage" if method else "not loaded (no speculative decoding)"


class CheckpointFiles(Record):
    """What a local checkpoint directory holds, judged the way vLLM's loader reads it
    (``DefaultModelLoader._prepare_weights`` with ``--load-format auto``: the first of
    ``*.safetensors``, ``*.bin``, ``*.pt`` that matches any file wins; ``consolidated*.safetensors``
    switches to the Mistral layout; with safetensors, ``filter_duplicate_safetensors_files`` keeps
    the files the index names and, from 0.26.0, raises ``FileNotFoundError`` for any it names that
    is not there — 0.24.0–0.25.1 silently load what is there)."""

    weight_format: str | None  # "safetensors", "bin", "pt", "mistral"; None: no weight file at all
    index_total_bytes: int | None = None  # metadata.total_size: a claim vLLM never reads
    shards_named: int = 0  # distinct files model.safetensors.index.json names
    shards_missing: int = 0  # of those, absent, empty or a dangling link
    files: int = 0  # the files vLLM will read
    disk_bytes: int | None = None  # their sizes on disk (all present)
    payload_bytes: int | None = None  # their tensors: sizes less each safetensors header (all read)
    present_bytes: int = 0  # sizes of the named shards that are there
    # Of shards_missing, those listed but empty or dangling: vLLM's glob lists them and opening
    # fails in every release; the others (not there at all) fail only from 0.26.0 on.
    shards_empty: int = 0

    @property
    def certain_bytes(self) -> int | None:
        """Bytes of tensors vLLM will certainly read: the shard headers' payload when every
        named shard is there and every header was read; else None (the index's total is only a
        claim; a file's size includes its header)."""
        return self.payload_bytes if self.shards_missing == 0 else None


def load_buffers(config: Mapping, max_num_batched_tokens: int | None, speculative: bool | str | None = False,
                 vllm_version: str | None = None, last_stage: bool = True) -> int | None:
    """Bytes one GPU allocates with the model besides its weights, as vLLM builds it:

    - the RoPE caches: ``DeepseekV4ScalingRotaryEmbedding`` keeps ``cos_sin_cache`` in fp32,
      [original_max_position × factor, rope_dim] (rotary_embedding/deepseek_scaling_rope.py:
      234-255); ``build_deepseek_v4_rope`` makes one for the sliding-window layers (factor 1 over
      max_position_embeddings) and one for the compressed layers (YaRN's factor over its
      original_max_position_embeddings), shared through ``get_rope``'s cache;
    - ``topk_indices_buffer`` [max_num_batched_tokens, index_topk] int32 (DeepseekV4Model, every
      stage). The MTP drafter allocates its own and drops it for the target's when it loads
      (llm_base_proposer.py:1463-1476@0.24, gpu/spec_decode/eagle/utils.py:103-112@0.29,
      :136-145@0.33): not counted. DSpark keeps its own from 0.27 (nvidia/dspark.py:98@0.27,
      :125@0.33; none before: its layers get None, dspark.py:91@0.25): counted.
    - on the last pipeline stage (``last_stage``) the target's ``_mtp_hidden_buffer``
      [max_num_batched_tokens, hc_mult × hidden] bf16: always before 0.27
      (nvidia/model.py:1008@0.24, :1048@0.26), from 0.27 only for a drafter that takes the
      target's hidden states (``use_eagle()`` — EAGLE, EAGLE3, MTP, DFlash, DSpark — or
      ``draft_model``: model.py:1095-1099@0.27, :902-906@0.33), DSpark no longer from 0.34
      (``needs_mtp_hidden_buffer``: fact ``dspark-no-hidden-buffer``).

    ``speculative``: the method ``SpeculativeConfig`` settles on (a ``*_mtp`` name is MTP), True
    for the checkpoint's own draft, False/None without speculative decoding; ``vllm_version``:
    the installed release (None: the newest's behaviour).

    None when the config cannot be read. A lower bound of what "Model loading took" adds to the
    weights (0.52 GiB for V4-Flash at 8192 batched tokens; the logs put it at 0.5–0.8 GiB).
    """
    if not isinstance(config, Mapping) or isinstance(config.get("text_config"), Mapping):
        return None
    try:
        s = _Shapes(config)
        max_pos = _int(config, "max_position_embeddings", 1 << 20)
        rope_dim = _int(config, "qk_rope_head_dim", 64)
        topk = _int(config, "index_topk", 512)
        ratios = {max(1, r) if type(r) is int else 1 for r in s.ratios[: s.L]}
    except _Unknown:
        return None
    total = 4 * rope_dim * max_pos  # the sliding-window layers' RoPE (every DeepSeek-V4 has some)
    if any(r > 1 for r in ratios):
        rope = config.get("rope_scaling") or config.get("rope_parameters") or {}
        rope = rope.get("compress", rope) if isinstance(rope, Mapping) else {}
        factor = rope.get("factor") if isinstance(rope, Mapping) else None
        original = rope.get("original_max_position_embeddings") if isinstance(rope, Mapping) else None
        if (isinstance(factor, (int, float)) and type(original) is int
                and 0 < factor <= 1024 and 0 < original <= MAX_DIM):
            length = int(original * factor)
        else:
            length = max_pos
        total += 4 * rope_dim * length
    if type(max_num_batched_tokens) is int and 0 < max_num_batched_tokens <= MAX_DIM:
        total += 4 * max_num_batched_tokens * topk
        method = ("dspark" if s.dspark_targets else "mtp") if speculative is True else speculative
        if isinstance(method, str) and method.endswith("_mtp"):
            method = "mtp"
        if method == "dspark" and DSPARK_TOPK_BUFFER.contains(vllm_version) is not False:
            total += 4 * max_num_batched_tokens * topk
        drafts_from_hidden = method in HIDDEN_STATE_DRAFTS and not (
            method == "dspark" and DSPARK_NO_HIDDEN_BUFFER.contains(vllm_version) is not False)
        if last_stage and (HIDDEN_BUFFER_ALWAYS.contains(vllm_version) is True or drafts_from_hidden):
            total += 2 * max_num_batched_tokens * s.hc * s.D
    return total

"""The checkpoint files and the pipeline split, judged by the installed vLLM's own code on the CPU.

- ``DefaultModelLoader._prepare_weights`` (``--load-format auto``) on real directories: which
  files vLLM reads, and whether it raises for the shards the index names that are missing —
  compared with ``adapters.model_weights.read_checkpoint_files``.
- ``safetensors`` itself (what vLLM opens shards with): the payload dsv4-launch computes from
  each header is the tensors' bytes; a 0-byte shard cannot be opened.
- ``vllm.distributed.utils.get_pp_indices``: the layers of each pipeline stage, compared with
  ``core.weights.split_weights``.
- What the MTP drafter keeps of its own after it loads: vLLM's own sharing code — the V1
  proposer's ``_maybe_share_embeddings`` / ``_maybe_share_lm_head`` and the V2 runner's
  ``load_eagle_model`` — run on stand-in modules laid out as ``DeepSeekV4MTP`` is (mtp.py:
  ``model.embed_tokens``, ``model.topk_indices_buffer``, ``model.layers[str(L)].shared_head.head``,
  no ``has_own_*`` flags), with PP 1 and PP 2; compared with what ``split_weights`` and
  ``load_buffers`` count for the draft. The draft's own ``load_weights`` name filter
  (``_to_spec_layer_name`` + ``get_spec_layer_idx_from_weight_name``) on checkpoint names, and
  ``SpeculativeConfig.use_eagle`` / ``uses_draft_model`` (which decide the target's hidden-state
  buffer from 0.27) on stand-in configs.

Nothing is faked but the boundaries named: real files in a temporary directory, vLLM's functions
called as they are; for the sharing code, ``get_model`` (it returns the stand-in draft) and
``get_pp_group`` (a group of the given size), and on 0.33 the draft load-config helpers (the
config itself). On 2026-12-01 the MTP tests passed on 0.24.0, 0.29.0 and 0.33.0, and with each
release's own Python sources laid over a pinned venv on 0.25.0–0.28.0 (0.24.0's), 0.30.0–0.31.0
(0.29.0's) and 0.32.0 (0.33.0's). Not built: the real ``DeepSeekV4MTP`` (its decoder layer makes CUDA streams and
MoE kernels at construction), so the stand-ins' layout is checked against mtp.py's source.
"""

from __future__ import annotations

import json
import os

import pytest

from dsv4_launch.adapters.checkpoints import known_checkpoint
from dsv4_launch.adapters.model_weights import INDEX, read_checkpoint_files
from dsv4_launch.core.memory.weights import split_weights

pytestmark = pytest.mark.usefixtures("real_vllm")
FLASH = known_checkpoint("deepseek-ai/DeepSeek-V4-Flash")
PRO = known_checkpoint("deepseek-ai/DeepSeek-V4-Pro")


def _prepare(folder):
    """("ok", file names, safetensors?) or ("raise", exception type name), as vLLM's loader ends."""
    from vllm.config import LoadConfig
    from vllm.model_executor.model_loader.default_loader import DefaultModelLoader

    loader = DefaultModelLoader(LoadConfig())
    try:
        out = loader._prepare_weights(str(folder), None, None, True, None)
    except (FileNotFoundError, RuntimeError) as exc:
        return "raise", type(exc).__name__
    return "ok", sorted(os.path.basename(f) for f in out[1]), out[2]


def _save(path, tensors):
    import numpy as np
    from safetensors.numpy import save_file

    save_file({k: np.zeros(shape, dtype=dtype) for k, (shape, dtype) in tensors.items()}, str(path))


def _checkpoint(folder, present=(0, 1, 2)):
    folder.mkdir()
    names = [f"model-{i:05d}-of-00003.safetensors" for i in (1, 2, 3)]
    weight_map = {f"t{i}": n for i, n in enumerate(names)}
    (folder / INDEX).write_text(json.dumps({"metadata": {"total_size": 1}, "weight_map": weight_map},
                                           indent=2, sort_keys=True))
    for i in present:
        _save(folder / names[i], {f"t{i}": ((64, 32), "float32"), f"u{i}": ((7,), "uint8")})
    return names


def test_a_complete_checkpoint_is_read_whole_and_its_payload_is_the_tensors(tmp_path):
    from safetensors import safe_open

    names = _checkpoint(tmp_path / "m")
    status, files, safetensors = _prepare(tmp_path / "m")
    assert (status, files, safetensors) == ("ok", names, True)
    ours = read_checkpoint_files(str(tmp_path / "m"))
    assert (ours.weight_format, ours.shards_missing, ours.files) == ("safetensors", 0, 3)
    payload = 0
    for name in names:
        with safe_open(str(tmp_path / "m" / name), "np") as f:
            payload += sum(f.get_tensor(k).nbytes for k in f.keys())
    assert ours.payload_bytes == payload == 3 * (64 * 32 * 4 + 7)


def test_a_missing_shard_is_what_the_release_raises_for(tmp_path):
    from vllm import __version__

    _checkpoint(tmp_path / "m", present=(0, 2))
    got = _prepare(tmp_path / "m")
    ours = read_checkpoint_files(str(tmp_path / "m"))
    assert (ours.shards_named, ours.shards_missing, ours.shards_empty) == (3, 1, 0)
    major_minor = tuple(int(p) for p in __version__.split(".")[:2])
    if major_minor >= (0, 26):
        assert got == ("raise", "FileNotFoundError")  # "Weight files referenced in index but missing"
    else:
        assert got[0] == "ok" and len(got[1]) == 2  # 0.24–0.25.1 load what is there, silently


def test_a_stale_safetensors_index_next_to_bin_files_is_not_read(tmp_path):
    folder = tmp_path / "m"
    _checkpoint(folder, present=())
    for i in (1, 2):
        (folder / f"pytorch_model-0000{i}-of-00002.bin").write_bytes(b"b" * 10)
    (folder / "training_args.bin").write_bytes(b"t")
    status, files, safetensors = _prepare(folder)
    assert status == "ok" and not safetensors and files == ["pytorch_model-00001-of-00002.bin",
                                                            "pytorch_model-00002-of-00002.bin"]
    ours = read_checkpoint_files(str(folder))
    assert (ours.weight_format, ours.files, ours.shards_missing) == ("bin", 2, 0)


def test_no_weight_file_at_all(tmp_path):
    _checkpoint(tmp_path / "m", present=())
    assert _prepare(tmp_path / "m") == ("raise", "RuntimeError")  # "Cannot find any model weights"
    ours = read_checkpoint_files(str(tmp_path / "m"))
    assert ours.weight_format is None and ours.shards_missing == 3


def test_an_empty_shard_is_listed_by_vllm_but_cannot_be_opened(tmp_path):
    from safetensors import safe_open

    names = _checkpoint(tmp_path / "m", present=(0, 1))
    (tmp_path / "m" / names[2]).write_bytes(b"")
    status, files, _ = _prepare(tmp_path / "m")
    assert status == "ok" and names[2] in files  # the glob lists it: the failure comes at opening
    with pytest.raises(Exception):
        with safe_open(str(tmp_path / "m" / names[2]), "np"):
            pass
    ours = read_checkpoint_files(str(tmp_path / "m"))
    assert (ours.shards_missing, ours.shards_empty) == (1, 1)


def test_dot_files_are_not_weights_to_vllm(tmp_path):
    names = _checkpoint(tmp_path / "m")
    _save(tmp_path / "m" / ".hidden.safetensors", {"x": ((2,), "uint8")})
    assert _prepare(tmp_path / "m")[1] == names
    assert read_checkpoint_files(str(tmp_path / "m")).files == 3


@pytest.mark.parametrize("config", [FLASH["config"], PRO["config"]], ids=["flash", "pro"])
def test_pipeline_stages_hold_the_layers_get_pp_indices_gives_them(config):
    from vllm.distributed.utils import get_pp_indices

    layers = config["num_hidden_layers"]
    for pp in range(1, 9):
        expected = tuple(end - start for start, end in (get_pp_indices(layers, r, pp) for r in range(pp)))
        assert split_weights(config, pp=pp).layers_per_stage == expected, pp


# --- the MTP drafter: what it keeps of its own after loading ----------------------------------

def _stand_ins(vocab=64, hidden=8, layer=43):
    """(target, draft): modules laid out as DeepseekV4ForCausalLM and DeepSeekV4MTP are."""
    import torch
    from torch import nn

    class Head(nn.Module):
        def __init__(self):
            super().__init__()
            self.weight = nn.Parameter(torch.zeros(vocab, hidden), requires_grad=False)

    def inner(with_layers):
        m = nn.Module()
        m.embed_tokens = nn.Embedding(vocab, hidden)
        m.topk_indices_buffer = torch.zeros(4, 2, dtype=torch.int32)
        if with_layers:
            mtp_layer = nn.Module()
            mtp_layer.shared_head = nn.Module()
            mtp_layer.shared_head.norm = nn.LayerNorm(hidden)
            mtp_layer.shared_head.head = Head()
            mtp_layer.mtp_block = nn.Module()
            mtp_layer.mtp_block.attn = nn.Module()
            mtp_layer.mtp_block.attn.topk_indices_buffer = m.topk_indices_buffer
            m.layers = nn.ModuleDict({str(layer): mtp_layer})
        return m

    target = nn.Module()
    target.model = inner(False)
    target.lm_head = Head()
    draft = nn.Module()
    draft.model = inner(True)
    return target, draft


def _kept(target, draft):
    """The draft's own tensors still in it: embedding, LM head (its layer's shared_head.head),
    top-k buffer (the module's and its attention's)."""
    layer = next(iter(draft.model.layers.values()))
    kept = set()
    if draft.model.embed_tokens.weight is not target.model.embed_tokens.weight:
        kept.add("embed_tokens")
    if layer.shared_head.head is not target.lm_head:
        kept.add("lm_head")
    if (draft.model.topk_indices_buffer is not target.model.topk_indices_buffer
            or layer.mtp_block.attn.topk_indices_buffer is not target.model.topk_indices_buffer):
        kept.add("topk_indices_buffer")
    return kept


def _pp_group(size):
    from types import SimpleNamespace

    return lambda: SimpleNamespace(world_size=size, is_first_rank=False, is_last_rank=True, rank_in_group=size - 1)


def _v1_share(monkeypatch, pp):
    from types import SimpleNamespace

    try:
        import vllm.v1.spec_decode.llm_base_proposer as proposer
    except ModuleNotFoundError:  # 0.34: Model Runner V1 removed (vllm/platforms/interface.py:1481@0.34.0)
        pytest.skip("this vLLM has no V1 model runner")

    monkeypatch.setattr(proposer, "get_pp_group", _pp_group(pp))
    target, draft = _stand_ins()
    # what the two methods read of the proposer besides its model (0.33: the index-sharing and
    # local-argmax settings, after the sharing)
    me = SimpleNamespace(model=draft, vllm_config=SimpleNamespace(speculative_config=None),
                         use_local_argmax_reduction=False)
    proposer.SpecDecodeBaseProposer._maybe_share_embeddings(me, target)
    proposer.SpecDecodeBaseProposer._maybe_share_lm_head(me, target)
    return _kept(target, draft)


def _declares_own_embed() -> bool:
    from vllm.models.deepseek_v4.nvidia.mtp import DeepSeekV4MTP

    return hasattr(DeepSeekV4MTP, "has_own_embed_tokens")


def _v2_share(monkeypatch, pp):
    from types import SimpleNamespace

    import vllm.v1.worker.gpu.spec_decode.eagle.utils as utils

    target, draft = _stand_ins()
    if _declares_own_embed():  # 0.34: DeepSeekV4MTP says it never has its own embedding (mtp.py:302@0.34.0)
        draft.has_own_embed_tokens = False
    monkeypatch.setattr(utils, "get_model", lambda **kw: draft)
    monkeypatch.setattr(utils, "get_pp_group", _pp_group(pp))
    for helper in ("get_draft_load_config", "get_pp_safe_draft_load_config"):  # 0.33: the load config as is
        if hasattr(utils, helper):
            monkeypatch.setattr(utils, helper,
                                (lambda c: c.load_config) if helper == "get_draft_load_config" else (lambda c: c))
    load_config = SimpleNamespace(load_format="auto")
    # a speculative config that overrides nothing (0.30-0.32 read its backends and KV dtype one by
    # one, 0.33 through apply_draft_overrides)
    spec = SimpleNamespace(draft_model_config=None, kv_cache_dtype=None, draft_lm_head_quantization=None,
                           moe_backend=None, attention_backend=None, apply_draft_overrides=lambda c: c)
    utils.load_eagle_model(target, SimpleNamespace(speculative_config=spec, load_config=load_config))
    return _kept(target, draft)


def test_the_stand_in_is_laid_out_as_deepseek_v4_mtp():
    import inspect

    import vllm.models.deepseek_v4.nvidia.mtp as mtp

    source = inspect.getsource(mtp)
    for built in ("self.embed_tokens = VocabParallelEmbedding(", "self.shared_head = SharedHead(",
                  "self.topk_indices_buffer = torch.empty("):
        assert built in source, built
    assert "has_own_lm_head" not in source  # the MTP branch of the sharing code
    # 0.34 declares it False: the drafter reuses the target's embedding under PP too, and the target's last
    # stage keeps one for it (spec_decode_needs_target_embed, model_executor/models/utils.py:934@0.34.0)
    assert "has_own_embed_tokens" not in source or "has_own_embed_tokens = False" in source


@pytest.mark.parametrize("runner", ["V1", "V2"])
@pytest.mark.parametrize("pp", [1, 2])
def test_the_mtp_drafter_keeps_its_own_embedding_only_under_pp_and_never_its_head_or_top_k_buffer(
        monkeypatch, runner, pp):
    from vllm import __version__

    from dsv4_launch.core.memory.weights import DRAFT, load_buffers

    kept = (_v1_share if runner == "V1" else _v2_share)(monkeypatch, pp)
    shares_under_pp = _declares_own_embed()  # 0.34+: the last stage's table is the target's, kept for the draft
    assert kept == ({"embed_tokens"} if pp > 1 and not shares_under_pp else set()), kept
    # what the tally counts for the drafter beyond its layer: its embedding exactly where vLLM
    # leaves it one (vocab/TP × D bf16 on the last stage); no LM head; no top-k buffer of its own
    c = FLASH["config"]
    for tp in (1, 4):
        extra = (split_weights(c, tp=tp, pp=pp, speculative="mtp").bytes_of(DRAFT).per_gpu_bytes
                 - split_weights(c, tp=tp, speculative="mtp").bytes_of(DRAFT).per_gpu_bytes)
        # one table on the last stage under PP either way: the draft's own, or (0.34) the target's kept for it
        assert extra == (c["vocab_size"] // tp * c["hidden_size"] * 2 if "embed_tokens" in kept or
                         (pp > 1 and shares_under_pp) else 0)
    hidden = 8192 * c["hc_mult"] * c["hidden_size"] * 2
    with_draft = load_buffers(c, 8192, "mtp", __version__) - load_buffers(c, 8192, None, "0.33.0")
    topk = 4 * 8192 * c["index_topk"]
    assert with_draft == hidden + (topk if "topk_indices_buffer" in kept else 0)


def test_the_drafter_reads_only_the_mtp_tensors_of_the_checkpoint():
    # so its own embedding and LM head are never loaded from it: shared, or (under PP) left as
    # allocated — V4-Flash's checkpoint has one embed.weight and one head.weight (its inventory)
    from types import SimpleNamespace

    from vllm.model_executor.models.deepseek_v2 import get_spec_layer_idx_from_weight_name
    from vllm.models.deepseek_v4.nvidia.mtp import DeepSeekV4MTP

    config = SimpleNamespace(**{k: FLASH["config"][k] for k in ("num_hidden_layers", "num_nextn_predict_layers")})
    me = SimpleNamespace(config=config)

    def renamed(name):
        if hasattr(DeepSeekV4MTP, "_to_spec_layer_name"):  # 0.32+
            return DeepSeekV4MTP._to_spec_layer_name(me, name)
        # 0.24–0.31 do the same inline in load_weights (mtp.py:386-394@0.29): the first integer
        # of the name is the MTP index, mtp.{i}. becomes model.layers.{L + i}.
        index = next((int(part) for part in name.split(".") if part.isdigit()), 0)
        return name.replace(f"mtp.{index}.", f"model.layers.{config.num_hidden_layers + index}.")

    def read(name):
        return get_spec_layer_idx_from_weight_name(config, renamed(name))

    for name in ("mtp.0.e_proj.weight", "mtp.0.attn.wq_a.weight", "mtp.0.ffn.experts.5.w1.weight",
                 "mtp.0.hc_head_fn", "mtp.0.norm.weight"):
        assert read(name) == 43, name
    for name in ("embed.weight", "head.weight", "norm.weight", "layers.0.attn.wq_a.weight",
                 "layers.42.ffn.experts.5.w1.weight", "hc_head_fn"):
        assert read(name) is None, name


def test_the_target_keeps_the_hidden_state_buffer_for_the_methods_vllm_names():
    # from 0.27 DeepseekV4Model allocates _mtp_hidden_buffer for use_eagle() or uses_draft_model()
    # (nvidia/model.py:1095-1099@0.27, :902-906@0.33), from 0.34 as the release's
    # needs_mtp_hidden_buffer says (DSpark no longer: common/spec_decode.py:12-16@0.34.0), called
    # here where the release has it; before 0.27, always (the release's own code is not buildable
    # on the CPU: nvidia/model.py:1008@0.24 is cited instead)
    import importlib
    import importlib.util
    from types import SimpleNamespace

    from vllm import __version__
    from vllm.config.speculative import SpeculativeConfig

    from dsv4_launch.core.memory.weights import load_buffers

    if tuple(int(p) for p in __version__.split(".")[:2]) < (0, 27):
        pytest.skip("before 0.27 the buffer does not depend on the method (nvidia/model.py:1008@0.24)")
    found = importlib.util.find_spec("vllm.models.deepseek_v4.common.spec_decode") if (
        importlib.util.find_spec("vllm.models.deepseek_v4.common")) else None
    needs = importlib.import_module(found.name).needs_mtp_hidden_buffer if found else None
    assert (needs is not None) is (tuple(int(p) for p in __version__.split(".")[:2]) >= (0, 34)), __version__
    c = FLASH["config"]
    plain = load_buffers(c, 8192, None, __version__)
    for method in ("mtp", "eagle", "eagle3", "dflash", "dspark", "draft_model", "ngram", "ngram_gpu", "suffix",
                   "medusa", "mlp_speculator", "custom_class", "extract_hidden_states"):
        me = SimpleNamespace(method=method)
        for name in ("use_eagle", "uses_draft_model", "use_dspark"):
            if hasattr(SpeculativeConfig, name):
                setattr(me, name, getattr(SpeculativeConfig, name).__get__(me))
        takes = needs(me) if needs else me.use_eagle() or me.uses_draft_model()
        ours = (load_buffers(c, 8192, method, __version__) - plain
                - (4 * 8192 * c["index_topk"] if method == "dspark" else 0))
        assert (ours == 8192 * c["hc_mult"] * c["hidden_size"] * 2) is bool(takes), (__version__, method)

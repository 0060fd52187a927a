"""The checkpoint files and the pipeline split, judged by the installed vLLM's own code on the CPU.

- ``DefaultModelLoader._prepare_weights`` (``--load-format auto``) on real directories: which
  files vLLM reads, and whether it raises for the shards the index names that are missing —
  compared with ``adapters.model_weights.read_checkpoint_files``.
- ``safetensors`` itself (what vLLM opens shards with): the payload dsv4-launch computes from
  each header is the tensors' bytes; a 0-byte shard cannot be opened.
- ``vllm.distributed.utils.get_pp_indices``: the layers of each pipeline stage, compared with
  ``core.weights.split_weights``.

Nothing is faked: real files in a temporary directory, vLLM's functions called as they are.
"""

from __future__ import annotations

import json
import os

import pytest

from dsv4_launch.adapters.checkpoints import known_checkpoint
from dsv4_launch.adapters.model_weights import INDEX, read_checkpoint_files
from dsv4_launch.core.weights import split_weights

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

"""adapters/model_weights.py: the checkpoint on disk, judged as vLLM's loader reads it.

Real files in a temporary directory (no fakes): safetensors shards with a real header (8-byte
length + JSON) and sparse payloads, Hugging Face cache layouts with links into blobs/.
What vLLM reads (``DefaultModelLoader._prepare_weights``, ``filter_duplicate_safetensors_files``,
@0.24.0 and @0.33.0): the first of ``*.safetensors``, ``*.bin``, ``*.pt`` present wins; with
safetensors, only the files the index names.
"""

from __future__ import annotations

import json
import os
import struct

import pytest

from dsv4_launch.adapters import model_weights
from dsv4_launch.adapters.model_weights import INDEX, read_checkpoint_files, read_weights
from tests.scaling import SCALE, assert_linear

pytestmark = pytest.mark.filterwarnings("ignore::ResourceWarning")


def shard(path, payload: int, header: dict | None = None):
    """A safetensors file: u64 header length, the JSON header, ``payload`` bytes (sparse)."""
    raw = json.dumps(header or {"t": {"dtype": "U8", "shape": [payload], "data_offsets": [0, payload]}}).encode()
    with open(path, "wb") as handle:
        handle.write(struct.pack("<Q", len(raw)) + raw)
        handle.truncate(8 + len(raw) + payload)
    return 8 + len(raw) + payload


def index_text(names, total, pad_tensors=1, sort=True, indent=2):
    weight_map = {f"layers.{i}.t{j}": name for i, name in enumerate(names) for j in range(pad_tensors)}
    return json.dumps({"metadata": {"total_size": total}, "weight_map": weight_map}, indent=indent, sort_keys=sort)


def checkpoint(folder, n=3, payload=1000, present=None, total=None, pad_tensors=1, **kw):
    folder.mkdir(parents=True, exist_ok=True)
    names = [f"model-{i:05d}-of-{n:05d}.safetensors" for i in range(1, n + 1)]
    (folder / INDEX).write_text(index_text(names, n * payload if total is None else total, pad_tensors, **kw))
    for i in range(n) if present is None else present:
        shard(folder / names[i], payload)
    return folder, names


# --- sizes: the files win over the index's claim ------------------------------------------------

def test_a_complete_checkpoint_gives_the_tensors_bytes_from_the_shard_headers(tmp_path):
    folder, _ = checkpoint(tmp_path / "m", n=4, payload=5000)
    files = read_checkpoint_files(str(folder))
    assert (files.weight_format, files.shards_named, files.shards_missing) == ("safetensors", 4, 0)
    assert files.payload_bytes == files.certain_bytes == 4 * 5000
    assert files.disk_bytes > files.payload_bytes and files.index_total_bytes == 20000
    w = read_weights(str(folder), True, None)
    assert (w.total_bytes, w.exact, w.source) == (20000, True, "the shard files (safetensors headers)")


def test_a_stale_index_total_is_not_what_counts(tmp_path):
    # nvidia/DeepSeek-V4.1-Flash-NVFP4's index says 510 GB of a 527 GB payload (sources doc)
    folder, _ = checkpoint(tmp_path / "m", n=2, payload=10_000, total=15_000)
    w = read_weights(str(folder), True, {"id": "x", "weights_bytes": 1, "weights_exact": True})
    assert w.total_bytes == 20_000 and w.exact
    over, _ = checkpoint(tmp_path / "o", n=2, payload=10_000, total=90_000)
    assert read_weights(str(over), True, None).total_bytes == 20_000


def test_unreadable_headers_fall_back_to_the_index_and_then_to_file_sizes(tmp_path):
    folder, names = checkpoint(tmp_path / "m", n=2, payload=100)
    for name in names:
        (folder / name).write_bytes(b"x" * 1000)  # not safetensors
    files = read_checkpoint_files(str(folder))
    assert files.payload_bytes is None and files.certain_bytes is None and files.disk_bytes == 2000
    w = read_weights(str(folder), True, None)
    assert (w.total_bytes, w.exact, w.source) == (200, True, INDEX)  # files hold at least that much
    (folder / INDEX).write_text(index_text(names, 5000))  # more than the files can hold
    w = read_weights(str(folder), True, None)
    assert (w.total_bytes, w.exact, w.source) == (2000, False, "the shard files' sizes")


# --- which shards count as missing: exactly those vLLM looks for -------------------------------

def test_missing_and_empty_shards(tmp_path):
    folder, names = checkpoint(tmp_path / "m", n=5, present=(0, 1, 2))
    (folder / names[3]).write_bytes(b"")  # an interrupted download
    files = read_checkpoint_files(str(folder))
    assert (files.shards_named, files.shards_missing, files.payload_bytes) == (5, 2, None)
    assert files.shards_empty == 1  # listed by vLLM's glob, unopenable in every release
    w = read_weights(str(folder), True, None)
    assert (w.shards_total, w.shards_missing) == (5, 2) and w.missing_bytes == 5000 - files.present_bytes


def test_a_checkpoint_vllm_loads_from_bin_files_has_no_missing_shards(tmp_path):
    # issue 20 class 1: a stale *.safetensors index next to pytorch_model-*.bin: vLLM globs
    # *.safetensors first, finds none, and loads the .bin files; the index is never read
    folder = tmp_path / "m"
    folder.mkdir()
    (folder / INDEX).write_text(index_text(["model-00001-of-00002.safetensors", "model-00002-of-00002.safetensors"], 9))
    for i in (1, 2):
        (folder / f"pytorch_model-0000{i}-of-00002.bin").write_bytes(b"b" * 700)
    (folder / "training_args.bin").write_bytes(b"t" * 50)  # filter_files_not_needed_for_inference
    files = read_checkpoint_files(str(folder))
    assert (files.weight_format, files.files, files.shards_missing, files.disk_bytes) == ("bin", 2, 0, 1400)
    w = read_weights(str(folder), True, None)
    assert w.shards_missing == 0 and (w.total_bytes, w.exact) == (1400, False)
    assert read_weights(str(folder), True, {"id": "t", "weights_bytes": 99, "weights_exact": True}).total_bytes == 99


def test_one_safetensors_file_makes_vllm_judge_the_index(tmp_path):
    folder = tmp_path / "m"
    folder.mkdir()
    names = ["model-00001-of-00002.safetensors", "model-00002-of-00002.safetensors"]
    (folder / INDEX).write_text(index_text(names, 9))
    (folder / "pytorch_model.bin").write_bytes(b"b" * 10)
    shard(folder / names[0], 10)
    files = read_checkpoint_files(str(folder))
    assert (files.weight_format, files.shards_missing) == ("safetensors", 1)


def test_no_weight_file_at_all_is_every_shard_missing(tmp_path):
    folder, _ = checkpoint(tmp_path / "m", n=3, present=())
    files = read_checkpoint_files(str(folder))
    assert (files.weight_format, files.shards_named, files.shards_missing) == (None, 3, 3)
    assert read_weights(str(folder), True, None).shards_missing == 3  # vLLM: "Cannot find any model weights"


def test_a_mistral_layout_is_not_judged_against_the_hf_index(tmp_path):
    folder, _ = checkpoint(tmp_path / "m", n=3, present=())
    shard(folder / "consolidated.safetensors", 10)
    assert read_checkpoint_files(str(folder)).weight_format == "mistral"
    assert read_weights(str(folder), True, None).shards_missing == 0


def test_hidden_files_and_extra_safetensors_outside_the_index(tmp_path):
    folder, names = checkpoint(tmp_path / "m", n=2)
    shard(folder / ".model-00003-of-00003.safetensors", 10)  # glob's * skips dot files
    shard(folder / "adapter.safetensors", 10)  # filtered out by the index
    files = read_checkpoint_files(str(folder))
    assert (files.shards_named, files.shards_missing, files.files, files.payload_bytes) == (2, 0, 2, 2000)


def test_a_hugging_face_cache_snapshot_links_into_blobs(tmp_path):
    repo = tmp_path / "hub" / "models--deepseek-ai--DeepSeek-V4-Flash"
    blobs, snap = repo / "blobs", repo / "snapshots" / "abc123"
    blobs.mkdir(parents=True)
    snap.mkdir(parents=True)
    names = [f"model-{i:05d}-of-00003.safetensors" for i in (1, 2, 3)]
    (blobs / "idx").write_text(index_text(names, 3000, pad_tensors=2000))
    os.symlink("../../blobs/idx", snap / INDEX)
    for i, name in enumerate(names):
        shard(blobs / f"b{i}", 1000)
        os.symlink(f"../../blobs/b{i}", snap / name)
    w = read_weights(str(snap), False, None)
    assert (w.shards_total, w.shards_missing, w.total_bytes, w.exact) == (3, 0, 3000, True)
    os.remove(blobs / "b2")  # a dangling link: vLLM's glob lists it, opening it fails
    w = read_weights(str(snap), True, None)
    assert (w.shards_total, w.shards_missing) == (3, 1)
    assert read_checkpoint_files(str(snap)).shards_empty == 1


# --- fast on the path users take -------------------------------------------------------------

def test_a_complete_listing_needs_no_full_parse(tmp_path, monkeypatch):
    folder, _ = checkpoint(tmp_path / "m", n=46, payload=10, pad_tensors=1500)  # ~5 MB index
    assert os.path.getsize(folder / INDEX) > 4_000_000

    def no_parse(raw):
        raise AssertionError("parsed the whole index")

    monkeypatch.setattr(model_weights.json, "loads", no_parse)
    files = read_checkpoint_files(str(folder))
    assert (files.shards_named, files.shards_missing, files.index_total_bytes) == (46, 0, 460)


@pytest.mark.parametrize("layout", ["metadata last", "a shard the head names is absent", "one shard missing"])
def test_any_doubt_parses_the_index_exactly(tmp_path, layout):
    folder, names = checkpoint(tmp_path / "m", n=4, payload=10, pad_tensors=1500)
    if layout == "metadata last":
        weight_map = {f"t{i}": names[i % 4] for i in range(6000)}
        (folder / INDEX).write_text(json.dumps({"weight_map": weight_map, "metadata": {"total_size": 77}}))
        files = read_checkpoint_files(str(folder))
        assert (files.index_total_bytes, files.shards_named, files.shards_missing) == (77, 4, 0)
    elif layout == "a shard the head names is absent":
        weight_map = {f"a{i}": "other-00001-of-00001.safetensors" for i in range(3)}
        weight_map.update({f"t{i}": names[i % 4] for i in range(6000)})
        (folder / INDEX).write_text(json.dumps({"metadata": {"total_size": 40}, "weight_map": weight_map},
                                               indent=2, sort_keys=True))
        files = read_checkpoint_files(str(folder))
        assert (files.shards_named, files.shards_missing) == (5, 1)
    else:
        os.remove(folder / names[2])
        files = read_checkpoint_files(str(folder))
        assert (files.shards_named, files.shards_missing) == (4, 1)


def test_an_index_naming_20000_absent_shards_is_read_in_linear_time(tmp_path):
    """Issue 20 class 8: missing-shard accounting was quadratic (5–12 s for 20,000). Growth, not
    a time limit (tests/scaling.py): 2,500 shards named against 10,000."""

    def folder_naming(n: int) -> str:
        folder = tmp_path / f"m{n}"
        folder.mkdir()
        names = [f"model-{i:05d}-of-{n:05d}.safetensors" for i in range(1, n + 1)]
        (folder / INDEX).write_text(index_text(names, 10**12))
        shard(folder / names[0], 10)
        return str(folder)

    assert_linear(folder_naming, lambda folder: read_weights(folder, True, None), 10000 // SCALE)
    w = read_weights(folder_naming(20000), True, None)
    assert (w.shards_total, w.shards_missing) == (20000, 19999)


def test_a_huge_index_is_not_read(tmp_path, monkeypatch):
    folder, _ = checkpoint(tmp_path / "m", n=2, present=(0,), pad_tensors=2000)
    assert os.path.getsize(folder / INDEX) > model_weights.HEAD_BYTES
    monkeypatch.setattr(model_weights, "MAX_INDEX_BYTES", 100_000)
    files = read_checkpoint_files(str(folder))
    assert files.shards_missing == 0 and files.shards_named == 0  # unknown: no refusal on it


@pytest.mark.parametrize("text", ["", "{", "[]", '{"metadata": {"total_size": 1e30}}', '{"weight_map": [1, 2]}',
                                  '{"metadata": {"total_size": "12"}, "weight_map": {"a": 3}}', "[" * 100_000])
def test_a_hostile_index_is_unknown_not_a_traceback(tmp_path, text):
    folder = tmp_path / "m"
    folder.mkdir()
    (folder / INDEX).write_text(text)
    shard(folder / "model-00001-of-00001.safetensors", 10)
    w = read_weights(str(folder), True, None)
    assert w.shards_missing == 0


def test_no_directory_or_an_unlistable_one_gives_the_table(tmp_path):
    table = {"id": "t", "weights_bytes": 5, "weights_exact": True}
    assert read_weights(None, False, table).total_bytes == 5
    assert read_weights(str(tmp_path / "nope"), True, table).total_bytes == 5
    assert read_checkpoint_files(str(tmp_path / "nope")) is None

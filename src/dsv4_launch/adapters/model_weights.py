"""How big the checkpoint is and whether all of it is on disk (adapter, files only).

Judged as vLLM's loader judges it (``core.weights.CheckpointFiles``): the files ``--load-format
auto`` will read, the shards the index names that are missing, the bytes of tensors they hold
(each file's size less its safetensors header, 9 bytes read a shard). Fast on the common path: the
index's ``metadata.total_size`` from its first 64 KiB (written with ``sort_keys``), the shards by one
directory listing (``model-NNNNN-of-MMMMM`` names give the count); only a doubt parses the whole
index (``json.loads``, capped at 64 MiB), linear in its size and its shards.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Mapping

from ..core.facts import WeightFacts
from ..core.memory.weights import CheckpointFiles
from .model_files import open_regular

INDEX = "model.safetensors.index.json"
MAX_INDEX_BYTES = 64 * 2**20
HEAD_BYTES = 64 * 2**10
MAX_ENTRIES = 1 << 16  # a directory listing past this many entries is not judged
MAX_HEADER_READS = 512  # shards whose safetensors header is read for the payload
MAX_HEADER = 100 * 2**20  # safetensors refuses larger headers
HEADERS = "the shard files (safetensors headers)"
# Patterns, compiled by re at first use (re caches them), not at import: most starts read no index.
_METADATA = rb'\A\s*\{\s*"metadata"\s*:\s*\{([^{}]{0,4096})\}'
_TOTAL = rb'"total_size"\s*:\s*(\d{1,20})(?=\s*(?:,|\Z))'
_NAMED = rb'"([^"\\/]{1,255}\.safetensors)"'
_SHARD = r"(.+)-(\d{5})-of-(\d{5})\.safetensors"
_SKIPPED_BIN = ("training_args.bin", "optimizer.bin", "optimizer.pt", "scheduler.pt", "scaler.pt")


def _from_table(known: Mapping[str, object] | None, local: bool) -> WeightFacts:
    size = known.get("weights_bytes") if known else None
    if not known or not isinstance(size, int):
        return WeightFacts(local=local)
    replicated = known.get("replicated_bytes")
    exact = known.get("weights_exact") is True
    kind = known.get("weights_bytes_kind")
    # A rounded figure published for the checkpoint (a recipe's "~865 GB") is independent of the
    # shapes, so the tensor-class tally may be checked against it; one derived from the shapes is not.
    published = exact or (isinstance(kind, str) and "shapes" not in kind.lower())
    return WeightFacts(total_bytes=size, source=f"the known-checkpoint table ({known.get('id')})", exact=exact,
                       published=published, replicated_bytes=replicated if isinstance(replicated, int) else None,
                       local=local)


def read_weights(model_dir: str | None, local: bool, known: Mapping[str, object] | None) -> WeightFacts:
    """The checkpoint's bytes and shards as vLLM will read them, else the known-checkpoint table.
    ``model_dir``: where config.json was found; ``local``: vLLM will not download anything.
    ``total_bytes`` is the tensors' bytes in the shard files when every
    header could be read (exact), else the index's ``total_size`` (exact as before), else the
    table; ``shards_missing`` counts only shards vLLM will look for (not when it reads ``*.bin``)."""
    table = _from_table(known, local)
    files = read_checkpoint_files(model_dir) if model_dir else None
    return weight_facts(files, table)


def weight_facts(files: CheckpointFiles | None, table: WeightFacts) -> WeightFacts:
    """``WeightFacts`` (the fields core/memory/estimate.py reads) from what is on disk and the table."""
    if files is None:
        return table
    if files.weight_format == "safetensors" or (files.weight_format is None and files.shards_named):
        if files.index_total_bytes is None and not files.shards_named and files.payload_bytes is None:
            return table
        total, source, exact = table.total_bytes, table.source, table.exact
        if files.certain_bytes is not None:
            total, source, exact = files.certain_bytes, HEADERS, True
        elif files.index_total_bytes is not None:
            total, source, exact = files.index_total_bytes, INDEX, True
            if files.disk_bytes is not None and files.disk_bytes < total:
                # every shard is there and holds less than the index claims: the files win
                total, source, exact = files.disk_bytes, "the shard files' sizes", False
        missing_bytes = None
        if files.shards_missing and total:
            missing_bytes = max(total - files.present_bytes, 0)
        return table._replace(total_bytes=total, source=source, exact=exact, shards_total=files.shards_named,
                              shards_missing=files.shards_missing, missing_bytes=missing_bytes)
    if files.weight_format in ("bin", "pt") and table.total_bytes is None and files.disk_bytes:
        return table._replace(total_bytes=files.disk_bytes, source=f"the *.{files.weight_format} files' sizes",
                              exact=False)
    return table


def read_checkpoint_files(model_dir: str) -> CheckpointFiles | None:
    """What vLLM's loader will find in ``model_dir`` (None: the directory cannot be listed, or
    lists more than ``MAX_ENTRIES`` entries)."""
    safetensors: dict[str, int] = {}  # name -> size (0: empty or a dangling link)
    others = {"bin": 0, "pt": 0}
    other_bytes = {"bin": 0, "pt": 0}
    mistral = has_index = False
    try:
        with os.scandir(model_dir) as entries:
            for n, entry in enumerate(entries):
                if n >= MAX_ENTRIES:
                    return None
                name = entry.name
                if name.startswith("."):
                    continue  # glob's * does not match a leading dot
                kind = name.rpartition(".")[2]
                if name == INDEX:
                    # vLLM reads the index only when os.path.isfile (links followed) holds, else loads
                    # every *.safetensors file (weight_utils.py filter_duplicate_safetensors_files,
                    # :596@0.33.0): a FIFO, a device or a folder of that name is no index.
                    has_index = _is_file(entry)
                elif kind == "safetensors":
                    safetensors[name] = _size(entry)
                    mistral = mistral or name.startswith("consolidated")
                elif kind in others and not name.endswith(_SKIPPED_BIN):
                    others[kind] += 1
                    other_bytes[kind] += _size(entry)
    except (OSError, ValueError):
        return None
    if mistral:
        return CheckpointFiles("mistral")
    index = _read_index(os.path.join(model_dir, INDEX)) if has_index else None
    if not safetensors:
        for kind in ("bin", "pt"):
            if others[kind]:
                return CheckpointFiles(kind, files=others[kind], disk_bytes=other_bytes[kind])
        if index is None:
            return CheckpointFiles(None)
        named = _named_shards(index)
        total = _total(index)
        return CheckpointFiles(None, total, len(named), len(named))
    if index is None:  # vLLM loads every *.safetensors file
        return _with_payload(model_dir, CheckpointFiles("safetensors", files=len(safetensors)), safetensors)
    total = _total(index)
    listed = _complete_from_listing(index, safetensors)
    named = _named_shards(index) if listed is None else listed
    present = {n for n in named if safetensors.get(n, 0) > 0}
    empty = sum(1 for n in named if safetensors.get(n) == 0)  # listed, but empty or a dangling link
    files = CheckpointFiles("safetensors", total, len(named), len(named) - len(present), files=len(present),
                            present_bytes=sum(safetensors[n] for n in present), shards_empty=empty)
    return files if files.shards_missing else _with_payload(model_dir, files, {n: safetensors[n] for n in present})


def _is_file(entry: os.DirEntry) -> bool:
    try:
        return entry.is_file()
    except (OSError, ValueError):
        return False


def _size(entry: os.DirEntry) -> int:
    """The file's size through links (a Hugging Face snapshot links to its blobs); 0 when it
    is a dangling link or not a file."""
    try:
        st = entry.stat()
    except (OSError, ValueError):
        return 0
    return st.st_size if entry.is_file() else 0


class _Index:
    """The index file: its head, and (read at most once) the whole text and its parse."""

    def __init__(self, path: str, head: bytes, whole: bool):
        self.path = path
        self.head = head
        self.whole = whole  # the head is the whole file
        self._parsed: object = None
        self._read = False

    def parsed(self) -> object:
        if not self._read:
            self._read = True
            try:
                raw = self.head
                if not self.whole:
                    with open_regular(self.path) as handle:
                        raw = handle.read(MAX_INDEX_BYTES + 1)
                    if len(raw) > MAX_INDEX_BYTES:
                        return None
                self._parsed = json.loads(raw)
            except (OSError, ValueError, RecursionError):
                self._parsed = None
        return self._parsed


def _read_index(path: str) -> _Index | None:
    try:
        with open_regular(path) as handle:
            head = handle.read(HEAD_BYTES + 1)
    except (OSError, ValueError):
        return None
    return _Index(path, head[:HEAD_BYTES], len(head) <= HEAD_BYTES)


def _total(index: _Index) -> int | None:
    """``metadata.total_size``: from the head when ``metadata`` is the first key, else parsed."""
    meta = re.match(_METADATA, index.head)
    if meta is not None:
        found = re.search(_TOTAL, meta.group(1))
        return int(found.group(1)) if found else None
    parsed = index.parsed()
    metadata = parsed.get("metadata") if isinstance(parsed, dict) else None
    total = metadata.get("total_size") if isinstance(metadata, dict) else None
    return total if type(total) is int and total >= 0 else None


def _named_shards(index: _Index) -> set[str]:
    """The distinct files the index's ``weight_map`` names (parsed: exact)."""
    parsed = index.parsed()
    weight_map = parsed.get("weight_map") if isinstance(parsed, dict) else None
    return {v for v in weight_map.values() if isinstance(v, str)} if isinstance(weight_map, dict) else set()


def _complete_from_listing(index: _Index, safetensors: dict[str, int]) -> set[str] | None:
    """The shard names when the listing alone shows a complete set the index agrees with:
    every ``*.safetensors`` file is ``P-NNNNN-of-MMMMM`` with one P and M, all M are there and
    non-empty, and every shard the index's head names is one of them. None: parse the index."""
    if index.whole:
        return None  # small enough to parse exactly
    prefix = count = None
    seen = set()
    shard = re.compile(_SHARD).fullmatch  # once per call, not once per file
    for name, size in safetensors.items():
        m = shard(name)
        if m is None or size <= 0:
            return None
        if prefix is None:
            prefix, count = m.group(1), m.group(3)
        elif (m.group(1), m.group(3)) != (prefix, count):
            return None
        seen.add(int(m.group(2)))
    if count is None or len(seen) != int(count) or seen != set(range(1, int(count) + 1)):
        return None
    named_in_head = {n.decode("utf-8", "replace") for n in re.findall(_NAMED, index.head)}
    return None if not named_in_head or not named_in_head <= safetensors.keys() else set(safetensors)


def _with_payload(model_dir: str, files: CheckpointFiles, shards: dict[str, int]) -> CheckpointFiles:
    """Add the files' sizes and, when every header reads, the tensors' bytes."""
    disk = sum(shards.values())
    files = files._replace(disk_bytes=disk, files=len(shards))
    if not shards or len(shards) > MAX_HEADER_READS:
        return files
    payload = 0
    for name, size in shards.items():
        header = _header_length(os.path.join(model_dir, name), size)
        if header is None:
            return files
        payload += size - 8 - header
    return files._replace(payload_bytes=payload)


def _header_length(path: str, size: int) -> int | None:
    """A safetensors file starts with its header's length (u64, little-endian) and ``{``."""
    try:
        with open_regular(path) as handle:
            start = handle.read(9)
    except (OSError, ValueError):
        return None
    if len(start) < 9 or start[8:9] != b"{":
        return None
    n = int.from_bytes(start[:8], "little")
    return n if 2 <= n <= min(MAX_HEADER, size - 8) else None

"""How big the checkpoint is and whether all of it is on disk (adapter, files only).

``model.safetensors.index.json`` names every shard and (``metadata.total_size``) the bytes of
all tensors. Read with two regular expressions instead of a full JSON parse: DeepSeek-V4's index
maps thousands of tensors, and only the total and the shard names are needed here.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping

from ..core.memory import WeightFacts

INDEX = "model.safetensors.index.json"
MAX_INDEX_BYTES = 64 * 2**20
_TOTAL = rb'"total_size"\s*:\s*(\d{1,20})'
_SHARD = rb'"([^"\\/]{1,255}\.safetensors)"'


def _from_table(known: Mapping[str, object] | None, local: bool) -> WeightFacts:
    if not known or not isinstance(known.get("weights_bytes"), int):
        return WeightFacts(local=local)
    exact = known.get("weights_exact") is True
    return WeightFacts(
        total_bytes=known["weights_bytes"],
        source=f"the known-checkpoint table ({known.get('id')})",
        exact=exact,
        replicated_bytes=known.get("replicated_bytes") if isinstance(known.get("replicated_bytes"), int) else None,
        local=local,
    )


def read_weights(model_dir: str | None, local: bool, known: Mapping[str, object] | None) -> WeightFacts:
    """The checkpoint's bytes and shards from its index, else from the known-checkpoint table.

    ``model_dir``: the directory config.json was found in (a local directory, or a snapshot in
    the Hugging Face cache); ``local``: vLLM will not download anything (a local directory, or
    HF_HUB_OFFLINE=1).
    """
    table = _from_table(known, local)
    if not model_dir:
        return table
    path = os.path.join(model_dir, INDEX)
    try:
        if not os.path.isfile(path):
            return table
        with open(path, "rb") as handle:
            raw = handle.read(MAX_INDEX_BYTES)
    except (OSError, ValueError):
        return table
    total = re.search(_TOTAL, raw)
    shards = sorted({m.decode("utf-8", "replace") for m in re.findall(_SHARD, raw)})
    if total is None and not shards:
        return table
    missing = [s for s in shards if not _present(os.path.join(model_dir, s))]
    total_bytes = int(total.group(1)) if total else table.total_bytes
    missing_bytes = None
    if missing and total_bytes:
        missing_bytes = _missing_bytes(model_dir, shards, missing, total_bytes)
    return WeightFacts(
        total_bytes=total_bytes,
        source=INDEX if total else table.source,
        exact=bool(total) or table.exact,
        replicated_bytes=table.replicated_bytes,
        shards_total=len(shards),
        shards_missing=len(missing),
        missing_bytes=missing_bytes,
        local=local,
    )


def _present(path: str) -> bool:
    """A shard is there when the file (or the blob its cache link points to) exists."""
    try:
        return os.path.isfile(path) and os.path.getsize(path) > 0
    except (OSError, ValueError):
        return False


def _missing_bytes(folder: str, shards: list[str], missing: list[str], total: int) -> int:
    """Bytes not on disk: the total less the shards that are (file sizes include their small
    headers, so this is a close estimate)."""
    present = 0
    for shard in shards:
        if shard not in missing:
            try:
                present += os.path.getsize(os.path.join(folder, shard))
            except OSError:
                pass
    return max(total - present, 0)

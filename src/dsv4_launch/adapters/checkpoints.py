"""The known-checkpoint table: facts about published DeepSeek-V4 / V4.1 checkpoints, used when
a hub name is not downloaded yet; a local config.json always wins. One file per checkpoint,
``data/checkpoints/<org>--<name>.json`` (the repo id lower-cased, ``/`` as ``--``: a start reads
its one ~3 KB entry): ``id``; ``config``, config.json's keys nested exactly as the real file (V4.1:
``text_config``/``vision_config``; V4's ``expert_dtype`` top-level, V4.1's in
``quantization_config``); ``weights_bytes`` (``weights_bytes_kind``: exact or approximate);
``replicated_bytes``, the derived per-TP-rank replicated part (ReplicatedLinear/disable_tp
tensors, mHC/gate/norm; drafts excluded); ``derived``; ``sources``. Provenance for every number:
docs/checkpoints-sources.md.
"""

from __future__ import annotations

import json
import os
from functools import lru_cache

DATA = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "data", "checkpoints")


def _key(name: str) -> str:
    return name.strip().rstrip("/").lower()


@lru_cache(maxsize=None)
def _entry(key: str) -> dict | None:
    # "/" becomes "--": no name reaches outside DATA; the entry's own id must be the name asked for.
    try:
        with open(os.path.join(DATA, key.replace("/", "--") + ".json"), encoding="utf-8") as handle:
            entry = json.load(handle)
    except (OSError, ValueError):  # not in the table (or a name no file can have: NUL)
        return None
    return entry if isinstance(entry, dict) and str(entry.get("id", "")).lower() == key else None


def known_checkpoint(name: str) -> dict | None:
    """The table's entry for a hub id (``deepseek-ai/DeepSeek-V4-Flash``), any letter case."""
    key = _key(name)
    return _entry(key) if key and "--" not in key else None


def load_checkpoints() -> dict[str, dict]:
    """Every entry, by lower-case hub id (the same objects ``known_checkpoint`` returns)."""
    keys = sorted(n[: -len(".json")].replace("--", "/", 1) for n in os.listdir(DATA) if n.endswith(".json"))
    return {key: entry for key in keys if (entry := _entry(key)) is not None}

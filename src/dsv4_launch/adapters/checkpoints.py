"""The known-checkpoint table: facts about published DeepSeek-V4 / V4.1 checkpoints, used when
a hub name is not downloaded yet (the first ``dsv4-serve deepseek-ai/DeepSeek-V4-Flash`` on a
new machine). A local config.json always wins.

One file per checkpoint, ``data/checkpoints/<org>--<name>.json`` (the Hugging Face repo id in
lower case, ``/`` as ``--``), so a start reads the one entry it asks for (~3 KB) rather than
the whole table. Each entry: ``id`` (the repo id as Hugging Face spells it); ``config``, the
config.json keys with the values the real file has, nested exactly like the file (V4.1 nests
``text_config``/``vision_config``; for V4 ``expert_dtype`` is a top-level key, for V4.1 it is
inside ``quantization_config``); ``weights_bytes``, the checkpoint's byte size
(``weights_bytes_kind``: exact or approximate); ``replicated_bytes``, the derived per-TP-rank
replicated part (tensors vLLM builds with ReplicatedLinear/disable_tp, plus mHC/gate/norm
parameters), MTP/DSpark drafts excluded; ``derived``, the values inferred rather than copied
from a real config; ``sources``. Provenance for every number: docs/checkpoints-sources.md
(researched 2026-09/10 from stored public copies, not fetched live from huggingface.co).
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

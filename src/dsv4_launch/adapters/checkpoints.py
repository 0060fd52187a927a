"""The known-checkpoint table (``data/checkpoints.json``): facts about published DeepSeek-V4
checkpoints, used when a hub name is not downloaded yet (the first ``dsv4-serve
deepseek-ai/DeepSeek-V4-Flash`` on a new machine). A local config.json always wins.
"""

from __future__ import annotations

import json
import os
from functools import lru_cache

DATA = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "data", "checkpoints.json")


@lru_cache(maxsize=1)
def load_checkpoints() -> dict[str, dict]:
    """Entries by lower-case hub id (aliases included)."""
    with open(DATA, encoding="utf-8") as handle:
        raw = json.load(handle)
    table: dict[str, dict] = {}
    for entry in raw["checkpoints"]:
        for name in (entry["id"], *entry.get("aliases", ())):
            table[name.lower()] = entry
    return table


def known_checkpoint(name: str) -> dict | None:
    """The table's entry for a hub id (``deepseek-ai/DeepSeek-V4-Flash``), any letter case."""
    return load_checkpoints().get(name.strip().rstrip("/").lower())

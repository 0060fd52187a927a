"""vLLM's ``serve`` options as recorded from the real parser, one table per vLLM release.

The tables live in ``data/serve-options-<version>.json`` and are written by
``tools/gen_vllm_options.py``. The table for the installed vLLM is used when there is one
(``exact``: an option it does not know is one vLLM rejects); otherwise the newest table older
than the installed vLLM, or the newest of all when the version is unknown (not exact: an
unknown option may be new, and is only reported).
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from functools import lru_cache

from ..core.records import EMPTY, Record
from ..core.versions import parse_version, same_release

DATA = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "data")


class OptionAction(Record):
    dest: str
    options: tuple[str, ...]
    nargs: int | str  # 0, 1, "?", "+", "*"
    choices: tuple[str, ...] | None = None
    # For options that take no value: what each spelling stores (``--no-x`` → False).
    flag_values: Mapping[str, object] | None = None


class OptionTable(Record):
    vllm_version: str
    positionals: tuple[str, ...]
    actions: tuple[OptionAction, ...]
    exact: bool = False  # recorded from the installed vLLM itself
    defaults: Mapping[str, object] = EMPTY
    # Values this release accepts for settings the rules read (kv_cache_dtype, moe_backend, …);
    # see tools/gen_vllm_options.py.
    accepted_values: Mapping[str, tuple[str, ...]] = EMPTY

    @property
    def option_strings(self) -> tuple[str, ...]:
        kept = _OPTION_STRINGS.get(id(self))  # built once per table: a parse asks several times
        if kept is not None and kept[0] is self:
            return kept[1]
        strings = tuple(o for a in self.actions for o in a.options)
        _OPTION_STRINGS[id(self)] = (self, strings)
        return strings


_OPTION_STRINGS: dict[int, tuple[OptionTable, tuple[str, ...]]] = {}


@lru_cache(maxsize=1)
def available_versions() -> list[str]:
    names = (n for n in os.listdir(DATA) if n.startswith("serve-options-") and n.endswith(".json"))
    versions = [n[len("serve-options-") : -len(".json")] for n in names]
    return sorted(versions, key=parse_version)


@lru_cache(maxsize=None)
def load_table(vllm_version: str | None) -> OptionTable:
    """The table that best describes ``vllm_version`` (None: unknown → newest)."""
    versions = available_versions()
    chosen = versions[-1]
    if vllm_version is not None:
        try:
            wanted = parse_version(vllm_version)
        except ValueError:
            return load_table(None)
        older = [v for v in versions if parse_version(v) <= wanted]
        chosen = older[-1] if older else versions[0]
    with open(os.path.join(DATA, f"serve-options-{chosen}.json"), encoding="utf-8") as handle:
        raw = json.load(handle)
    actions = tuple(OptionAction(a["dest"], tuple(a["options"]), a["nargs"],  # positional: ~270 rows, the fast way
                                 tuple(a["choices"]) if "choices" in a else None, a.get("flag_values"))
                    for a in raw["actions"])
    return OptionTable(vllm_version=chosen, positionals=tuple(raw["positionals"]), actions=actions,
                       defaults=raw.get("defaults", {}),
                       accepted_values={k: tuple(v) for k, v in raw.get("values", {}).items()},
                       exact=vllm_version is not None and same_release(vllm_version, chosen))

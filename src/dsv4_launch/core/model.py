"""Which model is being served: pure classification of a config.json (or, failing that, a name).

Rules key on ``architectures`` / ``model_type``, never on repository names (fine-tunes and local
copies are renamed). Without a readable config.json the known-checkpoint table supplies the facts,
and only then is the bare name pattern used; the result always says where its facts came from.
"""

from __future__ import annotations

import json
from collections.abc import Mapping

from .records import Record

# vLLM's DeepSeek-V4 code path (vllm/models/deepseek_v4/, vLLM ≥ 0.20).
DSV4_ARCHITECTURES = frozenset({"DeepseekV4ForCausalLM", "DeepseekV4ForConditionalGeneration"})
DSV4_MODEL_TYPES = frozenset({"deepseek_v4"})
# DeepSeek-V4.1 (vLLM ≥ 0.30) has its own KV-dtype resolver; it never had the `auto` crash.
DSV41_ARCHITECTURES = frozenset({"DeepseekV41ForCausalLM"})
DSV41_MODEL_TYPES = frozenset({"deepseek_v41"})

V4 = "deepseek_v4"
V41 = "deepseek_v41"
FAMILY_NAMES = {V4: "DeepSeek-V4", V41: "DeepSeek-V4.1"}


class ModelFacts(Record):
    """The model vLLM will load, as far as it could be told offline."""

    name: str | None  # what the user gave (repository id or path); None: vLLM's default
    family: str | None = None  # V4, V41, or None (not DeepSeek-V4)
    architecture: str | None = None
    model_type: str | None = None
    source: str | None = None  # where the facts were read; None: nowhere
    config: Mapping[str, object] | None = None  # config.json as read (after --hf-overrides)
    note: str | None = None  # what could not be read, said out loud
    known_id: str | None = None  # the known-checkpoint table entry used, if any
    directory: str | None = None  # where config.json was read (a local directory or a cache snapshot)

    @property
    def is_dsv4(self) -> bool:
        return self.family == V4

    @property
    def is_dsv4_family(self) -> bool:
        return self.family in (V4, V41)

    def tp_splits(self, tp: int) -> bool:
        """``tp`` divides the attention heads and ``o_groups`` (where the config gives them):
        the tensor-parallel sizes dsv4-launch suggests (fit's layouts, the tp-* rows' fixes)."""
        heads, groups = self.number("num_attention_heads"), self.number("o_groups")
        return (not heads or heads % tp == 0) and (not groups or groups % tp == 0)

    def field(self, key: str) -> object:
        """A field of config.json as it is, or None. Multimodal configs (DeepSeek-V4.1) keep the
        language model's fields under ``text_config``."""
        config = self.config or {}
        value, text_config = config.get(key), config.get("text_config")
        if value is None and isinstance(text_config, Mapping):
            value = text_config.get(key)
        return value

    def number(self, key: str) -> int | None:
        """An integer field of config.json (``num_attention_heads``), or None (``field``)."""
        value = self.field(key)
        return value if type(value) is int else None


def _strings(value: object) -> list[str]:
    """The strings of a JSON list (anything else in it, or a non-list, is ignored)."""
    return [v for v in value if isinstance(v, str)] if isinstance(value, list) else []


def family_of(architectures: object, model_type: object) -> str | None:
    archs = set(_strings(architectures))
    if archs & DSV4_ARCHITECTURES or model_type in DSV4_MODEL_TYPES:
        return V4
    return V41 if archs & DSV41_ARCHITECTURES or model_type in DSV41_MODEL_TYPES else None


def main_architecture(architectures: object) -> str | None:
    """The architecture vLLM's DeepSeek-V4 code would run, else the first one listed."""
    names = _strings(architectures)
    for name in names:
        if name in DSV4_ARCHITECTURES or name in DSV41_ARCHITECTURES:
            return name
    return names[0] if names else None


def apply_overrides(config: Mapping[str, object], overrides: object) -> tuple[dict[str, object], str | None]:
    """``--hf-overrides`` (a JSON object, as vLLM's CLI takes it) applied over config.json.

    Returns the merged config and a note when the overrides could not be read."""
    merged = dict(config)
    if overrides is None:
        return merged, None
    if isinstance(overrides, str):
        try:
            overrides = json.loads(overrides)
        except (ValueError, RecursionError):  # not JSON, a 5000-digit number, nesting too deep
            return merged, "--hf-overrides is not readable JSON; ignored when recognising the model"
    if not isinstance(overrides, Mapping):
        return merged, "--hf-overrides is not a JSON object; ignored when recognising the model"
    for key, value in overrides.items():
        old = merged.get(key)
        merged[key] = {**old, **value} if isinstance(value, Mapping) and isinstance(old, Mapping) else value
    return merged, None


def _from_config(name: str | None, merged: Mapping[str, object], source: str, note: str | None,
                 known_id: str | None = None) -> ModelFacts:
    model_type = merged.get("model_type")
    return ModelFacts(name=name, family=family_of(merged.get("architectures"), model_type),
                      architecture=main_architecture(merged.get("architectures")),
                      model_type=model_type if isinstance(model_type, str) else None, source=source, config=merged,
                      note=note, known_id=known_id)


def classify(name: str | None, config: Mapping[str, object] | None, source: str | None, overrides: object = None,
             missing_reason: str | None = None, known: Mapping[str, object] | None = None) -> ModelFacts:
    """Facts about the model from its config.json (``config``); without one, from the
    known-checkpoint entry for its name (``known``: ``{"id": …, "config": {…}}``), the
    ``--hf-overrides`` alone, or the name's pattern, in that order."""
    if config is not None:
        merged, note = apply_overrides(config, overrides)
        if overrides is not None and note is None:
            source = f"{source} + --hf-overrides"
        return _from_config(name, merged, source or "config.json", note)
    missing = f"no config.json readable ({missing_reason})" if missing_reason else "no config.json readable"
    known_config = known.get("config") if known is not None else None
    if known is not None and isinstance(known_config, Mapping):
        merged, note = apply_overrides(known_config, overrides)
        source = f"the known-checkpoint table ({known.get('id')})"
        if overrides is not None and note is None:
            source += " + --hf-overrides"
        return _from_config(name, merged, source, note, known_id=str(known.get("id")))
    if overrides is not None:
        # hf-overrides alone can still say what the model is.
        merged, note = apply_overrides({}, overrides)
        if family_of(merged.get("architectures"), merged.get("model_type")) is not None:
            return _from_config(name, merged, "--hf-overrides", missing)
    family = family_from_name(name)
    guessed = {V4: "DeepseekV4ForCausalLM", V41: "DeepseekV41ForCausalLM"}.get(family or "")
    if name is None:
        return ModelFacts(name=None)
    said = f"assumed {guessed} from the name" if family else "not recognisable as DeepSeek-V4 by its name"
    return ModelFacts(name=name, family=family, architecture=guessed, source="the name" if family else None,
                      note=f"{missing}; {said}")


def family_from_name(name: str | None) -> str | None:
    """The last resort: ``deepseek-ai/DeepSeek-V4-Flash`` → V4, ``…-V4.1-…`` → V41."""
    if not name:
        return None
    base = name.rstrip("/").rsplit("/", 1)[-1].lower().replace("_", "-")
    if base.startswith(("deepseek-v4.1", "deepseek-v41")):
        return V41
    return V4 if base.startswith("deepseek-v4") else None

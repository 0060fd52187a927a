"""Which model is being served: pure classification of a config.json (or, failing that, a name).

Rules key on ``architectures`` / ``model_type`` from config.json, never on repository names:
fine-tunes and local copies are renamed. Only when no config.json can be read is the name
used, and the result says so.
"""

from __future__ import annotations

import json
from collections.abc import Mapping

TYPE_CHECKING = False  # typing costs start-up time; annotations are strings
if TYPE_CHECKING:
    from typing import Any, Optional

from .records import record

# vLLM's DeepSeek-V4 code path (vllm/models/deepseek_v4/, vLLM ≥ 0.20).
DSV4_ARCHITECTURES = frozenset({"DeepseekV4ForCausalLM", "DeepseekV4ForConditionalGeneration"})
DSV4_MODEL_TYPES = frozenset({"deepseek_v4"})
# DeepSeek-V4.1 (vLLM ≥ 0.30) has its own KV-dtype resolver; it never had the `auto` crash.
DSV41_ARCHITECTURES = frozenset({"DeepseekV41ForCausalLM"})
DSV41_MODEL_TYPES = frozenset({"deepseek_v41"})

V4 = "deepseek_v4"
V41 = "deepseek_v41"


@record
class ModelFacts:
    """The model vLLM will load, as far as it could be told offline."""

    name: Optional[str]  # what the user gave (repository id or path); None: vLLM's default
    family: Optional[str] = None  # V4, V41, or None (not DeepSeek-V4)
    architecture: Optional[str] = None
    model_type: Optional[str] = None
    source: str = "unknown"  # where the architecture was read
    config: Optional[Mapping[str, Any]] = None  # config.json as read (after hf-overrides)
    note: Optional[str] = None  # what could not be read, said out loud

    @property
    def is_dsv4(self) -> bool:
        return self.family == V4

    @property
    def is_dsv4_family(self) -> bool:
        return self.family in (V4, V41)


def family_of(architectures: Any, model_type: Any) -> Optional[str]:
    archs = set(architectures) if isinstance(architectures, (list, tuple)) else set()
    if archs & DSV4_ARCHITECTURES or model_type in DSV4_MODEL_TYPES:
        return V4
    if archs & DSV41_ARCHITECTURES or model_type in DSV41_MODEL_TYPES:
        return V41
    return None


def apply_overrides(config: Mapping[str, Any], overrides: Any) -> tuple[dict[str, Any], Optional[str]]:
    """``--hf-overrides`` (a JSON object, as vLLM's CLI takes it) applied over config.json.

    Returns the merged config and a note when the overrides could not be read.
    """
    merged = dict(config)
    if overrides is None:
        return merged, None
    if isinstance(overrides, str):
        try:
            overrides = json.loads(overrides)
        except json.JSONDecodeError:
            return merged, "--hf-overrides is not JSON; ignored when recognising the model"
    if not isinstance(overrides, Mapping):
        return merged, "--hf-overrides is not a JSON object; ignored when recognising the model"
    for key, value in overrides.items():
        if isinstance(value, Mapping) and isinstance(merged.get(key), Mapping):
            inner = dict(merged[key])
            inner.update(value)
            merged[key] = inner
        else:
            merged[key] = value
    return merged, None


def classify(
    name: Optional[str],
    config: Optional[Mapping[str, Any]],
    source: str,
    overrides: Any = None,
    missing_reason: Optional[str] = None,
) -> ModelFacts:
    """Facts about the model from its config.json (``config``), or from ``name`` without one."""
    if config is not None:
        merged, note = apply_overrides(config, overrides)
        if overrides is not None and note is None:
            source = f"{source} + --hf-overrides"
        archs = merged.get("architectures")
        arch = archs[0] if isinstance(archs, list) and archs and isinstance(archs[0], str) else None
        model_type = merged.get("model_type") if isinstance(merged.get("model_type"), str) else None
        return ModelFacts(
            name=name,
            family=family_of(archs, model_type),
            architecture=arch,
            model_type=model_type,
            source=source,
            config=merged,
            note=note,
        )
    if overrides is not None:
        # hf-overrides alone can still say what the model is.
        merged, note = apply_overrides({}, overrides)
        family = family_of(merged.get("architectures"), merged.get("model_type"))
        if family is not None:
            archs = merged.get("architectures") or [None]
            return ModelFacts(
                name=name,
                family=family,
                architecture=archs[0],
                model_type=merged.get("model_type"),
                source="--hf-overrides",
                config=merged,
                note=f"no config.json readable ({missing_reason})",
            )
    family = family_from_name(name)
    guessed = {V4: "DeepseekV4ForCausalLM", V41: "DeepseekV41ForCausalLM"}.get(family)
    return ModelFacts(
        name=name,
        family=family,
        architecture=guessed,
        source="name" if family else "unknown",
        note=(
            f"no config.json readable ({missing_reason}); "
            + (f"assumed {guessed} from the name" if family else "not recognised by name")
        )
        if name is not None
        else None,
    )


def family_from_name(name: Optional[str]) -> Optional[str]:
    """The last resort: ``deepseek-ai/DeepSeek-V4-Flash`` → V4, ``…-V4.1-…`` → V41."""
    if not name:
        return None
    base = name.rstrip("/").rsplit("/", 1)[-1].lower().replace("_", "-")
    if base.startswith(("deepseek-v4.1", "deepseek-v41")):
        return V41
    if base.startswith("deepseek-v4"):
        return V4
    return None

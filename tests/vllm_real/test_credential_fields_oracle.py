"""The one credential vocabulary against vLLM's own config fields: every field of every config
dataclass in ``vllm.config`` (what the ``non-default args`` line logs, what ``--x.y`` options and
JSON option values name) is read as a credential's only where it is one. A field the vocabulary
flags wrongly is masked in plan's argv, in explain's rebuilt command (vLLM then rejects '***' for an
int: 0.33's ``AttentionConfig.tokenspeed_mla_min_split_kv`` did) and in every printed line."""

from __future__ import annotations

import dataclasses
import importlib
import inspect
import os
import pkgutil

import pytest

from dsv4_launch.core.credentials import is_credential_name

pytestmark = pytest.mark.vllm_real

# Fields that hold a credential (vLLM masks them too: SECRET_VALUE_DESTS). None is over-masked:
# ModelArchitectureConfig.derived_max_model_len_and_key (a length and the config key it was read
# under) was, until the vocabulary read "key" after "len_and" as a pair's key.
CREDENTIALS = {("ModelConfig", "hf_token"), ("WatermarkConfig", "key")}
KNOWN_OVER_MASKED: set[tuple[str, str]] = set()


def config_fields() -> set[tuple[str, str]]:
    os.environ.setdefault("VLLM_TARGET_DEVICE", "cpu")
    config = importlib.import_module("vllm.config")
    found = set()
    for info in pkgutil.iter_modules(config.__path__):
        try:
            module = importlib.import_module(f"vllm.config.{info.name}")
        except Exception:  # a config module that needs a GPU library: its fields are not read here
            continue
        for _, cls in inspect.getmembers(module, inspect.isclass):
            if cls.__module__.startswith("vllm.config") and dataclasses.is_dataclass(cls):
                found |= {(cls.__name__, f.name) for f in dataclasses.fields(cls)}
    return found


def test_vllms_config_fields_are_credentials_only_where_they_are(real_vllm):
    fields = config_fields()
    assert len(fields) > 200  # the config package was read
    flagged = {field for field in fields if is_credential_name(field[1])}
    assert flagged - KNOWN_OVER_MASKED <= CREDENTIALS, sorted(flagged - KNOWN_OVER_MASKED - CREDENTIALS)
    assert {f for f in CREDENTIALS if f in fields} <= flagged
